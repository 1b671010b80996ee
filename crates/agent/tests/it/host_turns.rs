//! The host: turns, their events and records, subscriptions, resume, many sessions at once.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use crate::loop_support;

use std::sync::Arc;
use std::time::Duration;

use hands_agent::event::EventKind;
use hands_agent::host::{AgentConfig, Host, HostError, HostParts, NewSession};
use hands_agent::model::{Block, Message, ProviderError, Role};
use hands_core::{CoreConfig, Mode};
use hands_store::Store;
use loop_support::*;
use serde_json::json;

fn names(events: &[hands_agent::event::Event]) -> Vec<&'static str> {
    events.iter().map(|e| e.kind.name()).filter(|n| *n != "text_delta").collect()
}

#[tokio::test]
async fn a_turn_is_stored_and_announced() {
    let fx = Fixture::new(Script::new(vec![
        call("write_file", json!({"path": "hello.txt", "content": "hi\n"})),
        say("Wrote hello.txt."),
    ]))
    .await;
    let id = fx.session(Mode::Build).await;
    let turn = fx.host.post_message(&id, "write hello".into()).await.unwrap();
    assert_eq!(within(30, fx.host.wait_turn(&id)).await.unwrap().as_deref(), Some("completed"));
    assert_eq!(std::fs::read_to_string(fx.root.path().join("hello.txt")).unwrap(), "hi\n");

    let events = fx.events(&id).await;
    assert_eq!(
        names(&events),
        vec!["turn_started", "tool_call_started", "tool_call_finished", "turn_ended"]
    );
    let ids: Vec<u64> = events.iter().map(|e| e.id).collect();
    assert_eq!(ids, (1..=ids.len() as u64).collect::<Vec<_>>());
    let text: String = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TextDelta { text, turn_id } => {
                assert_eq!(*turn_id, turn);
                Some(text.as_str())
            }
            _ => None,
        })
        .collect();
    assert_eq!(text, "Wrote hello.txt.");
    let EventKind::TurnEnded { reason, text, .. } = &events.last().unwrap().kind else { panic!() };
    assert_eq!((reason.as_str(), text.as_deref()), ("completed", Some("Wrote hello.txt.")));
    let finished = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ToolCallFinished { is_error, summary, name, turn_id, .. } => {
                Some((*is_error, summary.clone(), name.clone(), turn_id.clone()))
            }
            _ => None,
        })
        .unwrap();
    assert_eq!(finished.2, "write_file");
    assert!(!finished.0, "{finished:?}");
    assert_eq!(finished.3.as_deref(), Some(turn.as_str()));

    // The store has the turn, the messages, the call and its result.
    let turns = fx.store.turns(&id).await.unwrap();
    assert_eq!(turns.len(), 1);
    assert_eq!((turns[0].id.as_str(), turns[0].status.as_str()), (turn.as_str(), "completed"));
    let transcript = fx.host.transcript(&id).await.unwrap();
    assert_eq!(transcript.len(), 4);
    assert_eq!(transcript[0], Message::user("write hello"));
    assert_valid(&transcript);
    let calls = fx.store.tool_calls(&id).await.unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].is_error, Some(false));
    assert!(calls[0].result.is_some() && calls[0].duration_ms.is_some());
    let info = fx.host.get_session(&id).await.unwrap();
    assert_eq!(info.title.as_deref(), Some("write hello"));
    assert_eq!(info.running_turn, None);
}

#[tokio::test]
async fn one_turn_at_a_time_and_none_without_a_model() {
    let fx = Fixture::new(Script::new(vec![Step::Hang])).await;
    let id = fx.session(Mode::Build).await;
    let turn = fx.host.post_message(&id, "think".into()).await.unwrap();
    assert_eq!(fx.host.get_session(&id).await.unwrap().running_turn, Some(turn));
    let second = fx.host.post_message(&id, "again".into()).await;
    assert!(matches!(second, Err(HostError::Conflict(_))), "{second:?}");
    fx.host.abort_session(&id).await.unwrap();
    assert_eq!(fx.host.wait_turn(&id).await.unwrap().as_deref(), Some("aborted"));
    assert!(matches!(fx.host.post_message("nope", "x".into()).await, Err(HostError::NotFound(_))));

    let host = Host::open(HostParts {
        store: fx.store.clone(),
        registry: fx.registry.clone(),
        provider: None,
        config: AgentConfig::default(),
        checkpoints: hands_checkpoint::Settings { enabled: false, ..Default::default() },
    })
    .await
    .unwrap();
    assert!(matches!(host.post_message(&id, "hi".into()).await, Err(HostError::NoModel)));
    // Direct calls work without a model, with the same events.
    let out = host.call_tool(&id, Some("t-x".into()), "list_files", json!({})).await.unwrap();
    assert!(!out.is_error, "{out:?}");
    let events = host.subscribe(&id, 0).await.unwrap().replay;
    let started = events.iter().rev().find_map(|e| match &e.kind {
        EventKind::ToolCallStarted { turn_id, name, .. } => Some((turn_id.clone(), name.clone())),
        _ => None,
    });
    assert_eq!(started, Some((Some("t-x".into()), "list_files".into())));
    assert_eq!(names(&events).last(), Some(&"tool_call_finished"));
}

#[tokio::test]
async fn provider_errors_become_an_error_event() {
    let fx = Fixture::new(Script::new(vec![Step::Fail(ProviderError::RateLimited {
        retry_after: None,
        message: "slow down".into(),
    })]))
    .await;
    let id = fx.session(Mode::Build).await;
    assert_eq!(fx.turn(&id, "hi").await, "error");
    let events = fx.events(&id).await;
    assert_eq!(names(&events), vec!["turn_started", "error", "turn_ended"]);
    let EventKind::Error { message, turn_id } = &events[1].kind else { panic!() };
    assert!(turn_id.is_some());
    assert!(
        message.contains("slow down") && message.contains("send the message again"),
        "{message}"
    );
    assert_eq!(fx.store.turns(&id).await.unwrap()[0].status, "error");
}

#[tokio::test]
async fn subscribe_after_replays_exactly_the_missed_events_then_goes_live() {
    let fx = Fixture::new(Script::new(vec![
        call("slow_read", json!({"label": "a"})),
        say("first done"),
    ]))
    .await;
    let id = fx.session(Mode::Build).await;
    fx.turn(&id, "one").await;
    let all = fx.events(&id).await;
    assert!(all.len() >= 5);
    let sub = fx.host.subscribe(&id, 3).await.unwrap();
    assert_eq!(sub.replay, all[3..].to_vec());
    let sub = fx.host.subscribe(&id, all.len() as u64).await.unwrap();
    assert!(sub.replay.is_empty());

    // Live: a subscriber from the middle sees every later event once, in order, even while a
    // turn emits events as it subscribes.
    fx.script.push(Step::Reply {
        text: "streaming a long answer".into(),
        tools: vec![("slow_read".into(), json!({"label": "b", "ms": 50}))],
        delay: Duration::ZERO,
    });
    fx.script.push(say("second done"));
    fx.host.post_message(&id, "two".into()).await.unwrap();
    let mut subs = Vec::new();
    for after in [0, 2, all.len() as u64] {
        subs.push((after, fx.host.subscribe(&id, after).await.unwrap()));
    }
    for (after, mut sub) in subs {
        let seen = until(
            &mut sub,
            |k| matches!(k, EventKind::TurnEnded { text: Some(t), .. } if t == "second done"),
        )
        .await;
        let ids: Vec<u64> = seen.iter().map(|e| e.id).collect();
        let expected: Vec<u64> = (after + 1..=*ids.last().unwrap()).collect();
        assert_eq!(ids, expected, "subscriber after {after}");
    }
    let everything = fx.events(&id).await;
    assert_eq!(everything.last().unwrap().kind.name(), "turn_ended");
}

#[tokio::test]
async fn a_slow_subscriber_catches_up_from_the_store() {
    let fx = Fixture::new(Script::new(Vec::new())).await;
    let id = fx.session(Mode::Build).await;
    let mut sub = fx.host.subscribe(&id, 0).await.unwrap();
    // 2000 events (more than the broadcast buffer) while nobody reads.
    for i in 0..1000 {
        fx.host.call_tool(&id, None, "slow_read", json!({"label": format!("l{i}")})).await.unwrap();
    }
    let mut last = 0;
    for _ in 0..2000 {
        let event = within(10, sub.next()).await.unwrap();
        assert_eq!(event.id, last + 1);
        last = event.id;
    }
}

#[tokio::test]
async fn a_reopened_host_resumes_the_session_with_its_transcript() {
    let fx = Fixture::new(Script::new(vec![
        call("write_file", json!({"path": "notes.md", "content": "# notes\n"})),
        say("Created notes.md."),
    ]))
    .await;
    let id = fx.session(Mode::Build).await;
    fx.turn(&id, "create notes").await;
    let before = fx.host.transcript(&id).await.unwrap();
    fx.host.close().await;
    drop(fx.host);

    let script = Arc::new(Script::new(vec![say("It holds a heading.")]));
    let host = Host::open(HostParts {
        store: fx.store.clone(),
        registry: fx.registry.clone(),
        provider: Some(script.clone()),
        config: AgentConfig::default(),
        checkpoints: hands_checkpoint::Settings { enabled: false, ..Default::default() },
    })
    .await
    .unwrap();
    let list = host.list_sessions().await.unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].id, id);
    assert_eq!(host.transcript(&id).await.unwrap(), before);
    host.post_message(&id, "what is in it?".into()).await.unwrap();
    assert_eq!(host.wait_turn(&id).await.unwrap().as_deref(), Some("completed"));
    let request = &script.requests()[0];
    assert_eq!(request.messages[..before.len()], before[..]);
    assert_eq!(request.messages.last().unwrap(), &Message::user("what is in it?"));
    let after = host.transcript(&id).await.unwrap();
    assert_eq!(after.len(), before.len() + 2);
    // Event ids go on from where they were.
    let events = host.subscribe(&id, 0).await.unwrap().replay;
    let ids: Vec<u64> = events.iter().map(|e| e.id).collect();
    assert_eq!(ids, (1..=ids.len() as u64).collect::<Vec<_>>());
}

#[tokio::test]
async fn a_turn_left_running_by_a_crash_is_ended_and_its_calls_answered() {
    let store = Arc::new(hands_store::MemoryStore::new());
    let root = tempfile::tempdir().unwrap();
    let probe = Probe::default();
    let registry = registry_with(CoreConfig::default(), &probe);
    let parts = |provider: Option<Arc<Script>>| HostParts {
        store: store.clone(),
        registry: registry.clone(),
        provider: provider.map(|p| p as Arc<dyn hands_agent::model::Provider>),
        config: AgentConfig::default(),
        checkpoints: hands_checkpoint::Settings { enabled: false, ..Default::default() },
    };
    let host = Host::open(parts(None)).await.unwrap();
    let new = NewSession {
        id: Some("crashy".into()),
        project_id: None,
        root: root.path().to_owned(),
        mode: Mode::Build,
        title: None,
    };
    let info = host.create_session(new).await.unwrap();
    assert_eq!(info.project_id, root.path().file_name().unwrap().to_string_lossy());
    // What a hands that died mid-call leaves: a running turn, a tool_use without result.
    store
        .start_turn(hands_store::TurnRecord {
            id: "t-dead".into(),
            session_id: "crashy".into(),
            status: "running".into(),
            user_message: "run it".into(),
            started_at_ms: 1,
            ended_at_ms: None,
        })
        .await
        .unwrap();
    for message in [
        Message::user("run it"),
        Message {
            role: Role::Assistant,
            content: vec![Block::ToolUse {
                id: next_id(),
                name: "bash".into(),
                input: json!({"command": "make"}),
            }],
        },
    ] {
        store
            .append_message("crashy", Some("t-dead"), serde_json::to_value(&message).unwrap())
            .await
            .unwrap();
    }
    drop(host);
    let script = Arc::new(Script::new(vec![say("ok")]));
    let host = Host::open(parts(Some(script.clone()))).await.unwrap();
    assert_eq!(store.turns("crashy").await.unwrap()[0].status, "aborted");
    let transcript = host.transcript("crashy").await.unwrap();
    assert_eq!(transcript.len(), 2, "not repaired until the session is resumed");
    let events = host.subscribe("crashy", 0).await.unwrap().replay;
    assert!(
        matches!(&events.last().unwrap().kind, EventKind::TurnEnded { reason, .. } if reason == "aborted")
    );
    assert_eq!(host.transcript("crashy").await.unwrap().len(), 3, "resuming repaired it");
    host.post_message("crashy", "again".into()).await.unwrap();
    host.wait_turn("crashy").await.unwrap();
    let transcript = host.transcript("crashy").await.unwrap();
    assert_valid(&transcript);
    let fix = result_text(&transcript[2].content[0]);
    assert!(fix.contains("did not finish"), "{fix}");
    assert_valid(&script.requests()[0].messages);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hundred_sessions_each_run_a_turn_at_once() {
    // Each session's model runs one bash call, then answers with what it printed.
    let script = Script::rule(|request| {
        let last = request.messages.last().unwrap();
        match &last.content[0] {
            Block::Text { text } => call("bash", json!({"command": format!("echo {text}")})),
            result => say(&format!("said {}", result_text(result).lines().next().unwrap_or(""))),
        }
    });
    let fx = Fixture::new(script).await;
    let mut ids = Vec::new();
    for _ in 0..100 {
        ids.push(fx.session(Mode::Build).await);
    }
    let host = &fx.host;
    let posts = ids.iter().enumerate().map(|(i, id)| async move {
        host.post_message(id, format!("hello{i}")).await.unwrap();
    });
    futures_util::future::join_all(posts).await;
    let waits = ids.iter().map(|id| async move { host.wait_turn(id).await.unwrap() });
    let statuses = within(120, futures_util::future::join_all(waits)).await;
    assert!(statuses.iter().all(|s| s.as_deref() == Some("completed")), "{statuses:?}");
    for (i, id) in ids.iter().enumerate() {
        let events = fx.events(id).await;
        let EventKind::TurnEnded { text, .. } = &events.last().unwrap().kind else { panic!() };
        assert_eq!(text.as_deref(), Some(format!("said hello{i}").as_str()));
        assert_valid(&fx.host.transcript(id).await.unwrap());
    }
}

#[tokio::test]
async fn todos_and_mode_changes_are_announced_and_stored() {
    let fx = Fixture::new(Script::new(vec![
        call(
            "todo_write",
            json!({"todos": [{"id": "1", "content": "write tests", "status": "in_progress"}]}),
        ),
        call("enter_plan_mode", json!({})),
        say("planning"),
    ]))
    .await;
    let id = fx.session(Mode::Build).await;
    let mut sub = fx.host.subscribe(&id, 0).await.unwrap();
    fx.turn(&id, "plan the tests").await;
    let seen = until(&mut sub, |k| matches!(k, EventKind::ModeChanged { .. })).await;
    let todos = seen
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::TodosChanged { todos } => Some(todos.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(todos[0]["content"], "write tests");
    assert!(
        matches!(&seen.last().unwrap().kind, EventKind::ModeChanged { mode } if *mode == hands_core::Mode::Plan)
    );
    within(5, async {
        while fx.store.get_session(&id).await.unwrap().mode != "plan" {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert_eq!(fx.store.todos(&id).await.unwrap()[0]["id"], "1");
    assert_eq!(fx.host.get_session(&id).await.unwrap().mode, Mode::Plan);

    // A resumed session gets its mode and todo list back.
    fx.host.close().await;
    let host = Host::open(HostParts {
        store: fx.store.clone(),
        registry: fx.registry.clone(),
        provider: Some(fx.script.clone()),
        config: AgentConfig::default(),
        checkpoints: hands_checkpoint::Settings { enabled: false, ..Default::default() },
    })
    .await
    .unwrap();
    assert_eq!(host.get_session(&id).await.unwrap().mode, Mode::Plan);
    let session = host.session(&id).await.unwrap();
    assert_eq!(hands_agent::todos(&session).borrow()[0].content, "write tests");
}

#[tokio::test]
async fn sessions_are_listed_and_deleted() {
    let fx = Fixture::new(Script::new(Vec::new())).await;
    let a = fx.session(Mode::Build).await;
    let b = fx.session(Mode::Plan).await;
    let list = fx.host.list_sessions().await.unwrap();
    assert_eq!(list.len(), 2);
    assert!(list.iter().any(|s| s.id == b && s.mode == Mode::Plan));
    let dup = fx
        .host
        .create_session(NewSession {
            id: Some(a.clone()),
            project_id: None,
            root: fx.root.path().to_owned(),
            mode: Mode::Build,
            title: None,
        })
        .await;
    assert!(matches!(dup, Err(HostError::Conflict(_))), "{dup:?}");
    let bad = fx
        .host
        .create_session(NewSession {
            id: None,
            project_id: None,
            root: fx.root.path().join("missing"),
            mode: Mode::Build,
            title: None,
        })
        .await;
    assert!(matches!(bad, Err(HostError::BadRequest(_))), "{bad:?}");
    let mut sub = fx.host.subscribe(&a, 0).await.unwrap();
    fx.host.delete_session(&a).await.unwrap();
    assert!(within(5, sub.next()).await.is_none(), "the stream ends with the session");
    assert!(matches!(fx.host.get_session(&a).await, Err(HostError::NotFound(_))));
    assert!(matches!(fx.host.delete_session(&a).await, Err(HostError::NotFound(_))));
    assert_eq!(fx.host.list_sessions().await.unwrap().len(), 1);
}

#[tokio::test]
async fn process_notices_are_announced_wherever_they_ride() {
    let fx = Fixture::new(Script::new(vec![
        call("slow_read", json!({"label": "wait", "ms": 300})),
        say("noted"),
    ]))
    .await;
    let id = fx.session(Mode::Build).await;
    let session = fx.host.session(&id).await.unwrap();
    // Queued before the turn: injected with the user message.
    session.push_notice(hands_core::Notice::new(
        hands_core::NoticeKind::ProcessExited,
        "process p1 exited with code 0",
    ));
    let mut sub = fx.host.subscribe(&id, 0).await.unwrap();
    fx.host.post_message(&id, "go".into()).await.unwrap();
    until(&mut sub, |k| matches!(k, EventKind::ToolCallStarted { .. })).await;
    // Queued during a call: the registry attaches it to the call's result.
    session.push_notice(hands_core::Notice::new(
        hands_core::NoticeKind::ProcessExited,
        "process p2 exited with code 1",
    ));
    let rest = until(&mut sub, |k| matches!(k, EventKind::TurnEnded { .. })).await;
    let notices: Vec<String> = fx
        .events(&id)
        .await
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::ProcessNotice { text } => Some(text),
            _ => None,
        })
        .collect();
    assert_eq!(notices, vec!["process p1 exited with code 0", "process p2 exited with code 1"]);
    assert!(!rest.is_empty());
    let requests = fx.script.requests();
    assert!(requests[0].messages[0].text().contains("[notice] process p1 exited"));
    let results = result_text(&requests[1].messages.last().unwrap().content[0]);
    assert!(results.contains("[notice] process p2 exited with code 1"), "{results}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_survives_a_restart_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sessions.db");
    let root = tempfile::tempdir().unwrap();
    let registry = registry_with(CoreConfig::default(), &Probe::default());
    let open = |script: Arc<Script>| {
        let store: Arc<dyn Store> = Arc::new(hands_store::SqliteStore::open(&db).unwrap());
        let registry = registry.clone();
        async move {
            Host::open(HostParts {
                store,
                registry,
                provider: Some(script),
                config: AgentConfig::default(),
                checkpoints: hands_checkpoint::Settings { enabled: false, ..Default::default() },
            })
            .await
            .unwrap()
        }
    };
    let script = Arc::new(Script::new(vec![
        call("write_file", json!({"path": "a.txt", "content": "one\n"})),
        say("Wrote a.txt."),
    ]));
    let host = open(script).await;
    let new = NewSession {
        id: Some("kept".into()),
        project_id: None,
        root: root.path().to_owned(),
        mode: Mode::Build,
        title: None,
    };
    host.create_session(new).await.unwrap();
    host.post_message("kept", "write a".into()).await.unwrap();
    assert_eq!(host.wait_turn("kept").await.unwrap().as_deref(), Some("completed"));
    let before = host.transcript("kept").await.unwrap();
    let events_before = host.subscribe("kept", 0).await.unwrap().replay;
    host.close().await;
    drop(host);

    let script = Arc::new(Script::new(vec![say("It says one.")]));
    let host = open(script.clone()).await;
    assert_eq!(host.transcript("kept").await.unwrap(), before);
    assert_eq!(host.subscribe("kept", 0).await.unwrap().replay, events_before);
    host.post_message("kept", "what does it say?".into()).await.unwrap();
    assert_eq!(host.wait_turn("kept").await.unwrap().as_deref(), Some("completed"));
    assert_eq!(script.requests()[0].messages[..before.len()], before[..]);
    let sub = host.subscribe("kept", events_before.len() as u64).await.unwrap();
    assert_eq!(sub.replay.first().map(|e| e.id), Some(events_before.len() as u64 + 1));
    assert_eq!(host.get_session("kept").await.unwrap().title.as_deref(), Some("write a"));
    host.close().await;
}

#[tokio::test]
async fn tool_calls_are_stored_even_when_the_model_repeats_its_call_ids() {
    // Local model servers number the calls of each response call_0, call_1, …: the same ids in
    // every step, turn and session. Each call must still be stored with its result.
    let fx = Fixture::new(
        Script::new(vec![
            call("read_file", json!({"path": "a.txt"})),
            say("one"),
            call("read_file", json!({"path": "a.txt"})),
            say("two"),
            call("read_file", json!({"path": "a.txt"})),
            say("three"),
        ])
        .with_local_ids(),
    )
    .await;
    std::fs::write(fx.root.path().join("a.txt"), "hello\n").unwrap();
    let first = fx.session(Mode::Build).await;
    let second = fx.session(Mode::Build).await;
    assert_eq!(fx.turn(&first, "read it").await, "completed");
    assert_eq!(fx.turn(&first, "again").await, "completed");
    assert_eq!(fx.turn(&second, "you too").await, "completed");
    let calls = fx.store.tool_calls(&first).await.unwrap();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert!(calls.iter().all(|c| c.result.is_some() && c.is_error == Some(false)), "{calls:?}");
    let calls = fx.store.tool_calls(&second).await.unwrap();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert!(calls[0].result.is_some(), "{calls:?}");
}

/// A memory store that, when the host stores a `turn_ended` event, asks the host whether the
/// session still has a running turn — the moment a client could first learn the turn ended.
struct Observing {
    inner: hands_store::MemoryStore,
    host: std::sync::OnceLock<std::sync::Weak<Host>>,
    seen: std::sync::Mutex<Vec<Option<String>>>,
}

macro_rules! delegate {
    ($($name:ident ( $($arg:ident : $ty:ty),* ) -> $out:ty;)*) => {
        $(fn $name<'a>(&'a self, $($arg: $ty),*) -> hands_store::BoxFuture<'a, $out> {
            self.inner.$name($($arg),*)
        })*
    };
}

impl Store for Observing {
    delegate! {
        create_session(s: hands_store::SessionRecord) -> hands_store::StoreResult<()>;
        get_session(id: &'a str) -> hands_store::StoreResult<hands_store::SessionRecord>;
        list_sessions() -> hands_store::StoreResult<Vec<hands_store::SessionRecord>>;
        update_session(id: &'a str, mode: Option<&'a str>, title: Option<&'a str>) -> hands_store::StoreResult<()>;
        delete_session(id: &'a str) -> hands_store::StoreResult<()>;
        list_projects() -> hands_store::StoreResult<Vec<hands_store::ProjectRecord>>;
        start_turn(t: hands_store::TurnRecord) -> hands_store::StoreResult<()>;
        end_turn(id: &'a str, status: &'a str, at: i64) -> hands_store::StoreResult<()>;
        turns(id: &'a str) -> hands_store::StoreResult<Vec<hands_store::TurnRecord>>;
        abandon_running_turns(at: i64) -> hands_store::StoreResult<Vec<hands_store::TurnRecord>>;
        append_message(id: &'a str, turn: Option<&'a str>, m: serde_json::Value) -> hands_store::StoreResult<u64>;
        messages(id: &'a str) -> hands_store::StoreResult<Vec<hands_store::MessageRecord>>;
        truncate_messages(id: &'a str, after: u64) -> hands_store::StoreResult<u64>;
        start_tool_call(c: hands_store::ToolCallRecord) -> hands_store::StoreResult<()>;
        finish_tool_call(id: &'a str, r: serde_json::Value, e: bool, d: u64) -> hands_store::StoreResult<()>;
        tool_calls(id: &'a str) -> hands_store::StoreResult<Vec<hands_store::ToolCallRecord>>;
        set_todos(id: &'a str, t: serde_json::Value) -> hands_store::StoreResult<()>;
        todos(id: &'a str) -> hands_store::StoreResult<serde_json::Value>;
        events_after(id: &'a str, after: u64, limit: usize) -> hands_store::StoreResult<Vec<hands_store::EventRecord>>;
    }

    fn append_event<'a>(
        &'a self,
        session_id: &'a str,
        at_ms: i64,
        data: serde_json::Value,
    ) -> hands_store::BoxFuture<'a, hands_store::StoreResult<u64>> {
        Box::pin(async move {
            if data["type"] == "turn_ended"
                && let Some(host) = self.host.get().and_then(std::sync::Weak::upgrade)
            {
                let info = host.get_session(session_id).await.unwrap();
                self.seen.lock().unwrap().push(info.running_turn);
            }
            self.inner.append_event(session_id, at_ms, data).await
        })
    }
}

#[tokio::test]
async fn a_turn_is_over_before_turn_ended_is_announced() {
    // A client that posts its next message as soon as it sees turn_ended must not be told the
    // turn is still running: by the time the event exists, the session has no running turn.
    let store = Arc::new(Observing {
        inner: hands_store::MemoryStore::new(),
        host: std::sync::OnceLock::new(),
        seen: std::sync::Mutex::new(Vec::new()),
    });
    let host = Host::open(HostParts {
        store: store.clone(),
        registry: registry_with(CoreConfig::default(), &Probe::default()),
        provider: Some(Arc::new(Script::new(vec![say("first"), say("second")]))),
        config: AgentConfig::default(),
        checkpoints: hands_checkpoint::Settings { enabled: false, ..Default::default() },
    })
    .await
    .unwrap();
    store.host.set(Arc::downgrade(&host)).unwrap();
    let root = tempfile::tempdir().unwrap();
    let session = host
        .create_session(NewSession {
            id: None,
            project_id: None,
            root: root.path().to_owned(),
            mode: Mode::Build,
            title: None,
        })
        .await
        .unwrap()
        .id;
    for text in ["one", "two"] {
        host.post_message(&session, text.into()).await.unwrap();
        within(30, host.wait_turn(&session)).await.unwrap();
    }
    assert_eq!(
        *store.seen.lock().unwrap(),
        [None, None],
        "a turn still ran when its end was stored"
    );
}

#[tokio::test]
async fn an_empty_turn_id_on_a_direct_call_is_no_turn() {
    let fx = Fixture::new(Script::new(vec![])).await;
    std::fs::write(fx.root.path().join("a.txt"), "hi\n").unwrap();
    let session = fx.session(Mode::Build).await;
    let out = fx
        .host
        .call_tool(&session, Some(String::new()), "read_file", json!({"path": "a.txt"}))
        .await
        .unwrap();
    assert!(!out.is_error, "{}", out.joined_text());
    let turns: Vec<_> = fx
        .events(&session)
        .await
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::ToolCallStarted { turn_id, .. }
            | EventKind::ToolCallFinished { turn_id, .. } => Some(turn_id),
            _ => None,
        })
        .collect();
    assert_eq!(turns, [None, None]);
}
