//! The object folder: each file content once, deflate-compressed, named by its sha256.
//!
//! An object is written to a temporary name and renamed into place, so a crash leaves either no
//! object or a whole one; a reader checks the hash, so a damaged object is reported, never restored.

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use flate2::Compression;
use flate2::read::DeflateDecoder;
use flate2::write::DeflateEncoder;
use sha2::{Digest, Sha256};

use crate::error::{Error, IoContext};

/// sha256 of `bytes`, lower-case hex.
pub(crate) fn hash(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for b in digest.iter() {
        out.push(char::from(b"0123456789abcdef"[usize::from(b >> 4)]));
        out.push(char::from(b"0123456789abcdef"[usize::from(b & 15)]));
    }
    out
}

/// The path of object `oid` under `objects`.
pub(crate) fn path(objects: &Path, oid: &str) -> PathBuf {
    let (a, b) = oid.split_at(oid.len().min(2));
    objects.join(a).join(b)
}

/// Stores `bytes` (whose hash is `oid`) unless already there; returns the compressed size written.
pub(crate) fn put(objects: &Path, oid: &str, bytes: &[u8]) -> Result<u64, Error> {
    let dest = path(objects, oid);
    if dest.exists() {
        return Ok(0);
    }
    let dir = dest.parent().unwrap_or(objects);
    hands_dirs::create_private_dir_all(dir).at(dir)?;
    // Unique per writer: two threads may store the same content at once (two empty files).
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let tmp = dir.join(format!(".tmp-{}-{n}", std::process::id()));
    let mut enc = DeflateEncoder::new(Vec::with_capacity(bytes.len() / 2), Compression::fast());
    enc.write_all(bytes).at(&tmp)?;
    let packed = enc.finish().at(&tmp)?;
    hands_dirs::create_private_file(&tmp).and_then(|mut f| f.write_all(&packed)).at(&tmp)?;
    fs::rename(&tmp, &dest).at(&dest)?;
    Ok(packed.len() as u64)
}

/// Reads object `oid` and checks its hash.
pub(crate) fn get(objects: &Path, oid: &str) -> Result<Vec<u8>, Error> {
    let src = path(objects, oid);
    let packed = fs::read(&src).map_err(|_| Error::BadObject(oid.to_string()))?;
    let mut out = Vec::new();
    DeflateDecoder::new(&packed[..])
        .read_to_end(&mut out)
        .map_err(|_| Error::BadObject(oid.to_string()))?;
    if hash(&out) != oid {
        return Err(Error::BadObject(oid.to_string()));
    }
    Ok(out)
}

/// Makes the objects `oids` durable: each file and each folder that holds one (`fsync`).
pub(crate) fn sync(objects: &Path, oids: &[String]) {
    let mut dirs = std::collections::BTreeSet::new();
    for oid in oids {
        let file = path(objects, oid);
        let _ = fs::File::open(&file).and_then(|f| f.sync_all());
        if let Some(dir) = file.parent() {
            dirs.insert(dir.to_path_buf());
        }
    }
    for dir in dirs {
        let _ = fs::File::open(&dir).and_then(|f| f.sync_all());
    }
}

/// Writes `bytes` to `path` (0600) through a temporary file, fsync and rename.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    hands_dirs::write_private(path, bytes).at(path)
}
