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
}

/// The user's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run the call.
    Approve,
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

/// A one-line summary of a call for events: `tool: ` and [`main_argument`], cut to 300 characters.
pub fn summary(tool: &str, args: &Value) -> String {
    let main = main_argument(args);
    let mut line: String = main.chars().take(300).collect();
    if main.chars().count() > 300 {
        line.push('…');
    }
    format!("{tool}: {line}")
}
