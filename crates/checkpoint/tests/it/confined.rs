//! Issue 26, finding 1: a restore writes, renames and deletes only beneath the project root,
//! never through a symlink and never in `.git`. The model's moves: a checkpointed folder
//! replaced by a symlink (to a folder outside, or into `.git/hooks`) and hidden from the "tree
//! now" by `.gitignore` or `.git/info/exclude`; a folder flipped to a symlink while restores
//! run; the same for the replay of an interrupted restore. And the snapshot side: a folder
//! flipped to a symlink to a folder outside while checkpoints are taken must bring nothing from
//! there into the store (a later restore would put it into the project).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use hands_checkpoint::{Config, Kind, Meta, Store};

fn store(root: &Path, state: &Path) -> Store {
    Store::open(root, state, Config::default()).unwrap()
}

fn meta() -> Meta {
    Meta::new("s", Kind::TurnStart)
}

fn undo() -> Meta {
    Meta::new("s", Kind::Restore)
}

fn git_init(root: &Path) {
    let out = Command::new("git").args(["init", "-q"]).current_dir(root).output();
    assert!(out.is_ok_and(|o| o.status.success()), "git is needed for this test");
}

/// Every path below `dir` (links not followed) with its content or link target.
fn snapshot_of(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
            let m = fs::symlink_metadata(&p).unwrap();
            if m.file_type().is_symlink() {
                out.insert(rel, format!("-> {}", fs::read_link(&p).unwrap().display()));
            } else if m.is_dir() {
                out.insert(format!("{rel}/"), String::new());
                stack.push(p);
            } else {
                out.insert(rel, String::from_utf8_lossy(&fs::read(&p).unwrap()).into_owned());
            }
        }
    }
    out
}

/// A project with a checkpointed folder `conf/` and, beside the root, a folder `outside/` that
/// holds files of the same names (so a write or delete through a link would show).
fn project() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("p");
    let state = tmp.path().join("state");
    let outside = tmp.path().join("outside");
    fs::create_dir_all(root.join("conf/deep")).unwrap();
    fs::write(root.join("conf/settings.txt"), "checkpointed\n").unwrap();
    fs::write(root.join("conf/deep/more.txt"), "deeper\n").unwrap();
    fs::write(root.join(".gitignore"), "target/\n").unwrap();
    fs::write(root.join("main.rs"), "fn main() {}\n").unwrap();
    fs::create_dir_all(outside.join("deep")).unwrap();
    fs::write(outside.join("settings.txt"), "precious outside\n").unwrap();
    fs::write(outside.join("authorized_keys"), "ssh-ed25519 AAAA user\n").unwrap();
    (tmp, root, state, outside)
}

/// After the restore, `conf` is the checkpoint's real folder again (not a link), and the link's
/// old target is byte-identical.
fn assert_restored(root: &Path, outside: &Path, before: &BTreeMap<String, String>) {
    assert_eq!(&snapshot_of(outside), before, "nothing outside the root changed");
    let conf = fs::symlink_metadata(root.join("conf")).unwrap();
    assert!(conf.is_dir(), "conf is a real folder again, not a link");
    assert_eq!(fs::read_to_string(root.join("conf/settings.txt")).unwrap(), "checkpointed\n");
    assert_eq!(fs::read_to_string(root.join("conf/deep/more.txt")).unwrap(), "deeper\n");
}

/// A checkpoint, what is outside then, and the turn: `conf` becomes a link to the folder
/// outside, hidden by `.gitignore`.
fn checkpoint_then_swap(s: &Store, root: &Path, outside: &Path) -> (u64, BTreeMap<String, String>) {
    let cp = s.snapshot(&meta()).unwrap();
    let before = snapshot_of(outside);
    fs::remove_dir_all(root.join("conf")).unwrap();
    symlink(outside, root.join("conf")).unwrap();
    fs::write(root.join(".gitignore"), "target/\nconf\n").unwrap();
    (cp.id, before)
}

#[test]
fn issue_26_1_a_folder_swapped_for_an_ignored_symlink_to_outside_is_not_written_through() {
    let (_tmp, root, state, outside) = project();
    let s = store(&root, &state);
    let (cp, before) = checkpoint_then_swap(&s, &root, &outside);
    let r = s.restore(cp, &undo()).unwrap();
    assert_restored(&root, &outside, &before);
    assert_eq!(fs::read_to_string(root.join(".gitignore")).unwrap(), "target/\n");
    assert!(r.deleted.contains(&"conf".to_string()), "the link itself is reported: {r:?}");
}

#[test]
fn issue_26_1_the_same_hidden_by_git_info_exclude() {
    let (_tmp, root, state, outside) = project();
    git_init(&root);
    let s = store(&root, &state);
    let cp = s.snapshot(&meta()).unwrap();
    let before = snapshot_of(&outside);
    fs::remove_dir_all(root.join("conf")).unwrap();
    symlink(&outside, root.join("conf")).unwrap();
    let exclude = root.join(".git/info/exclude");
    let mut text = fs::read_to_string(&exclude).unwrap_or_default();
    text.push_str("conf\n");
    fs::write(&exclude, &text).unwrap();
    // The snapshot the restore compares against does not see `conf` any more.
    assert!(!s.entries(&s.snapshot(&meta()).unwrap()).unwrap().contains_key("conf"));
    let git_before = snapshot_of(&root.join(".git"));
    s.restore(cp.id, &undo()).unwrap();
    assert_restored(&root, &outside, &before);
    assert_eq!(snapshot_of(&root.join(".git")), git_before, "the restore changed nothing in .git");
}

#[test]
fn issue_26_1_a_symlink_into_git_hooks_gets_no_pre_commit() {
    let (_tmp, root, state, _outside) = project();
    git_init(&root);
    fs::create_dir_all(root.join("scripts")).unwrap();
    fs::write(root.join("scripts/pre-commit"), "#!/bin/sh\necho pwned > /tmp/pwned\n").unwrap();
    let s = store(&root, &state);
    let cp = s.snapshot(&meta()).unwrap();
    let git_before = snapshot_of(&root.join(".git"));
    for link in [".git/hooks", "./.git/hooks", ".git/hooks/"] {
        fs::remove_dir_all(root.join("scripts"))
            .or_else(|_| fs::remove_file(root.join("scripts")))
            .unwrap();
        symlink(link, root.join("scripts")).unwrap();
        fs::write(root.join(".gitignore"), "target/\nscripts\n").unwrap();
        s.restore(cp.id, &undo()).unwrap();
        assert!(!root.join(".git/hooks/pre-commit").exists(), "{link}: a hook appeared");
        assert_eq!(snapshot_of(&root.join(".git")), git_before, "{link}: .git changed");
        assert!(fs::symlink_metadata(root.join("scripts")).unwrap().is_dir(), "{link}");
        assert!(root.join("scripts/pre-commit").is_file(), "{link}");
    }
}

#[test]
fn issue_26_1_a_git_file_in_a_subfolder_is_never_written_or_deleted() {
    let (_tmp, root, state, _outside) = project();
    fs::create_dir_all(root.join("vendor/lib")).unwrap();
    fs::write(root.join("vendor/lib/.git"), "gitdir: ../../.git/modules/lib\n").unwrap();
    fs::write(root.join("vendor/lib/lib.rs"), "pub fn f() {}\n").unwrap();
    let s = store(&root, &state);
    let cp = s.snapshot(&meta()).unwrap();
    assert!(s.entries(&cp).unwrap().contains_key("vendor/lib/.git"), "a .git file is captured");
    // Changed after the checkpoint: the restore leaves it as it is now, in both directions.
    fs::write(root.join("vendor/lib/.git"), "gitdir: /somewhere/else\n").unwrap();
    fs::write(root.join("vendor/lib/lib.rs"), "changed\n").unwrap();
    let r = s.restore(cp.id, &undo()).unwrap();
    assert_eq!(fs::read_to_string(root.join("vendor/lib/lib.rs")).unwrap(), "pub fn f() {}\n");
    assert_eq!(
        fs::read_to_string(root.join("vendor/lib/.git")).unwrap(),
        "gitdir: /somewhere/else\n"
    );
    assert!(r.protected.contains(&"vendor/lib/.git".to_string()), "{r:?}");
    fs::remove_file(root.join("vendor/lib/.git")).unwrap();
    s.restore(cp.id, &undo()).unwrap();
    assert!(!root.join("vendor/lib/.git").exists(), "never created either");
    // And one that the target lacks is not deleted.
    let empty = s.snapshot(&meta()).unwrap();
    fs::write(root.join("vendor/lib/.git"), "gitdir: x\n").unwrap();
    s.restore(empty.id, &undo()).unwrap();
    assert_eq!(fs::read_to_string(root.join("vendor/lib/.git")).unwrap(), "gitdir: x\n");
}

#[test]
fn issue_26_1_an_interrupted_restores_replay_is_confined_too() {
    let (_tmp, root, state, outside) = project();
    let s = store(&root, &state);
    let (cp, before) = checkpoint_then_swap(&s, &root, &outside);
    // A restore to `cp` was interrupted: its journal is there, and the next open replays it.
    fs::write(state.join("journal.json"), format!("{{\"target\":{cp},\"undo\":{cp}}}")).unwrap();
    let s = store(&root, &state);
    assert!(!state.join("journal.json").exists(), "the journal was replayed");
    assert_restored(&root, &outside, &before);
    assert!(s.recover().unwrap().is_none());
}

#[test]
fn issue_26_1_a_folder_flipping_to_a_symlink_while_restores_run_never_leads_outside() {
    let (tmp, root, state, outside) = project();
    for i in 0..40 {
        fs::write(root.join(format!("conf/f{i:02}.txt")), format!("a {i}\n")).unwrap();
        fs::write(outside.join(format!("f{i:02}.txt")), format!("outside {i}\n")).unwrap();
    }
    let s = store(&root, &state);
    let a = s.snapshot(&meta()).unwrap();
    for i in 0..40 {
        if i % 2 == 0 {
            fs::write(root.join(format!("conf/f{i:02}.txt")), format!("b {i}\n")).unwrap();
        } else {
            fs::remove_file(root.join(format!("conf/f{i:02}.txt"))).unwrap();
        }
    }
    fs::write(root.join("conf/deep/new.txt"), "b\n").unwrap();
    let b = s.snapshot(&meta()).unwrap();
    let before = snapshot_of(&outside);
    let stop = Arc::new(AtomicBool::new(false));
    let flipper = {
        let (root, outside, stop) = (root.clone(), outside.clone(), stop.clone());
        let aside = tmp.path().join("p/.aside");
        std::thread::spawn(move || {
            let conf = root.join("conf");
            let mut flips = 0u64;
            while !stop.load(Ordering::Relaxed) && flips < 200_000 {
                flips += 1;
                // The real folder moves aside (within the root), a link takes its place...
                if fs::rename(&conf, &aside).is_ok() {
                    let _ = symlink(&outside, &conf);
                    std::thread::yield_now();
                    if fs::symlink_metadata(&conf).is_ok_and(|m| m.file_type().is_symlink()) {
                        let _ = fs::remove_file(&conf);
                    }
                    // ...and comes back (unless the restore made a new one meanwhile).
                    if fs::rename(&aside, &conf).is_err() {
                        let _ = fs::remove_dir_all(&aside);
                    }
                }
                std::thread::yield_now();
            }
            flips
        })
    };
    let (mut ok, mut failed) = (0, 0);
    for round in 0..200 {
        let target = if round % 2 == 0 { a.id } else { b.id };
        match s.restore(target, &undo()) {
            Ok(_) => ok += 1,
            Err(_) => failed += 1,
        }
        assert_eq!(snapshot_of(&outside), before, "round {round}: written outside");
    }
    stop.store(true, Ordering::Relaxed);
    let flips = flipper.join().unwrap();
    eprintln!("restores: {ok} succeeded, {failed} failed, while the folder flipped {flips} times");
    assert_eq!(snapshot_of(&outside), before, "nothing outside the root changed");
    // Once the flipping stops, a restore gives back the checkpoint exactly.
    let _ = fs::remove_file(root.join("conf"));
    s.restore(a.id, &undo()).unwrap();
    assert_eq!(fs::read_to_string(root.join("conf/f01.txt")).unwrap(), "a 1\n");
    assert!(!root.join("conf/deep/new.txt").exists());
    assert!(!root.join(".aside").exists());
}

#[test]
fn issue_26_1_a_folder_where_the_checkpoint_has_a_file_goes_but_a_git_inside_it_stays() {
    let (_tmp, root, state, outside) = project();
    fs::write(root.join("x"), "file x\n").unwrap();
    fs::write(root.join("y"), "file y\n").unwrap();
    let s = store(&root, &state);
    let cp = s.snapshot(&meta()).unwrap();
    for name in ["x", "y"] {
        fs::remove_file(root.join(name)).unwrap();
        // Ignored contents (`target/`), a link to outside among them: not in the tree now.
        fs::create_dir_all(root.join(name).join("target/deep")).unwrap();
        fs::write(root.join(name).join("target/deep/o.bin"), "ignored\n").unwrap();
        symlink(&outside, root.join(name).join("target/out")).unwrap();
        symlink(&outside, root.join(name).join("target/deep/out")).unwrap();
    }
    fs::create_dir_all(root.join("y/.git/hooks")).unwrap();
    fs::write(root.join("y/.git/HEAD"), "ref: refs/heads/main\n").unwrap();
    let before = snapshot_of(&outside);
    let r = s.restore(cp.id, &undo()).unwrap();
    assert_eq!(snapshot_of(&outside), before, "nothing outside the root changed");
    assert_eq!(fs::read_to_string(root.join("x")).unwrap(), "file x\n");
    assert_eq!(fs::read_to_string(root.join("y/.git/HEAD")).unwrap(), "ref: refs/heads/main\n");
    assert!(!root.join("y/target").exists(), "the rest of the folder went");
    assert!(r.protected.contains(&"y".to_string()), "{r:?}");
}

/// Every object of the store at `state`, decompressed.
fn objects_of(state: &Path) -> Vec<Vec<u8>> {
    use std::io::Read as _;
    let mut out = Vec::new();
    for fan in fs::read_dir(state.join("objects")).unwrap() {
        let fan = fan.unwrap().path();
        for obj in fs::read_dir(&fan).unwrap() {
            let obj = obj.unwrap().path();
            if obj.file_name().unwrap().to_string_lossy().starts_with('.') {
                continue;
            }
            let packed = fs::read(&obj).unwrap();
            let mut bytes = Vec::new();
            flate2::read::DeflateDecoder::new(&packed[..]).read_to_end(&mut bytes).unwrap();
            out.push(bytes);
        }
    }
    out
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Issue 26, the snapshot side of finding 1: a folder flipping to a symlink to a folder outside
/// (which holds files of the same names, a key among them) while checkpoints are taken. Nothing
/// outside may be read into the store: a later restore would put it into the project.
#[test]
fn issue_26_1_a_folder_flipping_to_a_symlink_while_snapshots_run_reads_nothing_outside() {
    const CANARY: &str = "CANARY-7f3d9a-private-key-material";
    let (tmp, root, state, outside) = project();
    fs::create_dir_all(outside.join("deep")).unwrap();
    for i in 0..30 {
        fs::write(root.join(format!("conf/f{i:02}.txt")), format!("inside {i}\n")).unwrap();
        fs::write(outside.join(format!("f{i:02}.txt")), format!("{CANARY} {i}\n")).unwrap();
    }
    fs::write(outside.join("settings.txt"), format!("{CANARY} settings\n")).unwrap();
    fs::write(outside.join("deep/more.txt"), format!("{CANARY} deep\n")).unwrap();
    fs::write(outside.join("id_ed25519"), format!("{CANARY} key\n")).unwrap();
    let s = store(&root, &state);
    let stop = Arc::new(AtomicBool::new(false));
    let flipper = {
        let (root, outside, stop) = (root.clone(), outside.clone(), stop.clone());
        let aside = tmp.path().join("p/.aside");
        std::thread::spawn(move || {
            let conf = root.join("conf");
            let mut flips = 0u64;
            while !stop.load(Ordering::Relaxed) && flips < 2_000_000 {
                flips += 1;
                // Each state held a little while (a snapshot spans several flips).
                let hold = || {
                    let t = std::time::Instant::now();
                    while t.elapsed() < std::time::Duration::from_micros(300) {
                        std::thread::yield_now();
                    }
                };
                if fs::rename(&conf, &aside).is_ok() {
                    let _ = symlink(&outside, &conf);
                    hold();
                    let _ = fs::remove_file(&conf);
                    let _ = fs::rename(&aside, &conf);
                }
                hold();
            }
            flips
        })
    };
    let (mut ok, mut failed, mut linked) = (0, 0, 0);
    for round in 0..200 {
        match s.snapshot(&meta()) {
            Ok(cp) => {
                ok += 1;
                let entries = s.entries(&cp).unwrap();
                if matches!(entries.get("conf"), Some(hands_checkpoint::Entry::Link { .. })) {
                    linked += 1;
                }
                for (path, entry) in &entries {
                    if let hands_checkpoint::Entry::File { oid, .. } = entry {
                        let bytes = s.object(oid).unwrap();
                        assert!(!contains(&bytes, CANARY.as_bytes()), "round {round}: {path}");
                    }
                }
            }
            Err(e) => {
                eprintln!("round {round}: {e}");
                failed += 1;
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let flips = flipper.join().unwrap();
    eprintln!("snapshots: {ok} taken ({linked} saw the link), {failed} failed; {flips} flips");
    assert_eq!(failed, 0, "every snapshot is taken while a folder flips");
    for (i, bytes) in objects_of(&state).iter().enumerate() {
        assert!(!contains(bytes, CANARY.as_bytes()), "object {i} holds bytes from outside");
    }
    // Once the flipping stops, a snapshot is the project exactly; the link is a link.
    let cp = s.snapshot(&meta()).unwrap();
    let entries = s.entries(&cp).unwrap();
    assert_eq!(s.object(&file_oid(&entries, "conf/f07.txt")).unwrap(), b"inside 7\n");
    assert!(!entries.contains_key(".aside"), "{entries:?}");
    fs::rename(root.join("conf"), root.join("conf.real")).unwrap();
    symlink(&outside, root.join("conf")).unwrap();
    let entries = s.entries(&s.snapshot(&meta()).unwrap()).unwrap();
    assert_eq!(
        entries.get("conf"),
        Some(&hands_checkpoint::Entry::Link { target: outside.display().to_string() })
    );
    assert!(!entries.keys().any(|k| k.starts_with("conf/")), "{entries:?}");
}

fn file_oid(entries: &BTreeMap<String, hands_checkpoint::Entry>, path: &str) -> String {
    match entries.get(path) {
        Some(hands_checkpoint::Entry::File { oid, .. }) => oid.clone(),
        other => panic!("{path}: {other:?}"),
    }
}

/// The walk through handles keeps the stat index's fast path: a file whose stats (an `lstat`
/// beneath its folder's handle) equal the index's is not read again, and one changed in place
/// with its size and mtime put back is (its ctime moved).
#[test]
fn issue_26_1_the_handle_walk_still_spares_unchanged_files_and_reads_changed_ones() {
    let (_tmp, root, state, _outside) = project();
    let s = store(&root, &state);
    s.snapshot(&meta()).unwrap();
    // Past the racy window, so that the index trusts the stats it keeps.
    std::thread::sleep(std::time::Duration::from_millis(100));
    let cp = s.snapshot(&meta()).unwrap();
    let oid = file_oid(&s.entries(&cp).unwrap(), "conf/settings.txt");
    let object = state.join("objects").join(&oid[..2]).join(&oid[2..]);
    assert!(object.is_file());
    // Not read again: its object, taken away, is not stored again.
    let aside = state.join("object-aside");
    fs::rename(&object, &aside).unwrap();
    let cp = s.snapshot(&meta()).unwrap();
    assert_eq!(file_oid(&s.entries(&cp).unwrap(), "conf/settings.txt"), oid);
    assert!(!object.exists(), "an unchanged file was read again");
    // (The next snapshot's line counts read it.)
    fs::rename(&aside, &object).unwrap();
    // Changed in place, same size, mtime put back: read again.
    let path = root.join("conf/settings.txt");
    let mtime = fs::metadata(&path).unwrap().modified().unwrap();
    fs::write(&path, "CHECKPOINTED\n").unwrap();
    fs::File::options().write(true).open(&path).unwrap().set_modified(mtime).unwrap();
    let cp = s.snapshot(&meta()).unwrap();
    let changed = file_oid(&s.entries(&cp).unwrap(), "conf/settings.txt");
    assert_eq!(s.object(&changed).unwrap(), b"CHECKPOINTED\n");
}
