//! preview_status: where the preview is, as text and JSON.

use std::borrow::Cow;

use hands_core::{Annotations, Context, Tool, ToolError, ToolOutput};
use hands_core::{Family, Modes, Policy};

use super::NoArgs;
use super::preview_open::never_opened;
use crate::preview::{Preview, PreviewStatus};

/// The preview_status tool.
#[derive(Debug, Clone, Default)]
pub struct PreviewStatusTool;

impl Tool for PreviewStatusTool {
    type Args = NoArgs;

    fn name(&self) -> &'static str {
        "preview_status"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("preview_status.md"))
    }

    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY
    }

    fn policy(&self) -> Policy {
        // Build mode only: plan mode reads the errors, it does not drive the preview.
        Policy::from_annotations(self.annotations()).modes(Modes::BUILD).family(Family::Preview)
    }

    fn cacheable(&self) -> bool {
        // The status changes by itself (a crash, a rebuild).
        false
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        Some(hands_core::output_schema_for::<PreviewStatus>())
    }

    async fn call(&self, ctx: Context, _args: NoArgs) -> Result<ToolOutput, ToolError> {
        let status = Preview::existing(ctx.session()).map_or_else(never_opened, |p| p.status());
        let mut text = status.text();
        if status.stage == crate::Stage::Stopped {
            text.push_str("\nCall preview_open to start it.");
        }
        Ok(ToolOutput::text(text)
            .with_structured(serde_json::to_value(&status).unwrap_or_default()))
    }
}
