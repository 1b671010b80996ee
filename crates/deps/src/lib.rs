//! add_dependency: add packages to a project with its own package manager (npm, pnpm, yarn, bun,
//! cargo, uv, poetry, pip), and say what changed.
//!
//! The manager is detected from the project's files (manager.rs); every spec is checked against
//! its ecosystem's grammar before anything runs (spec.rs); the manager runs as an argv without a
//! shell under the session's process supervisor (hands-exec), with `CI=1`, the child environment
//! every process of the project gets and a time limit, and its whole tree is stopped on timeout
//! or abort (tool.rs). What changed is read from the manifest and lock file before and after
//! (manifest.rs, pip.rs); a failure is explained (cause.rs); a running dev server is judged
//! through the process service (devserver.rs).
//!
//! ```no_run
//! use hands_core::{CoreConfig, Registry};
//! let builder = Registry::builder(CoreConfig::default());
//! let registry =
//!     hands_deps::register(builder, &Default::default(), &Default::default(), None).build();
//! assert!(registry.get("add_dependency").is_some());
//! ```

mod cause;
mod config;
mod devserver;
mod manager;
mod manifest;
mod pip;
mod plan;
mod result;
mod spec;
mod tool;

pub use cause::Cause;
pub use config::DepsConfig;
pub use devserver::DevServer;
pub use result::{AddResult, Change, Status};
pub use tool::{AddDependency, AddDependencyArgs, MAX_PACKAGES};

use std::sync::Arc;

use hands_core::RegistryBuilder;
use hands_core::process::ProcessService;

/// Register add_dependency with its `config`, the `exec` settings its processes run under, and
/// the session's process service (through which it sees a running dev server).
pub fn register(
    builder: RegistryBuilder,
    config: &DepsConfig,
    exec: &hands_exec::ExecConfig,
    processes: Option<Arc<dyn ProcessService>>,
) -> RegistryBuilder {
    // Only where there is a manifest to add to: a package, a Rust crate or a Python project.
    builder.tool_if(
        |c| c.project(|p| p.node || p.rust || p.python),
        AddDependency::new(config.clone(), exec.clone(), processes),
    )
}
