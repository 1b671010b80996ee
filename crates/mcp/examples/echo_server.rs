//! A tiny MCP server over stdio for the client and sandbox tests: `echo` (text back), `fail` (an
//! `isError` result), `pid` (its process id), `sh` (runs `sh -c` and returns the output) and
//! `sleep` (waits `ms`). Optional first argument: a file to append "started <pid>" to, so that
//! tests can count restarts.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::io::Write;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

struct Echo;

fn result(text: impl Into<String>, is_error: bool) -> CallToolResponse {
    let value = json!({"content": [{"type": "text", "text": text.into()}], "isError": is_error});
    CallToolResponse::Complete(serde_json::from_value::<CallToolResult>(value).unwrap())
}

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("echo", "0.1.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let object = |props: Value| json!({"type": "object", "properties": props});
        let tools = json!([
            {"name": "echo", "description": "Say the text back.", "inputSchema": object(json!({"text": {"type": "string"}})),
             "annotations": {"readOnlyHint": true}},
            {"name": "fail", "description": "Always an error result.", "inputSchema": object(json!({}))},
            {"name": "pid", "description": "This server's process id.", "inputSchema": object(json!({}))},
            {"name": "sh", "description": "Run a shell command.", "inputSchema": object(json!({"command": {"type": "string"}}))},
            {"name": "sleep", "description": "Wait ms milliseconds.", "inputSchema": object(json!({"ms": {"type": "integer"}}))},
        ]);
        Ok(ListToolsResult::with_all_items(serde_json::from_value(tools).unwrap()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let text = |key: &str| args.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
        match request.name.as_ref() {
            "echo" => Ok(result(text("text"), false)),
            "fail" => Ok(result("this tool always fails", true)),
            "pid" => Ok(result(std::process::id().to_string(), false)),
            "sh" => {
                let out = tokio::process::Command::new("sh")
                    .arg("-c")
                    .arg(text("command"))
                    .output()
                    .await
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                let mut all = String::from_utf8_lossy(&out.stdout).into_owned();
                all.push_str(&String::from_utf8_lossy(&out.stderr));
                Ok(result(all, !out.status.success()))
            }
            "sleep" => {
                let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(0);
                tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                Ok(result(format!("slept {ms} ms"), false))
            }
            other => Err(ErrorData::invalid_params(format!("unknown tool {other}"), None)),
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    if let Some(log) = std::env::args().nth(1) {
        let mut file = std::fs::OpenOptions::new().create(true).append(true).open(log).unwrap();
        writeln!(file, "started {}", std::process::id()).unwrap();
    }
    let running = Echo.serve(rmcp::transport::stdio()).await.unwrap();
    let _ = running.waiting().await;
}
