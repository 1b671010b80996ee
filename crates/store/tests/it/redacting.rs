#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The store `open_store` returns keeps no secret: a title, a user message, a conversation
//! message, a tool call's arguments and result, todos and an event holding a stored value are
//! written with `[secret:NAME]` instead, and the SQLite file (with its WAL) never holds the value.

use std::sync::Arc;

use hands_core::redact::{self, Literals};
use hands_store::{
    SessionRecord, StoreBackend, StoreConfig, ToolCallRecord, TurnRecord, open_store,
};
use serde_json::json;

const CANARY: &str = "canary-0d3f-store-value";

#[tokio::test]
async fn nothing_written_through_open_store_holds_the_secret() {
    redact::install(Arc::new(Literals(vec![("STORE_TOKEN".into(), CANARY.into())])));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let store = open_store(&StoreConfig {
        backend: StoreBackend::Sqlite,
        path: path.clone(),
        ..StoreConfig::default()
    })
    .unwrap();
    let with = |s: &str| format!("{s} {CANARY}");
    store
        .create_session(SessionRecord {
            id: "s1".into(),
            project_id: "p".into(),
            root: "/tmp/p".into(),
            mode: "build".into(),
            title: Some(with("title")),
            created_at_ms: 1,
            updated_at_ms: 1,
        })
        .await
        .unwrap();
    store.update_session("s1", None, Some(&with("retitled"))).await.unwrap();
    store
        .start_turn(TurnRecord {
            id: "t1".into(),
            session_id: "s1".into(),
            status: "running".into(),
            user_message: with("my key is"),
            started_at_ms: 2,
            ended_at_ms: None,
        })
        .await
        .unwrap();
    store
        .append_message(
            "s1",
            Some("t1"),
            json!({"role": "user", "content": [{"type": "text", "text": with("use")}]}),
        )
        .await
        .unwrap();
    store
        .start_tool_call(ToolCallRecord {
            id: "c1".into(),
            session_id: "s1".into(),
            turn_id: Some("t1".into()),
            name: "bash".into(),
            args: json!({"command": with("echo")}),
            result: None,
            is_error: None,
            started_at_ms: 3,
            duration_ms: None,
        })
        .await
        .unwrap();
    store
        .finish_tool_call(
            "c1",
            json!({"content": [{"type": "text", "text": with("out")}]}),
            false,
            5,
        )
        .await
        .unwrap();
    store.set_todos("s1", json!([{"content": with("rotate")}])).await.unwrap();
    store.append_event("s1", 4, json!({"type": "text_delta", "text": with("said")})).await.unwrap();
    let session = store.get_session("s1").await.unwrap();
    assert_eq!(session.title.as_deref(), Some("retitled [secret:STORE_TOKEN]"));
    let calls = store.tool_calls("s1").await.unwrap();
    assert_eq!(calls[0].args, json!({"command": "echo [secret:STORE_TOKEN]"}));
    let turns = store.turns("s1").await.unwrap();
    assert_eq!(turns[0].user_message, "my key is [secret:STORE_TOKEN]");
    drop(store);
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir.path()).unwrap().flatten() {
        let bytes = std::fs::read(entry.path()).unwrap();
        if bytes.windows(CANARY.len()).any(|w| w == CANARY.as_bytes()) {
            found.push(entry.file_name());
        }
    }
    assert!(found.is_empty(), "the value is in {found:?}");
    let bytes: Vec<u8> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .flat_map(|e| std::fs::read(e.path()).unwrap())
        .collect();
    let marker = b"[secret:STORE_TOKEN]";
    assert!(bytes.windows(marker.len()).any(|w| w == marker), "nothing was written at all");
}
