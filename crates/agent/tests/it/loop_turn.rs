//! The loop on its own: a scripted provider, the real registry, a session over a temporary folder.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use crate::loop_support;

use std::time::{Duration, Instant};

use hands_agent::model::{Block, Message, ProviderError, ResultPart, Role};
use hands_agent::turn::{EndReason, Limits, Outcome, ToolScope, Turn};
use hands_core::{CoreConfig, Mode, Registry, Session};
use loop_support::*;
use serde_json::json;

const LIMITS: Limits = Limits { max_steps: 10, max_tokens: 1000, elide_at: 0.8 };

struct Env {
    registry: std::sync::Arc<Registry>,
    probe: Probe,
    session: Session,
    root: tempfile::TempDir,
}

fn env() -> Env {
    let probe = Probe::default();
    let registry = registry_with(CoreConfig::default(), &probe);
    let root = tempfile::tempdir().unwrap();
    let session = Session::new("s-loop", root.path());
    Env { registry, probe, session, root }
}

async fn run(
    env: &Env,
    script: &Script,
    limits: Limits,
    messages: &mut Vec<Message>,
    text: &str,
    notes: &Notes,
) -> Outcome {
    let prompt = |mode: Mode| format!("test prompt ({mode})");
    let turn = Turn {
        provider: script,
        registry: &env.registry,
        session: &env.session,
        turn_id: "t1",
        cancel: env.session.cancel_token(),
        limits,
        prompt: &prompt,
        scope: ToolScope::Mode,
        call_prefix: None,
        observer: notes,
        checkpoints: None,
    };
    within(60, turn.run(messages, Message::user(text))).await
}

fn results(message: &Message) -> Vec<(String, bool)> {
    message
        .content
        .iter()
        .filter_map(|b| match b {
            Block::ToolResult { is_error, .. } => Some((result_text(b), *is_error)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn edit_a_file_then_run_the_test_command() {
    let env = env();
    std::fs::write(env.root.path().join("lib.txt"), "value = 1\n").unwrap();
    let script = Script::new(vec![
        call("read_file", json!({"path": "lib.txt"})),
        call(
            "edit_file",
            json!({"path": "lib.txt", "old_string": "value = 1", "new_string": "value = 2"}),
        ),
        call("bash", json!({"command": "grep -q 'value = 2' lib.txt && echo TESTS PASS"})),
        say("Changed the value; the tests pass."),
    ]);
    let notes = Notes::default();
    let mut messages = Vec::new();
    let outcome = run(&env, &script, LIMITS, &mut messages, "set value to 2", &notes).await;
    assert_eq!(outcome.reason, EndReason::Completed, "{outcome:?}");
    assert_eq!(outcome.text.as_deref(), Some("Changed the value; the tests pass."));
    assert_eq!(outcome.steps, 4);
    assert_eq!(std::fs::read_to_string(env.root.path().join("lib.txt")).unwrap(), "value = 2\n");
    // user, (assistant, results) × 3, assistant
    assert_eq!(messages.len(), 8);
    let bash = results(&messages[6]);
    assert!(bash[0].0.contains("TESTS PASS") && !bash[0].1, "{bash:?}");
    assert_valid(&messages);
    // Every message was reported for storage, in order.
    assert_eq!(*notes.1.lock().unwrap(), messages);
    let lines = notes.lines();
    assert!(lines.contains(&"start edit_file".to_owned()));
    assert!(lines.contains(&"end bash error=false".to_owned()));
    assert!(lines.iter().any(|l| l.starts_with("text ")), "streamed text is reported: {lines:?}");
    // The requests carry the system prompt, the mode's tools and the growing conversation.
    let requests = script.requests();
    assert_eq!(requests[0].system, "test prompt (build)");
    assert!(requests[0].tools.iter().any(|t| t.name == "bash"));
    assert!(!requests[0].tools.iter().any(|t| t.name == "exit_plan_mode"));
    assert_eq!(requests[3].messages.len(), 7);
    assert_eq!(requests[0].max_tokens, 1000);
}

#[tokio::test]
async fn read_only_calls_overlap() {
    let env = env();
    let script = Script::new(vec![
        calls(vec![
            ("slow_read", json!({"label": "a", "ms": 600})),
            ("slow_read", json!({"label": "b", "ms": 600})),
            ("slow_read", json!({"label": "c", "ms": 600})),
        ]),
        say("ok"),
    ]);
    let started = Instant::now();
    let mut messages = Vec::new();
    let outcome = run(&env, &script, LIMITS, &mut messages, "read", &Notes::default()).await;
    assert_eq!(outcome.reason, EndReason::Completed);
    let (a0, a1) = env.probe.span("a");
    let (b0, b1) = env.probe.span("b");
    let (c0, c1) = env.probe.span("c");
    assert!(a0 < b1 && b0 < a1 && c0 < a1 && a0 < c1, "the reads ran one after another");
    assert!(started.elapsed() < Duration::from_millis(1500), "{:?}", started.elapsed());
    let texts: Vec<String> = results(&messages[2]).into_iter().map(|(t, _)| t).collect();
    assert_eq!(texts, vec!["done a", "done b", "done c"]);
}

#[tokio::test]
async fn mutating_calls_run_alone_and_in_order() {
    let env = env();
    let script = Script::new(vec![
        calls(vec![
            ("record", json!({"label": "first", "ms": 300})),
            ("record", json!({"label": "second", "ms": 0})),
            ("slow_read", json!({"label": "read", "ms": 100})),
            ("record", json!({"label": "third", "ms": 50})),
        ]),
        say("ok"),
    ]);
    let mut messages = Vec::new();
    run(&env, &script, LIMITS, &mut messages, "go", &Notes::default()).await;
    assert_eq!(env.probe.labels(), vec!["first", "second", "read", "third"]);
    let (_, first_end) = env.probe.span("first");
    let (second_start, second_end) = env.probe.span("second");
    let (read_start, read_end) = env.probe.span("read");
    let (third_start, _) = env.probe.span("third");
    assert!(first_end <= second_start && second_end <= read_start && read_end <= third_start);
    let texts: Vec<String> = results(&messages[2]).into_iter().map(|(t, _)| t).collect();
    assert_eq!(texts, vec!["done first", "done second", "done read", "done third"]);
}

#[tokio::test]
async fn max_steps_ends_the_turn_with_every_call_answered() {
    let env = env();
    let script =
        Script::new((0..5).map(|i| call("slow_read", json!({"label": format!("r{i}")}))).collect());
    let limits = Limits { max_steps: 3, ..LIMITS };
    let mut messages = Vec::new();
    let outcome = run(&env, &script, limits, &mut messages, "loop", &Notes::default()).await;
    assert_eq!(outcome.reason, EndReason::MaxSteps);
    assert_eq!(outcome.steps, 3);
    assert_eq!(script.requests().len(), 3);
    assert_eq!(env.probe.labels(), vec!["r0", "r1", "r2"]);
    assert_eq!(messages.last().unwrap().role, Role::User);
    assert_valid(&messages);
    // The next turn goes on from there: its user message joins the last results.
    let script2 = Script::new(vec![say("fine")]);
    let outcome = run(&env, &script2, LIMITS, &mut messages, "continue", &Notes::default()).await;
    assert_eq!(outcome.reason, EndReason::Completed);
    let request = &script2.requests()[0];
    let last = request.messages.last().unwrap();
    assert_eq!(last.role, Role::User);
    assert!(matches!(last.content.first(), Some(Block::ToolResult { .. })));
    assert_eq!(last.text(), "continue");
}

#[tokio::test]
async fn unknown_tools_and_bad_arguments_are_errors_the_model_sees() {
    let env = env();
    let script = Script::new(vec![
        calls(vec![
            ("reed_file", json!({"path": "x"})),
            ("read_file", json!({"path": 7})),
            ("read_file", json!("not an object")),
        ]),
        say("sorry"),
    ]);
    let mut messages = Vec::new();
    let outcome = run(&env, &script, LIMITS, &mut messages, "go", &Notes::default()).await;
    assert_eq!(outcome.reason, EndReason::Completed);
    let results = results(&messages[2]);
    assert!(results.iter().all(|(_, e)| *e), "{results:?}");
    assert!(results[0].0.contains("Unknown tool `reed_file`"), "{results:?}");
    assert!(results[1].0.contains("path"), "{results:?}");
}

#[tokio::test]
async fn abort_mid_bash_stops_the_process_and_keeps_the_transcript_valid() {
    let env = env();
    let script = Script::new(vec![
        call("bash", json!({"command": "echo $$ > pid.txt; exec sleep 30"})),
        say("never"),
    ]);
    let pid_file = env.root.path().join("pid.txt");
    let session = env.session.clone();
    let aborter = tokio::spawn(async move {
        while !std::fs::read_to_string(&pid_file).is_ok_and(|s| s.ends_with('\n')) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        session.abort();
        let pid: u32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
        pid
    });
    let started = Instant::now();
    let mut messages = Vec::new();
    let outcome = run(&env, &script, LIMITS, &mut messages, "sleep", &Notes::default()).await;
    let pid = aborter.await.unwrap();
    assert_eq!(outcome.reason, EndReason::Aborted);
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    assert_eq!(script.left(), 1, "no model call after the abort");
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists(), "sleep {pid} survived");
    assert_valid(&messages);
    let last = results(messages.last().unwrap());
    assert!(last[0].1 && last[0].0.contains("aborted"), "{last:?}");
    // The session goes on: a new turn on a fresh abort generation runs.
    let script2 = Script::new(vec![say("back")]);
    let mut next = messages.clone();
    let prompt = |_: Mode| String::new();
    let notes = Notes::default();
    let turn = Turn {
        provider: &script2,
        registry: &env.registry,
        session: &env.session,
        turn_id: "t2",
        cancel: env.session.cancel_token(),
        limits: LIMITS,
        prompt: &prompt,
        scope: ToolScope::Mode,
        call_prefix: None,
        observer: &notes,
        checkpoints: None,
    };
    assert_eq!(turn.run(&mut next, Message::user("again")).await.reason, EndReason::Completed);
}

#[tokio::test]
async fn abort_during_the_model_call_ends_promptly() {
    let env = env();
    let script = Script::new(vec![Step::Hang]);
    let session = env.session.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        session.abort();
    });
    let mut messages = Vec::new();
    let outcome = run(&env, &script, LIMITS, &mut messages, "think", &Notes::default()).await;
    assert_eq!(outcome.reason, EndReason::Aborted);
    assert_eq!(messages, vec![Message::user("think")]);
}

#[tokio::test]
async fn provider_errors_end_the_turn_with_advice() {
    let env = env();
    let script = Script::new(vec![Step::Fail(ProviderError::Auth("invalid x-api-key".into()))]);
    let mut messages = Vec::new();
    let outcome = run(&env, &script, LIMITS, &mut messages, "hi", &Notes::default()).await;
    assert_eq!(outcome.reason, EndReason::Error);
    let error = outcome.error.unwrap();
    assert!(error.contains("invalid x-api-key") && error.contains("api_key_env"), "{error}");
}

#[test]
fn a_rejected_request_says_what_the_provider_said_and_what_to_do() {
    let advice = |message: &str| {
        hands_agent::turn::provider_advice(&ProviderError::BadRequest {
            status: 400,
            message: message.into(),
        })
    };
    let credit = advice("Your credit balance is too low to access the Anthropic API.");
    assert!(credit.contains("Your credit balance is too low"), "{credit}");
    assert!(credit.contains("add credit") && !credit.contains("bug"), "{credit}");
    let quota =
        advice("You exceeded your current quota, please check your plan (insufficient_quota)");
    assert!(quota.contains("add credit or raise the plan's limit"), "{quota}");
    let model = advice("The model `gpt-9` does not exist or you do not have access to it.");
    assert!(model.contains("Check [model] model") && !model.contains("bug"), "{model}");
    let ours = advice("Could not parse the JSON body of your request.");
    assert!(ours.contains("report it as a bug in hands"), "{ours}");
    let other = advice("messages.0: tool_use ids must be unique");
    assert!(other.contains("tool_use ids must be unique"), "{other}");
    assert!(other.contains("says what it refused"), "{other}");
}

#[tokio::test]
async fn notices_ride_on_the_next_user_content() {
    let env = env();
    env.session.push_notice(hands_core::Notice::new(
        hands_core::NoticeKind::ProcessExited,
        "process p1 (npm test) exited with code 1",
    ));
    let script =
        Script::new(vec![call("slow_read", json!({"label": "x", "ms": 300})), say("seen")]);
    let session = env.session.clone();
    let notes = Notes::default();
    let mut messages = Vec::new();
    // A notice that arrives during the step goes with the next results.
    let outcome = {
        let fut = run(&env, &script, LIMITS, &mut messages, "status?", &notes);
        let pusher = async {
            while script.requests().is_empty() {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            session.push_notice(hands_core::Notice::new(
                hands_core::NoticeKind::ProcessExited,
                "process p2 exited with code 0",
            ));
        };
        let (outcome, ()) = tokio::join!(fut, pusher);
        outcome
    };
    assert_eq!(outcome.reason, EndReason::Completed);
    let requests = script.requests();
    let first = requests[0].messages.last().unwrap();
    assert_eq!(
        first.content,
        vec![
            Block::Text { text: "status?".into() },
            Block::Text { text: "[notice] process p1 (npm test) exited with code 1".into() },
        ]
    );
    let second = requests[1].messages.last().unwrap();
    let all: String = second
        .content
        .iter()
        .map(|b| match b {
            Block::Text { text } => text.clone(),
            other => result_text(other),
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert!(all.contains("process p2 exited with code 0"), "{second:?}");
    let lines = notes.lines();
    assert!(lines.contains(&"notice process p1 (npm test) exited with code 1".to_owned()));
}

#[tokio::test]
async fn old_tool_results_are_elided_near_the_context_window() {
    let env = env();
    std::fs::write(env.root.path().join("big.txt"), "x".repeat(8_000)).unwrap();
    // Window 20_000 tokens, elide at 0.8 → 16_000; the tools take ~6000, each read ~2000.
    let mut steps: Vec<Step> = (0..7)
        .map(|i| call("bash", json!({"command": format!("cat big.txt; echo ' {i}'")})))
        .collect();
    steps.push(say("done"));
    let script = Script::new(steps).with_window(20_000);
    let mut messages = Vec::new();
    let outcome = run(&env, &script, LIMITS, &mut messages, "read a lot", &Notes::default()).await;
    assert_eq!(outcome.reason, EndReason::Completed);
    let requests = script.requests();
    let elided = |req: &hands_agent::model::ModelRequest| -> Vec<bool> {
        req.messages
            .iter()
            .flat_map(|m| &m.content)
            .filter_map(|b| match b {
                Block::ToolResult { content, .. } => Some(matches!(
                    content.as_slice(),
                    [ResultPart::Text { text }] if text.starts_with("[elided to save context")
                )),
                _ => None,
            })
            .collect()
    };
    // Early requests fit; later ones have their oldest results elided, never the latest.
    assert_eq!(elided(&requests[1]), vec![false]);
    let last = elided(&requests[7]);
    assert_eq!(last.len(), 7);
    assert!(last[0], "the oldest result is elided: {last:?}");
    assert!(!last[6], "the latest result is never elided: {last:?}");
    let first_false = last.iter().position(|e| !e).unwrap();
    assert!(last[first_false..].iter().all(|e| !e), "oldest first: {last:?}");
    for request in &requests {
        let tokens = hands_agent::elide::request_tokens(request);
        assert!(tokens < 16_000, "a request of {tokens} tokens was sent");
    }
    let Block::ToolResult { content, .. } = &requests[7].messages[2].content[0] else { panic!() };
    let [ResultPart::Text { text }] = content.as_slice() else { panic!() };
    assert!(text.contains("call bash again"), "{text}");
}

#[tokio::test]
async fn plan_mode_offers_the_plan_tools_and_exit_plan_mode_brings_build_back() {
    let env = env();
    env.session.set_mode(Mode::Plan);
    let script = Script::new(vec![
        call("write_file", json!({"path": "a.txt", "content": "x"})),
        call("exit_plan_mode", json!({"plan": "1. write a.txt"})),
        call("write_file", json!({"path": "a.txt", "content": "x"})),
        say("written"),
    ]);
    let mut messages = Vec::new();
    let outcome = run(&env, &script, LIMITS, &mut messages, "plan it", &Notes::default()).await;
    assert_eq!(outcome.reason, EndReason::Completed);
    let requests = script.requests();
    let names =
        |i: usize| -> Vec<String> { requests[i].tools.iter().map(|t| t.name.clone()).collect() };
    assert!(names(0).contains(&"exit_plan_mode".to_owned()));
    assert!(!names(0).contains(&"write_file".to_owned()));
    assert_eq!(requests[0].system, "test prompt (plan)");
    let refused = results(&messages[2]);
    assert!(refused[0].1 && refused[0].0.contains("plan mode"), "{refused:?}");
    assert!(names(2).contains(&"write_file".to_owned()));
    assert_eq!(requests[2].system, "test prompt (build)");
    assert!(env.root.path().join("a.txt").exists());
}

/// Issue 12, item 2: the loop sends the registry's list as it is at each model call, so a tool
/// that appears mid-turn (a condition that now holds after a refresh) is in the next request and
/// callable.
#[tokio::test]
async fn the_next_model_request_carries_a_tool_that_appeared() {
    let gate = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let read = std::sync::Arc::clone(&gate);
    let probe = Probe::default();
    let registry: std::sync::Arc<Registry> = Registry::builder(CoreConfig::default())
        .conditions_with(move || {
            let mut conditions = hands_core::Conditions::default();
            if read.load(std::sync::atomic::Ordering::SeqCst) {
                conditions.env.insert("GATE".into(), "1".into());
            }
            conditions
        })
        .tool(Record(probe.clone()))
        .tool_if(|c| c.has_env("GATE"), SlowRead(probe.clone()))
        .build()
        .into();
    let root = tempfile::tempdir().unwrap();
    let env = Env {
        registry: std::sync::Arc::clone(&registry),
        probe,
        session: Session::new("s-live", root.path()),
        root,
    };
    let asked = std::sync::atomic::AtomicUsize::new(0);
    let script = Script::rule(move |_request| {
        match asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst) {
            0 => {
                // Between two model calls, a secret is stored and the front end refreshes.
                gate.store(true, std::sync::atomic::Ordering::SeqCst);
                assert!(registry.refresh());
                call("record", json!({"label": "first"}))
            }
            1 => call("slow_read", json!({"label": "gated", "ms": 1})),
            _ => say("done"),
        }
    });
    let mut messages = Vec::new();
    let outcome = run(&env, &script, LIMITS, &mut messages, "go", &Notes::default()).await;
    assert_eq!(outcome.reason, EndReason::Completed);
    let offered = |n: usize| -> Vec<String> {
        script.requests()[n].tools.iter().map(|t| t.name.clone()).collect()
    };
    assert_eq!(offered(0), ["record"]);
    assert_eq!(offered(1), ["record", "slow_read"]);
    let results = results(&messages[4]);
    assert_eq!(results, [("done gated".to_owned(), false)]);
    assert_eq!(env.probe.labels(), ["first", "gated"]);
}
