//! spawn_subagent over MCP sampling: an rmcp client that answers `sampling/createMessage` from a
//! script, connected to an rmcp server through an in-memory pipe; the sub-agent's model is the
//! client's, with tools (SEP-1577) when the client declares them.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs, deprecated)]

use crate::loop_support;

use std::sync::{Arc, Mutex};

use hands_agent::host::AgentConfig;
use hands_agent::provider_sampling::install;
use hands_core::{CoreConfig, Session, ToolCall};
use loop_support::{Probe, registry_with};
use rmcp::model::{
    ClientCapabilities, ClientInfo, CreateMessageRequestParams, CreateMessageResult, ErrorData,
    Role, SamplingMessage, SamplingMessageContentBlock,
};
use rmcp::service::RequestContext;
use rmcp::{ClientHandler, RoleClient, ServerHandler, ServiceExt};
use serde_json::json;

struct Server;

impl ServerHandler for Server {}

/// Answers the first request with a read_file call, the second with a report.
#[derive(Clone, Default)]
struct Client {
    tools: bool,
    seen: Arc<Mutex<Vec<CreateMessageRequestParams>>>,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientInfo {
        let mut capabilities = ClientCapabilities::builder().enable_sampling();
        if self.tools {
            capabilities = capabilities.enable_sampling_tools();
        }
        let mut info = ClientInfo::default();
        info.capabilities = capabilities.build();
        info
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let n = {
            let mut seen = self.seen.lock().unwrap();
            seen.push(params);
            seen.len()
        };
        let message = if n == 1 && self.tools {
            SamplingMessage::new_multiple(
                Role::Assistant,
                vec![SamplingMessageContentBlock::tool_use(
                    "s1",
                    "read_file",
                    json!({"path": "answer.txt"}).as_object().cloned().unwrap(),
                )],
            )
        } else {
            SamplingMessage::assistant_text("Report: the answer is in answer.txt.")
        };
        let stop = if n == 1 && self.tools {
            CreateMessageResult::STOP_REASON_TOOL_USE
        } else {
            CreateMessageResult::STOP_REASON_END_TURN
        };
        Ok(CreateMessageResult::new(message, "client-model".into()).with_stop_reason(stop))
    }
}

async fn run(tools: bool) -> (String, Vec<CreateMessageRequestParams>) {
    let (server_io, client_io) = tokio::io::duplex(1 << 16);
    let server = tokio::spawn(async move { Server.serve(server_io).await.unwrap() });
    let client = Client { tools, ..Client::default() };
    let running_client = client.clone().serve(client_io).await.unwrap();
    let running_server = server.await.unwrap();

    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("answer.txt"), "42\n").unwrap();
    let registry = registry_with(CoreConfig::default(), &Probe::default());
    let session = Session::new("mcp-1", root.path());
    let limits = AgentConfig::default().subagent_limits();
    assert!(install(&session, running_server.peer(), Arc::clone(&registry), limits));
    let out = registry
        .dispatch(
            &session,
            ToolCall::new("c1", "spawn_subagent", json!({"prompt": "find the answer"})),
        )
        .await
        .unwrap();
    running_client.cancel().await.unwrap();
    assert!(!out.is_error, "{out:?}");
    let seen = client.seen.lock().unwrap().clone();
    (out.joined_text(), seen)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sub_agent_uses_the_clients_model_and_its_tools() {
    let (report, seen) = run(true).await;
    assert_eq!(
        report,
        "Report: the answer is in answer.txt.\n[sub-agent model: the MCP client's, through sampling]"
    );
    assert_eq!(seen.len(), 2);
    assert!(seen[0].system_prompt.as_deref().unwrap().contains("sub-agent"));
    let tools: Vec<String> =
        seen[0].tools.as_ref().unwrap().iter().map(|t| t.name.to_string()).collect();
    assert!(tools.contains(&"read_file".to_owned()) && !tools.contains(&"bash".to_owned()));
    // The second request carries the read_file result, alone in its message.
    let last = seen[1].messages.last().unwrap();
    let Some(SamplingMessageContentBlock::ToolResult(result)) = last.content.first() else {
        panic!("{last:?}")
    };
    let text = result.content[0].as_text().unwrap().text.clone();
    assert!(text.contains("42"), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn without_sampling_tools_the_sub_agent_answers_from_the_prompt() {
    let (report, seen) = run(false).await;
    assert_eq!(
        report,
        "Report: the answer is in answer.txt.\n[sub-agent model: the MCP client's, through sampling]"
    );
    assert_eq!(seen.len(), 1);
    assert!(seen[0].tools.is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn no_sampling_no_install() {
    struct Plain;
    impl ClientHandler for Plain {}
    let (server_io, client_io) = tokio::io::duplex(1 << 16);
    let server = tokio::spawn(async move { Server.serve(server_io).await.unwrap() });
    let _client = Plain.serve(client_io).await.unwrap();
    let server = server.await.unwrap();
    let session = Session::new("mcp-2", std::env::temp_dir());
    let registry = registry_with(CoreConfig::default(), &Probe::default());
    assert!(!install(&session, server.peer(), registry, AgentConfig::default().subagent_limits()));
    assert!(session.get_extension::<hands_agent::subagent::SubagentEnv>().is_none());
}
