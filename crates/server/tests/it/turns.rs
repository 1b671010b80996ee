//! Whole turns driven over the real API with a scripted model: ask_user answered over
//! `/vibe/answer` and `/v1/.../answer`, approvals granted and denied, `/vibe/abort/{projectId}` in
//! the middle of a bash call (the command's process is gone, the turn ends aborted), a second
//! message while a turn runs (409), and many sessions each running a turn at once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::{Duration, Instant};

use common::{Reply, Scripted, SseStream, TestServer, live_with_env};
use hands_agent::model::Block;
use hands_core::CoreConfig;
use hands_core::config::Approval;
use hands_server::ServerConfig;
use serde_json::{Value, json};

/// The text of the tool result the model was last sent.
fn last_tool_result(model: &Scripted) -> String {
    let messages = model.last_messages();
    let last = messages.last().expect("the model was called");
    last.content
        .iter()
        .find_map(|b| match b {
            Block::ToolResult { content, .. } => Some(format!("{content:?}")),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no tool result in {last:?}"))
}

/// Read `stream` until an event named `name`; returns its data.
async fn until(stream: &mut SseStream, name: &str) -> Value {
    loop {
        let message = stream
            .next_within(Duration::from_secs(60))
            .await
            .unwrap_or_else(|| panic!("no {name} event came"));
        if message.event == name {
            return message.data;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_user_is_answered_over_vibe_answer_and_the_v1_route() {
    let model = Scripted::new([
        Reply::tool("ask_user", json!({"question": "Which colour?", "options": ["red", "blue"]})),
        Reply::tool("ask_user", json!({"question": "Anything else?"})),
        Reply::text("done asking"),
    ]);
    let server = TestServer::start(Some(model.clone())).await;
    let id = server.session(json!({"project_id": "asky"})).await;
    let mut stream = SseStream::open(&server, &id, None).await;
    let (status, _) =
        server.post(&format!("/v1/sessions/{id}/messages"), json!({"text": "paint"})).await;
    assert_eq!(status, 202);

    let question = until(&mut stream, "question").await;
    assert_eq!(question["question"], "Which colour?");
    assert_eq!(question["options"], json!(["red", "blue"]));
    let (status, info) = server.get(&format!("/v1/sessions/{id}")).await;
    assert_eq!(status, 200);
    assert_eq!(info["pending_questions"].as_array().unwrap().len(), 1, "{info}");
    // The compatibility route, by project only: its one waiting session gets the answer.
    let (status, body) =
        server.post("/vibe/answer", json!({"answer": "blue", "projectId": "asky"})).await;
    assert_eq!((status, body), (200, json!({"ok": true})));
    let answered = until(&mut stream, "question_answered").await;
    assert_eq!(answered["question_id"], question["question_id"]);

    let second = until(&mut stream, "question").await;
    assert!(last_tool_result(&model).contains("blue"), "{}", last_tool_result(&model));
    let (status, body) = server
        .post(
            &format!("/v1/sessions/{id}/answer"),
            json!({"answer": "no thanks", "question_id": second["question_id"]}),
        )
        .await;
    assert_eq!(status, 204, "{body}");
    let end = until(&mut stream, "turn_ended").await;
    assert_eq!(end["reason"], "completed", "{end}");
    assert_eq!(end["text"], "done asking");
    assert!(last_tool_result(&model).contains("no thanks"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_are_granted_and_denied_over_http() {
    let model = Scripted::new([
        Reply::tool("write_file", json!({"path": "granted.txt", "content": "yes\n"})),
        Reply::tool("write_file", json!({"path": "denied.txt", "content": "no\n"})),
        Reply::text("finished"),
    ]);
    let core = CoreConfig { approval: Approval::Ask, ..CoreConfig::default() };
    let server = TestServer::start_full(Some(model.clone()), ServerConfig::default(), core).await;
    let id = server.session(json!({})).await;
    let mut stream = SseStream::open(&server, &id, None).await;
    let (status, _) =
        server.post(&format!("/v1/sessions/{id}/messages"), json!({"text": "write"})).await;
    assert_eq!(status, 202);

    let request = until(&mut stream, "approval_requested").await;
    assert_eq!(request["tool"], "write_file");
    let approval = request["approval_id"].as_str().unwrap().to_owned();
    let (status, info) = server.get(&format!("/v1/sessions/{id}")).await;
    assert_eq!(status, 200);
    assert_eq!(info["pending_approvals"].as_array().unwrap().len(), 1, "{info}");
    let path = format!("/v1/sessions/{id}/approvals/{approval}");
    let (status, body) = server.post(&path, json!({"approve": true})).await;
    assert_eq!(status, 204, "{body}");
    let decided = until(&mut stream, "approval_decided").await;
    assert_eq!(decided["approved"], true);
    // Decided once: a second decision finds nothing waiting.
    let (status, _) = server.post(&path, json!({"approve": false})).await;
    assert_eq!(status, 409);

    let request = until(&mut stream, "approval_requested").await;
    let path = format!("/v1/sessions/{id}/approvals/{}", request["approval_id"].as_str().unwrap());
    let (status, _) =
        server.post(&path, json!({"approve": false, "reason": "not that file"})).await;
    assert_eq!(status, 204);
    let end = until(&mut stream, "turn_ended").await;
    assert_eq!(end["reason"], "completed", "{end}");
    assert_eq!(std::fs::read_to_string(server.root.join("granted.txt")).unwrap(), "yes\n");
    assert!(!server.root.join("denied.txt").exists());
    assert!(last_tool_result(&model).contains("not that file"), "{}", last_tool_result(&model));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vibe_abort_ends_a_running_bash_call_and_its_process() {
    let mark = format!("HANDS_API_TEST_MARK={}", std::process::id());
    let model = Scripted::new([Reply::tool(
        "bash",
        json!({"command": format!("export {mark}-abort; sleep 60; echo finished")}),
    )]);
    let server = TestServer::start(Some(model)).await;
    let id = server.session(json!({"project_id": "busy"})).await;
    let other = server.session(json!({"project_id": "elsewhere"})).await;
    let mut stream = SseStream::open(&server, &id, None).await;
    let (status, _) =
        server.post(&format!("/v1/sessions/{id}/messages"), json!({"text": "wait"})).await;
    assert_eq!(status, 202);
    let started = until(&mut stream, "tool_call_started").await;
    assert_eq!(started["name"], "bash");
    let marker = format!("{mark}-abort");
    let deadline = Instant::now() + Duration::from_secs(20);
    while live_with_env(&marker).is_empty() {
        assert!(Instant::now() < deadline, "the command never started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // A second message while the turn runs is refused.
    let (status, body) =
        server.post(&format!("/v1/sessions/{id}/messages"), json!({"text": "more"})).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "conflict");

    let began = Instant::now();
    let (status, body) = server.post_empty("/vibe/abort/busy").await;
    assert_eq!((status, body), (200, json!({"aborted_sessions": 1})));
    let finished = until(&mut stream, "tool_call_finished").await;
    assert_eq!(finished["name"], "bash");
    let end = until(&mut stream, "turn_ended").await;
    assert_eq!(end["reason"], "aborted", "{end}");
    assert!(began.elapsed() < Duration::from_secs(30), "{:?}", began.elapsed());
    let deadline = Instant::now() + Duration::from_secs(10);
    while !live_with_env(&marker).is_empty() {
        assert!(Instant::now() < deadline, "the aborted command's processes are still alive");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The other project's session was not touched; the session takes messages again.
    let (_, info) = server.get(&format!("/v1/sessions/{other}")).await;
    assert_eq!(info["running_turn"], Value::Null);
    let (status, _) =
        server.post(&format!("/v1/sessions/{id}/messages"), json!({"text": "again"})).await;
    assert_eq!(status, 202);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_sessions_each_run_a_turn_at_once() {
    const SESSIONS: usize = 100;
    let model = Scripted::new([]);
    let server = TestServer::start(Some(model.clone())).await;
    let mut ids = Vec::new();
    for i in 0..SESSIONS {
        ids.push(server.session(json!({"id": format!("many-{i}")})).await);
    }
    let posts = ids.iter().map(|id| {
        let server = &server;
        async move {
            server.post(&format!("/v1/sessions/{id}/messages"), json!({"text": "hello"})).await
        }
    });
    for (status, body) in futures_util::future::join_all(posts).await {
        assert_eq!(status, 202, "{body}");
    }
    for id in &ids {
        let status = tokio::time::timeout(Duration::from_secs(120), server.host.wait_turn(id))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(status.as_deref(), Some("completed"), "{id}");
    }
    assert_eq!(model.requests.lock().unwrap().len(), SESSIONS);
    let (_, list) = server.get("/v1/sessions").await;
    assert_eq!(list["sessions"].as_array().unwrap().len(), SESSIONS);
}
