//! A session: one MCP connection, agent or API session, or one `hands call`. It owns the mode, the
//! cancellation token that aborts everything in flight, and typed extensions where other crates keep
//! their per-session state (files seen, processes, todos) without this crate knowing their types.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

/// The session's mode: what the model may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Every tool.
    #[default]
    Build,
    /// Read-only research and planning ([`crate::PLAN_MODE_TOOLS`]).
    Plan,
}

impl std::str::FromStr for Mode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "build" => Ok(Self::Build),
            "plan" => Ok(Self::Plan),
            other => Err(format!("unknown mode `{other}`: expected `build` or `plan`")),
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Build => "build",
            Self::Plan => "plan",
        })
    }
}

type Extension = Arc<dyn Any + Send + Sync>;

struct Inner {
    id: String,
    project: String,
    root: PathBuf,
    one_shot: bool,
    mode: RwLock<Mode>,
    cancel: CancellationToken,
    extensions: Mutex<HashMap<TypeId, Extension>>,
    calls: AtomicU64,
}

/// A cheap-to-clone handle on one session.
#[derive(Clone)]
pub struct Session(Arc<Inner>);

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.0.id)
            .field("root", &self.0.root)
            .field("mode", &self.mode())
            .finish_non_exhaustive()
    }
}

impl Session {
    /// A long-lived session over `root`; the project id defaults to the root's path.
    pub fn new(id: impl Into<String>, root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        let project = root.to_string_lossy().into_owned();
        Self::build(id.into(), project, root, false)
    }

    /// The session of a single `hands call`: guards that need history (the stale-write guard) do
    /// not apply.
    pub fn one_shot(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        let project = root.to_string_lossy().into_owned();
        Self::build("one-shot".into(), project, root, true)
    }

    /// The same session settings with another project id (sandbox recovery counts per project).
    #[must_use]
    pub fn with_project(self, project: impl Into<String>) -> Self {
        let inner = &self.0;
        Self::build(inner.id.clone(), project.into(), inner.root.clone(), inner.one_shot)
    }

    fn build(id: String, project: String, root: PathBuf, one_shot: bool) -> Self {
        Self(Arc::new(Inner {
            id,
            project,
            root,
            one_shot,
            mode: RwLock::new(Mode::Build),
            cancel: CancellationToken::new(),
            extensions: Mutex::new(HashMap::new()),
            calls: AtomicU64::new(0),
        }))
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.0.id
    }

    /// The project this session works on.
    pub fn project(&self) -> &str {
        &self.0.project
    }

    /// The project root every path is confined to.
    pub fn root(&self) -> &Path {
        &self.0.root
    }

    /// True for the session of a single `hands call`.
    pub fn is_one_shot(&self) -> bool {
        self.0.one_shot
    }

    /// The current mode.
    pub fn mode(&self) -> Mode {
        *self.0.mode.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Switch mode; returns the previous one (front ends announce a changed tool list).
    pub fn set_mode(&self, mode: Mode) -> Mode {
        let mut guard = self.0.mode.write().unwrap_or_else(PoisonError::into_inner);
        std::mem::replace(&mut *guard, mode)
    }

    /// The token that aborts every call of this session.
    pub fn cancel_token(&self) -> &CancellationToken {
        &self.0.cancel
    }

    /// Abort everything in flight.
    pub fn abort(&self) {
        self.0.cancel.cancel();
    }

    /// A fresh id for a call that arrived without one.
    pub fn next_call_id(&self) -> String {
        let n = self.0.calls.fetch_add(1, Ordering::Relaxed) + 1;
        format!("call-{n}")
    }

    /// The session's instance of `T`, created with `T::default()` on first use.
    pub fn extension<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        let mut map = self.0.extensions.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = map.entry(TypeId::of::<T>()).or_insert_with(|| Arc::new(T::default()));
        match Arc::clone(entry).downcast::<T>() {
            Ok(value) => value,
            // The map is keyed by TypeId, so the stored value is always a T.
            Err(_) => unreachable!("extension map holds a value of another type"),
        }
    }

    /// Put a value in the session, replacing any previous one of the same type.
    pub fn insert_extension<T: Send + Sync + 'static>(&self, value: T) {
        let mut map = self.0.extensions.lock().unwrap_or_else(PoisonError::into_inner);
        map.insert(TypeId::of::<T>(), Arc::new(value));
    }

    /// The session's `T`, if one was inserted or created.
    pub fn get_extension<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        let map = self.0.extensions.lock().unwrap_or_else(PoisonError::into_inner);
        map.get(&TypeId::of::<T>()).cloned().and_then(|v| v.downcast::<T>().ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Counter(std::sync::atomic::AtomicUsize);

    #[test]
    fn extensions_are_per_session_and_typed() {
        let a = Session::new("a", "/tmp");
        let b = Session::new("b", "/tmp");
        a.extension::<Counter>().0.fetch_add(2, Ordering::SeqCst);
        a.extension::<Counter>().0.fetch_add(1, Ordering::SeqCst);
        assert_eq!(a.extension::<Counter>().0.load(Ordering::SeqCst), 3);
        assert_eq!(b.extension::<Counter>().0.load(Ordering::SeqCst), 0);
        assert!(b.get_extension::<String>().is_none());
        b.insert_extension(String::from("x"));
        assert_eq!(b.get_extension::<String>().as_deref().map(String::as_str), Some("x"));
    }

    #[test]
    fn mode_switches() {
        let s = Session::new("a", "/tmp");
        assert_eq!(s.mode(), Mode::Build);
        assert_eq!(s.set_mode(Mode::Plan), Mode::Build);
        assert_eq!(s.mode(), Mode::Plan);
        assert_eq!("plan".parse::<Mode>(), Ok(Mode::Plan));
        assert!("chaos".parse::<Mode>().is_err());
    }
}
