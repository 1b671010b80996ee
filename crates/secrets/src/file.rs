//! One scope's file: `{"root": "/canonical/root" | null, "secrets": {"NAME": "value"},
//! "hosts": {"NAME": "api.example.com"}}` (`hosts` optional), written
//! atomically (a 0600 temp file in the same folder, fsync, rename, fsync of the folder): a crash
//! leaves the old file or the new one, never half of one.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

/// The contents of one scope's file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ScopeFile {
    /// The project's canonical root; none for the global scope.
    #[serde(default)]
    pub root: Option<String>,
    /// Name → value.
    #[serde(default)]
    pub secrets: BTreeMap<String, String>,
    /// Name → the one host its value may be sent to by a connector (absent in older files).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub hosts: BTreeMap<String, String>,
}

/// Make `dir` (and the folders above it that are missing) 0700; an existing `dir` is made 0700.
pub(crate) fn private_dir(dir: &Path) -> std::io::Result<()> {
    hands_dirs::private_dir(dir)
}

/// Read `path`; `None` when it does not exist.
pub(crate) fn read(path: &Path) -> std::io::Result<Option<ScopeFile>> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Write `file` to `path` atomically, or remove `path` when `file` holds no secret.
pub(crate) fn write(path: &Path, file: &ScopeFile) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    private_dir(dir)?;
    if file.secrets.is_empty() {
        match std::fs::remove_file(path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        return sync_dir(dir);
    }
    let json = serde_json::to_vec_pretty(file)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    let tmp = temp_path(path);
    let result = (|| {
        // 0600 from creation: the value is never in a file anyone else may read, even briefly.
        let mut out = hands_dirs::create_private_file(&tmp)?;
        out.write_all(&json)?;
        out.write_all(b"\n")?;
        out.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result?;
    sync_dir(dir)
}

fn temp_path(path: &Path) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("scope");
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    path.with_file_name(format!(".{name}.{}.{n}.tmp", std::process::id()))
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}
