//! Checkpoints of a project's working tree, so that every turn of an agent can be undone.
//!
//! A [`Store`] lives outside the project (under the state folder) and holds compressed,
//! content-addressed objects (file contents, and one tree per folder as git stores them, so
//! unchanged folders are shared between checkpoints), one small record per checkpoint and an
//! index of file stats so that unchanged files are not read again. [`Store::snapshot`] walks the
//! tree with the project's ignore rules; [`Store::restore`] makes the tree equal to a checkpoint
//! through a journal, so a restore that is interrupted is finished by [`Store::recover`];
//! [`diff`] compares two checkpoints; [`Store::gc`] applies the [`Retention`].
//!
//! ```no_run
//! use hands_checkpoint::{Kind, Meta, Store};
//! let store = Store::open_for(std::path::Path::new("/my/project"))?;
//! let cp = store.snapshot(&Meta::new("session-1", Kind::TurnStart))?;
//! store.restore(cp.id, &Meta::new("session-1", Kind::Restore))?;
//! # Ok::<(), hands_checkpoint::Error>(())
//! ```

mod capture;
mod diff;
mod error;
mod index;
mod legacy;
mod lock;
mod manifest;
pub mod names;
mod objects;
mod restore;
mod retention;
mod settings;
mod snapshot;
mod store;
mod time;
mod tree;

pub use diff::{Change, ChangeKind, diff};
pub use error::Error;
pub use lock::TurnGuard;
pub use manifest::{Checkpoint, Entry, Kind, Meta, Rewound, Summary, Uncaptured};
pub use restore::Restored;
pub use retention::Gc;
pub use settings::{Retention, Settings};
pub use snapshot::Config;
pub use store::{Store, state_dir};
