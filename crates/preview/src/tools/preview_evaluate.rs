//! preview_evaluate: a JavaScript expression run in the preview's page, its value as JSON. Not
//! offered unless the user sets `[preview] evaluate = true` (see [`crate::source`]): arbitrary
//! code in the page is the user's choice to give the model, not the default.

use std::borrow::Cow;
use std::time::Duration;

use hands_core::{Annotations, Context, Tool, ToolError, ToolOutput};
use hands_core::{Family, Modes, Policy};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::input::Page;
use crate::preview::Preview;

/// The longest expression taken.
const MAX_EXPRESSION: usize = 64 * 1024;
/// Bytes of the value returned by default, and at most.
const DEFAULT_BYTES: usize = 8 * 1024;
const MAX_BYTES: usize = 64 * 1024;
/// How long the expression may run (a promise included).
const LIMIT: Duration = Duration::from_secs(10);

/// Arguments of preview_evaluate.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EvaluateArgs {
    /// The expression; its value (after awaiting a promise) is returned as JSON.
    pub expression: String,
    /// Bytes of the value shown at most (default 8192, at most 65536).
    #[serde(default)]
    pub max_bytes: Option<usize>,
}

/// The preview_evaluate tool.
#[derive(Debug, Clone, Default)]
pub struct PreviewEvaluate;

impl Tool for PreviewEvaluate {
    type Args = EvaluateArgs;

    fn name(&self) -> &'static str {
        "preview_evaluate"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("preview_evaluate.md"))
    }

    fn annotations(&self) -> Annotations {
        Annotations { read_only: false, destructive: false, idempotent: false, open_world: false }
    }

    fn policy(&self) -> Policy {
        Policy::from_annotations(self.annotations())
            .modes(Modes::BUILD)
            .family(Family::Preview)
            .timeout_ms(LIMIT.as_millis() as u64 + 5_000)
    }

    fn cacheable(&self) -> bool {
        false
    }

    async fn call(&self, ctx: Context, args: EvaluateArgs) -> Result<ToolOutput, ToolError> {
        if args.expression.trim().is_empty() {
            return Err(ToolError::model("expression is empty."));
        }
        if args.expression.len() > MAX_EXPRESSION {
            return Err(ToolError::model(format!(
                "The expression is {} bytes; at most {MAX_EXPRESSION} are taken.",
                args.expression.len()
            )));
        }
        let max = args.max_bytes.unwrap_or(DEFAULT_BYTES).clamp(256, MAX_BYTES);
        let Some(preview) = Preview::existing(ctx.session()) else {
            return Err(ToolError::model(
                "No preview is open in this session: call preview_open first.",
            ));
        };
        let Some((cdp, session)) = preview.page() else {
            return Err(ToolError::model(
                "The preview has no page attached (it is starting or stopped): see preview_status.",
            ));
        };
        let page = Page { cdp: &cdp, session: &session };
        let params = json!({
            "expression": args.expression,
            "returnByValue": true,
            "awaitPromise": true,
            "timeout": LIMIT.as_millis() as u64,
        });
        let result = tokio::time::timeout(
            LIMIT + Duration::from_secs(2),
            page.call("Runtime.evaluate", params),
        )
        .await
        .map_err(|_| {
            ToolError::model(format!("The expression ran longer than {} s.", LIMIT.as_secs()))
        })?
        .map_err(|err| ToolError::model(format!("The page could not run it: {err}")))?;
        if let Some(details) = result.get("exceptionDetails") {
            let message = details["exception"]["description"]
                .as_str()
                .or(details["text"].as_str())
                .unwrap_or("it threw");
            return Err(ToolError::model(format!("The expression threw: {message}")));
        }
        let value = &result["result"];
        let shown = match value.get("value") {
            Some(v) => serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string()),
            // undefined, functions, symbols: no JSON value.
            None => value["description"]
                .as_str()
                .or(value["type"].as_str())
                .unwrap_or("undefined")
                .to_owned(),
        };
        let text = if shown.len() > max {
            let mut cut = max;
            while !shown.is_char_boundary(cut) {
                cut -= 1;
            }
            format!("{}\n… [cut: {} of {} bytes shown]", &shown[..cut], cut, shown.len())
        } else {
            shown
        };
        Ok(ToolOutput::text(text))
    }
}
