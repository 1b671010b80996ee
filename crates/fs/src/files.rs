//! The files of a folder as glob and grep see them, for tools of other crates that read a whole
//! folder's sources (a repository map): the same confinement through the root handle, the same
//! ignore rules, hidden names, excluded folders and guarded ignore files, sorted by path.

use std::time::SystemTime;

use hands_core::{Context, ToolError, ToolOutput};

use crate::walk::{self, Start, WalkSpec};
use crate::{FsConfig, RelPath, Workspace};

/// One file of [`FolderFiles`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FolderFile {
    /// Its path from the root.
    pub path: RelPath,
    /// Its size in bytes, as the walk saw it.
    pub len: u64,
    /// Its modification time, as the walk saw it (the epoch when unknown).
    pub modified: SystemTime,
}

/// The regular files under a folder.
#[derive(Debug)]
pub struct FolderFiles {
    /// The workspace they were found in: read them through it ([`Workspace::open_read`]).
    pub workspace: Workspace,
    /// The folder (or single file) that was walked.
    pub start: RelPath,
    /// The files, sorted by path; at most the `limit` given, the rest counted in `more`.
    pub files: Vec<FolderFile>,
    /// Files found beyond the limit.
    pub more: usize,
    /// What the walk skipped because an ignore file is not a regular file, one line each: pass it
    /// to [`note_skipped`].
    pub skipped: Vec<String>,
}

/// The regular files under `path` (the tool's argument `field`; the root when `None`), found as
/// glob finds them (gitignored files left out, symlinks not followed), at most `limit`. A `path`
/// naming a file gives that file alone.
pub fn folder_files(
    ctx: &Context,
    config: &FsConfig,
    field: &str,
    path: Option<&str>,
    limit: usize,
) -> Result<FolderFiles, ToolError> {
    let workspace = Workspace::of(ctx)?;
    let start = match walk::start(&workspace, field, path)? {
        Start::File(rel) => {
            let (_, meta) = workspace
                .open_read_with_metadata(&rel)
                .map_err(|e| workspace.io_error("read", &rel, &e))?;
            let file = FolderFile {
                path: rel.clone(),
                len: meta.len(),
                modified: meta.modified().map(|t| t.into_std()).unwrap_or(SystemTime::UNIX_EPOCH),
            };
            return Ok(FolderFiles {
                workspace,
                start: rel,
                files: vec![file],
                more: 0,
                skipped: Vec::new(),
            });
        }
        Start::Dir(rel) => rel,
    };
    let root = workspace.root().to_path_buf();
    let spec = WalkSpec {
        start: start.clone(),
        include_ignored: false,
        hidden: workspace.hidden().cloned(),
    };
    let (states, skipped) = walk::run_spec(
        &root,
        &spec,
        config,
        ctx.cancel_token(),
        Vec::<FolderFile>::new,
        |found, entry| {
            if entry.file_type().is_some_and(|t| t.is_file())
                && let Ok(rel) = entry.path().strip_prefix(&root)
            {
                let meta = entry.metadata().ok();
                found.push(FolderFile {
                    path: RelPath::from_walk(rel),
                    len: meta.as_ref().map_or(0, std::fs::Metadata::len),
                    modified: meta
                        .and_then(|m| m.modified().ok())
                        .unwrap_or(SystemTime::UNIX_EPOCH),
                });
            }
            ignore::WalkState::Continue
        },
    );
    if ctx.is_cancelled() {
        return Err(walk::cancelled("the folder walk"));
    }
    let mut files: Vec<FolderFile> = states.into_iter().flatten().collect();
    files.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    let more = files.len().saturating_sub(limit);
    files.truncate(limit);
    Ok(FolderFiles { workspace, start, files, more, skipped })
}

/// `output` with a last paragraph on what a walk skipped (ignore files that are not regular
/// files), when it skipped anything.
pub fn note_skipped(output: ToolOutput, skipped: &[String]) -> ToolOutput {
    walk::note_skipped(output, skipped)
}
