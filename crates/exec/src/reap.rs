//! hands as a child subreaper: orphans of our children (double forks, `nohup … &` after the shell
//! exited) are re-parented to hands instead of init, so that they can be found and reaped.
//!
//! Reaping must never steal the exit status of a child someone waits for. The children the
//! supervisor starts are registered in the tracked set (tracked.rs) (under the same lock that covers their spawn, so
//! a scan can never see one before it is registered) and are reaped through their pidfd. Other
//! children of hands (a `std::process::Command` of another crate) stay in hands' own session; an
//! orphan never does, because every supervised child starts a new session. So an orphan is a zombie
//! whose parent is us, that is not tracked, and whose session is not ours.

use std::sync::Once;

use rustix::process::{Pid, WaitOptions};

use crate::procfs;
use crate::tracked::tracked;

/// Become a child subreaper, once per process.
pub(crate) fn become_subreaper() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let me = rustix::process::getpid();
        if let Err(err) = rustix::process::set_child_subreaper(Some(me)) {
            tracing::warn!(%err, "could not become a child subreaper; orphans go to init");
        }
    });
}

/// Reap the orphans that died: zombies whose parent is us, not tracked, not of our session.
/// Returns how many were reaped.
pub(crate) fn reap_orphans() -> usize {
    let me = procfs::own_pid();
    let Some(own_sid) = procfs::stat(me).map(|s| s.sid) else { return 0 };
    let guard = tracked();
    let mut reaped = 0;
    // Our children come from the children files when the kernel has them (no scan of all /proc).
    let candidates = match procfs::children(me) {
        Some(kids) => kids.into_iter().filter_map(procfs::stat).collect(),
        None => procfs::all(),
    };
    for p in candidates {
        if p.ppid != me || !p.is_dead() || p.sid == own_sid {
            continue;
        }
        if guard.as_ref().is_some_and(|set| set.contains(&p.pid)) {
            continue;
        }
        let Some(pid) = Pid::from_raw(p.pid) else { continue };
        if let Ok(Some(_)) = rustix::process::waitpid(Some(pid), WaitOptions::NOHANG) {
            reaped += 1;
        }
    }
    reaped
}

/// Zombies whose parent is us (for tests and diagnostics).
pub fn zombie_children() -> Vec<u32> {
    let me = procfs::own_pid();
    procfs::all()
        .into_iter()
        .filter(|p| p.ppid == me && p.is_dead())
        .map(|p| p.pid.unsigned_abs())
        .collect()
}

/// Reap orphans now, coalescing concurrent requests: while one scan runs, further requests only
/// make it scan once more.
pub(crate) fn request_reap() {
    use std::sync::atomic::{AtomicBool, Ordering};
    static PENDING: AtomicBool = AtomicBool::new(false);
    static RUNNING: AtomicBool = AtomicBool::new(false);
    PENDING.store(true, Ordering::SeqCst);
    if RUNNING.swap(true, Ordering::SeqCst) {
        return;
    }
    loop {
        PENDING.store(false, Ordering::SeqCst);
        reap_orphans();
        RUNNING.store(false, Ordering::SeqCst);
        if !PENDING.load(Ordering::SeqCst) || RUNNING.swap(true, Ordering::SeqCst) {
            break;
        }
    }
}
