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

pub use config::{DEFAULT_DOWNLOAD_BYTES, WebConfig};
pub use download::{DownloadArgs, DownloadResult, DownloadToRepo};

use hands_core::RegistryBuilder;
use hands_net::Guard;

/// Register the web tools, fetching through `guard`.
pub fn register(builder: RegistryBuilder, guard: &Guard, config: &WebConfig) -> RegistryBuilder {
    builder.tool(DownloadToRepo::new(guard.clone(), config.clone()))
}
