//! What the client side of one connection hears from its server, besides answers: progress of a
//! call in flight (routed by progress token to that call's [`Context`]), the partial result of a
//! call it cancelled (routed by request id to the waiting call), and
//! `notifications/tools/list_changed` (the tools are listed again and published in the
//! connection's [`ToolList`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use hands_core::Context;
use rmcp::model::{
    ClientCapabilities, ClientConfig, CustomNotification, Implementation,
    ProgressNotificationParam, ProgressToken, RequestId,
};
use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, RoleClient};
use serde_json::Value;
use tokio::sync::{oneshot, watch};

use super::remote::{self, RemoteTool};

/// Request `_meta` key by which a client asks a hands server for the partial result of a call
/// it cancels: MCP sends no response to a cancelled request, so hands sends what the tool had
/// as a [`PARTIAL_METHOD`] notification instead.
pub(crate) const PARTIAL_META: &str = "hands/partialOnCancel";

/// The notification that carries a cancelled call's partial result:
/// `{"requestId": <the call's id>, "result": <CallToolResult>}`.
pub(crate) const PARTIAL_METHOD: &str = "notifications/hands/cancelled_result";

/// Where the notifications of calls in flight go.
#[derive(Default)]
pub(crate) struct Routes {
    /// Calls whose caller listens to progress, by the progress token rmcp gave their request.
    progress: Mutex<HashMap<ProgressToken, Context>>,
    /// Cancelled calls waiting for their partial result, by request id.
    partial: Mutex<HashMap<RequestId, oneshot::Sender<Value>>>,
}

impl Routes {
    pub(crate) fn listen_progress(&self, token: ProgressToken, ctx: Context) {
        lock(&self.progress).insert(token, ctx);
    }

    pub(crate) fn listen_partial(&self, id: RequestId) -> oneshot::Receiver<Value> {
        let (tx, rx) = oneshot::channel();
        lock(&self.partial).insert(id, tx);
        rx
    }

    /// Forget a finished call.
    pub(crate) fn forget(&self, token: &ProgressToken, id: &RequestId) {
        lock(&self.progress).remove(token);
        lock(&self.partial).remove(id);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The tools a server offers, as last listed; replaced when it says its list changed.
pub(crate) struct ToolList {
    /// None until the first listing.
    tools: RwLock<Option<Vec<RemoteTool>>>,
    /// Counts the listings, so that watchers learn of each new one.
    changes: watch::Sender<u64>,
}

impl ToolList {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self { tools: RwLock::new(None), changes: watch::Sender::new(0) })
    }

    /// The tools as last listed (empty before the first listing).
    pub(crate) fn get(&self) -> Vec<RemoteTool> {
        self.tools.read().unwrap_or_else(PoisonError::into_inner).clone().unwrap_or_default()
    }

    /// True once the server's tools were listed.
    pub(crate) fn is_listed(&self) -> bool {
        self.tools.read().unwrap_or_else(PoisonError::into_inner).is_some()
    }

    /// True when the last listing has a tool called `name`; also true before any listing (the
    /// server then decides).
    pub(crate) fn offers(&self, name: &str) -> bool {
        self.tools
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .is_none_or(|tools| tools.iter().any(|t| t.name == name))
    }

    pub(crate) fn set(&self, tools: Vec<RemoteTool>) {
        *self.tools.write().unwrap_or_else(PoisonError::into_inner) = Some(tools);
        self.changes.send_modify(|n| *n += 1);
    }

    /// Ticks at every new listing.
    pub(crate) fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }
}

/// The client handler of one connection.
pub(crate) struct Listener {
    pub(crate) routes: Arc<Routes>,
    pub(crate) tools: Arc<ToolList>,
    /// Tell a hands server that this connection serves one call (a host's `hands call`).
    pub(crate) one_shot: bool,
}

/// The experimental capability by which a hands host tells an inner hands that the connection
/// serves a one-shot session: `{"hands": {"oneShot": true}}`.
pub const ONE_SHOT_CAPABILITY: &str = "hands";

impl ClientHandler for Listener {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if self.one_shot {
            let mut flags = serde_json::Map::new();
            flags.insert("oneShot".into(), serde_json::Value::Bool(true));
            capabilities.experimental =
                Some(std::collections::BTreeMap::from([(ONE_SHOT_CAPABILITY.to_owned(), flags)]));
        }
        ClientConfig::new(capabilities, Implementation::new("hands", env!("CARGO_PKG_VERSION")))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        // Cloned out of the lock: a sink may take its time.
        let ctx = lock(&self.routes.progress).get(&params.progress_token).cloned();
        if let Some(ctx) = ctx {
            ctx.progress(params.progress, params.total, params.message);
        }
    }

    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        // rmcp has dropped its cached listing before calling this.
        match remote::list_tools(&context.peer).await {
            Ok(tools) => {
                tracing::info!(tools = tools.len(), "MCP server changed its tool list");
                self.tools.set(tools);
            }
            Err(err) => tracing::warn!(%err, "MCP server changed its tool list; listing it failed"),
        }
    }

    async fn on_custom_notification(
        &self,
        notification: CustomNotification,
        _context: NotificationContext<RoleClient>,
    ) {
        if notification.method != PARTIAL_METHOD {
            return;
        }
        let Some(mut params) = notification.params else { return };
        let Some(id) = params
            .get("requestId")
            .and_then(|id| serde_json::from_value::<RequestId>(id.clone()).ok())
        else {
            return;
        };
        let waiting = lock(&self.routes.partial).remove(&id);
        if let Some(tx) = waiting {
            let _ = tx.send(params["result"].take());
        }
    }
}
