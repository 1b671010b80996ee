//! The page as an outline: one `Runtime.evaluate` of hands' walker ([`WALKER`]) in the page, which
//! reads the DOM once and returns what a user perceives — roles, accessible names, values and
//! states — as compact records; here they become indented lines, one per thing, with a ref on
//! what can be acted on.
//!
//! Why a walker in the page rather than Chromium's accessibility tree
//! (`Accessibility.getFullAXTree`): that call builds and serialises every accessibility node with
//! all its properties and name sources — on a page of 5,000 elements 20,000 nodes, 7.4 MB of JSON,
//! 0.6–1.6 s before any work of ours — while the walker reads the same page in tens of
//! milliseconds and sends back a few hundred kilobytes. The walker computes roles and names as
//! the ARIA rules say for what apps use (native roles, `role`, `aria-label`, `aria-labelledby`,
//! labels, `alt`, `title`, `placeholder`, content), skips what is not rendered (`display: none`,
//! `hidden`, `visibility: hidden`, `aria-hidden`), lifts what only structures (`div`, `span`, …)
//! and drops text that repeats its parent's name.
//!
//! A ref is `e` and a number the walker gives the element the first time it shows it and keeps on
//! the element (a `WeakMap` of the page's, reached through a non-enumerable `window` property):
//! the same element keeps its ref across snapshots of one document. Numbers only grow within a
//! session (the walker starts from the session's next number), so a ref of an earlier document is
//! never another element's. The refs of the latest snapshot resolve to their elements in the page
//! ([`resolve_expression`]); an element the page removed since is refused.

use serde_json::Value;

/// Roles shown even when nameless and empty: they say something by being there.
const KEPT_EMPTY: &[&str] = &["img", "separator", "progressbar", "meter", "iframe", "textbox"];

/// Longest name or value shown, in characters.
const MAX_NAME: usize = 120;

/// One line of the outline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// Nesting depth (one space each).
    pub depth: usize,
    /// The role (`button`, `text` for text).
    pub role: String,
    /// The line without its indentation.
    pub text: String,
    /// The element's ref number, when it has a ref.
    pub node: Option<u64>,
}

impl Line {
    /// `e12` for a line with a ref.
    pub fn ref_name(&self) -> Option<String> {
        self.node.map(|n| format!("e{n}"))
    }

    /// The line with its indentation.
    pub fn indented(&self) -> String {
        format!("{:width$}{}", "", self.text, width = self.depth)
    }
}

/// The text of `s` cut to [`MAX_NAME`] characters, on one line, without secrets.
fn clean(s: &str) -> String {
    let clean = hands_core::redact::text(s.trim());
    let mut out: String = clean.chars().take(MAX_NAME).collect();
    if clean.chars().count() > MAX_NAME {
        out.push('…');
    }
    out.replace(['\n', '\r'], " ")
}

/// `s` cleaned and quoted.
fn quoted(s: &str) -> String {
    format!("\"{}\"", clean(s).replace('"', "\\\""))
}

/// What the role is written as: `h1`–`h6` for headings of a level, `li`, `p`; others as they are.
fn alias(role: &str, level: Option<u64>) -> String {
    match (role, level) {
        ("heading", Some(level @ 1..=6)) => format!("h{level}"),
        ("listitem", _) => "li".to_owned(),
        ("paragraph", _) => "p".to_owned(),
        (role, Some(level)) => format!("{role} level={level}"),
        (role, None) => role.to_owned(),
    }
}

/// One record of the walker: `[depth, role, name, ref, value, states, level]`.
struct Record<'a> {
    depth: usize,
    role: &'a str,
    name: String,
    node: Option<u64>,
    value: &'a str,
    states: &'a str,
    level: Option<u64>,
}

impl<'a> Record<'a> {
    fn of(v: &'a Value) -> Option<Self> {
        let v = v.as_array()?;
        Some(Self {
            depth: usize::try_from(v.first()?.as_u64()?).ok()?,
            role: v.get(1)?.as_str()?,
            name: v.get(2).and_then(Value::as_str).unwrap_or("").trim().to_owned(),
            node: v.get(3).and_then(Value::as_u64).filter(|n| *n > 0),
            value: v.get(4).and_then(Value::as_str).unwrap_or(""),
            states: v.get(5).and_then(Value::as_str).unwrap_or(""),
            level: v.get(6).and_then(Value::as_u64).filter(|n| *n > 0),
        })
    }
}

/// The outline of the walker's result (`{"next": N, "nodes": [records]}`), and the session's
/// next ref number after it.
pub fn outline(result: &Value) -> (Vec<Line>, u64) {
    let next = result["next"].as_u64().unwrap_or(1);
    let Some(nodes) = result["nodes"].as_array() else { return (Vec::new(), next) };
    let mut records: Vec<Record> = nodes.iter().filter_map(Record::of).collect();
    // A nameless line's first text joins it (`li "Milk"`, `p "Hello"`): one line instead of two.
    let mut joined = vec![false; records.len()];
    for i in 1..records.len() {
        let (head, tail) = records.split_at_mut(i);
        let (parent, line) = (&mut head[i - 1], &tail[0]);
        if line.role == "text"
            && parent.role != "text"
            && parent.depth + 1 == line.depth
            && parent.name.is_empty()
            && parent.value.is_empty()
            && !joined[i - 1]
        {
            parent.name.clone_from(&line.name);
            joined[i] = true;
        }
    }
    let mut lines = Vec::with_capacity(records.len());
    let mut bare = Vec::with_capacity(records.len());
    for (record, joined) in records.iter().zip(joined) {
        if joined {
            continue;
        }
        let Record { depth, role, name, node, value, states, level } = record;
        if *role == "text" {
            let text = quoted(name);
            lines.push(Line { depth: *depth, role: "text".into(), text, node: None });
            bare.push(false);
            continue;
        }
        let mut text = alias(role, *level);
        if !name.is_empty() {
            text.push(' ');
            text.push_str(&quoted(name));
        }
        if let Some(n) = node {
            text.push_str(&format!(" e{n}"));
        }
        if !states.is_empty() {
            text.push(' ');
            text.push_str(states);
        }
        if !value.is_empty() && value != name {
            text.push_str(": ");
            text.push_str(&clean(value));
        }
        bare.push(
            name.is_empty()
                && node.is_none()
                && states.is_empty()
                && value.is_empty()
                && !KEPT_EMPTY.contains(role),
        );
        lines.push(Line { depth: *depth, role: (*role).to_owned(), text, node: *node });
    }
    // A line that says nothing but its role and has nothing inside (an empty `status`, a
    // `paragraph` whose text was its parent's) is left out.
    let mut keep = vec![true; lines.len()];
    let mut below: Option<usize> = None;
    for i in (0..lines.len()).rev() {
        if bare[i] && below.is_none_or(|d| d <= lines[i].depth) {
            keep[i] = false;
        } else {
            below = Some(lines[i].depth);
        }
    }
    let lines = lines.into_iter().zip(keep).filter_map(|(l, k)| k.then_some(l)).collect();
    (lines, next)
}

/// The expression that takes the outline, numbering new elements from `next`.
pub fn walker_expression(next: u64) -> String {
    format!("({WALKER})({next})")
}

/// The expression whose value is the element of ref number `n` of the latest snapshot, or null
/// when the page removed it since.
pub fn resolve_expression(n: u64) -> String {
    format!(
        "(() => {{ const s = window.__handsOutline; const e = s && s.els.get({n}); \
         return e && e.isConnected ? e : null; }})()"
    )
}

/// The walker (see the module's documentation). It returns `{next, nodes}`, each node
/// `[depth, role, name, ref, value, states, level]`; `role` is `text` for a run of text.
pub const WALKER: &str = include_str!("outline.js");

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn records_become_an_indented_outline_with_refs() {
        let result = json!({"next": 9, "nodes": [
            [0, "main", "", 0, "", "", 0],
            [1, "heading", "Log in", 0, "", "", 1],
            [1, "form", "Login", 2, "", "", 0],
            [2, "textbox", "User", 3, "alice", "focused", 0],
            [2, "checkbox", "Remember me", 4, "", "checked", 0],
            [2, "button", "Go", 5, "", "", 0],
            [1, "paragraph", "", 0, "", "", 0],
            [2, "text", "Hello \"you\"", 0, "", "", 0],
            [1, "list", "", 6, "", "", 0],
            [2, "listitem", "", 0, "", "", 0],
            [3, "text", "Milk", 0, "", "", 0],
            [3, "text", "Eggs", 0, "", "", 0],
            [1, "status", "", 0, "", "", 0],
            [1, "separator", "", 0, "", "", 0],
            [0, "region", "", 0, "", "", 0],
            [1, "group", "", 0, "", "", 0],
        ]});
        let (lines, next) = outline(&result);
        let text: Vec<String> = lines.iter().map(Line::indented).collect();
        assert_eq!(
            text,
            [
                "main",
                " h1 \"Log in\"",
                " form \"Login\" e2",
                "  textbox \"User\" e3 focused: alice",
                "  checkbox \"Remember me\" e4 checked",
                "  button \"Go\" e5",
                " p \"Hello \\\"you\\\"\"",
                " list e6",
                "  li \"Milk\"",
                "   \"Eggs\"",
                " separator",
            ]
        );
        assert_eq!(next, 9);
        assert_eq!(lines[3].ref_name().as_deref(), Some("e3"), "an empty region left out");
        assert_eq!(lines[1].role, "heading", "the role stays for queries");
    }
}
