//! preview_screenshot: a PNG of the page (`Page.captureScreenshot`), as image content.

use std::borrow::Cow;

use base64::Engine as _;
use hands_core::{Annotations, Context, Tool, ToolError, ToolOutput};
use hands_core::{Family, Modes, Policy};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::preview::Preview;

/// Arguments of preview_screenshot.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScreenshotArgs {
    /// Capture the whole scrollable page instead of the window (default false).
    #[serde(default)]
    pub full_page: Option<bool>,
}

/// Tallest full-page capture, in CSS pixels (Chromium's own texture limit is near this).
const MAX_HEIGHT: f64 = 16_000.0;

/// The preview_screenshot tool.
#[derive(Debug, Clone, Default)]
pub struct PreviewScreenshot;

impl Tool for PreviewScreenshot {
    type Args = ScreenshotArgs;

    fn name(&self) -> &'static str {
        "preview_screenshot"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("preview_screenshot.md"))
    }

    fn annotations(&self) -> Annotations {
        Annotations { read_only: true, destructive: false, idempotent: true, open_world: false }
    }

    fn policy(&self) -> Policy {
        // Build mode only: plan mode reads the errors, it does not drive the preview.
        Policy::from_annotations(self.annotations()).modes(Modes::BUILD).family(Family::Preview)
    }

    fn cacheable(&self) -> bool {
        // The page changes by itself.
        false
    }

    async fn call(&self, ctx: Context, args: ScreenshotArgs) -> Result<ToolOutput, ToolError> {
        let page = Preview::existing(ctx.session()).and_then(|p| p.page().map(|page| (p, page)));
        let Some((preview, (cdp, session))) = page else {
            return Err(ToolError::model(
                "No preview is open in this session: call preview_open first, then take the \
                 screenshot.",
            ));
        };
        let full = args.full_page.unwrap_or(false);
        let mut params = json!({"format": "png"});
        let mut size = String::new();
        if full {
            let metrics = cdp
                .call("Page.getLayoutMetrics", json!({}), Some(&session))
                .await
                .map_err(|e| ToolError::model(format!("Could not measure the page: {e}.")))?;
            let content = &metrics["cssContentSize"];
            let width = content["width"].as_f64().unwrap_or(1280.0).ceil().max(1.0);
            let height = content["height"].as_f64().unwrap_or(800.0).ceil().clamp(1.0, MAX_HEIGHT);
            params["captureBeyondViewport"] = json!(true);
            params["clip"] = json!({"x": 0, "y": 0, "width": width, "height": height, "scale": 1});
            size = format!(", full page {width}×{height}");
        }
        let shot = cdp
            .call("Page.captureScreenshot", params, Some(&session))
            .await
            .map_err(|e| ToolError::model(format!("The screenshot failed: {e}.")))?;
        let data = shot["data"].as_str().unwrap_or("");
        let png = base64::engine::general_purpose::STANDARD.decode(data).map_err(|e| {
            ToolError::Fatal(format!("Chromium sent a screenshot that is not base64: {e}"))
        })?;
        let url = preview.status().preview_url.unwrap_or_default();
        Ok(ToolOutput::image(png, "image/png").with_text(format!("Screenshot of {url}{size}.")))
    }
}
