//! The errors of the checkpoint store, each with the path or checkpoint it concerns.

use std::path::PathBuf;

/// What went wrong in the checkpoint store.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file or folder could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A checkpoint with this number does not exist (never made, or removed by gc).
    #[error("checkpoint {0} does not exist; list the checkpoints to see which ones do")]
    NotFound(u64),
    /// A checkpoint's record is not valid JSON.
    #[error("{path}: corrupt checkpoint data: {source}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The parse error.
        source: serde_json::Error,
    },
    /// An object's content does not match its id.
    #[error("object {0} is missing or damaged in the checkpoint store")]
    BadObject(String),
    /// A walker thread panicked while snapshotting.
    #[error("the snapshot walk failed; try again")]
    Poisoned,
    /// A turn is running on the project (in this hands or another): restores wait for it.
    #[error(
        "a turn is running on this project (in this or another hands process): wait for it to \
         end, or abort it, then restore"
    )]
    Busy,
    /// No state folder could be found (neither HANDS_STATE_DIR, XDG_STATE_HOME nor HOME).
    #[error("no state folder: set HANDS_STATE_DIR or HOME")]
    NoStateDir,
}

/// Adds the path to an io::Error.
pub(crate) trait IoContext<T> {
    /// Wraps the error with `path`.
    fn at(self, path: &std::path::Path) -> Result<T, Error>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn at(self, path: &std::path::Path) -> Result<T, Error> {
        self.map_err(|source| Error::Io { path: path.to_path_buf(), source })
    }
}
