//! The process service of a proxy sandbox: the processes of a host session run in its inner
//! hands, so listing, reading and stopping them goes there, over the inner hands' MCP tools (its
//! only interface); the list comes back as the typed [`ProcessList`] both sides share.

use std::sync::Arc;

use hands_core::process::{ProcessError, ProcessList, ProcessStatus, ProcessStopped, ProcessTools};
use hands_core::{BoxFuture, ProcessService, Session, ToolOutput};
use serde_json::{Value, json};

use super::proxy::ProxyProvider;

/// Lists, reads and stops the processes of host sessions in their inner hands.
pub struct ProxyProcesses {
    provider: Arc<ProxyProvider>,
    /// The inner hands' process tools (the same build as the service this one replaces).
    tools: ProcessTools,
}

impl ProxyProcesses {
    /// Over `provider`'s inner hands, through the tools that expose `local` (the service this
    /// one replaces; the inner hands is the same build), ready to install on the registry.
    pub fn service(
        provider: Arc<ProxyProvider>,
        local: &dyn ProcessService,
    ) -> Arc<dyn ProcessService> {
        Arc::new(Self { provider, tools: local.tools() })
    }

    async fn call(&self, session: &Session, name: &str, args: Value) -> Option<ToolOutput> {
        let Value::Object(args) = args else { return None };
        match self.provider.call_inner(session, name, args).await {
            Ok(output) => Some(output),
            Err(err) => {
                tracing::warn!(session = session.id(), tool = name, %err, "in the sandbox");
                None
            }
        }
    }
}

impl ProcessService for ProxyProcesses {
    fn tools(&self) -> ProcessTools {
        self.tools
    }

    fn list<'a>(&'a self, session: &'a Session) -> BoxFuture<'a, ProcessList> {
        Box::pin(async move {
            let output = self.call(session, self.tools.list, json!({})).await;
            output
                .filter(|o| !o.is_error)
                .and_then(|o| o.structured)
                .and_then(|s| serde_json::from_value(s).ok())
                .unwrap_or_default()
        })
    }

    fn output<'a>(
        &'a self,
        session: &'a Session,
        id: &'a str,
        lines: usize,
    ) -> BoxFuture<'a, Result<String, ProcessError>> {
        Box::pin(async move {
            let args = json!({"id": id, "tail": lines});
            answer(self.call(session, self.tools.output, args).await, id)
        })
    }

    fn stop<'a>(
        &'a self,
        session: &'a Session,
        id: &'a str,
    ) -> BoxFuture<'a, Result<ProcessStopped, ProcessError>> {
        Box::pin(async move {
            let text = answer(self.call(session, self.tools.stop, json!({"id": id})).await, id)?;
            Ok(ProcessStopped { id: id.to_owned(), text })
        })
    }

    fn stop_running<'a>(&'a self, session: &'a Session) -> BoxFuture<'a, usize> {
        Box::pin(async move {
            let list = self.list(session).await;
            let running: Vec<&str> = list
                .processes
                .iter()
                .filter(|p| p.status == ProcessStatus::Running)
                .map(|p| p.id.as_str())
                .collect();
            for id in &running {
                // An unknown id here is a process that went away meanwhile: nothing to stop.
                let _ = self.stop(session, id).await;
            }
            running.len()
        })
    }
}

/// The text of an inner tool's answer; its error is the inner hands' word for an unknown id.
fn answer(output: Option<ToolOutput>, id: &str) -> Result<String, ProcessError> {
    match output {
        Some(output) if !output.is_error => Ok(output.joined_text()),
        Some(output) => Err(ProcessError::NotFound(output.joined_text())),
        None => Err(ProcessError::NotFound(format!("the sandbox could not be asked about `{id}`"))),
    }
}
