//! The middleware chain end to end: timeout/abort, dedup, truncate, recover.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Echo, Sleep};
use hands_core::config::{RecoveryConfig, TimeoutConfig};
use hands_core::{
    BoxFuture, Context, CoreConfig, DispatchError, DynTool, Notice, NoticeKind, Prepared, Registry,
    Sandbox, SandboxProvider, Session, ToolCall, ToolError, ToolOutput,
};
use serde_json::{Value, json};

fn config() -> CoreConfig {
    CoreConfig {
        timeouts: TimeoutConfig {
            tools: [("sleep".to_owned(), 100)].into(),
            grace_ms: 1_000,
            ..TimeoutConfig::default()
        },
        recovery: RecoveryConfig { wait_ms: 20, max_per_project: 3 },
        ..CoreConfig::default()
    }
}

#[tokio::test]
async fn timeout_fires_the_token_and_keeps_partial_output() {
    let saw_cancel = Arc::new(AtomicUsize::new(0));
    let r = Registry::builder(config()).tool(Sleep { saw_cancel: Arc::clone(&saw_cancel) }).build();
    let s = Session::new("s", "/tmp");
    let started = Instant::now();
    let out = r.dispatch(&s, ToolCall::new("1", "sleep", json!({"ms": 60_000}))).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
    assert!(out.is_error);
    let text = out.joined_text();
    assert!(text.contains("sleep timed out after 100 ms"), "{text}");
    assert!(text.contains("partial output before the stop"), "{text}");
    assert_eq!(saw_cancel.load(Ordering::SeqCst), 1);
    // The session itself is not aborted by one call's timeout.
    assert!(!s.cancel_token().is_cancelled());
    let out = r.dispatch(&s, ToolCall::new("2", "sleep", json!({"ms": 10}))).await.unwrap();
    assert_eq!(out.joined_text(), "slept");
}

#[tokio::test]
async fn session_abort_cancels_calls_in_flight() {
    let saw_cancel = Arc::new(AtomicUsize::new(0));
    let mut cfg = config();
    cfg.timeouts.tools.clear();
    let r = Arc::new(
        Registry::builder(cfg).tool(Sleep { saw_cancel: Arc::clone(&saw_cancel) }).build(),
    );
    let s = Session::new("s", "/tmp");
    let calls: Vec<_> = (0..3)
        .map(|i| {
            let (r, s) = (Arc::clone(&r), s.clone());
            tokio::spawn(async move {
                r.dispatch(&s, ToolCall::new(format!("c{i}"), "sleep", json!({"ms": 60_000}))).await
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(50)).await;
    s.abort();
    for call in calls {
        let out = call.await.unwrap().unwrap();
        assert!(out.is_error);
        assert!(out.joined_text().contains("sleep was aborted"), "{}", out.joined_text());
    }
    assert_eq!(saw_cancel.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn dedup_serves_identical_read_only_calls_within_a_turn() {
    let (echo, runs) = Echo::new("read_file", true);
    let (write, writes) = Echo::new("write_file", false);
    let r = Registry::builder(config()).tool(echo).tool(write).build();
    let s = Session::new("s", "/tmp");
    let read =
        |id: &str, turn: &str, args: Value| ToolCall::new(id, "read_file", args).in_turn(turn);

    let a = r.dispatch(&s, read("1", "t1", json!({"text": "a", "count": 1}))).await.unwrap();
    // Same arguments in another key order: served from the cache.
    let b = r.dispatch(&s, read("2", "t1", json!({"count": 1, "text": "a"}))).await.unwrap();
    assert_eq!(a, b);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // Different arguments run.
    r.dispatch(&s, read("3", "t1", json!({"text": "b"}))).await.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    // A mutating call clears the cache.
    r.dispatch(&s, ToolCall::new("4", "write_file", json!({"text": "x"})).in_turn("t1"))
        .await
        .unwrap();
    assert_eq!(writes.load(Ordering::SeqCst), 1);
    let c = r.dispatch(&s, read("5", "t1", json!({"text": "a", "count": 1}))).await.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    assert_ne!(a, c, "the read after a write must run again");
    // A new turn starts a new cache.
    r.dispatch(&s, read("6", "t2", json!({"text": "a", "count": 1}))).await.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 4);
    // Calls outside a turn never dedup; mutating calls never do.
    r.dispatch(&s, ToolCall::new("7", "read_file", json!({"text": "a"}))).await.unwrap();
    r.dispatch(&s, ToolCall::new("8", "read_file", json!({"text": "a"}))).await.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 6);
    for i in 0..2 {
        r.dispatch(
            &s,
            ToolCall::new(format!("w{i}"), "write_file", json!({"text": "x"})).in_turn("t2"),
        )
        .await
        .unwrap();
    }
    assert_eq!(writes.load(Ordering::SeqCst), 3);
    // Another session has its own cache.
    let other = Session::new("o", "/tmp");
    r.dispatch(&other, read("9", "t2", json!({"text": "a", "count": 1}))).await.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 7);
}

#[tokio::test]
async fn truncate_keeps_head_and_tail_and_spills_the_full_text() {
    let root = tempfile::tempdir().unwrap();
    let mut cfg = config();
    cfg.output.max_bytes = 1_000;
    let r = Registry::builder(cfg).tool(Echo::new("grep", true).0).build();
    let s = Session::new("s", root.path());
    let text = format!("HEAD{}TAIL", "é".repeat(5_000));
    let out =
        r.dispatch(&s, ToolCall::new("call/../x", "grep", json!({"text": text}))).await.unwrap();
    let shown = out.joined_text();
    let full = format!("{text}#1");
    // Review finding: the note came on top of the cap. Now everything fits in max_bytes.
    assert!(shown.len() <= 1_000, "{} bytes shown", shown.len());
    assert!(shown.starts_with("HEAD"));
    let (head, rest) = shown.split_once("… [truncated, ").unwrap();
    let (omitted, rest) = rest.split_once(" more bytes]").unwrap();
    let tail = rest.split("\nThe full output").next().unwrap();
    assert!(tail.ends_with("TAIL#1"), "{tail}");
    assert_eq!(head.len() + omitted.parse::<usize>().unwrap() + tail.len(), full.len());
    assert!(shown.contains(".hands/outputs/call____x.txt"), "{shown}");
    let saved = std::fs::read_to_string(root.path().join(".hands/outputs/call____x.txt")).unwrap();
    assert_eq!(saved, full);
    let ignore = std::fs::read_to_string(root.path().join(".hands/outputs/.gitignore")).unwrap();
    assert_eq!(ignore, "*\n");
    // Short results are untouched.
    let out = r.dispatch(&s, ToolCall::new("2", "grep", json!({"text": "short"}))).await.unwrap();
    assert_eq!(out.joined_text(), "short#2");
}

#[tokio::test]
async fn truncate_refuses_a_hands_folder_symlinked_outside() {
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), root.path().join(".hands")).unwrap();
    let mut cfg = config();
    cfg.output.max_bytes = 10;
    let r = Registry::builder(cfg).tool(Echo::new("grep", true).0).build();
    let s = Session::new("s", root.path());
    let out =
        r.dispatch(&s, ToolCall::new("1", "grep", json!({"text": "x".repeat(100)}))).await.unwrap();
    assert!(out.joined_text().contains("could not be saved"), "{}", out.joined_text());
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);

    // Review finding: `.hands/outputs -> ../.git/hooks` inside the root wrote into the hooks.
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join(".git/hooks")).unwrap();
    std::fs::create_dir_all(root.path().join(".hands")).unwrap();
    std::os::unix::fs::symlink("../.git/hooks", root.path().join(".hands/outputs")).unwrap();
    let s = Session::new("s", root.path());
    let out = r
        .dispatch(&s, ToolCall::new("pre-commit", "grep", json!({"text": "x".repeat(100)})))
        .await
        .unwrap();
    assert!(out.joined_text().contains("could not be saved"), "{}", out.joined_text());
    assert_eq!(std::fs::read_dir(root.path().join(".git/hooks")).unwrap().count(), 0);
}

#[tokio::test]
async fn spilled_outputs_never_overwrite_each_other() {
    let root = tempfile::tempdir().unwrap();
    let mut cfg = config();
    cfg.output.max_bytes = 200;
    let r = Registry::builder(cfg).tool(Echo::new("grep", true).0).build();
    for session in ["a", "b"] {
        let s = Session::new(session, root.path());
        r.dispatch(&s, ToolCall::new("call-1", "grep", json!({"text": session.repeat(500)})))
            .await
            .unwrap();
    }
    let dir = root.path().join(".hands/outputs");
    assert!(std::fs::read_to_string(dir.join("call-1.txt")).unwrap().starts_with("aaa"));
    assert!(std::fs::read_to_string(dir.join("call-1-2.txt")).unwrap().starts_with("bbb"));
}

/// A sandbox provider whose sandbox disappears on command.
#[derive(Default)]
struct Flaky {
    gone: AtomicBool,
    gone_during_retry: AtomicBool,
    created: AtomicUsize,
}

struct FlakySandbox(Arc<Flaky>);

impl Sandbox for FlakySandbox {
    fn id(&self) -> String {
        "flaky".into()
    }

    fn run<'a>(
        &'a self,
        tool: &'a dyn DynTool,
        ctx: Context,
        args: &'a Value,
        prepared: &'a Prepared,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            if self.0.gone.load(Ordering::SeqCst) {
                return Err(ToolError::SandboxGone("404 No such container".into()));
            }
            tool.run(ctx, args, prepared).await
        })
    }
}

struct FlakyProvider(Arc<Flaky>);

impl SandboxProvider for FlakyProvider {
    fn get<'a>(&'a self, _project: &'a str) -> BoxFuture<'a, Result<Arc<dyn Sandbox>, ToolError>> {
        Box::pin(async move { Ok(Arc::new(FlakySandbox(Arc::clone(&self.0))) as Arc<dyn Sandbox>) })
    }

    fn get_or_create<'a>(
        &'a self,
        project: &'a str,
    ) -> BoxFuture<'a, Result<Arc<dyn Sandbox>, ToolError>> {
        self.0.created.fetch_add(1, Ordering::SeqCst);
        let still_gone = self.0.gone_during_retry.load(Ordering::SeqCst);
        self.0.gone.store(still_gone, Ordering::SeqCst);
        self.get(project)
    }
}

#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn recover_retries_once_on_a_fresh_sandbox_and_gives_up_after_three() {
    let logs = Logs::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .json()
        .with_writer(move || writer.clone())
        .with_max_level(tracing::Level::WARN)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let flaky = Arc::new(Flaky::default());
    let (echo, runs) = Echo::new("read_file", true);
    let r = Registry::builder(config())
        .sandbox(Arc::new(FlakyProvider(Arc::clone(&flaky))))
        .tool(echo)
        .build();
    let s = Session::new("s", "/tmp").with_project("proj-1");
    let call = |id: &str| ToolCall::new(id, "read_file", json!({"text": "ok"}));

    // Healthy: no recovery.
    assert!(!r.dispatch(&s, call("0")).await.unwrap().is_error);
    assert_eq!(flaky.created.load(Ordering::SeqCst), 0);

    for attempt in 1..=3 {
        flaky.gone.store(true, Ordering::SeqCst);
        let started = Instant::now();
        let out = r.dispatch(&s, call(&format!("c{attempt}"))).await.unwrap();
        assert!(!out.is_error, "{out:?}");
        assert!(started.elapsed() >= Duration::from_millis(20), "waited before retrying");
        assert_eq!(flaky.created.load(Ordering::SeqCst), attempt);
    }
    assert_eq!(runs.load(Ordering::SeqCst), 4);

    // The fourth loss for the same project fails hard.
    flaky.gone.store(true, Ordering::SeqCst);
    let err = r.dispatch(&s, call("c4")).await.unwrap_err();
    let DispatchError::Fatal(message) = err;
    assert!(message.contains("after 3 recoveries"), "{message}");
    assert_eq!(flaky.created.load(Ordering::SeqCst), 3);

    // Another project has its own budget; a sandbox that is gone again right after recovery
    // fails that call without looping.
    flaky.gone_during_retry.store(true, Ordering::SeqCst);
    let other = Session::new("s2", "/tmp").with_project("proj-2");
    let err = r.dispatch(&other, call("d1")).await.unwrap_err();
    let DispatchError::Fatal(message) = err;
    assert!(message.contains("lost again right after recovery"), "{message}");

    let text = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    let events: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let attempts: Vec<&Value> =
        events.iter().filter(|e| e["fields"]["event"] == "sandbox_recovery_attempted").collect();
    assert_eq!(attempts.len(), 4, "{text}");
    assert_eq!(attempts[0]["fields"]["project"], "proj-1");
    assert_eq!(attempts[0]["fields"]["attempt"], 1);
    assert_eq!(attempts[0]["fields"]["tool"], "read_file");
    assert!(events.iter().any(|e| e["fields"]["event"] == "sandbox_recovery_exhausted"));
}

/// Returns a long text and an image.
struct Screenshot;

impl hands_core::Tool for Screenshot {
    type Args = serde_json::Map<String, Value>;

    fn name(&self) -> &'static str {
        "screenshot"
    }

    fn description(&self) -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Borrowed("A picture.")
    }

    fn annotations(&self) -> hands_core::Annotations {
        hands_core::Annotations::READ_ONLY
    }

    async fn call(&self, _ctx: Context, _args: Self::Args) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::image(vec![7u8; 200_000], "image/png").with_text("x".repeat(50_000)))
    }
}

#[tokio::test]
async fn truncation_never_touches_images() {
    let root = tempfile::tempdir().unwrap();
    let r = Registry::builder(config()).tool(Screenshot).build();
    let s = Session::new("s", root.path());
    let out = r.dispatch(&s, ToolCall::new("img", "screenshot", json!({}))).await.unwrap();
    let images: Vec<&Vec<u8>> = out
        .content
        .iter()
        .filter_map(|c| match c {
            hands_core::Content::Image { data, .. } => Some(data),
            hands_core::Content::Text { .. } => None,
        })
        .collect();
    assert_eq!(images.len(), 1);
    assert_eq!(images[0].len(), 200_000, "the image is whole");
    let text = out.joined_text();
    assert!(text.contains("… [truncated, "), "the text was cut");
    assert!(text.len() <= 32 * 1024, "{}", text.len());
}

/// Answers from a script and remembers what it was asked.
struct Scripted {
    answers: Mutex<Vec<hands_core::approval::Decision>>,
    asked: Mutex<Vec<String>>,
}

impl hands_core::approval::Approver for Scripted {
    fn approve<'a>(
        &'a self,
        request: &'a hands_core::approval::ApprovalRequest,
        cancel: &'a hands_core::CancellationToken,
    ) -> BoxFuture<'a, hands_core::approval::Decision> {
        Box::pin(async move {
            self.asked.lock().unwrap().push(request.summary.clone());
            let next = self.answers.lock().unwrap().pop();
            match next {
                Some(decision) => decision,
                // No scripted answer: wait like a user who does not answer, until aborted.
                None => {
                    cancel.cancelled().await;
                    hands_core::approval::Decision::Deny(Some("aborted".into()))
                }
            }
        })
    }
}

#[tokio::test]
async fn approval_under_ask_asks_for_changes_only() {
    use hands_core::approval::{ApproverHandle, Decision};
    let mut cfg = config();
    cfg.approval = hands_core::config::Approval::Ask;
    let (read, reads) = Echo::new("read_file", true);
    let (write, writes) = Echo::new("write_file", false);
    let write = write.with(|p| p.alias("write"));
    let r = Arc::new(Registry::builder(cfg).tool(read).tool(write).build());

    // Nobody to ask: refused at once, not run.
    let lonely = Session::new("lonely", "/tmp");
    let out =
        r.dispatch(&lonely, ToolCall::new("1", "write_file", json!({"text": "x"}))).await.unwrap();
    assert!(out.is_error && out.joined_text().contains("nobody to ask"), "{}", out.joined_text());
    assert_eq!(writes.load(Ordering::SeqCst), 0);

    let approver = Arc::new(Scripted {
        answers: Mutex::new(vec![Decision::Approve, Decision::Deny(Some("not that file".into()))]),
        asked: Mutex::new(Vec::new()),
    });
    let s = Session::new("s", "/tmp");
    s.insert_extension(ApproverHandle(approver.clone()));
    // Read-only tools are never asked about.
    let out = r.dispatch(&s, ToolCall::new("2", "read_file", json!({"text": "r"}))).await.unwrap();
    assert!(!out.is_error);
    assert_eq!(reads.load(Ordering::SeqCst), 1);
    // Denied with words: not run, the words reach the model.
    let out = r.dispatch(&s, ToolCall::new("3", "write_file", json!({"text": "x"}))).await.unwrap();
    assert!(out.is_error && out.joined_text().contains("not that file"), "{}", out.joined_text());
    assert_eq!(writes.load(Ordering::SeqCst), 0);
    // Approved: run.
    let out = r.dispatch(&s, ToolCall::new("4", "write", json!({"text": "y"}))).await.unwrap();
    assert!(!out.is_error, "{}", out.joined_text());
    assert_eq!(writes.load(Ordering::SeqCst), 1);
    assert_eq!(
        *approver.asked.lock().unwrap(),
        ["write_file: {\"text\":\"x\"}", "write_file: {\"text\":\"y\"}"]
    );
    // A pending question ends when the session is aborted.
    let pending = {
        let (r, s) = (Arc::clone(&r), s.clone());
        tokio::spawn(async move {
            r.dispatch(&s, ToolCall::new("5", "write_file", json!({"text": "z"}))).await
        })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    s.abort();
    let out =
        tokio::time::timeout(Duration::from_secs(5), pending).await.unwrap().unwrap().unwrap();
    assert!(out.is_error);
    assert_eq!(writes.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_tool_allowed_for_the_session_is_not_asked_about_again() {
    use hands_core::approval::{ApproverHandle, Decision, SessionAllows};
    let mut cfg = config();
    cfg.approval = hands_core::config::Approval::Ask;
    let (write, writes) = Echo::new("write_file", false);
    let (bash, bashes) = Echo::new("bash", false);
    let (plan, plans) = Echo::new("exit_plan_mode", false);
    let plan = plan.with(|p| p.asks_each_time());
    let r = Registry::builder(cfg).tool(write).tool(bash).tool(plan).build();
    // Popped from the end: the first write is allowed for the session, the plan too (which
    // covers only that call), bash once.
    let approver = Arc::new(Scripted {
        answers: Mutex::new(vec![
            Decision::Approve,
            Decision::ApproveForSession,
            Decision::ApproveForSession,
        ]),
        asked: Mutex::new(Vec::new()),
    });
    let s = Session::new("s", "/tmp");
    s.insert_extension(ApproverHandle(approver.clone()));
    for (id, tool) in [("1", "write_file"), ("2", "write_file"), ("3", "write_file")] {
        let out = r.dispatch(&s, ToolCall::new(id, tool, json!({"text": id}))).await.unwrap();
        assert!(!out.is_error, "{}", out.joined_text());
    }
    assert_eq!(writes.load(Ordering::SeqCst), 3);
    let out = r.dispatch(&s, ToolCall::new("4", "exit_plan_mode", json!({"text": "p"}))).await;
    assert!(!out.unwrap().is_error);
    let out = r.dispatch(&s, ToolCall::new("5", "bash", json!({"text": "b"}))).await.unwrap();
    assert!(!out.is_error);
    assert_eq!((plans.load(Ordering::SeqCst), bashes.load(Ordering::SeqCst)), (1, 1));
    // One question for the three writes; the plan's allowance covered nothing more.
    assert_eq!(
        *approver.asked.lock().unwrap(),
        [
            "write_file: {\"text\":\"1\"}",
            "exit_plan_mode: {\"text\":\"p\"}",
            "bash: {\"text\":\"b\"}"
        ]
    );
    assert_eq!(s.get_extension::<SessionAllows>().unwrap().tools(), ["write_file"]);
    // Another session asks again: the allowance is this session's.
    let other = Session::new("other", "/tmp");
    other.insert_extension(ApproverHandle(approver.clone()));
    let r = Arc::new(r);
    let pending = {
        let (r, other) = (Arc::clone(&r), other.clone());
        tokio::spawn(async move {
            r.dispatch(&other, ToolCall::new("6", "write_file", json!({"text": "o"}))).await
        })
    };
    for _ in 0..500 {
        if approver.asked.lock().unwrap().len() == 4 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(approver.asked.lock().unwrap().len(), 4, "the other session asked");
    other.abort();
    assert!(pending.await.unwrap().unwrap().is_error);
    assert_eq!(writes.load(Ordering::SeqCst), 3);
}

/// Red-team round 4: "allow for this session" given to `mcp_call {server a, tool
/// harmless_read}` let `mcp_call {a, delete_everything}` run unasked. A dispatching tool's
/// allowance is bound to its scoping arguments.
#[tokio::test]
async fn a_dispatching_tools_allowance_covers_only_the_target_allowed() {
    use hands_core::approval::{ApproverHandle, Decision, SessionAllows};
    let mut cfg = config();
    cfg.approval = hands_core::config::Approval::Ask;
    let (call, calls) = Echo::new("mcp_call", false);
    let call = call.with(|p| p.session_scope(&["text"]));
    let r = Registry::builder(cfg).tool(call).build();
    let approver = Arc::new(Scripted {
        answers: Mutex::new(vec![Decision::Approve, Decision::ApproveForSession]),
        asked: Mutex::new(Vec::new()),
    });
    let s = Session::new("s", "/tmp");
    s.insert_extension(ApproverHandle(approver.clone()));
    for (id, target) in [("1", "harmless_read"), ("2", "harmless_read"), ("3", "delete_everything")]
    {
        let out = r.dispatch(&s, ToolCall::new(id, "mcp_call", json!({"text": target}))).await;
        assert!(!out.unwrap().is_error);
    }
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(
        *approver.asked.lock().unwrap(),
        ["mcp_call: {\"text\":\"harmless_read\"}", "mcp_call: {\"text\":\"delete_everything\"}"],
        "the second target was asked about"
    );
    assert_eq!(
        s.get_extension::<SessionAllows>().unwrap().tools(),
        ["mcp_call(text=\"harmless_read\")"]
    );
}

#[tokio::test]
async fn notices_ride_on_the_next_result_once() {
    let r = Registry::builder(config()).tool(Echo::new("read_file", true).0).build();
    let s = Session::new("s", "/tmp");
    let notice = Notice::new(NoticeKind::ProcessExited, "process 2 (npm test) exited with code 1");
    s.push_notice(notice.clone());
    let out = r.dispatch(&s, ToolCall::new("1", "read_file", json!({"text": "a"}))).await.unwrap();
    assert_eq!(out.notices, vec![notice]);
    assert!(!out.joined_text().contains("[notice]"), "data, not text: {}", out.joined_text());
    assert!(
        out.notices_as_text()
            .joined_text()
            .ends_with("[notice] process 2 (npm test) exited with code 1")
    );
    let out = r.dispatch(&s, ToolCall::new("2", "read_file", json!({"text": "b"}))).await.unwrap();
    assert!(out.notices.is_empty());
}

/// Reads a shared version slowly (read-only) or bumps it (mutating).
struct Versioned {
    name: &'static str,
    version: Arc<AtomicUsize>,
}

impl hands_core::Tool for Versioned {
    type Args = serde_json::Map<String, Value>;

    fn name(&self) -> &'static str {
        self.name
    }

    fn description(&self) -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Borrowed("Versioned state.")
    }

    fn annotations(&self) -> hands_core::Annotations {
        if self.name == "slow_read" {
            hands_core::Annotations::READ_ONLY
        } else {
            hands_core::Annotations::default()
        }
    }

    async fn call(&self, _ctx: Context, _args: Self::Args) -> Result<ToolOutput, ToolError> {
        if self.name == "slow_read" {
            let seen = self.version.load(Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(150)).await;
            Ok(ToolOutput::text(format!("version {seen}")))
        } else {
            self.version.fetch_add(1, Ordering::SeqCst);
            Ok(ToolOutput::text("bumped"))
        }
    }
}

// Review finding: a read that started before an edit and finished after it stored the old content,
// and the next identical read in the turn was served that stale result.
#[tokio::test]
async fn a_read_overlapping_an_edit_is_never_served_stale() {
    let version = Arc::new(AtomicUsize::new(0));
    let r = Arc::new(
        Registry::builder(config())
            .tool(Versioned { name: "slow_read", version: Arc::clone(&version) })
            .tool(Versioned { name: "bump", version: Arc::clone(&version) })
            .build(),
    );
    let s = Session::new("s", "/tmp");
    let early = {
        let (r, s) = (Arc::clone(&r), s.clone());
        tokio::spawn(async move {
            r.dispatch(&s, ToolCall::new("1", "slow_read", json!({})).in_turn("t")).await
        })
    };
    tokio::time::sleep(Duration::from_millis(30)).await;
    r.dispatch(&s, ToolCall::new("2", "bump", json!({})).in_turn("t")).await.unwrap();
    let old = early.await.unwrap().unwrap();
    assert_eq!(old.joined_text(), "version 0");
    let fresh =
        r.dispatch(&s, ToolCall::new("3", "slow_read", json!({})).in_turn("t")).await.unwrap();
    assert_eq!(fresh.joined_text(), "version 1");
    // And a fresh result is cached again once no mutation runs.
    version.fetch_add(10, Ordering::SeqCst);
    let cached =
        r.dispatch(&s, ToolCall::new("4", "slow_read", json!({})).in_turn("t")).await.unwrap();
    assert_eq!(cached.joined_text(), "version 1");
}

/// Reports progress three times.
struct Steps;

impl hands_core::Tool for Steps {
    type Args = serde_json::Map<String, Value>;

    fn name(&self) -> &'static str {
        "steps"
    }

    fn description(&self) -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Borrowed("Steps.")
    }

    fn annotations(&self) -> hands_core::Annotations {
        hands_core::Annotations::READ_ONLY
    }

    async fn call(&self, ctx: Context, _args: Self::Args) -> Result<ToolOutput, ToolError> {
        for i in 1..=3 {
            ctx.progress(f64::from(i), Some(3.0), Some(format!("step {i}")));
        }
        Ok(ToolOutput::text("done"))
    }
}

#[tokio::test]
async fn progress_reports_reach_the_front_end_sink() {
    let r = Registry::builder(config()).tool(Steps).build();
    let s = Session::new("s", "/tmp");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink: hands_core::ProgressSink = {
        let seen = Arc::clone(&seen);
        Arc::new(move |p: hands_core::Progress| seen.lock().unwrap().push((p.progress, p.message)))
    };
    let options = hands_core::CallOptions { progress: Some(sink), cancel: None };
    let out = r.dispatch_with(&s, ToolCall::new("1", "steps", json!({})), options).await.unwrap();
    assert_eq!(out.joined_text(), "done");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3);
    assert_eq!(seen[2], (3.0, Some("step 3".to_owned())));
    // Without a sink nothing breaks.
    assert!(!r.dispatch(&s, ToolCall::new("2", "steps", json!({}))).await.unwrap().is_error);
}

#[tokio::test]
async fn cancelling_one_request_aborts_that_call_only() {
    let saw_cancel = Arc::new(AtomicUsize::new(0));
    let mut cfg = config();
    cfg.timeouts.tools.clear();
    let r = Arc::new(
        Registry::builder(cfg).tool(Sleep { saw_cancel: Arc::clone(&saw_cancel) }).build(),
    );
    let s = Session::new("s", "/tmp");
    let cancel = hands_core::CancellationToken::new();
    let doomed = {
        let (r, s, cancel) = (Arc::clone(&r), s.clone(), cancel.clone());
        tokio::spawn(async move {
            let options = hands_core::CallOptions { progress: None, cancel: Some(cancel) };
            r.dispatch_with(&s, ToolCall::new("a", "sleep", json!({"ms": 60_000})), options).await
        })
    };
    let other = {
        let (r, s) = (Arc::clone(&r), s.clone());
        tokio::spawn(async move {
            r.dispatch(&s, ToolCall::new("b", "sleep", json!({"ms": 300}))).await
        })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    cancel.cancel();
    let out = tokio::time::timeout(Duration::from_secs(5), doomed).await.unwrap().unwrap().unwrap();
    assert!(out.is_error && out.joined_text().contains("aborted"), "{}", out.joined_text());
    let out = other.await.unwrap().unwrap();
    assert_eq!(out.joined_text(), "slept", "the other call was not touched");
    assert_eq!(saw_cancel.load(Ordering::SeqCst), 1);
}
