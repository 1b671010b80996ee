//! The preview as front ends read it: [`PreviewReader`], the [`PreviewService`] this crate
//! installs on the registry (the state, a fresh screenshot, the runtime errors without moving the
//! model's read cursor), and the screenshot capture it shares with preview_screenshot.

use std::sync::Arc;

use base64::Engine as _;
use hands_core::preview::{PreviewError, PreviewState, RuntimeErrors};
use hands_core::{BoxFuture, PreviewService, Session};
use serde_json::json;

use crate::PreviewConfig;
use crate::detect;
use crate::preview::Preview;

/// Tallest full-page capture, in CSS pixels (Chromium's own texture limit is near this).
const MAX_HEIGHT: f64 = 16_000.0;

/// What the message of a screenshot without an open page says.
const NOT_OPEN: &str = "no preview is open in this session: the agent opens it with preview_open";

/// A PNG of the page.
#[derive(Debug, Clone)]
pub struct Screenshot {
    /// The bytes.
    pub png: Vec<u8>,
    /// `, full page W×H` for a full-page capture, else empty.
    pub size: String,
}

impl Preview {
    /// A PNG of the page now: the window, or the whole scrollable page.
    pub async fn screenshot(&self, full_page: bool) -> Result<Screenshot, PreviewError> {
        let (cdp, session) = self.page().ok_or_else(|| PreviewError::NotOpen(NOT_OPEN.into()))?;
        let mut params = json!({"format": "png"});
        let mut size = String::new();
        if full_page {
            let metrics = cdp
                .call("Page.getLayoutMetrics", json!({}), Some(&session))
                .await
                .map_err(|e| PreviewError::Failed(format!("Could not measure the page: {e}.")))?;
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
            .map_err(|e| PreviewError::Failed(format!("The screenshot failed: {e}.")))?;
        let data = shot["data"].as_str().unwrap_or("");
        let png = base64::engine::general_purpose::STANDARD.decode(data).map_err(|e| {
            PreviewError::Failed(format!("Chromium sent a screenshot that is not base64: {e}."))
        })?;
        Ok(Screenshot { png, size })
    }
}

impl Preview {
    /// A PNG of one element (`node`, a backendDOMNodeId), scrolled into view.
    pub(crate) async fn element_screenshot(&self, node: u64) -> Result<Screenshot, PreviewError> {
        let (cdp, session) = self.page().ok_or_else(|| PreviewError::NotOpen(NOT_OPEN.into()))?;
        let failed =
            |e: crate::cdp::CdpError| PreviewError::Failed(format!("The screenshot failed: {e}."));
        let _ = cdp
            .call("DOM.scrollIntoViewIfNeeded", json!({"backendNodeId": node}), Some(&session))
            .await;
        let model = cdp
            .call("DOM.getBoxModel", json!({"backendNodeId": node}), Some(&session))
            .await
            .map_err(failed)?;
        let border: Vec<f64> = model["model"]["border"]
            .as_array()
            .map(|q| q.iter().filter_map(serde_json::Value::as_f64).collect())
            .unwrap_or_default();
        if border.len() != 8 {
            return Err(PreviewError::Failed(
                "The element has no box on the page (hidden?).".into(),
            ));
        }
        let xs = [border[0], border[2], border[4], border[6]];
        let ys = [border[1], border[3], border[5], border[7]];
        let (x, y) = (
            xs.iter().copied().fold(f64::MAX, f64::min),
            ys.iter().copied().fold(f64::MAX, f64::min),
        );
        let width = xs.iter().copied().fold(f64::MIN, f64::max) - x;
        let height = (ys.iter().copied().fold(f64::MIN, f64::max) - y).min(MAX_HEIGHT);
        // The box model is relative to the viewport; the clip is relative to the page.
        let metrics =
            cdp.call("Page.getLayoutMetrics", json!({}), Some(&session)).await.map_err(failed)?;
        let (sx, sy) = (
            metrics["cssVisualViewport"]["pageX"].as_f64().unwrap_or(0.0),
            metrics["cssVisualViewport"]["pageY"].as_f64().unwrap_or(0.0),
        );
        let params = json!({"format": "png", "captureBeyondViewport": true,
            "clip": {"x": x + sx, "y": y + sy, "width": width.max(1.0), "height": height.max(1.0), "scale": 1}});
        let shot =
            cdp.call("Page.captureScreenshot", params, Some(&session)).await.map_err(failed)?;
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap_or(""))
            .map_err(|e| {
                PreviewError::Failed(format!("Chromium sent a screenshot that is not base64: {e}."))
            })?;
        Ok(Screenshot { png, size: format!(", element {width:.0}×{height:.0}") })
    }
}

/// See the module docs.
#[derive(Debug, Clone)]
pub struct PreviewReader {
    config: PreviewConfig,
}

impl PreviewReader {
    /// With the `[preview]` settings (they say whether a project has a preview), ready to install
    /// (`builder.service::<Arc<dyn PreviewService>>(…)`).
    pub fn service(config: &PreviewConfig) -> Arc<dyn PreviewService> {
        Arc::new(Self { config: config.clone() })
    }
}

impl PreviewService for PreviewReader {
    fn state<'a>(&'a self, session: &'a Session) -> BoxFuture<'a, PreviewState> {
        Box::pin(async move {
            let available = detect::has_preview(session.root(), &self.config);
            let Some(preview) = Preview::existing(session) else {
                return PreviewState { available, ..PreviewState::default() };
            };
            let status = preview.status();
            PreviewState {
                available,
                stage: status.stage,
                running: status.running,
                url: status.preview_url,
                port: status.port,
                kind: status.kind,
                last_error: status.last_error,
                page_loads: status.page_loads,
                errors: preview.errors.counts(),
            }
        })
    }

    fn screenshot<'a>(
        &'a self,
        session: &'a Session,
    ) -> BoxFuture<'a, Result<Vec<u8>, PreviewError>> {
        Box::pin(async move {
            let preview =
                Preview::existing(session).ok_or_else(|| PreviewError::NotOpen(NOT_OPEN.into()))?;
            Ok(preview.screenshot(false).await?.png)
        })
    }

    fn errors<'a>(&'a self, session: &'a Session) -> BoxFuture<'a, RuntimeErrors> {
        Box::pin(async move {
            match Preview::existing(session) {
                Some(preview) => {
                    let (errors, counts) = preview.errors.snapshot();
                    RuntimeErrors { errors, counts }
                }
                None => RuntimeErrors::default(),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collector::{ErrorKind, Occurrence};
    use crate::{Settings, Stage};

    #[tokio::test]
    async fn a_session_without_a_preview_reads_as_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let session = Session::new("s", dir.path());
        let reader = PreviewReader::service(&PreviewConfig::default());
        let state = reader.state(&session).await;
        assert_eq!((state.available, state.stage, state.running), (false, Stage::Stopped, false));
        assert!(reader.errors(&session).await.errors.is_empty());
        let err = reader.screenshot(&session).await.unwrap_err();
        assert!(matches!(err, PreviewError::NotOpen(ref m) if m.contains("preview_open")), "{err}");
        std::fs::write(dir.path().join("index.html"), "<h1>hi</h1>").unwrap();
        assert!(reader.state(&session).await.available, "a static index.html is a preview");
    }

    #[tokio::test]
    async fn errors_are_listed_without_moving_the_models_cursor() {
        let dir = tempfile::tempdir().unwrap();
        let session = Session::new("s", dir.path());
        let preview = Preview::of(&session, &Arc::new(Settings::default()));
        preview.errors.page_load("http://127.0.0.1:1/");
        let boom = Occurrence { message: "boom".into(), ..Occurrence::default() };
        preview.errors.record(ErrorKind::Exception, boom.clone());
        preview.errors.record(ErrorKind::Exception, boom);
        let warn = Occurrence { message: "careful".into(), ..Occurrence::default() };
        preview.errors.record(ErrorKind::ConsoleWarning, warn);
        let reader = PreviewReader::service(&PreviewConfig::default());
        let listed = reader.errors(&session).await;
        assert_eq!(listed.errors.len(), 2);
        assert_eq!((listed.errors[0].message.as_str(), listed.errors[0].count), ("boom", 2));
        assert_eq!((listed.counts.errors, listed.counts.warnings), (1, 1));
        assert_eq!((listed.counts.occurrences, listed.counts.unread), (3, 2));
        // The model still reads both as new.
        assert_eq!(preview.errors.read(None, true).entries.len(), 2);
        assert_eq!(reader.state(&session).await.errors.unread, 0);
        session.close().await;
    }
}
