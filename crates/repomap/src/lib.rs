//! repo_map: the shape of a codebase within a token budget — a folder's source files with their
//! definitions from tree-sitter, ranked by a PageRank over which files use which names (as Aider's
//! repository map does), shown as `line│signature` grouped by file. No language server and no build
//! are needed; tags are cached by file content for the life of the process.
//!
//! Flow: [`hands_fs::folder_files`] walks the folder as glob does (confined, ignore rules, hidden
//! names) → `collect` reads and parses each source file or takes its tags from `cache` → `rank`
//! orders every definition → `render` keeps the best ones that fit the budget.
//!
//! ```no_run
//! use hands_core::{CoreConfig, Registry};
//! let builder = Registry::builder(CoreConfig::default());
//! let registry = hands_repomap::register(builder, &Default::default()).build();
//! assert!(registry.get("repo_map").is_some());
//! ```

mod cache;
mod collect;
mod lang;
mod memo;
mod rank;
mod render;
mod tags;
mod tool;

pub use lang::Lang;
pub use render::{MappedDef, MappedFile, RepoMapResult, SkippedFile};
pub use tags::{Def, FileTags, extract};
pub use tool::{DEFAULT_MAX_TOKENS, MAX_MAX_TOKENS, RepoMap, RepoMapArgs};

use hands_core::RegistryBuilder;

/// Register repo_map, walking folders with the settings of `fs`.
pub fn register(builder: RegistryBuilder, fs: &hands_fs::FsConfig) -> RegistryBuilder {
    builder.tool(RepoMap::new(fs.clone()))
}
