//! The checkpoints of the session API over a real host and real tools, with a scripted model:
//! the list and its change counts, a checkpoint's diff, `checkpoint_created` and
//! `conversation_restored` events, restores of the code, the conversation and both (and their
//! undo), 409 while a turn runs, 404 and 400 for unknown or malformed numbers, and the three
//! routes in the OpenAPI document.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::{Reply, Scripted, SseStream, TestServer};
use serde_json::{Value, json};

/// Post `text` and wait for its turn to end; the turn id.
async fn turn(server: &TestServer, id: &str, text: &str) -> String {
    let (status, body) =
        server.post(&format!("/v1/sessions/{id}/messages"), json!({"text": text})).await;
    assert_eq!(status, 202, "{body}");
    let turn = body["turn_id"].as_str().unwrap().to_owned();
    let ended = server
        .events_until(id, 0, |m| m.event == "turn_ended" && m.data["turn_id"] == turn.as_str())
        .await;
    assert_eq!(ended.last().unwrap().data["reason"], "completed", "{ended:?}");
    turn
}

fn read(server: &TestServer, path: &str) -> Option<String> {
    std::fs::read_to_string(server.root.join(path)).ok()
}

/// The user messages of the session's transcript, in order.
async fn user_texts(server: &TestServer, id: &str) -> Vec<String> {
    let (status, body) = server.get(&format!("/v1/sessions/{id}/messages")).await;
    assert_eq!(status, 200);
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"][0]["text"].as_str().map(str::to_owned))
        .collect()
}

/// The session's transcript as the API gives it.
async fn transcript(server: &TestServer, id: &str) -> Value {
    server.get(&format!("/v1/sessions/{id}/messages")).await.1
}

/// Two turns: the first writes `a.txt`, the second edits it, makes `new/dir/x` with bash and
/// deletes `hello.txt`.
async fn two_turns() -> (TestServer, std::sync::Arc<Scripted>, String, [String; 2]) {
    let model = Scripted::new([
        Reply::tool("write_file", json!({"path": "a.txt", "content": "one\n"})),
        Reply::text("wrote a.txt"),
        Reply::tool("read_file", json!({"path": "a.txt"})),
        Reply::tool(
            "edit_file",
            json!({"path": "a.txt", "old_string": "one", "new_string": "two"}),
        ),
        Reply::tool(
            "bash",
            json!({"command": "mkdir -p new/dir && echo made > new/dir/x && rm hello.txt"}),
        ),
        Reply::text("edited"),
    ]);
    let server = TestServer::start(Some(model.clone())).await;
    let id = server.session(json!({})).await;
    let first = turn(&server, &id, "write a").await;
    let second = turn(&server, &id, "edit a").await;
    (server, model, id, [first, second])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sessions_checkpoints_are_listed_with_their_changes_and_diffs() {
    let (server, _model, id, turns) = two_turns().await;
    let (status, body) = server.get(&format!("/v1/sessions/{id}/checkpoints")).await;
    assert_eq!(status, 200, "{body}");
    let list = body["checkpoints"].as_array().unwrap();
    let kinds: Vec<&str> = list.iter().map(|c| c["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["turn_start", "turn_end", "turn_start", "turn_end"], "{body}");
    let ns: Vec<u64> = list.iter().map(|c| c["n"].as_u64().unwrap()).collect();
    assert_eq!(ns, [1, 2, 3, 4]);
    for (c, turn) in list.iter().zip([&turns[0], &turns[0], &turns[1], &turns[1]]) {
        assert_eq!(c["turn"], turn.as_str(), "{c}");
        let keys: Vec<&String> = c.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            ["n", "turn", "kind", "created_at", "files_changed", "additions", "deletions"]
        );
        let at = c["created_at"].as_str().unwrap();
        assert!(at.len() == 24 && at.ends_with('Z') && &at[10..11] == "T", "RFC 3339: {at}");
    }
    // 1 is the project's first (nothing before it); 2 added a.txt; 3 saw nothing new; 4 is
    // the second turn: a.txt modified, new/dir/x added, hello.txt deleted.
    let counts: Vec<(u64, u64, u64)> = list
        .iter()
        .map(|c| {
            let n = |k: &str| c[k].as_u64().unwrap();
            (n("files_changed"), n("additions"), n("deletions"))
        })
        .collect();
    assert_eq!(counts, [(0, 0, 0), (1, 1, 0), (0, 0, 0), (3, 2, 2)]);

    let (status, diff) = server.get(&format!("/v1/sessions/{id}/checkpoints/4/diff")).await;
    assert_eq!(status, 200, "{diff}");
    assert_eq!(diff["n"], 4);
    let files = diff["files"].as_array().unwrap();
    let paths: Vec<&str> = files.iter().map(|f| f["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["a.txt", "hello.txt", "new/dir/x"]);
    assert_eq!(
        files[0],
        json!({"path": "a.txt", "change": "modified", "additions": 1, "deletions": 1,
            "binary": false, "diff": "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+two\n"})
    );
    assert_eq!(files[1]["change"], "deleted");
    assert_eq!(files[2]["change"], "added");
    let (_, first) = server.get(&format!("/v1/sessions/{id}/checkpoints/1/diff")).await;
    assert_eq!(first, json!({"n": 1, "files": []}), "the first has nothing before it");

    let (status, body) = server.get(&format!("/v1/sessions/{id}/checkpoints/99/diff")).await;
    assert_eq!(status, 404, "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("checkpoint 99"), "{body}");
    let (status, body) = server.get(&format!("/v1/sessions/{id}/checkpoints/x/diff")).await;
    assert_eq!(status, 400, "{body}");
    let (status, _) = server.get("/v1/sessions/nope/checkpoints").await;
    assert_eq!(status, 404);

    // Another session of the project sees only its own, and not this one's by number.
    let other = server.session(json!({})).await;
    let (_, body) = server.get(&format!("/v1/sessions/{other}/checkpoints")).await;
    assert_eq!(body, json!({"checkpoints": []}));
    let (status, _) = server.get(&format!("/v1/sessions/{other}/checkpoints/4/diff")).await;
    assert_eq!(status, 404);

    // Each checkpoint was announced with its counts.
    let events = server
        .events_until(&id, 0, |m| m.event == "turn_ended" && m.data["turn_id"] == turns[1].as_str())
        .await;
    let mut created: Vec<Value> =
        events.iter().filter(|m| m.event == "checkpoint_created").map(|m| m.data.clone()).collect();
    assert_eq!(created.len(), 4);
    for key in ["id", "session_id", "at_ms"] {
        created[3].as_object_mut().unwrap().remove(key);
    }
    assert_eq!(
        created[3],
        json!({"type": "checkpoint_created", "n": 4, "turn": turns[1], "kind": "turn_end",
            "files_changed": 3, "additions": 2, "deletions": 2})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restoring_code_conversation_or_both_and_undoing_it() {
    let (server, model, id, _turns) = two_turns().await;
    let full = transcript(&server, &id).await;
    let mut stream = SseStream::open(&server, &id, None).await;

    // Both, to before the second turn (the body left out: both is the default).
    let (status, body) =
        server.post_empty(&format!("/v1/sessions/{id}/checkpoints/3/restore")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, json!({"restored": 3, "scope": "both", "undo": 5, "files_changed": 3}));
    assert_eq!(read(&server, "a.txt").as_deref(), Some("one\n"));
    assert_eq!(read(&server, "hello.txt").as_deref(), Some("hello world\n"));
    assert!(!server.root.join("new").exists(), "the folders bash made are gone too");
    assert_eq!(user_texts(&server, &id).await, ["write a"], "the second turn is gone");
    loop {
        let m = stream.next_within(Duration::from_secs(30)).await.expect("events");
        if m.event == "conversation_restored" {
            assert_eq!(m.data["checkpoint"], 3);
            assert_eq!(m.data["messages"], 4, "{}", m.data);
            break;
        }
    }
    // The next turn's model request starts from there.
    model.push(Reply::text("fresh start"));
    turn(&server, &id, "again").await;
    let sent: Vec<String> =
        model.last_messages().iter().map(|m| serde_json::to_string(m).unwrap()).collect();
    assert!(sent.iter().any(|m| m.contains("write a")) && sent.iter().any(|m| m.contains("again")));
    assert!(!sent.iter().any(|m| m.contains("edit a")), "the rewound turn is not sent: {sent:?}");

    // Undo (restore 5, taken just before): the files and the conversation as they were — the
    // turn posted since the rewind goes the same way.
    let (status, body) = server
        .post(&format!("/v1/sessions/{id}/checkpoints/5/restore"), json!({"scope": "both"}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(read(&server, "a.txt").as_deref(), Some("two\n"));
    assert_eq!(read(&server, "new/dir/x").as_deref(), Some("made\n"));
    assert!(read(&server, "hello.txt").is_none());
    assert_eq!(transcript(&server, &id).await, full, "the transcript is back, message for message");
    let undo = body["undo"].as_u64().unwrap();

    // Code only: the files of checkpoint 2, the conversation untouched.
    let (status, body) = server
        .post(&format!("/v1/sessions/{id}/checkpoints/2/restore"), json!({"scope": "code"}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["scope"], "code");
    assert_eq!(read(&server, "a.txt").as_deref(), Some("one\n"));
    assert_eq!(transcript(&server, &id).await, full);
    // Conversation only: the messages of checkpoint 1 (before the first turn), the files stay.
    let (status, body) = server
        .post(&format!("/v1/sessions/{id}/checkpoints/1/restore"), json!({"scope": "conversation"}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["files_changed"], 0);
    assert_eq!(read(&server, "a.txt").as_deref(), Some("one\n"));
    assert!(user_texts(&server, &id).await.is_empty());
    // And the undo of the undo brings the rewound state back again.
    let (status, _) = server
        .post(&format!("/v1/sessions/{id}/checkpoints/{undo}/restore"), json!({"scope": "both"}))
        .await;
    assert_eq!(status, 200);
    assert_eq!(user_texts(&server, &id).await, ["write a", "again"]);
    assert_eq!(read(&server, "a.txt").as_deref(), Some("one\n"));

    // Bad bodies.
    let path = format!("/v1/sessions/{id}/checkpoints/2/restore");
    let (status, body) = server.post(&path, json!({"scope": "everything"})).await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = server.post(&path, json!({"scop": "code"})).await;
    assert_eq!(status, 400, "{body}");
    let (status, _) = server.post_raw(&path, "text/plain", b"code".to_vec()).await;
    assert_eq!(status, 415);
    let (status, _) =
        server.post(&format!("/v1/sessions/{id}/checkpoints/77/restore"), json!({})).await;
    assert_eq!(status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_is_refused_while_a_turn_runs() {
    let model = Scripted::new([
        Reply::tool("write_file", json!({"path": "a.txt", "content": "one\n"})),
        Reply::text("done"),
        Reply::tool("write_file", json!({"path": "a.txt", "content": "two\n"})),
        Reply::Hang,
    ]);
    let server = TestServer::start(Some(model.clone())).await;
    let id = server.session(json!({})).await;
    turn(&server, &id, "one").await;
    let mut stream = SseStream::open(&server, &id, None).await;
    let (status, _) =
        server.post(&format!("/v1/sessions/{id}/messages"), json!({"text": "two"})).await;
    assert_eq!(status, 202);
    // The hanging turn has taken its first checkpoint (3), then written a.txt.
    let mut seen_checkpoint = false;
    loop {
        let m = stream.next_within(Duration::from_secs(60)).await.expect("events");
        seen_checkpoint |= m.event == "checkpoint_created" && m.data["n"] == 3;
        if seen_checkpoint && m.event == "tool_call_finished" {
            break;
        }
    }
    for scope in ["both", "code", "conversation"] {
        let (status, body) = server
            .post(&format!("/v1/sessions/{id}/checkpoints/1/restore"), json!({"scope": scope}))
            .await;
        assert_eq!(status, 409, "{scope}: {body}");
        assert!(body["error"]["message"].as_str().unwrap().contains("is running"), "{body}");
    }
    assert_eq!(read(&server, "a.txt").as_deref(), Some("two\n"));
    let (status, _) = server.post_empty(&format!("/v1/sessions/{id}/abort")).await;
    assert_eq!(status, 204);
    let (status, body) = server
        .post(&format!("/v1/sessions/{id}/checkpoints/1/restore"), json!({"scope": "code"}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(read(&server, "a.txt").is_none(), "checkpoint 1 is from before a.txt");
}

#[tokio::test]
async fn the_checkpoint_routes_and_events_are_in_the_openapi_document() {
    let server = TestServer::start(None).await;
    let (status, doc) = server.get("/v1/openapi.json").await;
    assert_eq!(status, 200);
    let paths = &doc["paths"];
    assert_eq!(paths["/v1/sessions/{id}/checkpoints"]["get"]["operationId"], "listCheckpoints");
    assert_eq!(
        paths["/v1/sessions/{id}/checkpoints/{n}/diff"]["get"]["operationId"],
        "checkpointDiff"
    );
    let restore = &paths["/v1/sessions/{id}/checkpoints/{n}/restore"]["post"];
    assert_eq!(restore["operationId"], "restoreCheckpoint");
    assert_eq!(restore["requestBody"]["required"], false, "the body may be left out");
    assert!(restore["responses"]["409"].is_object(), "{restore}");
    let text = doc.to_string();
    for name in ["checkpoint_created", "conversation_restored", "turn_start", "RestoreScope"] {
        assert!(text.contains(name), "{name} is not in the document");
    }
}
