//! What a tool sees of its call: the session (root, mode, extensions), the turn, the call id, and the
//! call's cancellation token (a child of the session's, fired by abort or by the timeout middleware).

use std::path::Path;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::{Mode, Session};

/// One progress report of a long call (MCP `notifications/progress`).
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// Work done so far (bytes, files, seconds — grows with each report).
    pub progress: f64,
    /// The total, when known.
    pub total: Option<f64>,
    /// What is happening, for people.
    pub message: Option<String>,
}

/// Where a call's progress reports go (set by front ends that can forward them).
pub type ProgressSink = Arc<dyn Fn(Progress) + Send + Sync>;

/// The context of one tool call. Cheap to clone, so that tools can move it into blocking tasks.
#[derive(Clone)]
pub struct Context {
    session: Session,
    // Shared, not copied: every middleware that keeps the context clones it.
    call_id: Arc<str>,
    turn: Option<Arc<str>>,
    cancel: CancellationToken,
    progress: Option<ProgressSink>,
    /// What the user said yes to, once they did (set by the approval step).
    approved: Option<Arc<crate::approval::Approved>>,
    /// Set when the user declined the call (its span's outcome is `denied`).
    denied: Arc<std::sync::atomic::AtomicBool>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("session", &self.session)
            .field("call_id", &self.call_id)
            .field("turn", &self.turn)
            .field("progress", &self.progress.is_some())
            .finish_non_exhaustive()
    }
}

impl Context {
    /// A context for call `call_id` of `session`, with a fresh child token.
    pub fn new(session: &Session, call_id: impl Into<Arc<str>>, turn: Option<String>) -> Self {
        Self {
            cancel: session.cancel_token().child_token(),
            session: session.clone(),
            call_id: call_id.into(),
            turn: turn.map(Arc::from),
            progress: None,
            approved: None,
            denied: Arc::default(),
        }
    }

    /// The same context reporting progress to `sink`.
    #[must_use]
    pub fn with_progress(mut self, sink: Option<ProgressSink>) -> Self {
        self.progress = sink;
        self
    }

    /// True when somebody listens to progress reports (tools may skip the work of making them).
    pub fn wants_progress(&self) -> bool {
        self.progress.is_some()
    }

    /// Report progress of this call (ignored when nobody listens).
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        if let Some(sink) = &self.progress {
            // A progress message reaches the client outside the result: redacted here.
            let message = message.map(|m| match crate::redact::text(&m) {
                std::borrow::Cow::Borrowed(_) => m,
                std::borrow::Cow::Owned(clean) => clean,
            });
            sink(Progress { progress, total, message });
        }
    }

    /// The same context with another token (middleware narrows cancellation this way).
    #[must_use]
    pub fn with_cancel(&self, cancel: CancellationToken) -> Self {
        Self { cancel, ..self.clone() }
    }

    /// The same context after the user approved the call as `approved` showed it.
    #[must_use]
    pub fn with_approved(mut self, approved: crate::approval::Approved) -> Self {
        self.approved = Some(Arc::new(approved));
        self
    }

    /// What the user approved of this call, as they were shown it; `None` when nobody was asked
    /// (`approval = "auto"`, a call that needs no approval). A tool that computes its plan again
    /// when it runs compares it with this, so that what runs is what was shown.
    pub fn approved(&self) -> Option<&crate::approval::Approved> {
        self.approved.as_deref()
    }

    /// Note that the user declined this call (the approval step does).
    pub fn mark_denied(&self) {
        self.denied.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// True once the user declined this call.
    pub fn was_denied(&self) -> bool {
        self.denied.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The project root.
    pub fn root(&self) -> &Path {
        self.session.root()
    }

    /// The session's mode now.
    pub fn mode(&self) -> Mode {
        self.session.mode()
    }

    /// The session.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// This call's id.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// The turn, if the front end has turns.
    pub fn turn(&self) -> Option<&str> {
        self.turn.as_deref()
    }

    /// Fired when the call is aborted or times out; tools stop work and kill their processes.
    pub fn cancel_token(&self) -> &CancellationToken {
        &self.cancel
    }

    /// True once the call was aborted or timed out.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }
}
