//! tests/agent/scripted_model.py, the fake model that the end-to-end tests put behind the real
//! `hands` binary, against hands' own providers: every kind of step decodes as intended in both
//! wire formats, the key check answers 401, and the request log holds what was sent.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use crate::provider_support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hands_agent::model::{
    Block, Message, ModelRequest, Provider, ProviderError, ResultPart, Role, StopReason, Usage,
};
use hands_agent::provider::{Anthropic, OpenAi, ProviderKind, ProviderOptions};
use provider_support::run;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const KEY: &str = "sk-scripted";

/// The running script; killed when dropped.
struct Scripted {
    child: Child,
    url: String,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Scripted {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Scripted {
    fn start(format: &str, script: &Value) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let script_path = dir.path().join("script.json");
        std::fs::write(&script_path, script.to_string()).unwrap();
        let port_file = dir.path().join("port");
        let log = dir.path().join("requests.jsonl");
        let program =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/agent/scripted_model.py");
        let mut child = Command::new("python3")
            .arg(&program)
            .args(["--format", format, "--port", "0", "--expect-key", KEY])
            .arg("--script")
            .arg(&script_path)
            .arg("--port-file")
            .arg(&port_file)
            .arg("--log")
            .arg(&log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("python3 runs tests/agent/scripted_model.py");
        let deadline = Instant::now() + Duration::from_secs(20);
        let port = loop {
            if let Ok(text) = std::fs::read_to_string(&port_file) {
                break text.trim().to_owned();
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!("scripted_model.py exited early: {status}");
            }
            assert!(Instant::now() < deadline, "scripted_model.py wrote no port file");
            std::thread::sleep(Duration::from_millis(20));
        };
        Self { child, url: format!("http://127.0.0.1:{port}"), log, _dir: dir }
    }

    fn logged(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

fn provider(kind: ProviderKind, url: &str, key: &str) -> Box<dyn Provider> {
    let mut options = provider_support::options(kind, url);
    options.api_key = Some(key.to_owned());
    options.retry.max_retries = 1;
    build(kind, options)
}

fn build(kind: ProviderKind, options: ProviderOptions) -> Box<dyn Provider> {
    match kind {
        ProviderKind::Anthropic => Box::new(Anthropic::new(options).unwrap()),
        ProviderKind::OpenAi => Box::new(OpenAi::new(options).unwrap()),
    }
}

fn tool(id: &str, name: &str, input: Value) -> Block {
    Block::ToolUse { id: id.into(), name: name.into(), input }
}

/// The same script and the same checks for both formats; `id` names the scripted tool call ids.
async fn drive(kind: ProviderKind, format: &str, base: &str, id: &str) {
    let script = json!([
        {"text": "Reading the file.", "tool_calls": [
            {"name": "read_file", "input": {"path": "src/main.rs"}},
            {"name": "grep", "input": {"pattern": "fn main", "include": "*.rs"}},
        ]},
        {"status": 429, "retry_after_ms": 300},
        {"text": "All done.", "chunk_delay_ms": 5, "usage": {"input_tokens": 42, "output_tokens": 7}},
        {"fixture": "parallel_tool_calls.sse"},
        {"delay_ms": 200, "text": "late", "stop_reason": if format == "openai" { "length" } else { "max_tokens" }},
        {"hang": true},
        {"status": 404},
    ]);
    let server = Scripted::start(format, &script);
    let url = format!("{}{base}", server.url);

    // A wrong key is refused and does not use up a step.
    let wrong = provider(kind, &url, "sk-wrong");
    let (result, _) = run(wrong.as_ref(), &provider_support::hello()).await;
    assert!(matches!(result.unwrap_err(), ProviderError::Auth(m) if m.contains("invalid API key")));

    let model = provider(kind, &url, KEY);
    let mut request = ModelRequest {
        system: "You are hands.".into(),
        messages: vec![Message::user("What does main do?")],
        max_tokens: 1000,
        ..ModelRequest::default()
    };
    let (result, deltas) = run(model.as_ref(), &request).await;
    let first = result.unwrap();
    assert_eq!(deltas, ["Reading ", "the ", "file."]);
    let calls = vec![
        tool(&format!("{id}_0000_0"), "read_file", json!({"path": "src/main.rs"})),
        tool(&format!("{id}_0000_1"), "grep", json!({"pattern": "fn main", "include": "*.rs"})),
    ];
    let mut content = vec![Block::Text { text: "Reading the file.".into() }];
    content.extend(calls);
    assert_eq!(first.message, Message { role: Role::Assistant, content });
    assert_eq!(
        (first.stop, first.usage),
        (StopReason::ToolUse, Usage { input_tokens: 10, output_tokens: 5 })
    );

    // The tool results go back; the 429 is retried after its retry-after-ms.
    request.messages.push(first.message);
    request.messages.push(Message {
        role: Role::User,
        content: vec![
            Block::ToolResult {
                tool_use_id: format!("{id}_0000_0"),
                content: vec![ResultPart::Text { text: "fn main() {}".into() }],
                is_error: false,
            },
            Block::ToolResult {
                tool_use_id: format!("{id}_0000_1"),
                content: vec![ResultPart::Text { text: "no matches".into() }],
                is_error: true,
            },
        ],
    });
    let started = Instant::now();
    let (result, deltas) = run(model.as_ref(), &request).await;
    let second = result.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(300), "{:?}", started.elapsed());
    assert_eq!(deltas, ["All ", "done."]);
    assert_eq!(second.message.text(), "All done.");
    assert_eq!(
        (second.stop, second.usage),
        (StopReason::EndTurn, Usage { input_tokens: 42, output_tokens: 7 })
    );

    // A fixture, as checked in.
    let (result, _) = run(model.as_ref(), &provider_support::hello()).await;
    let names: Vec<String> = result
        .unwrap()
        .message
        .content
        .iter()
        .filter_map(|b| match b {
            Block::ToolUse { name, .. } => Some(name.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(names, ["glob", "grep"]);

    // A delayed answer with another stop reason.
    let started = Instant::now();
    let (result, _) = run(model.as_ref(), &provider_support::hello()).await;
    let late = result.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(200));
    assert_eq!((late.message.text().as_str(), late.stop), ("late", StopReason::MaxTokens));

    // A hanging stream is abandoned at once when the call is cancelled.
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        canceller.cancel();
    });
    let started = Instant::now();
    let hello = provider_support::hello();
    assert_eq!(
        model.complete(&hello, &|_| {}, &cancel).await.unwrap_err(),
        ProviderError::Cancelled
    );
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());

    // A status step in the provider's own error format; then the script has run out.
    let (result, _) = run(model.as_ref(), &provider_support::hello()).await;
    assert!(matches!(result.unwrap_err(), ProviderError::UnknownModel(_)));
    let (result, _) = run(model.as_ref(), &provider_support::hello()).await;
    assert!(
        matches!(result.unwrap_err(), ProviderError::Server { status: 500, message } if message.contains("the script has 7"))
    );

    // Every request is in the log: wrong key, 1, 2 (429 + retry), fixture, late, hang, 404, 2 × past the end.
    let logged = server.logged();
    assert_eq!(logged.len(), 10, "{logged:#?}");
    assert!(logged.iter().all(|body| body["model"] == "test-model" && body["stream"] == true));
    let with_results = &logged[2];
    assert_eq!(with_results, &logged[3], "the retry sends the same body");
    let messages = with_results["messages"].as_array().unwrap();
    if kind == ProviderKind::Anthropic {
        assert_eq!(
            messages[2]["content"],
            json!([
                {"type": "tool_result", "tool_use_id": format!("{id}_0000_0"), "is_error": false,
                 "content": [{"type": "text", "text": "fn main() {}"}]},
                {"type": "tool_result", "tool_use_id": format!("{id}_0000_1"), "is_error": true,
                 "content": [{"type": "text", "text": "no matches"}]},
            ])
        );
    } else {
        assert_eq!(
            messages[3..],
            [
                json!({"role": "tool", "tool_call_id": format!("{id}_0000_0"), "content": "fn main() {}"}),
                json!({"role": "tool", "tool_call_id": format!("{id}_0000_1"), "content": "Error: no matches"}),
            ]
        );
    }
}

#[tokio::test]
async fn the_scripted_anthropic_server_speaks_the_messages_stream() {
    drive(ProviderKind::Anthropic, "anthropic", "", "toolu_scripted").await;
}

#[tokio::test]
async fn the_scripted_openai_server_speaks_chat_completions() {
    drive(ProviderKind::OpenAi, "openai", "/v1", "call_scripted").await;
}
