//! The unified diff that edit_file returns and that a write's approval shows.

use std::time::Duration;

use crate::RelPath;

/// Diff lines returned at most.
pub(crate) const DIFF_MAX_LINES: usize = 300;

/// A unified diff of the change with 3 lines of context, at most [`DIFF_MAX_LINES`] lines.
pub(crate) fn unified_diff(path: &RelPath, old: &str, new: &str) -> String {
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
