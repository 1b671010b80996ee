//! The checkpoint store is its user's only (issue 26, finding 4): with the umask at 022 and the
//! store the first part of hands to make the state folder, every folder it creates (the state
//! folder included) is 0700 and every file 0600 (objects, records, the index, the locks), and
//! another user (`nobody`, through `setpriv`, when the test runs as root) cannot read an object
//! even when every folder above the store lets anyone through.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use hands_checkpoint::{Kind, Meta, Settings, Store};

fn walk(dir: &Path, out: &mut Vec<(PathBuf, u32, bool)>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let meta = entry.metadata().unwrap();
        out.push((entry.path(), meta.permissions().mode() & 0o777, meta.is_dir()));
        if meta.is_dir() {
            walk(&entry.path(), out);
        }
    }
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
}

#[test]
fn the_store_made_first_is_private_whatever_the_umask() {
    rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o022));
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let root = tmp.path().join("proj");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("config.py"), "PASSWORD = 'canary-ckpt-hunter2'\n").unwrap();
    // Missing up to `state`: the store makes `state` and `state/hands` itself.
    let state = tmp.path().join("state/hands");
    let settings = Settings { state_dir: Some(state.clone()), ..Settings::default() };
    let store = Store::open_with(&root, &settings).unwrap();
    store.snapshot(&Meta::new("s1", Kind::TurnStart)).unwrap();
    std::fs::write(root.join("config.py"), "PASSWORD = 'changed'\n").unwrap();
    store.snapshot(&Meta::new("s1", Kind::TurnEnd)).unwrap();

    let mut found = Vec::new();
    walk(&tmp.path().join("state"), &mut found);
    assert_eq!(found.first().map(|f| f.1), Some(0o700), "state/hands: {found:?}");
    let mut objects = Vec::new();
    for (path, mode, is_dir) in &found {
        assert_eq!(*mode, if *is_dir { 0o700 } else { 0o600 }, "{}", path.display());
        if !is_dir && path.parent().unwrap().parent().unwrap().ends_with("objects") {
            objects.push(path.clone());
        }
    }
    assert_eq!(crate_mode(&tmp.path().join("state")), 0o700, "the state folder's parent");
    assert!(found.iter().any(|(p, ..)| p.extension().is_some_and(|e| e == "json")), "{found:?}");
    assert!(!objects.is_empty(), "no object in {found:?}");

    if !is_root() {
        eprintln!("not root: the read as nobody is not tried");
        return;
    }
    // Only the files' and the store's own modes may stop the other user.
    for (path, _, is_dir) in &found {
        if *is_dir && !path.starts_with(store.dir()) {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    std::fs::set_permissions(tmp.path().join("state"), std::fs::Permissions::from_mode(0o755))
        .unwrap();
    for object in &objects {
        let status = Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--", "cat"])
            .arg(object)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(!status.success(), "nobody read {}", object.display());
    }
}

fn crate_mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}
