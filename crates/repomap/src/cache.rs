//! Tags cached by file content, for the life of the process: a file whose content (with its
//! language) hashes the same is never parsed twice, whatever its path or session. A second index by
//! path, size and modification time lets an unchanged file skip even the read and the hash; a file
//! rewritten with the same size in the same nanosecond would be missed, which the kernel's
//! timestamps make rare enough for a map (the content index is what guarantees correctness
//! otherwise). Both indexes are bounded: past [`MAX_ENTRIES`] they start over.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::SystemTime;

use sha2::{Digest, Sha256};

use crate::lang::Lang;
use crate::tags::FileTags;

/// Entries kept in each index at most.
const MAX_ENTRIES: usize = 200_000;

/// A content digest (language name, then the bytes).
pub(crate) type ContentKey = [u8; 32];

#[derive(Default)]
struct Indexes {
    by_stat: HashMap<PathBuf, (u64, SystemTime, ContentKey)>,
    by_content: HashMap<ContentKey, Arc<FileTags>>,
}

fn indexes() -> std::sync::MutexGuard<'static, Indexes> {
    static CACHE: OnceLock<Mutex<Indexes>> = OnceLock::new();
    CACHE.get_or_init(Mutex::default).lock().unwrap_or_else(PoisonError::into_inner)
}

/// The key of `source` read as `lang`.
pub(crate) fn key(lang: Lang, source: &[u8]) -> ContentKey {
    let mut hash = Sha256::new();
    hash.update(lang.name().as_bytes());
    hash.update([0]);
    hash.update(source);
    hash.finalize().into()
}

/// The tags (and content key) of the file at `path` if it has the size and time it had when
/// they were stored.
pub(crate) fn by_stat(
    path: &Path,
    len: u64,
    modified: SystemTime,
) -> Option<(Arc<FileTags>, ContentKey)> {
    let cache = indexes();
    let (l, m, key) = cache.by_stat.get(path)?;
    if *l != len || *m != modified || modified == SystemTime::UNIX_EPOCH {
        return None;
    }
    cache.by_content.get(key).map(|tags| (Arc::clone(tags), *key))
}

/// The tags of content `key`, if it was parsed before.
pub(crate) fn by_content(key: &ContentKey) -> Option<Arc<FileTags>> {
    indexes().by_content.get(key).cloned()
}

/// Remember `tags` for content `key`, found at `path` with that size and time.
pub(crate) fn store(
    path: PathBuf,
    len: u64,
    modified: SystemTime,
    key: ContentKey,
    tags: &Arc<FileTags>,
) {
    let mut cache = indexes();
    if cache.by_stat.len() >= MAX_ENTRIES || cache.by_content.len() >= MAX_ENTRIES {
        *cache = Indexes::default();
    }
    cache.by_stat.insert(path, (len, modified, key));
    cache.by_content.entry(key).or_insert_with(|| Arc::clone(tags));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_and_stat_lookups() {
        let tags = Arc::new(FileTags::default());
        let path = PathBuf::from("/nowhere/cache-test/a.rs");
        let key = key(Lang::Rust, b"fn a() {}");
        assert_ne!(key, super::key(Lang::Go, b"fn a() {}"), "the language is part of the key");
        let when = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(100);
        store(path.clone(), 9, when, key, &tags);
        assert!(by_content(&key).is_some());
        assert_eq!(by_stat(&path, 9, when).map(|(_, k)| k), Some(key));
        assert!(by_stat(&path, 10, when).is_none(), "another size is another file");
        assert!(by_stat(&path, 9, SystemTime::UNIX_EPOCH).is_none());
    }
}
