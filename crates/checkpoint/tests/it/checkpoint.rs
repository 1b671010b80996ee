//! Black-box tests of the checkpoint store on real trees: every kind of change a turn makes
//! (permission bits and empty folders included), restore and undo, two sessions, retention and
//! a gc racing snapshots, the store's growth, the user's `.git` untouched, restores refused while
//! a turn runs, old records read, and restores killed with SIGKILL.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use hands_checkpoint::{
    ChangeKind, Checkpoint, Config, Entry, Error, Kind, Meta, Retention, Store, Summary, diff,
};

fn store(root: &Path, state: &Path) -> Store {
    Store::open(root, state, Config::default()).unwrap()
}

fn meta(session: &str, kind: Kind, turn: &str) -> Meta {
    Meta { turn: Some(turn.to_string()), ..Meta::new(session, kind) }
}

fn undo(session: &str) -> Meta {
    Meta::new(session, Kind::Restore)
}

/// The tree as (path → kind, content-or-target, permission bits), read straight from disk,
/// `.git` left out; files above 50 MB stand for themselves by their size.
fn tree(root: &Path) -> BTreeMap<String, (char, Vec<u8>, u32)> {
    fn go(root: &Path, dir: &Path, out: &mut BTreeMap<String, (char, Vec<u8>, u32)>) {
        for e in fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().to_str().unwrap().to_string();
            let m = fs::symlink_metadata(&p).unwrap();
            let mode = m.permissions().mode() & 0o7777;
            if m.file_type().is_symlink() {
                out.insert(rel, ('l', fs::read_link(&p).unwrap().to_str().unwrap().into(), 0));
            } else if m.is_dir() {
                if rel != ".git" {
                    out.insert(rel, ('d', vec![], mode));
                    go(root, &p, out);
                }
            } else {
                let body = if m.len() > 50 * 1024 * 1024 {
                    format!("big {}", m.len()).into_bytes()
                } else {
                    fs::read(&p).unwrap()
                };
                out.insert(rel, ('f', body, mode));
            }
        }
    }
    let mut out = BTreeMap::new();
    go(root, root, &mut out);
    out
}

fn files_only(s: &Store, cp: &Checkpoint) -> BTreeMap<String, Entry> {
    s.entries(cp)
        .unwrap()
        .into_iter()
        .filter(|(_, e)| !matches!(e, Entry::Skipped { .. }))
        .collect()
}

fn sh(root: &Path, script: &str) {
    let st = Command::new("bash").arg("-ec").arg(script).current_dir(root).status().unwrap();
    assert!(st.success(), "{script}");
}

/// The turn: edit, `echo > new/dir/x`, rm, chmod +x, symlink, a binary and a 60 MB
/// file; and a 0600 file, an empty folder.
fn turn(root: &Path) {
    fs::write(root.join("src.rs"), "fn main() {\n    println!(\"hi\");\n}\n").unwrap();
    sh(
        root,
        "mkdir -p new/dir && echo made > new/dir/x && rm gone.txt && chmod +x run.sh \
         && ln -s src.rs link.rs && mkdir -p empty/inner && chmod 600 secret.txt",
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
    fs::write(root.join("secret.txt"), "s3cr3t\n").unwrap();
    fs::set_permissions(root.join("run.sh"), fs::Permissions::from_mode(0o644)).unwrap();
    fs::set_permissions(root.join("secret.txt"), fs::Permissions::from_mode(0o640)).unwrap();
    fs::write(root.join(".gitignore"), "target/\n").unwrap();
    fs::create_dir_all(root.join("target")).unwrap();
    fs::write(root.join("target/out.o"), "ignored").unwrap();
    fs::create_dir_all(root.join("dist")).unwrap();
    fs::write(root.join("dist/app.js"), "built\n").unwrap();
    fs::create_dir_all(root.join("node_modules/x")).unwrap();
    fs::write(root.join("node_modules/x/i.js"), "dep\n").unwrap();
    (tmp, root, state)
}

#[test]
fn every_change_of_a_turn_is_captured_and_each_checkpoint_restores_byte_for_byte() {
    let (_tmp, root, state) = project();
    let s = store(&root, &state);
    let before_tree = tree(&root);
    let before = s.snapshot(&meta("s1", Kind::TurnStart, "turn-1")).unwrap();
    assert_eq!((before.turn.as_deref(), before.kind), (Some("turn-1"), Kind::TurnStart));
    let entries = s.entries(&before).unwrap();
    assert!(!entries.contains_key("target/out.o"), "ignored files are not captured");
    assert!(!entries.contains_key("node_modules"), "node_modules is not captured");
    assert!(entries.contains_key("dist/app.js"), "a dist the project does not ignore is");
    turn(&root);
    let after_tree = tree(&root);
    let after = s.snapshot(&meta("s1", Kind::TurnEnd, "turn-1")).unwrap();
    let entries = s.entries(&after).unwrap();
    assert_eq!(entries.get("big.dat"), Some(&Entry::Skipped { size: 60 * 1024 * 1024 }));
    assert_eq!(entries.get("link.rs"), Some(&Entry::Link { target: "src.rs".into() }));
    assert!(matches!(entries.get("run.sh"), Some(Entry::File { mode: 0o755, .. })));
    assert!(matches!(entries.get("secret.txt"), Some(Entry::File { mode: 0o600, .. })));
    assert!(matches!(entries.get("new/dir/x"), Some(Entry::File { .. })));
    assert!(matches!(entries.get("empty/inner"), Some(Entry::Dir { .. })));
    assert!(!entries.contains_key("gone.txt"));

    let changes = diff(&s, Some(&before), &after).unwrap();
    let kind = |p: &str| changes.iter().find(|c| c.path == p).map(|c| c.kind);
    assert_eq!(kind("src.rs"), Some(ChangeKind::Modified));
    assert_eq!(kind("gone.txt"), Some(ChangeKind::Deleted));
    assert_eq!(kind("run.sh"), Some(ChangeKind::Mode));
    assert_eq!(kind("secret.txt"), Some(ChangeKind::Mode));
    assert_eq!(kind("new/dir/x"), Some(ChangeKind::Added));
    assert_eq!(kind("empty/inner/"), Some(ChangeKind::Added), "an empty folder is listed");
    assert_eq!(kind("new/dir/"), None, "a folder with files is said by its files");
    assert_eq!(kind("empty/"), None);
    assert!(changes.iter().find(|c| c.path == "blob.bin").unwrap().binary);
    let big = changes.iter().find(|c| c.path == "big.dat").unwrap();
    assert!(!big.binary && big.unified.is_none(), "a skipped file has no diff: {big:?}");
    let src = changes.iter().find(|c| c.path == "src.rs").unwrap();
    assert_eq!((src.added, src.removed), (3, 1));
    assert!(src.unified.as_deref().unwrap().contains("+    println!(\"hi\");"));
    let summary = Summary::of(&changes);
    assert_eq!(after.changes, summary, "the record's counts are those of the diff");
    assert!(diff(&s, None, &before).unwrap().len() > 3, "from nothing, every path is added");

    let r = s.restore(before.id, &undo("s1")).unwrap();
    assert_eq!(r.skipped, vec!["big.dat".to_string()], "the restore says the big file stays");
    assert_eq!((r.undo.kind, r.undo.restoring), (Kind::Restore, Some(before.id)));
    let mut expect = before_tree.clone();
    expect.insert("big.dat".into(), ('f', format!("big {}", 60 * 1024 * 1024).into_bytes(), 0o644));
    assert_eq!(tree(&root), expect, "every byte and mode of checkpoint {}", before.id);
    assert_eq!(fs::read_to_string(root.join("target/out.o")).unwrap(), "ignored");
    let again = s.snapshot(&meta("s1", Kind::TurnStart, "turn-2")).unwrap();
    assert_eq!(files_only(&s, &again), files_only(&s, &before));

    // Restore-then-undo returns to the latest state, to the same tree hash.
    s.restore(r.undo.id, &undo("s1")).unwrap();
    assert_eq!(tree(&root), after_tree);
    let again = s.snapshot(&meta("s1", Kind::TurnEnd, "turn-2")).unwrap();
    assert_eq!(again.tree_hash(), after.tree_hash());
    assert!(diff(&s, Some(&after), &again).unwrap().is_empty());
}

/// Kilobytes a store uses besides its stat index (a cache rewritten in place, not growth).
fn used(s: &Store, state: &Path) -> u64 {
    s.disk_usage() - fs::metadata(state.join("index")).map(|m| m.len()).unwrap_or(0)
}

#[test]
fn a_checkpoint_costs_what_changed_not_the_tree_manifests_included() {
    let (_tmp, root, state) = project();
    for d in 0..20 {
        fs::create_dir_all(root.join(format!("d{d:02}"))).unwrap();
        for f in 0..25 {
            let body = format!("file {d}/{f}\n").repeat(20);
            fs::write(root.join(format!("d{d:02}/f{f:02}.txt")), body).unwrap();
        }
    }
    let s = store(&root, &state);
    let first = s.snapshot(&meta("s", Kind::TurnStart, "t1")).unwrap();
    assert!(s.entries(&first).unwrap().len() > 500);
    std::thread::sleep(Duration::from_millis(30));
    let start = used(&s, &state);
    s.snapshot(&meta("s", Kind::TurnEnd, "t1")).unwrap();
    let idle = used(&s, &state) - start;
    assert!(idle < 1000, "a checkpoint of an unchanged tree costs its record only: {idle} bytes");

    let start = used(&s, &state);
    fs::write(root.join("d07/f03.txt"), "changed\n").unwrap();
    s.snapshot(&meta("s", Kind::TurnEnd, "t2")).unwrap();
    let grew = used(&s, &state) - start;
    // The new content, its folder's tree (25 names), the root tree (20 folders and a few files),
    // the record: a flat manifest of the 500 files would be about 55 KB.
    assert!(grew < 4_000, "one changed file of 500 cost {grew} bytes");
}

#[test]
fn two_sessions_on_one_project_keep_their_own_checkpoints() {
    let (_tmp, root, state) = project();
    let a = store(&root, &state);
    let b = store(&root, &state);
    let a1 = a.snapshot(&meta("a", Kind::TurnStart, "ta")).unwrap();
    fs::write(root.join("b.txt"), "from b\n").unwrap();
    let b1 = b.snapshot(&meta("b", Kind::TurnEnd, "tb")).unwrap();
    assert_ne!(a1.id, b1.id);
    assert_eq!(b1.changes.files, 1, "counted against the project's previous checkpoint");
    let list = a.list().unwrap();
    assert_eq!(list.iter().filter(|c| c.session == "a").count(), 1);
    assert_eq!(list.iter().filter(|c| c.session == "b").count(), 1);
    b.restore(a1.id, &undo("b")).unwrap();
    assert!(!root.join("b.txt").exists());
    b.restore(b1.id, &undo("b")).unwrap();
    assert_eq!(fs::read_to_string(root.join("b.txt")).unwrap(), "from b\n");
}

#[test]
fn retention_keeps_the_last_per_session_and_objects_still_referred_to() {
    let (_tmp, root, state) = project();
    let s = store(&root, &state);
    for i in 0..5 {
        fs::write(root.join("n.txt"), format!("{i}\n")).unwrap();
        s.snapshot(&meta("s", Kind::TurnEnd, &format!("t{i}"))).unwrap();
    }
    let gc = s.gc(Retention { per_session: 2, max_age_secs: u64::MAX }, 0).unwrap();
    assert_eq!(gc.checkpoints, 3);
    // Three old versions of n.txt and the three root trees that named them; shared objects
    // (the other files, the unchanged folders) stay.
    assert_eq!(gc.objects, 6, "{gc:?}");
    let left = s.list().unwrap();
    assert_eq!(left.len(), 2);
    s.restore(left[0].id, &undo("s")).unwrap();
    assert_eq!(fs::read_to_string(root.join("n.txt")).unwrap(), "3\n");
    let gc = s.gc(Retention { per_session: 100, max_age_secs: 10 }, u64::MAX / 2).unwrap();
    assert_eq!(s.list().unwrap().len(), 0, "{gc:?}");
    assert!(matches!(s.restore(left[0].id, &undo("s")), Err(Error::NotFound(_))));
    // The index no longer names swept objects: the next snapshot stores the files again.
    let cp = s.snapshot(&meta("s", Kind::TurnStart, "t9")).unwrap();
    for e in s.entries(&cp).unwrap().values() {
        if let Entry::File { oid, .. } = e {
            s.object(oid).unwrap();
        }
    }
    // Automatic retention only acts when something is due.
    let s = s.clone();
    assert_eq!(s.retain(0).unwrap(), None);
}

#[test]
fn a_gc_racing_snapshots_never_sweeps_what_they_write() {
    let (_tmp, root, state) = project();
    let s = store(&root, &state);
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            for i in 0..40 {
                for f in 0..5 {
                    fs::write(root.join(format!("w{f}.txt")), format!("{i} {f}\n")).unwrap();
                }
                s.snapshot(&meta("s", Kind::TurnEnd, &format!("t{i}"))).unwrap();
            }
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        scope.spawn(|| {
            let other = store(&root, &state);
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                other.gc(Retention { per_session: 1, max_age_secs: u64::MAX }, 0).unwrap();
            }
        });
    });
    let list = s.list().unwrap();
    assert!(!list.is_empty());
    for cp in &list {
        for e in s.entries(cp).unwrap().values() {
            if let Entry::File { oid, .. } = e {
                s.object(oid).unwrap_or_else(|e| panic!("checkpoint {}: {e}", cp.id));
            }
        }
    }
    s.restore(list[list.len() - 1].id, &undo("s")).unwrap();
}

#[test]
fn a_restore_is_refused_while_a_turn_runs() {
    let (_tmp, root, state) = project();
    let s = store(&root, &state);
    let cp = s.snapshot(&meta("s", Kind::TurnStart, "t")).unwrap();
    fs::write(root.join("src.rs"), "changed\n").unwrap();
    let running = store(&root, &state).begin_turn().unwrap();
    let err = s.restore(cp.id, &undo("s")).unwrap_err();
    assert!(matches!(err, Error::Busy), "{err}");
    assert!(err.to_string().contains("a turn is running"), "{err}");
    assert_eq!(fs::read_to_string(root.join("src.rs")).unwrap(), "changed\n", "nothing touched");
    assert_eq!(s.list().unwrap().len(), 1, "no undo checkpoint for a refused restore");
    drop(running);
    s.restore(cp.id, &undo("s")).unwrap();
    assert_eq!(fs::read_to_string(root.join("src.rs")).unwrap(), "fn main() {}\n");
}

#[test]
fn a_record_of_the_first_format_is_read_and_restores() {
    let (_tmp, root, state) = project();
    let s = store(&root, &state);
    let cp = s.snapshot(&meta("s", Kind::TurnStart, "t")).unwrap();
    // The same tree as a first-format manifest: every path, executable bits, a label.
    let mut old = serde_json::Map::new();
    for (path, e) in s.entries(&cp).unwrap() {
        let v = match e {
            Entry::File { oid, size, mode } => {
                serde_json::json!({"type": "file", "oid": oid, "size": size, "exec": mode & 0o111 != 0})
            }
            Entry::Link { target } => serde_json::json!({"type": "link", "target": target}),
            Entry::Skipped { size } => serde_json::json!({"type": "skipped", "size": size}),
            Entry::Dir { .. } => continue,
        };
        old.insert(path, v);
    }
    let record = serde_json::json!({"id": 7, "session": "old", "turn": 0, "label": "after turn turn-x",
        "created": 1_700_000_000u64, "entries": old});
    fs::write(state.join("checkpoints/7.json"), record.to_string()).unwrap();
    fs::write(root.join("src.rs"), "changed\n").unwrap();
    let seven = s.load(7).unwrap();
    assert_eq!((seven.kind, seven.turn.as_deref()), (Kind::TurnEnd, Some("turn-x")));
    assert_eq!(seven.created_at(), "2023-11-14T22:13:20.000Z");
    s.restore(7, &undo("old")).unwrap();
    assert_eq!(fs::read_to_string(root.join("src.rs")).unwrap(), "fn main() {}\n");
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
    let a = s.snapshot(&meta("s", Kind::TurnStart, "t")).unwrap();
    assert!(s.entries(&a).unwrap().keys().all(|k| k != ".git" && !k.starts_with(".git/")));
    turn(&root);
    let b = s.snapshot(&meta("s", Kind::TurnEnd, "t")).unwrap();
    diff(&s, Some(&a), &b).unwrap();
    let r = s.restore(a.id, &undo("s")).unwrap();
    s.restore(r.undo.id, &undo("s")).unwrap();
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
    s.restore(id.parse().unwrap(), &undo("s")).unwrap();
}

#[test]
fn a_restore_killed_at_random_points_ends_as_the_old_or_the_new_tree() {
    let (_tmp, root, state) = project();
    for i in 0..300 {
        fs::write(root.join(format!("f{i:03}.txt")), format!("old {i}\n").repeat(50)).unwrap();
    }
    let s = store(&root, &state);
    let old = s.snapshot(&meta("s", Kind::TurnStart, "t")).unwrap();
    for i in 0..300 {
        if i % 2 == 0 {
            fs::write(root.join(format!("f{i:03}.txt")), format!("new {i}\n")).unwrap();
        } else {
            fs::remove_file(root.join(format!("f{i:03}.txt"))).unwrap();
        }
    }
    sh(&root, "mkdir -p d/e && echo n > d/e/n.txt && chmod 600 f000.txt && mkdir -p void");
    let new = s.snapshot(&meta("s", Kind::TurnEnd, "t")).unwrap();
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
            .args(["--exact", "checkpoint::child_restore", "--nocapture", "--test-threads=1"])
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
        let now = s.snapshot(&meta("check", Kind::TurnStart, "c")).unwrap();
        let h = now.tree_hash();
        assert!(h == old.tree_hash() || h == new.tree_hash(), "round {round}: half a tree");
        saw[usize::from(h == new.tree_hash())] += 1;
        for e in fs::read_dir(&root).unwrap() {
            let name = e.unwrap().file_name();
            assert!(
                !name.to_string_lossy().starts_with(".hands-tmp-"),
                "round {round}: temp file left"
            );
        }
    }
    eprintln!(
        "killed restores: {finished} finished before the kill, old {} new {}",
        saw[0], saw[1]
    );
}
