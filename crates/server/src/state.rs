//! The state every handler of the session API reads.

use std::path::Path;
use std::sync::Arc;

use hands_agent::host::Host;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::signin::SignIn;

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
    /// The folder the server was started on, absolute (the session list offers it).
    pub root: Option<Arc<Path>>,
    /// The one-time sign-in codes of `POST /v1/signin`.
    pub signin: SignIn,
}
