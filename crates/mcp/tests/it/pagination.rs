//! `tools/list` pagination over the real protocol: a registry with more tools than one page
//! ([`PAGE_SIZE`] + 50) served by hands' MCP server through rmcp over an in-memory pipe. The client
//! gets every tool exactly once across two pages joined by `nextCursor`, and a cursor the server
//! did not hand out is an invalid-params error.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::sync::Arc;

use hands_core::{
    Annotations, BoxFuture, Context, CoreConfig, DynTool, Mode, Registry, ToolError, ToolOutput,
    ToolSpec,
};
use hands_mcp::{PAGE_SIZE, ServerFactory};
use rmcp::model::{ErrorCode, PaginatedRequestParams};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceError, ServiceExt};
use serde_json::{Value, json};

struct Dummy(ToolSpec);

impl DynTool for Dummy {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    fn run<'a>(
        &'a self,
        _: Context,
        _: &'a Value,
        _: &'a hands_core::Prepared,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async { Ok(ToolOutput::text("dummy")) })
    }
}

const TOOLS: usize = PAGE_SIZE + 50;

fn name(i: usize) -> String {
    format!("dummy_{i:03}")
}

/// A client connected to a hands server whose registry has [`TOOLS`] dummy tools.
async fn client() -> (RunningService<RoleClient, ()>, tempfile::TempDir) {
    let mut builder = Registry::builder(CoreConfig::default());
    for i in 0..TOOLS {
        builder = builder.dyn_tool(Arc::new(Dummy(ToolSpec {
            name: name(i),
            description: format!("Dummy tool number {i}."),
            input_schema: json!({"type": "object"}),
            output_schema: None,
            annotations: Annotations::READ_ONLY,
            needs_approval: false,
            cacheable: false,
            policy: hands_core::Policy::from_annotations(Annotations::READ_ONLY),
        })));
    }
    let tmp = tempfile::tempdir().unwrap();
    let factory = ServerFactory::new(Arc::new(builder.build()), tmp.path(), Mode::Build);
    let (server_io, client_io) = tokio::io::duplex(1 << 16);
    let server = factory.connection();
    tokio::spawn(async move {
        let running = server.serve(server_io).await.unwrap();
        let _ = running.waiting().await;
    });
    (().serve(client_io).await.unwrap(), tmp)
}

fn page(cursor: Option<String>) -> Option<PaginatedRequestParams> {
    let mut params = PaginatedRequestParams::default();
    params.cursor = cursor;
    Some(params)
}

#[tokio::test(flavor = "multi_thread")]
async fn every_tool_comes_exactly_once_across_pages() {
    let (client, _tmp) = client().await;
    let mut seen = Vec::new();
    let mut cursor = None;
    let mut pages = 0;
    loop {
        let result = client.peer().list_tools(page(cursor.clone())).await.unwrap();
        pages += 1;
        assert!(result.tools.len() <= PAGE_SIZE, "page {pages} has {} tools", result.tools.len());
        seen.extend(result.tools.iter().map(|t| t.name.to_string()));
        match result.next_cursor {
            Some(next) => {
                assert!(pages < 10, "the cursor never ends");
                cursor = Some(next);
            }
            None => break,
        }
    }
    assert_eq!(pages, 2, "{TOOLS} tools take two pages of {PAGE_SIZE}");
    assert_eq!(seen.len(), TOOLS, "every tool once");
    let unique: HashSet<&String> = seen.iter().collect();
    assert_eq!(unique.len(), TOOLS, "no tool twice");
    let expected: Vec<String> = (0..TOOLS).map(name).collect();
    assert_eq!(seen, expected, "in registration order");

    // rmcp's own pager agrees.
    assert_eq!(client.peer().list_all_tools().await.unwrap().len(), TOOLS);
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cursor_the_server_did_not_give_is_invalid_params() {
    let (client, _tmp) = client().await;
    for bogus in ["not-a-cursor", "-1", &(TOOLS + 1).to_string(), ""] {
        let err = client.peer().list_tools(page(Some(bogus.to_owned()))).await.unwrap_err();
        match err {
            ServiceError::McpError(data) => {
                assert_eq!(data.code, ErrorCode::INVALID_PARAMS, "{bogus:?}: {data:?}");
                assert!(data.message.contains("cursor"), "{bogus:?}: {}", data.message);
            }
            other => panic!("{bogus:?}: expected invalid params, got {other:?}"),
        }
    }
    // The session goes on after the errors.
    assert_eq!(client.peer().list_tools(None).await.unwrap().tools.len(), PAGE_SIZE);
    client.cancel().await.unwrap();
}
