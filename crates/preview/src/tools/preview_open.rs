//! preview_open: open the preview (or reuse it) and answer with its status.

use std::borrow::Cow;

use hands_core::{Annotations, Context, Tool, ToolError, ToolOutput};
use hands_core::{Family, Policy};

use super::{NoArgs, Shared};
use crate::lifecycle::Opened;
use crate::preview::{Preview, PreviewStatus};

/// The preview_open tool.
#[derive(Debug, Clone)]
pub struct PreviewOpen {
    settings: Shared,
}

impl PreviewOpen {
    /// With `settings`.
    pub(crate) fn new(settings: Shared) -> Self {
        Self { settings }
    }
}

impl Tool for PreviewOpen {
    type Args = NoArgs;

    /// It waits for work that can take minutes.
    fn outlasts(&self, _args: &Self::Args) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        "preview_open"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("preview_open.md"))
    }

    fn annotations(&self) -> Annotations {
        // Runs the project's commands and a browser; opening twice reuses what runs.
        Annotations { read_only: false, destructive: false, idempotent: true, open_world: true }
    }

    fn policy(&self) -> Policy {
        Policy::from_annotations(self.annotations()).family(Family::Preview)
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        Some(hands_core::output_schema_for::<PreviewStatus>())
    }

    async fn call(&self, ctx: Context, _args: NoArgs) -> Result<ToolOutput, ToolError> {
        let preview = Preview::of(ctx.session(), &self.settings);
        let opened = preview.open(ctx.cancel_token()).await;
        let status = preview.status();
        // The result tells of the unread errors itself; no notice repeats it.
        preview.errors.announce_all();
        let structured = serde_json::to_value(&status).unwrap_or_default();
        match opened {
            Ok(how) => {
                let head = match how {
                    Opened::Reused => format!(
                        "The preview was already running at {}: reused.",
                        status.preview_url.as_deref().unwrap_or("?")
                    ),
                    Opened::Started => format!(
                        "Preview ready at {}{}.",
                        status.preview_url.as_deref().unwrap_or("?"),
                        opened_in(&status)
                    ),
                    Opened::Attached(process) => format!(
                        "Preview ready: attached to the running process {process} at {}{}; no \
                         second server was started.",
                        status.preview_url.as_deref().unwrap_or("?"),
                        opened_in(&status)
                    ),
                };
                let unread = if status.unread_errors > 0 {
                    format!(
                        "\nThe page reported {} error{} or warning{} so far: read_runtime_errors \
                         shows them.",
                        status.unread_errors,
                        if status.unread_errors == 1 { "" } else { "s" },
                        if status.unread_errors == 1 { "" } else { "s" },
                    )
                } else {
                    "\nNo errors so far.".to_owned()
                };
                let mut output = ToolOutput::text(format!("{head}\n{}{unread}", status.text()))
                    .with_structured(structured);
                if ctx.session().is_one_shot() {
                    output = output.with_text(
                        "Note: this one-shot `hands call` session ends now, so the preview is \
                         stopped as hands exits. Run hands as a server (`hands mcp`, `hands \
                         serve`) to keep it open.",
                    );
                }
                Ok(output)
            }
            Err(message) => {
                let text = format!("{message}\n\n{}", status.text());
                Ok(ToolOutput { is_error: true, ..ToolOutput::text(text) }
                    .with_structured(structured))
            }
        }
    }
}

/// " (opened in 1.2 s)", when the time is known.
fn opened_in(status: &PreviewStatus) -> String {
    status.open_ms.map_or(String::new(), |ms| format!(" (opened in {:.1} s)", ms as f64 / 1000.0))
}

/// The status text for a session whose preview was never opened.
pub(crate) fn never_opened() -> PreviewStatus {
    PreviewStatus {
        running: false,
        port: None,
        stage: crate::Stage::Stopped,
        preview_url: None,
        attached: false,
        last_error: None,
        cdp_port: None,
        ws_endpoint: None,
        started_at: None,
        kind: None,
        target_id: None,
        server_pid: None,
        browser_pid: None,
        page_loads: 0,
        unread_errors: 0,
        open_ms: None,
        server_process: None,
        attached_to: None,
        discovery_file: None,
    }
}
