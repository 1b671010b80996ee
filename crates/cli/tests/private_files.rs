//! Files hands writes for itself are private (issue 11, item 10, exec and core part): a spilled
//! output in `.hands/outputs`, a background process's log in `.hands/processes` and the process
//! record in the state folder are 0600 in 0700 folders, and another user (`nobody`, through
//! `setpriv`) cannot read them. The folders above them are made world-traversable first, so only
//! hands' own modes can stop the read.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn hands(state: &Path, root: &Path) -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("hands"));
    cmd.env("HANDS_STATE_DIR", state).env("HOME", root).arg("--root").arg(root);
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).unwrap().permissions().mode() & 0o777
}

/// True when `nobody` can read `path` (None when setpriv is missing or we are not root).
fn nobody_reads(path: &Path) -> Option<bool> {
    if !rustix_is_root() {
        return None;
    }
    let status = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "cat"])
        .arg(path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .ok()?;
    Some(status.success())
}

fn rustix_is_root() -> bool {
    // The owner of a file we just created is our uid.
    use std::os::unix::fs::MetadataExt as _;
    let probe = tempfile::NamedTempFile::new().unwrap();
    probe.as_file().metadata().unwrap().uid() == 0
}

/// A project and a state folder whose parents anyone may traverse.
fn folders() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let root = tmp.path().join("proj");
    std::fs::create_dir(&root).unwrap();
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
    (tmp, root.clone(), tmp_state(&root))
}

fn tmp_state(root: &Path) -> PathBuf {
    root.parent().unwrap().join("state")
}

/// `path` is 0600 in a 0700 folder, and `nobody` cannot read it.
fn assert_private(path: &Path) {
    assert_eq!(mode(path), 0o600, "{}", path.display());
    assert_eq!(mode(path.parent().unwrap()), 0o700, "{}", path.parent().unwrap().display());
    match nobody_reads(path) {
        Some(read) => assert!(!read, "nobody read {}", path.display()),
        None => eprintln!("not root: the read as nobody is not tried"),
    }
}

fn only_file(dir: &Path, ext: &str) -> PathBuf {
    let files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files.into_iter().next().unwrap()
}

#[test]
fn spilled_outputs_and_process_logs_are_private() {
    let (_tmp, root, state) = folders();
    let out = hands(&state, &root)
        .args(["-c", "output.max_bytes=1000", "call", "bash", "command=seq 1 5000"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_private(&only_file(&root.join(".hands/outputs"), "txt"));
    assert_eq!(mode(&root.join(".hands")), 0o700);

    let out = hands(&state, &root)
        .args(["call", "spawn_process", "type=long-run", "command=echo logged"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_private(&only_file(&root.join(".hands/processes"), "log"));
}

#[test]
fn process_records_are_private() {
    let (_tmp, root, state) = folders();
    // A daemon that never becomes ready keeps `hands call` waiting while its record exists.
    let mut first = hands(&state, &root)
        .args(["call", "spawn_process", "type=daemon", "ready_pattern=never", "command=sleep 100"])
        .spawn()
        .unwrap();
    let records = state.join("processes");
    let started = Instant::now();
    let record = loop {
        let found = std::fs::read_dir(&records).ok().and_then(|dir| {
            dir.flatten().map(|e| e.path()).find(|p| p.extension().is_some_and(|e| e == "json"))
        });
        if let Some(path) = found {
            break path;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "no process record was written");
        std::thread::sleep(Duration::from_millis(50));
    };
    let checked = std::panic::catch_unwind(|| {
        assert_private(&record);
        assert_eq!(mode(&state), 0o700, "the state folder");
    });
    first.kill().unwrap();
    first.wait().unwrap();
    // The next start stops the daemon the killed hands left.
    let out = hands(&state, &root).args(["call", "list_files"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    if let Err(panic) = checked {
        std::panic::resume_unwind(panic);
    }
}
