//! Sandbox recovery. When a call reports that its sandbox is gone: log
//! `sandbox_recovery_attempted`, wait (1.5 s by default) for the control plane to settle, get or
//! create a fresh sandbox through the [`SandboxProvider`], and retry the call once. After
//! `max_per_project` recoveries for one project the next loss fails hard, so that a flapping sandbox
//! cannot burn a whole session in a retry loop.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use super::{Middleware, Next, Request};
use crate::config::RecoveryConfig;
use crate::{ChainError, SandboxProvider, ToolError, ToolOutput};

/// The recovery middleware.
pub struct Recover {
    config: RecoveryConfig,
    provider: Arc<dyn SandboxProvider>,
    counts: Mutex<HashMap<String, u32>>,
}

impl Recover {
    /// Recover through `provider`.
    pub fn new(config: RecoveryConfig, provider: Arc<dyn SandboxProvider>) -> Self {
        Self { config, provider, counts: Mutex::new(HashMap::new()) }
    }

    /// Recoveries done so far for `project`.
    pub fn count(&self, project: &str) -> u32 {
        self.counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(project)
            .copied()
            .unwrap_or(0)
    }

    /// Take one recovery for `project`, or `None` when the budget is spent.
    fn take(&self, project: &str) -> Option<u32> {
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        let n = counts.entry(project.to_owned()).or_insert(0);
        if *n >= self.config.max_per_project {
            return None;
        }
        *n += 1;
        Some(*n)
    }
}

impl Middleware for Recover {
    async fn handle<'a>(
        &'a self,
        req: Request<'a>,
        next: Next<'a>,
    ) -> Result<ToolOutput, ChainError> {
        let reason = match next.run(req.clone()).await {
            Err(ChainError::SandboxGone(reason)) => reason,
            other => return other,
        };
        let project = req.ctx.session().project().to_owned();
        let Some(attempt) = self.take(&project) else {
            tracing::error!(
                event = "sandbox_recovery_exhausted",
                project = %project,
                tool = %req.call.name,
                call_id = %req.call.id,
                reason = %reason,
                "sandbox lost again after the recovery budget was spent"
            );
            return Err(ChainError::Fatal(format!(
                "The sandbox of project {project} was lost again ({reason}) after {} \
                 recoveries; giving up. Check the sandbox backend, then start a new session.",
                self.config.max_per_project
            )));
        };
        tracing::warn!(
            event = "sandbox_recovery_attempted",
            project = %project,
            tool = %req.call.name,
            call_id = %req.call.id,
            attempt,
            reason = %reason,
            "sandbox gone; getting a fresh one and retrying once"
        );
        let wait = tokio::time::sleep(Duration::from_millis(self.config.wait_ms));
        tokio::select! {
            () = wait => {}
            () = req.ctx.cancel_token().cancelled() => {
                return Ok(ToolOutput::error(format!(
                    "{} was aborted while its sandbox was being recovered.", req.call.name
                )));
            }
        }
        if let Err(err) = self.provider.get_or_create(&project).await {
            return ToolError::into_chain(Err(err));
        }
        match next.run(req).await {
            Err(ChainError::SandboxGone(again)) => Err(ChainError::Fatal(format!(
                "The sandbox of project {project} was lost again right after recovery \
                 ({again}). The call was not completed."
            ))),
            other => other,
        }
    }

    /// Only where a sandbox can be lost (not the local one).
    fn applies(&self, _req: &Request<'_>) -> bool {
        self.provider.can_lose()
    }
}
