//! The host and the user: questions, approvals, plan mode, aborts, processes, sub-agents.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use crate::loop_support;

use hands_core::process::ProcessStatus;
use std::time::{Duration, Instant};

use hands_agent::event::EventKind;
use hands_agent::host::{AgentConfig, HostError};
use hands_agent::model::{Block, Role};
use hands_core::config::Approval;
use hands_core::{CoreConfig, Mode};
use hands_store::Store;
use loop_support::*;
use serde_json::json;

fn tool_result(fx: &Fixture, request: usize) -> String {
    let requests = fx.script.requests();
    let last = requests[request].messages.last().unwrap();
    assert_eq!(last.role, Role::User);
    last.content.iter().map(result_text).collect::<Vec<_>>().join("\n")
}

#[tokio::test]
async fn ask_user_is_answered_through_the_host() {
    let fx = Fixture::new(Script::new(vec![
        call("ask_user", json!({"question": "Which colour?", "options": ["red", "blue"]})),
        say("Blue it is."),
    ]))
    .await;
    let id = fx.session(Mode::Build).await;
    let mut sub = fx.host.subscribe(&id, 0).await.unwrap();
    assert!(matches!(fx.host.answer(Some(&id), None, "early".into()), Err(HostError::Conflict(_))));
    fx.host.post_message(&id, "paint it".into()).await.unwrap();
    let seen = until(&mut sub, |k| matches!(k, EventKind::Question { .. })).await;
    let EventKind::Question { question_id, question, options } = &seen.last().unwrap().kind else {
        panic!()
    };
    assert_eq!((question.as_str(), options.len()), ("Which colour?", 2));
    let info = fx.host.get_session(&id).await.unwrap();
    assert_eq!(info.pending_questions.len(), 1);
    assert_eq!(info.pending_questions[0]["question_id"], question_id.as_str());
    assert!(matches!(
        fx.host.answer(Some(&id), Some("other"), "x".into()),
        Err(HostError::Conflict(_))
    ));
    fx.host.answer(Some(&id), None, "blue".into()).unwrap();
    let rest = until(&mut sub, |k| matches!(k, EventKind::TurnEnded { .. })).await;
    assert!(rest.iter().any(
        |e| matches!(&e.kind, EventKind::QuestionAnswered { question_id: q } if q == question_id)
    ));
    assert_eq!(fx.host.wait_turn(&id).await.unwrap().as_deref(), Some("completed"));
    assert_eq!(tool_result(&fx, 1), "The user chose: blue");
    assert!(fx.host.get_session(&id).await.unwrap().pending_questions.is_empty());
}

#[tokio::test]
async fn questions_are_answered_host_wide_when_only_one_waits() {
    let fx =
        Fixture::new(Script::new(vec![call("ask_user", json!({"question": "Name?"})), say("ok")]))
            .await;
    let id = fx.session(Mode::Build).await;
    let mut sub = fx.host.subscribe(&id, 0).await.unwrap();
    fx.host.post_message(&id, "ask me".into()).await.unwrap();
    until(&mut sub, |k| matches!(k, EventKind::Question { .. })).await;
    fx.host.answer(None, None, "Ada".into()).unwrap();
    fx.host.wait_turn(&id).await.unwrap();
    assert_eq!(tool_result(&fx, 1), "The user answered: Ada");
}

async fn approval_fixture(steps: Vec<Step>) -> (Fixture, String, Subscription) {
    let core = CoreConfig { approval: Approval::Ask, ..CoreConfig::default() };
    let fx = Fixture::with(Script::new(steps), core, AgentConfig::default()).await;
    let id = fx.session(Mode::Build).await;
    let sub = fx.host.subscribe(&id, 0).await.unwrap();
    (fx, id, sub)
}

use hands_agent::host::Subscription;
use hands_core::approval::Decision;

#[tokio::test]
async fn an_approved_call_runs() {
    let (fx, id, mut sub) = approval_fixture(vec![
        call("write_file", json!({"path": "ok.txt", "content": "yes"})),
        say("done"),
    ])
    .await;
    fx.host.post_message(&id, "write".into()).await.unwrap();
    let seen = until(&mut sub, |k| matches!(k, EventKind::ApprovalRequested { .. })).await;
    let EventKind::ApprovalRequested { approval_id, tool, summary, .. } =
        &seen.last().unwrap().kind
    else {
        panic!()
    };
    assert_eq!(tool, "write_file");
    assert!(summary.contains("ok.txt"), "{summary}");
    let info = fx.host.get_session(&id).await.unwrap();
    assert_eq!(info.pending_approvals[0]["approval_id"], approval_id.as_str());
    assert!(matches!(fx.host.decide(&id, "nope", true, None), Err(HostError::Conflict(_))));
    fx.host.decide(&id, approval_id, true, None).unwrap();
    let rest = until(&mut sub, |k| matches!(k, EventKind::TurnEnded { .. })).await;
    assert!(rest.iter().any(|e| matches!(
        &e.kind,
        EventKind::ApprovalDecided { approved: true, approval_id: a, .. } if a == approval_id
    )));
    assert_eq!(std::fs::read_to_string(fx.root.path().join("ok.txt")).unwrap(), "yes");
    assert!(matches!(fx.host.decide(&id, approval_id, true, None), Err(HostError::Conflict(_))));
}

#[tokio::test]
async fn a_tool_allowed_for_the_session_runs_again_without_a_question() {
    let (fx, id, mut sub) = approval_fixture(vec![
        call("write_file", json!({"path": "a.txt", "content": "a"})),
        call("write_file", json!({"path": "b.txt", "content": "b"})),
        say("done"),
    ])
    .await;
    fx.host.post_message(&id, "write two".into()).await.unwrap();
    let seen = until(&mut sub, |k| matches!(k, EventKind::ApprovalRequested { .. })).await;
    let EventKind::ApprovalRequested { approval_id, session_allowable, .. } =
        &seen.last().unwrap().kind
    else {
        panic!()
    };
    assert!(session_allowable, "a write may be allowed for the session");
    fx.host.decide_with(&id, approval_id, Decision::ApproveForSession).unwrap();
    let rest = until(&mut sub, |k| matches!(k, EventKind::TurnEnded { .. })).await;
    assert!(rest.iter().any(|e| matches!(
        &e.kind,
        EventKind::ApprovalDecided { approved: true, for_session: true, .. }
    )));
    let asked = rest.iter().filter(|e| matches!(e.kind, EventKind::ApprovalRequested { .. }));
    assert_eq!(asked.count(), 0, "the second write was not asked about: {rest:#?}");
    assert_eq!(std::fs::read_to_string(fx.root.path().join("b.txt")).unwrap(), "b");
}

#[tokio::test]
async fn a_cut_summary_is_followed_by_the_whole_command() {
    let command = format!("echo {} && touch tail-runs-too.txt", "x".repeat(400));
    let (fx, id, mut sub) =
        approval_fixture(vec![call("bash", json!({"command": command})), say("ok")]).await;
    fx.host.post_message(&id, "run".into()).await.unwrap();
    let seen = until(&mut sub, |k| matches!(k, EventKind::ApprovalRequested { .. })).await;
    let EventKind::ApprovalRequested { approval_id, summary, details, .. } =
        &seen.last().unwrap().kind
    else {
        panic!()
    };
    assert!(!summary.contains("tail-runs-too"), "the summary is cut: {summary}");
    assert_eq!(details.as_deref(), Some(command.as_str()));
    let info = fx.host.get_session(&id).await.unwrap();
    assert_eq!(info.pending_approvals[0]["details"], command.as_str());
    fx.host.decide(&id, approval_id, false, None).unwrap();
    fx.host.wait_turn(&id).await.unwrap();
}

#[tokio::test]
async fn a_denied_call_does_not_run_and_the_model_gets_the_reason() {
    let (fx, id, mut sub) = approval_fixture(vec![
        call("bash", json!({"command": "touch ran.txt"})),
        say("understood"),
    ])
    .await;
    fx.host.post_message(&id, "run".into()).await.unwrap();
    let seen = until(&mut sub, |k| matches!(k, EventKind::ApprovalRequested { .. })).await;
    let EventKind::ApprovalRequested { approval_id, .. } = &seen.last().unwrap().kind else {
        panic!()
    };
    fx.host.decide(&id, approval_id, false, Some("not on my machine".into())).unwrap();
    assert_eq!(fx.host.wait_turn(&id).await.unwrap().as_deref(), Some("completed"));
    assert!(!fx.root.path().join("ran.txt").exists());
    let result = tool_result(&fx, 1);
    assert!(result.contains("not on my machine"), "{result}");
}

#[tokio::test]
async fn plan_then_exit_plan_mode_then_build() {
    let (fx, id, mut sub) = approval_fixture(vec![
        call("read_file", json!({"path": "."})),
        call("exit_plan_mode", json!({"plan": "1. create main.rs"})),
        call("write_file", json!({"path": "main.rs", "content": "fn main() {}\n"})),
        say("Built it."),
    ])
    .await;
    // Re-create the session in plan mode.
    fx.host.delete_session(&id).await.unwrap();
    drop(sub);
    let id = fx.session(Mode::Plan).await;
    sub = fx.host.subscribe(&id, 0).await.unwrap();
    fx.host.post_message(&id, "add a main".into()).await.unwrap();
    // exit_plan_mode asks for approval of the plan under approval = "ask".
    let seen = until(&mut sub, |k| matches!(k, EventKind::ApprovalRequested { .. })).await;
    let EventKind::ApprovalRequested { approval_id, tool, summary, session_allowable, .. } =
        &seen.last().unwrap().kind
    else {
        panic!()
    };
    assert_eq!(tool, "exit_plan_mode");
    assert!(!session_allowable, "a plan is approved each time");
    assert!(summary.contains("create main.rs"), "{summary}");
    fx.host.decide(&id, approval_id, true, None).unwrap();
    // write_file needs approval too.
    let seen = until(&mut sub, |k| matches!(k, EventKind::ApprovalRequested { .. })).await;
    let EventKind::ApprovalRequested { approval_id, .. } = &seen.last().unwrap().kind else {
        panic!()
    };
    fx.host.decide(&id, approval_id, true, None).unwrap();
    assert_eq!(fx.host.wait_turn(&id).await.unwrap().as_deref(), Some("completed"));
    let events = fx.events(&id).await;
    assert!(
        events
            .iter()
            .any(|e| matches!(&e.kind, EventKind::ModeChanged { mode } if *mode == hands_core::Mode::Build)),
        "{events:#?}"
    );
    let requests = fx.script.requests();
    let offered = |i: usize, name: &str| requests[i].tools.iter().any(|t| t.name == name);
    assert!(!offered(0, "write_file") && offered(0, "exit_plan_mode"));
    assert!(requests[0].system.contains("Mode: plan"));
    assert!(offered(2, "write_file") && !offered(2, "exit_plan_mode"));
    assert!(requests[2].system.contains("Mode: build"));
    assert!(fx.root.path().join("main.rs").exists());
    assert_eq!(fx.store.get_session(&id).await.unwrap().mode, "build");
}

#[tokio::test]
async fn abort_mid_bash_ends_the_turn_and_stops_the_process() {
    let fx = Fixture::new(Script::new(vec![
        call("bash", json!({"command": "echo $$ > pid.txt; exec sleep 60"})),
        say("never"),
    ]))
    .await;
    let id = fx.session(Mode::Build).await;
    fx.host.post_message(&id, "sleep".into()).await.unwrap();
    let pid_file = fx.root.path().join("pid.txt");
    within(10, async {
        while !std::fs::read_to_string(&pid_file).is_ok_and(|s| s.ends_with('\n')) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let pid = std::fs::read_to_string(&pid_file).unwrap().trim().to_owned();
    let started = Instant::now();
    fx.host.abort_session(&id).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(8), "{:?}", started.elapsed());
    assert_eq!(fx.host.wait_turn(&id).await.unwrap().as_deref(), Some("aborted"));
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists(), "sleep {pid} survived");
    let transcript = fx.host.transcript(&id).await.unwrap();
    assert_valid(&transcript);
    let last = transcript.last().unwrap();
    assert!(matches!(&last.content[0], Block::ToolResult { is_error: true, .. }));
    let events = fx.events(&id).await;
    assert!(matches!(
        &events.last().unwrap().kind,
        EventKind::TurnEnded { reason, .. } if reason == "aborted"
    ));
    assert_eq!(fx.store.turns(&id).await.unwrap()[0].status, "aborted");
    // The session goes on.
    fx.script.push(say("back"));
    assert_eq!(fx.turn(&id, "hello?").await, "completed");
}

#[tokio::test]
async fn abort_project_stops_the_background_processes_of_its_sessions() {
    let fx = Fixture::new(Script::new(Vec::new())).await;
    assert_eq!(fx.host.abort_project("idle").await.unwrap(), 0);
    let id = fx.session(Mode::Build).await;
    let other = fx.session(Mode::Build).await;
    let out = fx
        .host
        .call_tool(
            &id,
            None,
            "spawn_process",
            json!({
                "command": "echo $$ > daemon.pid; echo ready; exec sleep 120",
                "type": "daemon",
                "name": "sleeper",
                "ready_pattern": "ready"
            }),
        )
        .await
        .unwrap();
    assert!(!out.is_error, "{out:?}");
    let list = fx.host.list_processes(&id).await.unwrap();
    assert_eq!(list.processes.len(), 1, "{list:?}");
    assert_eq!(list.processes[0].status, ProcessStatus::Running);
    assert!(fx.host.list_processes(&other).await.unwrap().processes.is_empty());
    let pid = std::fs::read_to_string(fx.root.path().join("daemon.pid")).unwrap().trim().to_owned();
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());

    // Both sessions are aborted; only `id` had something running (the other is idle).
    assert_eq!(fx.host.abort_project("proj").await.unwrap(), 1);
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists(), "daemon {pid} survived");
    let list = fx.host.list_processes(&id).await.unwrap();
    assert_ne!(list.processes[0].status, ProcessStatus::Running, "{list:?}");
}

#[tokio::test]
async fn processes_are_listed_and_stopped_through_the_process_service() {
    let fx = Fixture::new(Script::new(Vec::new())).await;
    let id = fx.session(Mode::Build).await;
    fx.host
        .call_tool(
            &id,
            None,
            "spawn_process",
            json!({"command": "echo ready; exec sleep 120", "type": "daemon", "ready_pattern": "ready"}),
        )
        .await
        .unwrap();
    let list = fx.host.list_processes(&id).await.unwrap();
    let pid = list.processes[0].id.clone();
    let stopped = fx.host.stop_process(&id, &pid).await.unwrap();
    assert!(stopped.text.contains("Stopped"), "{stopped:?}");
    let missing = fx.host.stop_process(&id, "p99").await;
    assert!(matches!(missing, Err(HostError::NotFound(_))), "{missing:?}");
    let list = fx.host.list_processes(&id).await.unwrap();
    assert_eq!(list.processes[0].status, ProcessStatus::Stopped);
}

#[tokio::test]
async fn a_sub_agent_researches_with_read_only_tools() {
    let fx = Fixture::new(Script::new(vec![
        // The parent hands the task over.
        call("spawn_subagent", json!({"prompt": "What does secret.txt say?"})),
        // The sub-agent tries to write (refused), then reads.
        calls(vec![
            ("write_file", json!({"path": "x.txt", "content": "no"})),
            ("read_file", json!({"path": "secret.txt"})),
        ]),
        say("Report: secret.txt says 42."),
        // The parent answers.
        say("The answer is 42."),
    ]))
    .await;
    std::fs::write(fx.root.path().join("secret.txt"), "42\n").unwrap();
    let id = fx.session(Mode::Build).await;
    assert_eq!(fx.turn(&id, "research").await, "completed");
    let requests = fx.script.requests();
    assert_eq!(requests.len(), 4);
    // The parent's request offers spawn_subagent; the sub-agent's only the read-only tools.
    assert!(requests[0].tools.iter().any(|t| t.name == "spawn_subagent"));
    let sub_tools: Vec<&str> = requests[1].tools.iter().map(|t| t.name.as_str()).collect();
    assert!(sub_tools.contains(&"read_file") && sub_tools.contains(&"grep"), "{sub_tools:?}");
    for forbidden in ["write_file", "bash", "spawn_subagent", "ask_user", "exit_plan_mode"] {
        assert!(!sub_tools.contains(&forbidden), "{forbidden} offered to the sub-agent");
    }
    assert!(requests[1].system.contains("sub-agent"));
    assert_eq!(requests[1].messages.len(), 1, "the sub-agent does not see the conversation");
    let sub_results = requests[2].messages.last().unwrap();
    let texts: Vec<String> = sub_results.content.iter().map(result_text).collect();
    assert!(texts[0].contains("not available"), "{texts:?}");
    assert!(texts[1].contains("42"), "{texts:?}");
    assert!(!fx.root.path().join("x.txt").exists());
    assert_eq!(
        tool_result(&fx, 3),
        "Report: secret.txt says 42.\n[sub-agent model: the one configured for hands]"
    );
    // Only the parent's call is in the session's events and records.
    let calls = fx.store.tool_calls(&id).await.unwrap();
    assert_eq!(calls.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), vec!["spawn_subagent"]);
}

#[tokio::test]
async fn a_sub_agent_without_a_model_says_so() {
    let probe = Probe::default();
    let registry = registry_with(CoreConfig::default(), &probe);
    let session = hands_core::Session::new("s", std::env::temp_dir());
    let out = registry
        .dispatch(
            &session,
            hands_core::ToolCall::new("c1", "spawn_subagent", json!({"prompt": "look around"})),
        )
        .await
        .unwrap();
    assert!(out.is_error && out.joined_text().contains("needs a model"), "{out:?}");
}

/// Issue 12, item 2: the session API hears of a tool that appears or goes while a session runs
/// (`tools_changed`, with the names the session's mode offers), and of nothing when a refresh
/// changes nothing.
#[tokio::test]
async fn a_tool_that_appears_or_goes_is_a_tools_changed_event() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let gate = Arc::new(AtomicBool::new(false));
    let read = Arc::clone(&gate);
    let probe = Probe::default();
    let registry: Arc<hands_core::Registry> = hands_core::Registry::builder(CoreConfig::default())
        .conditions_with(move || {
            let mut conditions = hands_core::Conditions::default();
            if read.load(Ordering::SeqCst) {
                conditions.env.insert("GATE".into(), "1".into());
            }
            conditions
        })
        .tool(Record(probe.clone()))
        .tool_if(|c| c.has_env("GATE"), SlowRead(probe))
        .build()
        .into();
    let host = hands_agent::host::Host::open(hands_agent::host::HostParts {
        store: Arc::new(hands_store::MemoryStore::new()),
        registry: Arc::clone(&registry),
        provider: None,
        config: AgentConfig::default(),
        checkpoints: hands_checkpoint::Settings { enabled: false, ..Default::default() },
    })
    .await
    .unwrap();
    let root = tempfile::tempdir().unwrap();
    let id = host
        .create_session(hands_agent::host::NewSession {
            id: None,
            project_id: Some("proj".into()),
            root: root.path().to_owned(),
            mode: Mode::Build,
            title: None,
        })
        .await
        .unwrap()
        .id;
    let mut sub = host.subscribe(&id, 0).await.unwrap();
    let is_tools = |k: &EventKind| matches!(k, EventKind::ToolsChanged { .. });

    assert!(!registry.refresh(), "nothing changed yet");
    gate.store(true, Ordering::SeqCst);
    assert!(registry.refresh());
    let seen = until(&mut sub, is_tools).await;
    let EventKind::ToolsChanged { version, tools } = &seen.last().unwrap().kind else {
        unreachable!()
    };
    assert_eq!(tools, &["record", "slow_read"]);
    assert_eq!(*version, registry.version());

    gate.store(false, Ordering::SeqCst);
    assert!(registry.refresh());
    let seen = until(&mut sub, is_tools).await;
    let EventKind::ToolsChanged { tools, .. } = &seen.last().unwrap().kind else { unreachable!() };
    assert_eq!(tools, &["record"]);
    // Exactly two announcements: the refresh that changed nothing said nothing.
    let all = host.subscribe(&id, 0).await.unwrap().replay;
    assert_eq!(all.iter().filter(|e| is_tools(&e.kind)).count(), 2, "{all:?}");
}
