//! The MCP client against a real MCP server over stdio (the `echo_server` example as a child
//! process): tools come in as `mcp__echo__…` with their output schemas, calls round-trip text,
//! structured content and `isError`, progress reaches the caller and cancellation the server, a
//! changed tool list is listed again, a server that cannot start is reported without stopping the
//! others, and a killed server is restarted.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hands_core::{
    CallOptions, CancellationToken, CoreConfig, Mode, Progress, Registry, Session, ToolCall,
};
use hands_mcp::{McpClients, McpServerConfig, McpServersConfig, ServerFactory};
use rmcp::ServiceExt;
use serde_json::json;

fn echo_server() -> PathBuf {
    // target/debug/deps/client_echo-… → target/debug/examples/echo_server
    let exe = std::env::current_exe().unwrap();
    let path = exe.parent().unwrap().parent().unwrap().join("examples").join("echo_server");
    assert!(
        path.exists(),
        "build the example first: cargo build -p hands-mcp --example echo_server"
    );
    path
}

fn config(entries: &[(&str, McpServerConfig)]) -> McpServersConfig {
    McpServersConfig(entries.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect())
}

fn stdio(command: impl Into<String>, args: &[&str]) -> McpServerConfig {
    McpServerConfig {
        command: Some(command.into()),
        args: args.iter().map(|s| (*s).to_owned()).collect(),
        ..McpServerConfig::default()
    }
}

fn registry(clients: &McpClients) -> Registry {
    clients.register(Registry::builder(CoreConfig::default())).build()
}

#[tokio::test(flavor = "multi_thread")]
async fn remote_tools_appear_and_calls_round_trip() {
    let echo = echo_server().display().to_string();
    let clients = McpClients::connect_blocking(&config(&[("echo", stdio(echo, &[]))]), 120_000);
    assert_eq!(clients.status()[0].error, None);
    let registry = registry(&clients);
    let names: Vec<String> =
        registry.list(hands_core::Mode::Build).iter().map(|s| s.name.clone()).collect();
    for name in [
        "mcp__echo__echo",
        "mcp__echo__fail",
        "mcp__echo__sleep",
        "mcp__echo__stats",
        "mcp_list",
        "mcp_call",
    ] {
        assert!(names.contains(&name.to_owned()), "{name} missing from {names:?}");
    }
    let spec = registry.get("mcp__echo__echo").unwrap().spec().clone();
    assert!(spec.description.starts_with("Say the text back."), "{}", spec.description);
    assert_eq!(spec.input_schema["properties"]["text"]["type"], "string");
    // The server claims readOnlyHint; a remote hint is not trusted.
    assert!(!spec.annotations.read_only && spec.annotations.open_world && spec.needs_approval);

    let tmp = tempfile::tempdir().unwrap();
    let session = Session::one_shot(tmp.path());
    let call = |name: &str, args| ToolCall::new(format!("c-{name}"), name, args);
    let out = registry
        .dispatch(&session, call("mcp__echo__echo", json!({"text": "héllo"})))
        .await
        .unwrap();
    assert!(!out.is_error);
    assert_eq!(out.joined_text(), "héllo");

    let out = registry.dispatch(&session, call("mcp__echo__fail", json!({}))).await.unwrap();
    assert!(out.is_error);
    assert_eq!(out.joined_text(), "this tool always fails");

    let out = registry
        .dispatch(
            &session,
            call(
                "mcp_call",
                json!({"server": "echo", "tool": "echo", "arguments": {"text": "via mcp_call"}}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(out.joined_text(), "via mcp_call");

    let out = registry
        .dispatch(&session, call("mcp_call", json!({"server": "nope", "tool": "echo"})))
        .await
        .unwrap();
    assert!(out.is_error && out.joined_text().contains("No MCP server named `nope`"), "{out:?}");

    let out = registry.dispatch(&session, call("mcp_list", json!({}))).await.unwrap();
    let text = out.joined_text();
    assert!(text.contains("echo: 7 tools") && text.contains("as mcp__echo__sleep"), "{text}");
    assert_eq!(out.structured.unwrap()["servers"][0]["tools"][0]["name"], "echo");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_cannot_start_is_reported_not_fatal() {
    let echo = echo_server().display().to_string();
    let started = std::time::Instant::now();
    let clients = McpClients::connect_blocking(
        &config(&[
            ("broken", stdio("/nonexistent/mcp-server", &[])),
            ("quits", stdio("sh", &["-c", "exit 3"])),
            ("echo", stdio(echo, &[])),
        ]),
        120_000,
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "a failing server must not hold the start"
    );
    let status = clients.status();
    let by_name = |n: &str| status.iter().find(|s| s.name == n).unwrap();
    let broken = by_name("broken").error.clone().unwrap();
    assert!(broken.contains("cannot start `/nonexistent/mcp-server`"), "{broken}");
    assert!(by_name("quits").error.is_some());
    assert_eq!(by_name("echo").error, None);

    let registry = registry(&clients);
    let tmp = tempfile::tempdir().unwrap();
    let session = Session::one_shot(tmp.path());
    let out = registry
        .dispatch(&session, ToolCall::new("c1", "mcp__echo__echo", json!({"text": "still here"})))
        .await
        .unwrap();
    assert_eq!(out.joined_text(), "still here");
    let out =
        registry.dispatch(&session, ToolCall::new("c2", "mcp_list", json!({}))).await.unwrap();
    assert!(
        out.joined_text().contains("broken: unavailable (cannot start"),
        "{}",
        out.joined_text()
    );
    let out = registry
        .dispatch(
            &session,
            ToolCall::new("c3", "mcp_call", json!({"server": "broken", "tool": "x"})),
        )
        .await
        .unwrap();
    assert!(out.is_error, "{out:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_server_is_restarted_and_the_call_retried() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("starts.log");
    let echo = echo_server().display().to_string();
    let clients = McpClients::connect_blocking(
        &config(&[("echo", stdio(echo, &[log.to_str().unwrap()]))]),
        120_000,
    );
    let registry = registry(&clients);
    let session = Session::one_shot(tmp.path());
    let pid = |n: &str| ToolCall::new(n, "mcp__echo__pid", json!({}));
    let first = registry.dispatch(&session, pid("p1")).await.unwrap().joined_text();
    assert_eq!(Some(first.parse::<u32>().unwrap()), clients.pid("echo").await);

    let killed = std::process::Command::new("kill").args(["-9", &first]).status().unwrap();
    assert!(killed.success());
    // Right after the kill (the client may not have noticed yet) and once more later.
    let second = registry.dispatch(&session, pid("p2")).await.unwrap();
    assert!(!second.is_error, "{second:?}");
    assert_ne!(second.joined_text(), first, "a new process answers");

    let starts = std::fs::read_to_string(&log).unwrap();
    assert_eq!(starts.lines().count(), 2, "{starts}");
}

/// A killed server whose pipes another process still holds sends no end of file: a call made
/// after the kill must still find it gone (its process exited) and restart it, not wait out the
/// call's limit (30 s here; the holder lives 600 s).
#[tokio::test(flavor = "multi_thread")]
async fn a_killed_server_whose_pipes_live_on_is_restarted() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("starts.log");
    let echo = echo_server().display().to_string();
    let clients = McpClients::connect_blocking(
        &config(&[("echo", stdio(echo, &[log.to_str().unwrap()]))]),
        30_000,
    );
    let registry = registry(&clients);
    let session = Session::one_shot(tmp.path());
    let call = |n: &str, tool: &str, args| ToolCall::new(n, tool, args);
    let first = registry.dispatch(&session, call("p1", "mcp__echo__pid", json!({}))).await;
    let first = first.unwrap().joined_text();
    // A grandchild that keeps the server's stdout and stdin open after the server is gone.
    let holder = registry
        .dispatch(
            &session,
            call(
                "h",
                "mcp__echo__sh",
                json!({"command": "sleep 600 </proc/$PPID/fd/0 >/proc/$PPID/fd/1 2>/dev/null & echo $!"}),
            ),
        )
        .await
        .unwrap()
        .joined_text();
    let holder = holder.trim().to_owned();
    assert!(holder.parse::<u32>().is_ok(), "the holder's pid: {holder}");
    assert!(std::process::Command::new("kill").args(["-9", &first]).status().unwrap().success());
    let second = registry.dispatch(&session, call("p2", "mcp__echo__pid", json!({}))).await;
    let _ = std::process::Command::new("kill").args(["-9", &holder]).status();
    let second = second.unwrap();
    assert!(!second.is_error, "{second:?}");
    assert_ne!(second.joined_text(), first, "a new process answers");
    let starts = std::fs::read_to_string(&log).unwrap();
    assert_eq!(starts.lines().count(), 2, "{starts}");
}

/// A server that dies during a call, its pipes held by another process: the call stops waiting
/// (its process exited), restarts the server once and tries again; the second death is reported.
#[tokio::test(flavor = "multi_thread")]
async fn a_server_dying_mid_call_with_its_pipes_held_is_reported_gone() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("starts.log");
    let holders = tmp.path().join("holders");
    let echo = echo_server().display().to_string();
    let clients = McpClients::connect_blocking(
        &config(&[("echo", stdio(echo, &[log.to_str().unwrap()]))]),
        30_000,
    );
    let registry = registry(&clients);
    let session = Session::one_shot(tmp.path());
    let command = format!(
        "sleep 600 </proc/$PPID/fd/0 >/proc/$PPID/fd/1 2>/dev/null & echo $! >>{}; kill -9 $PPID",
        holders.display()
    );
    let out = registry
        .dispatch(&session, ToolCall::new("k", "mcp__echo__sh", json!({"command": command})))
        .await
        .unwrap();
    for pid in std::fs::read_to_string(&holders).unwrap_or_default().lines() {
        let _ = std::process::Command::new("kill").args(["-9", pid]).status();
    }
    let text = out.joined_text();
    assert!(out.is_error && text.contains("also after a restart"), "{text}");
    assert!(text.contains("exited before it answered"), "{text}");
    let starts = std::fs::read_to_string(&log).unwrap();
    assert_eq!(starts.lines().count(), 2, "{starts}");
}

#[test]
fn no_servers_means_no_mcp_tools() {
    let clients = McpClients::connect_blocking(&McpServersConfig::default(), 120_000);
    let registry = registry(&clients);
    assert!(registry.get("mcp_list").is_none() && registry.get("mcp_call").is_none());
}

fn echo_clients() -> McpClients {
    let echo = echo_server().display().to_string();
    let clients = McpClients::connect_blocking(&config(&[("echo", stdio(echo, &[]))]), 120_000);
    assert_eq!(clients.status()[0].error, None);
    clients
}

#[tokio::test(flavor = "multi_thread")]
async fn remote_output_schemas_are_kept_and_served() {
    let clients = echo_clients();
    let registry = Arc::new(registry(&clients));
    let spec = registry.get("mcp__echo__stats").unwrap().spec().clone();
    // The remote schema, plus the `full_output` that hands' truncation may add to a cut result.
    let expected = hands_core::middleware::truncate::with_full_output(json!({
        "type": "object",
        "properties": {"calls": {"type": "integer"}, "name": {"type": "string"}}
    }));
    assert_eq!(spec.output_schema.as_ref(), Some(&expected), "{spec:?}");
    assert_eq!(registry.get("mcp__echo__echo").unwrap().spec().output_schema, None);

    let tmp = tempfile::tempdir().unwrap();
    let session = Session::one_shot(tmp.path());
    let out = registry
        .dispatch(&session, ToolCall::new("s", "mcp__echo__stats", json!({})))
        .await
        .unwrap();
    assert_eq!(out.structured, Some(json!({"calls": 7, "name": "echo"})), "{out:?}");

    // hands' own MCP server offers the remote tool with its output schema.
    let factory = ServerFactory::new(Arc::clone(&registry), tmp.path(), Mode::Build);
    let (server_io, client_io) = tokio::io::duplex(1 << 16);
    let server = factory.connection();
    tokio::spawn(async move {
        let running = server.serve(server_io).await.unwrap();
        let _ = running.waiting().await;
    });
    let client = ().serve(client_io).await.unwrap();
    let tools = client.peer().list_all_tools().await.unwrap();
    let stats = tools.iter().find(|t| t.name == "mcp__echo__stats").unwrap();
    let served = serde_json::to_value(stats.output_schema.as_deref().unwrap()).unwrap();
    assert_eq!(served, expected);
    client.cancel().await.unwrap();
}

/// A progress sink that records every report.
fn recorder() -> (hands_core::ProgressSink, Arc<Mutex<Vec<Progress>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    (Arc::new(move |p: Progress| sink.lock().unwrap().push(p)), seen)
}

#[tokio::test(flavor = "multi_thread")]
async fn progress_reaches_the_caller_and_cancellation_the_server() {
    let clients = echo_clients();
    let registry = registry(&clients);
    let tmp = tempfile::tempdir().unwrap();
    let session = Session::new("progress", tmp.path());
    let (sink, seen) = recorder();
    let options = CallOptions { progress: Some(sink), cancel: None };
    let call = ToolCall::new("p", "mcp__echo__sleep", json!({"ms": 800}));
    let out = registry.dispatch_with(&session, call, options).await.unwrap();
    assert_eq!(out.joined_text(), "slept 800 ms");
    let seen = seen.lock().unwrap().clone();
    assert!(seen.len() >= 2, "the server reports every 100 ms: {seen:?}");
    assert!(seen.windows(2).all(|w| w[0].progress < w[1].progress), "{seen:?}");
    assert!(seen[0].message.as_deref().is_some_and(|m| m.starts_with("slept")), "{seen:?}");

    let cancel = CancellationToken::new();
    let options = CallOptions { progress: None, cancel: Some(cancel.clone()) };
    let started = Instant::now();
    let call = ToolCall::new("c", "mcp__echo__sleep", json!({"ms": 30_000}));
    let canceller = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel.cancel();
    };
    let (out, ()) = tokio::join!(registry.dispatch_with(&session, call, options), canceller);
    let out = out.unwrap();
    assert!(out.is_error && out.joined_text().contains("aborted"), "{out:?}");
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
    // The server is still usable (the cancelled request did not wedge the session).
    let out = registry
        .dispatch(&session, ToolCall::new("e", "mcp__echo__echo", json!({"text": "after"})))
        .await
        .unwrap();
    assert_eq!(out.joined_text(), "after");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_changed_tool_list_is_listed_again() {
    let clients = echo_clients();
    let registry = registry(&clients);
    let tmp = tempfile::tempdir().unwrap();
    let session = Session::new("toggle", tmp.path());
    let names = || clients.status()[0].tools.clone();
    assert!(!names().contains(&"extra".to_owned()));
    assert!(registry.get("mcp__echo__extra").is_none());
    // Issue 12, item 2: the registry's own list follows the server's.
    let mut changes = registry.subscribe();
    changes.borrow_and_update();

    let out = registry
        .dispatch(&session, ToolCall::new("t1", "mcp__echo__toggle", json!({})))
        .await
        .unwrap();
    assert_eq!(out.joined_text(), "extra on");
    tokio::time::timeout(Duration::from_secs(10), changes.changed()).await.unwrap().unwrap();
    assert!(names().contains(&"extra".to_owned()), "{:?}", names());

    // The new tool is listed, by mcp_list and by the registry, and callable by its own name.
    let out = registry.dispatch(&session, ToolCall::new("l", "mcp_list", json!({}))).await.unwrap();
    let text = out.joined_text();
    assert!(
        text.contains("echo: 8 tools") && text.contains("extra — Only there after toggle."),
        "{text}"
    );
    assert!(text.contains("as mcp__echo__extra"), "{text}");
    let listed: Vec<String> = registry.list(Mode::Build).into_iter().map(|s| s.name).collect();
    assert!(listed.contains(&"mcp__echo__extra".to_owned()), "{listed:?}");
    let out = registry
        .dispatch(&session, ToolCall::new("x", "mcp__echo__extra", json!({})))
        .await
        .unwrap();
    assert_eq!(out.joined_text(), "extra", "{out:?}");
    let call = json!({"server": "echo", "tool": "extra"});
    let out = registry.dispatch(&session, ToolCall::new("y", "mcp_call", call)).await.unwrap();
    assert_eq!(out.joined_text(), "extra", "{out:?}");

    registry.dispatch(&session, ToolCall::new("t2", "mcp__echo__toggle", json!({}))).await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), changes.changed()).await.unwrap().unwrap();
    assert!(!names().contains(&"extra".to_owned()), "{:?}", names());
    assert!(registry.get("mcp__echo__extra").is_none(), "a gone tool is still registered");
}
