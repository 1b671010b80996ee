//! edit_file: replace an exact string in a text file, once (or everywhere with `replace_all`).
//!
//! Flow: refuse protected targets (atomic::check_writable), read the file (text and UTF-8 only), strip
//! a BOM, find old_string — exactly, then, in a CRLF file, with its line breaks as CRLF — and demand
//! one match (or ≥1 with replace_all). No match: report the closest region (`closest`: whitespace-
//! insensitive, then fuzzy within a budget) and change nothing. Then re-add the BOM, write
//! atomically, record the ledger, and return a short unified diff.

use std::borrow::Cow;
use std::io::{self, Read};
use std::time::Duration;

use hands_core::{Annotations, Context, Tool, ToolError, ToolOutput};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::detect::{self, Kind};
use crate::ledger::{Seen, content_hash};
use crate::read_file::human_size;
use crate::{FsConfig, Ledger, RelPath, Workspace, atomic};

/// Arguments of edit_file.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditFileArgs {
    /// Path of the file to edit, relative to the project root.
    pub path: String,
    /// The exact text to replace; it must occur exactly once unless `replace_all` is true.
    pub old_string: String,
    /// The text to put in its place (must differ from `old_string`).
    pub new_string: String,
    /// Replace every occurrence instead of requiring exactly one (default false).
    #[serde(default)]
    pub replace_all: bool,
}

/// The edit_file tool.
#[derive(Debug, Clone)]
pub struct EditFile {
    config: FsConfig,
}

impl EditFile {
    /// With `config`.
    pub fn new(config: FsConfig) -> Self {
        Self { config }
    }
}

impl Tool for EditFile {
    type Args = EditFileArgs;

    fn name(&self) -> &'static str {
        "edit_file"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("edit_file.md"))
    }

    fn annotations(&self) -> Annotations {
        Annotations { read_only: false, destructive: true, idempotent: false, open_world: false }
    }

    async fn call(&self, ctx: Context, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let config = self.config.clone();
        tokio::task::spawn_blocking(move || edit(&ctx, &config, &args))
            .await
            .map_err(|err| ToolError::Fatal(format!("edit_file task failed: {err}")))?
    }
}

const BOM: &str = "\u{FEFF}";
/// Diff lines returned at most.
const DIFF_MAX_LINES: usize = 300;

fn edit(ctx: &Context, config: &FsConfig, args: &EditFileArgs) -> Result<ToolOutput, ToolError> {
    if args.old_string.is_empty() {
        return Err(ToolError::model(
            "`old_string` is empty. To create a file or replace all of it, use write_file; to insert \
             text, put a nearby line in old_string and repeat it with your addition in new_string.",
        ));
    }
    if args.old_string == args.new_string {
        return Err(ToolError::model(
            "`old_string` and `new_string` are the same, so the edit would change nothing. Put the \
             new text in new_string.",
        ));
    }
    let ws = Workspace::for_root(ctx.root())?;
    let path = ws.resolve("path", &args.path)?;
    atomic::check_writable(&ws, &path, config, "edit")?;
    let text = load(&ws, &path, config)?;
    let (bom, body) = match text.strip_prefix(BOM) {
        Some(rest) => (BOM, rest),
        None => ("", text.as_str()),
    };
    let Some((old, new, count)) = find(body, &args.old_string, &args.new_string) else {
        return Err(no_match(&path, body, &args.old_string));
    };
    if count > 1 && !args.replace_all {
        let lines = match_lines(body, &old);
        let shown: Vec<String> = lines.iter().take(50).map(u64::to_string).collect();
        let more = if lines.len() > 50 {
            format!(" and {} more", lines.len() - 50)
        } else {
            String::new()
        };
        return Err(ToolError::model(format!(
            "`old_string` occurs {count} times in {} (lines {}{more}); nothing was changed. Add \
             surrounding lines to old_string so that it matches exactly one place, or set \
             replace_all to true to change every occurrence.",
            path.display(),
            shown.join(", ")
        )));
    }
    let new_body = if args.replace_all {
        body.replace(old.as_ref(), &new)
    } else {
        body.replacen(old.as_ref(), &new, 1)
    };
    let result = format!("{bom}{new_body}");
    if result.len() > config.write_max_bytes {
        return Err(ToolError::model(format!(
            "The edited {} would be {}, over the {} edit_file writes; nothing was changed.",
            path.display(),
            human_size(result.len() as u64),
            human_size(config.write_max_bytes as u64)
        )));
    }
    let meta = atomic::write(&ws, &path, result.as_bytes())
        .map_err(|err| ws.io_error("written", &path, &err))?;
    ctx.session()
        .extension::<Ledger>()
        .record(&path, Seen::new(&meta, Some(content_hash(result.as_bytes()))));
    let replacements = if args.replace_all { count } else { 1 };
    let diff = unified_diff(&path, body, &new_body);
    Ok(ToolOutput::text(format!(
        "Edited {} ({replacements} replacement{}).\n\n{diff}",
        path.display(),
        if replacements == 1 { "" } else { "s" }
    ))
    .with_structured(json!({ "path": path.display(), "replacements": replacements })))
}

/// The file's text, refusing what an edit would corrupt (binaries, invalid UTF-8) or is too big.
fn load(ws: &Workspace, path: &RelPath, config: &FsConfig) -> Result<String, ToolError> {
    let shown = path.display();
    let mut file = ws.dir().open(path.for_open()).map_err(|err| match err.kind() {
        io::ErrorKind::NotFound => ToolError::model(format!(
            "{shown} does not exist. To create it, use write_file with its complete content."
        )),
        _ => ws.io_error("edited", path, &err),
    })?;
    let meta = file.metadata().map_err(|err| ws.io_error("edited", path, &err))?;
    if meta.is_dir() {
        return Err(ToolError::model(format!("{shown} is a directory; edit_file edits files.")));
    }
    if meta.len() > config.write_max_bytes as u64 {
        return Err(ToolError::model(format!(
            "{shown} is {}, over the {} edit_file handles. Change it with a command through bash.",
            human_size(meta.len()),
            human_size(config.write_max_bytes as u64)
        )));
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(|err| ws.io_error("edited", path, &err))?;
    if let Kind::Binary(kind) | Kind::Image(kind) = detect::sniff(&bytes) {
        return Err(ToolError::model(format!(
            "{shown} is a binary file ({kind}, {}); edit_file only edits text, and a text edit would \
             corrupt it.",
            human_size(meta.len())
        )));
    }
    String::from_utf8(bytes).map_err(|err| {
        ToolError::model(format!(
            "{shown} is not valid UTF-8 (invalid bytes at byte {}); edit_file refuses it because \
             rewriting it as text would corrupt those bytes. Change it with a command through bash.",
            err.utf8_error().valid_up_to()
        ))
    })
}

/// old_string and new_string as they match `body`, with the number of matches: exactly as given,
/// else (in a file with CRLF) with their line breaks as CRLF, else with CRLF turned into LF.
fn find<'a>(body: &str, old: &'a str, new: &'a str) -> Option<(Cow<'a, str>, Cow<'a, str>, usize)> {
    let count = body.matches(old).count();
    if count > 0 {
        return Some((Cow::Borrowed(old), Cow::Borrowed(new), count));
    }
    let lf = |s: &str| s.replace("\r\n", "\n");
    let mut tries = Vec::new();
    if body.contains("\r\n") && old.contains('\n') {
        tries.push((lf(old).replace('\n', "\r\n"), lf(new).replace('\n', "\r\n")));
    }
    if old.contains("\r\n") {
        tries.push((lf(old), lf(new)));
    }
    tries.into_iter().find_map(|(o, n)| {
        let count = body.matches(o.as_str()).count();
        (count > 0).then_some((Cow::Owned(o), Cow::Owned(n), count))
    })
}

/// The 1-based line of each (non-overlapping) match.
fn match_lines(body: &str, needle: &str) -> Vec<u64> {
    let mut lines = Vec::new();
    let (mut line, mut pos) = (1u64, 0usize);
    for (at, _) in body.match_indices(needle) {
        line += body[pos..at].bytes().filter(|&b| b == b'\n').count() as u64;
        pos = at;
        lines.push(line);
    }
    lines
}

fn no_match(path: &RelPath, body: &str, old: &str) -> ToolError {
    let shown = path.display();
    let Some(near) = closest(body, old) else {
        return ToolError::model(format!(
            "`old_string` was not found in {shown}, and nothing similar either; nothing was changed. \
             Read the file again with read_file and copy the exact text you want to replace."
        ));
    };
    let lines: Vec<&str> = body.split('\n').collect();
    let end = near.start + near.len;
    let mut region = String::new();
    for (i, line) in lines[near.start..end].iter().enumerate().take(30) {
        region.push_str(&format!(
            "{:>6}\t{}\n",
            near.start + i + 1,
            clip(line.trim_end_matches('\r'), 300)
        ));
    }
    let how = if near.whitespace_only {
        "It differs only in whitespace (indentation, spaces or tabs, or line breaks): copy these \
         lines exactly as the file has them."
            .to_owned()
    } else {
        let old_lines: Vec<&str> = old.trim_end_matches(['\n', '\r']).split('\n').collect();
        let first = (0..near.len)
            .find(|&k| lines[near.start + k].trim() != old_lines.get(k).map_or("", |l| l.trim()));
        match first {
            Some(k) => format!(
                "The first difference is on line {}: the file has `{}` where old_string has `{}`.",
                near.start + k + 1,
                clip(lines[near.start + k].trim(), 200),
                clip(old_lines.get(k).map_or("", |l| l.trim()), 200)
            ),
            None => {
                "The lines match when leading and trailing spaces are ignored; copy them exactly."
                    .to_owned()
            }
        }
    };
    ToolError::model(format!(
        "`old_string` was not found in {shown}; nothing was changed. The closest region is lines \
         {}-{} ({}% similar):\n{region}{how} Fix old_string to match the file exactly and call \
         edit_file again.",
        near.start + 1,
        end,
        (near.score * 100.0).round() as u32
    ))
}

fn clip(s: &str, max: usize) -> Cow<'_, str> {
    match s.char_indices().nth(max) {
        Some((cut, _)) => Cow::Owned(format!("{}…", &s[..cut])),
        None => Cow::Borrowed(s),
    }
}

/// A region of the file close to old_string: 0-based first line and line count.
#[derive(Debug, PartialEq)]
struct Near {
    start: usize,
    len: usize,
    score: f64,
    whitespace_only: bool,
}

/// Line pairs compared at most by the fuzzy search, to keep big files fast.
const FUZZY_BUDGET: usize = 200_000;

/// The region most like `old`: first a window with the same lines when all whitespace is ignored,
/// then the window with the best mean per-line similarity (normalised Levenshtein), looking first
/// at windows anchored on a line that old_string has verbatim, else a strided scan within budget.
fn closest(body: &str, old: &str) -> Option<Near> {
    let lines: Vec<&str> = body.split('\n').map(|l| l.trim_end_matches('\r')).collect();
    let old_lines: Vec<&str> =
        old.trim_end_matches(['\n', '\r']).split('\n').map(|l| l.trim_end_matches('\r')).collect();
    let n = old_lines.len().min(lines.len()).max(1);
    let starts = lines.len().saturating_sub(n) + 1;
    let squash = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    let old_squashed = squash(&old_lines.concat());
    if !old_squashed.is_empty() {
        let first = squash(old_lines[0]);
        for start in 0..starts {
            if !old_squashed.starts_with(&squash(lines[start]))
                || (first.is_empty() != lines[start].trim().is_empty())
            {
                continue;
            }
            // Let the window grow or shrink: line breaks may differ too.
            let mut acc = String::new();
            for (len, line) in lines[start..].iter().enumerate().take(n * 2 + 2) {
                acc.push_str(&squash(line));
                if acc == old_squashed && !acc.is_empty() {
                    return Some(Near { start, len: len + 1, score: 1.0, whitespace_only: true });
                }
                if !old_squashed.starts_with(&acc) {
                    break;
                }
            }
        }
    }
    let score = |start: usize| -> f64 {
        let total: f64 = (0..n)
            .map(|k| {
                let a = clip(lines[start + k].trim(), 200);
                let b = clip(old_lines.get(k).map_or("", |l| l.trim()), 200);
                strsim::normalized_levenshtein(&a, &b)
            })
            .sum();
        total / n as f64
    };
    let mut anchored: Vec<usize> = Vec::new();
    for (j, line) in lines.iter().enumerate() {
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        for (k, o) in old_lines.iter().enumerate() {
            if o.trim() == t && j >= k && j - k < starts {
                anchored.push(j - k);
            }
        }
    }
    anchored.sort_unstable();
    anchored.dedup();
    let candidates: Vec<usize> = if !anchored.is_empty() && anchored.len() * n <= FUZZY_BUDGET {
        anchored
    } else {
        let stride = (starts * n).div_ceil(FUZZY_BUDGET).max(1);
        (0..starts).step_by(stride).collect()
    };
    candidates
        .into_iter()
        .map(|start| Near { start, len: n, score: score(start), whitespace_only: false })
        .filter(|near| near.score >= 0.5)
        .max_by(|a, b| a.score.total_cmp(&b.score).then(b.start.cmp(&a.start)))
}

/// A unified diff of the change with 3 lines of context, at most [`DIFF_MAX_LINES`] lines.
fn unified_diff(path: &RelPath, old: &str, new: &str) -> String {
    let diff = similar::TextDiff::configure().timeout(Duration::from_secs(2)).diff_lines(old, new);
    let shown = path.display();
    let text = diff
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{shown}"), &format!("b/{shown}"))
        .to_string()
        .replace("\r\n", "\n");
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() <= DIFF_MAX_LINES {
        return text;
    }
    format!(
        "{}\n… [diff truncated, {} more lines]",
        lines[..DIFF_MAX_LINES].join("\n"),
        lines.len() - DIFF_MAX_LINES
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_tries_exact_then_crlf() {
        let (o, n, c) = find("a\r\nb\r\nc", "a\nb", "x\ny").unwrap();
        assert_eq!((o.as_ref(), n.as_ref(), c), ("a\r\nb", "x\r\ny", 1));
        let (o, _, c) = find("a\nb\na\nb", "a\nb", "z").unwrap();
        assert_eq!((o.as_ref(), c), ("a\nb", 2));
        let (o, n, _) = find("a\nb", "a\r\nb", "c\r\nd").unwrap();
        assert_eq!((o.as_ref(), n.as_ref()), ("a\nb", "c\nd"));
        assert!(find("abc", "x", "y").is_none());
    }

    #[test]
    fn match_lines_are_one_based() {
        assert_eq!(match_lines("x\ny x\n\nx", "x"), vec![1, 2, 4]);
        assert_eq!(match_lines("x\nx x", "x"), vec![1, 2, 2]);
    }

    #[test]
    fn closest_prefers_whitespace_equal_windows() {
        let body = "fn a() {\n    let x = 1;\n    let y = 2;\n}\n";
        let near = closest(body, "let x = 1;\nlet y = 2;").unwrap();
        assert_eq!((near.start, near.len, near.whitespace_only), (1, 2, true));
        let near = closest(body, "    let x = 1;\n    let y = 3;").unwrap();
        assert_eq!((near.start, near.len, near.whitespace_only), (1, 2, false));
        assert!(closest(body, "completely unrelated text that is long").is_none());
    }

    #[test]
    fn diff_is_capped() {
        let path =
            Workspace::open(std::path::Path::new("/")).unwrap().resolve("path", "f").unwrap();
        let old: String = (0..1000).map(|i| format!("{i}\n")).collect();
        let new: String = (0..1000).map(|i| format!("x{i}\n")).collect();
        let diff = unified_diff(&path, &old, &new);
        assert!(diff.starts_with("--- a/f\n+++ b/f\n"));
        assert!(diff.ends_with("more lines]"), "{}", &diff[diff.len() - 100..]);
        assert_eq!(diff.lines().count(), DIFF_MAX_LINES + 1);
    }
}
