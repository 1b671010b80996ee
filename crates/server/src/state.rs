//! The state every handler of the session API reads.

use std::sync::Arc;

use hands_agent::host::Host;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// What every handler reads.
#[derive(Clone)]
pub struct AppState {
    /// The sessions.
    pub host: Arc<Host>,
    /// Fired at shutdown: event streams end so that the server can stop.
    pub shutdown: CancellationToken,
    /// `[server] max_body_bytes`, for the 413 message.
    pub max_body_bytes: usize,
    /// The OpenAPI document, built once.
    pub openapi: Arc<Value>,
}
