//! write_file: create or replace a whole file.
//!
//! Flow: resolve the path, refuse protected targets (atomic::check_writable: `.git`, symlinks), cap
//! the content, apply the stale-write guard against the session's ledger (not for one-shot calls),
//! then write atomically (atomic.rs) and record what was written in the ledger.

use std::borrow::Cow;
use std::io::{self, Read};

use hands_core::approval::Review;
use hands_core::{Annotations, Context, Tool, ToolError, ToolOutput};
use hands_core::{Family, Label, Policy};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ledger::{Seen, content_hash};
use crate::placeholders;
use crate::read_file::human_size;
use crate::{FsConfig, Ledger, RelPath, Workspace, atomic};

/// Arguments of write_file.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteFileArgs {
    /// Relative to the project root.
    pub path: String,
    /// The whole new content.
    pub content: String,
}

/// The structured result of write_file: everything its text says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct WriteResult {
    /// `created` (the file was new) or `updated`.
    pub action: String,
    /// Path relative to the project root.
    pub path: String,
    /// Lines written.
    pub lines: usize,
    /// Bytes written.
    pub bytes: usize,
}

/// The write_file tool.
#[derive(Debug, Clone)]
pub struct WriteFile {
    config: FsConfig,
}

impl WriteFile {
    /// With `config`.
    pub fn new(config: FsConfig) -> Self {
        Self { config }
    }
}

impl Tool for WriteFile {
    type Args = WriteFileArgs;

    fn name(&self) -> &'static str {
        "write_file"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("write_file.md"))
    }

    fn annotations(&self) -> Annotations {
        Annotations { read_only: false, destructive: true, idempotent: true, open_world: false }
    }

    fn policy(&self) -> Policy {
        Policy::from_annotations(self.annotations())
            .alias("write")
            .label(Label::Key { key: "path" })
            .family(Family::Files)
            .timeout_ms(30_000)
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        Some(hands_core::output_schema_for::<WriteResult>())
    }

    /// A new file's content, or the diff against the file there now; a path the write would
    /// refuse is refused before anybody is asked.
    async fn review(&self, ctx: &Context, args: &Self::Args) -> Result<Review, ToolError> {
        let (ctx, config, args) = (ctx.clone(), self.config.clone(), args.clone());
        tokio::task::spawn_blocking(move || review(&ctx, &config, &args))
            .await
            .map_err(|err| ToolError::Fatal(format!("write_file review task failed: {err}")))?
    }

    async fn call(&self, ctx: Context, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let config = self.config.clone();
        let inner = ctx.clone();
        let output = tokio::task::spawn_blocking(move || write(&inner, &config, &args))
            .await
            .map_err(|err| ToolError::Fatal(format!("write_file task failed: {err}")))??;
        Ok(crate::changed::announce(&ctx, output).await)
    }
}

fn write(ctx: &Context, config: &FsConfig, args: &WriteFileArgs) -> Result<ToolOutput, ToolError> {
    let ws = Workspace::of(ctx)?;
    let path = ws.resolve("path", &args.path)?;
    atomic::check_writable(&ws, &path, config, "write")?;
    let content = placeholders::resolve(ws.root(), &path, "content", &args.content, false)?;
    let bytes = content.as_bytes();
    if bytes.len() > config.write_max_bytes {
        return Err(ToolError::model(format!(
            "`content` is {}, over the {} write_file accepts. Write a smaller file, or generate it \
             with a command through bash.",
            human_size(bytes.len() as u64),
            human_size(config.write_max_bytes as u64)
        )));
    }
    let existing = match ws.dir().symlink_metadata(path.for_open()) {
        Ok(meta) => Some(meta),
        Err(err) if err.kind() == io::ErrorKind::NotFound => None,
        // A missing or file-shaped parent: create_dir_all below reports it precisely.
        Err(err) if err.kind() == io::ErrorKind::NotADirectory => None,
        Err(err) => return Err(ws.io_error("written", &path, &err)),
    };
    let ledger = ctx.session().extension::<Ledger>();
    if let Some(meta) = &existing
        && config.stale_write_guard
        && !ctx.session().is_one_shot()
    {
        guard(&ws, &path, &ledger, meta)?;
    }
    let meta = atomic::write(&ws, &path, bytes, ctx.cancel_token())
        .map_err(|err| atomic::write_error(&ws, "write_file", &path, &err))?;
    ledger.record_content(&path, Seen::new(&meta, Some(content_hash(bytes))), bytes);
    let action = if existing.is_some() { "updated" } else { "created" };
    let lines = line_count(&content);
    let verb = if existing.is_some() { "Updated" } else { "Created" };
    Ok(ToolOutput::text(format!(
        "{verb} {} ({lines} line{}, {} byte{})",
        path.display(),
        if lines == 1 { "" } else { "s" },
        bytes.len(),
        if bytes.len() == 1 { "" } else { "s" }
    ))
    .with_structured(structured(&WriteResult {
        action: action.to_owned(),
        path: path.display(),
        lines,
        bytes: bytes.len(),
    })?))
}

/// What the approval of a write shows: the content of a new file, or the diff against the text
/// there now (a binary or unreadable file there: its size is said instead). Placeholders are shown
/// as the model wrote them, never expanded.
fn review(ctx: &Context, config: &FsConfig, args: &WriteFileArgs) -> Result<Review, ToolError> {
    let ws = Workspace::of(ctx)?;
    let path = ws.resolve("path", &args.path)?;
    atomic::check_writable(&ws, &path, config, "write")?;
    let lines = line_count(&args.content);
    let plural = if lines == 1 { "" } else { "s" };
    let Ok(mut file) = ws.open_read(&path) else {
        return Ok(Review::details(format!("new file, {lines} line{plural}:\n{}", args.content)));
    };
    let mut bytes = Vec::new();
    let read = file.by_ref().take(MAX_SHOWN_BEFORE).read_to_end(&mut bytes).unwrap_or(0);
    Ok(Review::details(match String::from_utf8(bytes) {
        Ok(old) if (read as u64) < MAX_SHOWN_BEFORE => {
            crate::diff::unified_diff(&path, &old, &args.content)
        }
        _ => format!(
            "replaces {} (binary or over {}) with {lines} line{plural}:\n{}",
            path.display(),
            human_size(MAX_SHOWN_BEFORE),
            args.content
        ),
    }))
}

/// The largest existing file whose diff an approval shows.
const MAX_SHOWN_BEFORE: u64 = 4 << 20;

/// The stale-write guard: the session must have read (or written) the file, and it must not have
/// changed on disk since.
fn guard(
    ws: &Workspace,
    path: &RelPath,
    ledger: &Ledger,
    meta: &cap_std::fs::Metadata,
) -> Result<(), ToolError> {
    let shown = path.display();
    let Some(seen) = ledger.get(path) else {
        return Err(ToolError::model(format!(
            "{shown} already exists and this session has not read it. Read it first with read_file \
             (then write the complete new content), or use edit_file to change part of it."
        )));
    };
    let now = Seen::new(meta, None);
    let current_hash = || {
        let mut bytes = Vec::new();
        let mut file = ws.open_read(path).ok()?;
        file.read_to_end(&mut bytes).ok()?;
        Some(content_hash(&bytes))
    };
    if seen.is_stale(&now, current_hash) {
        return Err(ToolError::model(format!(
            "{shown} changed on disk since this session last read or wrote it (someone else edited \
             it). Read it again with read_file and redo your change on the current content."
        )));
    }
    Ok(())
}

/// Lines as an editor counts them: a final line without `\n` counts, a trailing `\n` does not add one.
pub(crate) fn line_count(text: &str) -> usize {
    text.lines().count()
}

/// `value` as JSON, for a structured result.
pub(crate) fn structured<T: Serialize>(value: &T) -> Result<serde_json::Value, ToolError> {
    serde_json::to_value(value)
        .map_err(|err| ToolError::Fatal(format!("a result did not serialize: {err}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_counted_like_an_editor() {
        assert_eq!(line_count(""), 0);
        assert_eq!(line_count("a"), 1);
        assert_eq!(line_count("a\n"), 1);
        assert_eq!(line_count("a\nb"), 2);
        assert_eq!(line_count("a\r\nb\r\n"), 2);
    }

    /// Review finding 2: with the call's token cancelled (timeout or abort), nothing is written and
    /// the error says so.
    #[test]
    fn review_finding_2_a_cancelled_call_writes_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("old.txt"), "old").unwrap();
        let session = hands_core::Session::one_shot(tmp.path());
        let token = hands_core::CancellationToken::new();
        token.cancel();
        let ctx = Context::new(&session, "c1", None).with_cancel(token);
        let config = FsConfig::default();
        for path in ["new.txt", "old.txt"] {
            let args = WriteFileArgs { path: path.into(), content: "x".repeat(3 << 20) };
            let err = write(&ctx, &config, &args).unwrap_err().to_string();
            assert!(err.contains("nothing was written"), "{err}");
        }
        assert!(!tmp.path().join("new.txt").exists());
        assert_eq!(std::fs::read(tmp.path().join("old.txt")).unwrap(), b"old");
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);
    }

    #[tokio::test]
    async fn guard_needs_a_read_and_no_change() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("a.txt"), "old").unwrap();
        let session = hands_core::Session::new("s", tmp.path());
        let ctx = Context::new(&session, "c1", None);
        let tool = WriteFile::new(FsConfig::default());
        let args = || WriteFileArgs { path: "a.txt".into(), content: "new".into() };
        let err = tool.call(ctx.clone(), args()).await.unwrap_err().to_string();
        assert!(err.contains("has not read it"), "{err}");
        assert_eq!(std::fs::read_to_string(tmp.path().join("a.txt")).unwrap(), "old");
        let ws = Workspace::open(tmp.path()).unwrap();
        let path = ws.resolve("path", "a.txt").unwrap();
        let meta = ws.dir().metadata("a.txt").unwrap();
        session.extension::<Ledger>().record(&path, Seen::new(&meta, Some(content_hash(b"old"))));
        let out = tool.call(ctx, args()).await.unwrap();
        assert_eq!(out.joined_text(), "Updated a.txt (1 line, 3 bytes)");
        assert_eq!(out.structured.unwrap()["action"], "updated");
    }
}
