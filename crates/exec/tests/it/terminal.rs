//! Terminal sessions through the registry: a REPL typed into, Ctrl-C and Ctrl-D, full-screen
//! programs read as a screen, waits that end on a pattern or the exit, budgets, wake-ups, and
//! nothing left running.

use crate::process_support;

use std::time::Duration;

use process_support::{Env, eventually};
use serde_json::json;

fn env() -> Env {
    Env::with(|c| c.processes.stop_grace_ms = 300)
}

async fn assert_nothing_left(env: &Env) {
    env.session.close().await;
    assert!(
        eventually(Duration::from_secs(5), || env.marked().is_empty()).await,
        "left running: {:?}",
        env.marked()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_python_repl_is_started_typed_into_and_left() {
    let env = env();
    let (text, s) =
        env.ok("terminal_start", json!({"command": "python3 -q", "wait_for": ">>> "})).await;
    assert_eq!(s["waited"], "match", "{text}");
    assert_eq!(s["status"], "running");
    assert_eq!(s["id"], "p1");
    let (text, s) = env
        .ok("terminal_send", json!({"id": "p1", "text": "print(6 * 7)\n", "wait_for": "42"}))
        .await;
    assert_eq!(s["matched"], "42", "{text}");
    assert!(s["output"].as_str().unwrap().contains("print(6 * 7)"), "the echo: {s}");
    assert!(!s["output"].as_str().unwrap().contains("\x1b"), "no escape codes: {s}");
    let (text, s) = env
        .ok("terminal_send", json!({"id": "p1", "text": "exit()\n", "wait_for": "nothing-such"}))
        .await;
    assert_eq!(s["waited"], "exit", "{text}");
    assert_eq!(s["status"], "exited");
    assert_eq!(s["exit_code"], 0);
    let (_, list) = env.ok("list_processes", json!({})).await;
    assert_eq!(list["processes"][0]["type"], "terminal", "{list}");
    assert_nothing_left(&env).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_command_has_a_controlling_terminal_of_the_asked_size() {
    let env = env();
    let (_, s) = env
        .ok(
            "terminal_start",
            json!({"command": "tty; stty size; echo TERM=$TERM", "cols": 90, "rows": 30, "wait_for": "TERM="}),
        )
        .await;
    let out = s["output"].as_str().unwrap();
    assert!(out.contains("/dev/pts/"), "{out}");
    assert!(out.contains("30 90"), "{out}");
    let (_, s) = env.ok("terminal_read", json!({"id": "p1", "wait_exit": true, "offset": 0})).await;
    assert!(s["output"].as_str().unwrap().contains("TERM=xterm-256color"), "{s}");
    assert_nothing_left(&env).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn cat_echoes_what_is_typed_and_ends_on_ctrl_d() {
    let env = env();
    env.ok("terminal_start", json!({"command": "cat", "yield_ms": 200})).await;
    let (_, s) = env
        .ok("terminal_send", json!({"id": "p1", "text": "hello terminal\n", "wait_for": "hello terminal\\n.*hello terminal"}))
        .await;
    assert_eq!(s["waited"], "match", "the echo and cat's copy: {s}");
    let (_, s) =
        env.ok("terminal_send", json!({"id": "p1", "keys": ["Ctrl-D"], "wait_for": "never"})).await;
    assert_eq!(s["waited"], "exit", "{s}");
    assert_eq!(s["exit_code"], 0);
    let err = env.err("terminal_send", json!({"id": "p1", "text": "more"})).await;
    assert!(err.contains("nothing to type into"), "{err}");
    assert_nothing_left(&env).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_reaches_the_foreground_program_only() {
    let env = env();
    // The shell traps INT; `sleep` in the foreground gets the Ctrl-C and the shell goes on.
    let command = "trap 'echo shell-got-int' INT; echo ready; sleep 30; echo after-sleep; sleep 30";
    env.ok("terminal_start", json!({"command": command, "wait_for": "ready"})).await;
    let (_, s) = env
        .ok("terminal_send", json!({"id": "p1", "keys": ["Ctrl-C"], "wait_for": "after-sleep"}))
        .await;
    assert_eq!(s["waited"], "match", "{s}");
    assert_eq!(s["status"], "running", "the shell lives on: {s}");
    let (text, _) = env.ok("stop_process", json!({"id": "p1"})).await;
    assert!(text.contains("Stopped"), "{text}");
    assert_nothing_left(&env).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn less_is_read_as_a_screen_paged_and_quit() {
    let env = env();
    let lines: String = (1..=200).map(|i| format!("line number {i}\n")).collect();
    std::fs::write(env.tmp.path().join("long.txt"), lines).unwrap();
    let (_, s) = env
        .ok(
            "terminal_start",
            json!({"command": "less long.txt", "rows": 10, "wait_for": "line number 9"}),
        )
        .await;
    let screen = s["screen"].as_str().expect("a full-screen program answers with its screen");
    assert!(screen.starts_with("line number 1\n"), "{screen}");
    assert!(!screen.contains("line number 12"), "{screen}");
    let (_, s) =
        env.ok("terminal_send", json!({"id": "p1", "keys": ["Space"], "yield_ms": 500})).await;
    let screen = s["screen"].as_str().unwrap();
    assert!(screen.contains("line number 12"), "{screen}");
    let (_, s) =
        env.ok("terminal_send", json!({"id": "p1", "text": "q", "wait_for": "never"})).await;
    assert_eq!(s["waited"], "exit", "{s}");
    assert_nothing_left(&env).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn vi_edits_a_file_and_saves_it() {
    let env = env();
    std::fs::write(env.tmp.path().join("todo.txt"), "pick one\npick two\n").unwrap();
    env.ok("terminal_start", json!({"command": "vi -u NONE todo.txt", "wait_for": "pick two"}))
        .await;
    // Change the first word of line 2, save and quit.
    env.ok(
        "terminal_send",
        json!({"id": "p1", "text": "jcwsquash", "keys": ["Esc"], "yield_ms": 300}),
    )
    .await;
    let (_, s) =
        env.ok("terminal_send", json!({"id": "p1", "text": ":wq\n", "wait_for": "never"})).await;
    assert_eq!(s["waited"], "exit", "{s}");
    let saved = std::fs::read_to_string(env.tmp.path().join("todo.txt")).unwrap();
    assert_eq!(saved, "pick one\nsquash two\n");
    assert_nothing_left(&env).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn progress_redraws_collapse_and_budgets_skip_the_middle() {
    let env = env();
    let command = "printf '10%%\\r50%%\\r100%%\\n'; seq 1 20000; echo END";
    let (_, s) = env
        .ok("terminal_start", json!({"command": command, "wait_for": "END", "max_bytes": 2000}))
        .await;
    let out = s["output"].as_str().unwrap();
    assert!(out.starts_with("100%\n1\n2\n"), "{out}");
    assert!(out.trim_end().ends_with("END"), "{out}");
    assert!(out.len() <= 2000, "within the budget: {}", out.len());
    let skipped = s["skipped_bytes"].as_u64().unwrap();
    let from = s["skipped_from"].as_u64().unwrap();
    assert!(skipped > 100_000, "{s}");
    let (_, r) =
        env.ok("terminal_read", json!({"id": "p1", "offset": from, "max_bytes": 100})).await;
    let part = r["output"].as_str().unwrap();
    assert!(part.chars().next().is_some_and(|c| c.is_ascii_digit() || c == '\n'), "{part}");
    assert!(part.len() <= 100 && r["skipped_bytes"].as_u64() > Some(0), "{r}");
    assert_nothing_left(&env).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_daemon_inheriting_the_terminal_is_stopped_with_its_shell() {
    let env = env();
    let (_, s) = env
        .ok("terminal_start", json!({"command": "sleep 300 & echo started; exit 3", "wait_for": "never", "timeout_ms": 3000}))
        .await;
    assert_eq!(s["waited"], "exit", "{s}");
    assert_eq!(s["exit_code"], 3);
    assert!(
        eventually(Duration::from_secs(5), || env.marked().is_empty()).await,
        "the sleep holding the terminal was stopped: {:?}",
        env.marked()
    );
    assert_nothing_left(&env).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_program_ignoring_sigterm_is_stopped_all_the_same() {
    let env = env();
    env.ok("terminal_start", json!({"command": "trap '' TERM INT; echo stubborn; while :; do sleep 0.1; done", "wait_for": "stubborn"}))
        .await;
    let (text, _) = env.ok("stop_process", json!({"id": "p1"})).await;
    assert!(text.contains("SIGKILL"), "{text}");
    assert_nothing_left(&env).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wait_that_runs_out_says_so_and_a_wake_up_arrives_as_a_notice() {
    let env = env();
    let (_, s) = env
        .ok(
            "terminal_start",
            json!({"command": "sleep 0.5; echo BUILD DONE; sleep 30", "notify_on": "BUILD DONE", "yield_ms": 50}),
        )
        .await;
    assert_eq!(s["waited"], "yield");
    let (_, r) =
        env.ok("terminal_read", json!({"id": "p1", "wait_for": "never", "timeout_ms": 100})).await;
    assert_eq!(r["waited"], "timeout", "{r}");
    // The notice rides on a later result.
    let mut noticed = String::new();
    for _ in 0..40 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let out = env.call("list_processes", json!({})).await;
        let text = out.notices_as_text().joined_text();
        if text.contains("notify_on") {
            noticed = text;
            break;
        }
    }
    assert!(noticed.contains("printed \"BUILD DONE\""), "{noticed}");
    assert_nothing_left(&env).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_arguments_are_refused_with_what_to_do() {
    let env = env();
    let err = env.err("terminal_send", json!({"id": "p9", "text": "x"})).await;
    assert!(err.contains("No terminal `p9`"), "{err}");
    let err = env.err("terminal_start", json!({"command": "cat", "wait_for": "("})).await;
    assert!(err.contains("not a valid regex"), "{err}");
    let err = env.err("terminal_start", json!({"command": "cat", "cols": 5})).await;
    assert!(err.contains("cols"), "{err}");
    env.ok("spawn_process", json!({"command": "sleep 30", "type": "long-run"})).await;
    let err = env.err("terminal_send", json!({"id": "p1", "text": "x"})).await;
    assert!(err.contains("not a terminal"), "{err}");
    env.ok("terminal_start", json!({"command": "cat", "yield_ms": 10})).await;
    let err = env.err("terminal_send", json!({"id": "p2", "keys": ["Hyper-X"]})).await;
    assert!(err.contains("not a key"), "{err}");
    assert_nothing_left(&env).await;
}

/// Approves every call but those whose summary names `PWNED`, and remembers what it was asked.
struct Asked(std::sync::Mutex<Vec<String>>);

impl hands_core::approval::Approver for Asked {
    fn approve<'a>(
        &'a self,
        request: &'a hands_core::approval::ApprovalRequest,
        _cancel: &'a hands_core::CancellationToken,
    ) -> hands_core::BoxFuture<'a, hands_core::approval::Decision> {
        use hands_core::approval::Decision;
        self.0.lock().unwrap().push(request.summary.clone());
        let no = request.summary.contains("PWNED");
        Box::pin(async move { if no { Decision::Deny(None) } else { Decision::Approve } })
    }
}

/// Found by an attacker's pass: one approval of `less` let terminal_send type `!command` into
/// its shell escape, a command never shown. Keys that move and page do not ask; input that
/// submits does, showing exactly what is typed.
#[tokio::test(flavor = "multi_thread")]
async fn under_ask_input_that_submits_asks_and_keys_that_move_do_not() {
    use hands_core::{CoreConfig, Registry, Session, ToolCall};
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("a.txt"),
        (1..=200).map(|n| format!("{n}\n")).collect::<String>(),
    )
    .unwrap();
    let core = CoreConfig { approval: hands_core::config::Approval::Ask, ..CoreConfig::default() };
    let mut config = hands_exec::ExecConfig::default();
    config.processes.stop_grace_ms = 300;
    let registry = hands_exec::register(Registry::builder(core), &config).build();
    let session = Session::new("ask", tmp.path());
    let asked = std::sync::Arc::new(Asked(std::sync::Mutex::new(Vec::new())));
    session.insert_extension(hands_core::approval::ApproverHandle(asked.clone()));
    let call = |id: &str, tool: &str, args: serde_json::Value| {
        registry.dispatch(&session, ToolCall::new(id, tool, args))
    };
    let out =
        call("1", "terminal_start", json!({"command": "less a.txt", "rows": 10, "yield_ms": 500}))
            .await
            .unwrap();
    assert!(!out.is_error, "{}", out.joined_text());
    let out =
        call("2", "terminal_send", json!({"id": "p1", "text": "j", "keys": ["PageDown", "Up"]}))
            .await
            .unwrap();
    assert!(!out.is_error, "{}", out.joined_text());
    let out =
        call("3", "terminal_send", json!({"id": "p1", "text": "!touch PWNED\n", "yield_ms": 500}))
            .await
            .unwrap();
    assert!(out.is_error && out.joined_text().contains("declined"), "{}", out.joined_text());
    let out = call("4", "terminal_send", json!({"id": "p1", "keys": ["Ctrl-O"]})).await.unwrap();
    assert!(!out.is_error, "{}", out.joined_text());
    let out = call("5", "terminal_send", json!({"id": "p1", "text": "q", "yield_ms": 300}))
        .await
        .unwrap();
    assert!(!out.is_error, "{}", out.joined_text());
    assert!(!tmp.path().join("PWNED").exists(), "the typed command did not run");
    let asked = asked.0.lock().unwrap().clone();
    assert_eq!(
        asked,
        [
            "terminal_start: less a.txt",
            "terminal_send: type into p1 (`less a.txt`): !touch PWNED⏎",
            "terminal_send: type into p1 (`less a.txt`): ^O",
        ],
        "only the start and the input that submits were asked about"
    );
    session.close().await;
}
