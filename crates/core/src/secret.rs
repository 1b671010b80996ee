//! Secrets as tools meet them: asked of the user out of band ([`SecretAsker`], set on the session
//! by each host like [`crate::ask::Asker`]) and kept in the user's store ([`SecretStore`],
//! implemented by `hands-secrets`). A value travels only as a [`SecretValue`], whose `Debug` and
//! `Display` never show it; it never reaches the model, a result, a log or an event.

use std::path::Path;
use std::sync::Arc;

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::BoxFuture;
use crate::ask::AskError;

/// A secret's value. Shown as `[hidden]` by `Debug` and `Display`; [`SecretValue::expose`] is the
/// only way to the text.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretValue(String);

impl SecretValue {
    /// Wrap `value`.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value itself: for the store, a child's environment, an HTTP header, a `.env` file.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretValue([hidden])")
    }
}

impl std::fmt::Display for SecretValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[hidden]")
    }
}

/// A request for one secret, put to the user outside the conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SecretRequest {
    /// The session asking.
    pub session: String,
    /// The request's id, unique within its session (the call id); the answer is routed by it.
    pub id: String,
    /// The variable the value will be stored as (`^[A-Z][A-Z0-9_]{1,63}$`).
    pub name: String,
    /// What the value is and where the user finds it, for people.
    pub description: String,
}

/// Asks the user for a secret out of band: a no-echo terminal prompt, a session API endpoint whose
/// body is never stored, an MCP URL-mode elicitation to a one-time page. Never form-mode
/// elicitation and never the conversation.
pub trait SecretAsker: Send + Sync {
    /// Ask for `request` and wait for the value; give up with [`AskError::Cancelled`] when `cancel`
    /// fires. [`AskError::NoOneToAsk`] when this host cannot ask (the tool then tells the user to
    /// run `hands secrets set NAME`).
    fn request<'a>(
        &'a self,
        request: &'a SecretRequest,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<SecretValue, AskError>>;
}

/// The secret asker a session has, kept as a session extension.
#[derive(Clone)]
pub struct SecretAskerHandle(pub Arc<dyn SecretAsker>);

/// Where a stored secret applies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "root")]
pub enum SecretScope {
    /// Every project.
    Global,
    /// The project at this root.
    Project(String),
}

/// What may be said of a stored secret: never its value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoredSecret {
    /// Its name.
    pub name: String,
    /// Where it applies.
    pub scope: SecretScope,
    /// A masked hint such as `sk_t…4f2a`.
    pub hint: String,
}

/// Why the store refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    /// The name is not `^[A-Z][A-Z0-9_]{1,63}$`.
    #[error(
        "`{0}` is not a secret name: use 2 to 64 of A-Z, 0-9 and _, starting with a letter (like STRIPE_SECRET_KEY)"
    )]
    BadName(String),
    /// The value is too short to be redacted safely.
    #[error("the value is too short: a secret must have at least 8 characters to be hidden safely")]
    TooShort,
    /// The store could not be read or written.
    #[error("the secret store failed: {0}")]
    Io(String),
}

/// The user's secret store, as tools use it. Scoped to the project at `root`: a tool stores for
/// its own project and sees the secrets granted to it (its own and the global ones).
pub trait SecretStore: Send + Sync {
    /// Store `value` as `name` for the project at `root`, replacing an earlier value; redaction and
    /// children see it at once.
    fn put(
        &self,
        root: &Path,
        name: &str,
        value: &SecretValue,
    ) -> Result<StoredSecret, SecretError>;

    /// The value of `name` granted to the project at `root`.
    fn get(&self, root: &Path, name: &str) -> Option<SecretValue>;

    /// The secrets granted to the project at `root`.
    fn list(&self, root: &Path) -> Vec<StoredSecret>;

    /// Delete the project's `name` (a global secret is the user's to delete, with
    /// `hands secrets rm`); true when there was one.
    fn delete(&self, root: &Path, name: &str) -> Result<bool, SecretError>;

    /// The host recorded with `name` when it was stored for the project at `root`: the only host
    /// a connector may send it to. `None` when none was recorded (or the store keeps none).
    fn host(&self, _root: &Path, _name: &str) -> Option<String> {
        None
    }

    /// Record `host` (or forget it, with `None`) for the stored secret `name` granted to `root`.
    fn set_host(&self, _root: &Path, name: &str, _host: Option<&str>) -> Result<(), SecretError> {
        Err(SecretError::Io(format!("this secret store cannot record a host for {name}")))
    }
}

/// What a secret name found in a project's own files (`.hands/config.toml`, `.hands/project.toml`,
/// a connector file) resolves to. A repository writes those files, so it may name only a secret
/// the user stored for that very project: a global secret (every project's) is never selected by
/// a repository's choice of name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProjectSecret {
    /// Stored for the project: its value.
    Stored(SecretValue),
    /// Only a global secret has that name: not for a project file to choose.
    GlobalOnly,
    /// Nothing of that name is granted to the project.
    Missing,
}

/// Resolve `name`, as a project's own file names it, among the secrets stored for the project at
/// `root` only (see [`ProjectSecret`]).
pub fn project_secret(store: &dyn SecretStore, root: &Path, name: &str) -> ProjectSecret {
    match store.list(root).into_iter().find(|s| s.name == name).map(|s| s.scope) {
        Some(SecretScope::Project(_)) => {
            // The project's own value wins over a global one of the same name.
            store.get(root, name).map_or(ProjectSecret::Missing, ProjectSecret::Stored)
        }
        Some(SecretScope::Global) => ProjectSecret::GlobalOnly,
        None => ProjectSecret::Missing,
    }
}
