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

impl ToolError {
    /// A tool's answer as it enters the chain: a failure the model can act on becomes a result
    /// (`is_error`) here, so that every step of the chain sees it as one; only a broken runtime
    /// and a lost sandbox travel on as errors.
    pub fn into_chain(
        result: Result<crate::ToolOutput, ToolError>,
    ) -> Result<crate::ToolOutput, ChainError> {
        match result {
            Ok(output) => Ok(output),
            Err(ToolError::RespondToModel(message)) => Ok(crate::ToolOutput::error(message)),
            Err(ToolError::Fatal(message)) => Err(ChainError::Fatal(message)),
            Err(ToolError::SandboxGone(reason)) => Err(ChainError::SandboxGone(reason)),
        }
    }
}

/// What travels up the middleware chain as an error: a broken runtime or a lost sandbox. A
/// failure the model can act on is a result with `is_error` from the start
/// ([`ToolError::into_chain`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChainError {
    /// The runtime is broken; the front end reports a protocol-level error.
    #[error("{0}")]
    Fatal(String),
    /// The sandbox that ran the call is gone; the recover middleware may get a fresh one and retry.
    #[error("sandbox gone: {0}")]
    SandboxGone(String),
}

/// A failure of [`crate::Registry::dispatch`] that is not a tool result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DispatchError {
    /// A tool or middleware failed fatally (including exhausted sandbox recovery).
    #[error("{0}")]
    Fatal(String),
}
