//! The host's std mutexes: a panic while one was held leaves data that is still consistent (every
//! critical section is a single insert, remove or replace), so a poisoned lock is used as it is.

use std::sync::{Mutex, MutexGuard, PoisonError};

pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
