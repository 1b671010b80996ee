//! [`ClientGone`]: how the HTTP transport tells the server that a request's client went away
//! (rmcp does not cancel a session's request when its client disconnects).

use tokio_util::sync::CancellationToken;

/// Fired when the HTTP response of the request that carries it is dropped.
#[derive(Debug, Clone)]
pub(crate) struct ClientGone(pub(crate) CancellationToken);
