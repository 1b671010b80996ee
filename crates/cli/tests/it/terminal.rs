//! `hands run` as a person at a terminal meets it: in a real terminal emulator (tmux, a private
//! server per test), driven with send-keys and read with capture-pane, against the scripted model
//! (tests/agent/scripted_model.py). Issue 34: approvals that show what they approve and offer
//! "for this session", a spinner while the model thinks, failures that look like failures with
//! durations that leave out the person's wait, and a plan that is always the user's.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::run::{Model, World, all_text, python};

/// True when tmux runs; without it the test is skipped, except on CI where it fails.
fn tmux() -> bool {
    let ok = Command::new("tmux").arg("-V").output().is_ok_and(|o| o.status.success());
    if !ok {
        assert!(std::env::var_os("CI").is_none(), "tmux is needed for the terminal tests");
        eprintln!("skipped: tmux is not installed");
    }
    ok && python()
}

/// `hands` in a tmux pane of its own server; the server is killed when dropped.
struct Pane {
    socket: PathBuf,
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = self.tmux().arg("kill-server").output();
    }
}

/// What the pane shows after hands exited: `[exited N]`.
const EXITED: &str = "[exited ";

impl Pane {
    /// Start `hands args…` in `world` (its HOME, config, store and project folder) in a
    /// 160×50 terminal. The pane stays after hands exits, with `[exited N]` as its last line.
    fn start(world: &World, args: &[&str]) -> Self {
        let socket = world.dir().join("tmux.sock");
        let conf = world.dir().join("tmux.conf");
        std::fs::write(&conf, "set -g history-limit 50000\nset -g status off\n").unwrap();
        let script = world.dir().join("hands.sh");
        let mut line = format!("cd '{}' && '{}'", world.root.display(), hands_bin().display());
        for arg in args {
            line.push_str(&format!(" '{arg}'"));
        }
        std::fs::write(&script, format!("{line}\necho \"{EXITED}$?]\"\nexec sleep 600\n")).unwrap();
        let mut cmd = Command::new("tmux");
        world.env(&mut cmd);
        let status = cmd
            .arg("-S")
            .arg(&socket)
            .arg("-f")
            .arg(&conf)
            .args(["new-session", "-d", "-x", "160", "-y", "50", "sh"])
            .arg(&script)
            .env("TERM", "xterm-256color")
            .stdin(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "tmux started");
        Self { socket }
    }

    fn tmux(&self) -> Command {
        let mut cmd = Command::new("tmux");
        cmd.arg("-S").arg(&self.socket);
        cmd
    }

    /// Everything the pane showed, its history included (`escapes`: with its styles).
    fn capture(&self, escapes: bool) -> String {
        let mut cmd = self.tmux();
        cmd.args(["capture-pane", "-p", "-J", "-S", "-"]);
        if escapes {
            cmd.arg("-e");
        }
        String::from_utf8_lossy(&cmd.output().unwrap().stdout).into_owned()
    }

    /// The screen once `done` holds (checked every 50 ms, for at most 90 s).
    fn wait_for(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let screen = self.capture(false);
            if done(&screen) {
                return screen;
            }
            assert!(Instant::now() < deadline, "waited in vain for {what}:\n{screen}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The screen once it shows `text` `times` times.
    fn wait_count(&self, text: &str, times: usize) -> String {
        self.wait_for(&format!("{times}× {text:?}"), |s| s.matches(text).count() >= times)
    }

    /// Type `text` and Enter.
    fn answer(&self, text: &str) {
        if !text.is_empty() {
            assert!(self.tmux().args(["send-keys", "-l", text]).status().unwrap().success());
        }
        assert!(self.tmux().args(["send-keys", "Enter"]).status().unwrap().success());
    }

    /// The screen at hands' exit, and its exit code.
    fn exited(&self) -> (String, i32) {
        let screen = self.wait_count(EXITED, 1);
        let at = screen.rfind(EXITED).unwrap() + EXITED.len();
        let code = screen[at..].split(']').next().unwrap().parse().unwrap();
        (screen, code)
    }
}

fn hands_bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("hands")
}

// Issue 34, item 1: an approval showed `write_file: index.html` and nothing of what it wrote,
// and every write was asked about again.
#[test]
fn an_approval_shows_the_diff_or_the_content_and_a_allows_the_tool_for_the_session() {
    if !tmux() {
        return;
    }
    let world = World::new();
    std::fs::write(world.root.join("notes.txt"), "old line\nkept\n").unwrap();
    let model = Model::start(
        "anthropic",
        world.dir(),
        &json!([
            {"tool_calls": [{"id": "r1", "name": "read_file", "input": {"path": "notes.txt"}}]},
            {"tool_calls": [{"id": "e1", "name": "edit_file", "input": {"path": "notes.txt",
                "old_string": "old line", "new_string": "new line"}}]},
            {"tool_calls": [{"id": "w1", "name": "write_file",
                "input": {"path": "first.txt", "content": "FIRST-CONTENT\nsecond line\n"}}]},
            {"tool_calls": [{"id": "w2", "name": "write_file",
                "input": {"path": "second.txt", "content": "SECOND-CONTENT\n"}}]},
            {"tool_calls": [{"id": "b1", "name": "bash", "input": {"command": "echo from-bash"}}]},
            {"text": "All written."},
        ]),
    );
    world.user_config(&model.config());
    let pane = Pane::start(&world, &["run", "-c", "approval=ask", "write the files"]);
    let screen = pane.wait_count("[y/a/N, or say why not]", 1);
    assert!(screen.contains("hands: allow edit_file (") && screen.contains("│ notes.txt\n"));
    assert!(screen.contains("│ -old line") && screen.contains("│ +new line"), "the diff: {screen}");
    assert!(screen.contains("a: allow every edit_file call for the rest of this session"));
    pane.answer("y");
    let screen = pane.wait_count("[y/a/N, or say why not]", 2);
    let second = &screen[screen.find("hands: allow write_file").expect("write_file asked")..];
    assert!(second.contains("new file, 2 lines"), "{second}");
    assert!(second.contains("│ FIRST-CONTENT\n") && second.contains("│ second line\n"), "{second}");
    pane.answer("a");
    // The second write runs unasked; bash, another tool, is asked about.
    let screen = pane.wait_count("[y/a/N, or say why not]", 3);
    let third = &screen[screen.rfind("hands: allow").unwrap()..];
    assert!(third.starts_with("hands: allow bash: echo from-bash? [y/a/N"), "{screen}");
    assert!(screen.contains("✓ write_file second.txt ("), "{screen}");
    pane.answer("not now");
    let (screen, code) = pane.exited();
    assert_eq!(code, 0, "{screen}");
    assert_eq!(screen.matches("[y/a/N").count(), 3, "edit_file, write_file, bash: {screen}");
    assert!(screen.contains("All written."), "{screen}");
    assert!(!screen.contains("{\""), "no JSON on the screen: {screen}");
    assert_eq!(std::fs::read_to_string(world.root.join("notes.txt")).unwrap(), "new line\nkept\n");
    assert_eq!(std::fs::read_to_string(world.root.join("second.txt")).unwrap(), "SECOND-CONTENT\n");
    let requests = model.requests();
    assert_eq!(requests.len(), 6, "{screen}");
    assert!(all_text(&requests[5]).contains("declined bash and said: not now"));
}

// Issue 34, item 2: the terminal stayed blank while the model thought.
#[test]
fn a_spinner_with_the_seconds_turns_while_the_model_thinks_and_leaves_no_trace() {
    if !tmux() {
        return;
    }
    let world = World::new();
    let model = Model::start(
        "anthropic",
        world.dir(),
        &json!([
            {"delay_ms": 2500, "tool_calls": [{"id": "l1", "name": "list_files", "input": {}}]},
            {"delay_ms": 2500, "text": "Thought it through."},
        ]),
    );
    world.user_config(&model.config());
    let pane = Pane::start(&world, &["run", "think first"]);
    let frames = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
    let thinking = |s: &str| frames.iter().any(|f| s.contains(&format!("{f} thinking (")));
    pane.wait_for("the spinner before the first call", |s| thinking(s) && !s.contains("✓"));
    pane.wait_for("a second of thinking", |s| s.contains(" thinking (1 s)"));
    pane.wait_for("the spinner after the call", |s| s.contains("✓ list_files") && thinking(s));
    let (screen, code) = pane.exited();
    assert_eq!(code, 0, "{screen}");
    assert!(!screen.contains("thinking"), "the spinner was erased: {screen}");
    let lines: Vec<&str> = screen.lines().filter(|l| !l.trim().is_empty()).collect();
    let at = lines.iter().position(|l| l.starts_with("✓ list_files")).expect("the call's line");
    assert!(lines[at].ends_with(')'), "nothing after the call's line: {:?}", lines[at]);
    assert_eq!(lines[at + 1], "Thought it through.", "{screen}");
    // Without a terminal, nothing of it.
    let piped = World::new();
    let model = Model::start("anthropic", piped.dir(), &json!([{"delay_ms": 1500, "text": "ok"}]));
    piped.user_config(&model.config());
    let mut cmd = Command::new(hands_bin());
    piped.env(&mut cmd);
    let out = cmd.args(["run", "think"]).stdin(Stdio::null()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("thinking") && !stderr.contains('\u{1b}'), "{stderr:?}");
}

// Issue 34, item 3: a bash call that exited 1 was `✓`, and a call's time included the minutes a
// person took to approve it.
#[test]
fn a_failed_bash_call_is_a_cross_with_its_reason_and_last_lines_and_its_time_is_its_own() {
    if !tmux() {
        return;
    }
    let world = World::new();
    let failing = "for n in 1 2 3 4 5 6 7; do echo out-$n; done; exit 3";
    let model = Model::start(
        "anthropic",
        world.dir(),
        &json!([
            {"tool_calls": [{"id": "b1", "name": "bash", "input": {"command": failing}}]},
            {"tool_calls": [{"id": "b2", "name": "bash",
                "input": {"command": "sleep 20", "timeout": 1000}}]},
            {"tool_calls": [{"id": "b3", "name": "bash", "input": {"command": "kill -9 $$"}}]},
            {"tool_calls": [{"id": "b4", "name": "bash", "input": {"command": "echo fine"}}]},
            {"text": "Seen."},
        ]),
    );
    world.user_config(&model.config());
    let pane = Pane::start(&world, &["run", "-c", "approval=ask", "fail"]);
    pane.wait_count("[y/a/N, or say why not]", 1);
    // A person who takes their time: the call's duration must not include it.
    std::thread::sleep(Duration::from_millis(2500));
    pane.answer("a");
    let (screen, code) = pane.exited();
    assert_eq!(code, 0, "{screen}");
    let line = screen.lines().find(|l| l.starts_with("✗ bash for n in")).expect("✗ for exit 3");
    let took = line.split("(exit 3, ").nth(1).expect("the exit code and the time");
    assert!(took.ends_with(" ms)"), "the 2.5 s wait for the person is not counted: {line}");
    let tail: Vec<&str> = screen.lines().filter(|l| l.starts_with("    │ out-")).collect();
    assert_eq!(tail, ["    │ out-3", "    │ out-4", "    │ out-5", "    │ out-6", "    │ out-7"]);
    assert!(screen.contains("✗ bash sleep 20 (timed out, "), "{screen}");
    assert!(screen.contains("✗ bash kill -9 $$ (killed by signal 9 (SIGKILL), "), "{screen}");
    assert!(screen.contains("✓ bash echo fine ("), "{screen}");
    assert_eq!(screen.matches("hands: allow ").count(), 1, "`a` covered the rest: {screen}");
    drop(model);
}

// Issue 34, item 4: under approval = "auto" a plan was accepted in 0 ms, unseen.
#[test]
fn under_auto_a_plan_is_asked_about_rendered_and_a_no_keeps_plan_mode() {
    if !tmux() {
        return;
    }
    let world = World::new();
    let plan = "# Build plan\n\n- write **index.html**\n- run `npm test`\n\n```sh\nnpm test\n```";
    let model = Model::start(
        "anthropic",
        world.dir(),
        &json!([
            {"tool_calls": [{"id": "p1", "name": "exit_plan_mode", "input": {"plan": plan}}]},
            {"text": "Staying in plan mode."},
        ]),
    );
    world.user_config(&model.config());
    let pane = Pane::start(&world, &["run", "--mode", "plan", "-c", "approval=auto", "plan it"]);
    let screen = pane.wait_count("approve this plan and start building? [y/N", 1);
    assert!(!screen.contains("[y/a/N"), "a plan is never allowed for the session: {screen}");
    assert!(screen.contains("\nBuild plan\n"), "{screen}");
    assert!(!screen.contains("# Build plan") && !screen.contains("```"), "{screen}");
    assert!(screen.contains("  • write index.html\n  • run npm test\n"), "{screen}");
    assert!(screen.contains("\n    npm test\n"), "{screen}");
    let styled = pane.capture(true);
    assert!(styled.contains("\u{1b}[1m") || styled.contains("\u{1b}[1;4m"), "{styled:?}");
    pane.answer("n");
    let (screen, code) = pane.exited();
    assert_eq!(code, 0, "{screen}");
    assert!(screen.contains("✗ exit_plan_mode"), "{screen}");
    assert!(!screen.contains("mode: build"), "{screen}");
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        all_text(&requests[1]).contains("declined exit_plan_mode"),
        "{}",
        all_text(&requests[1])
    );
    assert!(requests[1]["system"].to_string().contains("Mode: plan"), "still planning");
}
