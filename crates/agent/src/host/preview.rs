//! A session's preview for front ends: its state, a fresh screenshot and its runtime errors,
//! through the [`PreviewService`] the preview crate installed on the registry (none: this hands
//! has no preview, which reads as a preview that is not available).

use std::sync::Arc;

use hands_core::PreviewService;
use hands_core::preview::{PreviewError, PreviewState, RuntimeErrors};

use super::api::Host;
use super::error::{HostError, HostResult};

impl Host {
    /// The session's preview now: stage, URL, last error, error counts.
    pub async fn preview_state(&self, id: &str) -> HostResult<PreviewState> {
        let live = self.live(id).await?;
        Ok(match self.previews() {
            Some(previews) => previews.state(live.session()).await,
            None => PreviewState::default(),
        })
    }

    /// A fresh PNG of the session's preview page. `Conflict` when no page is open.
    pub async fn preview_screenshot(&self, id: &str) -> HostResult<Vec<u8>> {
        let live = self.live(id).await?;
        let Some(previews) = self.previews() else {
            return Err(HostError::Conflict("this hands has no preview".into()));
        };
        previews.screenshot(live.session()).await.map_err(|err| match err {
            PreviewError::NotOpen(message) | PreviewError::Failed(message) => {
                HostError::Conflict(message)
            }
        })
    }

    /// Every runtime error the session's preview kept; the model's read cursor does not move.
    pub async fn preview_errors(&self, id: &str) -> HostResult<RuntimeErrors> {
        let live = self.live(id).await?;
        Ok(match self.previews() {
            Some(previews) => previews.errors(live.session()).await,
            None => RuntimeErrors::default(),
        })
    }

    fn previews(&self) -> Option<Arc<dyn PreviewService>> {
        self.parts.registry.service::<Arc<dyn PreviewService>>()
    }
}
