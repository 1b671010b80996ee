//! run_security_scan: secrets in a project's files and build output, secret-shaped values in
//! the variables bundlers expose, locked dependencies against an OSV advisory database and the
//! ecosystems' audit commands, and the row-level security of the linked database.
//!
//! The secrets come from the user's store through hands-secrets' engine (every stored value in
//! its encoded forms, plus the key-shape rules), so the scan finds exactly what redaction hides.
//!
//! ```no_run
//! # fn demo(store: std::sync::Arc<dyn hands_core::secret::SecretStore>) {
//! use hands_core::{CoreConfig, Registry};
//! let registry = hands_scan::register(
//!     Registry::builder(CoreConfig::default()),
//!     &hands_scan::SecurityConfig::default(),
//!     &hands_net::NetConfig::default(),
//!     store,
//! )
//! .build();
//! assert!(registry.get("run_security_scan").is_some());
//! # }
//! ```
#![deny(missing_docs)]

mod audit;
mod config;
mod database;
mod deps;
mod env;
mod files;
mod finding;
mod jwt;
mod lockfiles;
mod osv;
mod tool;
mod version;

use std::sync::Arc;

use hands_core::RegistryBuilder;
use hands_core::secret::SecretStore;

pub use config::SecurityConfig;
pub use files::BUILD_DIRS;
pub use finding::{Check, CheckRun, Finding, Severity, Status};
pub use tool::{Counts, NAME, RunSecurityScan, ScanArgs, ScanResult};

/// Register run_security_scan with `[security]`, the `[net]` rule and the user's secret store.
pub fn register(
    builder: RegistryBuilder,
    config: &SecurityConfig,
    net: &hands_net::NetConfig,
    store: Arc<dyn SecretStore>,
) -> RegistryBuilder {
    // A project with something to scan: a web app's build and variables, dependencies' lock
    // files, a database.
    builder.tool_if(
        |c| c.project(|p| p.web || p.has_manifest() || p.database),
        RunSecurityScan::new(config.clone(), net.clone(), store),
    )
}
