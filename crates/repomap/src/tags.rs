//! What one file defines and what it refers to, from its syntax tree: definitions come from the
//! grammar's definitions query (name, kind, line, the line as the signature); references are
//! every identifier leaf of the tree that is not itself a definition's name, counted by name.
//! The grammars' own reference patterns cover only calls, so a type used in a signature would not
//! count; identifiers do, as in Aider's map, and names defined nowhere drop out at ranking.

use std::collections::{HashMap, HashSet};

use serde::Serialize;
use tree_sitter::{Parser, QueryCursor, StreamingIterator};

use crate::lang::Lang;

/// Longest signature kept, in characters: the map cuts it shorter when it shows it, after
/// redacting it (a cut first could leave a secret's head, which redaction no longer knows).
const KEPT_CHARS: usize = 2000;

/// One definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Def {
    /// The defined name.
    pub name: String,
    /// Its kind as the grammar's query says: function, method, class, interface, module, type,
    /// constant, macro.
    pub kind: String,
    /// Its line, from 1.
    pub line: u32,
    /// The line it starts on, trimmed (at most 2,000 characters).
    pub signature: String,
}

/// What one file defines and refers to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileTags {
    /// Its definitions, in source order.
    pub defs: Vec<Def>,
    /// Identifiers it uses, with how often.
    pub refs: Vec<(String, u32)>,
}

/// The tags of `source`, a file in `lang`; `None` when the language's grammar is unavailable or
/// the parser gave up.
pub fn extract(lang: Lang, source: &[u8]) -> Option<FileTags> {
    let grammar = lang.grammar()?;
    let mut parser = Parser::new();
    parser.set_language(&grammar.language).ok()?;
    let tree = parser.parse(source, None)?;
    let mut defs = Vec::new();
    let mut def_names: HashSet<usize> = HashSet::new();
    let mut cursor = QueryCursor::new();
    // A pathological file must not make the query run away: matches in flight are bounded.
    cursor.set_match_limit(4096);
    let mut matches = cursor.matches(&grammar.query, tree.root_node(), source);
    while let Some(found) = matches.next() {
        let mut name = None;
        let mut kind = None;
        for capture in found.captures() {
            if Some(capture.index) == grammar.name_capture {
                name = Some(capture.node);
            } else if let Some(Some(k)) = grammar.definition_kind.get(capture.index as usize) {
                kind = Some((k, capture.node));
            }
        }
        let (Some(name), Some((kind, node))) = (name, kind) else { continue };
        let Ok(text) = name.utf8_text(source) else { continue };
        if !def_names.insert(name.start_byte()) {
            // Two patterns matched the same name (a method is also a function): keep the first.
            continue;
        }
        defs.push(Def {
            name: text.to_owned(),
            kind: kind.clone(),
            line: u32::try_from(node.start_position().row + 1).unwrap_or(u32::MAX),
            signature: signature(source, node.start_byte()),
        });
    }
    defs.sort_by_key(|d| d.line);
    let mut counts: HashMap<&str, u32> = HashMap::new();
    let mut walk = tree.walk();
    'tree: loop {
        let node = walk.node();
        if node.child_count() == 0 {
            if node.kind().ends_with("identifier")
                && !def_names.contains(&node.start_byte())
                && let Ok(text) = node.utf8_text(source)
            {
                *counts.entry(text).or_default() += 1;
            }
        } else if walk.goto_first_child() {
            continue;
        }
        while !walk.goto_next_sibling() {
            if !walk.goto_parent() {
                break 'tree;
            }
        }
    }
    let mut refs: Vec<(String, u32)> = counts.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
    refs.sort_unstable();
    Some(FileTags { defs, refs })
}

/// The line of `source` that byte `at` is on, trimmed and cut to [`KEPT_CHARS`].
fn signature(source: &[u8], at: usize) -> String {
    let start = source[..at].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let end = source[at..].iter().position(|&b| b == b'\n').map_or(source.len(), |i| at + i);
    let line = String::from_utf8_lossy(&source[start..end]);
    line.trim().chars().take(KEPT_CHARS).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(tags: &FileTags) -> Vec<(&str, &str, u32)> {
        tags.defs.iter().map(|d| (d.name.as_str(), d.kind.as_str(), d.line)).collect()
    }

    fn refs(tags: &FileTags, name: &str) -> u32 {
        tags.refs.iter().find(|(n, _)| n == name).map_or(0, |(_, c)| *c)
    }

    #[test]
    fn rust_definitions_and_type_references() {
        let src = b"pub struct Session { id: u32 }\n\nimpl Session {\n    pub fn new() -> Session {\n        Session { id: helper() }\n    }\n}\n\nfn helper() -> u32 { 1 }\n";
        let tags = extract(Lang::Rust, src).unwrap();
        assert_eq!(
            names(&tags),
            [("Session", "class", 1), ("new", "method", 4), ("helper", "function", 9)]
        );
        assert_eq!(tags.defs[1].signature, "pub fn new() -> Session {");
        // The impl, the return type and the struct literal; the definition itself is not a use.
        assert_eq!(refs(&tags, "Session"), 3);
        assert_eq!(refs(&tags, "helper"), 1);
    }

    #[test]
    fn typescript_uses_javascript_and_typescript_patterns() {
        let src = b"export interface User { name: string }\nexport class Store {\n  add(u: User): void {}\n}\nexport function load(): User[] { return []; }\n";
        let tags = extract(Lang::TypeScript, src).unwrap();
        let found = names(&tags);
        assert!(found.contains(&("User", "interface", 1)), "{found:?}");
        assert!(found.contains(&("Store", "class", 2)), "{found:?}");
        assert!(found.contains(&("add", "method", 3)), "{found:?}");
        assert!(found.contains(&("load", "function", 5)), "{found:?}");
        assert_eq!(refs(&tags, "User"), 2);
    }

    #[test]
    fn python_and_go() {
        let py =
            b"class Repo:\n    def save(self):\n        pass\n\ndef main():\n    Repo().save()\n";
        let tags = extract(Lang::Python, py).unwrap();
        assert_eq!(
            names(&tags),
            [("Repo", "class", 1), ("save", "function", 2), ("main", "function", 5)]
        );
        assert_eq!(refs(&tags, "Repo"), 1);
        let go = b"package m\n\ntype Server struct{}\n\nfunc (s *Server) Run() {}\n\nfunc New() *Server { return &Server{} }\n";
        let tags = extract(Lang::Go, go).unwrap();
        let found = names(&tags);
        assert!(found.contains(&("Server", "type", 3)), "{found:?}");
        assert!(found.contains(&("Run", "method", 5)), "{found:?}");
        assert!(found.contains(&("New", "function", 7)), "{found:?}");
    }

    #[test]
    fn broken_and_binary_sources_give_what_parses() {
        let tags = extract(Lang::Rust, b"fn ok() {}\nfn broken( {\n").unwrap();
        assert!(tags.defs.iter().any(|d| d.name == "ok"));
        assert!(extract(Lang::Python, &[0xff, 0xfe, 0, 1, 2]).is_some());
    }

    #[test]
    fn long_signatures_are_kept_to_a_bound() {
        let long = format!("fn f({}) {{}}\n", "a: u8, ".repeat(600));
        let tags = extract(Lang::Rust, long.as_bytes()).unwrap();
        assert_eq!(tags.defs[0].signature.chars().count(), KEPT_CHARS);
    }
}
