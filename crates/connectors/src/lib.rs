//! Connectors of hands: a connector is `.hands/connectors/<name>.toml` (no secret in it: a base
//! URL, how the stored secret is sent, allowed methods and path globs, named operations), and
//! `connector_call` calls the connected service through the egress guard. The invariant: a
//! secret is sent only to the host the user recorded with it when it was stored
//! (`hands secrets set NAME --host HOST`), so a repository's connector file cannot redirect a
//! key.
//!
//! Offered when the project has at least one connector file (see [`register`]).

mod call;
pub mod config;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use call::{CallArgs, CallResult, ConnectorCall, Header, MAX_RESPONSE_BYTES, check_path};
pub use config::{Auth, AuthKind, Connector, ConnectorFile, Operation, list};

use hands_core::RegistryBuilder;
use hands_core::config::Approval;
use hands_core::secret::SecretStore;
use hands_net::{Guard, NetConfig, NetError};

/// Register connector_call, offered while the project at `root` has a connector file (checked
/// whenever the registry refreshes). It sends through a guard built from `net` that follows no
/// redirect, takes keys from `store`, and asks the user before any method but GET under
/// `approval = "ask"`.
pub fn register(
    builder: RegistryBuilder,
    net: &NetConfig,
    store: Arc<dyn SecretStore>,
    approval: Approval,
    root: &Path,
) -> Result<RegistryBuilder, NetError> {
    let guard = Guard::new(&NetConfig { max_redirects: 0, ..net.clone() })?;
    let root: PathBuf = root.to_path_buf();
    Ok(builder
        .tool_if(move |_| !list(&root).is_empty(), ConnectorCall::new(guard, store, approval)))
}
