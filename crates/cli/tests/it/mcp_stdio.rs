//! `hands mcp` driven by rmcp's own client over a child process's stdio: the handshake, the tool
//! list, calls (text, image, errors), progress, cancellation that kills the call's processes, plan
//! mode's list_changed, and a clean exit on stdin EOF with every child gone.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, ProgressNotificationParam,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};

/// Records what the server sends besides responses.
#[derive(Clone, Default)]
struct Recorder {
    progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
    list_changed: Arc<Mutex<usize>>,
}

impl ClientHandler for Recorder {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params);
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        *self.list_changed.lock().unwrap() += 1;
    }
}

struct Server {
    client: RunningService<RoleClient, Recorder>,
    recorder: Recorder,
    pid: u32,
}

async fn start(root: &Path) -> Server {
    let mut cmd = tokio::process::Command::new(assert_cmd::cargo::cargo_bin("hands"));
    cmd.arg("mcp").arg("--root").arg(root).env("HANDS_LOG", "warn");
    let transport = TokioChildProcess::new(cmd).unwrap();
    let pid = transport.id().unwrap();
    let recorder = Recorder::default();
    let client = recorder.clone().serve(transport).await.unwrap();
    Server { client, recorder, pid }
}

fn params(name: &str, args: Value) -> CallToolRequestParams {
    let mut p = CallToolRequestParams::new(name.to_owned());
    p.arguments = args.as_object().cloned();
    p
}

async fn call(server: &Server, name: &str, args: Value) -> Value {
    let result = server.client.call_tool(params(name, args)).await.unwrap();
    serde_json::to_value(result).unwrap()
}

fn text(result: &Value) -> String {
    result["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Pids of live processes whose environment says they belong to a session of hands `pid`.
fn session_processes(pid: u32) -> Vec<u32> {
    common::live_with_env(&format!("HANDS_SESSION=mcp-{pid}-"))
}

async fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let started = Instant::now();
    while started.elapsed() < limit {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    done()
}

#[tokio::test(flavor = "multi_thread")]
async fn handshake_and_tool_list_with_annotations() {
    let tmp = tempfile::tempdir().unwrap();
    let server = start(tmp.path()).await;
    let info = server.client.peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().unwrap().name, "hands");
    assert!(info.capabilities.tools.as_ref().unwrap().list_changed == Some(true));
    assert!(info.instructions.as_deref().is_some_and(|i| !i.is_empty()));

    let tools = server.client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    for expected in ["read_file", "write_file", "grep", "bash", "enter_plan_mode"] {
        assert!(names.contains(&expected), "{expected} missing from {names:?}");
    }
    assert!(!names.contains(&"exit_plan_mode"), "exit_plan_mode is plan-only");
    let read = tools.iter().find(|t| t.name == "read_file").unwrap();
    let a = read.annotations.as_ref().unwrap();
    assert_eq!(a.read_only_hint, Some(true));
    assert_eq!(a.destructive_hint, Some(false));
    let bash = tools.iter().find(|t| t.name == "bash").unwrap();
    let a = bash.annotations.as_ref().unwrap();
    assert_eq!(
        (a.read_only_hint, a.destructive_hint, a.open_world_hint),
        (Some(false), Some(true), Some(true))
    );
    assert!(bash.output_schema.is_some(), "bash has a structured result");
    assert_eq!(read.input_schema.get("type"), Some(&json!("object")));
    // Deterministic order: the same list twice.
    let again = server.client.list_all_tools().await.unwrap();
    assert_eq!(
        again.iter().map(|t| t.name.clone()).collect::<Vec<_>>(),
        tools.iter().map(|t| t.name.clone()).collect::<Vec<_>>()
    );
    server.client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn calls_return_text_images_structured_and_errors() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("notes.txt"), "alpha\nneedle here\nomega\n").unwrap();
    // A 1x1 PNG.
    let png: &[u8] = &[
        0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52, 0,
        0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0, 0x1f, 0x15, 0xc4, 0x89, 0, 0, 0, 0x0d, 0x49, 0x44,
        0x41, 0x54, 0x78, 0x9c, 0x63, 0, 1, 0, 0, 5, 0, 1, 0x0d, 0x0a, 0x2d, 0xb4, 0, 0, 0, 0,
        0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
    ];
    std::fs::write(tmp.path().join("dot.png"), png).unwrap();
    let server = start(tmp.path()).await;

    let read = call(&server, "read_file", json!({"path": "notes.txt"})).await;
    assert_eq!(read["isError"], json!(false));
    assert!(text(&read).contains("needle here"), "{read}");

    let grep = call(&server, "grep", json!({"pattern": "needle"})).await;
    assert!(text(&grep).contains("notes.txt:2:"), "{grep}");
    assert!(grep.get("structuredContent").is_some(), "grep has structured output: {grep}");

    let bash = call(&server, "bash", json!({"command": "echo out; echo err >&2; exit 3"})).await;
    assert_eq!(bash["isError"], json!(false), "a non-zero exit is a normal result: {bash}");
    assert!(text(&bash).contains("out") && text(&bash).contains('3'), "{bash}");

    let image = call(&server, "read_file", json!({"path": "dot.png"})).await;
    let block = image["content"].as_array().unwrap().iter().find(|c| c["type"] == "image").unwrap();
    assert_eq!(block["mimeType"], "image/png");
    use base64::Engine as _;
    let data = base64::engine::general_purpose::STANDARD.decode(block["data"].as_str().unwrap());
    assert_eq!(data.unwrap(), png);

    let missing = call(&server, "read_file", json!({"path": "nope.txt"})).await;
    assert_eq!(missing["isError"], json!(true), "{missing}");
    assert!(!text(&missing).is_empty());

    let bad_args = call(&server, "read_file", json!({"pathh": "x"})).await;
    assert_eq!(bad_args["isError"], json!(true), "{bad_args}");

    let unknown = server.client.call_tool(params("no_such_tool", json!({}))).await.unwrap_err();
    let message = format!("{unknown:?}");
    assert!(
        message.contains("-32602")
            || message.contains("InvalidParams")
            || message.contains("unknown tool"),
        "{message}"
    );
    server.client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_long_bash_call_reports_increasing_progress() {
    let tmp = tempfile::tempdir().unwrap();
    let server = start(tmp.path()).await;
    let result = call(
        &server,
        "bash",
        json!({"command": "for i in 1 2 3 4 5 6; do echo line $i; sleep 0.2; done"}),
    )
    .await;
    assert_eq!(result["isError"], json!(false), "{result}");
    let progress = server.recorder.progress.lock().unwrap().clone();
    assert!(progress.len() >= 2, "expected progress during a 1.2 s call, got {progress:?}");
    let values: Vec<f64> = progress.iter().map(|p| p.progress).collect();
    assert!(values.windows(2).all(|w| w[0] < w[1]), "progress must increase: {values:?}");
    assert!(progress.iter().any(|p| p.message.as_deref().is_some_and(|m| m.contains("bytes"))));
    server.client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn cancelling_a_call_kills_its_processes() {
    let tmp = tempfile::tempdir().unwrap();
    let server = start(tmp.path()).await;
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params(
        "bash",
        json!({"command": "sleep 120 & sleep 121; wait"}),
    )));
    let handle = server
        .client
        .peer()
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await
        .unwrap();
    let pid = server.pid;
    assert!(
        wait_until(Duration::from_secs(10), || session_processes(pid).len() >= 2).await,
        "the bash call's processes never showed up"
    );
    handle.cancel(Some("test".into())).await.unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || session_processes(pid).is_empty()).await,
        "processes survived the cancellation: {:?}",
        session_processes(pid)
    );
    // The server goes on serving.
    let ok = call(&server, "bash", json!({"command": "echo still here"})).await;
    assert!(text(&ok).contains("still here"));
    server.client.cancel().await.unwrap();
}

/// Issue 12, item 2: a project that gains an `index.html` mid-session gets the preview tools: the
/// client hears `notifications/tools/list_changed` after the call that wrote it, and then lists
/// preview_open; a page removed behind hands' back is noticed at the next listing.
#[tokio::test(flavor = "multi_thread")]
async fn a_project_that_gains_a_page_announces_the_preview_tools() {
    let tmp = tempfile::tempdir().unwrap();
    let server = start(tmp.path()).await;
    let names = || async {
        let tools = server.client.list_all_tools().await.unwrap();
        tools.iter().map(|t| t.name.to_string()).collect::<Vec<_>>()
    };
    assert!(!names().await.contains(&"preview_open".to_owned()));
    let wrote =
        call(&server, "write_file", json!({"path": "index.html", "content": "<h1>hi</h1>"}));
    let wrote = wrote.await;
    assert_eq!(wrote["isError"], json!(false), "{wrote}");
    let recorder = server.recorder.clone();
    assert!(
        wait_until(Duration::from_secs(5), || *recorder.list_changed.lock().unwrap() >= 1).await,
        "no notifications/tools/list_changed after index.html was written"
    );
    let listed = names().await;
    assert!(listed.contains(&"preview_open".to_owned()), "{listed:?}");
    let status = call(&server, "preview_status", json!({})).await;
    assert_eq!(status["isError"], json!(false), "{status}");

    std::fs::remove_file(tmp.path().join("index.html")).unwrap();
    // Listings look at the disk at most once a second.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let listed = names().await;
    assert!(!listed.contains(&"preview_open".to_owned()), "{listed:?}");
    server.client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn plan_mode_changes_the_tool_list_and_announces_it() {
    let tmp = tempfile::tempdir().unwrap();
    let server = start(tmp.path()).await;
    let entered = call(&server, "enter_plan_mode", json!({})).await;
    assert_eq!(entered["isError"], json!(false), "{entered}");
    let recorder = server.recorder.clone();
    assert!(
        wait_until(Duration::from_secs(5), || *recorder.list_changed.lock().unwrap() >= 1).await,
        "no notifications/tools/list_changed"
    );
    let names: Vec<String> =
        server.client.list_all_tools().await.unwrap().iter().map(|t| t.name.to_string()).collect();
    assert!(names.contains(&"exit_plan_mode".to_owned()) && names.contains(&"grep".to_owned()));
    assert!(
        !names.iter().any(|n| n == "bash" || n == "write_file" || n == "enter_plan_mode"),
        "{names:?}"
    );
    let refused = call(&server, "bash", json!({"command": "true"})).await;
    assert_eq!(refused["isError"], json!(true), "bash is refused in plan mode: {refused}");

    let exited = call(&server, "exit_plan_mode", json!({"plan": "1. edit\n2. test"})).await;
    assert_eq!(exited["isError"], json!(false), "{exited}");
    // Issue 34, item 4: a client without elicitation has nobody to ask; the result says so.
    assert!(text(&exited).contains("Nobody was asked to approve this exit_plan_mode call"));
    assert!(
        wait_until(Duration::from_secs(5), || *recorder.list_changed.lock().unwrap() >= 2).await
    );
    let names: Vec<String> =
        server.client.list_all_tools().await.unwrap().iter().map(|t| t.name.to_string()).collect();
    assert!(names.contains(&"bash".to_owned()) && !names.contains(&"exit_plan_mode".to_owned()));
    server.client.cancel().await.unwrap();
}

/// Raw JSON lines, so that stdin can be closed while calls and a daemon still run.
#[test]
fn stdin_eof_exits_and_stops_every_process() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};
    let tmp = tempfile::tempdir().unwrap();
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("hands"))
        .args(["mcp", "--root"])
        .arg(tmp.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let send = |stdin: &mut std::process::ChildStdin, v: Value| {
        writeln!(stdin, "{v}").unwrap();
        stdin.flush().unwrap();
    };
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
    );
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let init: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(init["result"]["serverInfo"]["name"], "hands", "{line}");
    send(&mut stdin, json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "spawn_process", "arguments": {"command": "sleep 300", "type": "daemon"}}}),
    );
    line.clear();
    stdout.read_line(&mut line).unwrap();
    assert!(line.contains("\"id\":2"), "{line}");
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "bash", "arguments": {"command": "sleep 200"}}}),
    );
    let started = Instant::now();
    while session_processes(pid).len() < 2 && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(session_processes(pid).len() >= 2, "daemon and bash call not running");
    drop(stdin);
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(started.elapsed() < Duration::from_secs(15), "hands mcp did not exit on stdin EOF");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}");
    assert!(session_processes(pid).is_empty(), "left running: {:?}", session_processes(pid));
    // Only protocol messages on stdout.
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    for line in rest.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert_eq!(v["jsonrpc"], "2.0");
    }
}

/// Where stdout goes for the stdio-streams tests.
enum Out {
    /// A file: not a pipe, so hands writes it with blocking calls.
    File,
    /// A pipe, read by a thread.
    Pipe,
    /// The same pipe as stderr (`2>&1`).
    PipeWithStderr,
}

/// What one raw stdio session gave back.
struct Session {
    status: std::process::ExitStatus,
    stdout: String,
    stderr: String,
    /// Whether stdin's pipe (the open file description hands shared with us) was left non-blocking.
    stdin_left_nonblocking: bool,
}

/// O_NONBLOCK in the flags of one of this process's descriptors, from /proc/self/fdinfo.
fn nonblocking(fd: &impl std::os::fd::AsRawFd) -> bool {
    let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", fd.as_raw_fd())).unwrap();
    let flags = info.lines().find_map(|l| l.strip_prefix("flags:")).unwrap().trim();
    u32::from_str_radix(flags, 8).unwrap() & 0o4000 != 0
}

/// `hands mcp` with stdin a pipe we keep a copy of, stdout `out`; `lines` are written `delay`
/// after the start, one by one, then stdin is closed and hands must exit within 20 s.
fn raw_session(out: Out, delay: Duration, lines: &[Value]) -> Session {
    use std::io::{Read, Write};
    use std::process::Command;
    let tmp = tempfile::tempdir().unwrap();
    let (stdin_read, mut stdin_write) = std::io::pipe().unwrap();
    let stderr_path = tmp.path().join("stderr");
    let stderr_file = std::fs::File::create(&stderr_path).unwrap();
    let stdout_path = tmp.path().join("stdout");
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("hands"));
    cmd.args(["mcp", "--root"]).arg(tmp.path()).stdin(stdin_read.try_clone().unwrap());
    let mut reader = None;
    match out {
        Out::File => {
            cmd.stdout(std::fs::File::create(&stdout_path).unwrap()).stderr(stderr_file);
        }
        Out::Pipe => {
            let (r, w) = std::io::pipe().unwrap();
            cmd.stdout(w).stderr(stderr_file);
            reader = Some(r);
        }
        Out::PipeWithStderr => {
            let (r, w) = std::io::pipe().unwrap();
            cmd.stdout(w.try_clone().unwrap()).stderr(w);
            reader = Some(r);
        }
    }
    let mut child = cmd.spawn().unwrap();
    drop(cmd); // our copies of the write ends: the reader thread ends when hands exits
    let collect = reader.map(|mut r| {
        std::thread::spawn(move || {
            let mut text = String::new();
            r.read_to_string(&mut text).unwrap();
            text
        })
    });
    std::thread::sleep(delay);
    for line in lines {
        writeln!(stdin_write, "{line}").unwrap();
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(stdin_write);
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(20) {
            child.kill().unwrap();
            panic!("hands mcp did not exit on stdin EOF");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let piped = collect.map(|t| t.join().unwrap());
    let stdout = match (&out, piped) {
        (Out::File, _) | (_, None) => std::fs::read_to_string(&stdout_path).unwrap(),
        (_, Some(text)) => text,
    };
    Session {
        status,
        stdout,
        stderr: std::fs::read_to_string(&stderr_path).unwrap(),
        stdin_left_nonblocking: nonblocking(&stdin_read),
    }
}

fn handshake_and_list() -> Vec<Value> {
    vec![
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    ]
}

/// Both answers, each a whole JSON-RPC line, and nothing else.
fn assert_answers(session: &Session) {
    assert!(session.status.success(), "{:?}\n{}", session.status, session.stderr);
    let answers: Vec<Value> = session
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(answers.len(), 2, "{}", session.stdout);
    assert_eq!(answers[0]["result"]["serverInfo"]["name"], "hands");
    assert!(answers[1]["result"]["tools"].as_array().is_some_and(|t| !t.is_empty()));
}

/// stdin a pipe, stdout a file (`… | hands mcp > out`): hands used to set O_NONBLOCK on stdin for
/// the reactor, find stdout was no pipe and fall back to blocking reads of that now non-blocking
/// stdin; a read before the client's first line failed with EAGAIN (`Error reading from stream:
/// Resource temporarily unavailable`) and the handshake with it.
#[test]
fn a_pipe_in_and_a_file_out_wait_for_late_messages() {
    let session = raw_session(Out::File, Duration::from_millis(500), &handshake_and_list());
    assert_answers(&session);
    assert_eq!(session.stderr, "", "stderr");
    assert!(!session.stdin_left_nonblocking, "stdin's pipe left non-blocking");
}

/// Both pipes (a client's usual set-up): the reactor path answers, and stdin's pipe is given back
/// blocking, as hands found it (O_NONBLOCK is shared with whoever else holds the pipe).
#[test]
fn pipes_in_and_out_answer_and_give_stdin_back_blocking() {
    let session = raw_session(Out::Pipe, Duration::from_millis(300), &handshake_and_list());
    assert_answers(&session);
    assert_eq!(session.stderr, "", "stderr");
    assert!(!session.stdin_left_nonblocking, "stdin's pipe left non-blocking");
}

/// stdout and stderr one pipe (`2>&1`): the answers still come whole and nothing else is written.
#[test]
fn stdout_shared_with_stderr_still_answers() {
    let session =
        raw_session(Out::PipeWithStderr, Duration::from_millis(300), &handshake_and_list());
    assert_answers(&session);
    assert!(!session.stdin_left_nonblocking, "stdin's pipe left non-blocking");
}

/// Which standard streams a socket-stdio session gives hands.
#[derive(Clone, Copy, PartialEq)]
enum Sockets {
    /// A socket pair for stdin and another for stdout, as Node's child_process makes them (Claude
    /// Code, the Inspector).
    Two,
    /// One socket for both (`hands mcp <&3 >&3`).
    One,
}

/// The names of the threads of process `pid`.
fn thread_names(pid: u32) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .map(|name| name.trim().to_owned())
        .collect();
    names.sort();
    names
}

/// `hands mcp` over sockets: the handshake, a list and three calls answered in order; the names
/// of hands' threads while it serves; stdin's socket given back blocking; exit on close.
fn socket_session(sockets: Sockets) -> Vec<String> {
    use std::io::{BufRead, BufReader, Write};
    use std::os::unix::net::UnixStream;
    use std::process::{Command, Stdio};
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("a.txt"), "socket hello\n").unwrap();
    let (ours_in, theirs_in) = UnixStream::pair().unwrap();
    let (ours_out, theirs_out) = match sockets {
        Sockets::Two => UnixStream::pair().unwrap(),
        Sockets::One => (ours_in.try_clone().unwrap(), theirs_in.try_clone().unwrap()),
    };
    let kept = theirs_in.try_clone().unwrap(); // to read its flags after hands is gone
    let stderr = std::fs::File::create(tmp.path().join("stderr")).unwrap();
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("hands"))
        .args(["mcp", "--root"])
        .arg(tmp.path())
        .stdin(Stdio::from(std::os::fd::OwnedFd::from(theirs_in)))
        .stdout(Stdio::from(std::os::fd::OwnedFd::from(theirs_out)))
        .stderr(stderr)
        .spawn()
        .unwrap();
    ours_out.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut writer = ours_in.try_clone().unwrap();
    let mut lines = BufReader::new(ours_out.try_clone().unwrap()).lines();
    let mut messages = handshake_and_list();
    for id in 3..6 {
        messages.push(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "read_file", "arguments": {"path": "a.txt"}}}));
    }
    let mut answers = Vec::new();
    for message in &messages {
        writeln!(writer, "{message}").unwrap();
        if message.get("id").is_some() {
            let line = lines.next().unwrap().unwrap();
            answers.push(serde_json::from_str::<Value>(&line).unwrap());
        }
    }
    let threads = thread_names(child.id());
    assert_eq!(answers[0]["result"]["serverInfo"]["name"], "hands", "{answers:?}");
    assert!(answers[1]["result"]["tools"].as_array().is_some_and(|t| !t.is_empty()));
    for (n, answer) in answers[2..].iter().enumerate() {
        assert_eq!(answer["id"], n + 3, "{answer}");
        assert!(answer["result"]["content"][0]["text"].as_str().unwrap().contains("socket hello"));
    }
    writer.shutdown(std::net::Shutdown::Write).unwrap();
    drop((writer, ours_in, lines, ours_out));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(20) {
            child.kill().unwrap();
            panic!("hands mcp did not exit when its socket closed");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        status.success(),
        "{status:?}: {}",
        std::fs::read_to_string(tmp.path().join("stderr")).unwrap()
    );
    assert!(!nonblocking(&kept), "stdin's socket left non-blocking");
    threads
}

/// A client that hands hands socket pairs (Node's child_process does) is served by the reactor
/// like one with pipes: no blocking-pool thread reads stdin or writes stdout (it used to, a
/// thread hand-off per message each way), and the socket is given back blocking.
#[test]
fn socket_pairs_in_and_out_are_served_by_the_reactor() {
    for sockets in [Sockets::Two, Sockets::One] {
        let threads = socket_session(sockets);
        assert!(
            !threads.iter().any(|name| name.starts_with("tokio-runtime")),
            "a blocking-pool thread serves the socket: {threads:?}"
        );
    }
}

/// A client that declares elicitation and answers every approval question the same way.
#[derive(Clone)]
struct Asker {
    approve: bool,
    asked: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for Asker {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        rmcp::model::ClientConfig::new(
            rmcp::model::ClientCapabilities::builder().enable_elicitation().build(),
            rmcp::model::Implementation::new("asker", "1"),
        )
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        self.asked.lock().unwrap().push(format!("{request:?}"));
        let answer = if self.approve {
            rmcp::model::ElicitResult::new(rmcp::model::ElicitationAction::Accept)
                .with_content(json!({"approve": true}))
        } else {
            rmcp::model::ElicitResult::new(rmcp::model::ElicitationAction::Decline)
                .with_content(json!({"comment": "not that file"}))
        };
        Ok(answer)
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn approval_ask_goes_through_elicitation() {
    for approve in [true, false] {
        let tmp = tempfile::tempdir().unwrap();
        let mut cmd = tokio::process::Command::new(assert_cmd::cargo::cargo_bin("hands"));
        cmd.args(["mcp", "-c", "approval=\"ask\"", "--root"]).arg(tmp.path());
        let asker = Asker { approve, asked: Arc::default() };
        let client = asker.clone().serve(TokioChildProcess::new(cmd).unwrap()).await.unwrap();
        let result = client
            .call_tool(params("write_file", json!({"path": "a.txt", "content": "hi\n"})))
            .await
            .unwrap();
        let result = serde_json::to_value(result).unwrap();
        let asked = asker.asked.lock().unwrap().clone();
        assert_eq!(asked.len(), 1, "one question per call: {asked:?}");
        assert!(asked[0].contains("a.txt"), "the question names the file: {asked:?}");
        if approve {
            assert_eq!(result["isError"], json!(false), "{result}");
            assert!(tmp.path().join("a.txt").exists());
        } else {
            assert_eq!(result["isError"], json!(true), "{result}");
            assert!(text(&result).contains("not that file"), "the user's words: {result}");
            assert!(!tmp.path().join("a.txt").exists());
        }
        client.cancel().await.unwrap();
    }
}
