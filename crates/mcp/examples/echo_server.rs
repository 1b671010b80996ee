//! A tiny MCP server over stdio for the client and sandbox tests: `echo` (text back), `fail` (an
//! `isError` result), `pid` (its process id), `sh` (runs `sh -c` and returns the output), `sleep`
//! (waits `ms`, reporting progress every 100 ms when asked), `stats` (structured content with an
//! output schema) and `toggle` (adds or removes the tool `extra` and sends
//! `notifications/tools/list_changed`). Optional first argument: a file to append
//! "started <pid>" to, so that tests can count restarts.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

#[derive(Default)]
struct Echo {
    /// Whether `extra` is offered (flipped by `toggle`).
    extra: AtomicBool,
}

fn result(text: impl Into<String>, is_error: bool) -> CallToolResponse {
    let value = json!({"content": [{"type": "text", "text": text.into()}], "isError": is_error});
    CallToolResponse::Complete(serde_json::from_value::<CallToolResult>(value).unwrap())
}

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build(),
        )
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
            {"name": "stats", "description": "Numbers, as structured content.", "inputSchema": object(json!({})),
             "outputSchema": object(json!({"calls": {"type": "integer"}, "name": {"type": "string"}}))},
            {"name": "toggle", "description": "Add or remove the tool `extra`.", "inputSchema": object(json!({}))},
        ]);
        let mut tools = tools.as_array().unwrap().clone();
        if self.extra.load(Ordering::SeqCst) {
            tools.push(json!({"name": "extra", "description": "Only there after toggle.", "inputSchema": object(json!({}))}));
        }
        Ok(ListToolsResult::with_all_items(serde_json::from_value(Value::Array(tools)).unwrap()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
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
                let done = tokio::time::sleep(Duration::from_millis(ms));
                tokio::pin!(done);
                let token = context.meta.get_progress_token();
                let mut ticks = tokio::time::interval(Duration::from_millis(100));
                ticks.tick().await;
                let mut n = 0.0;
                loop {
                    tokio::select! {
                        () = &mut done => break,
                        _ = ticks.tick(), if token.is_some() => {
                            n += 1.0;
                            let mut param = ProgressNotificationParam::new(token.clone().unwrap(), n);
                            param.message = Some(format!("slept {} ms", n * 100.0));
                            let _ = context.peer.notify_progress(param).await;
                        }
                    }
                }
                Ok(result(format!("slept {ms} ms"), false))
            }
            "stats" => {
                let value = json!({
                    "content": [{"type": "text", "text": "calls: 7"}],
                    "structuredContent": {"calls": 7, "name": "echo"},
                });
                Ok(CallToolResponse::Complete(serde_json::from_value(value).unwrap()))
            }
            "toggle" => {
                let now = !self.extra.fetch_xor(true, Ordering::SeqCst);
                context.peer.notify_tool_list_changed().await.unwrap();
                Ok(result(if now { "extra on" } else { "extra off" }, false))
            }
            "extra" if self.extra.load(Ordering::SeqCst) => Ok(result("extra", false)),
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
    let running = Echo::default().serve(rmcp::transport::stdio()).await.unwrap();
    let _ = running.waiting().await;
}
