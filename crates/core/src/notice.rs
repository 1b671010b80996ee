//! Notices: news for the model that is not the answer to the call it rides on (a background
//! process finished, the preview logged new runtime errors). Tools queue them on the [`Session`];
//! the registry moves them onto the next [`ToolOutput`] of that session as data, and each front end
//! renders them where a model reads text ([`Notice::render`]).
//!
//! [`Session`]: crate::Session
//! [`ToolOutput`]: crate::ToolOutput

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a notice is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NoticeKind {
    /// A background process exited, timed out or was stopped.
    ProcessExited,
    /// A background process or terminal printed what it was asked to wake the model for.
    ProcessOutput,
    /// The preview recorded runtime errors the model has not read yet.
    RuntimeErrors,
    /// A language server reported new errors (or fixed ones) in files a call changed.
    Diagnostics,
    /// Anything else.
    Other,
}

/// One notice for the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Notice {
    /// What it is about.
    pub kind: NoticeKind,
    /// The news in words, for the model.
    pub text: String,
}

impl Notice {
    /// A notice of `kind`.
    pub fn new(kind: NoticeKind, text: impl Into<String>) -> Self {
        Self { kind, text: text.into() }
    }

    /// The notice as a model reads it, after a tool's result: `[notice] …`.
    pub fn render(&self) -> String {
        format!("[notice] {}", self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_with_the_prefix_models_are_told_about() {
        let notice = Notice::new(NoticeKind::ProcessExited, "process p1 exited with code 0");
        assert_eq!(notice.render(), "[notice] process p1 exited with code 0");
        assert_eq!(
            serde_json::to_value(&notice).unwrap(),
            serde_json::json!({"kind": "process_exited", "text": "process p1 exited with code 0"})
        );
    }
}
