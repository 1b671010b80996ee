//! preview_snapshot: the page as an indented outline with refs, narrowed by a query, within a
//! budget; on later calls of the same document only what changed.

use std::borrow::Cow;

use hands_core::{Annotations, Context, Tool, ToolError, ToolOutput};
use hands_core::{Family, Modes, Policy};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::preview::Preview;
use crate::snapshot::{DEFAULT_TOKENS, Query};

/// Arguments of preview_snapshot.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SnapshotArgs {
    /// Only lines containing this text (any case), with their ancestors.
    #[serde(default)]
    pub query: Option<String>,
    /// Only lines of this role (`button`, `textbox`, `link`, …), with their ancestors.
    #[serde(default)]
    pub role: Option<String>,
    /// Only the subtree of this ref (`e12`).
    #[serde(default, rename = "ref")]
    pub target: Option<String>,
    /// The whole outline even when a previous snapshot of the same page exists (default false:
    /// only what changed since it).
    #[serde(default)]
    pub full: bool,
    /// Budget in tokens (4 bytes each; default 3000).
    #[serde(default)]
    pub max_tokens: Option<usize>,
}

/// The preview_snapshot tool.
#[derive(Debug, Clone, Default)]
pub struct PreviewSnapshot;

impl Tool for PreviewSnapshot {
    type Args = SnapshotArgs;

    fn name(&self) -> &'static str {
        "preview_snapshot"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("preview_snapshot.md"))
    }

    fn annotations(&self) -> Annotations {
        // Reads the page; moves the baseline of the next delta.
        Annotations { read_only: true, destructive: false, idempotent: false, open_world: false }
    }

    fn policy(&self) -> Policy {
        Policy::from_annotations(self.annotations()).modes(Modes::BUILD).family(Family::Preview)
    }

    fn cacheable(&self) -> bool {
        false
    }

    async fn call(&self, ctx: Context, args: SnapshotArgs) -> Result<ToolOutput, ToolError> {
        let Some(preview) = Preview::existing(ctx.session()) else {
            return Err(ToolError::model(
                "No preview is open in this session: call preview_open first, then the snapshot.",
            ));
        };
        let query = Query { text: args.query, role: args.role, subtree: args.target };
        let shown = preview
            .snapshot(&query, args.max_tokens.unwrap_or(DEFAULT_TOKENS), args.full)
            .await
            .map_err(|e| ToolError::model(e.to_string()))?;
        Ok(ToolOutput::text(shown.text))
    }
}
