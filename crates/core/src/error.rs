//! The two ways a tool fails: tell the model (it can fix it) or fail the runtime.

/// What a tool returns when it cannot produce a normal result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The model can act on this: a bad argument, no match, a missing file, a timeout. It becomes a
    /// normal result with `is_error = true`; the message says what to do next.
    #[error("{0}")]
    RespondToModel(String),
    /// The runtime is broken; the front end reports a protocol-level error.
    #[error("{0}")]
    Fatal(String),
    /// The sandbox that ran the call is gone; the recover middleware may get a fresh one and retry.
    #[error("sandbox gone: {0}")]
    SandboxGone(String),
}

impl ToolError {
    /// Shorthand for [`ToolError::RespondToModel`].
    pub fn model(message: impl Into<String>) -> Self {
        Self::RespondToModel(message.into())
    }
}

/// A failure of [`crate::Registry::dispatch`] that is not a tool result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DispatchError {
    /// A tool or middleware failed fatally (including exhausted sandbox recovery).
    #[error("{0}")]
    Fatal(String),
}
