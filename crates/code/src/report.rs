//! Diagnostics as the model reads them: `path:line:col: message [code]`, errors only unless
//! warnings are asked for, at most [`MAX_SHOWN`] lines and the rest counted; and which of a
//! file's errors are new since the last time it was reported.

use std::path::Path;

use lsp_types::{Diagnostic, DiagnosticSeverity, NumberOrString};
use schemars::JsonSchema;
use serde::Serialize;

/// At most this many diagnostics in one notice or answer; the rest are counted.
pub const MAX_SHOWN: usize = 20;

/// One diagnostic as hands reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Problem {
    /// Path relative to the project root.
    pub path: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column (in UTF-16 code units, as the server counts).
    pub column: u32,
    /// `error`, `warning`, `information` or `hint`.
    pub severity: String,
    /// The server's message.
    pub message: String,
    /// The server's code for it (`TS2322`, `reportAttributeAccessIssue`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// Who reported it (`typescript`, `Pyright`), if said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

impl Problem {
    /// From a server's diagnostic of the file at `path` (root-relative).
    pub fn new(path: &str, d: &Diagnostic) -> Self {
        let severity = match d.severity {
            Some(DiagnosticSeverity::WARNING) => "warning",
            Some(DiagnosticSeverity::INFORMATION) => "information",
            Some(DiagnosticSeverity::HINT) => "hint",
            _ => "error",
        };
        Self {
            path: path.to_owned(),
            line: d.range.start.line + 1,
            column: d.range.start.character + 1,
            severity: severity.to_owned(),
            // Redacted here, not only with the result: a server that shortens a long literal
            // type (TypeScript's `"sk_…...`) shows a secret's first bytes, which the result's
            // redaction, looking for whole values, does not find.
            message: hands_core::redact::text_cut(&d.message).into_owned(),
            code: d.code.as_ref().map(|c| match c {
                NumberOrString::Number(n) => n.to_string(),
                NumberOrString::String(s) => s.clone(),
            }),
            source: d.source.clone(),
        }
    }

    /// `path:line:col: message [code]` (and the severity when it is not an error).
    pub fn line_text(&self) -> String {
        let severity =
            if self.severity == "error" { String::new() } else { format!("{}: ", self.severity) };
        let code = self.code.as_deref().map(|c| format!(" [{c}]")).unwrap_or_default();
        let message = self.message.replace('\n', " ");
        format!("{}:{}:{}: {severity}{message}{code}", self.path, self.line, self.column)
    }

    /// What makes two reports the same problem across edits: where it is moves with the lines
    /// around it, so it is left out.
    pub fn key(&self) -> (String, Option<String>, String) {
        (self.severity.clone(), self.code.clone(), self.message.clone())
    }
}

/// The diagnostics worth reporting: errors, and warnings too when asked.
pub fn wanted(d: &Diagnostic, warnings: bool) -> bool {
    match d.severity {
        None | Some(DiagnosticSeverity::ERROR) => true,
        Some(DiagnosticSeverity::WARNING) => warnings,
        _ => false,
    }
}

/// The root-relative form of `path` for results.
pub fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root).unwrap_or(path).to_string_lossy().into_owned()
}

/// Those of `now` not among `before` (as a multiset of [`Problem::key`]s).
pub fn new_since(before: &[Problem], now: &[Problem]) -> Vec<Problem> {
    let mut left: Vec<_> = before.iter().map(Problem::key).collect();
    now.iter()
        .filter(|p| {
            let key = p.key();
            match left.iter().position(|k| *k == key) {
                Some(i) => {
                    left.swap_remove(i);
                    false
                }
                None => true,
            }
        })
        .cloned()
        .collect()
}

/// Up to [`MAX_SHOWN`] lines, then `… and N more` counting `extra` (diagnostics the server sent
/// beyond the per-file bound) too.
pub fn lines(problems: &[Problem], extra: usize) -> String {
    let mut text: Vec<String> = problems.iter().take(MAX_SHOWN).map(Problem::line_text).collect();
    let more = problems.len().saturating_sub(MAX_SHOWN) + extra;
    if more > 0 {
        text.push(format!("… and {more} more"));
    }
    text.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(message: &str, line: u32) -> Problem {
        Problem {
            path: "a.ts".into(),
            line,
            column: 1,
            severity: "error".into(),
            message: message.into(),
            code: Some("2322".into()),
            source: None,
        }
    }

    #[test]
    fn old_errors_are_not_new_even_when_they_moved() {
        let before = vec![problem("x", 3)];
        let now = vec![problem("x", 5), problem("y", 6), problem("x", 9)];
        let new = new_since(&before, &now);
        assert_eq!(new, vec![problem("y", 6), problem("x", 9)]);
    }

    #[test]
    fn at_most_twenty_lines_and_the_rest_counted() {
        let many: Vec<_> = (0..25).map(|i| problem("bad", i)).collect();
        let text = lines(&many, 5);
        assert_eq!(text.lines().count(), 21);
        assert!(text.starts_with("a.ts:0:1: bad [2322]"), "{text}");
        assert!(text.ends_with("… and 10 more"), "{text}");
    }
}
