//! A session: one MCP connection, agent or API session, or one `hands call`. It owns the mode, the
//! cancellation token that aborts everything in flight, and typed extensions where other crates keep
//! their per-session state (files seen, processes, todos) without this crate knowing their types.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::Notice;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

/// The session's mode: what the model may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Building: the tools whose [`Policy`](crate::Policy) offers them here (nearly all).
    #[default]
    Build,
    /// Read-only research and planning: the tools whose [`Policy`](crate::Policy) offers them here.
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

/// The extension map's hasher: a `TypeId` is already a hash (the compiler's), so it is used as it
/// is rather than hashed again with SipHash on each of the few look-ups every call makes.
#[derive(Default, Clone, Copy)]
struct TypeIdHash;

impl std::hash::BuildHasher for TypeIdHash {
    type Hasher = TypeIdHasher;

    fn build_hasher(&self) -> TypeIdHasher {
        TypeIdHasher(0)
    }
}

#[derive(Default)]
struct TypeIdHasher(u64);

impl std::hash::Hasher for TypeIdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write_u64(&mut self, n: u64) {
        self.0 ^= n;
    }

    // `TypeId` writes a `u64`; should it ever write bytes instead, they are folded in (FNV-1a).
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0 ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// Work to do when the session closes (stop its processes, flush its logs).
pub type Closer = Box<dyn FnOnce() -> crate::BoxFuture<'static, ()> + Send>;

/// Asked for a notice each time the queued notices are taken: for news that is a live count rather
/// than an event to queue ("2 new runtime errors in the preview"). It must not touch the session's
/// notices itself.
pub type NoticeSource = Box<dyn Fn() -> Option<Notice> + Send + Sync>;

/// Something that wants to hear of changed files and may answer with notices: how a tool that
/// wrote files hears what a watcher of the session (a language server's new type errors) has to
/// say, without knowing who watches. A crate that watches adds one with
/// [`Session::add_change_watcher`]; a tool that wrote files awaits [`Session::files_changed`]
/// and puts the notices on its own result. Each watcher bounds its own wait (a short budget,
/// never the tool's limit) and queues what comes later with [`Session::push_notice`].
pub trait ChangeWatcher: Send + Sync + 'static {
    /// `paths` (absolute, under the session's root) were just written, created, moved or
    /// deleted. The answer must come within the watcher's own short budget.
    fn changed(
        &self,
        session: &Session,
        paths: &[PathBuf],
    ) -> crate::BoxFuture<'static, Vec<Notice>>;
}

struct Inner {
    id: String,
    project: String,
    root: PathBuf,
    one_shot: std::sync::atomic::AtomicBool,
    mode: tokio::sync::watch::Sender<Mode>,
    /// The current abort generation: `abort` fires it and installs a fresh one.
    cancel: Mutex<CancellationToken>,
    /// Fired once, when the session closes.
    closed: CancellationToken,
    extensions: Mutex<HashMap<TypeId, Extension, TypeIdHash>>,
    notices: Mutex<Vec<Notice>>,
    notice_sources: Mutex<Vec<NoticeSource>>,
    hidden: Mutex<std::collections::HashSet<String>>,
    closers: Mutex<Vec<Closer>>,
    watchers: Mutex<Vec<Arc<dyn ChangeWatcher>>>,
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
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let id = format!("call-{}-{nanos:x}", std::process::id());
        Self::build(id, project, root, true)
    }

    /// The same session settings with another project id (sandbox recovery counts per project).
    #[must_use]
    pub fn with_project(self, project: impl Into<String>) -> Self {
        let inner = &self.0;
        Self::build(inner.id.clone(), project.into(), inner.root.clone(), self.is_one_shot())
    }

    fn build(id: String, project: String, root: PathBuf, one_shot: bool) -> Self {
        let closed = CancellationToken::new();
        Self(Arc::new(Inner {
            id,
            project,
            root,
            one_shot: std::sync::atomic::AtomicBool::new(one_shot),
            mode: tokio::sync::watch::Sender::new(Mode::Build),
            cancel: Mutex::new(closed.child_token()),
            closed,
            extensions: Mutex::new(HashMap::default()),
            notices: Mutex::new(Vec::new()),
            notice_sources: Mutex::new(Vec::new()),
            hidden: Mutex::new(std::collections::HashSet::new()),
            closers: Mutex::new(Vec::new()),
            watchers: Mutex::new(Vec::new()),
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
        self.0.one_shot.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Leave `tool` out of the tool lists front ends show this session — for a tool registered for
    /// every session that this one cannot use (spawn_subagent over MCP when the client offers no
    /// sampling and no model is configured). A call of it still gets the tool's own answer.
    pub fn hide_tool(&self, tool: &str) {
        self.0.hidden.lock().unwrap_or_else(PoisonError::into_inner).insert(tool.to_owned());
    }

    /// True when [`Self::hide_tool`] hid `tool` for this session.
    pub fn is_tool_hidden(&self, tool: &str) -> bool {
        let hidden = self.0.hidden.lock().unwrap_or_else(PoisonError::into_inner);
        !hidden.is_empty() && hidden.contains(tool)
    }

    /// Mark the session as serving a single call, for a front end that learns it only after the
    /// session exists: an inner sandbox hands whose host serves a `hands call`.
    pub fn mark_one_shot(&self) {
        self.0.one_shot.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// The current mode.
    pub fn mode(&self) -> Mode {
        *self.0.mode.borrow()
    }

    /// Switch mode; returns the previous one (front ends announce a changed tool list).
    pub fn set_mode(&self, mode: Mode) -> Mode {
        self.0.mode.send_replace(mode)
    }

    /// Changes of mode, for front ends that announce a changed tool list (MCP's
    /// `notifications/tools/list_changed`).
    pub fn mode_changes(&self) -> tokio::sync::watch::Receiver<Mode> {
        self.0.mode.subscribe()
    }

    /// The token that aborts every call in flight now (a child of it is given to each call).
    pub fn cancel_token(&self) -> CancellationToken {
        self.0.cancel.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Abort every call in flight. The session goes on: later calls run normally.
    pub fn abort(&self) {
        let mut guard = self.0.cancel.lock().unwrap_or_else(PoisonError::into_inner);
        guard.cancel();
        *guard =
            if self.0.closed.is_cancelled() { guard.clone() } else { self.0.closed.child_token() };
    }

    /// True once [`Session::close`] ran.
    pub fn is_closed(&self) -> bool {
        self.0.closed.is_cancelled()
    }

    /// Fired when the session closes.
    pub fn closed_token(&self) -> &CancellationToken {
        &self.0.closed
    }

    /// Register work for when the session closes; closers run newest first.
    pub fn on_close(&self, closer: Closer) {
        self.0.closers.lock().unwrap_or_else(PoisonError::into_inner).push(closer);
    }

    /// End the session: abort what is in flight, then run the closers, newest first. Idempotent.
    pub async fn close(&self) {
        self.0.closed.cancel();
        self.abort();
        let closers =
            std::mem::take(&mut *self.0.closers.lock().unwrap_or_else(PoisonError::into_inner));
        for closer in closers.into_iter().rev() {
            closer().await;
        }
    }

    /// Queue a notice for the model (a background process finished, …); it rides on the next tool
    /// result of this session.
    pub fn push_notice(&self, notice: Notice) {
        self.0.notices.lock().unwrap_or_else(PoisonError::into_inner).push(notice);
    }

    /// Take the queued notices, oldest first, then what each notice source has to say now; their
    /// secrets replaced (a notice reaches the model outside a result's redaction).
    pub fn take_notices(&self) -> Vec<Notice> {
        let mut notices =
            std::mem::take(&mut *self.0.notices.lock().unwrap_or_else(PoisonError::into_inner));
        let sources = self.0.notice_sources.lock().unwrap_or_else(PoisonError::into_inner);
        notices.extend(sources.iter().filter_map(|source| source()));
        for notice in &mut notices {
            if let std::borrow::Cow::Owned(clean) = crate::redact::text(&notice.text) {
                notice.text = clean;
            }
        }
        notices
    }

    /// Add a source of notices, asked each time the notices are taken (after every tool call).
    pub fn add_notice_source(&self, source: NoticeSource) {
        self.0.notice_sources.lock().unwrap_or_else(PoisonError::into_inner).push(source);
    }

    /// Add a watcher of changed files ([`ChangeWatcher`]).
    pub fn add_change_watcher(&self, watcher: Arc<dyn ChangeWatcher>) {
        self.0.watchers.lock().unwrap_or_else(PoisonError::into_inner).push(watcher);
    }

    /// True when somebody watches changed files (a writer skips collecting paths otherwise).
    pub fn watches_changes(&self) -> bool {
        !self.0.watchers.lock().unwrap_or_else(PoisonError::into_inner).is_empty()
    }

    /// Tell the watchers that `paths` changed; their notices, in the order they were added. Each
    /// watcher bounds its own wait.
    pub async fn files_changed(&self, paths: &[PathBuf]) -> Vec<Notice> {
        let watchers = self.0.watchers.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let mut notices = Vec::new();
        for watcher in watchers {
            notices.extend(watcher.changed(self, paths).await);
        }
        notices
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
    fn abort_cancels_in_flight_work_but_the_session_goes_on() {
        let s = Session::new("a", "/tmp");
        let before = s.cancel_token();
        s.abort();
        assert!(before.is_cancelled());
        assert!(!s.cancel_token().is_cancelled());
        assert!(!s.is_closed());
    }

    #[tokio::test]
    async fn close_runs_closers_newest_first_once() {
        let s = Session::new("a", "/tmp");
        let order = Arc::new(Mutex::new(Vec::new()));
        for i in 0..3 {
            let order = Arc::clone(&order);
            s.on_close(Box::new(move || Box::pin(async move { order.lock().unwrap().push(i) })));
        }
        let token = s.cancel_token();
        s.close().await;
        s.close().await;
        assert_eq!(*order.lock().unwrap(), vec![2, 1, 0]);
        assert!(token.is_cancelled() && s.is_closed());
        assert!(s.cancel_token().is_cancelled(), "a closed session stays aborted");
    }

    fn other(text: &str) -> Notice {
        Notice::new(crate::NoticeKind::Other, text)
    }

    #[test]
    fn notices_are_taken_once_in_order() {
        let s = Session::new("a", "/tmp");
        s.push_notice(other("one"));
        s.push_notice(other("two"));
        assert_eq!(s.take_notices(), vec![other("one"), other("two")]);
        assert!(s.take_notices().is_empty());
    }

    #[test]
    fn notice_sources_speak_after_the_queue_when_they_have_news() {
        let s = Session::new("a", "/tmp");
        let news = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let seen = Arc::clone(&news);
        s.add_notice_source(Box::new(move || {
            let n = seen.swap(0, Ordering::SeqCst);
            (n > 0).then(|| other(&format!("{n} new")))
        }));
        assert!(s.take_notices().is_empty());
        news.store(2, Ordering::SeqCst);
        s.push_notice(other("queued"));
        assert_eq!(s.take_notices(), vec![other("queued"), other("2 new")]);
        assert!(s.take_notices().is_empty());
    }

    struct Echo;

    impl super::ChangeWatcher for Echo {
        fn changed(
            &self,
            _: &Session,
            paths: &[PathBuf],
        ) -> crate::BoxFuture<'static, Vec<Notice>> {
            let text = format!("{} changed", paths.len());
            Box::pin(async move { vec![other(&text)] })
        }
    }

    #[tokio::test]
    async fn change_watchers_answer_with_notices() {
        let s = Session::new("a", "/tmp");
        assert!(!s.watches_changes());
        assert!(s.files_changed(&[PathBuf::from("/tmp/a.ts")]).await.is_empty());
        s.add_change_watcher(Arc::new(Echo));
        assert!(s.watches_changes());
        let paths = [PathBuf::from("/tmp/a.ts"), PathBuf::from("/tmp/b.ts")];
        assert_eq!(s.files_changed(&paths).await, vec![other("2 changed")]);
    }

    #[test]
    fn one_shot_sessions_get_distinct_ids() {
        let a = Session::one_shot("/tmp");
        std::thread::sleep(std::time::Duration::from_millis(1));
        let b = Session::one_shot("/tmp");
        assert_ne!(a.id(), b.id());
        assert!(a.is_one_shot());
    }

    #[test]
    fn mode_switches() {
        let s = Session::new("a", "/tmp");
        let mut changes = s.mode_changes();
        assert_eq!(s.mode(), Mode::Build);
        assert_eq!(s.set_mode(Mode::Plan), Mode::Build);
        assert_eq!(s.mode(), Mode::Plan);
        assert!(changes.has_changed().unwrap());
        assert_eq!(*changes.borrow_and_update(), Mode::Plan);
        assert_eq!("plan".parse::<Mode>(), Ok(Mode::Plan));
        assert!("chaos".parse::<Mode>().is_err());
    }
}
