//! The web tools of hands: `download_to_repo`, which pulls a remote file into the project through
//! the egress guard (hands-net) and writes it through the confined workspace (hands-fs).
//!
//! ```no_run
//! use hands_core::{CoreConfig, Registry};
//! let guard = hands_net::Guard::new(&Default::default()).unwrap();
//! let registry =
//!     hands_web::register(Registry::builder(CoreConfig::default()), &guard, &Default::default())
//!         .build();
//! assert!(registry.get("download_to_repo").is_some());
//! ```

mod config;
mod content;
mod download;
mod search;

pub use config::{DEFAULT_DOWNLOAD_BYTES, WebConfig};
pub use download::{DownloadArgs, DownloadResult, DownloadToRepo};
pub use search::{
    BRAVE_BASE_URL, BRAVE_KEY, Provider, SearchArgs, SearchConfig, SearchHit, SearchResult,
    TAVILY_BASE_URL, TAVILY_KEY, TimeRange, WebSearch,
};

use std::sync::Arc;

use hands_core::secret::SecretStore;

use hands_core::RegistryBuilder;
use hands_net::Guard;

/// Register the web tools, fetching through `guard`.
pub fn register(builder: RegistryBuilder, guard: &Guard, config: &WebConfig) -> RegistryBuilder {
    builder.tool(DownloadToRepo::new(guard.clone(), config.clone()))
}

/// Register web_search, offered while a key for its provider is stored or set (or SearXNG is
/// configured); the key is read from `secrets` (then the environment) at call time.
pub fn register_search(
    builder: RegistryBuilder,
    guard: &Guard,
    config: &SearchConfig,
    secrets: Option<Arc<dyn SecretStore>>,
) -> RegistryBuilder {
    let offered = config.clone();
    builder.tool_if(
        move |conditions| offered.offered(|name| conditions.has_key(name)),
        WebSearch::new(guard.clone(), config.clone(), secrets),
    )
}
