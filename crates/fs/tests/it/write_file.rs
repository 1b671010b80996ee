#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Black-box tests of write_file through the registry: creation, atomic update keeping the mode,
//! `.git` protection, symlinks, the stale-write guard and the size cap.

use crate::common;

use std::os::unix::fs::PermissionsExt;

use common::Project;
use serde_json::json;

#[tokio::test]
async fn creates_with_parents_and_reports() {
    let p = Project::new();
    let out = p
        .call("write_file", json!({"path": "src/deep/a.rs", "content": "fn a() {}\nfn b() {}\n"}))
        .await;
    assert!(!out.is_error, "{}", out.joined_text());
    assert_eq!(out.joined_text(), "Created src/deep/a.rs (2 lines, 20 bytes)");
    assert_eq!(
        out.structured.unwrap(),
        json!({"action": "created", "path": "src/deep/a.rs", "lines": 2, "bytes": 20})
    );
    assert_eq!(p.get("src/deep/a.rs"), b"fn a() {}\nfn b() {}\n");
    // Written by this session, so it can be overwritten without a read.
    let text = p.ok("write_file", json!({"path": "src/deep/a.rs", "content": "x"})).await;
    assert_eq!(text, "Updated src/deep/a.rs (1 line, 1 byte)");
    let names: Vec<_> =
        std::fs::read_dir(p.path("src/deep")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names.len(), 1, "temp files left behind: {names:?}");
}

#[tokio::test]
async fn update_keeps_the_mode() {
    let p = Project::new();
    p.put("run.sh", "#!/bin/sh\necho old\n");
    std::fs::set_permissions(p.path("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    p.ok("read_file", json!({"path": "run.sh"})).await;
    p.ok("write_file", json!({"path": "run.sh", "content": "#!/bin/sh\necho new\n"})).await;
    assert_eq!(p.get("run.sh"), b"#!/bin/sh\necho new\n");
    let mode = std::fs::metadata(p.path("run.sh")).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o755);
}

#[tokio::test]
async fn git_is_protected_also_through_a_symlinked_folder() {
    let p = Project::new();
    std::fs::create_dir_all(p.path(".git/hooks")).unwrap();
    let err =
        p.err("write_file", json!({"path": ".git/hooks/pre-commit", "content": "evil"})).await;
    assert!(err.contains(".git") && err.contains("protected"), "{err}");
    std::os::unix::fs::symlink(".git", p.path("linkdir")).unwrap();
    let err = p.err("write_file", json!({"path": "linkdir/hooks/x", "content": "evil"})).await;
    assert!(err.contains("protected") && err.contains("through a symlink"), "{err}");
    assert!(!p.path(".git/hooks/pre-commit").exists());
    assert!(!p.path(".git/hooks/x").exists());
    // Configured writable paths are allowed.
    let p2 = Project::with_config(hands_fs::FsConfig {
        writable_protected: vec![".git/info/exclude".into()],
        ..Default::default()
    });
    p2.ok("write_file", json!({"path": ".git/info/exclude", "content": "target/\n"})).await;
    assert_eq!(p2.get(".git/info/exclude"), b"target/\n");
}

/// Review finding 1: `.hands/config.toml` is protected like `.git/`, by name and by real path, and
/// `writable_protected` cannot open it.
#[tokio::test]
async fn review_finding_1_hands_config_is_protected_like_git() {
    let p = Project::with_config(hands_fs::FsConfig {
        writable_protected: vec![".hands/config.toml".into()],
        ..Default::default()
    });
    p.put(".hands/config.toml", "approval = \"ask\"\n");
    p.ok("read_file", json!({"path": ".hands/config.toml"})).await;
    let evil = "approval = \"auto\"\n";
    for path in [".hands/config.toml", "./.hands/../.hands/config.toml", ".HANDS/Config.toml"] {
        let err = p.err("write_file", json!({"path": path, "content": evil})).await;
        assert!(err.contains("hands' own configuration"), "{path}: {err}");
        assert!(err.contains("The user can change hands' configuration themselves"), "{err}");
    }
    let err = p
        .err(
            "edit_file",
            json!({"path": ".hands/config.toml", "old_string": "ask", "new_string": "auto"}),
        )
        .await;
    assert!(err.contains("hands' own configuration"), "{err}");
    // Through a symlinked folder, and through the real place of a symlinked `.hands`.
    std::os::unix::fs::symlink(".hands", p.path("cfg")).unwrap();
    let err = p.err("write_file", json!({"path": "cfg/config.toml", "content": evil})).await;
    assert!(err.contains("hands' own configuration") && err.contains("through a symlink"), "{err}");
    assert_eq!(p.get(".hands/config.toml"), b"approval = \"ask\"\n");
    let q = Project::new();
    q.put("real/config.toml", "approval = \"ask\"\n");
    std::os::unix::fs::symlink("real", q.path(".hands")).unwrap();
    q.ok("read_file", json!({"path": "real/config.toml"})).await;
    let err = q.err("write_file", json!({"path": "real/config.toml", "content": evil})).await;
    assert!(err.contains("hands' own configuration"), "{err}");
    assert_eq!(q.get("real/config.toml"), b"approval = \"ask\"\n");
    // Other files in .hands stay writable.
    p.ok("write_file", json!({"path": ".hands/skills/x/SKILL.md", "content": "x"})).await;
}

/// Review finding 2: a write_file that timed out must not land afterwards. The limit (1 ms) fires
/// long before 15 MB are written and fsynced; the call is answered as timed out, and the file must
/// not appear later (nor an existing one change).
#[tokio::test]
async fn review_finding_2_a_timed_out_write_never_lands() {
    let mut core = hands_core::CoreConfig::default();
    core.timeouts.tools.insert("write_file".into(), 1);
    let p = Project::with_configs(core, hands_fs::FsConfig::default()).one_shot();
    let content = "x".repeat(15 * 1024 * 1024);
    let out = p.call("write_file", json!({"path": "big.txt", "content": content})).await;
    assert!(out.is_error, "{}", out.joined_text());
    assert!(out.joined_text().contains("timed out"), "{}", out.joined_text());
    p.put("old.txt", "old");
    let out = p.call("write_file", json!({"path": "old.txt", "content": content})).await;
    assert!(out.is_error, "{}", out.joined_text());
    // Give a write that ignored the token every chance to land.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert!(!p.path("big.txt").exists(), "the timed-out write landed afterwards");
    assert_eq!(p.get("old.txt"), b"old");
    let names: Vec<_> =
        std::fs::read_dir(p.tmp.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["old.txt"], "temp files left behind");
}

#[tokio::test]
async fn symlinks_are_not_written_through() {
    let p = Project::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("victim.txt"), "safe").unwrap();
    std::os::unix::fs::symlink(outside.path().join("victim.txt"), p.path("link.txt")).unwrap();
    let err = p.err("write_file", json!({"path": "link.txt", "content": "pwned"})).await;
    assert!(err.contains("symlink"), "{err}");
    assert_eq!(std::fs::read_to_string(outside.path().join("victim.txt")).unwrap(), "safe");
    // A symlinked folder leading outside.
    std::os::unix::fs::symlink(outside.path(), p.path("out")).unwrap();
    let err = p.err("write_file", json!({"path": "out/new.txt", "content": "pwned"})).await;
    assert!(err.contains("outside the project root"), "{err}");
    assert!(!outside.path().join("new.txt").exists());
    // An inside symlink to a file is refused too, with the advice to write the target.
    p.put("real.txt", "r");
    std::os::unix::fs::symlink("real.txt", p.path("alias.txt")).unwrap();
    let err = p.err("write_file", json!({"path": "alias.txt", "content": "x"})).await;
    assert!(err.contains("Write to the file it points to"), "{err}");
    assert_eq!(p.get("real.txt"), b"r");
}

#[tokio::test]
async fn stale_write_guard() {
    let p = Project::new();
    p.put("a.txt", "v1\n");
    // Never read: refused.
    let err = p.err("write_file", json!({"path": "a.txt", "content": "mine\n"})).await;
    assert!(err.contains("has not read it") && err.contains("read_file"), "{err}");
    assert_eq!(p.get("a.txt"), b"v1\n");
    // Read, then changed behind our back (same size, so only the content differs): refused.
    p.ok("read_file", json!({"path": "a.txt"})).await;
    std::fs::write(p.path("a.txt"), "v2\n").unwrap();
    let err = p.err("write_file", json!({"path": "a.txt", "content": "mine\n"})).await;
    assert!(err.contains("changed on disk") && err.contains("Read it again"), "{err}");
    assert_eq!(p.get("a.txt"), b"v2\n");
    // Read again: allowed, and then a second write after our own write too.
    p.ok("read_file", json!({"path": "a.txt"})).await;
    p.ok("write_file", json!({"path": "a.txt", "content": "mine\n"})).await;
    p.ok("write_file", json!({"path": "a.txt", "content": "mine again\n"})).await;
    assert_eq!(p.get("a.txt"), b"mine again\n");
    // A paged read of a big file counts as a read too.
    p.put("big.txt", "z\n".repeat(600_000));
    p.ok("read_file", json!({"path": "big.txt", "offset": 1, "limit": 1})).await;
    p.ok("write_file", json!({"path": "big.txt", "content": "small\n"})).await;
}

#[tokio::test]
async fn one_shot_sessions_are_not_guarded() {
    let p = Project::new().one_shot();
    p.put("a.txt", "v1\n");
    p.ok("write_file", json!({"path": "a.txt", "content": "v2\n"})).await;
    assert_eq!(p.get("a.txt"), b"v2\n");
    // And the guard can be turned off.
    let p =
        Project::with_config(hands_fs::FsConfig { stale_write_guard: false, ..Default::default() });
    p.put("a.txt", "v1\n");
    p.ok("write_file", json!({"path": "a.txt", "content": "v2\n"})).await;
}

#[tokio::test]
async fn ten_megabytes_work_and_the_cap_holds() {
    let p = Project::new();
    let big = "0123456789abcdef\n".repeat(10 * 1024 * 1024 / 17);
    let text = p.ok("write_file", json!({"path": "big.txt", "content": big})).await;
    assert!(text.starts_with("Created big.txt ("), "{text}");
    assert_eq!(p.get("big.txt").len(), big.len());
    let p = Project::with_config(hands_fs::FsConfig { write_max_bytes: 100, ..Default::default() });
    let err = p.err("write_file", json!({"path": "a.txt", "content": "x".repeat(101)})).await;
    assert!(err.contains("101 bytes") && err.contains("100 bytes"), "{err}");
    assert!(!p.path("a.txt").exists());
}

#[tokio::test]
async fn bad_targets_are_model_errors() {
    let p = Project::new();
    std::fs::create_dir(p.path("dir")).unwrap();
    let err = p.err("write_file", json!({"path": "dir", "content": "x"})).await;
    assert!(err.contains("directory"), "{err}");
    let err = p.err("write_file", json!({"path": ".", "content": "x"})).await;
    assert!(err.contains("project root"), "{err}");
    p.put("file", "f");
    let err = p.err("write_file", json!({"path": "file/child.txt", "content": "x"})).await;
    assert!(err.contains("not a directory") || err.contains("is a file"), "{err}");
    let err = p.err("write_file", json!({"path": "../escape.txt", "content": "x"})).await;
    assert!(err.contains("outside the project root"), "{err}");
}
