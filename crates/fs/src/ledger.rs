//! The ledger: what this session last saw of each file it read or wrote (mtime, size, and a content
//! hash when the whole content passed through). write_file's stale-write guard compares the file on
//! disk with it. It lives in the session as an extension, so it lasts as long as the session.
//!
//! For small files it also keeps the content itself, so that edit_file and apply_patch can show
//! which lines changed on disk since the read (a formatter, an editor's autosave). That memory is
//! bounded: only files up to [`KEEP_FILE_BYTES`] are kept, at most [`KEEP_TOTAL_BYTES`] in all, the
//! oldest dropped first.

use std::collections::{HashMap, VecDeque};
use std::hash::{DefaultHasher, Hasher};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use crate::RelPath;

/// The largest file whose content the ledger keeps.
pub const KEEP_FILE_BYTES: usize = 256 * 1024;

/// The most content the ledger keeps in all, over every file.
pub const KEEP_TOTAL_BYTES: usize = 8 * 1024 * 1024;

/// What this session has seen of each file (for the stale-write guard).
#[derive(Debug, Default)]
pub struct Ledger {
    seen: Mutex<HashMap<RelPath, Seen>>,
    kept: Mutex<Kept>,
}

/// The content kept of small files, oldest first.
#[derive(Debug, Default)]
struct Kept {
    texts: HashMap<RelPath, Arc<[u8]>>,
    order: VecDeque<RelPath>,
    total: usize,
}

impl Kept {
    fn remove(&mut self, path: &RelPath) {
        if let Some(old) = self.texts.remove(path) {
            self.total -= old.len();
            self.order.retain(|p| p != path);
        }
    }

    fn insert(&mut self, path: &RelPath, bytes: &[u8]) {
        self.remove(path);
        if bytes.len() > KEEP_FILE_BYTES {
            return;
        }
        while self.total + bytes.len() > KEEP_TOTAL_BYTES {
            let Some(oldest) = self.order.pop_front() else { break };
            if let Some(old) = self.texts.remove(&oldest) {
                self.total -= old.len();
            }
        }
        self.total += bytes.len();
        self.texts.insert(path.clone(), Arc::from(bytes));
        self.order.push_back(path.clone());
    }
}

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
    /// Remember `seen` for `path` (its content was not in hand: any content kept is dropped).
    pub fn record(&self, path: &RelPath, seen: Seen) {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner).insert(path.clone(), seen);
        self.kept.lock().unwrap_or_else(PoisonError::into_inner).remove(path);
    }

    /// Remember `seen` for `path` and its whole content `bytes` (kept when small, see the module
    /// docs).
    pub fn record_content(&self, path: &RelPath, seen: Seen, bytes: &[u8]) {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner).insert(path.clone(), seen);
        self.kept.lock().unwrap_or_else(PoisonError::into_inner).insert(path, bytes);
    }

    /// Forget `path` (the session deleted it).
    pub fn forget(&self, path: &RelPath) {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner).remove(path);
        self.kept.lock().unwrap_or_else(PoisonError::into_inner).remove(path);
    }

    /// What was last seen of `path`, if this session read or wrote it.
    pub fn get(&self, path: &RelPath) -> Option<Seen> {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner).get(path).copied()
    }

    /// The content of `path` as last seen, when it was kept.
    pub fn content(&self, path: &RelPath) -> Option<Arc<[u8]>> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner).texts.get(path).cloned()
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

    #[test]
    fn content_is_kept_for_small_files_within_a_total() {
        let ws = crate::Workspace::open(std::path::Path::new("/")).unwrap();
        let ledger = Ledger::default();
        let a = ws.resolve("path", "a").unwrap();
        ledger.record_content(&a, seen(3, 1, None), b"abc");
        assert_eq!(ledger.content(&a).as_deref(), Some(&b"abc"[..]));
        // A record without content drops what was kept; forget drops everything.
        ledger.record(&a, seen(3, 2, None));
        assert!(ledger.content(&a).is_none());
        let big = vec![b'x'; KEEP_FILE_BYTES + 1];
        ledger.record_content(&a, seen(big.len() as u64, 1, None), &big);
        assert!(ledger.content(&a).is_none() && ledger.get(&a).is_some());
        ledger.forget(&a);
        assert!(ledger.get(&a).is_none());
        // Filling past the total drops the oldest first.
        let file = vec![b'y'; KEEP_FILE_BYTES];
        let count = KEEP_TOTAL_BYTES / KEEP_FILE_BYTES + 1;
        let paths: Vec<RelPath> =
            (0..count).map(|i| ws.resolve("path", &format!("f{i}")).unwrap()).collect();
        for path in &paths {
            ledger.record_content(path, seen(1, 1, None), &file);
        }
        assert!(ledger.content(&paths[0]).is_none());
        assert!(ledger.content(&paths[count - 1]).is_some());
        assert!(ledger.kept.lock().unwrap().total <= KEEP_TOTAL_BYTES);
    }
}
