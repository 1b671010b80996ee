//! Whole maps remembered by everything they were made of: an unchanged folder asked for with the
//! same budget and focus gets the map it got before without ranking again (the ranking, not the
//! walk, is the costly part of a warm call). The last [`MAPS`] maps are kept.

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use sha2::{Digest, Sha256};

use crate::cache::ContentKey;
use crate::collect::Collected;
use crate::render::RepoMapResult;

/// The maps kept, oldest first.
type Maps = Vec<(ContentKey, Arc<Made>)>;

fn maps() -> MutexGuard<'static, Maps> {
    static MAPS_KEPT: OnceLock<Mutex<Maps>> = OnceLock::new();
    MAPS_KEPT.get_or_init(Mutex::default).lock().unwrap_or_else(PoisonError::into_inner)
}

/// Whole maps kept.
const MAPS: usize = 16;

/// A map as rendered: its text and structured result.
pub(crate) type Made = (String, RepoMapResult);

/// The key of a map: its root, folder, budget, focus and every source file's path and content,
/// so that a map is made again as soon as any of them differs.
pub(crate) fn map_key(
    root: &Path,
    collected: &Collected,
    max_tokens: usize,
    focus: &[usize],
) -> ContentKey {
    let mut hash = Sha256::new();
    hash.update(root.as_os_str().as_encoded_bytes());
    hash.update([0]);
    hash.update(collected.start.as_bytes());
    hash.update([0]);
    hash.update(max_tokens.to_le_bytes());
    for f in focus {
        hash.update(f.to_le_bytes());
    }
    hash.update([0xff]);
    for source in &collected.sources {
        hash.update(source.rel.as_bytes());
        hash.update([0]);
        hash.update(source.key);
    }
    hash.update(collected.other_files.to_le_bytes());
    for (path, why) in &collected.skipped {
        hash.update(path.as_bytes());
        hash.update(why.as_bytes());
    }
    hash.update(collected.more.to_le_bytes());
    hash.finalize().into()
}

/// The map made from `key`, if it is still kept.
pub(crate) fn map(key: &ContentKey) -> Option<Arc<Made>> {
    maps().iter().find(|(k, _)| k == key).map(|(_, made)| Arc::clone(made))
}

/// Keep `made` as the map of `key`.
pub(crate) fn store_map(key: ContentKey, made: Arc<Made>) {
    let mut maps = maps();
    maps.retain(|(k, _)| *k != key);
    if maps.len() >= MAPS {
        maps.remove(0);
    }
    maps.push((key, made));
}
