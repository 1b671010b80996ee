//! Black-box tests of the checkpoint store on real trees: every kind of change a turn makes,
//! restore and undo, two sessions, the user's `.git` untouched, and restores killed with SIGKILL.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use hands_checkpoint::{ChangeKind, Config, Entry, Retention, Store, Summary, diff};

fn store(root: &Path, state: &Path) -> Store {
    Store::open(root, state, Config::default()).unwrap()
}

/// The tree as (path → kind, sha256-or-target, exec), read straight from disk, `.git` left out.
fn tree(root: &Path) -> BTreeMap<String, (char, Vec<u8>, bool)> {
    fn go(root: &Path, dir: &Path, out: &mut BTreeMap<String, (char, Vec<u8>, bool)>) {
        for e in fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_str().unwrap().to_string();
            let m = fs::symlink_metadata(&p).unwrap();
            if m.file_type().is_symlink() {
                out.insert(rel, ('l', fs::read_link(&p).unwrap().to_str().unwrap().into(), false));
            } else if m.is_dir() {
                if rel != ".git" {
                    out.insert(rel, ('d', vec![], false));
                    go(root, &p, out);
                }
            } else {
                let exec = m.permissions().mode() & 0o111 != 0;
                let body = if m.len() > 50 * 1024 * 1024 {
                    b"big".to_vec()
                } else {
                    fs::read(&p).unwrap()
                };
                out.insert(rel, ('f', body, exec));
            }
        }
    }
    let mut out = BTreeMap::new();
    go(root, root, &mut out);
    out
}

fn files_only(cp: &hands_checkpoint::Checkpoint) -> BTreeMap<String, Entry> {
    cp.entries
        .iter()
        .filter(|(_, e)| !matches!(e, Entry::Skipped { .. }))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn sh(root: &Path, script: &str) {
    let st = Command::new("bash").arg("-ec").arg(script).current_dir(root).status().unwrap();
    assert!(st.success(), "{script}");
}

/// The turn: edit, `echo > new/dir/x`, rm, chmod +x, symlink, a binary and a 60 MB file.
fn turn(root: &Path) {
    fs::write(root.join("src.rs"), "fn main() {\n    println!(\"hi\");\n}\n").unwrap();
    sh(
        root,
        "mkdir -p new/dir && echo made > new/dir/x && rm gone.txt && chmod +x run.sh && ln -s src.rs link.rs",
    );
    fs::write(root.join("blob.bin"), [0u8, 159, 146, 150, 255, 0, 1]).unwrap();
    let big = fs::File::create(root.join("big.dat")).unwrap();
    big.set_len(60 * 1024 * 1024).unwrap();
}

fn project() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("p");
    let state = tmp.path().join("state");
    fs::create_dir_all(&root).unwrap();
    fs::write(root.join("src.rs"), "fn main() {}\n").unwrap();
    fs::write(root.join("gone.txt"), "bye\n").unwrap();
    fs::write(root.join("run.sh"), "#!/bin/sh\necho run\n").unwrap();
    fs::write(root.join(".gitignore"), "target/\n").unwrap();
    fs::create_dir_all(root.join("target")).unwrap();
    fs::write(root.join("target/out.o"), "ignored").unwrap();
    (tmp, root, state)
}

#[test]
fn every_change_of_a_turn_is_captured_and_each_checkpoint_restores_byte_for_byte() {
    let (_tmp, root, state) = project();
    let s = store(&root, &state);
    let before_tree = tree(&root);
    let before = s.snapshot("s1", 1, "before turn 1").unwrap();
    assert!(!before.entries.contains_key("target/out.o"), "ignored files are not captured");
    turn(&root);
    let after_tree = tree(&root);
    let after = s.snapshot("s1", 1, "after turn 1").unwrap();
    assert_eq!(after.entries.get("big.dat"), Some(&Entry::Skipped { size: 60 * 1024 * 1024 }));
    assert_eq!(after.entries.get("link.rs"), Some(&Entry::Link { target: "src.rs".into() }));
    assert!(matches!(after.entries.get("run.sh"), Some(Entry::File { exec: true, .. })));
    assert!(matches!(after.entries.get("new/dir/x"), Some(Entry::File { .. })));
    assert!(!after.entries.contains_key("gone.txt"));

    let changes = diff(&s, &before, &after).unwrap();
    let kind = |p: &str| changes.iter().find(|c| c.path == p).map(|c| c.kind);
    assert_eq!(kind("src.rs"), Some(ChangeKind::Modified));
    assert_eq!(kind("gone.txt"), Some(ChangeKind::Deleted));
    assert_eq!(kind("run.sh"), Some(ChangeKind::Mode));
    assert_eq!(kind("new/dir/x"), Some(ChangeKind::Added));
    assert!(changes.iter().find(|c| c.path == "blob.bin").unwrap().binary);
    let src = changes.iter().find(|c| c.path == "src.rs").unwrap();
    assert_eq!((src.added, src.removed), (3, 1));
    assert!(src.unified.as_deref().unwrap().contains("+    println!(\"hi\");"));
    assert_eq!(Summary::of(&changes).files, changes.len());

    let r = s.restore(before.id).unwrap();
    assert_eq!(
        r.skipped,
        vec!["big.dat".to_string()],
        "the restore says the big file was left alone"
    );
    let mut expect = before_tree.clone();
    expect.insert("big.dat".into(), ('f', b"big".to_vec(), false));
    assert_eq!(tree(&root), expect, "every byte and mode of checkpoint {}", before.id);
    let again = s.snapshot("s1", 2, "check").unwrap();
    assert_eq!(files_only(&again), files_only(&before));

    // Restore-then-undo returns to the latest state.
    s.restore(r.undo).unwrap();
    assert_eq!(tree(&root), after_tree);
    let again = s.snapshot("s1", 2, "check").unwrap();
    assert_eq!(again.tree_hash(), after.tree_hash());
}

#[test]
fn unchanged_files_are_not_stored_twice_and_growth_follows_changed_bytes() {
    let (_tmp, root, state) = project();
    for i in 0..200 {
        fs::write(root.join(format!("f{i}.txt")), format!("{i}\n").repeat(500)).unwrap();
    }
    let s = store(&root, &state);
    s.snapshot("s", 1, "a").unwrap();
    let objects = |s: &Store| {
        s.disk_usage()
            - hash_dir(&state.join("checkpoints")).values().map(|v| v.0.len() as u64).sum::<u64>()
    };
    let used = objects(&s);
    let manifest = fs::metadata(state.join("checkpoints/1.json")).unwrap().len();
    fs::write(root.join("f7.txt"), "changed\n").unwrap();
    s.snapshot("s", 1, "b").unwrap();
    let grew = objects(&s) - used;
    // The new object (a few bytes compressed) plus the index rewritten with the same size.
    assert!(grew < 200, "objects and index grew by {grew} bytes for one 8-byte change");
    assert!(manifest < 200 * 150, "a manifest costs about a hundred bytes a file: {manifest}");
}

#[test]
fn two_sessions_on_one_project_keep_their_own_checkpoints() {
    let (_tmp, root, state) = project();
    let a = store(&root, &state);
    let b = store(&root, &state);
    let a1 = a.snapshot("a", 1, "x").unwrap();
    fs::write(root.join("b.txt"), "from b\n").unwrap();
    let b1 = b.snapshot("b", 1, "x").unwrap();
    assert_ne!(a1.id, b1.id);
    let list = a.list().unwrap();
    assert_eq!(list.iter().filter(|c| c.session == "a").count(), 1);
    assert_eq!(list.iter().filter(|c| c.session == "b").count(), 1);
    b.restore(a1.id).unwrap();
    assert!(!root.join("b.txt").exists());
    b.restore(b1.id).unwrap();
    assert_eq!(fs::read_to_string(root.join("b.txt")).unwrap(), "from b\n");
}

#[test]
fn retention_keeps_the_last_per_session_and_objects_still_referred_to() {
    let (_tmp, root, state) = project();
    let s = store(&root, &state);
    for i in 0..5 {
        fs::write(root.join("n.txt"), format!("{i}\n")).unwrap();
        s.snapshot("s", i, "t").unwrap();
    }
    let gc = s.gc(Retention { per_session: 2, max_age_secs: u64::MAX }, 0).unwrap();
    assert_eq!(gc.checkpoints, 3);
    assert_eq!(gc.objects, 3, "the three old versions of n.txt go, shared objects stay");
    let left = s.list().unwrap();
    assert_eq!(left.len(), 2);
    s.restore(left[0].id).unwrap();
    assert_eq!(fs::read_to_string(root.join("n.txt")).unwrap(), "3\n");
    let gc = s.gc(Retention { per_session: 100, max_age_secs: 10 }, u64::MAX / 2).unwrap();
    assert_eq!(s.list().unwrap().len(), 0, "{gc:?}");
    assert!(matches!(s.restore(left[0].id), Err(hands_checkpoint::Error::NotFound(_))));
}

fn hash_dir(dir: &Path) -> BTreeMap<String, (Vec<u8>, u32)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let m = fs::symlink_metadata(&p).unwrap();
            let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
            if m.is_dir() {
                stack.push(p);
                out.insert(rel, (vec![], m.permissions().mode()));
            } else {
                out.insert(rel, (fs::read(&p).unwrap_or_default(), m.permissions().mode()));
            }
        }
    }
    out
}

#[test]
fn the_users_git_repository_is_byte_identical_before_and_after() {
    if Command::new("git").arg("--version").output().is_err() {
        panic!("git is needed for this test");
    }
    let (_tmp, root, state) = project();
    sh(
        &root,
        "git init -q && git config user.email t@t && git config user.name t && git add -A && git commit -qm one \
         && echo two >> src.rs && git commit -qam two && echo stash >> src.rs && git stash -q \
         && echo staged > staged.txt && git add staged.txt",
    );
    let git_before = hash_dir(&root.join(".git"));
    let s = store(&root, &state);
    let a = s.snapshot("s", 1, "a").unwrap();
    assert!(a.entries.keys().all(|k| !k.starts_with(".git/")));
    turn(&root);
    let b = s.snapshot("s", 1, "b").unwrap();
    diff(&s, &a, &b).unwrap();
    let r = s.restore(a.id).unwrap();
    s.restore(r.undo).unwrap();
    s.gc(Retention::default(), 0).unwrap();
    assert_eq!(hash_dir(&root.join(".git")), git_before);
}

/// Run by the kill test in a child process: restores the checkpoint named by the environment.
#[test]
fn child_restore() {
    let Ok(spec) = std::env::var("HANDS_CK_CHILD") else { return };
    let mut parts = spec.split('|');
    let (root, state, id) = (parts.next().unwrap(), parts.next().unwrap(), parts.next().unwrap());
    let s = store(Path::new(root), Path::new(state));
    s.restore(id.parse().unwrap()).unwrap();
}

#[test]
fn a_restore_killed_at_random_points_ends_as_the_old_or_the_new_tree() {
    let (_tmp, root, state) = project();
    for i in 0..300 {
        fs::write(root.join(format!("f{i:03}.txt")), format!("old {i}\n").repeat(50)).unwrap();
    }
    let s = store(&root, &state);
    let old = s.snapshot("s", 1, "old").unwrap();
    for i in 0..300 {
        if i % 2 == 0 {
            fs::write(root.join(format!("f{i:03}.txt")), format!("new {i}\n")).unwrap();
        } else {
            fs::remove_file(root.join(format!("f{i:03}.txt"))).unwrap();
        }
    }
    sh(&root, "mkdir -p d/e && echo n > d/e/n.txt");
    let new = s.snapshot("s", 1, "new").unwrap();
    let exe = std::env::current_exe().unwrap();
    let started = Instant::now();
    let mut seed: u64 = u64::from(std::process::id()) | 1;
    let (mut finished, mut saw) = (0, [0usize; 2]);
    for round in 0..50 {
        assert!(started.elapsed() < Duration::from_secs(120), "bounded in time (round {round})");
        let target = if round % 2 == 0 { old.id } else { new.id };
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let delay = Duration::from_micros(seed % 40_000);
        let mut child = Command::new(&exe)
            .args(["--exact", "child_restore", "--nocapture", "--test-threads=1"])
            .env("HANDS_CK_CHILD", format!("{}|{}|{target}", root.display(), state.display()))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(delay);
        let _ = child.kill(); // SIGKILL
        let status = child.wait().unwrap();
        if status.success() {
            finished += 1;
        }
        // The next start recovers.
        let s = store(&root, &state);
        let now = s.snapshot("check", 0, "check").unwrap();
        let h = now.tree_hash();
        assert!(h == old.tree_hash() || h == new.tree_hash(), "round {round}: half a tree");
        saw[usize::from(h == new.tree_hash())] += 1;
        for e in fs::read_dir(&root).unwrap() {
            let name = e.unwrap().file_name();
            assert!(
                !name.to_string_lossy().ends_with(".hands-restore"),
                "round {round}: temp file left"
            );
        }
    }
    eprintln!(
        "killed restores: {finished} finished before the kill, old {} new {}",
        saw[0], saw[1]
    );
}
