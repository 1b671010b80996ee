//! What went wrong in a host call, shaped for HTTP status codes.

use hands_store::StoreError;

/// What went wrong, shaped for HTTP status codes.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// 404.
    #[error("{0}")]
    NotFound(String),
    /// 409: a turn is already running, no question pending, …
    #[error("{0}")]
    Conflict(String),
    /// 400.
    #[error("{0}")]
    BadRequest(String),
    /// 503: no `[model]` configured.
    #[error("no model is configured: set [model] provider, model and api_key_env in the config")]
    NoModel,
    /// 503: the node is shutting down and takes no new turns (retry on another node).
    #[error(
        "this hands node is shutting down and takes no new turns: send it again (to another node)"
    )]
    Draining,
    /// The session's lease is another node's: the request belongs there.
    #[error(
        "the session's lease is held by another node, or moved while the request ran: send it \
         again"
    )]
    Elsewhere(super::node::Route),
    /// 500.
    #[error(transparent)]
    Store(StoreError),
}

impl From<StoreError> for HostError {
    /// A record the store no longer has is a 404, wherever the host met it: a session deleted
    /// while another request was loading it is gone, not a server error.
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::NotFound(what) => Self::NotFound(format!("{what} not found")),
            // The lease moved while the request ran: it belongs to the session's new node.
            StoreError::Fenced(_) => Self::Elsewhere(super::node::Route::Local),
            other => Self::Store(other),
        }
    }
}

/// Result of a host call.
pub type HostResult<T> = Result<T, HostError>;

pub(super) fn not_found(id: &str) -> HostError {
    HostError::NotFound(format!("no session has the id `{id}`"))
}
