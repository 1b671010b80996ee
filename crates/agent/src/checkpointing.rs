//! The loop's part in checkpoints: a turn holds its project against restores while it runs, and
//! takes a checkpoint before its first change and at its end (then applies the store's
//! retention), reporting each to its observer. A failure is logged, never fails the turn.

use crate::turn::Turn;

impl Turn<'_> {
    /// Marks the turn running on its project (restores are refused meanwhile, by every hands;
    /// one that runs now finishes first). `None` without a checkpoint store.
    pub(crate) async fn hold_project(&self) -> Option<hands_checkpoint::TurnGuard> {
        let store = self.checkpoints.clone()?;
        match tokio::task::spawn_blocking(move || store.begin_turn()).await {
            Ok(Ok(guard)) => Some(guard),
            Ok(Err(err)) => {
                tracing::warn!(%err, "cannot mark the turn running for restores");
                None
            }
            Err(_) => None,
        }
    }

    /// Snapshot the project's working tree into the checkpoint store, when there is one, and
    /// report it; after the turn's last one, apply the store's retention. A failure is logged,
    /// never fails the turn.
    pub(crate) async fn checkpoint(&self, kind: hands_checkpoint::Kind, messages: u64) {
        let Some(store) = self.checkpoints.clone() else { return };
        let meta = hands_checkpoint::Meta {
            turn: Some(self.turn_id.to_owned()),
            messages: Some(messages),
            ..hands_checkpoint::Meta::new(self.session.id(), kind)
        };
        let taken = tokio::task::spawn_blocking(move || {
            let checkpoint = store.snapshot(&meta)?;
            if kind == hands_checkpoint::Kind::TurnEnd {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs());
                if let Err(err) = store.retain(now) {
                    tracing::warn!(%err, "checkpoint retention failed");
                }
            }
            Ok::<_, hands_checkpoint::Error>(checkpoint)
        });
        match taken.await {
            Ok(Ok(checkpoint)) => {
                tracing::debug!(id = checkpoint.id, "checkpoint taken");
                self.observer.checkpoint(&checkpoint).await;
            }
            Ok(Err(err)) => tracing::warn!(%err, "no checkpoint of this turn"),
            Err(err) => tracing::warn!(%err, "the checkpoint task failed"),
        }
    }
}
