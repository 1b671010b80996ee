//! Page snapshots: the outline of the page now ([`crate::outline`]), narrowed by a query, cut to a
//! budget, kept whole on disk, and compared with the previous snapshot of the same document.
//!
//! Flow: [`Preview::outline_now`] runs hands' outline walker in the page; [`Preview::snapshot`]
//! writes the whole outline to `.hands/outputs/snapshot-N.txt`, makes it the session's baseline
//! (the document's page-load number, its lines), and shows either the narrowed outline or, when a
//! baseline of the same document exists and no query is given, only the lines that changed. The
//! budget is in tokens at [`BYTES_PER_TOKEN`] bytes each; what does not fit is cut at a line
//! boundary with a line that says how much was left out and where the whole is.

use std::collections::HashMap;

use serde_json::json;

use crate::baseline::Baseline;
use crate::outline::{Line, outline, walker_expression};
use crate::preview::Preview;

/// The budget's rule: a token is taken as 4 bytes of text (English and code under the common
/// BPE tokenizers average 3.5–4.5), so a budget of N tokens shows at most 4·N bytes.
pub const BYTES_PER_TOKEN: usize = 4;
/// The budget when the caller gives none, in tokens.
pub const DEFAULT_TOKENS: usize = 3000;
/// The smallest budget accepted, in tokens (room for the header and the cut line).
pub const MIN_TOKENS: usize = 100;

/// What narrows a snapshot.
#[derive(Debug, Clone, Default)]
pub struct Query {
    /// Lines containing this text (any case), with their ancestors.
    pub text: Option<String>,
    /// Lines of this role, with their ancestors.
    pub role: Option<String>,
    /// The subtree of this ref.
    pub subtree: Option<String>,
}

impl Query {
    /// True when nothing narrows.
    pub fn is_empty(&self) -> bool {
        self.text.is_none() && self.role.is_none() && self.subtree.is_none()
    }
}

/// Why a snapshot could not be taken or shown.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SnapshotError {
    /// No page is open.
    #[error("No preview is open in this session: call preview_open first.")]
    NotOpen,
    /// The browser failed.
    #[error("The snapshot failed: {0}.")]
    Browser(String),
    /// The ref names nothing in the snapshot.
    #[error(
        "{0} is not in the current snapshot: take a new snapshot (preview_snapshot) and use its refs."
    )]
    UnknownRef(String),
}

/// The lines `query` keeps.
pub fn narrow(lines: &[Line], query: &Query) -> Result<Vec<Line>, SnapshotError> {
    let mut lines = lines.to_vec();
    if let Some(name) = &query.subtree {
        let start = lines
            .iter()
            .position(|l| l.ref_name().as_deref() == Some(name.as_str()))
            .ok_or_else(|| SnapshotError::UnknownRef(name.clone()))?;
        let depth = lines[start].depth;
        let end = lines[start + 1..]
            .iter()
            .position(|l| l.depth <= depth)
            .map_or(lines.len(), |p| start + 1 + p);
        lines = lines[start..end]
            .iter()
            .map(|l| Line { depth: l.depth - depth, ..l.clone() })
            .collect();
    }
    let text = query.text.as_ref().map(|t| t.to_lowercase());
    if text.is_none() && query.role.is_none() {
        return Ok(lines);
    }
    let matches = |l: &Line| {
        text.as_ref().is_none_or(|t| l.text.to_lowercase().contains(t.as_str()))
            && query.role.as_ref().is_none_or(|r| l.role.eq_ignore_ascii_case(r))
    };
    // A match keeps its ancestors, so that the model sees where it is.
    let mut keep = vec![false; lines.len()];
    for i in (0..lines.len()).filter(|i| matches(&lines[*i])) {
        keep[i] = true;
        let mut depth = lines[i].depth;
        for j in (0..i).rev() {
            if depth == 0 {
                break;
            }
            if lines[j].depth < depth {
                keep[j] = true;
                depth = lines[j].depth;
            }
        }
    }
    Ok(lines.into_iter().zip(keep).filter_map(|(l, k)| k.then_some(l)).collect())
}

/// `lines` as text within `max_bytes`: whole lines, then a line saying what was cut.
pub fn within(lines: &[String], max_bytes: usize, whole: &str) -> String {
    let cut = |left: usize| {
        format!(
            "… {left} more line{} cut to stay within the budget: the whole is in {whole}; narrow \
             with query, role or ref",
            if left == 1 { "" } else { "s" }
        )
    };
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        // Room is kept for the cut line, so that it always fits after what was shown.
        let rest = lines.len() - i - 1;
        let reserve = if rest > 0 { cut(rest).len() } else { 0 };
        if out.len() + line.len() + 1 + reserve > max_bytes {
            out.push_str(&cut(rest + 1));
            return out;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// What changed from `old` to `new`: `+` added lines, `-` removed ones, `~` lines of the same
/// ref whose text changed. Lines with a ref are matched by it, others by their text. An element
/// re-created with the same content (a list re-rendered) is no change but a new ref: such pairs
/// are listed on one last line, `= new refs, same content: e12→e40 …`.
pub fn delta(old: &[Line], new: &[Line]) -> Vec<String> {
    let key = |l: &Line| match l.node {
        Some(n) => format!("#{n}"),
        None => format!("{}\u{1}{}", l.depth, l.text),
    };
    let mut before: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, line) in old.iter().enumerate() {
        before.entry(key(line)).or_default().push(i);
    }
    let mut changed = Vec::new();
    let mut added: Vec<&Line> = Vec::new();
    for line in new {
        match before.get_mut(&key(line)).and_then(Vec::pop) {
            Some(i) if old[i].text == line.text => {}
            Some(_) => changed.push(format!("~ {}", line.indented())),
            None => added.push(line),
        }
    }
    let mut removed: Vec<usize> = before.into_values().flatten().collect();
    removed.sort_unstable();
    // Pair re-created elements: same depth, same text but for the ref.
    let mut gone: HashMap<(usize, String), Vec<usize>> = HashMap::new();
    for &i in removed.iter().rev() {
        if old[i].node.is_some() {
            gone.entry((old[i].depth, without_ref(&old[i]))).or_default().push(i);
        }
    }
    let mut renamed = Vec::new();
    let mut paired = std::collections::HashSet::new();
    let mut out = changed;
    for line in added {
        let twin = line.node.and_then(|_| gone.get_mut(&(line.depth, without_ref(line)))?.pop());
        match twin {
            Some(i) => {
                paired.insert(i);
                renamed.push(format!(
                    "{}→{}",
                    old[i].ref_name().unwrap_or_default(),
                    line.ref_name().unwrap_or_default()
                ));
            }
            None => out.push(format!("+ {}", line.indented())),
        }
    }
    out.extend(
        removed
            .iter()
            .filter(|i| !paired.contains(*i))
            .map(|&i| format!("- {}", old[i].indented())),
    );
    if !renamed.is_empty() {
        out.push(format!("= new refs, same content: {}", renamed.join(" ")));
    }
    out
}

/// A line's text without its ref (` e12`).
fn without_ref(line: &Line) -> String {
    let Some(name) = line.ref_name() else { return line.text.clone() };
    let token = format!(" {name}");
    let found =
        line.text.match_indices(&token).map(|(i, _)| i).find(|&i| {
            matches!(line.text.as_bytes().get(i + token.len()), None | Some(b' ' | b':'))
        });
    match found {
        Some(i) => format!("{}{}", &line.text[..i], &line.text[i + token.len()..]),
        None => line.text.clone(),
    }
}

/// A snapshot as shown.
#[derive(Debug, Clone)]
pub struct Shown {
    /// The text for the model.
    pub text: String,
}

impl Preview {
    /// The outline of the page now, the page load it is of, and the session's next ref number.
    pub(crate) async fn outline_now(&self) -> Result<(Vec<Line>, u64, u64), SnapshotError> {
        let (cdp, page) = self.page().ok_or(SnapshotError::NotOpen)?;
        let load = self.errors.current_load();
        let floor = self
            .outline
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_ref()
            .map_or(1, |b| b.next_ref);
        let t0 = std::time::Instant::now();
        let answer = cdp
            .call(
                "Runtime.evaluate",
                json!({"expression": walker_expression(floor), "returnByValue": true}),
                Some(&page),
            )
            .await
            .map_err(|e| SnapshotError::Browser(e.to_string()))?;
        if let Some(details) = answer.get("exceptionDetails") {
            let why = details["exception"]["description"].as_str().or(details["text"].as_str());
            return Err(SnapshotError::Browser(format!(
                "the page outline threw: {}",
                why.unwrap_or("an exception").lines().next().unwrap_or_default()
            )));
        }
        let value = answer["result"]["value"].as_str().unwrap_or("{}");
        let parsed: serde_json::Value = serde_json::from_str(value)
            .map_err(|e| SnapshotError::Browser(format!("the page outline is not JSON: {e}")))?;
        let t1 = t0.elapsed();
        let (lines, next) = outline(&parsed);
        tracing::debug!(walker = ?t1, lines = ?(t0.elapsed() - t1), bytes = value.len(), "page outline");
        Ok((lines, load, next.max(floor)))
    }

    /// Keep `lines` as the new baseline and on disk; returns the old baseline and the path.
    pub(crate) fn rebase(
        &self,
        lines: &[Line],
        load: u64,
        next_ref: u64,
    ) -> (Option<Baseline>, Option<String>) {
        let mut slot = self.outline.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let next = Baseline::after(slot.as_ref(), lines, load, next_ref);
        let number = next.number;
        let old = slot.replace(next);
        drop(slot);
        let whole: String = lines.iter().map(|l| l.indented() + "\n").collect();
        let path = hands_core::middleware::truncate::outputs_dir(&self.root)
            .and_then(|dir| {
                hands_core::middleware::truncate::save_new(
                    &dir,
                    &format!("snapshot-{number}"),
                    "txt",
                    whole.as_bytes(),
                )
            })
            .map(|name| format!("{}/{name}", hands_core::middleware::truncate::OUTPUTS_DIR))
            .map_err(|err| tracing::warn!(%err, "could not keep the snapshot on disk"))
            .ok();
        (old, path)
    }

    /// A snapshot within `tokens`: the delta since the previous one of the same document unless
    /// `full` or a query is given, else the (narrowed) outline.
    pub(crate) async fn snapshot(
        &self,
        query: &Query,
        tokens: usize,
        full: bool,
    ) -> Result<Shown, SnapshotError> {
        let (lines, load, next_ref) = self.outline_now().await?;
        let narrowed = narrow(&lines, query)?;
        let (old, path) = self.rebase(&lines, load, next_ref);
        let whole = path.unwrap_or_else(|| "(not kept: the outputs folder failed)".into());
        let url = self.location();
        let max = tokens.max(MIN_TOKENS) * BYTES_PER_TOKEN;
        let same_document = old.as_ref().filter(|b| b.load == load);
        let body = match same_document {
            Some(old) if !full && query.is_empty() => {
                let changes = delta(&old.lines, &lines);
                if changes.is_empty() {
                    vec![format!("No change since snapshot {}.", old.number)]
                } else {
                    let mut body = vec![format!(
                        "Changes since snapshot {} ({} lines → {}):",
                        old.number,
                        old.lines.len(),
                        lines.len()
                    )];
                    body.extend(changes);
                    body
                }
            }
            _ => narrowed.iter().map(Line::indented).collect(),
        };
        let header = format!(
            "Snapshot {} of {url} ({} lines{}; whole: {whole})\n",
            old.as_ref().map_or(1, |b| b.number + 1),
            lines.len(),
            if query.is_empty() { String::new() } else { format!(", {} shown", narrowed.len()) },
        );
        let text = header.clone() + &within(&body, max.saturating_sub(header.len()), &whole);
        Ok(Shown { text })
    }

    /// The changes since the baseline as lines (for an action's result), and a new baseline.
    pub(crate) async fn changes(&self) -> Result<(Vec<String>, bool), SnapshotError> {
        let (lines, load, next_ref) = self.outline_now().await?;
        let (old, _) = self.rebase(&lines, load, next_ref);
        match old.filter(|b| b.load == load) {
            Some(old) => Ok((delta(&old.lines, &lines), false)),
            None => Ok((lines.iter().map(Line::indented).collect(), true)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(depth: usize, role: &str, text: &str, node: Option<u64>) -> Line {
        Line { depth, role: role.into(), text: text.into(), node }
    }

    fn page() -> Vec<Line> {
        vec![
            line(0, "form", "form \"Login\" e1", Some(1)),
            line(1, "textbox", "textbox \"User\" e2", Some(2)),
            line(1, "button", "button \"Log in\" e3", Some(3)),
            line(0, "list", "list e4", Some(4)),
            line(1, "listitem", "li", None),
            line(2, "text", "\"Milk\"", None),
        ]
    }

    #[test]
    fn queries_keep_matches_with_their_ancestors_or_a_subtree() {
        let q = Query { text: Some("milk".into()), ..Query::default() };
        let kept: Vec<String> = narrow(&page(), &q).unwrap().iter().map(Line::indented).collect();
        assert_eq!(kept, ["list e4", " li", "  \"Milk\""]);
        let q = Query { subtree: Some("e1".into()), ..Query::default() };
        assert_eq!(narrow(&page(), &q).unwrap().len(), 3);
        let q = Query { role: Some("button".into()), ..Query::default() };
        assert_eq!(narrow(&page(), &q).unwrap().len(), 2);
        let q = Query { subtree: Some("e99".into()), ..Query::default() };
        assert!(matches!(narrow(&page(), &q), Err(SnapshotError::UnknownRef(_))));
    }

    #[test]
    fn the_delta_lists_added_changed_and_removed_lines() {
        let old = page();
        let mut new = page();
        new[1].text = "textbox \"User\" e2: alice".into();
        new.remove(5);
        new.push(line(2, "text", "\"Eggs\"", None));
        assert_eq!(
            delta(&old, &new),
            ["~  textbox \"User\" e2: alice", "+   \"Eggs\"", "-   \"Milk\"",]
        );
        assert!(delta(&old, &old).is_empty());
        // A re-rendered element: same content, a new ref.
        let mut again = page();
        again[2] = line(1, "button", "button \"Log in\" e9", Some(9));
        assert_eq!(delta(&old, &again), ["= new refs, same content: e3→e9"]);
    }

    #[test]
    fn text_stays_within_its_budget() {
        let lines: Vec<String> = (0..1000).map(|i| format!("listitem \"row {i}\"")).collect();
        let text = within(&lines, 2000, ".hands/outputs/snapshot-1.txt");
        assert!(text.len() <= 2000, "{}", text.len());
        assert!(text.ends_with("narrow with query, role or ref"), "{text}");
        assert_eq!(within(&lines[..2], 2000, "x"), "listitem \"row 0\"\nlistitem \"row 1\"\n");
    }
}
