//! Issue 28.4: names and link targets that are not UTF-8 are captured as bytes, diffed with an
//! escaped display and restored byte for byte; what cannot be captured (a FIFO, a socket, an
//! unreadable file) is named in the checkpoint's and the restore's results.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};

use hands_checkpoint::{ChangeKind, Config, Entry, Kind, Meta, Store, diff};

fn is_root() -> bool {
    fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
}

fn raw(root: &Path, bytes: &[u8]) -> PathBuf {
    root.join(OsStr::from_bytes(bytes))
}

/// Every entry of `dir` as (name bytes, kind, content or target bytes), recursively.
fn listing(dir: &Path, prefix: &[u8], out: &mut Vec<(Vec<u8>, char, Vec<u8>)>) {
    for e in fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let mut name = prefix.to_vec();
        name.extend_from_slice(e.file_name().as_bytes());
        let m = fs::symlink_metadata(e.path()).unwrap();
        if m.file_type().is_symlink() {
            let target = fs::read_link(e.path()).unwrap();
            out.push((name, 'l', target.as_os_str().as_bytes().to_vec()));
        } else if m.is_dir() {
            out.push((name.clone(), 'd', vec![]));
            name.push(b'/');
            listing(&e.path(), &name, out);
        } else if m.is_file() {
            out.push((name, 'f', fs::read(e.path()).unwrap()));
        }
    }
    out.sort();
}

fn tree(root: &Path) -> Vec<(Vec<u8>, char, Vec<u8>)> {
    let mut out = Vec::new();
    listing(root, b"", &mut out);
    out
}

#[test]
fn names_and_link_targets_that_are_not_utf8_snapshot_diff_and_restore_byte_for_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let (root, state) = (tmp.path().join("p"), tmp.path().join("state"));
    fs::create_dir_all(&root).unwrap();
    fs::write(raw(&root, b"caf\xe9.txt"), b"latin-1 name\n").unwrap();
    fs::create_dir(raw(&root, b"dir\xff")).unwrap();
    fs::write(raw(&root, b"dir\xff/inner\xfe.bin"), b"\x00\x01 bytes").unwrap();
    symlink(OsStr::from_bytes(b"target\xe9"), raw(&root, b"link")).unwrap();
    symlink("caf\u{e9}-utf8.txt", raw(&root, b"link-\xe9")).unwrap();
    fs::write(root.join("plain.txt"), "plain\n").unwrap();
    let before = tree(&root);

    let s = Store::open(&root, &state, Config::default()).unwrap();
    let meta = |kind| Meta { turn: Some("t1".into()), ..Meta::new("s1", kind) };
    let start = s.snapshot(&meta(Kind::TurnStart)).unwrap();
    assert!(start.uncaptured.is_empty(), "{:?}", start.uncaptured);
    let entries = s.entries(&start).unwrap();
    let names: Vec<String> = entries.keys().map(|k| hands_checkpoint::names::escaped(k)).collect();
    for shown in ["caf\\xe9.txt", "dir\\xff", "dir\\xff/inner\\xfe.bin", "link", "link-\\xe9"] {
        assert!(names.iter().any(|n| n == shown), "{shown} not in {names:?}");
    }
    let link = entries.iter().find(|(k, _)| k.as_str() == "link").unwrap().1;
    let Entry::Link { target } = link else { panic!("{link:?}") };
    assert_eq!(hands_checkpoint::names::bytes(target).unwrap(), b"target\xe9");

    // The turn deletes, alters and re-points them.
    fs::remove_file(raw(&root, b"caf\xe9.txt")).unwrap();
    fs::write(raw(&root, b"dir\xff/inner\xfe.bin"), b"changed").unwrap();
    fs::remove_file(raw(&root, b"link")).unwrap();
    symlink(OsStr::from_bytes(b"elsewhere\xfa"), raw(&root, b"link")).unwrap();
    fs::write(raw(&root, b"new\x80.txt"), b"new\n").unwrap();
    let end = s.snapshot(&meta(Kind::TurnEnd)).unwrap();

    let changes = diff(&s, Some(&start), &end).unwrap();
    let shown: Vec<(&str, ChangeKind)> =
        changes.iter().map(|c| (c.path.as_str(), c.kind)).collect();
    assert_eq!(
        shown,
        vec![
            ("caf\\xe9.txt", ChangeKind::Deleted),
            ("dir\\xff/inner\\xfe.bin", ChangeKind::Modified),
            ("link", ChangeKind::Modified),
            ("new\\x80.txt", ChangeKind::Added),
        ]
    );
    let deleted = changes.iter().find(|c| c.kind == ChangeKind::Deleted).unwrap();
    assert!(deleted.unified.as_deref().unwrap().contains("a/caf\\xe9.txt"), "{deleted:?}");
    let link = changes.iter().find(|c| c.path == "link").unwrap();
    let unified = link.unified.as_deref().unwrap();
    assert!(unified.contains("-target\\xe9") && unified.contains("+elsewhere\\xfa"), "{unified}");
    assert_eq!(end.changes.files, 4);

    let r = s.restore(start.id, &Meta::new("s1", Kind::Restore)).unwrap();
    assert_eq!(tree(&root), before, "restored byte for byte");
    assert!(r.written.contains(&"caf\\xe9.txt".to_string()), "{:?}", r.written);
    assert!(r.deleted.contains(&"new\\x80.txt".to_string()), "{:?}", r.deleted);
    // Its undo brings the turn's state back, bytes included.
    s.restore(r.undo.id, &Meta::new("s1", Kind::Restore)).unwrap();
    assert!(fs::symlink_metadata(raw(&root, b"new\x80.txt")).is_ok());
    assert_eq!(
        fs::read_link(raw(&root, b"link")).unwrap().as_os_str().as_bytes(),
        b"elsewhere\xfa"
    );
    // And the next snapshots agree with the tree (the index leaves such names out: read again).
    let again = s.snapshot(&meta(Kind::TurnEnd)).unwrap();
    assert_eq!(again.tree, end.tree);
}

#[test]
fn what_cannot_be_captured_is_named_in_the_checkpoint_and_the_restore() {
    let tmp = tempfile::tempdir().unwrap();
    let (root, state) = (tmp.path().join("p"), tmp.path().join("state"));
    fs::create_dir_all(&root).unwrap();
    fs::write(root.join("a.txt"), "a\n").unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        raw(&root, b"pipe\xe9"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    let _sock = std::os::unix::net::UnixListener::bind(root.join("sock")).unwrap();
    let unreadable = root.join("locked.txt");
    fs::write(&unreadable, "no\n").unwrap();
    fs::set_permissions(&unreadable, fs::Permissions::from_mode(0o000)).unwrap();

    let s = Store::open(&root, &state, Config::default()).unwrap();
    let cp = s.snapshot(&Meta::new("s1", Kind::TurnStart)).unwrap();
    let named: Vec<(&str, &str, &str)> = cp
        .uncaptured
        .iter()
        .map(|u| (u.path.as_str(), u.escaped.as_str(), u.reason.as_str()))
        .collect();
    assert!(named.contains(&("pipe\u{fffd}", "pipe\\xe9", "fifo")), "{named:?}");
    assert!(named.contains(&("sock", "sock", "socket")), "{named:?}");
    if is_root() {
        eprintln!("running as root: a 0000 file is readable, so it is captured");
        assert!(s.entries(&cp).unwrap().contains_key("locked.txt"));
    } else {
        let locked = named.iter().find(|n| n.0 == "locked.txt").expect("locked.txt named");
        assert!(locked.2.starts_with("unreadable: "), "{locked:?}");
    }
    // The record keeps them; the restore (its undo checkpoint) names them too.
    assert_eq!(s.load(cp.id).unwrap().uncaptured, cp.uncaptured);
    fs::write(root.join("a.txt"), "changed\n").unwrap();
    let r = s.restore(cp.id, &Meta::new("s1", Kind::Restore)).unwrap();
    assert_eq!(fs::read_to_string(root.join("a.txt")).unwrap(), "a\n");
    assert_eq!(r.uncaptured, r.undo.uncaptured);
    assert!(r.uncaptured.iter().any(|u| u.escaped == "pipe\\xe9"), "{:?}", r.uncaptured);
    // The FIFO is left as it was.
    let m = fs::symlink_metadata(raw(&root, b"pipe\xe9")).unwrap();
    assert!(std::os::unix::fs::FileTypeExt::is_fifo(&m.file_type()));
}

/// Issue 34, item 6: hands' own runtime files in `.hands/` are neither captured, nor counted in
/// a turn's changes, nor touched by a restore; what a project keeps there (its config, skills)
/// and a `.gitignore` of the user's are.
#[test]
fn hands_runtime_files_are_not_the_users_changes() {
    use hands_core::middleware::truncate;
    let tmp = tempfile::tempdir().unwrap();
    let (root, state) = (tmp.path().join("p"), tmp.path().join("state"));
    fs::create_dir_all(root.join(".hands/skills/deploy")).unwrap();
    fs::write(root.join(".hands/config.toml"), "[preview]\n").unwrap();
    fs::write(root.join(".hands/skills/deploy/SKILL.md"), "# Deploy\n").unwrap();
    fs::write(root.join("app.js"), "one\n").unwrap();
    let s = Store::open(&root, &state, Config::default()).unwrap();
    let meta = |kind| Meta { turn: Some("t1".into()), ..Meta::new("s1", kind) };
    let start = s.snapshot(&meta(Kind::TurnStart)).unwrap();

    // The turn writes 3 files; meanwhile hands writes its own: the preview's discovery file
    // (and its .gitignore), a spilled output, a process log.
    for (name, text) in
        [("app.js", "two\n"), ("b.js", "b\n"), (".hands/skills/deploy/SKILL.md", "# Deploy!\n")]
    {
        fs::write(root.join(name), text).unwrap();
    }
    truncate::ensure_hands_gitignore(&root).unwrap();
    fs::write(root.join(".hands/devtools.json"), "{\"pid\": 1}\n").unwrap();
    fs::write(root.join(".hands/.devtools.json.tmp-77"), "{").unwrap();
    truncate::outputs_dir(&root).unwrap().write("c1.txt", "spilled").unwrap();
    truncate::hands_subdir(&root, "processes").unwrap().write("p1.log", "log").unwrap();
    let gitignore = fs::read_to_string(root.join(".hands/.gitignore")).unwrap();
    assert!(
        gitignore.starts_with(truncate::GITIGNORE_MARKER)
            && gitignore.contains("\ndevtools.json\n")
    );
    let end = s.snapshot(&meta(Kind::TurnEnd)).unwrap();
    let changes = diff(&s, Some(&start), &end).unwrap();
    let paths: Vec<&str> = changes.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(paths, [".hands/skills/deploy/SKILL.md", "app.js", "b.js"], "{changes:?}");
    assert_eq!(end.changes.files, 3);

    // Undo: the turn's files go back; hands' own stay as they are.
    fs::write(root.join(".hands/devtools.json"), "{\"pid\": 2}\n").unwrap();
    s.restore(start.id, &Meta::new("s1", Kind::Restore)).unwrap();
    assert_eq!(fs::read_to_string(root.join("app.js")).unwrap(), "one\n");
    assert!(!root.join("b.js").exists());
    assert_eq!(fs::read_to_string(root.join(".hands/devtools.json")).unwrap(), "{\"pid\": 2}\n");
    assert_eq!(fs::read_to_string(root.join(".hands/.gitignore")).unwrap(), gitignore);
    assert!(
        root.join(".hands/outputs/c1.txt").exists()
            && root.join(".hands/processes/p1.log").exists()
    );

    // hands' .gitignore changed (a rule that would hide `.hands/` files) is captured.
    let edited = format!("{gitignore}config.toml\n");
    fs::write(root.join(".hands/.gitignore"), &edited).unwrap();
    let hidden = s.snapshot(&meta(Kind::TurnEnd)).unwrap();
    let entries = s.entries(&hidden).unwrap();
    assert!(entries.keys().any(|k| k.as_str() == ".hands/.gitignore"), "an edited one is captured");
    // A .gitignore of the user's in .hands is theirs: captured, and never overwritten.
    fs::write(root.join(".hands/.gitignore"), "secrets.local\n").unwrap();
    truncate::ensure_hands_gitignore(&root).unwrap();
    assert_eq!(fs::read_to_string(root.join(".hands/.gitignore")).unwrap(), "secrets.local\n");
    let later = s.snapshot(&meta(Kind::TurnEnd)).unwrap();
    let entries = s.entries(&later).unwrap();
    assert!(entries.keys().any(|k| k.as_str() == ".hands/.gitignore"), "the user's .gitignore");
    assert!(!entries.keys().any(|k| k.as_str() == ".hands/devtools.json"));
}
