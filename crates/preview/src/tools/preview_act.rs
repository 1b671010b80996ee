//! preview_act: a list of actions run in order on the preview's page (click, type, fill, select,
//! check, hover, press, scroll, navigate, back, forward, reload, wait, upload, viewport), answered
//! with what they caused.

use std::borrow::Cow;

use hands_core::{Annotations, Context, Tool, ToolError, ToolOutput};
use hands_core::{Family, Label, Modes, Policy};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::act::ActReport;
use crate::actions::{Action, Step};
use crate::preview::Preview;
use crate::snapshot::{BYTES_PER_TOKEN, DEFAULT_TOKENS, MIN_TOKENS, within};

/// Arguments of preview_act.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ActArgs {
    /// The actions, run in order; the first that fails stops the rest.
    pub actions: Vec<Step>,
    /// Budget of the answer in tokens (4 bytes each; default 3000).
    #[serde(default)]
    pub max_tokens: Option<usize>,
}

/// The preview_act tool.
#[derive(Debug, Clone, Default)]
pub struct PreviewAct;

impl Tool for PreviewAct {
    type Args = ActArgs;

    fn name(&self) -> &'static str {
        "preview_act"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("preview_act.md"))
    }

    fn annotations(&self) -> Annotations {
        // Changes the page's state (and whatever the app's server does), not the project's files.
        Annotations { read_only: false, destructive: false, idempotent: false, open_world: false }
    }

    fn policy(&self) -> Policy {
        // `hands run` shows one line per action under the call's line.
        let steps = Label::Steps {
            key: "actions",
            word: "action",
            details: &["ref", "url", "key", "text", "selector"],
        };
        Policy::from_annotations(self.annotations())
            .modes(Modes::BUILD)
            .family(Family::Preview)
            .label(steps)
    }

    fn needs_approval(&self) -> bool {
        // The project's own preview, on its own origin: navigation elsewhere is refused, not asked.
        false
    }

    async fn call(&self, ctx: Context, args: ActArgs) -> Result<ToolOutput, ToolError> {
        let Some(preview) = Preview::existing(ctx.session()) else {
            return Err(ToolError::model(
                "No preview is open in this session: call preview_open first, then preview_snapshot.",
            ));
        };
        if args.actions.is_empty() {
            return Err(ToolError::model("actions is empty: give at least one action."));
        }
        let actions: Vec<Action> = args
            .actions
            .iter()
            .enumerate()
            .map(|(i, step)| {
                step.action().map_err(|e| format!("actions[{i}]: {e}; nothing was run."))
            })
            .collect::<Result<_, _>>()
            .map_err(ToolError::model)?;
        let report = preview.act(&actions).await.map_err(ToolError::model)?;
        let max = args.max_tokens.unwrap_or(DEFAULT_TOKENS).max(MIN_TOKENS) * BYTES_PER_TOKEN;
        let text = render(&report, max);
        Ok(ToolOutput { is_error: report.failed.is_some(), ..ToolOutput::text(text) })
    }
}

/// The report as text within `max` bytes: what was done, then what it caused; the snapshot part
/// is cut first.
pub(crate) fn render(report: &ActReport, max: usize) -> String {
    let mut head: Vec<String> = report.done.clone();
    if let Some(failed) = &report.failed {
        head.push(failed.clone());
    }
    if let Some(navigation) = &report.navigation {
        head.push(format!("Navigation: {navigation}"));
    }
    let mut tail = Vec::new();
    for (title, lines) in [
        ("Console", &report.console),
        ("Runtime errors", &report.errors),
        ("Failed requests", &report.failed_requests),
    ] {
        if !lines.is_empty() {
            tail.push(format!("{title}:"));
            tail.extend(lines.iter().take(20).map(|l| format!("  {l}")));
            if lines.len() > 20 {
                tail.push(format!(
                    "  … {} more (preview_console, preview_network)",
                    lines.len() - 20
                ));
            }
        }
    }
    let head = head.join("\n") + "\n";
    let tail = if tail.is_empty() { String::new() } else { tail.join("\n") + "\n" };
    let title = if report.new_document {
        "Snapshot of the new page:".to_owned()
    } else if report.changes.is_empty() {
        "The page did not change.".to_owned()
    } else {
        "Page changes:".to_owned()
    };
    let room = max.saturating_sub(head.len() + tail.len() + title.len() + 1);
    let changes = within(&report.changes, room, "the latest .hands/outputs/snapshot-N.txt");
    let mut text = format!("{head}{title}\n{changes}");
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&tail);
    text.truncate(text.trim_end().len());
    text
}
