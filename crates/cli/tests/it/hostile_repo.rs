//! A hostile repository against the real binary (issue 11): named pipes where hands reads files
//! by itself (`.hands/config.toml`, a skill's `SKILL.md`, `.gitignore` files, `package.json`) must
//! not hang it; a project's `[preview]` commands must not run; a project's limits are clamped, so
//! that `processes.stop_grace_ms = 3600000` cannot keep hands running after SIGTERM. Every run is
//! bounded in time; each test has its own HOME.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A project and a HOME in one temp folder.
struct World {
    tmp: tempfile::TempDir,
    root: PathBuf,
}

impl World {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("project");
        std::fs::create_dir_all(root.join(".hands")).unwrap();
        std::fs::create_dir_all(tmp.path().join("home/.config/hands")).unwrap();
        Self { tmp, root }
    }

    fn hands(&self) -> Command {
        let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("hands"));
        for (name, _) in std::env::vars() {
            if name.starts_with("HANDS_") {
                cmd.env_remove(name);
            }
        }
        let home = self.tmp.path().join("home");
        cmd.env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_DATA_HOME", home.join(".local/share"))
            .env("XDG_STATE_HOME", home.join(".local/state"))
            .current_dir(&self.root)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    fn project_config(&self, text: &str) {
        std::fs::write(self.root.join(".hands/config.toml"), text).unwrap();
    }
}

fn mkfifo(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success(), "mkfifo {}", path.display());
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Run to the end, at most `limit`: a hang fails the test instead of blocking it.
fn run_within(cmd: &mut Command, limit: Duration) -> Out {
    let child = cmd.spawn().unwrap();
    wait(child, limit)
}

fn wait(child: Child, limit: Duration) -> Out {
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let Ok(out) = rx.recv_timeout(limit) else {
        let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
        panic!("hands did not finish within {limit:?} (it hung)");
    };
    let out = out.unwrap();
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

const PROMPTLY: Duration = Duration::from_secs(30);

// Item 13: a named pipe at .hands/config.toml hung `hands tools`.
#[test]
fn a_named_pipe_as_the_project_config_is_refused_at_once() {
    let world = World::new();
    mkfifo(&world.root.join(".hands/config.toml"));
    let out = run_within(world.hands().arg("tools"), PROMPTLY);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains(".hands/config.toml") && out.stderr.contains("not a regular file"),
        "{}",
        out.stderr
    );
}

// Item 13: a named pipe as a skill's SKILL.md hung `hands tools`; one as package.json hung the
// preview's detection (done while the tools are listed).
#[test]
fn a_named_pipe_as_a_skill_or_package_json_is_skipped_with_a_warning() {
    let world = World::new();
    mkfifo(&world.root.join(".hands/skills/x/SKILL.md"));
    mkfifo(&world.root.join("package.json"));
    let out = run_within(world.hands().arg("tools"), PROMPTLY);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("read_file"), "{}", out.stdout);
    assert!(
        out.stderr.contains(".hands/skills/x") && out.stderr.contains("not a regular file"),
        "the skipped skill is named: {}",
        out.stderr
    );
}

// Item 13: a named pipe as .gitignore hung grep and glob until their timeout, and left a thread
// blocked in open(2). read_file on a pipe must not hang either.
#[test]
fn named_pipes_as_ignore_files_do_not_hang_grep_or_glob_and_are_reported() {
    let world = World::new();
    std::fs::write(world.root.join("a.txt"), "needle here\n").unwrap();
    std::fs::create_dir_all(world.root.join("sub")).unwrap();
    std::fs::write(world.root.join("sub/b.txt"), "needle there\n").unwrap();
    std::fs::create_dir_all(world.root.join("clean")).unwrap();
    std::fs::write(world.root.join("clean/c.txt"), "needle too\n").unwrap();
    mkfifo(&world.root.join(".gitignore"));
    mkfifo(&world.root.join("sub/.ignore"));
    mkfifo(&world.root.join("pipe.txt"));

    let started = Instant::now();
    let grep = run_within(world.hands().args(["call", "grep", "pattern=needle"]), PROMPTLY);
    assert_eq!(grep.code, 0, "{}{}", grep.stdout, grep.stderr);
    assert!(
        grep.stdout.contains("a.txt") && grep.stdout.contains("clean/c.txt"),
        "{}",
        grep.stdout
    );
    assert!(!grep.stdout.contains("sub/b.txt"), "the folder with the bad .ignore is skipped");
    assert!(grep.stdout.contains("Skipped: ignore files that are not regular"), "{}", grep.stdout);
    assert!(grep.stdout.contains(".gitignore is not a regular file"), "{}", grep.stdout);
    assert!(
        grep.stdout.contains("sub/.ignore is not a regular file: its folder sub was not searched"),
        "{}",
        grep.stdout
    );

    let glob = run_within(world.hands().args(["call", "glob", "pattern=*.txt"]), PROMPTLY);
    assert_eq!(glob.code, 0, "{}{}", glob.stdout, glob.stderr);
    assert!(glob.stdout.contains("clean/c.txt"), "{}", glob.stdout);
    assert!(glob.stdout.contains("sub/.ignore is not a regular file"), "{}", glob.stdout);

    let read = run_within(world.hands().args(["call", "read_file", "path=pipe.txt"]), PROMPTLY);
    assert_eq!(read.code, 1, "{}{}", read.stdout, read.stderr);
    assert!(read.stderr.contains("not a regular file"), "{}", read.stderr);
    assert!(started.elapsed() < Duration::from_secs(60), "{:?}", started.elapsed());
}

// Item 4: `.hands/config.toml` set the preview's commands, and `y` to `allow preview_open: {}?`
// ran `id > MARK`.
#[test]
fn a_project_cannot_set_the_commands_the_preview_runs() {
    let world = World::new();
    std::fs::write(world.root.join("index.html"), "<h1>hi</h1>\n").unwrap();
    world.project_config(
        "[preview]\ntypecheck = \"id > MARK_T\"\nbuild = \"id > MARK_B\"\n\
         serve = \"id > MARK_S; sleep 30\"\nchromium = \"/bin/sh\"\n",
    );
    let shown = run_within(world.hands().args(["config", "show"]), PROMPTLY);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    for key in ["preview.typecheck", "preview.build", "preview.serve", "preview.chromium"] {
        assert!(shown.stdout.contains(&format!("# ignored: {key} in ")), "{}", shown.stdout);
    }
    assert!(shown.stdout.contains("serve = \"\"  # default"), "{}", shown.stdout);
    // A user's own flag makes Chromium fail fast; the preview gets as far as starting the browser.
    let out = run_within(
        world.hands().args([
            "-c",
            "preview.chromium=/nonexistent/chromium",
            "call",
            "preview_open",
        ]),
        Duration::from_secs(60),
    );
    assert!(
        out.stderr.contains("ignored: only the user may set this"),
        "the user is told: {}",
        out.stderr
    );
    for mark in ["MARK_T", "MARK_B", "MARK_S"] {
        assert!(
            !world.root.join(mark).exists(),
            "{mark} was written: {}{}",
            out.stdout,
            out.stderr
        );
    }
}

// Item 14: `processes.stop_grace_ms = 3600000` in a project file kept hands running long past
// SIGTERM.
#[test]
fn a_project_grace_period_is_clamped_and_sigterm_ends_hands_promptly() {
    let world = World::new();
    world.project_config("[processes]\nstop_grace_ms = 3600000\n");
    let shown = run_within(world.hands().args(["config", "show"]), PROMPTLY);
    assert!(
        shown.stdout.contains("stop_grace_ms = 5000  # ")
            && shown.stdout.contains("(clamped: it asked for 3600000"),
        "{}",
        shown.stdout
    );
    assert!(
        shown.stdout.contains("# clamped: processes.stop_grace_ms = 3600000 in "),
        "{}",
        shown.stdout
    );

    // A command that ignores SIGTERM: only the grace period's end (SIGKILL) stops it.
    let child = world
        .hands()
        .args(["call", "bash", "command=trap '' TERM; touch STARTED; sleep 120"])
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !world.root.join("STARTED").exists() {
        assert!(Instant::now() < deadline, "the command did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    let sent = Instant::now();
    let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    let _ = wait(child, Duration::from_secs(20));
    let took = sent.elapsed();
    assert!(took < Duration::from_secs(12), "hands took {took:?} to exit after SIGTERM");
}
