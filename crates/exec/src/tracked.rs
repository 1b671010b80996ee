//! The children the supervisor started and has not reaped yet: reaping and the /proc scan leave
//! them alone (their exit status belongs to their watcher).

use std::collections::HashSet;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Pids of the children the supervisor started and has not reaped yet.
static TRACKED: Mutex<Option<HashSet<i32>>> = Mutex::new(None);

/// The tracked set, locked.
pub(crate) fn tracked() -> MutexGuard<'static, Option<HashSet<i32>>> {
    TRACKED.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Register a child (call with the guard held across its spawn).
pub(crate) fn track(guard: &mut MutexGuard<'static, Option<HashSet<i32>>>, pid: i32) {
    guard.get_or_insert_with(HashSet::new).insert(pid);
}

/// True while the supervisor tracks `pid` as one of the children it started.
pub(crate) fn is_tracked(pid: i32) -> bool {
    tracked().as_ref().is_some_and(|set| set.contains(&pid))
}

/// Forget a child once it is reaped.
pub(crate) fn untrack(pid: i32) {
    if let Some(set) = tracked().as_mut() {
        set.remove(&pid);
    }
}
