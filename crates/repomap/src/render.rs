//! The map as the model reads it, within its token budget: the best-ranked definitions taken in
//! rank order until the next one would not fit, shown grouped by file (files in the order of their
//! best definition, definitions by line), `line│signature` each; the structured result carries the
//! same files and definitions with their kinds and reference counts.
//!
//! Tokens are estimated as one per 2.7 bytes of text: OpenAI's cl100k_base gives maps of Rust,
//! TypeScript and Python 2.7 to 3.5 bytes a token (bench/repo_map.sh counts them), so the estimate
//! errs on the side of staying within the budget.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;

use crate::collect::{Collected, MAX_FILES};
use crate::rank::Ranked;

/// Bytes per ten tokens of the estimate (2.7 bytes a token).
pub(crate) const BYTES_PER_TEN_TOKENS: usize = 27;
/// Files named in `skipped` at most.
const SKIPPED_SHOWN: usize = 20;
/// Longest signature shown, in characters; longer ones end in `…`.
pub(crate) const SIGNATURE_CHARS: usize = 160;

/// The structured result of repo_map.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct RepoMapResult {
    /// The folder mapped, relative to the root (`.` for the root).
    pub path: String,
    /// Source files read (files of a language the map knows).
    pub source_files: usize,
    /// Other files under the folder (not mapped).
    pub other_files: usize,
    /// Definitions found in all.
    pub definitions: usize,
    /// Definitions shown.
    pub definitions_shown: usize,
    /// The token budget.
    pub max_tokens: usize,
    /// The text's size in estimated tokens (one per 2.7 bytes).
    pub tokens: usize,
    /// True when definitions were left out for the budget.
    pub truncated: bool,
    /// Source files parsed in this call; the others came from the cache.
    pub parsed: usize,
    /// Source files by language.
    pub languages: BTreeMap<String, usize>,
    /// The files shown, best first.
    pub files: Vec<MappedFile>,
    /// Source files left out and why (the first 20).
    pub skipped: Vec<SkippedFile>,
    /// Files past the walk's limit of 50,000, not mapped.
    pub files_beyond_limit: usize,
}

/// One file of the map.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct MappedFile {
    /// Its path from the root.
    pub path: String,
    /// Its language.
    pub language: String,
    /// Its definitions shown, by line.
    pub definitions: Vec<MappedDef>,
}

/// One definition shown.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct MappedDef {
    /// The defined name.
    pub name: String,
    /// function, method, class, interface, module, type, constant or macro.
    pub kind: String,
    /// Its line, from 1.
    pub line: u32,
    /// The line it starts on, trimmed.
    pub signature: String,
    /// How many other files of the folder use its name.
    pub referenced_by: u32,
}

/// A source file left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SkippedFile {
    /// Its path from the root.
    pub path: String,
    /// Why.
    pub reason: String,
}

/// The map's text and structured result for `ranked` definitions of `collected`, within
/// `max_tokens`.
pub(crate) fn render(
    collected: &Collected,
    ranked: &[Ranked],
    max_tokens: usize,
) -> (String, RepoMapResult) {
    let budget = max_tokens.saturating_mul(BYTES_PER_TEN_TOKENS) / 10;
    // The header is never longer than with every definition shown in every file, and truncated.
    let n = collected.sources.len();
    let mut used =
        header(collected, ranked.len(), ranked.len(), n, true).len() + footer(collected).len();
    let mut chosen: Vec<Ranked> = Vec::new();
    let mut open_files: Vec<usize> = Vec::new();
    for r in ranked {
        let source = &collected.sources[r.file];
        let def = &source.tags.defs[r.def];
        let mut cost = line_of(def.line, &shown(&def.signature)).len();
        if !open_files.contains(&r.file) {
            cost += source.rel.len() + 3;
        }
        if used + cost > budget {
            break;
        }
        used += cost;
        if !open_files.contains(&r.file) {
            open_files.push(r.file);
        }
        chosen.push(*r);
    }
    let mut files = Vec::new();
    let mut body = String::new();
    for &file in &open_files {
        let source = &collected.sources[file];
        let mut mine: Vec<&Ranked> = chosen.iter().filter(|r| r.file == file).collect();
        mine.sort_by_key(|r| source.tags.defs[r.def].line);
        body.push('\n');
        body.push_str(&source.rel);
        body.push_str(":\n");
        let mut definitions = Vec::new();
        for r in mine {
            let def = &source.tags.defs[r.def];
            let signature = shown(&def.signature);
            body.push_str(&line_of(def.line, &signature));
            definitions.push(MappedDef {
                name: def.name.clone(),
                kind: def.kind.clone(),
                line: def.line,
                signature,
                referenced_by: r.referenced_by,
            });
        }
        files.push(MappedFile {
            path: source.rel.clone(),
            language: source.lang.name().to_owned(),
            definitions,
        });
    }
    let mut languages = BTreeMap::new();
    for source in &collected.sources {
        *languages.entry(source.lang.name().to_owned()).or_insert(0) += 1;
    }
    let truncated = chosen.len() < ranked.len();
    let mut text = header(collected, ranked.len(), chosen.len(), open_files.len(), truncated);
    text.push_str(&body);
    text.push_str(&footer(collected));
    let tokens = (text.len() * 10).div_ceil(BYTES_PER_TEN_TOKENS);
    let result = RepoMapResult {
        path: collected.start.clone(),
        source_files: collected.sources.len(),
        other_files: collected.other_files,
        definitions: ranked.len(),
        definitions_shown: chosen.len(),
        max_tokens,
        tokens,
        truncated,
        parsed: collected.parsed,
        languages,
        files,
        skipped: collected
            .skipped
            .iter()
            .take(SKIPPED_SHOWN)
            .map(|(path, reason)| SkippedFile { path: path.clone(), reason: reason.clone() })
            .collect(),
        files_beyond_limit: collected.more,
    };
    (text, result)
}

/// The first paragraph: what was mapped and what is shown.
fn header(
    collected: &Collected,
    definitions: usize,
    shown: usize,
    files: usize,
    truncated: bool,
) -> String {
    let place = if collected.start == "." {
        "the project root".to_owned()
    } else {
        collected.start.clone()
    };
    if collected.sources.is_empty() {
        return format!(
            "No source files to map under {place} ({} other files). The map reads Rust, Python, \
             JavaScript, TypeScript and Go files.",
            collected.other_files
        );
    }
    format!(
        "Map of {place}: {} source files, {definitions} definitions; showing {shown} in {files} \
         files, ranked by how many other files use them (`line│signature`).{}\n",
        collected.sources.len(),
        if truncated {
            " Raise max_tokens, narrow `path` or name `focus` files to see others."
        } else {
            ""
        },
    )
}

/// A signature as the map shows it: redacted whole, then cut to [`SIGNATURE_CHARS`] (in that
/// order: a stored secret cut in two is no longer found by the registry's redaction).
pub(crate) fn shown(signature: &str) -> String {
    let clean = hands_core::redact::text(signature);
    if clean.chars().count() > SIGNATURE_CHARS {
        let cut: String = clean.chars().take(SIGNATURE_CHARS - 1).collect();
        format!("{cut}…")
    } else {
        clean.into_owned()
    }
}

fn line_of(line: u32, signature: &str) -> String {
    format!("  {line}│{signature}\n")
}

/// What the map left out, in a few lines (empty when nothing).
fn footer(collected: &Collected) -> String {
    let mut out = String::new();
    if !collected.skipped.is_empty() {
        let names: Vec<String> =
            collected.skipped.iter().take(5).map(|(path, why)| format!("{path} ({why})")).collect();
        let rest = collected.skipped.len().saturating_sub(5);
        out.push_str(&format!(
            "\nLeft out: {}{}.",
            names.join(", "),
            if rest > 0 { format!(" and {rest} more") } else { String::new() }
        ));
    }
    if collected.more > 0 {
        out.push_str(&format!(
            "\nOnly the first {MAX_FILES} files (by path) were mapped; {} more were not: narrow `path`.",
            collected.more
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_signatures_are_cut_after_redaction() {
        let long = format!("fn f({})", "a: u8, ".repeat(60));
        let cut = shown(&long);
        assert_eq!(cut.chars().count(), SIGNATURE_CHARS);
        assert!(cut.ends_with('…'));
        assert_eq!(shown("fn short()"), "fn short()");
    }
}
