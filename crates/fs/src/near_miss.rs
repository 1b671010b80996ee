//! The near-miss search behind edit_file's and apply_patch's refusals: when old_string (or a
//! hunk's context) is not in the file, the region most like it — the same lines with whitespace
//! ignored, else the best per-line similarity within a work budget — with its line numbers and the
//! first line that differs, so the model can copy the file's text exactly.

use std::borrow::Cow;
use std::collections::HashMap;

use hands_core::{CancellationToken, ToolError};

use crate::RelPath;

pub(crate) fn no_match(
    path: &RelPath,
    body: &str,
    old: &str,
    cancel: &CancellationToken,
) -> ToolError {
    let shown = path.display();
    let mut budget = Budget::new(cancel);
    let found = closest(body, old, &mut budget);
    let cut_short = budget.exhausted();
    let Some(near) = found else {
        if cut_short {
            return ToolError::model(format!(
                "`old_string` was not found in {shown}; nothing was changed. No close region was \
                 found before the search for one reached its work limit (old_string has {} lines). \
                 Read the part of the file you want to change with read_file and copy the exact \
                 text; an old_string with only the lines you change (plus one or two for \
                 uniqueness) is easier to match.",
                old.lines().count()
            ));
        }
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
    let partial = if cut_short {
        "; the search stopped at its work limit, so a closer region may exist"
    } else {
        ""
    };
    ToolError::model(format!(
        "`old_string` was not found in {shown}; nothing was changed. The closest region is lines \
         {}-{} ({}% similar{partial}):\n{region}{how} Fix old_string to match the file exactly and \
         call edit_file again.",
        near.start + 1,
        end,
        percent(near.score)
    ))
}

/// A similarity as a whole percentage, floored and at most 99: the region is never an exact
/// match (that would have been found), so it is never shown as 100%.
pub(crate) fn percent(score: f64) -> u32 {
    ((score * 100.0).floor() as u32).min(99)
}

pub(crate) fn clip(s: &str, max: usize) -> Cow<'_, str> {
    match s.char_indices().nth(max) {
        Some((cut, _)) => Cow::Owned(format!("{}…", &s[..cut])),
        None => Cow::Borrowed(s),
    }
}

/// A region of the file close to old_string: 0-based first line and line count.
#[derive(Debug, PartialEq)]
pub(crate) struct Near {
    pub(crate) start: usize,
    pub(crate) len: usize,
    pub(crate) score: f64,
    pub(crate) whitespace_only: bool,
}

/// Line pairs a strided fuzzy scan aims at, so that it spreads over the whole file.
const FUZZY_BUDGET: usize = 200_000;

/// Work the near-miss search may do, in units of about one character comparison (a Levenshtein
/// cell, a byte of a prefix check). It bounds the search whatever the sizes: a 40,000-line file and
/// a 20,000-line old_string would otherwise cost minutes of CPU. About 0.1 s optimised.
const SEARCH_BUDGET: u64 = 6_000_000;

/// Lines of a window compared at most by the fuzzy score: a longer old_string is scored on lines
/// spread evenly over it, so that one window never costs more than a small part of the budget.
const SCORED_LINES: usize = 256;

/// Old lines that occur more often than this in old_string are not used as anchors (a `}` would
/// anchor a window at almost every line).
const ANCHOR_REPEATS: usize = 8;

/// The work left for the near-miss search, and the call's cancellation.
pub(crate) struct Budget<'a> {
    left: u64,
    cancel: &'a CancellationToken,
    /// Some step was refused: the search was cut short.
    cut: bool,
}

impl<'a> Budget<'a> {
    pub(crate) fn new(cancel: &'a CancellationToken) -> Self {
        Self::with(SEARCH_BUDGET, cancel)
    }

    fn with(left: u64, cancel: &'a CancellationToken) -> Self {
        Self { left, cancel, cut: false }
    }

    /// Spend `units`; false once the budget is gone or the call was cancelled.
    fn spend(&mut self, units: usize) -> bool {
        let units = u64::try_from(units).unwrap_or(u64::MAX);
        match self.left.checked_sub(units) {
            Some(left) if !self.cancel.is_cancelled() => {
                self.left = left;
                true
            }
            _ => {
                self.left = 0;
                self.cut = true;
                false
            }
        }
    }

    /// Run `step` with at most half of what is left, so that later steps still get their turn.
    fn half<T>(&mut self, step: impl FnOnce(&mut Budget<'a>) -> T) -> T {
        let mut part = Budget::with(self.left / 2, self.cancel);
        let out = step(&mut part);
        self.left -= self.left / 2 - part.left;
        self.cut |= part.cut;
        out
    }

    /// True when the search was cut short (out of budget or cancelled).
    pub(crate) fn exhausted(&self) -> bool {
        self.cut
    }
}

/// The region most like `old`: first a window with the same lines when all whitespace is ignored,
/// then the window with the best mean per-line similarity (normalised Levenshtein, on at most
/// [`SCORED_LINES`] lines spread over the window), looking first at windows anchored on a line that
/// old_string has verbatim, else a strided scan. Everything is paid from `budget` (the whitespace
/// step gets at most half); when it runs out the best window scored so far is returned (or none).
pub(crate) fn closest(body: &str, old: &str, budget: &mut Budget<'_>) -> Option<Near> {
    let lines: Vec<&str> = body.split('\n').map(|l| l.trim_end_matches('\r')).collect();
    let old_lines: Vec<&str> =
        old.trim_end_matches(['\n', '\r']).split('\n').map(|l| l.trim_end_matches('\r')).collect();
    let n = old_lines.len().min(lines.len()).max(1);
    let starts = lines.len().saturating_sub(n) + 1;
    let equal = budget.half(|part| whitespace_equal(&lines, &old_lines, n, starts, part));
    if equal.is_some() || budget.cancel.is_cancelled() {
        return equal;
    }
    fuzzy(&lines, &old_lines, n, starts, budget)
}

/// A window whose lines, with all whitespace removed, concatenate to old_string's (line breaks may
/// differ too, so the window may be up to `2n + 2` lines).
fn whitespace_equal(
    lines: &[&str],
    old_lines: &[&str],
    n: usize,
    starts: usize,
    budget: &mut Budget<'_>,
) -> Option<Near> {
    let squash = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    let old_squashed = squash(&old_lines.concat());
    if old_squashed.is_empty() || !budget.spend(lines.iter().map(|l| l.len() + 1).sum()) {
        return None;
    }
    let squashed: Vec<String> = lines.iter().map(|l| squash(l)).collect();
    let first_blank = old_lines[0].trim().is_empty();
    for start in 0..starts {
        if first_blank != lines[start].trim().is_empty() {
            continue;
        }
        // How much of old_squashed the window has matched so far.
        let mut pos = 0;
        for (len, line) in squashed[start..].iter().enumerate().take(n * 2 + 2) {
            if !budget.spend(line.len() + 1) {
                return None;
            }
            if !old_squashed[pos..].starts_with(line.as_str()) {
                break;
            }
            pos += line.len();
            if pos == old_squashed.len() {
                return Some(Near { start, len: len + 1, score: 1.0, whitespace_only: true });
            }
        }
    }
    None
}

/// The window with the best mean per-line similarity, at least 0.5.
fn fuzzy(
    lines: &[&str],
    old_lines: &[&str],
    n: usize,
    starts: usize,
    budget: &mut Budget<'_>,
) -> Option<Near> {
    let mut by_text: HashMap<&str, Vec<usize>> = HashMap::new();
    for (k, line) in old_lines.iter().enumerate() {
        let t = line.trim();
        if !t.is_empty() {
            by_text.entry(t).or_default().push(k);
        }
    }
    by_text.retain(|_, ks| ks.len() <= ANCHOR_REPEATS);
    let mut anchored = vec![false; starts];
    let mut count = 0usize;
    'scan: for (j, line) in lines.iter().enumerate() {
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        if !budget.spend(t.len()) {
            break;
        }
        for &k in by_text.get(t).map_or(&[][..], Vec::as_slice) {
            if !budget.spend(1) {
                break 'scan;
            }
            if j >= k && j - k < starts && !anchored[j - k] {
                anchored[j - k] = true;
                count += 1;
            }
        }
    }
    // The lines of a window that are scored: all, or an even spread of SCORED_LINES.
    let scored: Vec<usize> = (0..n).step_by(n.div_ceil(SCORED_LINES).max(1)).collect();
    let m = scored.len();
    let candidates: Vec<usize> = if count > 0 && count.saturating_mul(m) <= FUZZY_BUDGET {
        (0..starts).filter(|&s| anchored[s]).collect()
    } else {
        let stride = starts.saturating_mul(m).div_ceil(FUZZY_BUDGET).max(1);
        (0..starts).step_by(stride).collect()
    };
    let mut best: Option<Near> = None;
    'windows: for start in candidates {
        let floor = best.as_ref().map_or(0.5, |b| b.score);
        let mut total = 0.0;
        for (done, &k) in scored.iter().enumerate() {
            // Even if every remaining line matched, this window could not win: skip the rest.
            if (total + (m - done) as f64) / (m as f64) < floor {
                continue 'windows;
            }
            let a = clip(lines[start + k].trim(), 200);
            let b = clip(old_lines.get(k).map_or("", |l| l.trim()), 200);
            let cost = if a == b { a.len() } else { a.len().max(1) * b.len().max(1) };
            if !budget.spend(cost) {
                break 'windows;
            }
            total += if a == b { 1.0 } else { strsim::normalized_levenshtein(&a, &b) };
        }
        let score = total / m as f64;
        if score >= floor && best.as_ref().is_none_or(|b| score > b.score) {
            best = Some(Near { start, len: n, score, whitespace_only: false });
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn near(body: &str, old: &str) -> Option<Near> {
        closest(body, old, &mut Budget::new(&CancellationToken::new()))
    }

    #[test]
    fn closest_prefers_whitespace_equal_windows() {
        let body = "fn a() {\n    let x = 1;\n    let y = 2;\n}\n";
        let found = near(body, "let x = 1;\nlet y = 2;").unwrap();
        assert_eq!((found.start, found.len, found.whitespace_only), (1, 2, true));
        let found = near(body, "    let x = 1;\n    let y = 3;").unwrap();
        assert_eq!((found.start, found.len, found.whitespace_only), (1, 2, false));
        assert!(near(body, "completely unrelated text that is long").is_none());
        // Line breaks may differ too.
        let found = near(body, "let x = 1; let y = 2;").unwrap();
        assert_eq!((found.start, found.len, found.whitespace_only), (1, 2, true));
    }

    /// Review finding 6: a similarity of 0.9999 was shown as "100%"; a near miss is never exact.
    #[test]
    fn review_finding_6_similarity_is_floored_below_100() {
        assert_eq!(percent(0.9999), 99);
        assert_eq!(percent(1.0), 99);
        assert_eq!(percent(0.876), 87);
        assert_eq!(percent(0.5), 50);
    }

    /// Review finding 6: the search stops when the call is cancelled.
    #[test]
    fn review_finding_6_a_cancelled_search_stops() {
        let cancel = CancellationToken::new();
        cancel.cancel();
        let mut budget = Budget::new(&cancel);
        let body = "fn a() {\n    let x = 1;\n    let y = 2;\n}\n";
        assert!(closest(body, "    let x = 1;\n    let y = 3;", &mut budget).is_none());
        assert!(budget.exhausted());
    }
}
