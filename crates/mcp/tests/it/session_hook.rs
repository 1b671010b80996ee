//! The session hook of [`ServerFactory`]: run at each connection's `initialize` with the
//! connection's session and the client's request, over the real protocol (rmcp on both ends of an
//! in-memory pipe). A tool the hook hides is left out of that connection's `tools/list` and no
//! other's; a client's capabilities reach the hook.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use hands_core::{
    Annotations, BoxFuture, Context, CoreConfig, DynTool, Mode, Registry, ToolError, ToolOutput,
    ToolSpec,
};
use hands_mcp::ServerFactory;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

struct Named(ToolSpec);

impl DynTool for Named {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    fn run<'a>(
        &'a self,
        _: Context,
        _: &'a Value,
        _: &'a hands_core::Prepared,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async { Ok(ToolOutput::text("ran")) })
    }
}

fn tool(name: &str) -> Arc<dyn DynTool> {
    Arc::new(Named(ToolSpec {
        name: name.into(),
        description: format!("The {name} tool."),
        input_schema: json!({"type": "object"}),
        output_schema: None,
        annotations: Annotations::READ_ONLY,
        needs_approval: false,
        cacheable: false,
        policy: hands_core::Policy::from_annotations(Annotations::READ_ONLY),
    }))
}

async fn connect(
    factory: &Arc<ServerFactory>,
    capabilities: ClientCapabilities,
) -> RunningService<RoleClient, ClientConfig> {
    let (server_io, client_io) = tokio::io::duplex(1 << 16);
    let server = factory.connection();
    tokio::spawn(async move {
        let running = server.serve(server_io).await.unwrap();
        let _ = running.waiting().await;
    });
    let info = ClientConfig::new(capabilities, Implementation::new("test", "1"));
    info.serve(client_io).await.unwrap()
}

async fn names(client: &RunningService<RoleClient, ClientConfig>) -> Vec<String> {
    let tools = client.peer().list_all_tools().await.unwrap();
    tools.into_iter().map(|t| t.name.to_string()).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_hook_sees_each_client_and_hides_tools_for_that_connection_only() {
    let registry = Registry::builder(CoreConfig::default())
        .dyn_tool(tool("always"))
        .dyn_tool(tool("needs_sampling"))
        .build();
    let tmp = tempfile::tempdir().unwrap();
    let factory = ServerFactory::new(Arc::new(registry), tmp.path(), Mode::Build);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    factory.set_session_hook(Arc::new(move |session, _peer, request| {
        let sampling = request.capabilities.sampling.is_some();
        record.lock().unwrap().push((session.id().to_owned(), sampling));
        if !sampling {
            session.hide_tool("needs_sampling");
        }
    }));

    let plain = connect(&factory, ClientCapabilities::default()).await;
    let mut with_sampling = ClientCapabilities::default();
    with_sampling.sampling = Some(Default::default());
    let sampler = connect(&factory, with_sampling).await;

    assert_eq!(names(&plain).await, ["always"]);
    assert_eq!(names(&sampler).await, ["always", "needs_sampling"]);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_ne!(seen[0].0, seen[1].0, "each connection has its own session");
    assert_eq!(seen.iter().filter(|(_, sampling)| *sampling).count(), 1, "{seen:?}");
}
