//! `[fs]`: the limits of the file and search tools (docs/tools.md lists the defaults).

use serde::{Deserialize, Serialize};

/// Settings of the fs tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FsConfig {
    /// read_file: lines returned when no `limit` is given.
    pub read_limit: usize,
    /// read_file: characters kept of one line; the rest is cut with a marker.
    pub read_max_line_chars: usize,
    /// read_file: largest text file read whole; larger ones need `offset`/`limit`.
    pub read_max_bytes: u64,
    /// read_file: largest image returned.
    pub image_max_bytes: u64,
    /// write_file: refuse to overwrite a file this session has not read, or that changed since.
    pub stale_write_guard: bool,
    /// write_file/edit_file: largest content written.
    pub write_max_bytes: usize,
    /// Paths under `.git/` that write_file and edit_file may change anyway (e.g. `.git/info/exclude`).
    pub writable_protected: Vec<String>,
    /// Folders glob and grep never enter, and list_files shows collapsed.
    pub excluded_dirs: Vec<String>,
    /// glob: paths returned at most.
    pub glob_limit: usize,
    /// grep: matching lines (or files) returned when no `limit` is given.
    pub grep_limit: usize,
    /// grep: characters shown of a long matching line, around the match.
    pub grep_max_line_chars: usize,
    /// glob/grep: walker threads (0 = one per core).
    pub threads: usize,
    /// list_files: depth when no `depth` is given.
    pub list_depth: usize,
    /// list_files: entries shown at most.
    pub list_max_entries: usize,
}

impl Default for FsConfig {
    fn default() -> Self {
        Self {
            read_limit: 2000,
            read_max_line_chars: 2000,
            read_max_bytes: 1024 * 1024,
            image_max_bytes: 5 * 1024 * 1024,
            stale_write_guard: true,
            write_max_bytes: 16 * 1024 * 1024,
            writable_protected: Vec::new(),
            excluded_dirs: vec!["node_modules".into(), ".git".into(), "dist".into()],
            glob_limit: 1000,
            grep_limit: 50,
            grep_max_line_chars: 500,
            threads: 0,
            list_depth: 2,
            list_max_entries: 1000,
        }
    }
}
