//! Escape attempts against all six fs tools, through the real `hands` binary: each is refused with
//! a clear error (or, for whole-tree searches, simply finds nothing outside), and nothing outside
//! the root is read or written.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::{Value, json};

const SECRET: &str = "TOPSECRET-4242";

struct Fixture {
    _tmp: tempfile::TempDir,
    base: PathBuf,
    root: PathBuf,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let root = base.join("proj");
    let outside = base.join("outside");
    let evil = base.join("proj-evil");
    for dir in [&root, &outside, &evil, &root.join("sub"), &root.join(".git")] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(outside.join("secret.txt"), SECRET).unwrap();
    std::fs::write(evil.join("secret.txt"), SECRET).unwrap();
    std::fs::write(root.join("inside.txt"), "hello\n").unwrap();
    std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    symlink("../outside", root.join("link_out")).unwrap();
    symlink("../outside/secret.txt", root.join("link_file")).unwrap();
    symlink("chain2", root.join("chain1")).unwrap();
    symlink("../outside/secret.txt", root.join("chain2")).unwrap();
    symlink("../../outside", root.join("sub/parentlink")).unwrap();
    symlink(&outside, root.join("abs_link")).unwrap();
    symlink(".git", root.join("gitlink")).unwrap();
    Fixture { _tmp: tmp, base, root }
}

impl Fixture {
    fn call(&self, tool: &str, args: Value) -> (i32, String) {
        let out = Command::cargo_bin("hands")
            .unwrap()
            .args(["call", tool, &args.to_string(), "--root"])
            .arg(&self.root)
            .env("HOME", &self.base)
            .env_remove("XDG_CONFIG_HOME")
            .timeout(std::time::Duration::from_secs(60))
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code().unwrap_or(-1), text)
    }

    fn outside_untouched(&self) {
        for dir in ["outside", "proj-evil"] {
            let names: Vec<String> = std::fs::read_dir(self.base.join(dir))
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            assert_eq!(names, ["secret.txt"], "{dir} changed");
            let content = std::fs::read_to_string(self.base.join(dir).join("secret.txt")).unwrap();
            assert_eq!(content, SECRET, "{dir}/secret.txt changed");
        }
    }
}

fn refused(text: &str) -> bool {
    let t = text.to_lowercase();
    ["outside the project root", "resolves outside", "symlink", "protected", ".git"]
        .iter()
        .any(|p| t.contains(p))
}

#[test]
fn escape_attempts_are_refused() {
    let f = fixture();
    let outside = f.base.join("outside");
    let evil = f.base.join("proj-evil");
    let abs = |p: &Path| p.to_string_lossy().into_owned();
    let proc_path = format!("/proc/self/root{}", abs(&outside.join("secret.txt")));
    let proc_new = format!("/proc/self/root{}", abs(&outside.join("new.txt")));
    let cases: Vec<(&str, Value)> = vec![
        // read_file
        ("read_file", json!({"path": "../outside/secret.txt"})),
        ("read_file", json!({"path": "sub/../../outside/secret.txt"})),
        ("read_file", json!({"path": "/etc/passwd"})),
        ("read_file", json!({"path": abs(&outside.join("secret.txt"))})),
        ("read_file", json!({"path": "link_file"})),
        ("read_file", json!({"path": "chain1"})),
        ("read_file", json!({"path": "link_out/secret.txt"})),
        ("read_file", json!({"path": abs(&evil.join("secret.txt"))})),
        ("read_file", json!({"path": proc_path})),
        ("read_file", json!({"path": "abs_link/secret.txt"})),
        ("read_file", json!({"path": "sub/parentlink/secret.txt"})),
        // write_file
        ("write_file", json!({"path": "../outside/new.txt", "content": "x"})),
        ("write_file", json!({"path": "link_out/new.txt", "content": "x"})),
        ("write_file", json!({"path": abs(&evil.join("new.txt")), "content": "x"})),
        ("write_file", json!({"path": "link_file", "content": "overwritten"})),
        ("write_file", json!({"path": proc_new, "content": "x"})),
        ("write_file", json!({"path": "sub/parentlink/new.txt", "content": "x"})),
        ("write_file", json!({"path": "abs_link/deep/new.txt", "content": "x"})),
        ("write_file", json!({"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\n"})),
        ("write_file", json!({"path": "gitlink/hooks/pre-commit", "content": "#!/bin/sh\n"})),
        // edit_file
        ("edit_file", json!({"path": "link_file", "old_string": SECRET, "new_string": "x"})),
        (
            "edit_file",
            json!({"path": "../outside/secret.txt", "old_string": SECRET, "new_string": "x"}),
        ),
        ("edit_file", json!({"path": "chain1", "old_string": SECRET, "new_string": "x"})),
        (
            "edit_file",
            json!({"path": "link_out/secret.txt", "old_string": SECRET, "new_string": "x"}),
        ),
        ("edit_file", json!({"path": ".git/HEAD", "old_string": "main", "new_string": "evil"})),
        // list_files
        ("list_files", json!({"path": ".."})),
        ("list_files", json!({"path": "link_out"})),
        ("list_files", json!({"path": "/"})),
        ("list_files", json!({"path": abs(&evil)})),
        // glob
        ("glob", json!({"pattern": "../outside/*"})),
        ("glob", json!({"pattern": "/etc/*"})),
        ("glob", json!({"pattern": "**/*", "path": "link_out"})),
        ("glob", json!({"pattern": "*", "path": abs(&evil)})),
        ("glob", json!({"pattern": "*", "path": ".."})),
        // grep
        ("grep", json!({"pattern": SECRET, "path": "../outside"})),
        ("grep", json!({"pattern": SECRET, "path": "link_out"})),
        ("grep", json!({"pattern": SECRET, "path": "link_file"})),
        ("grep", json!({"pattern": SECRET, "include": "../outside/*"})),
        ("grep", json!({"pattern": SECRET, "path": "/proc/self/root/etc"})),
    ];
    assert!(cases.len() >= 25);
    let mut failures = Vec::new();
    for (tool, args) in &cases {
        let (code, text) = f.call(tool, args.clone());
        if code != 1 || !refused(&text) || text.contains(SECRET) {
            failures.push(format!("{tool} {args} → exit {code}: {text}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} not refused:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    f.outside_untouched();
    assert_eq!(
        std::fs::read_to_string(f.root.join(".git/HEAD")).unwrap(),
        "ref: refs/heads/main\n"
    );
    assert!(!f.root.join(".git/hooks").exists());
    println!("{} escape attempts refused", cases.len());
}

#[test]
fn whole_tree_searches_do_not_follow_links_outside() {
    let f = fixture();
    let (code, text) = f.call("grep", json!({"pattern": SECRET}));
    assert_eq!(code, 0, "{text}");
    assert!(!text.contains("secret.txt:"), "{text}");
    let (code, text) = f.call("glob", json!({"pattern": "**/*"}));
    assert_eq!(code, 0, "{text}");
    assert!(!text.contains("secret.txt"), "{text}");
    assert!(text.contains("inside.txt"), "{text}");
    let (code, text) = f.call("list_files", json!({"depth": 5}));
    assert_eq!(code, 0, "{text}");
    // Symlinks are shown with their targets, never entered: no entry of the outside folder shows.
    assert!(text.contains("link_out -> ../outside"), "{text}");
    assert!(!text.lines().any(|l| l.trim_start().starts_with("secret.txt")), "{text}");
    f.outside_untouched();
}
