//! The per-session process supervisor. API skeleton: the bodies are being written.
//!
//! Flow of a process: `spawn` starts `<shell> -c <command>` in its own session and process group
//! (stdin closed, stdout and stderr on one pipe, the TOOLS.md environment plus the markers), a
//! drain thread reads the pipe into the [`Proc`]'s head+tail buffer (and log file for background
//! processes) as fast as it is written, and the exit is observed through a pidfd. `stop` sends
//! SIGTERM to the group and to every marked descendant, waits the grace period, SIGKILLs what is
//! left (freezing fork loops first), reaps, and verifies that nothing marked survives.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use hands_core::Session;

use crate::ExecConfig;

/// What kind of process this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A bash call: the call waits for it.
    Foreground,
    /// Runs until stopped (dev servers).
    Daemon,
    /// Finishes by itself; its exit is announced to the session.
    LongRun,
}

/// How to start a process.
#[derive(Debug, Clone)]
pub struct SpawnSpec {
    /// The shell command line.
    pub command: String,
    /// Foreground, daemon or long-run.
    pub kind: Kind,
    /// A name for people (defaults to the command).
    pub name: Option<String>,
    /// Working directory (the project root).
    pub cwd: PathBuf,
    /// Bytes of output kept in memory: the first `head` and the last `tail`.
    pub head: usize,
    /// See `head`.
    pub tail: usize,
    /// Write the output to a capped log file under `.hands/processes/` too.
    pub log: bool,
}

/// Where a process is in its life.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum Status {
    /// Still running.
    Running,
    /// The main process exited by itself.
    Exited {
        /// Its exit code, when it exited normally.
        code: Option<i32>,
        /// The signal that ended it, if any.
        signal: Option<i32>,
    },
    /// Stopped by hands (stop_process, timeout, abort, session end).
    Stopped {
        /// Why: "stopped", "timeout", "aborted", "session ended".
        reason: String,
    },
}

/// What a stop did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct StopReport {
    /// Processes that got SIGTERM.
    pub terminated: usize,
    /// Processes still alive after the grace period that got SIGKILL.
    pub killed: usize,
    /// Marked processes still alive after everything (should be 0).
    pub survivors: usize,
}

/// Output of a process as kept: head, tail, and how much was dropped between them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// The first bytes.
    pub head: Vec<u8>,
    /// The last bytes (not overlapping `head`).
    pub tail: Vec<u8>,
    /// Bytes produced in all.
    pub total: u64,
    /// Bytes between head and tail that were not kept.
    pub dropped: u64,
}

/// One supervised process.
#[derive(Debug)]
pub struct Proc {
    /// Short id, unique in the session (`p1`, `p2`, …).
    pub id: String,
    /// Pid of the shell (also its process group and session id).
    pub pid: u32,
    /// Foreground, daemon or long-run.
    pub kind: Kind,
    /// Name for people.
    pub name: String,
    /// The command line.
    pub command: String,
    /// When it started.
    pub started: Instant,
    /// When it started, wall clock.
    pub started_at: SystemTime,
}

impl Proc {
    /// Where it is now.
    pub fn status(&self) -> Status {
        Status::Running
    }

    /// Wait until the main process has exited (not necessarily its descendants).
    pub async fn wait_exit(&self) -> Status {
        self.status()
    }

    /// Wait until every writer of the output pipe is gone and the output is fully drained.
    pub async fn wait_drained(&self) {}

    /// The output kept so far.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::default()
    }

    /// Output bytes after byte offset `cursor` that are still in memory, the new cursor (= total
    /// produced), and how many bytes after `cursor` were dropped before they could be read.
    pub fn read_since(&self, cursor: u64) -> (Vec<u8>, u64, u64) {
        (Vec::new(), cursor, 0)
    }

    /// A receiver that changes whenever output arrives or the process exits (for readiness checks).
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        tokio::sync::watch::channel(0).1
    }

    /// Pids of the process and all its live descendants, including those that escaped the group
    /// (found by their marker).
    pub fn pids(&self) -> Vec<u32> {
        vec![self.pid]
    }

    /// Path of the log file relative to the root, for background processes.
    pub fn log_path(&self) -> Option<String> {
        None
    }

    /// Stop the process and every descendant: SIGTERM, `grace`, SIGKILL, reap, verify.
    pub async fn stop(&self, reason: &str, grace: Duration) -> StopReport {
        let _ = (reason, grace);
        StopReport::default()
    }
}

/// The processes of one session.
#[derive(Debug)]
pub struct Supervisor {
    config: ExecConfig,
}

impl Supervisor {
    /// The session's supervisor, created on first use; it stops every process when the session
    /// closes.
    pub fn of(session: &Session, config: &ExecConfig) -> Arc<Supervisor> {
        let _ = session;
        Arc::new(Supervisor { config: config.clone() })
    }

    /// Start a process.
    pub fn spawn(&self, spec: SpawnSpec) -> std::io::Result<Arc<Proc>> {
        let _ = (spec, &self.config);
        Err(std::io::Error::other("not implemented yet"))
    }

    /// The process with this id.
    pub fn get(&self, id: &str) -> Option<Arc<Proc>> {
        let _ = id;
        None
    }

    /// Every background process, oldest first (foreground ones are not listed).
    pub fn list(&self) -> Vec<Arc<Proc>> {
        Vec::new()
    }

    /// Background processes that are still running.
    pub fn running(&self) -> usize {
        0
    }

    /// Stop every process, newest first.
    pub async fn stop_all(&self, reason: &str) {
        let _ = reason;
    }
}
