//! Caps the text the model sees. Over `max_bytes`, the text blocks are replaced by one block with the
//! head and the tail (cut on UTF-8 boundaries) around the marker `… [truncated, N more bytes]`, and
//! the full text is written to `.hands/outputs/<call-id>.txt` (a folder that ignores itself through
//! its own `.gitignore`) so that the model can page through it; how, the marker says in words the
//! file tools' crate gives ([`RegistryBuilder::spill_hint`](crate::RegistryBuilder::spill_hint)).
//! Images are never truncated.

use std::io::Write;

use cap_fs_ext::{DirExt as _, FollowSymlinks, OpenOptionsFollowExt as _};
use cap_std::ambient_authority;
use cap_std::fs::Dir;
use serde_json::Value;

use super::{Middleware, Next, Request};
pub use crate::schema::{FULL_OUTPUT, with_full_output};
use crate::{ChainError, Content, Context, ToolOutput};

/// Folder (relative to the root) where full outputs are kept.
pub const OUTPUTS_DIR: &str = ".hands/outputs";

/// How the marker tells the model to read a spilled output when no file tool says better.
pub const DEFAULT_SPILL_HINT: &str = "read it in parts (offset and limit)";

/// The truncation middleware.
#[derive(Debug, Clone, Copy)]
pub struct Truncate {
    max_bytes: usize,
    hint: &'static str,
}

impl Truncate {
    /// Cap text at `max_bytes` per result.
    pub fn new(max_bytes: usize) -> Self {
        Self { max_bytes, hint: DEFAULT_SPILL_HINT }
    }

    /// How the marker says to read the spilled output (`read it with … and offset/limit`).
    #[must_use]
    pub fn with_hint(mut self, hint: &'static str) -> Self {
        self.hint = hint;
        self
    }
}

impl Middleware for Truncate {
    async fn handle<'a>(
        &'a self,
        req: Request<'a>,
        next: Next<'a>,
    ) -> Result<ToolOutput, ChainError> {
        let ctx = req.ctx.clone();
        let output = next.run(req).await?;
        Ok(apply(&ctx, output, self.max_bytes, self.hint))
    }
}

fn apply(ctx: &Context, mut output: ToolOutput, max_bytes: usize, hint: &str) -> ToolOutput {
    let text_len: usize = output
        .content
        .iter()
        .map(|c| match c {
            Content::Text { text } => text.len() + 1,
            Content::Image { .. } => 0,
        })
        .sum::<usize>()
        .saturating_sub(1);
    let structured_len = output.structured.as_ref().map_or(0, json_len);
    if text_len <= max_bytes && structured_len <= max_bytes {
        return output;
    }
    let full = output.joined_text();
    let spilled = spill(ctx, &full);
    if text_len > max_bytes {
        let saved = match &spilled {
            Ok(path) => format!("\nThe full output ({} bytes) is in {path}; {hint}.", full.len()),
            Err(err) => format!("\nThe full output could not be saved ({err})."),
        };
        // The note counts against the cap too: the model never sees more than `max_bytes`.
        let truncated = cut(&full, max_bytes.saturating_sub(saved.len()));
        let images = output.content.into_iter().filter(|c| matches!(c, Content::Image { .. }));
        output.content =
            std::iter::once(Content::Text { text: truncated + &saved }).chain(images).collect();
    }
    if structured_len > max_bytes
        && let Some(structured) = &mut output.structured
    {
        let path = spilled.ok();
        let note = path.as_ref().map_or(0, |p| p.len() + FULL_OUTPUT.len() + 6);
        cap_structured(structured, max_bytes.saturating_sub(note));
        if let (Some(path), Value::Object(map)) = (path, structured) {
            map.insert(FULL_OUTPUT.into(), Value::String(path));
        }
    }
    output
}

fn json_len(value: &Value) -> usize {
    serde_json::to_vec(value).map_or(0, |v| v.len())
}

/// Cut `value` to about `max_bytes` of JSON, keeping its shape (so it still validates against its
/// schema): long strings lose their middle (with the same marker as the text), then long arrays
/// lose their last elements.
fn cap_structured(value: &mut Value, max_bytes: usize) {
    let size = json_len(value);
    if size <= max_bytes {
        return;
    }
    let mut lens = Vec::new();
    string_lens(value, &mut lens);
    let strings: usize = lens.iter().sum();
    let budget = max_bytes.saturating_sub(size.saturating_sub(strings));
    // The largest per-string cap that fits the budget ("water filling").
    lens.sort_unstable();
    let mut remaining = budget;
    let mut cap = usize::MAX;
    for (i, len) in lens.iter().enumerate() {
        let share = remaining / (lens.len() - i);
        if *len > share {
            cap = share;
            break;
        }
        remaining -= len;
    }
    if cap != usize::MAX {
        cut_strings(value, cap.max(MIN_STRING));
    }
    for _ in 0..64 {
        if json_len(value) <= max_bytes {
            break;
        }
        let Some(array) = largest_array(value) else { break };
        let keep = array.len() / 2;
        array.truncate(keep);
    }
}

/// Strings are never cut below this (the marker alone is about 30 bytes).
const MIN_STRING: usize = 64;

fn string_lens(value: &Value, out: &mut Vec<usize>) {
    match value {
        Value::String(s) => out.push(s.len()),
        Value::Array(items) => items.iter().for_each(|v| string_lens(v, out)),
        Value::Object(map) => map.values().for_each(|v| string_lens(v, out)),
        _ => {}
    }
}

fn cut_strings(value: &mut Value, cap: usize) {
    match value {
        Value::String(s) if s.len() > cap => *s = cut(s, cap),
        Value::Array(items) => items.iter_mut().for_each(|v| cut_strings(v, cap)),
        Value::Object(map) => map.values_mut().for_each(|v| cut_strings(v, cap)),
        _ => {}
    }
}

/// The array with the most JSON bytes that has more than one element.
fn largest_array(value: &mut Value) -> Option<&mut Vec<Value>> {
    fn find(value: &Value, path: &mut Vec<usize>, best: &mut (usize, Vec<usize>)) {
        let children: Vec<&Value> = match value {
            Value::Array(items) => {
                if items.len() > 1 {
                    let len = json_len(value);
                    if len > best.0 {
                        *best = (len, path.clone());
                    }
                }
                items.iter().collect()
            }
            Value::Object(map) => map.values().collect(),
            _ => return,
        };
        for (i, child) in children.into_iter().enumerate() {
            path.push(i);
            find(child, path, best);
            path.pop();
        }
    }
    let mut best = (0, Vec::new());
    find(value, &mut Vec::new(), &mut best);
    if best.0 == 0 {
        return None;
    }
    let mut at = value;
    for i in best.1 {
        at = match at {
            Value::Array(items) => items.get_mut(i)?,
            Value::Object(map) => map.values_mut().nth(i)?,
            _ => return None,
        };
    }
    match at {
        Value::Array(items) => Some(items),
        _ => None,
    }
}

/// Head and tail of `text` around the marker, cut on UTF-8 boundaries, the whole at most
/// `max_bytes` (marker included).
pub fn cut(text: &str, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text.to_owned();
    }
    // The marker's longest form: the count of omitted bytes is below text.len().
    let marker_len = format!("… [truncated, {} more bytes]", text.len()).len();
    let budget = max_bytes.saturating_sub(marker_len);
    let head_end = floor_boundary(text, budget / 2);
    let tail_start = ceil_boundary(text, text.len() - (budget - budget / 2));
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
/// through a handle on the root without following symlinks, so that a `.hands` or `outputs`
/// pointing elsewhere (outside the root, or into `.git/hooks`) is refused.
pub fn outputs_dir(root: &std::path::Path) -> std::io::Result<Dir> {
    hands_subdir(root, "outputs")
}

/// Open (creating) `.hands/<name>` beneath `root`, never through a symlink, with a `.gitignore`
/// that ignores the folder's contents. For hands' own files in a project (outputs, process logs).
pub fn hands_subdir(root: &std::path::Path, name: &str) -> std::io::Result<Dir> {
    let root = Dir::open_ambient_dir(root, ambient_authority())?;
    let hands = subdir(&root, ".hands")?;
    let dir = subdir(&hands, name)?;
    match dir.symlink_metadata(".gitignore") {
        Ok(_) => {}
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            let mut file = create_new(&dir, ".gitignore")?;
            file.write_all(b"*\n")?;
        }
        Err(err) => return Err(err),
    }
    Ok(dir)
}

/// The first line of the `.hands/.gitignore` hands writes ([`HANDS_GITIGNORE`]). Checkpoints
/// pass over only a file that is exactly what hands wrote: one changed since (by anybody, the
/// model included: it could hide `.hands/` files with a rule) is captured like any file.
pub const GITIGNORE_MARKER: &str = "# Written by hands";

/// What hands writes to `.hands/.gitignore` when it first puts a runtime file beside the
/// project's own `.hands` files and there is none: git leaves hands' runtime files alone, and
/// what a project keeps there (config.toml, project.toml, skills/, connectors/,
/// instructions.md) stays versioned. (`outputs/` and `processes/` hold a `.gitignore` of `*`.)
pub const HANDS_GITIGNORE: &str =
    "# Written by hands: its runtime files, not yours to commit. Your config.toml,
# project.toml, skills/, connectors/ and instructions.md here are not listed. hands does not
# overwrite this file.
devtools.json
.devtools.json.tmp-*
sessions.db*
";

/// Write `.hands/.gitignore` ([`HANDS_GITIGNORE`]) beneath `root` when there is none, creating
/// `.hands` if needed; never through a symlink, never over what is there (the user's own).
pub fn ensure_hands_gitignore(root: &std::path::Path) -> std::io::Result<()> {
    let root = Dir::open_ambient_dir(root, ambient_authority())?;
    let hands = subdir(&root, ".hands")?;
    match create_new(&hands, ".gitignore") {
        Ok(mut file) => file.write_all(HANDS_GITIGNORE.as_bytes()),
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(err) => Err(err),
    }
}

/// `name` inside `parent`, created if missing (0700: private to the user), never through a
/// symlink.
fn subdir(parent: &Dir, name: &str) -> std::io::Result<Dir> {
    use cap_std::fs::DirBuilderExt as _;
    let mut builder = cap_std::fs::DirBuilder::new();
    builder.mode(0o700);
    match parent.create_dir_with(name, &builder) {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(err) => return Err(err),
    }
    parent.open_dir_nofollow(name)
}

/// Create `name` in `dir`, readable by the user only (0600); fails if anything (a file, a
/// symlink) is there already.
pub fn create_new(dir: &Dir, name: &str) -> std::io::Result<cap_std::fs::File> {
    use cap_std::fs::OpenOptionsExt as _;
    let mut options = cap_std::fs::OpenOptions::new();
    options.write(true).create_new(true).mode(0o600);
    options.follow(FollowSymlinks::No);
    dir.open_with(name, &options)
}

/// Write `bytes` to a new file named after `stem` with `ext` in `dir` (`stem-2.ext`, … when taken);
/// returns the name used.
pub fn save_new(dir: &Dir, stem: &str, ext: &str, bytes: &[u8]) -> std::io::Result<String> {
    let stem = file_stem(stem);
    for n in 1..1000 {
        let name = if n == 1 { format!("{stem}.{ext}") } else { format!("{stem}-{n}.{ext}") };
        match create_new(dir, &name) {
            Ok(mut file) => {
                file.write_all(bytes)?;
                return Ok(name);
            }
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(err) => return Err(err),
        }
    }
    Err(std::io::Error::new(std::io::ErrorKind::AlreadyExists, "no free output file name"))
}

fn spill(ctx: &Context, full: &str) -> std::io::Result<String> {
    let dir = outputs_dir(ctx.root())?;
    let name = save_new(&dir, ctx.call_id(), "txt", full.as_bytes())?;
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
    fn keeps_head_and_tail_with_exact_marker_within_the_cap() {
        let text = "a".repeat(1000) + &"b".repeat(1000);
        let out = cut(&text, 100);
        let marker = "… [truncated, 1932 more bytes]";
        assert_eq!(marker.len(), 32);
        // 100 - 32 = 68 bytes of text: 34 of head, 34 of tail.
        assert_eq!(out, format!("{}{marker}{}", "a".repeat(34), "b".repeat(34)));
        assert!(out.len() <= 100);
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
    fn structured_results_are_cut_to_the_cap_keeping_their_shape() {
        let mut value = serde_json::json!({
            "output": "x".repeat(100_000),
            "exit_code": 0,
            "matches": (0..2000).map(|i| serde_json::json!({"path": "a.rs", "line": i, "text": "y".repeat(50)})).collect::<Vec<_>>(),
        });
        cap_structured(&mut value, 4096);
        assert!(json_len(&value) <= 4096, "{}", json_len(&value));
        let output = value["output"].as_str().unwrap();
        assert!(output.starts_with("xxx") && output.ends_with("xxx"), "{output}");
        assert!(output.contains("… [truncated, "), "{output}");
        assert_eq!(value["exit_code"], 0);
        assert!(!value["matches"].as_array().unwrap().is_empty());
    }

    #[test]
    fn file_stem_is_safe() {
        assert_eq!(file_stem("../../etc/passwd"), "______etc_passwd");
        assert_eq!(file_stem(""), "call");
    }
}
