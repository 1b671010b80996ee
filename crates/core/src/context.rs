//! What a tool sees of its call: the session (root, mode, extensions), the turn, the call id, and the
//! call's cancellation token (a child of the session's, fired by abort or by the timeout middleware).

use std::path::Path;

use tokio_util::sync::CancellationToken;

use crate::{Mode, Session};

/// The context of one tool call. Cheap to clone, so that tools can move it into blocking tasks.
#[derive(Clone, Debug)]
pub struct Context {
    session: Session,
    call_id: String,
    turn: Option<String>,
    cancel: CancellationToken,
}

impl Context {
    /// A context for call `call_id` of `session`, with a fresh child token.
    pub fn new(session: &Session, call_id: impl Into<String>, turn: Option<String>) -> Self {
        Self {
            cancel: session.cancel_token().child_token(),
            session: session.clone(),
            call_id: call_id.into(),
            turn,
        }
    }

    /// The same context with another token (middleware narrows cancellation this way).
    #[must_use]
    pub fn with_cancel(&self, cancel: CancellationToken) -> Self {
        Self { cancel, ..self.clone() }
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
