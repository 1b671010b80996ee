//! Locks between processes and threads, on files of the store (`flock`, released when the guard
//! is dropped or the process dies, so a SIGKILL never leaves one behind).
//!
//! - `store.lock`: shared by snapshots and restores, exclusive for gc, so that a sweep never
//!   removes the objects of a snapshot that is being written (they are not referred to yet).
//! - `turns.lock`: shared by every running turn (of any session and process on the project),
//!   exclusive for a restore, which is refused while a turn runs.

use std::fs::File;
use std::path::Path;

use rustix::fs::{FlockOperation, flock};

use crate::error::{Error, IoContext};

/// A held lock.
#[derive(Debug)]
pub struct Flock {
    _file: File,
}

fn open(path: &Path) -> Result<File, Error> {
    hands_dirs::private_options().open(path).at(path)
}

fn take(path: &Path, op: FlockOperation) -> Result<Flock, Error> {
    let file = open(path)?;
    loop {
        match flock(&file, op) {
            Ok(()) => return Ok(Flock { _file: file }),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(Error::Io { path: path.to_path_buf(), source: e.into() }),
        }
    }
}

/// Waits for a shared lock on `path`.
pub(crate) fn shared(path: &Path) -> Result<Flock, Error> {
    take(path, FlockOperation::LockShared)
}

/// Waits for the exclusive lock on `path`.
pub(crate) fn exclusive(path: &Path) -> Result<Flock, Error> {
    take(path, FlockOperation::LockExclusive)
}

/// The exclusive lock on `path` if nobody holds it now; `None` when somebody does.
pub(crate) fn try_exclusive(path: &Path) -> Result<Option<Flock>, Error> {
    match take(path, FlockOperation::NonBlockingLockExclusive) {
        Ok(lock) => Ok(Some(lock)),
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::WouldBlock => {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Held by a running turn: while any exists, restores of the project are refused.
#[derive(Debug)]
pub struct TurnGuard {
    pub(crate) _lock: Flock,
}
