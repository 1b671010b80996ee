//! The file and search tools of hands: read_file, write_file, edit_file, apply_patch, list_files,
//! glob, grep.
//!
//! Every path goes through the [`Workspace`], which opens files relative to a directory handle on the
//! project root, so that nothing outside the root is read or written whatever the path or symlinks
//! say. Writes are atomic (temp file, fsync, rename) and keep the file's mode.
//!
//! ```no_run
//! use hands_core::{CoreConfig, Registry};
//! let registry = hands_fs::register(Registry::builder(CoreConfig::default()), &Default::default())
//!     .build();
//! assert!(registry.get("grep").is_some());
//! ```

mod apply_patch;
pub mod atomic;
mod changed;
mod config;
mod detect;
mod diff;
mod edit_file;
mod escape;
mod files;
mod glob;
mod grep;
mod hidden;
mod ledger;
mod list_files;
mod near_miss;
mod patch_format;
mod patch_match;
mod placeholders;
mod read_file;
mod stale;
mod walk;
mod workspace;
mod write_file;

pub use apply_patch::ApplyPatch;
pub use config::FsConfig;
pub use edit_file::EditFile;
pub use files::{FolderFile, FolderFiles, folder_files, note_skipped};
pub use glob::{Glob, GlobArgs};
pub use grep::{Grep, GrepArgs, OutputMode};
pub use hidden::{Hidden, SECRET_FILES};
pub use ledger::Ledger;
pub use list_files::{ListFiles, ListFilesArgs};
pub use read_file::{Hints, ReadFile, ReadFileArgs};
pub use workspace::{RelPath, Workspace};
pub use write_file::WriteFile;

use hands_core::RegistryBuilder;

/// Register the seven fs tools with `config`.
pub fn register(builder: RegistryBuilder, config: &FsConfig) -> RegistryBuilder {
    register_with(builder, config, Hints::default())
}

/// Register the seven fs tools with `config`, read_file pointing to the tools `hints` names.
pub fn register_with(builder: RegistryBuilder, config: &FsConfig, hints: Hints) -> RegistryBuilder {
    builder
        .spill_hint("read it with read_file and offset/limit, or grep it")
        .tool(ReadFile::with_hints(config.clone(), hints))
        .tool(WriteFile::new(config.clone()))
        .tool(EditFile::new(config.clone()))
        .tool(ApplyPatch::new(config.clone()))
        .tool(ListFiles::new(config.clone()))
        .tool(Glob::new(config.clone()))
        .tool(Grep::new(config.clone()))
}
