//! Sessions over the real API and a real host: create, list, read, delete; direct tool calls;
//! processes; and the refusals a client meets (unknown session, a taken id, nothing pending, no
//! model, an idle project).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::{Reply, Scripted, TestServer};
use serde_json::{Value, json};

fn assert_error(status: u16, body: &Value, want_status: u16, want_code: &str) {
    assert_eq!(status, want_status, "{body}");
    assert_eq!(body["error"]["code"], want_code, "{body}");
    assert!(!body["error"]["message"].as_str().unwrap_or("").is_empty(), "{body}");
}

/// `value` read through the documentation twin `T` and written again is the same JSON: the
/// OpenAPI document describes what the server really sends.
fn matches_doc<T: serde::de::DeserializeOwned + serde::Serialize>(value: &Value) {
    let twin: T = serde_json::from_value(value.clone())
        .unwrap_or_else(|e| panic!("{e}: the documented schema cannot read {value}"));
    assert_eq!(&serde_json::to_value(twin).unwrap(), value, "the document drops fields");
}

/// `value` validates against the OpenAPI document's schema `name`, and that schema is the one
/// derived from core's process row (status and type are enums, not free strings).
async fn valid_per_openapi(server: &TestServer, name: &str, value: &Value) {
    let (status, doc) = server.get("/v1/openapi.json").await;
    assert_eq!(status, 200);
    let schemas = &doc["components"]["schemas"];
    let row = &schemas["ProcessRow"]["properties"];
    assert_eq!(row["status"]["$ref"], "#/components/schemas/ProcessStatus", "{row}");
    assert_eq!(row["type"]["$ref"], "#/components/schemas/ProcessKind", "{row}");
    let root =
        json!({"$ref": format!("#/components/schemas/{name}"), "components": doc["components"]});
    let validator = jsonschema::validator_for(&root).unwrap();
    let errors: Vec<String> = validator.iter_errors(value).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{value} fails the documented {name}: {errors:?}");
    let mut wrong = value.clone();
    wrong["processes"][0]["status"] = json!("sleeping");
    assert!(!validator.is_valid(&wrong), "the documented status is not the typed one");
}

#[tokio::test]
async fn a_session_is_created_listed_read_and_deleted() {
    let server = TestServer::start(None).await;
    let body = json!({
        "root": server.root,
        "id": "s-1",
        "project_id": "proj-a",
        "mode": "plan",
        "title": "first",
    });
    let (status, info) = server.post("/v1/sessions", body).await;
    assert_eq!(status, 201, "{info}");
    assert_eq!(info["id"], "s-1");
    assert_eq!(info["project_id"], "proj-a");
    assert_eq!(info["mode"], "plan");
    assert_eq!(info["title"], "first");
    assert_eq!(info["running_turn"], Value::Null);
    matches_doc::<hands_server::docs::SessionInfo>(&info);

    // Defaults: a generated id, build mode, the root's folder name as the project.
    let (status, other) = server.post("/v1/sessions", json!({"root": server.root})).await;
    assert_eq!(status, 201, "{other}");
    assert_eq!(other["mode"], "build");
    assert_eq!(other["project_id"], "proj");
    let other_id = other["id"].as_str().unwrap().to_owned();
    assert!(!other_id.is_empty());

    let (status, list) = server.get("/v1/sessions").await;
    assert_eq!(status, 200);
    let ids: Vec<&str> =
        list["sessions"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert!(ids.contains(&"s-1") && ids.contains(&other_id.as_str()), "{ids:?}");
    matches_doc::<hands_server::schemas::SessionListDoc>(&list);
    // The server's own root, absolute, for a client to offer first.
    let root = std::fs::canonicalize(&server.root).unwrap();
    assert_eq!(list["default_root"], json!(root), "{list}");

    let (status, got) = server.get("/v1/sessions/s-1").await;
    assert_eq!(status, 200);
    assert_eq!(got["id"], "s-1");
    let (status, transcript) = server.get("/v1/sessions/s-1/messages").await;
    assert_eq!(status, 200);
    assert_eq!(transcript, json!({"messages": []}));

    let reply = server.client.delete(server.url("/v1/sessions/s-1")).send().await.unwrap();
    assert_eq!(reply.status(), 204);
    assert!(reply.bytes().await.unwrap().is_empty());
    let (status, body) = server.get("/v1/sessions/s-1").await;
    assert_error(status, &body, 404, "not_found");
    let (status, body) = server.delete("/v1/sessions/s-1").await;
    assert_error(status, &body, 404, "not_found");
}

#[tokio::test]
async fn a_taken_id_is_409() {
    let server = TestServer::start(None).await;
    server.session(json!({"id": "dup"})).await;
    let (status, body) =
        server.post("/v1/sessions", json!({"root": server.root, "id": "dup"})).await;
    assert_error(status, &body, 409, "conflict");
}

#[tokio::test]
async fn an_unknown_session_is_404_on_every_route() {
    let server = TestServer::start(Some(Scripted::new([]))).await;
    let s = "/v1/sessions/nope";
    for path in [s.to_owned(), format!("{s}/messages"), format!("{s}/processes")] {
        let (status, body) = server.get(&path).await;
        assert_error(status, &body, 404, "not_found");
    }
    let (status, body) = server.delete(s).await;
    assert_error(status, &body, 404, "not_found");
    let posts = [
        (format!("{s}/messages"), json!({"text": "hi"})),
        (format!("{s}/abort"), json!({})),
        (format!("{s}/tools/read_file"), json!({"args": {"path": "hello.txt"}})),
        (format!("{s}/processes/p1/stop"), json!({})),
    ];
    for (path, body) in posts {
        let (status, reply) = server.post(&path, body).await;
        assert_error(status, &reply, 404, "not_found");
    }
    let reply = server.client.get(server.url(&format!("{s}/events"))).send().await.unwrap();
    let (status, body) = common::response(reply).await;
    assert_error(status, &body, 404, "not_found");
}

#[tokio::test]
async fn answers_with_no_question_pending_are_409() {
    let server = TestServer::start(None).await;
    let id = server.session(json!({"project_id": "quiet"})).await;
    let (status, body) =
        server.post(&format!("/v1/sessions/{id}/answer"), json!({"answer": "yes"})).await;
    assert_error(status, &body, 409, "conflict");
    let (status, body) = server
        .post(&format!("/v1/sessions/{id}/answer"), json!({"answer": "y", "question_id": "q"}))
        .await;
    assert_error(status, &body, 409, "conflict");
    for body in [
        json!({"answer": "yes"}),
        json!({"answer": "yes", "sessionId": id}),
        json!({"answer": "yes", "projectId": "quiet"}),
        json!({"answer": "yes", "questionId": "q-1"}),
    ] {
        let (status, reply) = server.post("/vibe/answer", body.clone()).await;
        assert_error(status, &reply, 409, "conflict");
    }
}

#[tokio::test]
async fn aborting_an_idle_or_unknown_project_is_200_with_0() {
    let server = TestServer::start(None).await;
    let id = server.session(json!({"project_id": "idle"})).await;
    let (status, body) = server.post_empty("/vibe/abort/never-seen").await;
    assert_eq!((status, body), (200, json!({"aborted_sessions": 0})));
    let (status, body) = server.post_empty("/vibe/abort/idle").await;
    assert_eq!(status, 200, "{body}");
    assert!(body["aborted_sessions"].as_u64().unwrap() <= 1, "{body}");
    let reply = server.client.post(server.url(&format!("/v1/sessions/{id}/abort"))).send();
    assert_eq!(reply.await.unwrap().status(), 204);
}

#[tokio::test]
async fn a_message_without_a_model_is_503() {
    let server = TestServer::start(None).await;
    let id = server.session(json!({})).await;
    let (status, body) =
        server.post(&format!("/v1/sessions/{id}/messages"), json!({"text": "hi"})).await;
    assert_error(status, &body, 503, "no_model");
    assert!(body["error"]["message"].as_str().unwrap().contains("[model]"), "{body}");
}

#[tokio::test]
async fn a_10_mb_message_starts_a_turn_and_is_kept_whole() {
    let model = Scripted::new([Reply::text("received")]);
    let server = TestServer::start(Some(model.clone())).await;
    let id = server.session(json!({})).await;
    let text = "0123456789".repeat(1_000_000);
    let (status, body) =
        server.post(&format!("/v1/sessions/{id}/messages"), json!({"text": text})).await;
    assert_eq!(status, 202, "{body}");
    let turn = body["turn_id"].as_str().unwrap().to_owned();
    let end = server.turn_end(&id).await;
    assert_eq!(end["turn_id"], turn.as_str());
    assert_eq!(end["reason"], "completed", "{end}");
    let (status, transcript) = server.get(&format!("/v1/sessions/{id}/messages")).await;
    assert_eq!(status, 200);
    let first = &transcript["messages"][0];
    assert_eq!(first["role"], "user");
    assert_eq!(first["content"][0]["text"].as_str().unwrap().len(), 10_000_000);
    matches_doc::<hands_server::schemas::TranscriptDoc>(&transcript);
}

#[tokio::test]
async fn tools_are_called_directly_and_answer_call_tool_results() {
    let server = TestServer::start(None).await;
    let id = server.session(json!({})).await;
    let path = format!("/v1/sessions/{id}/tools/read_file");
    let (status, result) =
        server.post(&path, json!({"args": {"path": "hello.txt"}, "turn_id": "mine-1"})).await;
    assert_eq!(status, 200, "{result}");
    assert_eq!(result["isError"], false);
    assert!(result["content"][0]["text"].as_str().unwrap().contains("hello world"), "{result}");
    matches_doc::<hands_server::docs::CallToolResult>(&result);

    // A tool's own failure is a result that says so, not an HTTP error.
    let (status, result) = server.post(&path, json!({"args": {"path": "../outside"}})).await;
    assert_eq!(status, 200, "{result}");
    assert_eq!(result["isError"], true, "{result}");
    let (status, result) = server.post(&path, json!({"args": {"nope": 1}})).await;
    assert_eq!(status, 200, "{result}");
    assert_eq!(result["isError"], true, "{result}");
    let (status, result) =
        server.post(&format!("/v1/sessions/{id}/tools/no_such_tool"), json!({})).await;
    assert!(status == 200 && result["isError"] == true || status == 404, "{status} {result}");

    // The calls are events of the session, with the given turn id.
    let events = server
        .events_until(&id, 0, |m| m.event == "tool_call_finished" && m.data["turn_id"] == "mine-1")
        .await;
    let started = events.iter().find(|m| m.event == "tool_call_started").unwrap();
    assert_eq!(started.data["name"], "read_file");
    assert_eq!(started.data["args"], json!({"path": "hello.txt"}));
}

#[tokio::test]
async fn background_processes_are_listed_and_stopped() {
    let server = TestServer::start(None).await;
    let id = server.session(json!({})).await;
    let (status, list) = server.get(&format!("/v1/sessions/{id}/processes")).await;
    assert_eq!((status, list.clone()), (200, json!({"processes": []})));

    let (status, spawned) = server
        .post(
            &format!("/v1/sessions/{id}/tools/spawn_process"),
            json!({"args": {"command": "sleep 120", "type": "long-run", "name": "sleeper"}}),
        )
        .await;
    assert_eq!(status, 200, "{spawned}");
    assert_eq!(spawned["isError"], false, "{spawned}");

    let (status, list) = server.get(&format!("/v1/sessions/{id}/processes")).await;
    assert_eq!(status, 200, "{list}");
    let rows = list["processes"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{list}");
    assert_eq!(rows[0]["status"], "running", "{list}");
    matches_doc::<hands_server::docs::ProcessList>(&list);
    valid_per_openapi(&server, "ProcessList", &list).await;
    let pid = rows[0]["pid"].as_u64().unwrap();
    let process = rows[0]["id"].as_str().unwrap().to_owned();

    let (status, stopped) =
        server.post_empty(&format!("/v1/sessions/{id}/processes/{process}/stop")).await;
    assert_eq!(status, 200, "{stopped}");
    matches_doc::<hands_server::docs::ProcessStopped>(&stopped);
    let (_, list) = server.get(&format!("/v1/sessions/{id}/processes")).await;
    assert_ne!(list["processes"][0]["status"], "running", "{list}");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while std::path::Path::new(&format!("/proc/{pid}")).exists() {
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|s| s.rsplit(')').next().is_some_and(|r| r.trim_start().starts_with('Z')));
        if zombie || std::time::Instant::now() > deadline {
            assert!(zombie, "process {pid} is still alive after stop");
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let (status, body) =
        server.post_empty(&format!("/v1/sessions/{id}/processes/p-unknown/stop")).await;
    assert_error(status, &body, 404, "not_found");
}

#[tokio::test]
async fn an_unknown_approval_is_409() {
    let server = TestServer::start(None).await;
    let id = server.session(json!({})).await;
    let (status, body) =
        server.post(&format!("/v1/sessions/{id}/approvals/a-1"), json!({"approve": true})).await;
    assert_error(status, &body, 409, "conflict");
}
