//! The Anthropic provider against a fake server: every fixture decodes to the exact response, the
//! request goes out in the exact wire shape, and errors, retries and cancellation behave.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use crate::provider_support;

use std::time::{Duration, Instant};

use hands_agent::model::{
    Block, Message, ModelRequest, ModelResponse, Provider, ProviderError, ResultPart, Role,
    StopReason, ToolDef, Usage,
};
use hands_agent::provider::{Anthropic, ProviderKind};
use provider_support::{Reply, Server, hello, options, run};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn provider(server: &Server) -> Anthropic {
    Anthropic::new(options(ProviderKind::Anthropic, &server.url)).unwrap()
}

fn assistant(content: Vec<Block>, stop: StopReason, input: u64, output: u64) -> ModelResponse {
    ModelResponse {
        message: Message { role: Role::Assistant, content },
        stop,
        usage: Usage { input_tokens: input, output_tokens: output },
    }
}

fn text(t: &str) -> Block {
    Block::Text { text: t.into() }
}

fn tool(id: &str, name: &str, input: serde_json::Value) -> Block {
    Block::ToolUse { id: id.into(), name: name.into(), input }
}

async fn decode(name: &str) -> (Result<ModelResponse, ProviderError>, Vec<String>, usize) {
    let server = Server::start(vec![Reply::fixture("anthropic", name)]).await;
    let (result, deltas) = run(&provider(&server), &hello()).await;
    (result, deltas, server.received().len())
}

#[tokio::test]
async fn text_streams_in_order_and_assembles() {
    let (result, deltas, _) = decode("text.sse").await;
    assert_eq!(deltas, ["Hello", "! How can I", " help you today?"]);
    assert_eq!(
        result.unwrap(),
        assistant(vec![text("Hello! How can I help you today?")], StopReason::EndTurn, 25, 12)
    );
}

#[tokio::test]
async fn one_tool_call_accumulates_its_partial_json() {
    let (result, deltas, _) = decode("tool_call.sse").await;
    assert!(deltas.is_empty());
    assert_eq!(
        result.unwrap(),
        assistant(
            vec![tool(
                "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
                "read_file",
                json!({"path": "src/main.rs", "limit": 40})
            )],
            StopReason::ToolUse,
            472,
            54
        )
    );
}

#[tokio::test]
async fn parallel_tool_calls_keep_their_order() {
    let (result, _, _) = decode("parallel_tool_calls.sse").await;
    assert_eq!(
        result.unwrap(),
        assistant(
            vec![
                tool("toolu_01A", "glob", json!({"pattern": "**/*.toml"})),
                tool("toolu_01B", "grep", json!({"pattern": "fn main", "include": "*.rs"})),
            ],
            StopReason::ToolUse,
            610,
            97
        )
    );
}

#[tokio::test]
async fn text_then_a_tool_call() {
    let (result, deltas, _) = decode("text_then_tool_call.sse").await;
    assert_eq!(deltas, ["Okay", ", let me run", " the tests."]);
    assert_eq!(
        result.unwrap(),
        assistant(
            vec![
                text("Okay, let me run the tests."),
                tool(
                    "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
                    "bash",
                    json!({"command": "cargo test -q", "timeout": 120000})
                ),
            ],
            StopReason::ToolUse,
            472,
            89
        )
    );
}

#[tokio::test]
async fn usage_counts_cached_prompt_tokens_and_thinking_is_skipped() {
    let (result, deltas, _) = decode("usage.sse").await;
    assert_eq!(deltas, ["1. one\n2. two\n3."], "thinking deltas are not passed on as text");
    assert_eq!(
        result.unwrap(),
        assistant(vec![text("1. one\n2. two\n3.")], StopReason::MaxTokens, 12 + 2048 + 30000, 16)
    );
}

#[tokio::test]
async fn an_error_event_after_text_fails_without_retrying() {
    let (result, deltas, requests) = decode("error_mid_stream.sse").await;
    assert_eq!(deltas, ["Let me"]);
    assert_eq!(
        result.unwrap_err(),
        ProviderError::Server { status: 529, message: "Overloaded".into() }
    );
    assert_eq!(requests, 1, "text was passed on: no retry");
}

#[tokio::test]
async fn an_error_event_before_any_text_is_retried() {
    let server = Server::start(vec![
        Reply::fixture("anthropic", "overloaded_before_text.sse"),
        Reply::fixture("anthropic", "text.sse"),
    ])
    .await;
    let (result, deltas) = run(&provider(&server), &hello()).await;
    assert_eq!(result.unwrap().message.text(), "Hello! How can I help you today?");
    assert_eq!(deltas.concat(), "Hello! How can I help you today?");
    assert_eq!(server.received().len(), 2);
}

#[tokio::test]
async fn malformed_sse_is_a_protocol_error() {
    let (result, deltas, requests) = decode("malformed.sse").await;
    assert!(deltas.is_empty());
    assert!(
        matches!(result.unwrap_err(), ProviderError::Protocol(m) if m.contains("not the expected JSON"))
    );
    assert_eq!(requests, 1, "a malformed stream is not retried");
}

#[tokio::test]
async fn a_stream_cut_off_before_text_is_retried_then_reported() {
    let start = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1}}}\n\n";
    let server = Server::start(vec![Reply::Cut { body: start.into() }; 3]).await;
    let (result, _) = run(&provider(&server), &hello()).await;
    assert!(matches!(result.unwrap_err(), ProviderError::Transport(_)));
    assert_eq!(server.received().len(), 3, "1 attempt + 2 retries");
}

#[tokio::test]
async fn the_request_has_the_exact_wire_shape() {
    let server = Server::start(vec![Reply::fixture("anthropic", "text.sse")]).await;
    let mut opts = options(ProviderKind::Anthropic, &server.url);
    opts.headers = vec![("anthropic-beta".into(), "context-1m-2025-08-07".into())];
    let provider = Anthropic::new(opts).unwrap();
    let request = ModelRequest {
        system: "You are hands.".into(),
        messages: vec![
            Message {
                role: Role::User,
                content: vec![
                    text("What is in shot.png?"),
                    Block::Image { media_type: "image/png".into(), data: "iVBORw0KGgo=".into() },
                ],
            },
            Message {
                role: Role::Assistant,
                content: vec![
                    text("Reading it."),
                    tool("toolu_1", "read_file", json!({"path": "shot.png"})),
                    tool("toolu_2", "bash", json!({"command": "false"})),
                ],
            },
            Message {
                role: Role::User,
                content: vec![
                    Block::ToolResult {
                        tool_use_id: "toolu_1".into(),
                        content: vec![
                            ResultPart::Text { text: "shot.png (PNG, 10 bytes)".into() },
                            ResultPart::Image {
                                media_type: "image/png".into(),
                                data: "iVBORw0KGgo=".into(),
                            },
                        ],
                        is_error: false,
                    },
                    Block::ToolResult {
                        tool_use_id: "toolu_2".into(),
                        content: vec![ResultPart::Text { text: "exit code 1".into() }],
                        is_error: true,
                    },
                ],
            },
        ],
        tools: vec![ToolDef {
            name: "read_file".into(),
            description: "Read a file.".into(),
            input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        }],
        max_tokens: 4096,
    };
    let (result, _) = run(&provider, &request).await;
    result.unwrap();
    let received = server.received();
    assert_eq!(received.len(), 1);
    let got = &received[0];
    assert_eq!((got.method.as_str(), got.path.as_str()), ("POST", "/v1/messages"));
    assert_eq!(got.headers["x-api-key"], "test-key");
    assert_eq!(got.headers["anthropic-version"], "2023-06-01");
    assert_eq!(got.headers["content-type"], "application/json");
    assert_eq!(got.headers["anthropic-beta"], "context-1m-2025-08-07");
    let png = json!({"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="});
    assert_eq!(
        got.body,
        json!({
            "model": "test-model",
            "max_tokens": 4096,
            "stream": true,
            "system": "You are hands.",
            "messages": [
                {"role": "user", "content": [
                    {"type": "text", "text": "What is in shot.png?"},
                    {"type": "image", "source": png},
                ]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Reading it."},
                    {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "shot.png"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "bash", "input": {"command": "false"}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": false, "content": [
                        {"type": "text", "text": "shot.png (PNG, 10 bytes)"},
                        {"type": "image", "source": png},
                    ]},
                    {"type": "tool_result", "tool_use_id": "toolu_2", "is_error": true, "content": [
                        {"type": "text", "text": "exit code 1"},
                    ]},
                ]},
            ],
            "tools": [{
                "name": "read_file",
                "description": "Read a file.",
                "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
            }],
        })
    );
}

#[tokio::test]
async fn a_base_url_ending_in_v1_is_not_doubled() {
    let server = Server::start(vec![Reply::fixture("anthropic", "text.sse")]).await;
    let provider =
        Anthropic::new(options(ProviderKind::Anthropic, &format!("{}/v1/", server.url))).unwrap();
    run(&provider, &hello()).await.0.unwrap();
    assert_eq!(server.received()[0].path, "/v1/messages");
}

#[tokio::test]
async fn a_429_waits_what_retry_after_says_then_succeeds() {
    let limited = r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}"#;
    let server = Server::start(vec![
        Reply::status(429, limited).header("retry-after", "1"),
        Reply::fixture("anthropic", "text.sse"),
    ])
    .await;
    let started = Instant::now();
    let (result, deltas) = run(&provider(&server), &hello()).await;
    assert_eq!(result.unwrap().message.text(), "Hello! How can I help you today?");
    assert_eq!(deltas.len(), 3);
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "retry-after honoured: {:?}",
        started.elapsed()
    );
    assert_eq!(server.received().len(), 2);
}

#[tokio::test]
async fn a_429_that_persists_is_rate_limited_with_the_wait() {
    let limited = r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#;
    let server =
        Server::start(vec![Reply::status(429, limited).header("retry-after-ms", "20"); 3]).await;
    let (result, _) = run(&provider(&server), &hello()).await;
    assert_eq!(
        result.unwrap_err(),
        ProviderError::RateLimited {
            retry_after: Some(Duration::from_millis(20)),
            message: "slow down".into()
        }
    );
    assert_eq!(server.received().len(), 3);
}

#[tokio::test]
async fn overloaded_529_and_503_are_retried_until_max_retries() {
    let overloaded =
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let server = Server::start(vec![
        Reply::status(529, overloaded),
        Reply::status(503, "upstream down"),
        Reply::status(503, "upstream down"),
    ])
    .await;
    let (result, _) = run(&provider(&server), &hello()).await;
    assert_eq!(
        result.unwrap_err(),
        ProviderError::Server { status: 503, message: "upstream down".into() }
    );
    assert_eq!(server.received().len(), 3, "1 attempt + max_retries (2)");
}

#[tokio::test]
async fn max_retries_zero_tries_once() {
    let server =
        Server::start(vec![Reply::status(503, "down"), Reply::fixture("anthropic", "text.sse")])
            .await;
    let mut opts = options(ProviderKind::Anthropic, &server.url);
    opts.retry.max_retries = 0;
    let (result, _) = run(&Anthropic::new(opts).unwrap(), &hello()).await;
    assert!(matches!(result.unwrap_err(), ProviderError::Server { status: 503, .. }));
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn a_401_is_auth_and_names_the_key_variable() {
    let body =
        r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#;
    let server = Server::start(vec![Reply::status(401, body)]).await;
    let (result, _) = run(&provider(&server), &hello()).await;
    assert_eq!(
        result.unwrap_err(),
        ProviderError::Auth(
            "invalid x-api-key (HTTP 401; the key is read from TEST_API_KEY)".into()
        )
    );
    assert_eq!(server.received().len(), 1, "not retried");
}

#[tokio::test]
async fn a_404_is_an_unknown_model() {
    let body =
        r#"{"type":"error","error":{"type":"not_found_error","message":"model: test-model"}}"#;
    let server = Server::start(vec![Reply::status(404, body)]).await;
    let (result, _) = run(&provider(&server), &hello()).await;
    let err = result.unwrap_err();
    assert_eq!(
        err,
        ProviderError::UnknownModel(format!(
            "test-model (model: test-model; HTTP 404 from {}/v1/messages)",
            server.url
        ))
    );
    assert!(err.to_string().starts_with("the model provider does not know this model: test-model"));
}

#[tokio::test]
async fn a_prompt_too_long_is_a_context_overflow() {
    let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"}}"#;
    let server = Server::start(vec![Reply::status(400, body)]).await;
    let (result, _) = run(&provider(&server), &hello()).await;
    assert_eq!(
        result.unwrap_err(),
        ProviderError::ContextOverflow("prompt is too long: 208310 tokens > 200000 maximum".into())
    );
}

#[tokio::test]
async fn another_400_is_a_bad_request_with_the_providers_message() {
    let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"tools.0.name: String should match pattern"}}"#;
    let server = Server::start(vec![Reply::status(400, body)]).await;
    let (result, _) = run(&provider(&server), &hello()).await;
    assert_eq!(
        result.unwrap_err(),
        ProviderError::BadRequest {
            status: 400,
            message: "tools.0.name: String should match pattern".into()
        }
    );
}

#[tokio::test]
async fn a_refused_connection_is_a_transport_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let provider = Anthropic::new(options(ProviderKind::Anthropic, &url)).unwrap();
    let (result, _) = run(&provider, &hello()).await;
    let err = result.unwrap_err();
    assert!(
        matches!(&err, ProviderError::Transport(m) if m.to_lowercase().contains("connect")),
        "{err:?}"
    );
}

#[tokio::test]
async fn cancelling_mid_stream_returns_cancelled_quickly() {
    let server = Server::start(vec![Reply::Hang]).await;
    let provider = provider(&server);
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        canceller.cancel();
    });
    let started = Instant::now();
    let request = hello();
    let result = provider.complete(&request, &|_| {}, &cancel).await;
    assert_eq!(result.unwrap_err(), ProviderError::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
}

#[tokio::test]
async fn cancelling_during_a_retry_wait_returns_at_once() {
    let server = Server::start(vec![Reply::status(429, "{}").header("retry-after", "4")]).await;
    let provider = provider(&server);
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        canceller.cancel();
    });
    let started = Instant::now();
    let request = hello();
    let result = provider.complete(&request, &|_| {}, &cancel).await;
    assert_eq!(result.unwrap_err(), ProviderError::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
}
