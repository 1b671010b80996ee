//! Ids and times of sessions, turns and calls.

use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

pub(super) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A fresh id: `prefix-<ms, hex>-<counter><random>`, unique across processes in practice.
pub(super) fn fresh_id(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(n);
    hasher.write_u32(std::process::id());
    let random = hasher.finish() as u32;
    format!("{prefix}-{:x}-{n:x}{random:08x}", now_ms())
}

pub(super) fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_ids_differ_and_are_valid() {
        let a = fresh_id("s");
        let b = fresh_id("s");
        assert_ne!(a, b);
        assert!(valid_id(&a), "{a}");
        assert!(!valid_id("a/b") && !valid_id(""));
    }
}
