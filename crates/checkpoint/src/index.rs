//! The stat index: for each file of the last snapshot, the stats that decide whether it must be
//! read again (size, mtime, ctime, inode, mode) and its object id, as git's index keeps them.
//!
//! It is a cache: a missing or unreadable index only means every file is read once more. It is
//! kept in a plain line format (`oid size mtime ctime ino mode path\0`, one per file) because it
//! is read and written whole at every checkpoint: JSON for 20,000 files costs several times more.

use std::collections::HashMap;
use std::fs;
use std::path::Path;

use crate::error::{Error, IoContext};

const HEADER: &str = "hands-checkpoint-index 1\n";

/// The stats that decide whether a file must be read again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stat {
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
    ino: u64,
    mode: u32,
}

impl Stat {
    /// The stats of an `lstat` or `fstat` (never of a path's `stat`, which follows links).
    pub(crate) fn of(st: &rustix::fs::Stat) -> Self {
        let ns = |s: i128, n: i128| s * 1_000_000_000 + n;
        Self {
            size: u64::try_from(st.st_size).unwrap_or(0),
            mtime_ns: ns(st.st_mtime.into(), st.st_mtime_nsec.into()),
            ctime_ns: ns(st.st_ctime.into(), st.st_ctime_nsec.into()),
            #[allow(clippy::useless_conversion)]
            ino: st.st_ino.into(),
            mode: st.st_mode,
        }
    }

    /// The size in bytes.
    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    /// The later of the content's and the inode's last change, in ns since the epoch.
    pub(crate) fn changed_ns(&self) -> i128 {
        self.mtime_ns.max(self.ctime_ns)
    }
}

/// Relative path → (stats, object id).
pub(crate) type Index = HashMap<String, (Stat, String)>;

/// The index at `path` (empty when absent or unreadable).
pub(crate) fn load(path: &Path) -> Index {
    let Ok(bytes) = fs::read(path) else { return Index::new() };
    let Some(body) = bytes.strip_prefix(HEADER.as_bytes()) else { return Index::new() };
    let mut index = Index::with_capacity(body.len() / 120);
    for record in body.split(|b| *b == 0).filter(|r| !r.is_empty()) {
        let Some((key, value)) = parse(record) else { return Index::new() };
        index.insert(key, value);
    }
    index
}

fn parse(record: &[u8]) -> Option<(String, (Stat, String))> {
    let text = std::str::from_utf8(record).ok()?;
    let mut parts = text.splitn(7, ' ');
    let oid = parts.next()?.to_string();
    let stat = Stat {
        size: parts.next()?.parse().ok()?,
        mtime_ns: parts.next()?.parse().ok()?,
        ctime_ns: parts.next()?.parse().ok()?,
        ino: parts.next()?.parse().ok()?,
        mode: parts.next()?.parse().ok()?,
    };
    Some((parts.next()?.to_string(), (stat, oid)))
}

/// Writes `index` to `path` (temporary file and rename: a crash leaves the old or the new one).
pub(crate) fn save(path: &Path, index: &Index) -> Result<(), Error> {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(HEADER.len() + index.len() * 120);
    out.push_str(HEADER);
    // A path with a name that is not UTF-8 holds a NUL in its stored form (see `crate::names`),
    // the records' separator: such files are left out, and read again by each snapshot.
    for (rel, (s, oid)) in index.iter().filter(|(rel, _)| !rel.contains('\0')) {
        let _ = write!(
            out,
            "{oid} {} {} {} {} {} {rel}\0",
            s.size, s.mtime_ns, s.ctime_ns, s.ino, s.mode
        );
    }
    hands_dirs::write_private(path, out.as_bytes()).at(path)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn an_index_reads_back_and_a_damaged_one_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let meta = rustix::fs::stat(dir.path()).unwrap();
        let mut index = Index::new();
        index.insert("a b/c d.txt".into(), (Stat::of(&meta), "ab".repeat(32)));
        index.insert("x".into(), (Stat::of(&meta), "cd".repeat(32)));
        let path = dir.path().join("index");
        save(&path, &index).unwrap();
        assert_eq!(load(&path), index);
        fs::write(&path, "hands-checkpoint-index 1\nnot a record\0").unwrap();
        assert!(load(&path).is_empty());
        fs::write(&path, "{}").unwrap();
        assert!(load(&path).is_empty());
    }
}
