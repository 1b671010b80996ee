//! The discovery file (`.hands/devtools.json`, or `.bricks/devtools.json` in bricks mode): how other
//! tools find the preview's browser. Written atomically — a temporary file in the same folder,
//! fsync, rename — through a handle on the project root, so that a path with `..` or a symlinked
//! folder cannot send it outside the project. The file is 0600: the DevTools endpoint it names is
//! reachable with the secret in its path only, and that is for the user's own tools.

use std::io::Write as _;
use std::path::{Component, Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::{Dir, OpenOptions, OpenOptionsExt as _};
use serde::Serialize;

/// Version of the file's format.
pub const VERSION: u32 = 1;

/// What the file holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Discovery {
    /// Format version.
    pub version: u32,
    /// Pid of the hands process that owns the preview.
    pub pid: u32,
    /// Pid of the browser.
    pub browser_pid: u32,
    /// The browser's DevTools port (on 127.0.0.1).
    pub cdp_port: u16,
    /// The browser's DevTools WebSocket endpoint.
    pub browser_ws_endpoint: String,
    /// The page target the preview drives.
    pub target_id: String,
    /// The page's URL.
    pub preview_url: String,
    /// The preview's stage.
    pub stage: String,
    /// When the preview started (RFC 3339, UTC).
    pub started_at: String,
}

/// `rel` as a path that stays beneath the root (no `..`, not absolute).
fn confined(rel: &str) -> std::io::Result<PathBuf> {
    let path = Path::new(rel);
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::Normal(p) => out.push(p),
            Component::CurDir => {}
            _ => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("preview.discovery_file `{rel}` must be a path inside the project"),
                ));
            }
        }
    }
    if out.file_name().is_none() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("preview.discovery_file `{rel}` names no file"),
        ));
    }
    Ok(out)
}

/// Write `discovery` to `rel` under `root`, atomically.
pub fn write(root: &Path, rel: &str, discovery: &Discovery) -> std::io::Result<()> {
    let path = confined(rel)?;
    // Kept out of git as it is out of checkpoints: a runtime file, not the user's change.
    if rel.starts_with(".hands/") {
        hands_core::middleware::truncate::ensure_hands_gitignore(root)?;
    }
    let root = Dir::open_ambient_dir(root, ambient_authority())?;
    let dir = match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(parent) => {
            root.create_dir_all(parent)?;
            root.open_dir(parent)?
        }
        None => root,
    };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = format!(".{name}.tmp-{}", std::process::id());
    let mut text = serde_json::to_vec_pretty(discovery).map_err(std::io::Error::other)?;
    text.push(b'\n');
    let mut options = OpenOptions::new();
    // 0600: the endpoint it names is the user's only (its path is the secret).
    options.write(true).create(true).truncate(true).mode(0o600);
    let result = (|| {
        let mut file = dir.open_with(&tmp, &options)?;
        file.write_all(&text)?;
        file.sync_all()?;
        dir.rename(&tmp, &dir, &name)
    })();
    if result.is_err() {
        let _ = dir.remove_file(&tmp);
    }
    result
}

/// Remove the file at `rel` under `root` (gone already is fine).
pub fn remove(root: &Path, rel: &str) -> std::io::Result<()> {
    let path = confined(rel)?;
    let root = Dir::open_ambient_dir(root, ambient_authority())?;
    match root.remove_file(&path) {
        Err(err) if err.kind() != std::io::ErrorKind::NotFound => Err(err),
        _ => Ok(()),
    }
}

/// `time` as RFC 3339 in UTC, to the millisecond.
pub fn rfc3339(time: std::time::SystemTime) -> String {
    let since = time.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60,
        since.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    fn sample() -> Discovery {
        Discovery {
            version: VERSION,
            pid: 1,
            browser_pid: 2,
            cdp_port: 9222,
            browser_ws_endpoint: "ws://127.0.0.1:9222/devtools/browser/x".into(),
            target_id: "T".into(),
            preview_url: "http://127.0.0.1:5173/".into(),
            stage: "ready".into(),
            started_at: rfc3339(UNIX_EPOCH),
        }
    }

    #[test]
    fn written_atomically_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), ".hands/devtools.json", &sample()).unwrap();
        let text = std::fs::read_to_string(dir.path().join(".hands/devtools.json")).unwrap();
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["cdpPort"], 9222);
        assert_eq!(value["browserWsEndpoint"], "ws://127.0.0.1:9222/devtools/browser/x");
        let mut names: Vec<String> = std::fs::read_dir(dir.path().join(".hands"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, [".gitignore", "devtools.json"], "no temporary file left");
        let ignore = std::fs::read_to_string(dir.path().join(".hands/.gitignore")).unwrap();
        assert_eq!(ignore, hands_core::middleware::truncate::HANDS_GITIGNORE);
        remove(dir.path(), ".hands/devtools.json").unwrap();
        assert!(!dir.path().join(".hands/devtools.json").exists());
        remove(dir.path(), ".hands/devtools.json").unwrap();
    }

    #[test]
    fn paths_outside_the_project_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        for bad in ["../x.json", "/tmp/x.json", ".hands/.."] {
            assert!(write(dir.path(), bad, &sample()).is_err(), "{bad}");
        }
        // A symlinked folder pointing out is not followed out of the root either.
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join(".bricks")).unwrap();
        assert!(write(dir.path(), ".bricks/devtools.json", &sample()).is_err());
        assert!(!outside.path().join("devtools.json").exists());
    }

    #[test]
    fn rfc3339_of_known_instants() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_709_251_199_123);
        assert_eq!(rfc3339(t), "2024-02-29T23:59:59.123Z");
    }
}
