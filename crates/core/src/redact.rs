//! Redaction: the one place every surface asks "may this text be shown?". Stored secrets and well
//! known key shapes are replaced (by `[secret:NAME]` and `[redacted:RULE]`) before anything is
//! cached, spilled, stored, logged, sent or shown.
//!
//! The matching engine is not here (see the `hands-secrets` crate): the binary installs one with
//! [`install`] at start-up and again whenever the stored secrets change. Every crate calls the
//! free functions ([`text`], [`bytes`], [`json`]) or a streaming [`Scrubber`], which use the
//! redactor installed now. Until one is installed nothing is replaced.
//!
//! Like [`crate::env::ChildEnv`], one process-wide slot decides, so that no surface forgets one:
//! redaction covers every stored secret of every scope (a value is hidden everywhere, not only in
//! the project it is granted to).

use std::borrow::Cow;
use std::sync::{Arc, PoisonError, RwLock};

/// A matching engine.
pub trait Redactor: Send + Sync {
    /// Redact `input`, appending the result to `out`, and return how many bytes of `input` were
    /// consumed. When `more` is true more input follows: the engine may keep back a suffix that
    /// could be the start of a secret (it is offered again, with the next chunk after it); when
    /// `more` is false everything is consumed.
    fn redact(&self, input: &[u8], more: bool, out: &mut Vec<u8>) -> usize;

    /// True when `input` holds something [`Redactor::redact`] would replace. The fast path: most
    /// text has none, and is then used as it is, without a copy.
    fn finds(&self, input: &[u8]) -> bool;

    /// Where a producer cut a secret short (see [`text_cut`]): when `before` ends with the first
    /// bytes of a stored value (at least [`MIN_CUT`] of them, not the whole value) or with a key
    /// shape's prefix and part of its token, how many bytes of `before` that end is and what
    /// replaces it. The default finds nothing.
    fn cut(&self, before: &[u8]) -> Option<(usize, Vec<u8>)> {
        let _ = before;
        None
    }
}

/// The fewest first bytes of a stored value [`text_cut`] hides before a cut mark: fewer say
/// next to nothing of a value, and would hide ordinary words.
pub const MIN_CUT: usize = 6;

/// The redactor that replaces nothing (installed until the binary installs a real one).
#[derive(Debug, Default, Clone, Copy)]
pub struct Nothing;

impl Redactor for Nothing {
    fn redact(&self, input: &[u8], _more: bool, out: &mut Vec<u8>) -> usize {
        out.extend_from_slice(input);
        input.len()
    }

    fn finds(&self, _input: &[u8]) -> bool {
        false
    }
}

static CURRENT: RwLock<Option<Arc<dyn Redactor>>> = RwLock::new(None);

/// Make `redactor` the one every surface uses from now on.
pub fn install(redactor: Arc<dyn Redactor>) {
    *CURRENT.write().unwrap_or_else(PoisonError::into_inner) = Some(redactor);
}

/// The redactor installed now ([`Nothing`] when none is).
pub fn current() -> Arc<dyn Redactor> {
    CURRENT
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
        .unwrap_or_else(|| Arc::new(Nothing))
}

/// `input` with its secrets replaced; borrowed when there are none.
pub fn bytes(input: &[u8]) -> Cow<'_, [u8]> {
    bytes_with(current().as_ref(), input)
}

/// [`bytes`] with a given engine (one lookup of the slot for many strings).
pub fn bytes_with<'t>(redactor: &dyn Redactor, input: &'t [u8]) -> Cow<'t, [u8]> {
    if !redactor.finds(input) {
        return Cow::Borrowed(input);
    }
    let mut out = Vec::with_capacity(input.len());
    redactor.redact(input, false, &mut out);
    Cow::Owned(out)
}

/// `input` with its secrets replaced; borrowed when there are none.
pub fn text(input: &str) -> Cow<'_, str> {
    text_with(current().as_ref(), input)
}

/// [`text`] with a given engine.
pub fn text_with<'t>(redactor: &dyn Redactor, input: &'t str) -> Cow<'t, str> {
    match bytes_with(redactor, input.as_bytes()) {
        Cow::Borrowed(_) => Cow::Borrowed(input),
        // A replacement is ASCII and a match is cut where a value's bytes start and end, so the
        // result stays UTF-8 unless a value itself was cut mid-character; then lossily.
        Cow::Owned(out) => Cow::Owned(
            String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into()),
        ),
    }
}

/// [`text`] for text whose producer may have shortened it and marked the cut with `...` or `…`
/// (TypeScript's type printer cuts a long string literal type in a diagnostic that way): the
/// first bytes of a secret right before the mark are replaced too, since the whole value, which
/// [`text`] looks for, is no longer there.
pub fn text_cut(input: &str) -> Cow<'_, str> {
    let redactor = current();
    let whole = text_with(redactor.as_ref(), input);
    let mut marks: Vec<usize> = whole.match_indices("...").map(|(at, _)| at).collect();
    marks.extend(whole.match_indices('\u{2026}').map(|(at, _)| at));
    if marks.is_empty() {
        return whole;
    }
    marks.sort_unstable();
    let mut out = String::with_capacity(whole.len());
    let mut done = 0;
    let mut changed = false;
    for mark in marks {
        if mark < done {
            continue;
        }
        let Some((len, with)) = redactor.cut(&whole.as_bytes()[done..mark]) else { continue };
        let start = mark - len;
        if !whole.is_char_boundary(start) {
            continue;
        }
        out.push_str(&whole[done..start]);
        out.push_str(&String::from_utf8_lossy(&with));
        done = mark;
        changed = true;
    }
    if !changed {
        return whole;
    }
    out.push_str(&whole[done..]);
    Cow::Owned(out)
}

/// Replace the secrets in every string of `value` (keys too), in place; true when one was found.
pub fn json(value: &mut serde_json::Value) -> bool {
    json_with(current().as_ref(), value)
}

/// [`json`] with a given engine (one lookup of the slot for the whole value).
pub fn json_with(redactor: &dyn Redactor, value: &mut serde_json::Value) -> bool {
    use serde_json::Value;
    match value {
        Value::String(s) => match text_with(redactor, s) {
            Cow::Borrowed(_) => false,
            Cow::Owned(clean) => {
                *s = clean;
                true
            }
        },
        Value::Array(items) => {
            items.iter_mut().fold(false, |found, v| json_with(redactor, v) | found)
        }
        Value::Object(map) => {
            let dirty: Vec<String> =
                map.keys().filter(|k| redactor.finds(k.as_bytes())).cloned().collect();
            let mut found = !dirty.is_empty();
            for key in dirty {
                if let Some(v) = map.remove(&key) {
                    map.insert(text_with(redactor, &key).into_owned(), v);
                }
            }
            for v in map.values_mut() {
                found |= json_with(redactor, v);
            }
            found
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
    }
}

/// Redaction of a stream that arrives in pieces (process output): a secret split across two
/// writes is still caught, because the tail that could start one is held back until the next
/// piece (or [`Scrubber::finish`]).
#[derive(Debug, Default)]
pub struct Scrubber {
    held: Vec<u8>,
}

impl Scrubber {
    /// A scrubber with nothing held.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feed `chunk`; append what may be written now to `out`.
    ///
    /// A held tail is usually a few bytes (the start of a pattern): it is redacted with the first
    /// [`Scrubber::JOIN`] bytes of the chunk, and the rest of the chunk on its own, without
    /// copying it (a redactor's answer is the same wherever the stream is cut). Only when the
    /// tail is still held after that (a long key waiting for its end) is the whole chunk joined.
    pub fn push(&mut self, chunk: &[u8], out: &mut Vec<u8>) {
        let redactor = current();
        let mut rest = chunk;
        if !self.held.is_empty() {
            let join = rest.len().min(Self::JOIN.max(self.held.len()));
            self.held.extend_from_slice(&rest[..join]);
            let used = redactor.redact(&self.held, true, out);
            self.held.drain(..used);
            if self.held.len() > join {
                // Still held from before this chunk: join all of it.
                self.held.extend_from_slice(&rest[join..]);
                let used = redactor.redact(&self.held, true, out);
                self.held.drain(..used);
                return;
            }
            if join == rest.len() {
                return;
            }
            // What is held now is the end of the joined part: go on from there in the chunk.
            rest = &rest[join - self.held.len()..];
            self.held.clear();
        }
        if rest.is_empty() {
            return;
        }
        let used = redactor.redact(rest, true, out);
        self.held.extend_from_slice(&rest[used..]);
    }

    /// Bytes of a chunk redacted together with a held tail (see [`Scrubber::push`]).
    const JOIN: usize = 4096;

    /// The end of the stream: append everything still held, redacted, to `out`.
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        let held = std::mem::take(&mut self.held);
        current().redact(&held, false, out);
    }

    /// Bytes held back now.
    pub fn held(&self) -> usize {
        self.held.len()
    }
}

/// A plain list of `(NAME, value)` pairs matched literally, one after another: for tests of the
/// surfaces (the real engine, with encoded forms and key-shape rules, is in `hands-secrets`).
#[derive(Debug, Clone, Default)]
pub struct Literals(pub Vec<(String, String)>);

impl Redactor for Literals {
    fn redact(&self, input: &[u8], more: bool, out: &mut Vec<u8>) -> usize {
        let longest = self.0.iter().map(|(_, v)| v.len()).max().unwrap_or(0);
        let mut i = 0;
        'scan: while i < input.len() {
            for (name, value) in &self.0 {
                let v = value.as_bytes();
                if input[i..].starts_with(v) && !v.is_empty() {
                    out.extend_from_slice(format!("[secret:{name}]").as_bytes());
                    i += v.len();
                    continue 'scan;
                }
                // A possible start of a secret at the end: keep it for the next chunk.
                if more && input.len() - i < longest && v.starts_with(&input[i..]) {
                    return i;
                }
            }
            out.push(input[i]);
            i += 1;
        }
        input.len()
    }

    fn finds(&self, input: &[u8]) -> bool {
        self.0
            .iter()
            .any(|(_, v)| !v.is_empty() && input.windows(v.len()).any(|w| w == v.as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn literals() -> Literals {
        Literals(vec![("API_TOKEN".into(), "canary-4f2a-secret".into())])
    }

    #[test]
    fn the_literal_engine_replaces_and_holds_back_a_split_secret() {
        let engine = literals();
        let mut out = Vec::new();
        let used = engine.redact(b"a canary-4f2a-secret b canary-4f", true, &mut out);
        assert_eq!(String::from_utf8_lossy(&out), "a [secret:API_TOKEN] b ");
        assert_eq!(used, "a canary-4f2a-secret b ".len());
        let mut out = Vec::new();
        engine.redact(b"canary-4f", false, &mut out);
        assert_eq!(out, b"canary-4f");
        assert!(engine.finds(b"xx canary-4f2a-secret"));
        assert!(!engine.finds(b"xx canary-4f2a-secre"));
    }

    #[test]
    fn json_replaces_strings_and_keys() {
        // The global slot is shared by every test of this binary: only this test installs.
        install(Arc::new(literals()));
        let mut v = serde_json::json!({"a": ["x canary-4f2a-secret"], "canary-4f2a-secret": 1});
        assert!(json(&mut v));
        assert_eq!(v, serde_json::json!({"a": ["x [secret:API_TOKEN]"], "[secret:API_TOKEN]": 1}));
        assert!(matches!(text("clean"), Cow::Borrowed(_)));
        let mut scrubber = Scrubber::new();
        let mut out = Vec::new();
        scrubber.push(b"one canary-4f2a", &mut out);
        assert_eq!(scrubber.held(), "canary-4f2a".len());
        scrubber.push(b"-secret two", &mut out);
        scrubber.finish(&mut out);
        assert_eq!(String::from_utf8_lossy(&out), "one [secret:API_TOKEN] two");
        install(Arc::new(Nothing));
    }
}
