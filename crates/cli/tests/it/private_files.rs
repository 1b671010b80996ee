//! Files hands writes for itself are private (issue 11, item 10, exec and core part): a spilled
//! output in `.hands/outputs`, a background process's log in `.hands/processes` and the process
//! record in the state folder are 0600 in 0700 folders, and another user (`nobody`, through
//! `setpriv`) cannot read them. The folders above them are made world-traversable first, so only
//! hands' own modes can stop the read.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
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

/// Every folder and file under `dir` with its mode.
fn tree_modes(dir: &Path, out: &mut Vec<(PathBuf, u32, bool)>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let meta = entry.metadata().unwrap();
        out.push((entry.path(), meta.permissions().mode() & 0o777, meta.is_dir()));
        if meta.is_dir() {
            tree_modes(&entry.path(), out);
        }
    }
}

/// Issue 26, finding 4: whichever part of hands makes the state (and data) folder first — the
/// checkpoint store, the secret store, `hands serve`'s token and session database — with the
/// umask at 022 every folder it makes, from the XDG base down, is 0700 and every file 0600.
#[test]
fn whichever_part_makes_the_state_folder_first_it_is_private() {
    rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o022));
    type Start = fn(Command) -> Option<Child>;
    let starters: [(&str, Start); 3] = [
        ("the checkpoint store", |mut cmd| {
            let out = cmd.args(["checkpoints", "gc"]).output().unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            None
        }),
        ("the secret store", |mut cmd| {
            let mut child = cmd
                .args(["secrets", "set", "CANARY_FIRST", "--global"])
                .stdin(Stdio::piped())
                .spawn()
                .unwrap();
            use std::io::Write as _;
            child.stdin.take().unwrap().write_all(b"canary-value-first-1234\n").unwrap();
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            None
        }),
        ("hands serve", |mut cmd| {
            Some(cmd.args(["serve", "--listen", "127.0.0.1:0"]).spawn().unwrap())
        }),
    ];
    for (first, start) in starters {
        let (tmp, root, _) = folders();
        let base = tmp.path().to_path_buf();
        let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("hands"));
        cmd.env_remove("HANDS_STATE_DIR")
            .env_remove("HANDS_SECRETS_DIR")
            .env("HOME", base.join("home"))
            .env("XDG_STATE_HOME", base.join("xdg/state"))
            .env("XDG_DATA_HOME", base.join("xdg/data"))
            .env("XDG_CONFIG_HOME", base.join("xdg/config"))
            .arg("--root")
            .arg(&root)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(mut server) = start(cmd) {
            let token = base.join("xdg/state/hands/server-token");
            let db = base.join("xdg/data/hands/sessions.db");
            let started = Instant::now();
            while !(token.exists() && db.exists()) {
                if let Some(status) = server.try_wait().unwrap() {
                    panic!("hands serve ended: {status}");
                }
                assert!(started.elapsed() < Duration::from_secs(30), "{first}: no token/db");
                std::thread::sleep(Duration::from_millis(50));
            }
            server.kill().unwrap();
            server.wait().unwrap();
        }
        let mut found = Vec::new();
        tree_modes(&base.join("xdg"), &mut found);
        assert!(found.iter().any(|(_, _, is_dir)| !is_dir), "{first} made no file: {found:?}");
        for (path, mode, is_dir) in &found {
            let want = if *is_dir { 0o700 } else { 0o600 };
            assert_eq!(*mode, want, "{first} made {} {mode:o}: {found:?}", path.display());
        }
    }
}
