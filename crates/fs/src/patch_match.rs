//! Where apply_patch's hunks go in a file, and the file's new text.
//!
//! A hunk's context and removed lines are looked for line by line, at four levels, each tried
//! only when the one before found nothing: exact; ignoring trailing whitespace; ignoring leading
//! and trailing whitespace; and that plus Unicode punctuation folded to ASCII (curly quotes,
//! dashes, non-breaking and other wide spaces). Never fuzzier. A hunk without an `@@` anchor must
//! match exactly one place (from the end of the previous hunk on); with anchors, each anchor is
//! found in turn (ignoring surrounding whitespace) and the first match after the last one is taken.
//! Context lines keep the file's own text and line ending; added lines get the file's line ending.

use std::borrow::Cow;

use hands_core::CancellationToken;
use schemars::JsonSchema;
use serde::Serialize;

use crate::near_miss::{Budget, clip, closest, percent};
use crate::patch_format::{Hunk, Line};

/// How loosely a hunk's lines had to be compared to be found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// As written.
    Exact,
    /// Ignoring whitespace at the end of lines.
    TrailingWhitespace,
    /// Ignoring whitespace at both ends of lines.
    Whitespace,
    /// Ignoring whitespace at both ends, and with curly quotes, dashes and special spaces read as
    /// their ASCII forms.
    Punctuation,
}

const LEVELS: [Level; 4] =
    [Level::Exact, Level::TrailingWhitespace, Level::Whitespace, Level::Punctuation];

impl Level {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Level::Exact => "exact",
            Level::TrailingWhitespace => "trailing_whitespace",
            Level::Whitespace => "whitespace",
            Level::Punctuation => "punctuation",
        }
    }

    fn norm(self, s: &str) -> Cow<'_, str> {
        match self {
            Level::Exact => Cow::Borrowed(s),
            Level::TrailingWhitespace => Cow::Borrowed(s.trim_end()),
            Level::Whitespace => Cow::Borrowed(s.trim()),
            Level::Punctuation => Cow::Owned(fold_punctuation(s).trim().to_owned()),
        }
    }
}

/// `s` with typographic punctuation as ASCII.
fn fold_punctuation(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' => '\'',
            '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' => '"',
            '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
            '\u{00A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
            c => c,
        })
        .collect()
}

/// Where one hunk went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct HunkMatch {
    /// 1-based line of the file (as it was) where the hunk's old lines start; for a hunk that only
    /// adds lines, the line they were put before.
    pub line: usize,
    /// How loosely its lines were compared.
    pub level: Level,
}

/// A file's new text with where each hunk went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Applied {
    pub(crate) new_body: String,
    pub(crate) hunks: Vec<HunkMatch>,
    pub(crate) added: usize,
    pub(crate) removed: usize,
}

/// Why a hunk could not be placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Miss {
    /// Anchor `anchor` of hunk `hunk` was not found after line `from` (0-based).
    Anchor { hunk: usize, anchor: String, from: usize },
    /// The old lines of hunk `hunk` were not found from line `from` on.
    Body { hunk: usize, from: usize },
    /// The old lines of hunk `hunk` match at several `starts` (0-based) at `level`.
    Ambiguous { hunk: usize, starts: Vec<usize>, level: Level, anchored: bool },
}

/// A file's body split into lines and their endings (`\n`, `\r\n`, or none for a last line).
pub(crate) struct Lines<'a> {
    text: Vec<&'a str>,
    eol: Vec<&'a str>,
    /// The line ending added lines get: the one most of the file's lines have.
    default_eol: &'static str,
    /// The body ends without a line break (and is not empty).
    no_final_newline: bool,
}

impl<'a> Lines<'a> {
    pub(crate) fn new(body: &'a str) -> Self {
        let (mut text, mut eol) = (Vec::new(), Vec::new());
        for piece in body.split_inclusive('\n') {
            let (t, e) = if let Some(t) = piece.strip_suffix("\r\n") {
                (t, "\r\n")
            } else if let Some(t) = piece.strip_suffix('\n') {
                (t, "\n")
            } else {
                (piece, "")
            };
            text.push(t);
            eol.push(e);
        }
        let crlf = eol.iter().filter(|e| **e == "\r\n").count();
        let lf = eol.iter().filter(|e| **e == "\n").count();
        let default_eol = if crlf > lf { "\r\n" } else { "\n" };
        let no_final_newline = eol.last().is_some_and(|e| e.is_empty());
        Self { text, eol, default_eol, no_final_newline }
    }

    fn len(&self) -> usize {
        self.text.len()
    }

    /// True when `pattern` matches the lines from `start` at `level`.
    fn matches_at(&self, pattern: &[&str], start: usize, level: Level) -> bool {
        pattern.iter().enumerate().all(|(k, p)| level.norm(self.text[start + k]) == level.norm(p))
    }
}

/// `body` with `hunks` applied. `unique` demands that every hunk's old lines match exactly one
/// place after its anchors (for a file changed since the session read it).
pub(crate) fn apply(body: &str, hunks: &[Hunk], unique: bool) -> Result<Applied, Miss> {
    let lines = Lines::new(body);
    let mut pos = 0;
    let mut placed = Vec::new();
    let mut matches = Vec::new();
    for (index, hunk) in hunks.iter().enumerate() {
        let found = place(&lines, hunk, index, pos, unique)?;
        pos = found.start + found.old_len;
        matches.push(HunkMatch { line: found.start + 1, level: found.level });
        placed.push(found);
    }
    let (added, removed) = hunks.iter().flat_map(|h| &h.lines).fold((0, 0), |(a, r), l| match l {
        Line::Add(_) => (a + 1, r),
        Line::Remove(_) => (a, r + 1),
        Line::Context(_) => (a, r),
    });
    Ok(Applied { new_body: assemble(&lines, hunks, &placed), hunks: matches, added, removed })
}

/// Where a hunk goes: its first old line, how many old lines it covers, and at what level.
struct Placed {
    start: usize,
    old_len: usize,
    level: Level,
    /// A trailing empty context line was dropped to match at the end of the file.
    dropped_blank: bool,
}

fn place(
    lines: &Lines<'_>,
    hunk: &Hunk,
    index: usize,
    pos: usize,
    unique: bool,
) -> Result<Placed, Miss> {
    let mut from = pos;
    let mut level = Level::Exact;
    for anchor in &hunk.anchors {
        let found = [Level::Whitespace, Level::Punctuation].into_iter().find_map(|lv| {
            (from..lines.len())
                .find(|&i| lv.norm(lines.text[i]) == lv.norm(anchor))
                .map(|i| (i, lv))
        });
        let Some((i, lv)) = found else {
            return Err(Miss::Anchor { hunk: index, anchor: anchor.clone(), from });
        };
        if lv == Level::Punctuation {
            level = Level::Punctuation;
        }
        from = i + 1;
    }
    let old = hunk.old_lines();
    if old.is_empty() {
        let start = if hunk.anchors.is_empty() || hunk.eof { lines.len() } else { from };
        return Ok(Placed { start, old_len: 0, level, dropped_blank: false });
    }
    let first_wins = !hunk.anchors.is_empty() && !unique;
    let anchored = !hunk.anchors.is_empty();
    match seek(lines, &old, from, hunk.eof, first_wins) {
        Seek::One(start, lv) => {
            Ok(Placed { start, old_len: old.len(), level: level.max(lv), dropped_blank: false })
        }
        Seek::Many(starts, lv) => Err(Miss::Ambiguous { hunk: index, starts, level: lv, anchored }),
        Seek::None => {
            // The file's final line break read as an empty context line: match at the end
            // without it.
            if matches!(hunk.lines.last(), Some(Line::Context(t)) if t.is_empty())
                && let Seek::One(start, lv) = seek(lines, &old[..old.len() - 1], from, true, false)
            {
                let old_len = old.len() - 1;
                return Ok(Placed { start, old_len, level: level.max(lv), dropped_blank: true });
            }
            Err(Miss::Body { hunk: index, from })
        }
    }
}

enum Seek {
    One(usize, Level),
    Many(Vec<usize>, Level),
    None,
}

fn seek(lines: &Lines<'_>, pattern: &[&str], from: usize, eof: bool, first_wins: bool) -> Seek {
    let n = pattern.len();
    if lines.len() < n {
        return Seek::None;
    }
    let last = lines.len() - n;
    let starts: Vec<usize> = if eof {
        if last >= from { vec![last] } else { Vec::new() }
    } else {
        (from..=last).collect()
    };
    for level in LEVELS {
        let found: Vec<usize> =
            starts.iter().copied().filter(|&s| lines.matches_at(pattern, s, level)).collect();
        match found.len() {
            0 => continue,
            1 => return Seek::One(found[0], level),
            _ if first_wins => return Seek::One(found[0], level),
            _ => return Seek::Many(found, level),
        }
    }
    Seek::None
}

/// The new body: the file's lines with each placed hunk's old lines replaced by its lines
/// (context lines as the file has them).
fn assemble(lines: &Lines<'_>, hunks: &[Hunk], placed: &[Placed]) -> String {
    let mut out: Vec<(&str, &str)> = Vec::with_capacity(lines.len() + 16);
    let mut pos = 0;
    for (hunk, at) in hunks.iter().zip(placed) {
        for i in pos..at.start {
            out.push((lines.text[i], lines.eol[i]));
        }
        let mut k = at.start;
        let count = hunk.lines.len() - usize::from(at.dropped_blank);
        for line in &hunk.lines[..count] {
            match line {
                Line::Context(_) => {
                    out.push((lines.text[k], lines.eol[k]));
                    k += 1;
                }
                Line::Remove(_) => k += 1,
                Line::Add(text) => out.push((text, "")),
            }
        }
        pos = at.start + at.old_len;
    }
    for i in pos..lines.len() {
        out.push((lines.text[i], lines.eol[i]));
    }
    let mut body = String::with_capacity(out.iter().map(|(t, _)| t.len() + 2).sum());
    let last = out.len().saturating_sub(1);
    for (i, (text, eol)) in out.iter().enumerate() {
        body.push_str(text);
        if i == last && lines.no_final_newline {
            continue;
        }
        body.push_str(if eol.is_empty() { lines.default_eol } else { eol });
    }
    body
}

/// The model-facing account of `miss` in `shown` (hunks `of`), with the nearest region and the
/// first line that diverges; ends with what to send next.
pub(crate) fn describe(
    miss: &Miss,
    shown: &str,
    of: usize,
    body: &str,
    hunks: &[Hunk],
    cancel: &CancellationToken,
) -> String {
    let lines = Lines::new(body);
    let hunk_no =
        |h: usize| format!("{shown}, hunk {} of {of} (patch line {})", h + 1, hunks[h].at);
    match miss {
        Miss::Anchor { hunk, anchor, from } => {
            let near = nearest(body, anchor, cancel).map_or_else(
                || " Nothing like it is in the file.".to_owned(),
                |(region, _)| format!(" The most similar line:\n{region}"),
            );
            format!(
                "{}: the anchor `@@ {}` was not found{}.{near}\nNext: send the patch again with \
                 the anchor copied from a line of the file (a function or class header), or \
                 without it.",
                hunk_no(*hunk),
                clip(anchor, 200),
                if *from > 0 { format!(" after line {from}") } else { String::new() }
            )
        }
        Miss::Ambiguous { hunk, starts, level, anchored } => {
            let at: Vec<String> = starts.iter().take(20).map(|s| (s + 1).to_string()).collect();
            let why = if *anchored {
                "the file changed since this session read it, so every hunk must match one place"
            } else {
                "the hunk has no `@@` anchor to choose between them"
            };
            format!(
                "{}: its context and removed lines match {} places (lines {}{}, compared {}); {why}.\n\
                 Next: add an `@@ <line>` anchor naming the function or class the change is in \
                 (the line as the file has it), or more context lines, so that it matches one place.",
                hunk_no(*hunk),
                starts.len(),
                at.join(", "),
                if starts.len() > 20 { ", …" } else { "" },
                level.as_str().replace('_', " ")
            )
        }
        Miss::Body { hunk, from } => {
            let old = hunks[*hunk].old_lines();
            let where_ = if *from > 0 {
                format!(" after line {from} (hunks apply in file order)")
            } else {
                String::new()
            };
            let found = nearest(body, &old.join("\n"), cancel);
            let Some((region, near_start)) = found else {
                return format!(
                    "{}: its context and removed lines were not found{where_}, and nothing \
                     similar either.\nNext: read {shown} with read_file and send the patch again \
                     with the lines copied exactly.",
                    hunk_no(*hunk)
                );
            };
            let diverge = diverging(&lines, &old, near_start.0).map_or_else(
                || "Those lines match when compared loosely, but not in order or count.".to_owned(),
                |(k, file_line)| {
                    let at = near_start.0 + k;
                    format!(
                        "The first line that diverges is the hunk's old line {}: the patch has \
                         `{}` where line {} of the file has `{}`.",
                        k + 1,
                        clip(old[k], 200),
                        at + 1,
                        clip(file_line, 200)
                    )
                },
            );
            format!(
                "{}: its context and removed lines were not found{where_}. The nearest region is \
                 lines {}-{} ({}% similar):\n{region}{diverge}\nNext: send the patch again with \
                 that line as the file has it (every ` ` and `-` line must be copied exactly).",
                hunk_no(*hunk),
                near_start.0 + 1,
                near_start.0 + near_start.1,
                percent(near_start.2)
            )
        }
    }
}

/// The region of `body` most like `old`, numbered, with its start, length and similarity.
fn nearest(
    body: &str,
    old: &str,
    cancel: &CancellationToken,
) -> Option<(String, (usize, usize, f64))> {
    let mut budget = Budget::new(cancel);
    let near = closest(body, old, &mut budget)?;
    let lines: Vec<&str> = body.split('\n').collect();
    let mut region = String::new();
    let end = (near.start + near.len).min(lines.len());
    for (i, line) in lines[near.start..end].iter().enumerate().take(30) {
        region.push_str(&format!(
            "{:>6}\t{}\n",
            near.start + i + 1,
            clip(line.trim_end_matches('\r'), 300)
        ));
    }
    Some((region, (near.start, near.len, near.score)))
}

/// The first old line (index) that differs from the file's line at `start + k`, even at the
/// loosest level, with that file line.
fn diverging<'a>(lines: &Lines<'a>, old: &[&str], start: usize) -> Option<(usize, &'a str)> {
    old.iter().enumerate().find_map(|(k, o)| {
        let file = lines.text.get(start + k).copied().unwrap_or("");
        (Level::Punctuation.norm(file) != Level::Punctuation.norm(o)).then_some((k, file))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch_format::parse;

    fn hunks(patch: &str) -> Vec<Hunk> {
        let text = format!("*** Begin Patch\n*** Update File: f\n{patch}\n*** End Patch");
        match parse(&text).unwrap().ops.remove(0) {
            crate::patch_format::Op::Update { hunks, .. } => hunks,
            _ => unreachable!(),
        }
    }

    #[test]
    fn levels_are_tried_in_order_and_reported() {
        let body = "a  \n  b\n“c” – d\n";
        let cases = [
            ("@@\n a  \n-  b\n+B", Level::Exact),
            ("@@\n a\n-  b\n+B", Level::TrailingWhitespace),
            ("@@\n a\n-b\n+B", Level::Whitespace),
            ("@@\n-\"c\" - d\n+x", Level::Punctuation),
        ];
        for (patch, level) in cases {
            let applied = apply(body, &hunks(patch), false).unwrap();
            assert_eq!(applied.hunks[0].level, level, "{patch}");
        }
        // Context lines keep the file's text; only removed lines go.
        let applied = apply(body, &hunks("@@\n a\n-b\n+B"), false).unwrap();
        assert_eq!(applied.new_body, "a  \nB\n“c” – d\n");
    }

    #[test]
    fn crlf_and_missing_final_newline_are_kept() {
        let applied = apply("a\r\nb\r\nc", &hunks("@@\n a\n-b\n+x\n+y"), false).unwrap();
        assert_eq!(applied.new_body, "a\r\nx\r\ny\r\nc");
        let applied = apply("a\nb", &hunks("@@\n b\n+c\n*** End of File"), false).unwrap();
        assert_eq!(applied.new_body, "a\nb\nc");
        // A trailing blank context line stands for the final line break.
        let applied = apply("a\nb\n", &hunks("@@\n-b\n+c\n "), false).unwrap();
        assert_eq!(applied.new_body, "a\nc\n");
    }

    #[test]
    fn ambiguity_anchors_and_insertions() {
        let body = "fn a() {\n    x();\n}\nfn b() {\n    x();\n}\n";
        let miss = apply(body, &hunks("@@\n-    x();\n+    y();"), false).unwrap_err();
        assert!(
            matches!(miss, Miss::Ambiguous { ref starts, .. } if starts == &[1, 4]),
            "{miss:?}"
        );
        let applied = apply(body, &hunks("@@ fn b() {\n-    x();\n+    y();"), false).unwrap();
        assert_eq!(applied.new_body, "fn a() {\n    x();\n}\nfn b() {\n    y();\n}\n");
        assert_eq!(applied.hunks[0], HunkMatch { line: 5, level: Level::Exact });
        // With `unique` (a changed file) the anchor narrows, but the rest must still be unique.
        let applied = apply(body, &hunks("@@ fn a() {\n-    x();\n+    y();"), true);
        assert!(matches!(applied, Err(Miss::Ambiguous { anchored: true, .. })), "{applied:?}");
        // Pure insertions: after the anchor, or at the end.
        let applied = apply(body, &hunks("@@ fn b() {\n+    // b"), false).unwrap();
        assert!(applied.new_body.contains("fn b() {\n    // b\n    x();"), "{}", applied.new_body);
        let applied = apply(body, &hunks("@@\n+// end"), false).unwrap();
        assert!(applied.new_body.ends_with("}\n// end\n"));
        // Hunks apply in order: a second hunk is looked for after the first.
        let applied = apply(
            body,
            &hunks("@@ fn a() {\n-    x();\n+    y();\n@@\n-    x();\n+    z();"),
            false,
        )
        .unwrap();
        assert_eq!(applied.new_body, "fn a() {\n    y();\n}\nfn b() {\n    z();\n}\n");
    }

    #[test]
    fn a_miss_names_the_diverging_line() {
        let body = "one\ntwo\nthree\nfour\n";
        let hs = hunks("@@\n two\n-thre\n+3");
        let miss = apply(body, &hs, false).unwrap_err();
        let text = describe(&miss, "f", 1, body, &hs, &CancellationToken::new());
        assert!(text.contains("hunk 1 of 1 (patch line 3)"), "{text}");
        assert!(
            text.contains("the patch has `thre` where line 3 of the file has `three`"),
            "{text}"
        );
        assert!(text.contains("     2\ttwo\n     3\tthree\n"), "{text}");
        assert!(text.contains("Next: "), "{text}");
    }
}
