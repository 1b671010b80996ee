//! What the host is built from, and what it takes and gives for a session.

use std::path::PathBuf;
use std::sync::Arc;

use hands_core::{Mode, Registry};
use hands_store::Store;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::Provider;

use super::config::AgentConfig;

/// What a host is built from.
#[derive(Clone)]
pub struct HostParts {
    /// Where sessions are kept.
    pub store: Arc<dyn Store>,
    /// The tools.
    pub registry: Arc<Registry>,
    /// The model; `None` when no `[model]` is configured (turns then fail with `NoModel`, direct
    /// tool calls still work).
    pub provider: Option<Arc<dyn Provider>>,
    /// `[agent]`.
    pub config: AgentConfig,
    /// `[checkpoints]`: whether turns are checkpointed, and how long checkpoints are kept.
    pub checkpoints: hands_checkpoint::Settings,
}

impl HostParts {
    /// The checkpoint store of the project at `root` for a turn, when `[checkpoints] enabled` is
    /// on and the store opens (a failure is logged: the turn runs without checkpoints).
    pub async fn checkpoints(
        &self,
        root: &std::path::Path,
    ) -> Option<Arc<hands_checkpoint::Store>> {
        if !self.checkpoints.enabled {
            return None;
        }
        match self.checkpoint_store(root).await {
            Ok(store) => Some(Arc::new(store)),
            Err(err) => {
                tracing::warn!(%err, "no checkpoints for this project");
                None
            }
        }
    }

    /// The checkpoint store of the project at `root`, enabled or not (its checkpoints can be
    /// listed and restored). Opening it finishes a restore that was interrupted.
    pub async fn checkpoint_store(
        &self,
        root: &std::path::Path,
    ) -> Result<hands_checkpoint::Store, hands_checkpoint::Error> {
        let (root, settings) = (root.to_path_buf(), self.checkpoints.clone());
        tokio::task::spawn_blocking(move || hands_checkpoint::Store::open_with(&root, &settings))
            .await
            .map_err(|_| hands_checkpoint::Error::Poisoned)?
    }
}

/// A session to create.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewSession {
    /// The session id; generated when absent.
    pub id: Option<String>,
    /// The project; defaults to the root's folder name.
    pub project_id: Option<String>,
    /// The project's root folder (must exist).
    pub root: PathBuf,
    /// Start in build or plan mode.
    pub mode: Mode,
    /// A title for lists.
    pub title: Option<String>,
}

/// A session as front ends show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SessionInfo {
    /// Id.
    pub id: String,
    /// Project.
    pub project_id: String,
    /// Root folder.
    pub root: PathBuf,
    /// Build or plan.
    pub mode: Mode,
    /// Title.
    pub title: Option<String>,
    /// The turn running now, if any.
    pub running_turn: Option<String>,
    /// Questions waiting for an answer: `[{question_id, question, options}]`.
    pub pending_questions: Vec<Value>,
    /// Approvals waiting: `[{approval_id, tool, summary}]`.
    pub pending_approvals: Vec<Value>,
    /// Created, ms since the epoch.
    pub created_at_ms: i64,
    /// Last change.
    pub updated_at_ms: i64,
}
