//! ask_user through the registry: the question reaches the session's asker and the answer comes
//! back; no asker, a decline, the time limit and an abort each end the call with an error result
//! that tells the model how to go on. Answers routed through `PendingQuestions` (the HTTP host's
//! asker) reach the right call.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use hands_agent::{AskUserConfig, UseSkill};
use hands_core::ask::{AskError, Asker, AskerHandle, PendingQuestions, Question};
use hands_core::{
    BoxFuture, CancellationToken, CoreConfig, Mode, Registry, Session, ToolCall, ToolOutput,
};
use serde_json::{Value, json};

/// The middleware's own limit must not cut the wait short (the default is 120 s per tool).
fn core_config() -> CoreConfig {
    let mut config = CoreConfig::default();
    config.timeouts.tools.insert("ask_user".into(), 3_600_000);
    config
}

fn registry_with(ask_user: AskUserConfig) -> Registry {
    let config = hands_agent::AgentConfig { ask_user };
    hands_agent::register_with(
        Registry::builder(core_config()),
        &config,
        UseSkill::discover(None, None),
    )
    .build()
}

fn registry() -> Registry {
    registry_with(AskUserConfig::default())
}

async fn ask(registry: &Registry, session: &Session, args: Value) -> ToolOutput {
    let id = session.next_call_id();
    registry.dispatch(session, ToolCall::new(id, "ask_user", args)).await.unwrap()
}

/// Answers with a fixed reply and records what it was asked.
struct Scripted {
    reply: Result<String, AskError>,
    asked: Mutex<Vec<Question>>,
}

impl Scripted {
    fn install(session: &Session, reply: Result<&str, AskError>) -> Arc<Self> {
        let asker =
            Arc::new(Self { reply: reply.map(str::to_owned), asked: Mutex::new(Vec::new()) });
        session.insert_extension(AskerHandle(asker.clone()));
        asker
    }
}

impl Asker for Scripted {
    fn ask<'a>(
        &'a self,
        question: &'a Question,
        _cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<String, AskError>> {
        self.asked.lock().unwrap().push(question.clone());
        Box::pin(std::future::ready(self.reply.clone()))
    }
}

/// Never answers, and ignores its token (the tool must still end).
struct Silent;

impl Asker for Silent {
    fn ask<'a>(
        &'a self,
        _question: &'a Question,
        _cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<String, AskError>> {
        Box::pin(std::future::pending())
    }
}

#[tokio::test]
async fn the_question_reaches_the_asker_and_the_answer_comes_back() {
    let registry = registry();
    let session = Session::new("s1", "/tmp");
    let asker = Scripted::install(&session, Ok("  use Postgres \n"));
    let call = ToolCall::new("call-7", "ask_user", json!({"question": " Which database? "}));
    let out = registry.dispatch(&session, call).await.unwrap();
    assert!(!out.is_error, "{out:?}");
    assert_eq!(out.joined_text(), "The user answered: use Postgres");
    let asked = asker.asked.lock().unwrap().clone();
    assert_eq!(
        asked,
        vec![Question {
            session: "s1".into(),
            id: "call-7".into(),
            question: "Which database?".into(),
            options: vec![],
        }]
    );
}

#[tokio::test]
async fn options_are_passed_on_and_a_chosen_one_is_reported_as_a_choice() {
    let registry = registry();
    let session = Session::new("s", "/tmp");
    let asker = Scripted::install(&session, Ok("No"));
    let out =
        ask(&registry, &session, json!({"question": "Delete it?", "options": ["Yes", " No"]}))
            .await;
    assert_eq!(out.joined_text(), "The user chose: No");
    assert_eq!(asker.asked.lock().unwrap()[0].options, vec!["Yes", "No"]);

    // An empty options list is a free-form question.
    let out = ask(&registry, &session, json!({"question": "Why?", "options": []})).await;
    assert_eq!(out.joined_text(), "The user answered: No");
    assert!(asker.asked.lock().unwrap()[1].options.is_empty());
}

#[tokio::test]
async fn an_empty_reply_is_an_answer_that_says_to_decide() {
    let registry = registry();
    let session = Session::new("s", "/tmp");
    Scripted::install(&session, Ok("   "));
    let out = ask(&registry, &session, json!({"question": "Name?"})).await;
    assert!(!out.is_error);
    assert!(out.joined_text().contains("empty reply"), "{out:?}");
}

#[tokio::test]
async fn without_an_asker_the_model_is_told_to_use_its_own_judgement() {
    let registry = registry();
    let session = Session::new("s", "/tmp");
    let out = ask(&registry, &session, json!({"question": "Tabs or spaces?"})).await;
    assert!(out.is_error);
    let text = out.joined_text();
    assert!(text.contains("nobody to ask"), "{text}");
    assert!(text.contains("own judgement") && text.contains("what you assumed"), "{text}");
}

#[tokio::test]
async fn a_decline_and_an_unreachable_user_are_errors_that_say_to_go_on() {
    let registry = registry();
    for (reply, expected) in [
        (AskError::Declined(Some("not now".into())), "declined to answer and said: not now"),
        (AskError::Declined(None), "The user declined to answer. Go on"),
        (AskError::Unavailable("pipe closed".into()), "could not be asked (pipe closed)"),
        (AskError::NoOneToAsk, "nobody to ask"),
    ] {
        let session = Session::new("s", "/tmp");
        Scripted::install(&session, Err(reply));
        let out = ask(&registry, &session, json!({"question": "Ok?"})).await;
        assert!(out.is_error);
        assert!(out.joined_text().contains(expected), "{expected}: {}", out.joined_text());
    }
}

#[tokio::test(start_paused = true)]
async fn an_unanswered_question_times_out_after_the_configured_limit() {
    assert_eq!(AskUserConfig::default().timeout_ms, 10 * 60 * 1000);
    let registry = registry();
    let session = Session::new("s", "/tmp");
    session.insert_extension(AskerHandle(Arc::new(Silent)));
    let start = tokio::time::Instant::now();
    let out = ask(&registry, &session, json!({"question": "Still there?"})).await;
    let waited = start.elapsed();
    assert!(out.is_error);
    let text = out.joined_text();
    assert!(text.contains("did not answer within 10 min"), "{text}");
    assert!(text.contains("own judgement"), "{text}");
    assert!(waited >= Duration::from_secs(600) && waited < Duration::from_secs(601), "{waited:?}");

    // ask_user.timeout_ms sets it.
    let registry = registry_with(AskUserConfig { timeout_ms: 1_500 });
    let start = tokio::time::Instant::now();
    let out = ask(&registry, &session, json!({"question": "Still there?"})).await;
    assert!(out.joined_text().contains("within 1500 ms"), "{out:?}");
    assert!(start.elapsed() < Duration::from_secs(2), "{:?}", start.elapsed());
}

#[tokio::test]
async fn answers_routed_through_pending_questions_reach_their_call() {
    let registry = Arc::new(registry());
    let session = Session::new("s", "/tmp");
    let pending = PendingQuestions::new();
    session.insert_extension(AskerHandle(Arc::new(pending.clone())));
    let mut changes = pending.changes();

    let spawn = |id: &str, question: &str| {
        let (registry, session) = (Arc::clone(&registry), session.clone());
        let call = ToolCall::new(id, "ask_user", json!({"question": question}));
        tokio::spawn(async move { registry.dispatch(&session, call).await.unwrap() })
    };
    let first = spawn("q1", "First?");
    let second = spawn("q2", "Second?");
    let listed = changes.wait_for(|list| list.len() == 2).await.unwrap().clone();
    let mut ids: Vec<&str> = listed.iter().map(|q| q.id.as_str()).collect();
    ids.sort_unstable();
    assert_eq!(ids, ["q1", "q2"]);
    assert!(listed.iter().all(|q| q.session == "s"));

    // Two are waiting, so an answer without an id is refused; by id it goes where it should.
    assert!(pending.answer(None, "?").is_err());
    pending.answer(Some("q2"), "two").unwrap();
    assert_eq!(second.await.unwrap().joined_text(), "The user answered: two");
    pending.answer_in("s", None, "one").unwrap();
    assert_eq!(first.await.unwrap().joined_text(), "The user answered: one");
    assert!(pending.pending().is_empty());
}

#[tokio::test]
async fn aborting_the_session_ends_the_wait_with_an_aborted_result() {
    let registry = Arc::new(registry());
    let session = Session::new("s", "/tmp");
    let pending = PendingQuestions::new();
    session.insert_extension(AskerHandle(Arc::new(pending.clone())));
    let mut changes = pending.changes();
    let task = {
        let (registry, session) = (Arc::clone(&registry), session.clone());
        tokio::spawn(async move { ask(&registry, &session, json!({"question": "Wait?"})).await })
    };
    changes.wait_for(|list| !list.is_empty()).await.unwrap();
    session.abort();
    let out = tokio::time::timeout(Duration::from_secs(5), task).await.unwrap().unwrap();
    assert!(out.is_error);
    assert!(out.joined_text().contains("aborted"), "{out:?}");
    assert!(pending.pending().is_empty(), "the aborted question is no longer pending");
}

#[tokio::test]
async fn an_asker_that_ignores_cancellation_still_lets_the_call_end() {
    let registry = Arc::new(registry());
    let session = Session::new("s", "/tmp");
    session.insert_extension(AskerHandle(Arc::new(Silent)));
    let task = {
        let (registry, session) = (Arc::clone(&registry), session.clone());
        tokio::spawn(async move { ask(&registry, &session, json!({"question": "Wait?"})).await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    session.abort();
    let out = tokio::time::timeout(Duration::from_secs(2), task).await.unwrap().unwrap();
    assert!(out.is_error && out.joined_text().contains("aborted"), "{out:?}");
}

#[tokio::test]
async fn each_call_asks_again_and_plan_mode_offers_it() {
    let registry = registry();
    let session = Session::new("s", "/tmp");
    let asker = Scripted::install(&session, Ok("yes"));
    let spec = registry.get("ask_user").unwrap().spec().clone();
    assert!(spec.annotations.read_only && !spec.cacheable && !spec.needs_approval);
    // The same question twice in one turn is asked twice (no dedup).
    for id in ["a", "b"] {
        let call = ToolCall::new(id, "ask_user", json!({"question": "Go?"})).in_turn("t1");
        let out = registry.dispatch(&session, call).await.unwrap();
        assert_eq!(out.joined_text(), "The user answered: yes");
    }
    assert_eq!(asker.asked.lock().unwrap().len(), 2);

    session.set_mode(Mode::Plan);
    let out = ask(&registry, &session, json!({"question": "Plan ok?"})).await;
    assert!(!out.is_error, "{out:?}");
}

#[tokio::test]
async fn bad_arguments_are_refused_before_anyone_is_asked() {
    let registry = registry();
    let session = Session::new("s", "/tmp");
    let asker = Scripted::install(&session, Ok("yes"));
    let many: Vec<String> = (0..21).map(|i| format!("choice {i}")).collect();
    let cases: Vec<(Value, &str)> = vec![
        (json!({"question": "  "}), "`question` is empty"),
        (json!({"question": "Q?", "options": ["only"]}), "single choice"),
        (json!({"question": "Q?", "options": ["a", "a "]}), "option 2 repeats `a`"),
        (json!({"question": "Q?", "options": ["a", ""]}), "option 2 is empty"),
        (json!({"question": "Q?", "options": many}), "21 choices; at most 20"),
        (json!({}), "missing field `question`"),
        (json!({"question": 42}), "field `question`: invalid type: integer"),
        (json!({"question": "Q?", "options": "a or b"}), "field `options`"),
        (json!({"question": "Q?", "choices": ["a", "b"]}), "unknown field `choices`"),
    ];
    for (args, expected) in cases {
        let out = ask(&registry, &session, args.clone()).await;
        assert!(out.is_error, "{args}");
        assert!(out.joined_text().contains(expected), "{args}: {}", out.joined_text());
    }
    assert!(asker.asked.lock().unwrap().is_empty());
}
