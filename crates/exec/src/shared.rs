//! The state a supervised process shares with its drain thread and its exit watcher (watch.rs):
//! output buffers, the life of the main process under one lock, and its record file.

use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use rustix::process::{Pid, WaitOptions};
use tokio::sync::watch;

use crate::output::{CappedLog, HeadTail};
use crate::tracked;

/// How the main process ended (also for a process hands stopped: then usually a signal).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Exit {
    /// Its exit code, when it exited normally.
    pub code: Option<i32>,
    /// The signal that ended it, if any.
    pub signal: Option<i32>,
}

/// Life of the main process, under one lock so that reaping and stopping never race.
#[derive(Debug, Default)]
pub(crate) struct Life {
    pub(crate) exit: Option<Exit>,
    pub(crate) reaped: bool,
    pub(crate) stopping: bool,
    pub(crate) stop_reason: Option<String>,
    /// The group already got its SIGTERM (an ordered shutdown's first step): a stop that follows
    /// does not send it again, since a second SIGTERM means "quit now" to some servers.
    pub(crate) group_termed: bool,
}

/// State shared with the drain thread and the exit watcher.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) output: Mutex<HeadTail>,
    pub(crate) log: Mutex<Option<CappedLog>>,
    pub(crate) progress: watch::Sender<u64>,
    pub(crate) drained: watch::Sender<bool>,
    pub(crate) exited: watch::Sender<bool>,
    pub(crate) life: Mutex<Life>,
    pub(crate) record: Mutex<Option<PathBuf>>,
    /// The emulated screen of a terminal session.
    pub(crate) screen: Option<std::sync::Arc<crate::terminal::Screen>>,
}

impl Shared {
    pub(crate) fn life(&self) -> std::sync::MutexGuard<'_, Life> {
        self.life.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Reap the main process if it has exited and nobody else will; true once it is reaped.
    pub(crate) fn reap_main(&self, pid: i32, life: &mut Life) -> bool {
        if life.reaped {
            return true;
        }
        let Some(raw) = Pid::from_raw(pid) else { return false };
        match rustix::process::waitpid(Some(raw), WaitOptions::NOHANG) {
            Ok(Some((_, status))) => {
                life.exit.get_or_insert(Exit {
                    code: status.exit_status(),
                    signal: status.terminating_signal(),
                });
                life.reaped = true;
            }
            Ok(None) => return false,
            // ECHILD: already reaped (cannot happen while tracked, but never loop on it).
            Err(_) => life.reaped = true,
        }
        tracked::untrack(pid);
        self.exited.send_replace(true);
        self.progress.send_modify(|_| {});
        true
    }
}

/// Remove the process's record file (it ended; nothing is left to stop after a crash).
pub(crate) fn remove_record(shared: &Shared) {
    if let Some(path) = shared.record.lock().unwrap_or_else(PoisonError::into_inner).take() {
        let _ = std::fs::remove_file(path);
    }
}
