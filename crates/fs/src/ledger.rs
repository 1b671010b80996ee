//! The ledger: what this session last saw of each file it read or wrote (mtime, size, and a content
//! hash when the whole content passed through). write_file's stale-write guard compares the file on
//! disk with it. It lives in the session as an extension, so it lasts as long as the session.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hasher};
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use crate::RelPath;

/// What this session has seen of each file (for the stale-write guard).
#[derive(Debug, Default)]
pub struct Ledger(Mutex<HashMap<RelPath, Seen>>);

/// One file as the session last saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    /// Modification time, where the file system has one.
    pub mtime: Option<SystemTime>,
    /// Size in bytes.
    pub size: u64,
    /// [`content_hash`] of the whole content, when the session had all of it in hand.
    pub hash: Option<u64>,
}

impl Seen {
    /// From a file's metadata and, when known, its content hash.
    pub fn new(meta: &cap_std::fs::Metadata, hash: Option<u64>) -> Self {
        Self {
            mtime: meta.modified().ok().map(cap_std::time::SystemTime::into_std),
            size: meta.len(),
            hash,
        }
    }

    /// True when `now` (the file on disk) differs from what was seen. `current_hash` is asked for only
    /// when a hash was recorded and the sizes agree: a hash beats mtimes, whose clock is coarse
    /// enough for a quick rewrite to keep the same one, and a mere `touch` is not a change.
    pub fn is_stale(&self, now: &Seen, current_hash: impl FnOnce() -> Option<u64>) -> bool {
        if self.size != now.size {
            return true;
        }
        match self.hash {
            Some(hash) => current_hash() != Some(hash),
            None => self.mtime != now.mtime,
        }
    }
}

impl Ledger {
    /// Remember `seen` for `path`.
    pub fn record(&self, path: &RelPath, seen: Seen) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).insert(path.clone(), seen);
    }

    /// What was last seen of `path`, if this session read or wrote it.
    pub fn get(&self, path: &RelPath) -> Option<Seen> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).get(path).copied()
    }
}

/// A fast, in-process content hash (SipHash with fixed keys; never persisted).
pub fn content_hash(bytes: &[u8]) -> u64 {
    let mut hasher = DefaultHasher::new();
    hasher.write(bytes);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(size: u64, secs: u64, hash: Option<u64>) -> Seen {
        let mtime = Some(SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(secs));
        Seen { mtime, size, hash }
    }

    #[test]
    fn size_or_mtime_change_is_stale_without_hash() {
        let old = seen(10, 1, None);
        assert!(!old.is_stale(&seen(10, 1, None), || None));
        assert!(old.is_stale(&seen(11, 1, None), || None));
        assert!(old.is_stale(&seen(10, 2, None), || None));
    }

    #[test]
    fn hash_decides_when_recorded() {
        let old = seen(3, 1, Some(content_hash(b"abc")));
        // Same mtime, same size, other bytes: stale.
        assert!(old.is_stale(&seen(3, 1, None), || Some(content_hash(b"abd"))));
        // Touched only: not stale.
        assert!(!old.is_stale(&seen(3, 9, None), || Some(content_hash(b"abc"))));
    }

    #[test]
    fn ledger_records_per_path() {
        let ws = crate::Workspace::open(std::path::Path::new("/")).unwrap();
        let a = ws.resolve("path", "a").unwrap();
        let ledger = Ledger::default();
        assert!(ledger.get(&a).is_none());
        ledger.record(&a, seen(1, 1, None));
        assert_eq!(ledger.get(&a), Some(seen(1, 1, None)));
        assert!(ledger.get(&ws.resolve("path", "b").unwrap()).is_none());
    }
}
