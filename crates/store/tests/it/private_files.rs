//! The session store is private to its user: the database and every file SQLite makes beside it
//! (`-wal`, `-shm`) are 0600, the folder hands makes for it 0700, and files an older hands left
//! looser are tightened when the store opens. Another user (`nobody`) cannot read them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use hands_store::{SessionRecord, SqliteStore, Store};
use serde_json::json;

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn record(id: &str) -> SessionRecord {
    SessionRecord {
        id: id.into(),
        project_id: "p".into(),
        root: "/work/p".into(),
        mode: "build".into(),
        title: None,
        created_at_ms: 1,
        updated_at_ms: 1,
    }
}

/// Every file and folder under `dir` with its mode.
fn modes(dir: &Path) -> Vec<(String, u32, bool)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let meta = entry.metadata().unwrap();
        out.push((
            entry.file_name().to_string_lossy().into_owned(),
            meta.permissions().mode() & 0o777,
            meta.is_dir(),
        ));
    }
    out.sort();
    out
}

#[tokio::test]
async fn the_database_and_its_companions_are_the_users_only() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data/hands");
    let db = dir.join("sessions.db");
    let store = SqliteStore::open(&db).unwrap();
    store.create_session(record("s1")).await.unwrap();
    store
        .append_message("s1", None, json!({"role": "user", "content": "canary-secret"}))
        .await
        .unwrap();
    let files = modes(&dir);
    let names: Vec<&str> = files.iter().map(|(n, _, _)| n.as_str()).collect();
    for name in ["sessions.db", "sessions.db-wal", "sessions.db-shm"] {
        assert!(names.contains(&name), "{name} missing: {files:?}");
    }
    for (name, mode, is_dir) in &files {
        assert_eq!(*mode, if *is_dir { 0o700 } else { 0o600 }, "{name}: {files:?}");
    }
    assert_eq!(mode(&dir), 0o700, "the store's folder");

    // Opened up to the files themselves, only their own modes keep another user out.
    let open = std::fs::Permissions::from_mode(0o755);
    for folder in [tmp.path(), &tmp.path().join("data"), &dir] {
        std::fs::set_permissions(folder, open.clone()).unwrap();
    }
    let root = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"));
    if !root {
        eprintln!("not root: the other-user check is skipped");
        return;
    }
    for name in ["sessions.db", "sessions.db-wal", "sessions.db-shm"] {
        let out = std::process::Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--", "cat"])
            .arg(dir.join(name))
            .output()
            .unwrap();
        assert!(!out.status.success(), "nobody read {name}");
        assert!(!String::from_utf8_lossy(&out.stdout).contains("canary-secret"));
    }
    drop(store);
}

#[tokio::test]
async fn loose_files_of_an_older_hands_are_tightened_on_open() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("hands");
    let db = dir.join("sessions.db");
    {
        let store = SqliteStore::open(&db).unwrap();
        store.create_session(record("s1")).await.unwrap();
    }
    let loose = std::fs::Permissions::from_mode(0o644);
    for entry in std::fs::read_dir(&dir).unwrap().flatten() {
        std::fs::set_permissions(entry.path(), loose.clone()).unwrap();
    }
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let store = SqliteStore::open(&db).unwrap();
    assert_eq!(store.get_session("s1").await.unwrap().id, "s1");
    for (name, mode, _) in modes(&dir) {
        assert_eq!(mode, 0o600, "{name}");
    }
    assert_eq!(mode(&dir), 0o700);
}

#[tokio::test]
async fn a_folder_of_the_users_choosing_keeps_its_mode() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("shared");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o750)).unwrap();
    let db = dir.join("mine.db");
    let store = SqliteStore::open(&db).unwrap();
    store.create_session(record("s1")).await.unwrap();
    assert_eq!(mode(&dir), 0o750, "not hands' folder: left as it is");
    assert_eq!(mode(&db), 0o600);
}
