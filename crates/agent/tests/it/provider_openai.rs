//! The OpenAI-compatible provider against a fake server: every fixture decodes to the exact
//! response, the request goes out in the exact wire shape (tool messages with tool_call_id, images
//! as data URLs), and errors, retries and cancellation behave.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use crate::provider_support;

use std::time::{Duration, Instant};

use hands_agent::model::{
    Block, Message, ModelRequest, ModelResponse, Provider, ProviderError, ResultPart, Role,
    StopReason, ToolDef, Usage,
};
use hands_agent::provider::{OpenAi, ProviderKind};
use provider_support::{Reply, Server, hello, options, run};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn provider(server: &Server) -> OpenAi {
    OpenAi::new(options(ProviderKind::OpenAi, &format!("{}/v1", server.url))).unwrap()
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
    let server = Server::start(vec![Reply::fixture("openai", name)]).await;
    let (result, deltas) = run(&provider(&server), &hello()).await;
    (result, deltas, server.received().len())
}

#[tokio::test]
async fn text_streams_in_order_and_assembles() {
    let (result, deltas, _) = decode("text.sse").await;
    assert_eq!(deltas, ["Hello", "! How can I", " help you today?"]);
    assert_eq!(
        result.unwrap(),
        assistant(vec![text("Hello! How can I help you today?")], StopReason::EndTurn, 19, 10)
    );
}

#[tokio::test]
async fn one_tool_call_accumulates_its_arguments() {
    let (result, deltas, _) = decode("tool_call.sse").await;
    assert!(deltas.is_empty());
    assert_eq!(
        result.unwrap(),
        assistant(
            vec![tool(
                "call_DdmO9pD3xa9XTPNJ32zg2hcA",
                "read_file",
                json!({"path": "src/main.rs", "limit": 40})
            )],
            StopReason::ToolUse,
            312,
            22
        )
    );
}

#[tokio::test]
async fn parallel_tool_calls_are_kept_apart_by_index() {
    let (result, _, _) = decode("parallel_tool_calls.sse").await;
    assert_eq!(
        result.unwrap(),
        assistant(
            vec![
                tool("call_A1", "glob", json!({"pattern": "**/*.toml"})),
                tool("call_B2", "grep", json!({"pattern": "fn main", "include": "*.rs"})),
            ],
            StopReason::ToolUse,
            480,
            51
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
                tool("call_Zc7", "bash", json!({"command": "cargo test -q", "timeout": 120000})),
            ],
            StopReason::ToolUse,
            472,
            41
        )
    );
}

#[tokio::test]
async fn usage_arrives_in_the_last_chunk_and_length_is_max_tokens() {
    let (result, _, _) = decode("usage.sse").await;
    assert_eq!(
        result.unwrap(),
        assistant(vec![text("1. one\n2. two\n3.")], StopReason::MaxTokens, 2060, 16)
    );
}

#[tokio::test]
async fn ollamas_whole_tool_call_in_one_chunk() {
    let (result, _, _) = decode("ollama_tool_call.sse").await;
    assert_eq!(
        result.unwrap(),
        assistant(
            vec![tool("call_q8k2m1xz", "list_files", json!({"depth": 1, "path": "src"}))],
            StopReason::ToolUse,
            215,
            24
        )
    );
}

#[tokio::test]
async fn an_error_chunk_after_text_fails_without_retrying() {
    let (result, deltas, requests) = decode("error_mid_stream.sse").await;
    assert_eq!(deltas, ["Let me"]);
    assert_eq!(
        result.unwrap_err(),
        ProviderError::Server {
            status: 500,
            message: "The server had an error while processing your request. Sorry about that!"
                .into()
        }
    );
    assert_eq!(requests, 1, "text was passed on: no retry");
}

#[tokio::test]
async fn malformed_sse_is_a_protocol_error() {
    let (result, deltas, requests) = decode("malformed.sse").await;
    assert_eq!(deltas, ["Hel"]);
    assert!(matches!(result.unwrap_err(), ProviderError::Protocol(m) if m.contains("not JSON")));
    assert_eq!(requests, 1);
}

#[tokio::test]
async fn a_stream_cut_short_before_its_finish_reason_is_retried() {
    let role = "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n";
    let server = Server::start(vec![
        Reply::Stream { body: role.into(), pause: Duration::ZERO },
        Reply::fixture("openai", "text.sse"),
    ])
    .await;
    let (result, _) = run(&provider(&server), &hello()).await;
    assert_eq!(result.unwrap().message.text(), "Hello! How can I help you today?");
    assert_eq!(server.received().len(), 2);
}

#[tokio::test]
async fn tool_calls_without_ids_get_ids() {
    let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"glob\",\"arguments\":\"{\\\"pattern\\\":\\\"*\\\"}\"}}]}}]}\n\n\
                data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n";
    let server =
        Server::start(vec![Reply::Stream { body: body.into(), pause: Duration::ZERO }]).await;
    let (result, _) = run(&provider(&server), &hello()).await;
    let response = result.unwrap();
    assert_eq!(response.message.content, vec![tool("call_0", "glob", json!({"pattern": "*"}))]);
    assert_eq!(
        response.stop,
        StopReason::ToolUse,
        "a \"stop\" after tool calls still asks for them"
    );
}

#[tokio::test]
async fn the_request_has_the_exact_wire_shape() {
    let server = Server::start(vec![Reply::fixture("openai", "text.sse")]).await;
    let mut opts = options(ProviderKind::OpenAi, &format!("{}/v1", server.url));
    opts.headers = vec![("openai-organization".into(), "org-test".into())];
    let provider = OpenAi::new(opts).unwrap();
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
                    tool("call_1", "read_file", json!({"path": "shot.png"})),
                    tool("call_2", "bash", json!({"command": "false"})),
                ],
            },
            Message {
                role: Role::User,
                content: vec![
                    Block::ToolResult {
                        tool_use_id: "call_1".into(),
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
                        tool_use_id: "call_2".into(),
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
    assert_eq!((got.method.as_str(), got.path.as_str()), ("POST", "/v1/chat/completions"));
    assert_eq!(got.headers["authorization"], "Bearer test-key");
    assert_eq!(got.headers["content-type"], "application/json");
    assert_eq!(got.headers["openai-organization"], "org-test");
    let png =
        json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}});
    assert_eq!(
        got.body,
        json!({
            "model": "test-model",
            "messages": [
                {"role": "system", "content": "You are hands."},
                {"role": "user", "content": [{"type": "text", "text": "What is in shot.png?"}, png]},
                {"role": "assistant", "content": "Reading it.", "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"shot.png\"}"}},
                    {"id": "call_2", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"false\"}"}},
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "shot.png (PNG, 10 bytes)\n(1 image in the next user message)"},
                {"role": "tool", "tool_call_id": "call_2", "content": "Error: exit code 1"},
                {"role": "user", "content": [{"type": "text", "text": "The image output of tool call call_1:"}, png]},
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
            "max_tokens": 4096,
            "tools": [{"type": "function", "function": {
                "name": "read_file",
                "description": "Read a file.",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
            }}],
        })
    );
}

#[tokio::test]
async fn without_a_key_no_authorization_is_sent() {
    let server = Server::start(vec![Reply::fixture("openai", "text.sse")]).await;
    let mut opts = options(ProviderKind::OpenAi, &server.url);
    opts.api_key = None;
    run(&OpenAi::new(opts).unwrap(), &hello()).await.0.unwrap();
    let got = &server.received()[0];
    assert_eq!(got.path, "/chat/completions");
    assert!(!got.headers.contains_key("authorization"));
}

#[tokio::test]
async fn a_429_waits_what_retry_after_ms_says_then_succeeds() {
    let limited = r#"{"error":{"message":"Rate limit reached for gpt-4o","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#;
    let server = Server::start(vec![
        Reply::status(429, limited).header("retry-after-ms", "300"),
        Reply::fixture("openai", "text.sse"),
    ])
    .await;
    let started = Instant::now();
    let (result, _) = run(&provider(&server), &hello()).await;
    assert_eq!(result.unwrap().message.text(), "Hello! How can I help you today?");
    assert!(started.elapsed() >= Duration::from_millis(300), "{:?}", started.elapsed());
    assert_eq!(server.received().len(), 2);
}

#[tokio::test]
async fn a_503_every_time_is_a_server_error_after_max_retries() {
    let body = r#"{"error":{"message":"The engine is currently overloaded","type":"server_error","param":null,"code":null}}"#;
    let server = Server::start(vec![Reply::status(503, body); 3]).await;
    let (result, _) = run(&provider(&server), &hello()).await;
    assert_eq!(
        result.unwrap_err(),
        ProviderError::Server { status: 503, message: "The engine is currently overloaded".into() }
    );
    assert_eq!(server.received().len(), 3, "1 attempt + max_retries (2)");
}

#[tokio::test]
async fn a_401_is_auth_and_names_the_key_variable() {
    let body = r#"{"error":{"message":"Incorrect API key provided: sk-abc.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#;
    let server = Server::start(vec![Reply::status(401, body)]).await;
    let (result, _) = run(&provider(&server), &hello()).await;
    assert_eq!(
        result.unwrap_err(),
        ProviderError::Auth(
            "Incorrect API key provided: sk-abc. (HTTP 401; the key is read from TEST_API_KEY)"
                .into()
        )
    );
}

#[tokio::test]
async fn a_404_is_an_unknown_model() {
    let body = r#"{"error":{"message":"The model `test-model` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}"#;
    let server = Server::start(vec![Reply::status(404, body)]).await;
    let (result, _) = run(&provider(&server), &hello()).await;
    assert!(
        matches!(result.unwrap_err(), ProviderError::UnknownModel(m) if m.starts_with("test-model (The model `test-model` does not exist"))
    );
}

#[tokio::test]
async fn ollamas_model_not_found_is_an_unknown_model() {
    let server = Server::start(vec![Reply::status(404, r#"{"error":{"message":"model \"llama9\" not found, try pulling it first","type":"api_error","param":null,"code":null}}"#)]).await;
    let (result, _) = run(&provider(&server), &hello()).await;
    assert!(
        matches!(result.unwrap_err(), ProviderError::UnknownModel(m) if m.contains("try pulling it first"))
    );
}

#[tokio::test]
async fn context_length_exceeded_is_a_context_overflow() {
    let message = "This model's maximum context length is 128000 tokens. However, your messages resulted in 130310 tokens. Please reduce the length of the messages.";
    let body = json!({"error": {"message": message, "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}});
    let server = Server::start(vec![Reply::status(400, &body.to_string())]).await;
    let (result, _) = run(&provider(&server), &hello()).await;
    assert_eq!(result.unwrap_err(), ProviderError::ContextOverflow(message.into()));
}

#[tokio::test]
async fn a_refused_connection_is_a_transport_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    drop(listener);
    let provider = OpenAi::new(options(ProviderKind::OpenAi, &url)).unwrap();
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
async fn a_json_answer_instead_of_a_stream_is_a_protocol_error() {
    let body = r#"{"id":"chatcmpl-1","object":"chat.completion","choices":[]}"#;
    let server = Server::start(vec![Reply::status(200, body)]).await;
    let (result, _) = run(&provider(&server), &hello()).await;
    assert!(matches!(result.unwrap_err(), ProviderError::Protocol(m) if m.contains("got JSON")));
}
