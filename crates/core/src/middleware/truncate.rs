//! Caps the text the model sees. Over `max_bytes`, the text blocks are replaced by one block with the
//! head and the tail (cut on UTF-8 boundaries) around the marker `… [truncated, N more bytes]`, and
//! the full text is written to `.hands/outputs/<call-id>.txt` (a folder that ignores itself through
//! its own `.gitignore`) so that read_file can page through it. Images are never truncated.

use std::io::Write;

use cap_std::ambient_authority;
use cap_std::fs::Dir;

use super::{Middleware, Next, Request};
use crate::{BoxFuture, Content, Context, ToolError, ToolOutput};

/// Folder (relative to the root) where full outputs are kept.
pub const OUTPUTS_DIR: &str = ".hands/outputs";

/// The truncation middleware.
#[derive(Debug, Clone, Copy)]
pub struct Truncate {
    max_bytes: usize,
}

impl Truncate {
    /// Cap text at `max_bytes` per result.
    pub fn new(max_bytes: usize) -> Self {
        Self { max_bytes }
    }
}

impl Middleware for Truncate {
    fn handle<'a>(
        &'a self,
        req: Request<'a>,
        next: Next<'a>,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let ctx = req.ctx.clone();
            let output = next.run(req).await?;
            Ok(apply(&ctx, output, self.max_bytes))
        })
    }
}

fn apply(ctx: &Context, mut output: ToolOutput, max_bytes: usize) -> ToolOutput {
    let text_len: usize = output
        .content
        .iter()
        .map(|c| match c {
            Content::Text { text } => text.len() + 1,
            Content::Image { .. } => 0,
        })
        .sum::<usize>()
        .saturating_sub(1);
    if text_len <= max_bytes {
        return output;
    }
    let full = output.joined_text();
    let saved = match spill(ctx, &full) {
        Ok(path) => format!(
            "\nThe full output ({} bytes) is in {path}; read it with read_file and offset/limit, or \
             grep it.",
            full.len()
        ),
        Err(err) => format!("\nThe full output could not be saved ({err})."),
    };
    let truncated = cut(&full, max_bytes);
    let images = output.content.into_iter().filter(|c| matches!(c, Content::Image { .. }));
    output.content =
        std::iter::once(Content::Text { text: truncated + &saved }).chain(images).collect();
    output
}

/// Head and tail of `text` within `max_bytes`, cut on UTF-8 boundaries, around the marker.
pub fn cut(text: &str, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text.to_owned();
    }
    let head_end = floor_boundary(text, max_bytes / 2);
    let tail_start = ceil_boundary(text, text.len() - (max_bytes - max_bytes / 2));
    let omitted = tail_start - head_end;
    format!("{}… [truncated, {omitted} more bytes]{}", &text[..head_end], &text[tail_start..])
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// A call id made safe as a file name.
fn file_stem(call_id: &str) -> String {
    let stem: String = call_id
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
        .take(96)
        .collect();
    if stem.is_empty() { "call".into() } else { stem }
}

/// Open (creating) `.hands/outputs` beneath `root`, with its self-ignoring `.gitignore`. Opened
/// through a handle on the root, so that a `.hands` symlinked elsewhere is refused.
pub fn outputs_dir(root: &std::path::Path) -> std::io::Result<Dir> {
    let root = Dir::open_ambient_dir(root, ambient_authority())?;
    root.create_dir_all(OUTPUTS_DIR)?;
    let dir = root.open_dir(OUTPUTS_DIR)?;
    if !dir.exists(".gitignore") {
        dir.write(".gitignore", "*\n")?;
    }
    Ok(dir)
}

fn spill(ctx: &Context, full: &str) -> std::io::Result<String> {
    let dir = outputs_dir(ctx.root())?;
    let name = format!("{}.txt", file_stem(ctx.call_id()));
    let mut file = dir.create(&name)?;
    file.write_all(full.as_bytes())?;
    Ok(format!("{OUTPUTS_DIR}/{name}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_untouched() {
        assert_eq!(cut("hello", 10), "hello");
    }

    #[test]
    fn keeps_head_and_tail_with_exact_marker() {
        let text = "a".repeat(100) + &"b".repeat(100);
        let out = cut(&text, 20);
        assert!(out.starts_with(&"a".repeat(10)));
        assert!(out.ends_with(&"b".repeat(10)));
        assert!(out.contains("… [truncated, 180 more bytes]"), "{out}");
    }

    #[test]
    fn cuts_on_utf8_boundaries() {
        let text = "é".repeat(1000);
        for cap in [1, 2, 3, 7, 100, 1001] {
            let out = cut(&text, cap);
            // Would have panicked on a bad boundary; the omitted count adds up.
            let marker_start = out.find('…').unwrap_or(0);
            let head = &out[..marker_start];
            let omitted: usize = out
                .split("truncated, ")
                .nth(1)
                .and_then(|s| s.split(' ').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            let tail = out.rsplit("bytes]").next().unwrap_or("");
            assert_eq!(head.len() + omitted + tail.len(), text.len(), "cap {cap}");
        }
    }

    #[test]
    fn file_stem_is_safe() {
        assert_eq!(file_stem("../../etc/passwd"), "______etc_passwd");
        assert_eq!(file_stem(""), "call");
    }
}
