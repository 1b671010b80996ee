//! The host's events hold no secret: what the model says and what a tool call carries are
//! replaced by `[secret:NAME]` both in the stored event log (replayed to a late subscriber) and in
//! the live stream (what SSE sends) — also a value the scripted model streams split across two
//! text deltas.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use crate::loop_support;

use std::sync::Arc;

use hands_core::Mode;
use hands_core::redact::{self, Literals};
use loop_support::*;
use serde_json::json;

const CANARY: &str = "canary-a1c8-event-value";

#[tokio::test]
async fn stored_and_live_events_are_redacted() {
    redact::install(Arc::new(Literals(vec![("EVENT_TOKEN".into(), CANARY.into())])));
    let fx = Fixture::new(Script::new(vec![
        call("write_file", json!({"path": "k.txt", "content": format!("{CANARY}\n")})),
        say(&format!("Stored {CANARY} in k.txt.")),
    ]))
    .await;
    let id = fx.session(Mode::Build).await;
    let mut live = fx.host.subscribe(&id, 0).await.unwrap();
    assert_eq!(fx.turn(&id, &format!("save {CANARY}")).await, "completed");
    let mut streamed = Vec::new();
    let mut deltas = String::new();
    while let Ok(Some(event)) =
        tokio::time::timeout(std::time::Duration::from_millis(500), live.next()).await
    {
        let ended = event.kind.name() == "turn_ended";
        if let hands_agent::event::EventKind::TextDelta { text, .. } = &event.kind {
            deltas += text;
        }
        streamed.push(serde_json::to_string(&event).unwrap());
        if ended {
            break;
        }
    }
    // The script streams its text in two halves, cutting the value in the middle.
    assert_eq!(deltas, "Stored [secret:EVENT_TOKEN] in k.txt.");
    let stored: Vec<String> =
        fx.events(&id).await.iter().map(|e| serde_json::to_string(e).unwrap()).collect();
    for (what, events) in [("streamed", &streamed), ("stored", &stored)] {
        let all = events.join("\n");
        assert!(!all.contains(CANARY), "{what}: {all}");
        assert!(all.contains("Stored [secret:EVENT_TOKEN] in k.txt."), "{what}: {all}");
        assert!(all.contains("turn_ended"), "{what}: {all}");
    }
}
