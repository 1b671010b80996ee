//! read_runtime_errors: what is new in the collector since the session's cursor (or `since`),
//! with stack frames mapped through source maps first, grouped by page load.

use std::borrow::Cow;

use hands_core::{Annotations, Context, Tool, ToolError, ToolOutput};
use hands_core::{Family, Policy};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use url::Url;

use super::Shared;
use crate::collector::{Entry, Frame, RuntimeError};
use crate::preview::Preview;
use crate::sourcemap::display_source;

/// Entries shown when `limit` is not given.
const DEFAULT_LIMIT: usize = 50;

/// Arguments of read_runtime_errors.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RuntimeErrorsArgs {
    /// Read from this cursor instead of where the last call stopped (0: everything kept).
    #[serde(default)]
    pub since: Option<u64>,
    /// Include console and browser warnings (default true).
    #[serde(default)]
    pub warnings: Option<bool>,
    /// Most entries shown, newest kept (default 50).
    #[serde(default)]
    pub limit: Option<usize>,
}

/// The structured result of read_runtime_errors.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeErrorsResult {
    /// Pass as `since` to read from here (the next call does so by itself).
    pub cursor: u64,
    /// The cursor this read started from.
    pub since: u64,
    /// New or repeated entries, oldest first.
    pub errors: Vec<RuntimeError>,
    /// Entries left out by `limit`.
    pub omitted: usize,
    /// Entries dropped before they were read (over `preview.max_errors`).
    pub dropped: u64,
}

/// The read_runtime_errors tool.
#[derive(Debug, Clone)]
pub struct ReadRuntimeErrors {
    settings: Shared,
}

impl ReadRuntimeErrors {
    /// With `settings`.
    pub(crate) fn new(settings: Shared) -> Self {
        Self { settings }
    }
}

impl Tool for ReadRuntimeErrors {
    type Args = RuntimeErrorsArgs;

    fn name(&self) -> &'static str {
        "read_runtime_errors"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("read_runtime_errors.md"))
    }

    fn annotations(&self) -> Annotations {
        // Changes nothing, but the cursor moves: the same call answers differently.
        Annotations { read_only: true, destructive: false, idempotent: false, open_world: false }
    }

    fn policy(&self) -> Policy {
        Policy::from_annotations(self.annotations()).family(Family::Preview)
    }

    fn cacheable(&self) -> bool {
        false
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        Some(hands_core::output_schema_for::<RuntimeErrorsResult>())
    }

    async fn call(&self, ctx: Context, args: RuntimeErrorsArgs) -> Result<ToolOutput, ToolError> {
        let preview = Preview::of(ctx.session(), &self.settings);
        let read = preview.errors.read(args.since, args.warnings.unwrap_or(true));
        let status = preview.status();
        let origin = status.preview_url.as_deref().and_then(|u| Url::parse(u).ok());
        let mut entries = read.entries;
        let limit = args.limit.unwrap_or(DEFAULT_LIMIT).max(1);
        let omitted = entries.len().saturating_sub(limit);
        entries.drain(..omitted);
        for entry in &mut entries {
            if !entry.mapped {
                map_entry(&preview, entry, origin.as_ref()).await;
            }
        }
        let entries: Vec<RuntimeError> = entries.into_iter().map(|e| e.error).collect();
        let mut text = if entries.is_empty() {
            format!(
                "No new runtime errors since cursor {} (cursor now {}).",
                read.since, read.cursor
            )
        } else {
            format!(
                "{} new or repeated since cursor {} (cursor now {}; the next call continues from \
                 there).",
                entries.len(),
                read.since,
                read.cursor
            )
        };
        if omitted > 0 {
            text.push_str(&format!("\n{omitted} older entries left out (limit {limit})."));
        }
        if read.dropped > 0 {
            text.push_str(&format!(
                "\n{} entries were dropped before they were read (preview.max_errors).",
                read.dropped
            ));
        }
        let mut group = None;
        for (i, entry) in entries.iter().enumerate() {
            if group != Some(entry.page_load) {
                group = Some(entry.page_load);
                if entry.page_load == 0 {
                    text.push_str("\nBuild and typecheck:");
                } else {
                    let url = read
                        .loads
                        .iter()
                        .find(|(n, _)| *n == entry.page_load)
                        .map_or("", |(_, u)| u.as_str());
                    text.push_str(&format!("\nPage load {} ({url}):", entry.page_load));
                }
            }
            text.push_str(&format!("\n{}. {}", i + 1, render(entry, origin.as_ref(), &preview)));
        }
        if entries.is_empty() && status.stage == crate::Stage::Stopped && read.cursor == 0 {
            text.push_str("\nThe preview is not open: preview_open starts it.");
        } else if let Some(error) = &status.last_error {
            text.push_str(&format!("\nThe preview is at `{}`: {error}", status.stage.word()));
        }
        let result = RuntimeErrorsResult {
            cursor: read.cursor,
            since: read.since,
            errors: entries,
            omitted,
            dropped: read.dropped,
        };
        Ok(ToolOutput::text(text)
            .with_structured(serde_json::to_value(&result).unwrap_or_default()))
    }
}

/// Map the entry's frames (and location) through source maps, and remember the result.
async fn map_entry(preview: &Preview, entry: &mut Entry, origin: Option<&Url>) {
    let mut stack = entry.error.stack.clone();
    for frame in &mut stack {
        frame.original = original(preview, &frame.url, frame.line, frame.column, origin).await;
    }
    let original_location = match stack.first() {
        Some(frame) => frame.original.clone(),
        None => match entry.error.location.as_deref().and_then(split_location) {
            Some((url, line, column)) => original(preview, url, line, column, origin).await,
            None => None,
        },
    };
    preview.errors.set_mapped(entry, stack.clone(), original_location.clone());
    entry.error.stack = stack;
    entry.error.original_location = original_location;
    entry.mapped = true;
}

/// `file:line:col` of a 1-based generated position, when a source map tells.
async fn original(
    preview: &Preview,
    url: &str,
    line: u32,
    column: u32,
    origin: Option<&Url>,
) -> Option<String> {
    if !url.starts_with("http") {
        return None;
    }
    let map = preview.mapper.map_of(url).await?;
    let (source, line, column) = map.lookup(line.checked_sub(1)?, column.saturating_sub(1))?;
    let source = display_source(source, origin, preview.root());
    Some(format!("{source}:{}:{}", line + 1, column + 1))
}

/// `url:line:col` split from the right.
fn split_location(location: &str) -> Option<(&str, u32, u32)> {
    let (rest, column) = location.rsplit_once(':')?;
    let (url, line) = rest.rsplit_once(':')?;
    Some((url, line.parse().ok()?, column.parse().ok()?))
}

/// A location as people read it: the original when mapped, else the URL shortened to its path on
/// the preview's server.
fn shown(url_location: &str, origin: Option<&Url>, preview: &Preview) -> String {
    match split_location(url_location) {
        Some((url, line, column)) => {
            format!("{}:{line}:{column}", display_source(url, origin, preview.root()))
        }
        None => display_source(url_location, origin, preview.root()),
    }
}

fn frame_text(frame: &Frame, origin: Option<&Url>, preview: &Preview) -> String {
    let place = frame.original.clone().unwrap_or_else(|| shown(&frame.location(), origin, preview));
    if frame.function.is_empty() { place } else { format!("{} ({place})", frame.function) }
}

fn render(entry: &RuntimeError, origin: Option<&Url>, preview: &Preview) -> String {
    let mut text = format!("[{}] {}", entry.kind.label(), entry.message);
    if entry.count > 1 {
        text.push_str(&format!(" (×{})", entry.count));
    }
    let is_request = matches!(
        entry.kind,
        crate::collector::ErrorKind::HttpError | crate::collector::ErrorKind::RequestFailed
    );
    if let Some(location) = &entry.location
        && !is_request
    {
        let generated = shown(location, origin, preview);
        match &entry.original_location {
            Some(original) if *original != generated => {
                text.push_str(&format!("\n   at {original} (served as {generated})"));
            }
            _ => text.push_str(&format!("\n   at {generated}")),
        }
    }
    if entry.stack.len() > 1 {
        let frames: Vec<String> =
            entry.stack.iter().map(|f| frame_text(f, origin, preview)).collect();
        text.push_str(&format!("\n   stack: {}", frames.join(" ← ")));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_split_from_the_right() {
        assert_eq!(
            split_location("http://127.0.0.1:5173/src/a.ts:10:9"),
            Some(("http://127.0.0.1:5173/src/a.ts", 10, 9))
        );
        assert_eq!(split_location("http://127.0.0.1:5173/missing.json"), None);
    }
}
