//! Connectors of hands: a connector is `.hands/connectors/<name>.toml` (no secret in it: a base
//! URL, how the stored secret is sent, allowed methods and path globs, named operations, the
//! OpenAPI document it came from), `connector_call` calls the connected service through the
//! egress guard, and `connector_scaffold` writes a typed client of it into the project. The
//! invariant: a secret is sent only to the origin (scheme, host, port) the user recorded with it
//! when it was stored for the project (`hands secrets set NAME --host HOST`: https on 443 unless
//! written otherwise, see [`origin`]), so a repository's connector file cannot redirect a key,
//! downgrade it to plain http, or use a global secret.
//!
//! Both tools are offered while the project has at least one connector file (see [`register`]
//! and [`source`]). `hands connectors add|rm|list` use [`files`] and [`openapi`].

pub mod api;
mod call;
pub mod config;
pub mod files;
pub mod openapi;
pub mod origin;
mod scaffold;
pub mod source;
pub mod typescript;

use std::path::Path;
use std::sync::Arc;

pub use call::{CallArgs, CallResult, ConnectorCall, Header, MAX_RESPONSE_BYTES, check_path};
pub use config::{Auth, AuthKind, Connector, ConnectorFile, Operation, list};
pub use scaffold::{ConnectorScaffold, ScaffoldArgs, ScaffoldFile, ScaffoldResult, Target};

use hands_core::RegistryBuilder;
use hands_core::secret::SecretStore;
use hands_net::{Guard, NetConfig, NetError};

/// Register connector_call and connector_scaffold as a live source, offered while the project at
/// `root` has a connector file (looked for after every mutating call, on a configuration
/// refresh, and at most once a second when the tools are listed). connector_call sends through a
/// guard built from `net` that follows no redirect, takes keys from `store`, and asks the user
/// before any method but GET and HEAD under `approval = "ask"`; connector_scaffold asks before it
/// writes.
pub fn register(
    builder: RegistryBuilder,
    net: &NetConfig,
    store: Arc<dyn SecretStore>,
    root: &Path,
) -> Result<RegistryBuilder, NetError> {
    let guard = Guard::new(&NetConfig { max_redirects: 0, ..net.clone() })?;
    let tools = vec![
        hands_core::erase(ConnectorCall::new(guard, store)),
        hands_core::erase(ConnectorScaffold),
    ];
    Ok(builder.source(Arc::new(source::ConnectorSource::new(root, tools))))
}
