//! Secrets a producer cut short. A language server's type printer shortens a long string literal
//! type to its first bytes and `...`; the whole value is then not in the text, so the engine's
//! scan does not find it, yet its first part is shown. [`cut`] finds such an end before a cut
//! mark: the first bytes of a stored value, or a key shape's prefix with part of its token.

use hands_core::redact::MIN_CUT;

use crate::engine::Engine;
use crate::rules;

/// The longest end of `before` that starts a stored form (at least [`MIN_CUT`] bytes and not the
/// whole form, which the scan replaces) or a key shape's token, with its replacement.
pub(crate) fn cut(engine: &Engine, before: &[u8]) -> Option<(usize, Vec<u8>)> {
    let longest = engine.cuts.iter().map(|(form, _)| form.len()).max().unwrap_or(0);
    let most = before.len().min(longest.saturating_sub(1));
    let stored = (MIN_CUT..=most).rev().find_map(|len| {
        let end = &before[before.len() - len..];
        let at = engine.cuts.partition_point(|(form, _)| form.as_slice() < end);
        let (form, owner) = engine.cuts.get(at)?;
        form.starts_with(end).then(|| (len, engine.replacements[*owner].clone()))
    });
    let shaped = rules::cut(before, MIN_CUT);
    match (stored, shaped) {
        (Some(s), Some(r)) => Some(if r.0 > s.0 { r } else { s }),
        (s, r) => s.or(r),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use hands_core::redact::{Redactor, text_cut, text_with};

    use super::*;

    const VALUE: &str = "hx_CANARY_JKxJ0zYBS2FyDQenyMrwK1EjqAv6FjAZ5c5sFXWRLvpmMZ5Dhg8ro63gWMW0";

    fn engine() -> Engine {
        Engine::new([("API_TOKEN", VALUE)]).expect("engine")
    }

    #[test]
    fn a_stored_value_cut_before_an_ellipsis_is_hidden() {
        let engine = engine();
        // TypeScript's shape: the literal type printed to its first bytes, then `...'`.
        let message = format!(
            "Type 'number' is not assignable to type '{{ a: \"{VALUE}\"; b: \"{}...'.",
            &VALUE[..40]
        );
        let before = text_with(&engine, &message).into_owned();
        assert!(before.contains(&VALUE[..40]), "the plain scan misses the cut value: {before}");
        hands_core::redact::install(Arc::new(engine));
        let shown = text_cut(&message).into_owned();
        hands_core::redact::install(Arc::new(hands_core::redact::Nothing));
        assert!(!shown.contains(&VALUE[..MIN_CUT]), "{shown}");
        assert_eq!(
            shown,
            "Type 'number' is not assignable to type '{ a: \"[secret:API_TOKEN]\"; b: \"[secret:API_TOKEN]...'."
        );
    }

    #[test]
    fn short_or_unrelated_ends_are_left() {
        let engine = engine();
        assert_eq!(engine.cut(&VALUE.as_bytes()[..MIN_CUT - 1]), None, "too few bytes to say much");
        assert_eq!(engine.cut(b"and so on"), None);
        assert_eq!(engine.cut(b""), None);
        let (len, with) = engine.cut(format!("x = {}", &VALUE[..MIN_CUT]).as_bytes()).expect("cut");
        assert_eq!((len, with.as_slice()), (MIN_CUT, b"[secret:API_TOKEN]".as_slice()));
    }

    #[test]
    fn a_key_shape_cut_short_is_hidden_without_being_stored() {
        let engine = Engine::new(std::iter::empty()).expect("engine");
        let (len, with) = engine.cut(b"key \"sk_live_51Habcdefgh").expect("a Stripe key cut short");
        assert_eq!(len, "sk_live_51Habcdefgh".len());
        assert_eq!(with, b"[redacted:stripe_key]");
        assert_eq!(engine.cut(b"sk_live_"), None, "the prefix alone says nothing");
    }
}
