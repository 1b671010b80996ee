//! Where tools come from: [`ToolSource`]s that can add and remove tools while sessions run.
//!
//! The registry asks each source for its current tools and keeps the result as an immutable
//! snapshot (see [`crate::Registry`]); the per-call path only reads that snapshot. A source changes
//! its tools in two ways: the registry asks it to look again ([`ToolSource::refresh`] with the
//! reason: configuration changed, a mutating call finished, the tools are being listed), or the
//! source learns of a change itself (a remote MCP server's `list_changed`) and says so through the
//! [`Changes`] handle it got in [`ToolSource::start`]. Built-ins and condition-gated tools are the
//! first source, [`Builtins`]; their conditions are re-read on [`Refresh::Config`].

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError, RwLock, Weak};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::DynTool;
use crate::project::ProjectFacts;

/// Listings look at the project's files at most this often.
const PROBE_EVERY: Duration = Duration::from_secs(1);

/// Why the registry asks its sources to look again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refresh {
    /// Configuration changed (or a secret was stored): re-read conditions.
    Config,
    /// A call of a tool that is not read-only finished: the project may have changed.
    Mutation,
    /// The tools are being listed (MCP `tools/list`, an agent's next model call). Sources that
    /// look at the disk throttle this one.
    Listing,
}

/// A source of tools. See the module docs.
pub trait ToolSource: Send + Sync + 'static {
    /// A short name for logs (`builtins`, `mcp`, `preview`).
    fn name(&self) -> &str;

    /// The tools the source offers now, in the order they are listed. Return the same `Arc`s
    /// while nothing changed: the registry compares them to decide whether its list changed.
    fn tools(&self) -> Vec<Arc<dyn DynTool>>;

    /// Look again because of `why`; true when [`ToolSource::tools`] may have changed. Must be
    /// cheap for reasons the source does not care about (it runs on the call path after every
    /// mutating call).
    fn refresh(&self, why: Refresh) -> bool {
        let _ = why;
        false
    }

    /// Called once when the registry is built, with the handle to report changes the source
    /// learns of by itself.
    fn start(&self, changes: Changes) {
        let _ = changes;
    }
}

/// What a [`Changes`] handle reaches: the registry's list, rebuilt on demand.
pub(crate) trait Rebuild: Send + Sync {
    /// Rebuild the list from the sources; true when it changed.
    fn rebuild(&self) -> bool;
}

/// A source's handle to tell the registry its tools changed.
#[derive(Clone)]
pub struct Changes(pub(crate) Weak<dyn Rebuild>);

impl Changes {
    /// The source's tools changed: rebuild the registry's list now (subscribers hear of it when
    /// the list differs). False when the registry is gone.
    pub fn changed(&self) -> bool {
        match self.0.upgrade() {
            Some(live) => {
                live.rebuild();
                true
            }
            None => false,
        }
    }
}

/// What conditional registration can look at: the merged configuration, the environment, the
/// names (never the values) of the secrets stored for the project, and the project's kind.
#[derive(Debug, Clone, Default)]
pub struct Conditions {
    /// The merged configuration, as JSON.
    pub config: Value,
    /// Environment variables.
    pub env: BTreeMap<String, String>,
    /// Names of the secrets the user's store grants the project (its own and the global ones).
    pub secrets: BTreeSet<String>,
    /// The project's kind ([`ProjectFacts::probe`] of the registry's project root), looked at
    /// again after every call that may change the project; `None` when the registry was given no
    /// root (a library's registry, a test's): then every kind holds ([`Conditions::project`]).
    pub project: Option<ProjectFacts>,
}

impl Conditions {
    /// From `config` and this process's environment, with no stored secret.
    pub fn from_process(config: Value) -> Self {
        Self { config, env: std::env::vars().collect(), secrets: BTreeSet::new(), project: None }
    }

    /// With the names of the secrets stored for the project.
    #[must_use]
    pub fn with_secrets(mut self, names: impl IntoIterator<Item = String>) -> Self {
        self.secrets = names.into_iter().collect();
        self
    }

    /// True when the variable is set and not empty.
    pub fn has_env(&self, name: &str) -> bool {
        self.env.get(name).is_some_and(|v| !v.is_empty())
    }

    /// True when the project is of the kind `test` asks for, or its kind is unknown (no root).
    pub fn project(&self, test: impl Fn(&ProjectFacts) -> bool) -> bool {
        self.project.as_ref().is_none_or(test)
    }

    /// True when a key called `name` exists: stored as a secret for the project, or set in the
    /// environment. Tools offered "when their key exists" use this, so that storing the key makes
    /// them appear (the front end refreshes the registry on every change of the store).
    pub fn has_key(&self, name: &str) -> bool {
        self.secrets.contains(name) || self.has_env(name)
    }
}

/// Reads the current [`Conditions`]: at build and on every [`Refresh::Config`].
pub type ConditionsReader = Arc<dyn Fn() -> Conditions + Send + Sync>;

/// A condition under which a built-in tool is offered.
pub type Condition = Arc<dyn Fn(&Conditions) -> bool + Send + Sync>;

/// The built-in tools, each with an optional condition.
pub(crate) struct Builtins {
    entries: Vec<(Option<Condition>, Arc<dyn DynTool>)>,
    reader: ConditionsReader,
    conditions: RwLock<Conditions>,
    /// The project whose kind the conditions see, if any.
    root: Option<PathBuf>,
    /// When a listing last looked at the project.
    probed: Mutex<Instant>,
}

impl Builtins {
    pub(crate) fn new(
        entries: Vec<(Option<Condition>, Arc<dyn DynTool>)>,
        reader: ConditionsReader,
        root: Option<PathBuf>,
    ) -> Self {
        let mut fresh = reader();
        fresh.project = root.as_deref().map(ProjectFacts::probe);
        let conditions = RwLock::new(fresh);
        Self { entries, reader, conditions, root, probed: Mutex::new(Instant::now()) }
    }

    /// Look at the project again: true when its kind changed.
    fn probe(&self) -> bool {
        let Some(root) = &self.root else { return false };
        let facts = Some(ProjectFacts::probe(root));
        let mut conditions = self.conditions.write().unwrap_or_else(PoisonError::into_inner);
        if conditions.project == facts {
            return false;
        }
        conditions.project = facts;
        true
    }

    /// True when some tool has a condition (only then is a refresh worth anything).
    fn gated(&self) -> bool {
        self.entries.iter().any(|(condition, _)| condition.is_some())
    }
}

impl ToolSource for Builtins {
    fn name(&self) -> &str {
        "builtins"
    }

    fn tools(&self) -> Vec<Arc<dyn DynTool>> {
        let conditions = self.conditions.read().unwrap_or_else(PoisonError::into_inner);
        self.entries
            .iter()
            .filter(|(condition, _)| condition.as_ref().is_none_or(|holds| holds(&conditions)))
            .map(|(_, tool)| Arc::clone(tool))
            .collect()
    }

    fn refresh(&self, why: Refresh) -> bool {
        if !self.gated() {
            return false;
        }
        match why {
            Refresh::Config => {
                let mut fresh = (self.reader)();
                fresh.project = self.root.as_deref().map(ProjectFacts::probe);
                *self.conditions.write().unwrap_or_else(PoisonError::into_inner) = fresh;
                true
            }
            Refresh::Mutation => self.probe(),
            Refresh::Listing => {
                let mut probed = self.probed.lock().unwrap_or_else(PoisonError::into_inner);
                if probed.elapsed() < PROBE_EVERY {
                    return false;
                }
                *probed = Instant::now();
                drop(probed);
                self.probe()
            }
        }
    }
}
