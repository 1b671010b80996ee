//! reference_project: a read-only view of another of the user's projects, by the name the user
//! gave it in `[reference_projects]` (user-only: a project's own `.hands/config.toml` cannot add
//! one, or it could point the model at any folder of the machine).
//!
//! Each call runs one of hands-fs's read tools (read_file, list_files, glob, grep) over a second
//! confined workspace: a shadow session rooted at the other project, kept for the life of the
//! calling session, whose workspace hides `.env*`, `*.pem`, `*.key`, `.git/` and the well-known
//! credential files ([`CREDENTIAL_FILES`]: never read, listed or searched, [`hands_fs::Hidden`]);
//! a private key with another name is found by its content ([`holds_private_key`]): a read of it
//! is refused, and glob's and grep's results drop it. Results pass through the registry's middleware like
//! every tool's, so stored secrets and key shapes in them are redacted.
//!
//! ```no_run
//! use hands_core::{CoreConfig, Registry};
//! let mut projects = std::collections::BTreeMap::new();
//! projects.insert("web".to_owned(), std::path::PathBuf::from("/home/me/web"));
//! let builder = Registry::builder(CoreConfig::default());
//! let registry = hands_reference::register(builder, &projects, &Default::default()).build();
//! assert!(registry.get("reference_project").is_some());
//! ```

mod args;
mod tool;

pub use args::{GrepMode, Op, ReferenceProjectArgs};
pub use tool::{CREDENTIAL_FILES, ReferenceProject, ReferenceProjects, holds_private_key};

use std::collections::BTreeMap;
use std::path::PathBuf;

use hands_core::RegistryBuilder;

/// Register reference_project when `projects` (the user's `[reference_projects]`, name → root)
/// names at least one project; the file tools' limits come from `fs`.
pub fn register(
    builder: RegistryBuilder,
    projects: &BTreeMap<String, PathBuf>,
    fs: &hands_fs::FsConfig,
) -> RegistryBuilder {
    if projects.is_empty() {
        return builder;
    }
    builder.tool(ReferenceProject::new(projects.clone(), fs.clone()))
}
