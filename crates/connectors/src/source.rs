//! The connector tools as a live source: offered while the project has a connector file. Whether
//! it has one is a `read_dir` of `.hands/connectors/`, so it never runs on a read call: it runs
//! after a mutating call (a `write_file` of a connector, `hands connectors add` through bash), on
//! a configuration refresh (a secret stored), and at most once a second when the tools are
//! listed (a file the user made in their editor, or `hands connectors add` in another terminal).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use hands_core::{DynTool, Refresh, ToolSource};

/// Listings look at the disk at most this often.
const LISTING_EVERY: Duration = Duration::from_secs(1);

/// See the module docs.
pub struct ConnectorSource {
    root: PathBuf,
    tools: Vec<Arc<dyn DynTool>>,
    present: AtomicBool,
    /// When a listing last looked.
    looked: Mutex<Instant>,
}

impl ConnectorSource {
    /// `tools`, offered while the project at `root` has a connector file.
    pub fn new(root: &Path, tools: Vec<Arc<dyn DynTool>>) -> Self {
        Self {
            root: root.to_owned(),
            tools,
            present: AtomicBool::new(has_connectors(root)),
            looked: Mutex::new(Instant::now()),
        }
    }

    /// Look at the project; true when the answer changed.
    fn look(&self) -> bool {
        let present = has_connectors(&self.root);
        let was = self.present.swap(present, Ordering::Relaxed);
        if was != present {
            tracing::info!(root = %self.root.display(), present, "the project's connectors changed");
        }
        was != present
    }
}

/// True when `.hands/connectors/` holds a file named like a connector.
pub fn has_connectors(root: &Path) -> bool {
    !crate::config::list(root).is_empty()
}

impl ToolSource for ConnectorSource {
    fn name(&self) -> &str {
        "connectors"
    }

    fn tools(&self) -> Vec<Arc<dyn DynTool>> {
        if self.present.load(Ordering::Relaxed) { self.tools.clone() } else { Vec::new() }
    }

    fn refresh(&self, why: Refresh) -> bool {
        if why == Refresh::Listing {
            let mut looked = self.looked.lock().unwrap_or_else(PoisonError::into_inner);
            if looked.elapsed() < LISTING_EVERY {
                return false;
            }
            *looked = Instant::now();
        }
        self.look()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connector_file_is_seen_on_the_next_mutation_and_listings_are_throttled() {
        let dir = tempfile::tempdir().unwrap();
        let source = ConnectorSource::new(dir.path(), Vec::new());
        assert!(!source.present.load(Ordering::Relaxed));
        std::fs::create_dir_all(dir.path().join(".hands/connectors")).unwrap();
        std::fs::write(dir.path().join(".hands/connectors/notes.txt"), "x").unwrap();
        assert!(!source.refresh(Refresh::Mutation), "a file that is no connector counts");
        std::fs::write(dir.path().join(".hands/connectors/api.toml"), "base_url = 'x'").unwrap();
        // A listing right after construction is throttled…
        assert!(!source.refresh(Refresh::Listing));
        // …a mutation is not.
        assert!(source.refresh(Refresh::Mutation));
        assert!(source.present.load(Ordering::Relaxed));
        std::fs::remove_file(dir.path().join(".hands/connectors/api.toml")).unwrap();
        assert!(source.refresh(Refresh::Config));
        assert!(!source.present.load(Ordering::Relaxed));
    }
}
