//! The background processes of a session, as front ends see them: the one row type (list_processes'
//! structured output, the session API's process list and its OpenAPI schema) and the
//! [`ProcessService`] a process crate installs on the registry
//! ([`crate::RegistryBuilder::service`]), through which a host lists, reads and stops processes
//! without calling a tool by name.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{BoxFuture, Session};

/// How a background process was started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ProcessKind {
    /// A server that keeps running (a dev server, a watcher).
    Daemon,
    /// A long job that ends by itself (a test suite, a build).
    LongRun,
    /// A command in a terminal the model types into (a REPL, a prompt, a full-screen program).
    Terminal,
}

/// Where a background process is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ProcessStatus {
    /// Still running.
    Running,
    /// Exited by itself (or was killed by a signal it did not get from hands).
    Exited,
    /// Stopped by hands: stop_process, a timeout, the end of the session.
    Stopped,
}

/// One background process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProcessRow {
    /// Id for process_output and stop_process (`p1`, …).
    pub id: String,
    /// How it was started.
    #[serde(rename = "type")]
    pub kind: ProcessKind,
    /// Name given at spawn (or the command).
    pub name: String,
    /// The command line.
    pub command: String,
    /// Process id of its shell.
    pub pid: u32,
    /// Running, exited or stopped.
    pub status: ProcessStatus,
    /// The status in words (`exited with code 1`, `stopped (timeout)`).
    pub detail: String,
    /// Exit code, when it exited by itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Uptime (running) or how long it ran, in milliseconds.
    pub duration_ms: u64,
    /// URL it printed, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Port it listens on, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// Output bytes not yet read with process_output.
    pub unread_bytes: u64,
    /// Log file with its whole output, relative to the project root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<String>,
}

/// A session's background processes (list_processes' structured result).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct ProcessList {
    /// Oldest first.
    pub processes: Vec<ProcessRow>,
}

/// What stopping a background process did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProcessStopped {
    /// The process.
    pub id: String,
    /// What happened, as stop_process says it (signals sent, status, last lines).
    pub text: String,
}

/// A process operation that could not be done.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProcessError {
    /// No process of the session has that id; the message lists the known ones.
    #[error("{0}")]
    NotFound(String),
}

/// The names of the tools that expose a [`ProcessService`] to a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessTools {
    /// Lists the processes (structured content: a [`ProcessList`]).
    pub list: &'static str,
    /// Reads one's output (`id`, `tail`).
    pub output: &'static str,
    /// Stops one (`id`).
    pub stop: &'static str,
}

/// Lists, reads and stops the background processes of a session. Installed on the registry by
/// the crate that runs processes; front ends get it with
/// `registry.service::<Arc<dyn ProcessService>>()` (none: background processes are off).
pub trait ProcessService: Send + Sync {
    /// The tools through which a model reaches this service (a proxy sandbox reaches the inner
    /// hands' service through them: MCP tools are the inner hands' only interface).
    fn tools(&self) -> ProcessTools;

    /// The session's background processes, oldest first.
    fn list<'a>(&'a self, session: &'a Session) -> BoxFuture<'a, ProcessList>;

    /// The last `lines` lines of what `id` printed (the model's read cursor does not move).
    fn output<'a>(
        &'a self,
        session: &'a Session,
        id: &'a str,
        lines: usize,
    ) -> BoxFuture<'a, Result<String, ProcessError>>;

    /// Stop `id` (a process that already ended is reported, not an error).
    fn stop<'a>(
        &'a self,
        session: &'a Session,
        id: &'a str,
    ) -> BoxFuture<'a, Result<ProcessStopped, ProcessError>>;

    /// Stop every running process of the session; returns how many were running.
    fn stop_running<'a>(&'a self, session: &'a Session) -> BoxFuture<'a, usize>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_reads_and_writes_the_documented_json() {
        let json = serde_json::json!({
            "id": "p1", "type": "long-run", "name": "tests", "command": "npm test", "pid": 7,
            "status": "exited", "detail": "exited with code 1", "exit_code": 1,
            "duration_ms": 1200, "unread_bytes": 0
        });
        let row: ProcessRow = serde_json::from_value(json.clone()).unwrap();
        assert_eq!((row.kind, row.status), (ProcessKind::LongRun, ProcessStatus::Exited));
        assert_eq!(serde_json::to_value(&row).unwrap(), json);
    }
}
