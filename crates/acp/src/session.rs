//! One ACP session: a hands session of a host, with what the editor allowed in it.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agent_client_protocol::Error;
use hands_agent::host::Host;
use hands_core::{CancellationToken, Registry};
use hands_store::Store;

use crate::map;

/// An `invalid_params` error whose data says why.
pub(crate) fn invalid(message: String) -> Error {
    Error::invalid_params().data(serde_json::Value::String(message))
}

/// An `internal_error` whose data says what failed.
pub(crate) fn internal(message: String) -> Error {
    Error::internal_error().data(serde_json::Value::String(message))
}

/// One ACP session: a hands session of a host.
pub(crate) struct AcpSession {
    pub(crate) id: String,
    pub(crate) host: Arc<Host>,
    pub(crate) store: Arc<dyn Store>,
    /// The host's tools: what each call is (its family, label, annotations).
    pub(crate) registry: Arc<Registry>,
    pub(crate) root: PathBuf,
    /// Tools the user allowed always (in this session).
    pub(crate) allowed: Mutex<HashSet<String>>,
    /// Fired by session/cancel: the running prompt ends `cancelled`. Renewed per prompt.
    pub(crate) cancel: Mutex<CancellationToken>,
}

impl AcpSession {
    /// End the running prompt (session/cancel).
    pub(crate) fn cancel(&self) {
        map::lock(&self.cancel).cancel();
    }
}
