//! The preview of a session, as front ends see it: its stage, the runtime errors it collected
//! (the one row type read_runtime_errors returns and the session API sends) and the
//! [`PreviewService`] the preview crate installs on the registry
//! ([`crate::RegistryBuilder::service`]), through which a host reads the preview's state, takes a
//! screenshot and lists the errors without calling a tool by name and without moving the model's
//! read cursor.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{BoxFuture, Session};

/// Where the preview is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Not opened, or closed.
    #[default]
    Stopped,
    /// Running the typecheck command.
    Typechecking,
    /// Running the build command.
    Building,
    /// Starting the server and waiting until it answers.
    StartingServer,
    /// Starting Chromium.
    LaunchingBrowser,
    /// Connecting to Chromium and opening the page.
    Attaching,
    /// The page is open and watched.
    Ready,
    /// Something failed: see the last error.
    Error,
}

impl Stage {
    /// The word used in results.
    pub fn word(self) -> &'static str {
        match self {
            Self::Stopped => "stopped",
            Self::Typechecking => "typechecking",
            Self::Building => "building",
            Self::StartingServer => "starting_server",
            Self::LaunchingBrowser => "launching_browser",
            Self::Attaching => "attaching",
            Self::Ready => "ready",
            Self::Error => "error",
        }
    }
}

/// What kind of problem a runtime error is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// An uncaught exception.
    Exception,
    /// A promise rejected with nobody to catch it.
    UnhandledRejection,
    /// `console.error` (or a failed `console.assert`).
    ConsoleError,
    /// `console.warn`.
    ConsoleWarning,
    /// An error the browser itself logged (security, deprecation, intervention, …).
    BrowserError,
    /// A warning the browser itself logged.
    BrowserWarning,
    /// A request that got no response (refused, blocked, DNS, …).
    RequestFailed,
    /// A response with status 400 or more.
    HttpError,
    /// A typecheck error.
    Typecheck,
    /// A build error.
    Build,
    /// The server or the browser stopped, or the page crashed.
    Crash,
}

impl ErrorKind {
    /// Warnings are reported but not counted in the "new errors" notice.
    pub fn is_warning(self) -> bool {
        matches!(self, Self::ConsoleWarning | Self::BrowserWarning)
    }

    /// Its label in text results.
    pub fn label(self) -> &'static str {
        match self {
            Self::Exception => "uncaught exception",
            Self::UnhandledRejection => "unhandled rejection",
            Self::ConsoleError => "console.error",
            Self::ConsoleWarning => "console.warn",
            Self::BrowserError => "browser error",
            Self::BrowserWarning => "browser warning",
            Self::RequestFailed => "request failed",
            Self::HttpError => "HTTP error",
            Self::Typecheck => "typecheck",
            Self::Build => "build",
            Self::Crash => "crash",
        }
    }
}

/// One stack frame, 1-based.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Frame {
    /// Function name (empty for top-level code).
    pub function: String,
    /// Script URL (or file) as the browser saw it.
    pub url: String,
    /// Line, 1-based.
    pub line: u32,
    /// Column, 1-based.
    pub column: u32,
    /// `file:line:col` in the original source, when a source map told.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original: Option<String>,
}

impl Frame {
    /// `url:line:col`.
    pub fn location(&self) -> String {
        format!("{}:{}:{}", self.url, self.line, self.column)
    }
}

/// One normalized runtime error and how often it happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeError {
    /// Sequence number of its last occurrence (what read_runtime_errors' `since` compares with).
    pub seq: u64,
    /// Kind of problem.
    pub kind: ErrorKind,
    /// The message.
    pub message: String,
    /// Where: `url:line:col` (or `file:line:col` for build errors).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// The original source location, when a source map told.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_location: Option<String>,
    /// Top stack frames.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stack: Vec<Frame>,
    /// Occurrences.
    pub count: u64,
    /// The page load it happened in (1 for the first); 0 for build and typecheck errors.
    pub page_load: u64,
    /// Milliseconds since the Unix epoch of the last occurrence.
    pub last_at_ms: u64,
}

/// How many runtime errors the preview collected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct ErrorCounts {
    /// Entries that are errors (each counted once however often it happened).
    pub errors: usize,
    /// Entries that are warnings.
    pub warnings: usize,
    /// Occurrences of all entries (repeats included).
    pub occurrences: u64,
    /// Entries the model has not read yet with read_runtime_errors.
    pub unread: usize,
    /// Entries dropped because more than `preview.max_errors` were kept.
    pub dropped: u64,
}

/// The preview of a session now.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct PreviewState {
    /// The session's project has a preview (configured, or detected: Vite, Bun, `index.html`).
    pub available: bool,
    /// Where the preview is.
    pub stage: Stage,
    /// Server and browser are up and the page is attached.
    pub running: bool,
    /// The app's URL (on the server's loopback).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The app server's port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// `vite`, `bun`, `static` or `configured`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// What went wrong last (the stage is `error`, or a rebuild failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Page loads so far (reloads and navigations count).
    pub page_loads: u64,
    /// The runtime errors collected.
    pub errors: ErrorCounts,
}

/// The runtime errors a preview collected, as a front end lists them.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct RuntimeErrors {
    /// Every entry kept, oldest first (read_runtime_errors' row).
    pub errors: Vec<RuntimeError>,
    /// The counts.
    pub counts: ErrorCounts,
}

/// A preview operation that could not be done.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PreviewError {
    /// No page is open to act on; the message says how one opens.
    #[error("{0}")]
    NotOpen(String),
    /// The browser failed to do it.
    #[error("{0}")]
    Failed(String),
}

/// Reads the preview of a session. Installed on the registry by the crate that runs the preview;
/// front ends get it with `registry.service::<Arc<dyn PreviewService>>()` (none: this hands has
/// no preview).
pub trait PreviewService: Send + Sync {
    /// The preview's state now (a session that never opened one: `stopped`).
    fn state<'a>(&'a self, session: &'a Session) -> BoxFuture<'a, PreviewState>;

    /// A fresh PNG of the page.
    fn screenshot<'a>(
        &'a self,
        session: &'a Session,
    ) -> BoxFuture<'a, Result<Vec<u8>, PreviewError>>;

    /// Every runtime error kept, without moving the model's read cursor.
    fn errors<'a>(&'a self, session: &'a Session) -> BoxFuture<'a, RuntimeErrors>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runtime_error_reads_and_writes_the_documented_json() {
        let json = serde_json::json!({
            "seq": 3, "kind": "unhandled_rejection", "message": "boom", "location": "http://x/a.js:1:2",
            "stack": [{"function": "f", "url": "http://x/a.js", "line": 1, "column": 2}],
            "count": 2, "pageLoad": 1, "lastAtMs": 5
        });
        let row: RuntimeError = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(row.kind, ErrorKind::UnhandledRejection);
        assert_eq!(serde_json::to_value(&row).unwrap(), json);
        assert_eq!(row.stack[0].location(), "http://x/a.js:1:2");
    }

    #[test]
    fn stages_are_the_words_results_use() {
        for stage in [Stage::Stopped, Stage::StartingServer, Stage::Ready, Stage::Error] {
            assert_eq!(serde_json::to_value(stage).unwrap(), stage.word());
        }
    }
}
