//! The `hands` binary as a user meets it: tools, call (arguments, exit codes, images), config show.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use assert_cmd::Command;
use serde_json::Value;

fn hands(home: &Path) -> Command {
    let mut cmd = Command::cargo_bin("hands").unwrap();
    cmd.env("HOME", home).env_remove("XDG_CONFIG_HOME").env_remove("HANDS_APPROVAL");
    cmd.timeout(std::time::Duration::from_secs(60));
    cmd
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run(cmd: &mut Command) -> Out {
    let out = cmd.output().unwrap();
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn tools_lists_the_fs_and_process_tools_and_plan_mode_the_read_only_ones() {
    let tmp = tempfile::tempdir().unwrap();
    // A project of its own, not the home folder (clone_site is offered only there).
    let root = tmp.path().join("project");
    std::fs::create_dir(&root).unwrap();
    let core = [
        "read_file",
        "write_file",
        "edit_file",
        "apply_patch",
        "list_files",
        "glob",
        "grep",
        "repo_map",
        "bash",
        "spawn_process",
        "list_processes",
        "process_output",
        "stop_process",
        "terminal_start",
        "terminal_send",
        "terminal_read",
        "enter_plan_mode",
        "todo_write",
        "ask_user",
        "secrets",
    ];
    // A plain folder: no integration tool (a package, a web app or a database is their context).
    let listed = |root: &std::path::Path| {
        let out = run(hands(tmp.path()).args(["tools", "--json", "--root"]).arg(root));
        assert_eq!(out.code, 0, "{}", out.stderr);
        let v: Value = serde_json::from_str(&out.stdout).unwrap();
        let names: Vec<String> = v["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect();
        (names, v)
    };
    assert_eq!(listed(&root).0, core);
    // A web app with a Supabase folder, a document and a skill: the payment, database, page,
    // document and skill tools join them.
    std::fs::write(root.join("package.json"), "{}\n").unwrap();
    std::fs::write(root.join("brief.pdf"), "%PDF-1.4\n").unwrap();
    std::fs::create_dir_all(root.join(".hands/skills/notes")).unwrap();
    std::fs::write(
        root.join(".hands/skills/notes/SKILL.md"),
        "---\nname: notes\ndescription: Take notes\n---\nWrite them down.\n",
    )
    .unwrap();
    std::fs::create_dir(root.join("supabase")).unwrap();
    std::fs::write(root.join("supabase/config.toml"), "").unwrap();
    let out = run(hands(tmp.path()).args(["tools", "--json", "--root"]).arg(&root));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    let names: Vec<&str> =
        v["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "read_file",
            "write_file",
            "edit_file",
            "apply_patch",
            "list_files",
            "glob",
            "grep",
            "repo_map",
            "parse_document",
            "bash",
            "spawn_process",
            "list_processes",
            "process_output",
            "stop_process",
            "terminal_start",
            "terminal_send",
            "terminal_read",
            "enter_plan_mode",
            "todo_write",
            "ask_user",
            "use_skill",
            "secrets",
            "add_dependency",
            "diagnostics",
            "code_navigation",
            "download_to_repo",
            "clone_site",
            "enable_stripe",
            "connect_supabase",
            "db_schema",
            "supabase_setup",
            "run_security_scan"
        ]
    );
    let read = &v["tools"][0];
    assert_eq!(read["inputSchema"]["type"], "object");
    assert_eq!(read["annotations"]["readOnlyHint"], true);
    assert_eq!(v["tools"][1]["annotations"]["destructiveHint"], true);

    let out = run(hands(tmp.path()).args(["tools", "--mode", "plan", "--root"]).arg(&root));
    let names: Vec<&str> =
        out.stdout.lines().map(|l| l.split_whitespace().next().unwrap()).collect();
    assert_eq!(
        names,
        [
            "read_file",
            "list_files",
            "glob",
            "grep",
            "repo_map",
            "parse_document",
            "exit_plan_mode",
            "ask_user",
            "use_skill",
            "diagnostics",
            "code_navigation",
            "db_schema",
            "run_security_scan"
        ]
    );
}

#[test]
fn call_exit_codes_and_argument_forms() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::write(root.join("a.txt"), "one\ntwo\nthree\n").unwrap();
    // key=value: offset is a number by the schema; content stays a string even when numeric.
    let out = run(hands(root)
        .args(["call", "read_file", "path=a.txt", "offset=2", "limit=1", "--root"])
        .arg(root));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("2\ttwo"), "{}", out.stdout);
    assert!(!out.stdout.contains("one"), "{}", out.stdout);
    let out = run(hands(root)
        .args(["call", "write_file", "path=n.txt", "content=123", "--root"])
        .arg(root));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(std::fs::read_to_string(root.join("n.txt")).unwrap(), "123");
    // JSON argument and stdin.
    let out = run(hands(root).args(["call", "read", r#"{"path":"a.txt"}"#, "--root"]).arg(root));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = run(hands(root)
        .args(["call", "grep", "-", "--root"])
        .arg(root)
        .write_stdin(r#"{"pattern":"thr"}"#));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("a.txt:3:three"), "{}", out.stdout);
    // A tool error: exit 1, message on stderr.
    let out = run(hands(root).args(["call", "read_file", "path=missing.txt", "--root"]).arg(root));
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("missing.txt"), "{}", out.stderr);
    // Wrong type: exit 1 naming the field.
    let out = run(hands(root).args(["call", "read_file", r#"{"path": 3}"#, "--root"]).arg(root));
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("field `path`"), "{}", out.stderr);
    // Usage errors: exit 2.
    for args in [
        vec!["call", "read_file", "path"],
        vec!["call", "reed_file"],
        vec!["nonsense"],
        vec!["call", "read_file", "{bad json"],
    ] {
        let out = run(hands(root).args(&args).arg("--root").arg(root));
        assert_eq!(out.code, 2, "{args:?}: {} {}", out.stdout, out.stderr);
    }
    let out = run(hands(root).args(["call", "reed_file", "--root"]).arg(root));
    assert!(out.stderr.contains("Did you mean `read_file`"), "{}", out.stderr);
    // A missing root is a usage error too.
    let out = run(hands(root).args(["call", "read_file", "path=a", "--root", "/nonexistent/x"]));
    assert_eq!(out.code, 2);
}

#[test]
fn call_prints_images_as_one_line_and_saves_them() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    // A 1x1 PNG.
    let png: &[u8] = &[
        0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44,
        0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F,
        0x15, 0xC4, 0x89, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00,
        0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00, 0x00, 0x00, 0x49,
        0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
    ];
    std::fs::write(root.join("pic.jpg"), png).unwrap();
    let out = run(hands(root).args(["call", "read_file", "path=pic.jpg", "--root"]).arg(root));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let line = out
        .stdout
        .lines()
        .find(|l| l.contains("image/png"))
        .unwrap_or_else(|| panic!("{}", out.stdout));
    assert!(line.contains(&format!("{} bytes", png.len())), "{line}");
    let saved = line.split("saved to ").nth(1).unwrap().trim_end_matches(']');
    assert_eq!(std::fs::read(root.join(saved)).unwrap(), png);
}

#[test]
fn config_show_names_each_source_and_bad_files_are_clear_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("proj");
    std::fs::create_dir_all(root.join(".hands")).unwrap();
    std::fs::create_dir_all(home.join(".config/hands")).unwrap();
    std::fs::write(home.join(".config/hands/config.toml"), "[fs]\nglob_limit = 5\n").unwrap();
    std::fs::write(root.join(".hands/config.toml"), "[output]\nmax_bytes = 2048\n").unwrap();
    let out = run(hands(home)
        .args(["config", "show", "--root"])
        .arg(&root)
        .env("HANDS_APPROVAL", "ask")
        .args(["-c", "fs.grep_limit=9"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let s = &out.stdout;
    assert!(s.contains("approval = \"ask\"  # environment variable HANDS_APPROVAL"), "{s}");
    // Issue 34, item 9: the approval each front end uses, and where it came from.
    assert!(
        s.contains(
            "#   hands serve (session API, web UI): ask (approval, from environment variable \
             HANDS_APPROVAL)"
        ),
        "{s}"
    );
    let unset = run(hands(home).args(["config", "show", "--root"]).arg(&root));
    assert!(
        unset.stdout.contains("#   hands run, hands chat, hands acp: ask (their default")
            && unset.stdout.contains("#   hands mcp, hands call: auto (approval's default)"),
        "{}",
        unset.stdout
    );
    assert!(
        s.contains(&format!(
            "glob_limit = 5  # {}",
            home.join(".config/hands/config.toml").display()
        )),
        "{s}"
    );
    assert!(
        s.contains(&format!("max_bytes = 2048  # {}", root.join(".hands/config.toml").display())),
        "{s}"
    );
    assert!(s.contains("grep_limit = 9  # flag -c fs.grep_limit=9"), "{s}");
    assert!(s.contains("read_limit = 2000  # default"), "{s}");

    // The settings take effect: glob_limit = 5 from the user file.
    for i in 0..8 {
        std::fs::write(root.join(format!("f{i}.txt")), "x").unwrap();
    }
    let out = run(hands(home).args(["call", "glob", "pattern=*.txt", "--root"]).arg(&root));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout.lines().filter(|l| l.ends_with(".txt")).count(), 5, "{}", out.stdout);

    std::fs::write(root.join(".hands/config.toml"), "[output]\nmax_bytes = 2048\nmax_byts = 1\n")
        .unwrap();
    let out = run(hands(home).args(["config", "show", "--root"]).arg(&root));
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains(".hands/config.toml"), "{}", out.stderr);
    assert!(out.stderr.contains("line 3"), "{}", out.stderr);
    assert!(out.stderr.contains("max_byts"), "{}", out.stderr);
    std::fs::write(root.join(".hands/config.toml"), "[output\n").unwrap();
    let out = run(hands(home).args(["tools", "--root"]).arg(&root));
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("line 1"), "{}", out.stderr);
}

#[test]
fn truncation_spills_long_results_through_the_binary() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let body: String = (0..5_000).map(|i| format!("line {i}\n")).collect();
    std::fs::write(root.join("long.txt"), &body).unwrap();
    let out = run(hands(root)
        .args([
            "-c",
            "output.max_bytes=1000",
            "call",
            "read_file",
            "path=long.txt",
            "limit=5000",
            "--root",
        ])
        .arg(root));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("… [truncated, "), "{}", out.stdout);
    let spilled = out.stdout.split(".hands/outputs/").nth(1).unwrap().split(';').next().unwrap();
    let full = std::fs::read_to_string(root.join(".hands/outputs").join(spilled)).unwrap();
    assert!(full.contains("line 4999"));
    assert!(full.contains("  5000\tline 4999"), "the full numbered text is kept");
}

#[test]
fn named_pipes_are_refused_instead_of_blocking() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let status = std::process::Command::new("mkfifo").arg(root.join("pipe")).status().unwrap();
    assert!(status.success());
    let calls = [
        vec!["call", "read_file", "path=pipe"],
        vec!["call", "edit_file", "path=pipe", "old_string=a", "new_string=b"],
        vec!["call", "grep", "pattern=a", "path=pipe"],
    ];
    for args in calls {
        let started = std::time::Instant::now();
        let out = run(hands(root).args(&args).arg("--root").arg(root));
        assert_eq!(out.code, 1, "{args:?}: {}{}", out.stdout, out.stderr);
        assert!(out.stderr.contains("not a regular file"), "{args:?}: {}", out.stderr);
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
    }
    // A write replaces the pipe with a file rather than writing into it.
    let out =
        run(hands(root).args(["call", "write_file", "path=pipe", "content=x", "--root"]).arg(root));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(std::fs::read_to_string(root.join("pipe")).unwrap(), "x");
}

#[test]
fn approval_ask_refuses_without_a_terminal_and_asks_on_one() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    // No terminal: nobody to ask, so the write is refused at once and nothing is written.
    let out = run(hands(root)
        .args(["call", "write_file", "path=a.txt", "content=hi", "--root"])
        .arg(root)
        .env("HANDS_APPROVAL", "ask"));
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(out.stderr.contains("nobody to ask"), "{}", out.stderr);
    assert!(!root.join("a.txt").exists());
    // Read-only tools are not asked about.
    std::fs::write(root.join("r.txt"), "x\n").unwrap();
    let out = run(hands(root)
        .args(["call", "read_file", "path=r.txt", "--root"])
        .arg(root)
        .env("HANDS_APPROVAL", "ask"));
    assert_eq!(out.code, 0, "{}", out.stderr);

    // On a terminal (script(1) gives the command a pty): "y" approves, other words deny.
    let bin = assert_cmd::cargo::cargo_bin("hands");
    for (answer, file, approved) in [("y", "b.txt", true), ("not this one", "c.txt", false)] {
        let inner = format!(
            "HANDS_APPROVAL=ask {} call write_file path={file} content=hi --root {}",
            bin.display(),
            root.display()
        );
        let out = std::process::Command::new("script")
            .args(["-qec", &inner, "/dev/null"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut child| {
                use std::io::Write;
                child.stdin.take().unwrap().write_all(format!("{answer}\n").as_bytes())?;
                child.wait_with_output()
            })
            .expect("script(1) from util-linux runs the command on a pty");
        let text = String::from_utf8_lossy(&out.stdout);
        // A new file: the prompt shows its path and content (the approval's details).
        assert!(
            text.contains("hands: allow write_file (") && text.contains(&format!("│ {file}")),
            "{text}"
        );
        assert!(
            text.contains("│ new file, 1 line:") && text.contains("hands: allow it? [y/N]"),
            "{text}"
        );
        assert_eq!(root.join(file).exists(), approved, "{text}");
        if !approved {
            assert!(text.contains("The user declined write_file and said: not this one"), "{text}");
        }
    }
}

// Review finding: a repository (or the model) could ship `.hands/config.toml` with
// `fs.writable_protected = [".git/config"]` and then edit .git/config (code execution through
// core.fsmonitor). Project files cannot set user-only keys.
#[test]
fn a_project_config_cannot_unlock_git() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::create_dir_all(root.join(".hands")).unwrap();
    std::fs::write(root.join(".git/config"), "[core]\n\tbare = false\n").unwrap();
    std::fs::write(
        root.join(".hands/config.toml"),
        "approval = \"auto\"\n[fs]\nwritable_protected = [\".git/config\"]\n",
    )
    .unwrap();
    let out = run(hands(root)
        .args(["call", "edit_file", "path=.git/config", "old_string=bare = false"])
        .arg("new_string=bare = false\n\tfsmonitor = \"touch pwned\"")
        .arg("--root")
        .arg(root));
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(out.stderr.contains("protected"), "{}", out.stderr);
    assert_eq!(
        std::fs::read_to_string(root.join(".git/config")).unwrap(),
        "[core]\n\tbare = false\n"
    );
    let out = run(hands(root).args(["config", "show", "--root"]).arg(root));
    assert!(out.stdout.contains("# ignored: fs.writable_protected"), "{}", out.stdout);
}

// Issue 34, item 9: a busy port said only "Address in use", not what to pass instead.
#[test]
fn serve_on_a_busy_port_names_listen() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("proj")).unwrap();
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = busy.local_addr().unwrap().to_string();
    let out = run(hands(tmp.path())
        .args(["serve", "--listen", &addr, "--root"])
        .arg(tmp.path().join("proj")));
    assert_ne!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains(&format!("{addr} is already in use")), "{}", out.stderr);
    assert!(out.stderr.contains("pass another address with --listen"), "{}", out.stderr);
}

// Regression (seen in CI): a random token that starts with `-` was taken for a flag.
#[test]
fn serve_takes_a_token_that_starts_with_a_dash() {
    use std::io::BufRead;
    let tmp = tempfile::tempdir().unwrap();
    // The home folder cannot be a session root: the project is a folder of its own.
    std::fs::create_dir(tmp.path().join("proj")).unwrap();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("hands"))
        .args(["serve", "--listen", "127.0.0.1:0", "--token", "-ZFt-dash-token", "--root"])
        .arg(tmp.path().join("proj"))
        .env("HOME", tmp.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stderr.take().unwrap()).read_line(&mut line).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(line.contains("serving MCP at http://127.0.0.1:"), "{line}");
}
