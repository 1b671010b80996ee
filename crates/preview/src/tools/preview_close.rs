//! preview_close: stop the browser and the server, remove the discovery file. A dev server of
//! the agent's that the preview attached to is left running: the agent started it.

use std::borrow::Cow;

use hands_core::{Annotations, Context, Tool, ToolError, ToolOutput};
use hands_core::{Family, Policy};

use super::NoArgs;
use crate::preview::Preview;

/// The preview_close tool.
#[derive(Debug, Clone, Default)]
pub struct PreviewClose;

impl Tool for PreviewClose {
    type Args = NoArgs;

    fn name(&self) -> &'static str {
        "preview_close"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("preview_close.md"))
    }

    fn annotations(&self) -> Annotations {
        Annotations { read_only: false, destructive: false, idempotent: true, open_world: false }
    }

    fn policy(&self) -> Policy {
        Policy::from_annotations(self.annotations()).family(Family::Preview)
    }

    fn needs_approval(&self) -> bool {
        // Stopping what hands itself started changes nothing of the user's.
        false
    }

    async fn call(&self, ctx: Context, _args: NoArgs) -> Result<ToolOutput, ToolError> {
        let Some(preview) = Preview::existing(ctx.session()) else {
            return Ok(ToolOutput::text("No preview was open in this session; nothing to stop."));
        };
        let report = preview.close("stopped").await;
        let text = if !report.was_running {
            "No preview was running; nothing to stop.".to_owned()
        } else if report.survivors > 0 {
            format!(
                "Stopped the preview, but {} process(es) survived the stop; the session's \
                 process list shows them.",
                report.survivors
            )
        } else if let Some(server) = &report.kept {
            format!(
                "Stopped the preview: the browser is gone, the discovery file is removed. The dev \
                 server {server} is the agent's process, not the preview's: it keeps running \
                 until the agent stops it. read_runtime_errors still shows what was collected."
            )
        } else {
            "Stopped the preview: browser and server are gone, the discovery file is removed. \
             read_runtime_errors still shows what was collected."
                .to_owned()
        };
        // Text only: the sentence is the whole result (no output schema, no structured copy).
        Ok(ToolOutput::text(text))
    }
}
