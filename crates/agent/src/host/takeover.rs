//! Ending the turns a node left running when it died: after its lease expired, the node that
//! takes the session over answers every tool call in flight (its record and a
//! `tool_call_finished` event, as an error saying what happened), adds the results the
//! transcript lacks, marks the turn `aborted` and emits `error` and `turn_ended` — all under the
//! new lease's fencing token, so the session is consistent and takes new messages. After a
//! takeover the event log is checked whole too: a turn that died between its record and its
//! `turn_started`, or between its end and its `turn_ended`, gets the event it lacks, so every
//! turn of the log starts and ends exactly once. That check runs on every acquisition of a lease,
//! a fresh one included: a node that died between a turn's end and its `turn_ended` may leave a
//! lease that expires and is taken as new, and the log must not depend on which it was. A call
//! the model asked for that never started (its node died first) is in the transcript only: it
//! gets its `tool_call_started` and an error `tool_call_finished`, so every call of the
//! transcript has its events.

use std::collections::BTreeMap;
use std::sync::Arc;

use hands_core::ToolOutput;
use hands_store::{Store, StoreResult};
use serde_json::Value;

use crate::event::EventKind;
use crate::model::Message;
use crate::turn;

use super::events::read_events;
use super::ids::now_ms;

/// End the running turns of `session` in `store` (the new holder's fenced view) and complete
/// the turns the log announced by half; `from` names the node that ran them. Returns how many
/// turns were ended.
pub(super) async fn end_orphaned_turns(
    store: &Arc<dyn Store>,
    session: &str,
    from: &str,
) -> StoreResult<usize> {
    let turns = store.turns(session).await?;
    let running: Vec<String> =
        turns.iter().filter(|t| t.status == "running").map(|t| t.id.clone()).collect();
    let why = format!(
        "the hands node running this turn ({from}) stopped; the turn was aborted. Check the \
         effects of the last call before calling it again."
    );
    let emit = |kind: EventKind| {
        let store = Arc::clone(store);
        async move {
            let data = serde_json::to_value(&kind).unwrap_or(Value::Null);
            store.append_event(session, now_ms(), data).await.map(drop)
        }
    };
    // Calls started and not finished, by the model's call id; the turns the log starts and ends.
    let mut open: BTreeMap<String, (Option<String>, String)> = BTreeMap::new();
    let mut started: Vec<String> = Vec::new();
    let (mut announced, mut ended) = (Vec::new(), Vec::new());
    for event in read_events(store.as_ref(), session, 0).await? {
        match event.kind {
            EventKind::TurnStarted { turn_id, .. } => announced.push(turn_id),
            EventKind::TurnEnded { turn_id, .. } => ended.push(turn_id),
            EventKind::ToolCallStarted { turn_id, call_id, name, .. }
                if turn_id.as_ref().is_some_and(|t| running.contains(t)) =>
            {
                started.push(call_id.clone());
                open.insert(call_id, (turn_id, name));
            }
            EventKind::ToolCallFinished { call_id, .. } => {
                open.remove(&call_id);
            }
            _ => {}
        }
    }
    for turn in &turns {
        if turn.status != "running" && announced.contains(&turn.id) && !ended.contains(&turn.id) {
            // Ended in the store; its node died before saying so.
            let reason = turn.status.clone();
            emit(EventKind::TurnEnded { turn_id: turn.id.clone(), reason, text: None }).await?;
        }
        if turn.status == "running" && !announced.contains(&turn.id) {
            let message = turn.user_message.clone();
            emit(EventKind::TurnStarted { turn_id: turn.id.clone(), message }).await?;
        }
    }
    if running.is_empty() {
        return Ok(0);
    }
    let output = ToolOutput::error(why.clone());
    let result = serde_json::to_value(&output).unwrap_or(Value::Null);
    for call in store.tool_calls(session).await? {
        let of_turn = call.turn_id.as_ref().is_some_and(|t| running.contains(t));
        if of_turn && call.result.is_none() {
            store.finish_tool_call(&call.id, result.clone(), true, 0).await?;
        }
    }
    for (call_id, (turn_id, name)) in open {
        emit(EventKind::ToolCallFinished {
            turn_id,
            call_id,
            name,
            duration_ms: 0,
            is_error: true,
            summary: turn::summary(&output),
            failure: None,
            exit_code: None,
            output_tail: None,
        })
        .await?;
    }
    let messages: Vec<Message> = store
        .messages(session)
        .await?
        .into_iter()
        .filter_map(|r| serde_json::from_value(r.message).ok())
        .collect();
    if let Some(fix) = turn::repair(&messages) {
        // The calls the model asked for that never started: their events, so that the stream
        // accounts for every call of the transcript.
        let last_turn = running.last().cloned();
        let asked = messages.last().map(turn::tool_uses).unwrap_or_default();
        for call in asked.into_iter().filter(|u| !started.contains(&u.id)) {
            let (call_id, name) = (call.id, call.name);
            let turn_id = last_turn.clone();
            let args = call.input;
            emit(EventKind::ToolCallStarted {
                turn_id: turn_id.clone(),
                call_id: call_id.clone(),
                name: name.clone(),
                args,
            })
            .await?;
            emit(EventKind::ToolCallFinished {
                turn_id,
                call_id,
                name,
                duration_ms: 0,
                is_error: true,
                summary: turn::summary(&output),
                failure: None,
                exit_code: None,
                output_tail: None,
            })
            .await?;
        }
        let value = serde_json::to_value(&fix).unwrap_or(Value::Null);
        store.append_message(session, None, value).await?;
    }
    for turn_id in &running {
        store.end_turn(turn_id, "aborted", now_ms()).await?;
        emit(EventKind::Error { turn_id: Some(turn_id.clone()), message: why.clone() }).await?;
        emit(EventKind::TurnEnded {
            turn_id: turn_id.clone(),
            reason: "aborted".into(),
            text: None,
        })
        .await?;
    }
    tracing::info!(session, from, turns = running.len(), "ended the turns of a stopped node");
    Ok(running.len())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use hands_store::{MemoryStore, SessionRecord, TurnRecord};
    use serde_json::json;

    use super::*;
    use crate::model::{Block, Role};

    async fn store_with(turns: &[(&str, &str)]) -> Arc<dyn Store> {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let record = SessionRecord {
            id: "s".into(),
            project_id: "p".into(),
            root: "/tmp/p".into(),
            mode: "build".into(),
            title: None,
            created_at_ms: 1,
            updated_at_ms: 1,
        };
        store.create_session(record).await.unwrap();
        for (id, status) in turns {
            let turn = TurnRecord {
                id: (*id).into(),
                session_id: "s".into(),
                status: "running".into(),
                user_message: "go".into(),
                started_at_ms: 2,
                ended_at_ms: None,
            };
            store.start_turn(turn).await.unwrap();
            if *status != "running" {
                store.end_turn(id, status, 3).await.unwrap();
            }
        }
        store
    }

    async fn emit(store: &Arc<dyn Store>, kind: EventKind) {
        store.append_event("s", 2, serde_json::to_value(&kind).unwrap()).await.unwrap();
    }

    async fn kinds(store: &Arc<dyn Store>) -> Vec<EventKind> {
        read_events(store.as_ref(), "s", 0).await.unwrap().into_iter().map(|e| e.kind).collect()
    }

    /// A node died between ending its turn in the store and appending `turn_ended`; the next
    /// node's lease is a fresh one (the old one expired and went): the log is completed anyway.
    #[tokio::test]
    async fn a_turn_ended_without_its_event_gets_it_on_a_fresh_lease() {
        let store = store_with(&[("t1", "done")]).await;
        emit(&store, EventKind::TurnStarted { turn_id: "t1".into(), message: "go".into() }).await;
        assert_eq!(end_orphaned_turns(&store, "s", "n1").await.unwrap(), 0);
        let ended: Vec<_> = kinds(&store)
            .await
            .into_iter()
            .filter_map(|k| match k {
                EventKind::TurnEnded { turn_id, reason, .. } => Some((turn_id, reason)),
                _ => None,
            })
            .collect();
        assert_eq!(ended, [("t1".to_owned(), "done".to_owned())]);
        // Once: a second acquisition adds nothing.
        let before = kinds(&store).await.len();
        end_orphaned_turns(&store, "s", "n2").await.unwrap();
        assert_eq!(kinds(&store).await.len(), before);
    }

    /// The model asked for two calls; its node died after the first started and before the
    /// second did: both get a finished event (the second its started one too), and the turn ends.
    #[tokio::test]
    async fn every_call_of_the_transcript_gets_its_events() {
        let store = store_with(&[("t1", "running")]).await;
        emit(&store, EventKind::TurnStarted { turn_id: "t1".into(), message: "go".into() }).await;
        let uses = Message {
            role: Role::Assistant,
            content: vec![
                Block::ToolUse {
                    id: "c1".into(),
                    name: "bash".into(),
                    input: json!({"command": "ls"}),
                },
                Block::ToolUse {
                    id: "c2".into(),
                    name: "read_file".into(),
                    input: json!({"path": "a"}),
                },
            ],
        };
        store
            .append_message("s", Some("t1"), serde_json::to_value(Message::user("go")).unwrap())
            .await
            .unwrap();
        store.append_message("s", Some("t1"), serde_json::to_value(&uses).unwrap()).await.unwrap();
        let started = EventKind::ToolCallStarted {
            turn_id: Some("t1".into()),
            call_id: "c1".into(),
            name: "bash".into(),
            args: json!({"command": "ls"}),
        };
        emit(&store, started).await;
        assert_eq!(end_orphaned_turns(&store, "s", "n1").await.unwrap(), 1);
        let log = kinds(&store).await;
        for call in ["c1", "c2"] {
            let starts = log
                .iter()
                .filter(
                    |k| matches!(k, EventKind::ToolCallStarted { call_id, .. } if call_id == call),
                )
                .count();
            let ends = log
                .iter()
                .filter(|k| {
                    matches!(k, EventKind::ToolCallFinished { call_id, is_error: true, .. } if call_id == call)
                })
                .count();
            assert_eq!((starts, ends), (1, 1), "{call}: {log:?}");
        }
        assert!(
            matches!(log.last(), Some(EventKind::TurnEnded { reason, .. }) if reason == "aborted")
        );
        let messages = store.messages("s").await.unwrap();
        let fix: Message =
            serde_json::from_value(messages.last().unwrap().message.clone()).unwrap();
        assert_eq!(fix.role, Role::User, "the transcript answers both calls");
    }
}
