//! Approval: under `approval = "ask"`, a tool that changes things or reaches out (write_file,
//! edit_file, bash, spawn_process, …) runs only after the user says yes. The host answers through an
//! [`Approver`] set on the session: a terminal prompt, an HTTP endpoint, MCP elicitation. With no
//! approver there is nobody to ask, and the call is refused at once — never a hang.

use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::BoxFuture;

/// What the user is asked to approve.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRequest {
    /// The session asking.
    pub session: String,
    /// The tool's canonical name.
    pub tool: String,
    /// One line for the user: the command, the path, …
    pub summary: String,
    /// The call's arguments.
    pub args: Value,
    /// What the call will actually do, when its arguments alone do not say it, as the tool
    /// computed it before asking: the resolved argv and which program runs (the repository's or
    /// the system's), the target (a database's `user@host:port/db`, a host), a new file's content
    /// or an existing one's diff. Several lines; every approver shows it whole (escaped), after
    /// the summary. Secrets are replaced before any approver sees it.
    pub details: Option<String>,
    /// The user may allow the tool for the rest of the session
    /// ([`Decision::ApproveForSession`]); false where every call is theirs to decide.
    pub session_allowable: bool,
}

/// What a tool shows the user about one call before it runs ([`Tool::review`](crate::Tool::review)),
/// computed from the parsed arguments before anybody is asked; computing it changes nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Review {
    /// Replaces the one-line summary made from the arguments ([`summary`]), when the tool can
    /// say better what the call does (`supabase_setup: apply 3 migrations to app@db:5432/app`).
    pub summary: Option<String>,
    /// What runs, beyond the summary ([`ApprovalRequest::details`]).
    pub details: Option<String>,
    /// The call would change nothing (a migrate with nothing pending): it runs without asking.
    pub nothing_to_ask: bool,
}

impl Review {
    /// The summary and nothing more.
    pub fn summary(summary: impl Into<String>) -> Self {
        Self { summary: Some(summary.into()), ..Self::default() }
    }

    /// `details` after the summary made from the arguments.
    pub fn details(details: impl Into<String>) -> Self {
        Self { details: Some(details.into()), ..Self::default() }
    }

    /// This review with `details`.
    #[must_use]
    pub fn with_details(mut self, details: impl Into<String>) -> Self {
        self.details = Some(details.into());
        self
    }

    /// Nothing to ask about: the call runs.
    pub fn nothing_to_ask() -> Self {
        Self { nothing_to_ask: true, ..Self::default() }
    }
}

/// What the user approved, as they were shown it: set on the call's [`Context`](crate::Context)
/// after a yes, so that a tool which computes its plan again can check that what runs is what was
/// shown ([`Context::approved`](crate::Context::approved)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approved {
    /// The summary shown.
    pub summary: String,
    /// The details shown, redacted as shown.
    pub details: Option<String>,
}

/// The user's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run the call.
    Approve,
    /// Run the call, and every later call of the same tool in this session without asking
    /// ([`SessionAllows`]). A tool whose every call is the user's own decision
    /// ([`Policy::asks_each_time`](crate::Policy::asks_each_time)) is approved once only.
    ApproveForSession,
    /// Do not run it; the optional words go back to the model.
    Deny(Option<String>),
}

/// Asks the user. Implemented by each host.
pub trait Approver: Send + Sync {
    /// Ask about `request`; give up (deny) when `cancel` fires.
    fn approve<'a>(
        &'a self,
        request: &'a ApprovalRequest,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Decision>;
}

impl Decision {
    /// The call runs.
    pub fn approves(&self) -> bool {
        matches!(self, Self::Approve | Self::ApproveForSession)
    }
}

/// The tools the user allowed for the rest of the session ([`Decision::ApproveForSession`]),
/// kept as a session extension. Lives as long as the session does on this node: a session
/// resumed elsewhere asks again.
#[derive(Debug, Default)]
pub struct SessionAllows(std::sync::Mutex<std::collections::BTreeSet<String>>);

impl SessionAllows {
    /// Allow `tool` from now on.
    pub fn allow(&self, tool: &str) {
        self.lock().insert(tool.to_owned());
    }

    /// `tool` was allowed for the session.
    pub fn allows(&self, tool: &str) -> bool {
        self.lock().contains(tool)
    }

    /// The tools allowed, sorted.
    pub fn tools(&self) -> Vec<String> {
        self.lock().iter().cloned().collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, std::collections::BTreeSet<String>> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The approver a session has, kept as a session extension.
#[derive(Clone)]
pub struct ApproverHandle(pub Arc<dyn Approver>);

/// What an approval is about, whole: the `command`, `path`, `url` or `packages` argument when there
/// is one, else the arguments as compact JSON. A terminal shows all of it (escaped).
pub fn main_argument(args: &Value) -> String {
    ["command", "path", "url", "packages"]
        .iter()
        .find_map(|key| args.get(*key))
        .map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .unwrap_or_else(|| args.to_string())
}

/// Characters of [`main_argument`] a [`summary`] keeps.
const SUMMARY_CHARS: usize = 300;

/// A one-line summary of a call for events: `tool: ` and [`main_argument`], cut to 300 characters.
pub fn summary(tool: &str, args: &Value) -> String {
    let main = main_argument(args);
    let mut line: String = main.chars().take(SUMMARY_CHARS).collect();
    if main.chars().count() > SUMMARY_CHARS {
        line.push('…');
    }
    format!("{tool}: {line}")
}

/// The whole [`main_argument`] when [`summary`] cuts it: what an approval must show after the
/// summary when the tool gives no details of its own (a long command's tail runs too).
pub fn whole_when_cut(args: &Value) -> Option<String> {
    let main = main_argument(args);
    (main.chars().count() > SUMMARY_CHARS).then_some(main)
}
