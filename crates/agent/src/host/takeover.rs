//! Ending the turns a node left running when it died: after its lease expired, the node that
//! takes the session over answers every tool call in flight (its record and a
//! `tool_call_finished` event, as an error saying what happened), adds the results the
//! transcript lacks, marks the turn `aborted` and emits `error` and `turn_ended` — all under the
//! new lease's fencing token, so the session is consistent and takes new messages. After a
//! takeover the event log is checked whole too: a turn that died between its record and its
//! `turn_started`, or between its end and its `turn_ended`, gets the event it lacks, so every
//! turn of the log starts and ends exactly once.

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

/// End the running turns of `session` in `store` (the new holder's fenced view); `from` names
/// the node that ran them; `took_over`: the lease was another process's (then turns announced
/// by half are completed too). Returns how many turns were ended.
pub(super) async fn end_orphaned_turns(
    store: &Arc<dyn Store>,
    session: &str,
    from: &str,
    took_over: bool,
) -> StoreResult<usize> {
    let turns = store.turns(session).await?;
    let running: Vec<String> =
        turns.iter().filter(|t| t.status == "running").map(|t| t.id.clone()).collect();
    if running.is_empty() && !took_over {
        return Ok(0);
    }
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
    let (mut announced, mut ended) = (Vec::new(), Vec::new());
    for event in read_events(store.as_ref(), session, 0).await? {
        match event.kind {
            EventKind::TurnStarted { turn_id, .. } => announced.push(turn_id),
            EventKind::TurnEnded { turn_id, .. } => ended.push(turn_id),
            EventKind::ToolCallStarted { turn_id, call_id, name, .. }
                if turn_id.as_ref().is_some_and(|t| running.contains(t)) =>
            {
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
