//! Checkpoints of a project's working tree, so that every turn of an agent can be undone.
//!
//! A [`Store`] lives outside the project (under the state folder) and holds compressed,
//! content-addressed objects, one manifest per checkpoint and an index of file stats so that
//! unchanged files are not read again. [`Store::snapshot`] walks the tree with the project's ignore
//! rules; [`Store::restore`] makes the tree equal to a checkpoint through a journal, so a restore
//! that is interrupted is finished by [`Store::recover`]; [`diff`] compares two checkpoints.
//!
//! ```no_run
//! let store = hands_checkpoint::Store::open_for(std::path::Path::new("/my/project"))?;
//! let cp = store.snapshot("session-1", 1, "before turn 1")?;
//! store.restore(cp.id)?;
//! # Ok::<(), hands_checkpoint::Error>(())
//! ```

mod diff;
mod error;
mod manifest;
mod objects;
mod restore;
mod retention;
mod snapshot;
mod store;

pub use diff::{Change, ChangeKind, Summary, diff};
pub use error::Error;
pub use manifest::{Checkpoint, Entry};
pub use restore::Restored;
pub use retention::{Gc, Retention};
pub use snapshot::Config;
pub use store::{Store, state_dir};
