//! Keeping the preview on its dev server. When the server the page comes from ends while the
//! preview runs — the preview's own one crashing, or the agent's process it attached to being
//! stopped or exiting — the preview says so (a crash in the collector, stage `error`, the message
//! in `lastError`) and then brings itself back without preview_open, so that the user sees the
//! app again:
//!
//! - the agent's server: the preview looks for a new process of the agent's that is the
//!   project's dev server (attach.rs; e.g. after stop_process and spawn_process, on any port),
//!   for up to [`WAIT`]; when one comes, the preview restarts on it. It never starts a server of
//!   its own for a server the agent stopped (preview_open, or the UI's Start, does).
//! - its own server: after a short backoff the preview starts again (on the agent's dev server if
//!   one runs by then), at most [`MAX_RESTARTS`] times in a row; a server that ran for
//!   [`STABLE`] before it crashed starts the count again.
//!
//! A restart is a full one under the `op` lock (the page's origin may change, and the browser's
//! proxy bypass is fixed at its start), so the page loads afresh; what was collected stays. A
//! close, an open or the end of the session cancels the running preview's token, which ends the
//! wait.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use hands_exec::Proc;
use tokio_util::sync::CancellationToken;

use crate::attach;
use crate::collector::{ErrorKind, Occurrence};
use crate::launch::describe;
use crate::preview::{Preview, ServerHandle, label};

/// How often the session's processes are looked through for the agent's new dev server.
const POLL: Duration = Duration::from_millis(250);
/// How long a preview whose agent's server ended waits for a new one.
const WAIT: Duration = Duration::from_secs(600);
/// Automatic restarts of the preview's own server in a row.
const MAX_RESTARTS: u32 = 3;
/// A server that ran this long before it crashed is not crashing in a loop.
const STABLE: Duration = Duration::from_secs(30);
/// The first backoff before the preview's own server is started again (doubled each time).
const BACKOFF: Duration = Duration::from_millis(500);

/// Watch `server` (`attached`: the agent's process, else the preview's own) until the running
/// preview's `stop` fires; follow it as the module docs say when it ends first.
pub(crate) fn spawn(
    preview: &Arc<Preview>,
    server: Arc<Proc>,
    attached: bool,
    stop: &CancellationToken,
) {
    let weak = Arc::downgrade(preview);
    let stop = stop.clone();
    tokio::spawn(async move {
        let status = tokio::select! {
            status = server.wait_exit() => status,
            () = stop.cancelled() => return,
        };
        // A teardown fires the token before it stops the server: that end is no crash.
        if stop.is_cancelled() {
            return;
        }
        let Some(preview) = weak.upgrade() else { return };
        let restarts = if attached {
            0
        } else {
            if server.started.elapsed() >= STABLE {
                preview.restarts.store(0, Ordering::SeqCst);
            }
            preview.restarts.load(Ordering::SeqCst)
        };
        let message = if attached {
            format!(
                "The dev server {} that the preview was attached to {}; the preview is down. It \
                 attaches again when the agent starts the dev server anew (for up to {} minutes) \
                 and reloads the page; preview_open starts the preview's own server now.",
                label(&server),
                describe(&status),
                WAIT.as_secs() / 60
            )
        } else if restarts < MAX_RESTARTS {
            format!(
                "The preview server {} while the preview was running; the preview starts it \
                 again (restart {} of {MAX_RESTARTS}).{}",
                describe(&status),
                restarts + 1,
                output(&server)
            )
        } else {
            format!(
                "The preview server {} while the preview was running, after {MAX_RESTARTS} \
                 restarts in a row; the preview is down. Fix the cause and call preview_open.{}",
                describe(&status),
                output(&server)
            )
        };
        preview.errors.record(
            ErrorKind::Crash,
            Occurrence { message: message.clone(), location: None, stack: Vec::new() },
        );
        preview.fail(message);
        if attached {
            let exclude = own_ids(&preview);
            drop(preview);
            let waited = tokio::time::timeout(WAIT, async {
                loop {
                    tokio::select! {
                        () = tokio::time::sleep(POLL) => {}
                        () = stop.cancelled() => return false,
                    }
                    let Some(preview) = weak.upgrade() else { return false };
                    let plan = preview.running().as_ref().map(|r| r.plan.clone());
                    let Some(plan) = plan else { return false };
                    if attach::find(&preview.supervisor, &preview.root, &plan, &exclude).is_some() {
                        return true;
                    }
                }
            })
            .await;
            match waited {
                Ok(true) => {}
                Ok(false) => return,
                Err(_) => {
                    if let Some(preview) = weak.upgrade()
                        && !stop.is_cancelled()
                    {
                        preview.fail(format!(
                            "The dev server {} that the preview was attached to {}, and no new \
                             one came within {} minutes; the preview is down. Call preview_open.",
                            label(&server),
                            describe(&status),
                            WAIT.as_secs() / 60
                        ));
                    }
                    return;
                }
            }
        } else {
            if restarts >= MAX_RESTARTS {
                return;
            }
            drop(preview);
            tokio::select! {
                () = tokio::time::sleep(BACKOFF * 2u32.pow(restarts)) => {}
                () = stop.cancelled() => return,
            }
        }
        let Some(preview) = weak.upgrade() else { return };
        preview.follow(&stop, !attached).await;
    });
}

/// The ids of the processes the running preview started (never the agent's).
fn own_ids(preview: &Preview) -> Vec<String> {
    let running = preview.running();
    let Some(running) = running.as_ref() else { return Vec::new() };
    let server = match &running.server {
        Some(ServerHandle::Process(proc)) => Some(proc.id.clone()),
        _ => None,
    };
    server.into_iter().chain(running.browser.as_ref().map(|b| b.id.clone())).collect()
}

/// " Its output: <log>." when the process kept a log.
fn output(proc: &Proc) -> String {
    proc.log_path().map_or(String::new(), |log| format!(" Its output: {log}."))
}

impl Preview {
    /// Start again on the new server, unless the preview was closed or opened since `stop`'s
    /// preview ended (`own`: a restart of the preview's own server, which counts).
    async fn follow(self: &Arc<Self>, stop: &CancellationToken, own: bool) {
        let _op = self.op.lock().await;
        if stop.is_cancelled() {
            return;
        }
        if own {
            self.restarts.fetch_add(1, Ordering::SeqCst);
        }
        // Its own token: this task's ends with the teardown. A close cancels the new preview's.
        let _ = self.restart(&CancellationToken::new(), "following the dev server").await;
    }
}
