//! The `Store` contract, one set of test functions run against every store: `MemoryStore`,
//! `SqliteStore::in_memory()` (everything on the writer thread), `SqliteStore` on a file (reads
//! on the reader pool) and `PostgresStore` on a throwaway PostgreSQL server of its own (started
//! by the test: fails under CI when PostgreSQL is not installed, skips loudly elsewhere). The
//! tests that only a file can have — reopening, two stores on one file, a corrupt file — follow
//! at the bottom.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use hands_store::{
    MemoryStore, PostgresOptions, PostgresStore, SessionRecord, SqliteStore, Store, StoreError,
    ToolCallRecord, TurnRecord,
};
use serde_json::{Value, json};

use crate::pg;

/// A store and what must outlive it.
struct Fixture {
    store: Arc<dyn Store>,
    _dir: Option<tempfile::TempDir>,
    _server: Option<pg::Postgres>,
}

fn memory() -> Option<Fixture> {
    Some(Fixture { store: Arc::new(MemoryStore::new()), _dir: None, _server: None })
}

fn sqlite_memory() -> Option<Fixture> {
    Some(Fixture { store: Arc::new(SqliteStore::in_memory().unwrap()), _dir: None, _server: None })
}

fn sqlite_file() -> Option<Fixture> {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("sessions.db")).unwrap();
    Some(Fixture { store: Arc::new(store), _dir: Some(dir), _server: None })
}

/// `None` (skipped, loudly) where PostgreSQL is not installed and `CI` is not set.
fn postgres() -> Option<Fixture> {
    let server = pg::postgres_or_skip()?;
    let store = PostgresStore::new(&PostgresOptions {
        url: server.url(pg::PASSWORD),
        pool_size: 8,
        ca_file: None,
        connect_timeout: Duration::from_secs(10),
        migrate: true,
        node: "contract".into(),
    })
    .unwrap();
    Some(Fixture { store: Arc::new(store), _dir: None, _server: Some(server) })
}

/// One module per store, one test per contract function.
macro_rules! contract {
    ($($test:ident),* $(,)?) => {
        contract!(@store memory: $($test),*);
        contract!(@store sqlite_memory: $($test),*);
        contract!(@store sqlite_file: $($test),*);
        contract!(@store postgres: $($test),*);
    };
    (@store $store:ident: $($test:ident),*) => {
        mod $store {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $test() {
                    let Some(fixture) = super::$store() else { return };
                    super::$test(fixture.store.clone()).await;
                }
            )*
        }
    };
}

contract!(
    sessions_are_created_read_updated_and_deleted,
    sessions_list_most_recently_updated_first,
    projects_are_recorded_from_sessions,
    a_missing_session_turn_or_call_is_not_found,
    turns_start_end_and_are_abandoned_when_left_running,
    messages_come_back_in_seq_order,
    truncated_messages_are_gone_and_their_numbers_not_given_again,
    tool_calls_start_and_finish,
    todos_default_to_empty_and_are_replaced,
    events_after_replays_from_an_id_with_a_limit,
    delete_removes_everything_of_the_session_and_nothing_else,
    concurrent_appends_to_one_session_get_every_id_once,
    concurrent_appends_to_many_sessions_count_each_from_one,
    a_ten_megabyte_message_comes_back_intact,
    odd_strings_come_back_unchanged,
);

fn session(id: &str, project: &str, updated_at_ms: i64) -> SessionRecord {
    SessionRecord {
        id: id.into(),
        project_id: project.into(),
        root: format!("/work/{project}"),
        mode: "build".into(),
        title: None,
        created_at_ms: updated_at_ms,
        updated_at_ms,
    }
}

fn turn(id: &str, session: &str, started_at_ms: i64) -> TurnRecord {
    TurnRecord {
        id: id.into(),
        session_id: session.into(),
        status: "running".into(),
        user_message: format!("message of {id}"),
        started_at_ms,
        ended_at_ms: None,
    }
}

fn call(id: &str, session: &str, started_at_ms: i64) -> ToolCallRecord {
    ToolCallRecord {
        id: id.into(),
        session_id: session.into(),
        turn_id: Some("t1".into()),
        name: "read_file".into(),
        args: json!({"path": format!("{id}.rs")}),
        result: None,
        is_error: None,
        started_at_ms,
        duration_ms: None,
    }
}

fn is_not_found<T: std::fmt::Debug>(result: Result<T, StoreError>) -> bool {
    matches!(result, Err(StoreError::NotFound(_)))
}

fn is_exists<T: std::fmt::Debug>(result: Result<T, StoreError>) -> bool {
    matches!(result, Err(StoreError::Exists(_)))
}

async fn ids(store: &dyn Store) -> Vec<String> {
    store.list_sessions().await.unwrap().into_iter().map(|s| s.id).collect()
}

/// Let the store's clock move on, so that "more recent" is not a tie.
async fn tick() {
    tokio::time::sleep(Duration::from_millis(3)).await;
}

async fn sessions_are_created_read_updated_and_deleted(store: Arc<dyn Store>) {
    let mut s = session("s1", "p", 1_000);
    s.title = Some("first".into());
    store.create_session(s.clone()).await.unwrap();
    assert_eq!(store.get_session("s1").await.unwrap(), s);

    let taken = store.create_session(session("s1", "other", 5)).await.unwrap_err();
    assert!(matches!(taken, StoreError::Exists(_)), "{taken:?}");
    assert_eq!(taken.to_string(), "session s1 already exists");
    assert_eq!(store.get_session("s1").await.unwrap(), s, "a refused create changes nothing");

    store.update_session("s1", Some("plan"), None).await.unwrap();
    let got = store.get_session("s1").await.unwrap();
    assert_eq!((got.mode.as_str(), got.title.as_deref()), ("plan", Some("first")));
    assert!(got.updated_at_ms > s.updated_at_ms, "updating moves updated_at_ms on");
    assert_eq!(got.created_at_ms, s.created_at_ms);

    store.update_session("s1", None, Some("renamed")).await.unwrap();
    let got = store.get_session("s1").await.unwrap();
    assert_eq!((got.mode.as_str(), got.title.as_deref()), ("plan", Some("renamed")));

    store.delete_session("s1").await.unwrap();
    let err = store.get_session("s1").await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound(_)), "{err:?}");
    assert_eq!(err.to_string(), "session s1 not found");
    assert!(is_not_found(store.delete_session("s1").await));
    assert!(ids(&*store).await.is_empty());
}

async fn sessions_list_most_recently_updated_first(store: Arc<dyn Store>) {
    for (id, at) in [("a", 1_000), ("b", 3_000), ("c", 2_000)] {
        store.create_session(session(id, "p", at)).await.unwrap();
    }
    assert_eq!(ids(&*store).await, ["b", "c", "a"]);

    // Any write to a session makes it the most recent.
    store.update_session("a", None, Some("t")).await.unwrap();
    assert_eq!(ids(&*store).await, ["a", "b", "c"]);
    tick().await;
    store.append_event("c", 1, json!({"type": "x"})).await.unwrap();
    assert_eq!(ids(&*store).await, ["c", "a", "b"]);
    tick().await;
    store.append_message("b", None, json!({"role": "user"})).await.unwrap();
    assert_eq!(ids(&*store).await, ["b", "c", "a"]);
    tick().await;
    store.start_turn(turn("t", "a", 5)).await.unwrap();
    assert_eq!(ids(&*store).await, ["a", "b", "c"]);
    tick().await;
    store.set_todos("c", json!([])).await.unwrap();
    assert_eq!(ids(&*store).await, ["c", "a", "b"]);

    let listed = store.list_sessions().await.unwrap();
    assert!(listed.windows(2).all(|w| w[0].updated_at_ms >= w[1].updated_at_ms), "{listed:?}");
}

async fn projects_are_recorded_from_sessions(store: Arc<dyn Store>) {
    assert!(store.list_projects().await.unwrap().is_empty());
    store.create_session(session("s1", "app", 2_000)).await.unwrap();
    store.create_session(session("s2", "lib", 3_000)).await.unwrap();
    let mut later = session("s3", "app", 4_000);
    later.root = "/moved/app".into();
    store.create_session(later).await.unwrap();

    let projects = store.list_projects().await.unwrap();
    let seen: Vec<_> = projects
        .iter()
        .map(|p| (p.id.as_str(), p.root.as_str(), p.first_seen_ms, p.last_seen_ms))
        .collect();
    assert_eq!(seen, [("app", "/moved/app", 2_000, 4_000), ("lib", "/work/lib", 3_000, 3_000)]);

    // A project outlives its sessions.
    store.delete_session("s2").await.unwrap();
    assert_eq!(store.list_projects().await.unwrap().len(), 2);
}

async fn a_missing_session_turn_or_call_is_not_found(store: Arc<dyn Store>) {
    let s = store.as_ref();
    assert!(is_not_found(s.get_session("nope").await));
    assert!(is_not_found(s.update_session("nope", Some("plan"), None).await));
    assert!(is_not_found(s.delete_session("nope").await));
    assert!(is_not_found(s.start_turn(turn("t", "nope", 1)).await));
    assert!(is_not_found(s.turns("nope").await));
    assert!(is_not_found(s.end_turn("no-turn", "completed", 2).await));
    assert!(is_not_found(s.append_message("nope", None, json!({})).await));
    assert!(is_not_found(s.messages("nope").await));
    assert!(is_not_found(s.start_tool_call(call("c", "nope", 1)).await));
    assert!(is_not_found(s.finish_tool_call("no-call", json!({}), false, 1).await));
    assert!(is_not_found(s.tool_calls("nope").await));
    assert!(is_not_found(s.set_todos("nope", json!([])).await));
    assert!(is_not_found(s.todos("nope").await));
    assert!(is_not_found(s.append_event("nope", 1, json!({})).await));
    assert!(is_not_found(s.events_after("nope", 0, 10).await));
    // Nothing was created on the way.
    assert!(ids(s).await.is_empty());
    assert!(s.list_projects().await.unwrap().is_empty());
    assert!(s.abandon_running_turns(1).await.unwrap().is_empty());
}

async fn turns_start_end_and_are_abandoned_when_left_running(store: Arc<dyn Store>) {
    store.create_session(session("s1", "p", 1)).await.unwrap();
    store.create_session(session("s2", "p", 1)).await.unwrap();
    // Recorded out of order: listed by start time, ties in recorded order.
    store.start_turn(turn("t2", "s1", 200)).await.unwrap();
    store.start_turn(turn("t1", "s1", 100)).await.unwrap();
    store.start_turn(turn("t2b", "s1", 200)).await.unwrap();
    store.start_turn(turn("u1", "s2", 150)).await.unwrap();
    assert!(is_exists(store.start_turn(turn("t1", "s1", 300)).await));
    assert!(is_exists(store.start_turn(turn("t1", "s2", 300)).await), "turn ids are global");

    store.end_turn("t1", "completed", 150).await.unwrap();
    let turns = store.turns("s1").await.unwrap();
    let listed: Vec<_> = turns.iter().map(|t| (t.id.as_str(), t.status.as_str())).collect();
    assert_eq!(listed, [("t1", "completed"), ("t2", "running"), ("t2b", "running")]);
    assert_eq!(turns[0].ended_at_ms, Some(150));
    assert_eq!(
        turns[0],
        TurnRecord { status: "completed".into(), ended_at_ms: Some(150), ..turn("t1", "s1", 100) }
    );

    let abandoned = store.abandon_running_turns(999).await.unwrap();
    let listed: Vec<_> =
        abandoned.iter().map(|t| (t.id.as_str(), t.status.as_str(), t.ended_at_ms)).collect();
    assert_eq!(
        listed,
        [("u1", "aborted", Some(999)), ("t2", "aborted", Some(999)), ("t2b", "aborted", Some(999))]
    );
    assert_eq!(store.turns("s2").await.unwrap(), abandoned[..1]);
    let s1 = store.turns("s1").await.unwrap();
    assert_eq!((s1[0].status.as_str(), s1[0].ended_at_ms), ("completed", Some(150)));
    assert!(store.abandon_running_turns(1_000).await.unwrap().is_empty(), "only once");
}

async fn messages_come_back_in_seq_order(store: Arc<dyn Store>) {
    store.create_session(session("s1", "p", 1)).await.unwrap();
    store.create_session(session("s2", "p", 1)).await.unwrap();
    assert!(store.messages("s1").await.unwrap().is_empty());
    let sent = [
        (Some("t1"), json!({"role": "user", "content": [{"type": "text", "text": "hi"}]})),
        (Some("t1"), json!({"role": "assistant", "content": [{"type": "tool_use", "id": "c"}]})),
        (None, json!({"role": "user", "content": "plain", "n": 1.5, "null": null})),
    ];
    for (i, (turn_id, message)) in sent.iter().enumerate() {
        let seq = store.append_message("s1", *turn_id, message.clone()).await.unwrap();
        assert_eq!(seq, i as u64 + 1);
    }
    assert_eq!(store.append_message("s2", None, json!("other")).await.unwrap(), 1, "per session");

    let got = store.messages("s1").await.unwrap();
    assert_eq!(got.len(), 3);
    for (i, (record, (turn_id, message))) in got.iter().zip(&sent).enumerate() {
        assert_eq!(record.seq, i as u64 + 1);
        assert_eq!(record.session_id, "s1");
        assert_eq!(record.turn_id.as_deref(), *turn_id);
        assert_eq!(&record.message, message);
    }
    // Key order inside an object is kept (the workspace's serde_json preserves it).
    let keys: Vec<_> = got[2].message.as_object().unwrap().keys().cloned().collect();
    assert_eq!(keys, ["role", "content", "n", "null"]);
}

async fn truncated_messages_are_gone_and_their_numbers_not_given_again(store: Arc<dyn Store>) {
    store.create_session(session("s1", "p", 1)).await.unwrap();
    store.create_session(session("s2", "p", 1)).await.unwrap();
    for i in 0..5 {
        store.append_message("s1", Some("t"), json!({"n": i})).await.unwrap();
    }
    store.append_message("s2", None, json!("other")).await.unwrap();
    assert_eq!(store.truncate_messages("s1", 2).await.unwrap(), 3);
    let seqs = |m: Vec<hands_store::MessageRecord>| m.iter().map(|r| r.seq).collect::<Vec<_>>();
    assert_eq!(seqs(store.messages("s1").await.unwrap()), [1, 2]);
    assert_eq!(store.messages("s1").await.unwrap()[1].message, json!({"n": 1}));
    assert_eq!(store.append_message("s1", None, json!({"n": "new"})).await.unwrap(), 6);
    assert_eq!(seqs(store.messages("s1").await.unwrap()), [1, 2, 6]);
    assert_eq!(store.truncate_messages("s1", 10).await.unwrap(), 0, "nothing after 10");
    assert_eq!(store.messages("s2").await.unwrap().len(), 1, "other sessions keep theirs");
    assert!(is_not_found(store.truncate_messages("nope", 0).await));
}

async fn tool_calls_start_and_finish(store: Arc<dyn Store>) {
    store.create_session(session("s1", "p", 1)).await.unwrap();
    store.create_session(session("s2", "p", 1)).await.unwrap();
    store.start_tool_call(call("c2", "s1", 20)).await.unwrap();
    store.start_tool_call(call("c1", "s1", 10)).await.unwrap();
    let mut direct = call("c3", "s1", 30);
    direct.turn_id = None;
    store.start_tool_call(direct.clone()).await.unwrap();
    assert!(is_exists(store.start_tool_call(call("c1", "s2", 40)).await), "call ids are global");

    let calls = store.tool_calls("s1").await.unwrap();
    assert_eq!(calls, [call("c1", "s1", 10), call("c2", "s1", 20), direct.clone()]);

    let result = json!({"content": [{"type": "text", "text": "fn main() {}"}], "isError": false});
    store.finish_tool_call("c2", result.clone(), false, 42).await.unwrap();
    store.finish_tool_call("c3", json!({"content": []}), true, u64::MAX).await.unwrap();
    let calls = store.tool_calls("s1").await.unwrap();
    assert_eq!(calls[0].result, None, "c1 has not finished");
    assert_eq!(
        calls[1],
        ToolCallRecord {
            result: Some(result),
            is_error: Some(false),
            duration_ms: Some(42),
            ..call("c2", "s1", 20)
        }
    );
    assert_eq!((calls[2].is_error, calls[2].duration_ms.is_some()), (Some(true), true));
    assert!(store.tool_calls("s2").await.unwrap().is_empty());
}

async fn todos_default_to_empty_and_are_replaced(store: Arc<dyn Store>) {
    store.create_session(session("s1", "p", 1)).await.unwrap();
    store.create_session(session("s2", "p", 1)).await.unwrap();
    assert_eq!(store.todos("s1").await.unwrap(), json!([]));
    let first = json!([{"content": "read", "status": "in_progress"}, {"content": "write", "status": "pending"}]);
    store.set_todos("s1", first.clone()).await.unwrap();
    assert_eq!(store.todos("s1").await.unwrap(), first);
    let second = json!([{"content": "write", "status": "completed"}]);
    store.set_todos("s1", second.clone()).await.unwrap();
    assert_eq!(store.todos("s1").await.unwrap(), second, "replaced, not merged");
    assert_eq!(store.todos("s2").await.unwrap(), json!([]));
}

async fn events_after_replays_from_an_id_with_a_limit(store: Arc<dyn Store>) {
    store.create_session(session("s1", "p", 1)).await.unwrap();
    store.create_session(session("s2", "p", 1)).await.unwrap();
    assert!(store.events_after("s1", 0, 100).await.unwrap().is_empty());
    for n in 1..=10u64 {
        let data = json!({"type": "text_delta", "turn_id": "t", "text": format!("#{n}")});
        assert_eq!(store.append_event("s1", 1_000 + n as i64, data).await.unwrap(), n);
    }
    store.append_event("s2", 5, json!({"type": "other"})).await.unwrap();

    let all = store.events_after("s1", 0, 100).await.unwrap();
    assert_eq!(all.iter().map(|e| e.id).collect::<Vec<_>>(), (1..=10).collect::<Vec<_>>());
    assert_eq!(all[4].session_id, "s1");
    assert_eq!(all[4].at_ms, 1_005);
    assert_eq!(all[4].data, json!({"type": "text_delta", "turn_id": "t", "text": "#5"}));

    // A client that saw up to 3 (Last-Event-ID: 3) and reads a page of 4.
    let page = store.events_after("s1", 3, 4).await.unwrap();
    assert_eq!(page.iter().map(|e| e.id).collect::<Vec<_>>(), [4, 5, 6, 7]);
    assert_eq!(page[..], all[3..7]);
    let rest = store.events_after("s1", 7, 4).await.unwrap();
    assert_eq!(rest.iter().map(|e| e.id).collect::<Vec<_>>(), [8, 9, 10]);

    assert!(store.events_after("s1", 10, 100).await.unwrap().is_empty());
    assert!(store.events_after("s1", 11, 100).await.unwrap().is_empty());
    assert!(store.events_after("s1", u64::MAX, 100).await.unwrap().is_empty());
    assert!(store.events_after("s1", 0, 0).await.unwrap().is_empty());
    assert_eq!(store.events_after("s1", 0, usize::MAX).await.unwrap(), all);
    assert_eq!(store.events_after("s2", 0, 100).await.unwrap().len(), 1);
}

/// Give a session one of everything.
async fn fill(store: &dyn Store, id: &str) {
    store.create_session(session(id, "p", 1)).await.unwrap();
    store.start_turn(turn(&format!("{id}-turn"), id, 1)).await.unwrap();
    store.append_message(id, Some(&format!("{id}-turn")), json!({"role": "user"})).await.unwrap();
    store.start_tool_call(call(&format!("{id}-call"), id, 2)).await.unwrap();
    store.finish_tool_call(&format!("{id}-call"), json!({"content": []}), false, 3).await.unwrap();
    store.set_todos(id, json!([{"content": "x", "status": "pending"}])).await.unwrap();
    store.append_event(id, 4, json!({"type": "turn_started"})).await.unwrap();
}

async fn delete_removes_everything_of_the_session_and_nothing_else(store: Arc<dyn Store>) {
    fill(&*store, "gone").await;
    fill(&*store, "kept").await;
    let kept = (
        store.get_session("kept").await.unwrap(),
        store.turns("kept").await.unwrap(),
        store.messages("kept").await.unwrap(),
        store.tool_calls("kept").await.unwrap(),
        store.todos("kept").await.unwrap(),
        store.events_after("kept", 0, 100).await.unwrap(),
    );

    store.delete_session("gone").await.unwrap();
    assert!(is_not_found(store.messages("gone").await));
    assert!(is_not_found(store.events_after("gone", 0, 100).await));
    assert!(is_not_found(store.end_turn("gone-turn", "completed", 9).await), "its turns too");
    assert!(is_not_found(store.finish_tool_call("gone-call", json!({}), false, 1).await));

    // The same ids again start from nothing: the old rows are gone, not hidden.
    store.create_session(session("gone", "p", 1)).await.unwrap();
    assert!(store.turns("gone").await.unwrap().is_empty());
    assert!(store.messages("gone").await.unwrap().is_empty());
    assert!(store.tool_calls("gone").await.unwrap().is_empty());
    assert_eq!(store.todos("gone").await.unwrap(), json!([]));
    assert!(store.events_after("gone", 0, 100).await.unwrap().is_empty());
    store.start_turn(turn("gone-turn", "gone", 1)).await.unwrap();
    store.start_tool_call(call("gone-call", "gone", 1)).await.unwrap();
    assert_eq!(store.append_message("gone", None, json!(1)).await.unwrap(), 1);
    assert_eq!(store.append_event("gone", 1, json!(1)).await.unwrap(), 1);

    let after = (
        store.get_session("kept").await.unwrap(),
        store.turns("kept").await.unwrap(),
        store.messages("kept").await.unwrap(),
        store.tool_calls("kept").await.unwrap(),
        store.todos("kept").await.unwrap(),
        store.events_after("kept", 0, 100).await.unwrap(),
    );
    assert_eq!(after, kept, "another session is untouched");
}

async fn concurrent_appends_to_one_session_get_every_id_once(store: Arc<dyn Store>) {
    store.create_session(session("s", "p", 1)).await.unwrap();
    let tasks: Vec<_> = (0..100)
        .map(|task| {
            let store = store.clone();
            tokio::spawn(async move {
                let mut got = Vec::new();
                for n in 0..5 {
                    let data = json!({"task": task, "n": n});
                    got.push(store.append_event("s", 1, data).await.unwrap());
                }
                let seq = store.append_message("s", None, json!({"task": task})).await.unwrap();
                // A failing call in the same rush takes nothing from the others.
                let missing = store.append_event("missing", 1, json!({})).await;
                assert!(matches!(missing, Err(StoreError::NotFound(_))), "{missing:?}");
                (got, seq)
            })
        })
        .collect();
    let mut event_ids = BTreeSet::new();
    let mut seqs = BTreeSet::new();
    for task in tasks {
        let (got, seq) = task.await.unwrap();
        assert!(got.windows(2).all(|w| w[0] < w[1]), "one task's ids increase: {got:?}");
        event_ids.extend(got);
        assert!(seqs.insert(seq), "seq {seq} given twice");
    }
    assert_eq!(event_ids, (1..=500).collect(), "500 appends, 500 distinct ids, no gaps");
    assert_eq!(seqs, (1..=100).collect());

    let events = store.events_after("s", 0, 1_000).await.unwrap();
    assert_eq!(events.iter().map(|e| e.id).collect::<Vec<_>>(), (1..=500).collect::<Vec<_>>());
    // Each task's own events are stored in the order it appended them.
    for task in 0..100 {
        let ns: Vec<_> =
            events.iter().filter(|e| e.data["task"] == task).map(|e| &e.data["n"]).collect();
        assert_eq!(ns, [0, 1, 2, 3, 4], "task {task}");
    }
    let messages = store.messages("s").await.unwrap();
    assert_eq!(messages.iter().map(|m| m.seq).collect::<Vec<_>>(), (1..=100).collect::<Vec<_>>());
}

async fn concurrent_appends_to_many_sessions_count_each_from_one(store: Arc<dyn Store>) {
    for i in 0..100 {
        store.create_session(session(&format!("s{i}"), "p", 1)).await.unwrap();
    }
    let tasks: Vec<_> = (0..100)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                let id = format!("s{i}");
                let mut got = Vec::new();
                for n in 0..10 {
                    got.push(store.append_event(&id, n, json!({"n": n})).await.unwrap());
                    store.append_message(&id, None, json!(n)).await.unwrap();
                }
                got
            })
        })
        .collect();
    for task in tasks {
        assert_eq!(task.await.unwrap(), (1..=10).collect::<Vec<u64>>());
    }
    for i in 0..100 {
        let id = format!("s{i}");
        let events = store.events_after(&id, 0, 100).await.unwrap();
        assert_eq!(events.iter().map(|e| e.id).collect::<Vec<_>>(), (1..=10).collect::<Vec<_>>());
        assert!(events.iter().all(|e| e.session_id == id));
        let messages = store.messages(&id).await.unwrap();
        let got: Vec<_> = messages.iter().map(|m| (m.seq, m.message.clone())).collect();
        let want: Vec<_> = (0..10).map(|n| (n + 1, json!(n))).collect();
        assert_eq!(got, want);
    }
}

async fn a_ten_megabyte_message_comes_back_intact(store: Arc<dyn Store>) {
    store.create_session(session("s", "p", 1)).await.unwrap();
    // Not one repeated byte: a varied text, so that a cut or a shifted chunk would show.
    let text: String = (0..10 * 1024 * 1024 / 8).map(|i: u32| format!("{:07x}\n", i)).collect();
    assert_eq!(text.len(), 10 * 1024 * 1024);
    let message = json!({"role": "user", "content": [{"type": "text", "text": text}]});
    store.append_message("s", None, message.clone()).await.unwrap();
    store.append_event("s", 1, json!({"type": "big", "text": text})).await.unwrap();
    let got = store.messages("s").await.unwrap();
    assert_eq!(got.len(), 1);
    assert!(got[0].message == message, "the 10 MB message changed on the way");
    let events = store.events_after("s", 0, 1).await.unwrap();
    assert!(events[0].data["text"] == Value::String(text));
}

async fn odd_strings_come_back_unchanged(store: Arc<dyn Store>) {
    let odd = [
        "plain",
        "it's \"quoted\" `back` \\ slashed",
        "line one\nline two\r\nline three\ttabbed",
        "'; DROP TABLE sessions; --",
        "ünïcödé — ∑ 中文 日本語 한국어 עברית العربية",
        "emoji 🦀👩‍💻🏳️‍🌈 and a lone combining mark \u{301}",
        "%_ wildcards ? ?1 :name @x $y",
        "",
    ];
    for (i, text) in odd.iter().enumerate() {
        let id = format!("{text}#{i}");
        let mut s = session(&id, text, 1);
        s.title = Some((*text).to_owned());
        s.root = format!("/tmp/{text}");
        store.create_session(s.clone()).await.unwrap();
        assert_eq!(store.get_session(&id).await.unwrap(), s);

        let turn_id = format!("turn {text} {i}");
        let mut t = turn(&turn_id, &id, 1);
        t.user_message = (*text).to_owned();
        store.start_turn(t.clone()).await.unwrap();
        assert_eq!(store.turns(&id).await.unwrap(), [t]);

        // JSON carries what plain TEXT columns may not: NUL and other control characters.
        let mut message = json!({"text": text, "nul": "a\u{0}b", "ctl": "\u{1}\u{1f}\u{7f}"});
        message[format!("key {text}")] = json!([text]);
        store.append_message(&id, Some(&turn_id), message.clone()).await.unwrap();
        assert_eq!(store.messages(&id).await.unwrap()[0].message, message);
        store.append_event(&id, 1, message.clone()).await.unwrap();
        assert_eq!(store.events_after(&id, 0, 1).await.unwrap()[0].data, message);
        store.set_todos(&id, json!([{"content": text}])).await.unwrap();
        assert_eq!(store.todos(&id).await.unwrap(), json!([{"content": text}]));
    }
    assert_eq!(ids(&*store).await.len(), odd.len());
}

// ---- SQLite on a file only ----

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_everything_survives_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("deep/er/sessions.db");
    let store = SqliteStore::open(&path).unwrap();
    fill(&store, "s1").await;
    store.append_event("s1", 5, json!({"type": "second"})).await.unwrap();
    store.start_turn(turn("left-running", "s1", 9)).await.unwrap();
    let before = (
        store.list_sessions().await.unwrap(),
        store.list_projects().await.unwrap(),
        store.turns("s1").await.unwrap(),
        store.messages("s1").await.unwrap(),
        store.tool_calls("s1").await.unwrap(),
        store.todos("s1").await.unwrap(),
        store.events_after("s1", 0, 100).await.unwrap(),
    );
    drop(store);
    assert!(path.is_file());

    let store = SqliteStore::open(&path).unwrap();
    let after = (
        store.list_sessions().await.unwrap(),
        store.list_projects().await.unwrap(),
        store.turns("s1").await.unwrap(),
        store.messages("s1").await.unwrap(),
        store.tool_calls("s1").await.unwrap(),
        store.todos("s1").await.unwrap(),
        store.events_after("s1", 0, 100).await.unwrap(),
    );
    assert_eq!(after, before);
    // The counters carry on where they stopped; the turn left running is found at start-up.
    assert_eq!(store.append_event("s1", 6, json!({})).await.unwrap(), 3);
    assert_eq!(store.append_message("s1", None, json!({})).await.unwrap(), 2);
    let abandoned = store.abandon_running_turns(10).await.unwrap();
    let ids: Vec<_> = abandoned.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["s1-turn", "left-running"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_file_is_in_wal_mode() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let store = SqliteStore::open(&path).unwrap();
    store.create_session(session("s", "p", 1)).await.unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    let mode: String = conn.query_row("PRAGMA journal_mode", [], |row| row.get(0)).unwrap();
    assert_eq!(mode, "wal");
    let version: i64 = conn.query_row("PRAGMA user_version", [], |row| row.get(0)).unwrap();
    assert!(version >= 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_two_stores_on_one_file_append_without_gaps() {
    // Two hands processes on one file (say `hands serve` and `hands run`): each has its own
    // writer, so only the database's locking keeps the counters right.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let first: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).unwrap());
    let second: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).unwrap());
    first.create_session(session("s", "p", 1)).await.unwrap();
    let tasks: Vec<_> = (0..50)
        .map(|i| {
            let store = if i % 2 == 0 { first.clone() } else { second.clone() };
            tokio::spawn(async move {
                let mut got = Vec::new();
                for _ in 0..4 {
                    got.push(store.append_event("s", 1, json!({"i": i})).await.unwrap());
                }
                got
            })
        })
        .collect();
    let mut all = BTreeSet::new();
    for task in tasks {
        all.extend(task.await.unwrap());
    }
    assert_eq!(all, (1..=200).collect());
    assert_eq!(second.events_after("s", 0, 1_000).await.unwrap().len(), 200);
}

fn open_error(path: &std::path::Path) -> String {
    match SqliteStore::open(path) {
        Err(err @ StoreError::Backend(_)) => err.to_string(),
        Err(other) => panic!("not a Backend error: {other:?}"),
        Ok(_) => panic!("{} opened", path.display()),
    }
}

#[test]
fn sqlite_a_file_that_is_not_a_database_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage.db");
    let bytes: Vec<u8> =
        (0..64 * 1024u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    std::fs::write(&garbage, &bytes).unwrap();
    let text = open_error(&garbage);
    assert!(text.contains("garbage.db") && text.contains("not a database"), "{text}");
    assert_eq!(std::fs::read(&garbage).unwrap(), bytes, "the file was left as it was");

    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "# my notes\nnot sqlite at all\n".repeat(200)).unwrap();
    let text = open_error(&notes);
    assert!(text.contains("notes.txt") && text.contains("not a database"), "{text}");

    let folder = dir.path().join("a-folder");
    std::fs::create_dir(&folder).unwrap();
    let text = open_error(&folder);
    assert!(text.contains("a-folder"), "{text}");

    let under_a_file = notes.join("sessions.db");
    let text = open_error(&under_a_file);
    assert!(text.contains("notes.txt"), "{text}");
}

#[test]
fn sqlite_a_database_from_a_newer_hands_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    drop(SqliteStore::open(&path).unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.pragma_update(None, "user_version", 999).unwrap();
    drop(conn);
    let text = open_error(&path);
    assert!(
        text.contains("sessions.db") && text.contains("999") && text.contains("newer"),
        "{text}"
    );
}
