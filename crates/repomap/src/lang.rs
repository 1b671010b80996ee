//! The languages the map reads, by file extension, each with its tree-sitter grammar and the
//! definitions query its grammar ships (`queries/tags.scm`). TypeScript's own query covers only
//! what JavaScript lacks (interfaces, signatures, modules), so TypeScript and TSX use JavaScript's
//! query followed by TypeScript's, as the tree-sitter CLI does. Queries compile once per process.

use std::path::Path;
use std::sync::OnceLock;

use tree_sitter::{Language, Query};

/// A language of the map.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Lang {
    /// `.rs`
    Rust,
    /// `.py`, `.pyi`
    Python,
    /// `.js`, `.jsx`, `.mjs`, `.cjs`
    JavaScript,
    /// `.ts`, `.mts`, `.cts`
    TypeScript,
    /// `.tsx`
    Tsx,
    /// `.go`
    Go,
}

/// A grammar with its compiled definitions query.
pub(crate) struct Grammar {
    pub language: Language,
    pub query: Query,
    /// Per capture index: `Some(kind)` for `@definition.<kind>`, the name capture apart.
    pub definition_kind: Vec<Option<String>>,
    /// The index of the `@name` capture.
    pub name_capture: Option<u32>,
}

impl Lang {
    /// The language of `path` by its extension; `None` for files the map does not read.
    pub fn of(path: &Path) -> Option<Lang> {
        let ext = path.extension()?.to_str()?;
        Some(match ext {
            "rs" => Lang::Rust,
            "py" | "pyi" => Lang::Python,
            "js" | "jsx" | "mjs" | "cjs" => Lang::JavaScript,
            "ts" | "mts" | "cts" => Lang::TypeScript,
            "tsx" => Lang::Tsx,
            "go" => Lang::Go,
            _ => return None,
        })
    }

    /// Its name as the result shows it.
    pub fn name(self) -> &'static str {
        match self {
            Lang::Rust => "rust",
            Lang::Python => "python",
            Lang::JavaScript => "javascript",
            Lang::TypeScript => "typescript",
            Lang::Tsx => "tsx",
            Lang::Go => "go",
        }
    }

    /// Its grammar and query, compiled on first use; `None` if the query does not compile for the
    /// grammar (a grammar crate's bug: the language is then left out of maps, never a panic).
    pub(crate) fn grammar(self) -> Option<&'static Grammar> {
        static CELLS: [OnceLock<Option<Grammar>>; 6] = [const { OnceLock::new() }; 6];
        let index = self as usize;
        CELLS[index].get_or_init(|| compile(self)).as_ref()
    }
}

fn compile(lang: Lang) -> Option<Grammar> {
    let ts = || {
        format!("{}\n{}", tree_sitter_javascript::TAGS_QUERY, tree_sitter_typescript::TAGS_QUERY)
    };
    let (language, source): (Language, String) = match lang {
        Lang::Rust => (tree_sitter_rust::LANGUAGE.into(), tree_sitter_rust::TAGS_QUERY.into()),
        Lang::Python => {
            (tree_sitter_python::LANGUAGE.into(), tree_sitter_python::TAGS_QUERY.into())
        }
        Lang::JavaScript => {
            (tree_sitter_javascript::LANGUAGE.into(), tree_sitter_javascript::TAGS_QUERY.into())
        }
        Lang::TypeScript => (tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(), ts()),
        Lang::Tsx => (tree_sitter_typescript::LANGUAGE_TSX.into(), ts()),
        Lang::Go => (tree_sitter_go::LANGUAGE.into(), tree_sitter_go::TAGS_QUERY.into()),
    };
    let query = Query::new(&language, &source).ok()?;
    let mut name_capture = None;
    let definition_kind = query
        .capture_names()
        .iter()
        .enumerate()
        .map(|(index, name)| {
            if *name == "name" {
                name_capture = u32::try_from(index).ok();
            }
            name.strip_prefix("definition.").map(str::to_owned)
        })
        .collect();
    Some(Grammar { language, query, definition_kind, name_capture })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_language_query_compiles_for_its_grammar() {
        for lang in
            [Lang::Rust, Lang::Python, Lang::JavaScript, Lang::TypeScript, Lang::Tsx, Lang::Go]
        {
            let grammar = lang.grammar().unwrap_or_else(|| panic!("{lang:?} does not compile"));
            assert!(grammar.name_capture.is_some(), "{lang:?} has no @name capture");
            assert!(grammar.definition_kind.iter().any(Option::is_some), "{lang:?}");
        }
    }

    #[test]
    fn languages_by_extension() {
        assert_eq!(Lang::of(Path::new("a/b.rs")), Some(Lang::Rust));
        assert_eq!(Lang::of(Path::new("x.tsx")), Some(Lang::Tsx));
        assert_eq!(Lang::of(Path::new("x.mjs")), Some(Lang::JavaScript));
        assert_eq!(Lang::of(Path::new("README.md")), None);
        assert_eq!(Lang::of(Path::new("Makefile")), None);
    }
}
