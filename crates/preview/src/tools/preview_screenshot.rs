//! preview_screenshot: a PNG of the page or of one element (`Page.captureScreenshot`), as image
//! content.

use std::borrow::Cow;

use hands_core::preview::PreviewError;
use hands_core::{Annotations, Context, Tool, ToolError, ToolOutput};
use hands_core::{Family, Modes, Policy};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::preview::Preview;

/// Arguments of preview_screenshot.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScreenshotArgs {
    /// Capture the whole scrollable page instead of the window (default false).
    #[serde(default)]
    pub full_page: Option<bool>,
    /// Capture only this element (a ref from preview_snapshot, e.g. `e12`).
    #[serde(default, rename = "ref")]
    pub target: Option<String>,
}

/// What the model reads when no page is open.
const NOT_OPEN: &str =
    "No preview is open in this session: call preview_open first, then take the screenshot.";

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
        let Some(preview) = Preview::existing(ctx.session()) else {
            return Err(ToolError::model(NOT_OPEN));
        };
        let shot = match &args.target {
            Some(target) => {
                let node = preview.element_now(target).await.map_err(ToolError::model)?;
                preview.element_screenshot(node).await
            }
            None => preview.screenshot(args.full_page.unwrap_or(false)).await,
        };
        let shot = shot.map_err(|e| match e {
            PreviewError::NotOpen(_) => ToolError::model(NOT_OPEN),
            PreviewError::Failed(message) => ToolError::model(message),
        })?;
        let url = preview.status().preview_url.unwrap_or_default();
        Ok(ToolOutput::image(shot.png, "image/png")
            .with_text(format!("Screenshot of {url}{}.", shot.size)))
    }
}
