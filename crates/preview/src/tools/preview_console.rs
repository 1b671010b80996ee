//! preview_console: the page's console messages since a cursor, filtered by level and text.

use std::borrow::Cow;
use std::sync::atomic::Ordering;

use hands_core::{Annotations, Context, Tool, ToolError, ToolOutput};
use hands_core::{Family, Modes, Policy};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::preview::Preview;

/// Messages listed at most.
const MAX_LISTED: usize = 100;

/// Arguments of preview_console.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConsoleArgs {
    /// Messages after this cursor (default: where the last call stopped; 0: all kept).
    #[serde(default)]
    pub since: Option<u64>,
    /// Only these levels (log, info, debug, warning, error).
    #[serde(default)]
    pub levels: Option<Vec<String>>,
    /// Only messages containing this text (any case).
    #[serde(default)]
    pub text: Option<String>,
}

/// The preview_console tool.
#[derive(Debug, Clone, Default)]
pub struct PreviewConsole;

impl Tool for PreviewConsole {
    type Args = ConsoleArgs;

    fn name(&self) -> &'static str {
        "preview_console"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("preview_console.md"))
    }

    fn annotations(&self) -> Annotations {
        Annotations { read_only: true, destructive: false, idempotent: false, open_world: false }
    }

    fn policy(&self) -> Policy {
        Policy::from_annotations(self.annotations()).modes(Modes::BUILD).family(Family::Preview)
    }

    fn cacheable(&self) -> bool {
        false
    }

    async fn call(&self, ctx: Context, args: ConsoleArgs) -> Result<ToolOutput, ToolError> {
        let Some(preview) = Preview::existing(ctx.session()) else {
            return Err(ToolError::model(
                "No preview is open in this session: call preview_open first.",
            ));
        };
        let since = args.since.unwrap_or_else(|| preview.console_read.load(Ordering::Relaxed));
        let cursor = preview.console.cursor();
        preview.console_read.fetch_max(cursor, Ordering::Relaxed);
        let text_filter = args.text.as_ref().map(|t| t.to_lowercase());
        let kept: Vec<_> = preview
            .console
            .since(since)
            .into_iter()
            .filter(|m| {
                args.levels
                    .as_ref()
                    .is_none_or(|l| l.iter().any(|l| l.eq_ignore_ascii_case(&m.level)))
            })
            .filter(|m| {
                text_filter.as_ref().is_none_or(|t| m.text.to_lowercase().contains(t.as_str()))
            })
            .collect();
        let omitted = kept.len().saturating_sub(MAX_LISTED);
        let mut text = format!(
            "{} console message{} since cursor {since} (cursor now {cursor}){}",
            kept.len(),
            if kept.len() == 1 { "" } else { "s" },
            if kept.is_empty() { "." } else { ":" }
        );
        if omitted > 0 {
            text.push_str(&format!("\n({omitted} older left out)"));
        }
        for message in &kept[omitted..] {
            text.push('\n');
            text.push_str(&message.line());
        }
        Ok(ToolOutput::text(text))
    }
}
