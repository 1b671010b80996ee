//! The environment of every child hands starts — bash, background processes, the preview's server
//! and browser, MCP stdio servers, the inner hands of a bwrap sandbox: hands' own environment
//! minus its credentials. One place decides, so that no spawner forgets one.
//!
//! Always removed: the model providers' key variables, and every `HANDS_*` setting of a section
//! that only the host reads ([`HOST_ONLY_SECTIONS`](crate::config::HOST_ONLY_SECTIONS): `server`,
//! `sandbox`, `model`, `mcp_servers`, `store`, `cluster` — tokens, keys, headers and connection
//! strings live there) or whose name says it holds a secret. The binary
//! adds the variable named by `model.api_key_env` and the user's `[exec] env_remove` once at
//! start-up ([`ChildEnv::init`]).
//!
//! The user's stored secrets ([`SecretEnv`], installed by the binary with
//! [`ChildEnv::set_secrets`]) are removed too, except those granted to the child's project, which
//! [`ChildEnv::vars_for`] adds: a stored value reaches a process only as an environment variable
//! of a project it is granted to.

use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::sync::{Arc, OnceLock, PoisonError, RwLock};

/// Provider key variables no child gets, whatever the configuration says.
pub const PROVIDER_KEYS: &[&str] =
    &["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"];

/// Sections of `HANDS_*` settings that only the host reads; their variables may hold secrets.
use crate::config::HOST_ONLY_SECTIONS as HOST_SECTIONS;

/// Words that mark a `HANDS_*` setting as a secret wherever it sits.
const SECRET_WORDS: &[&str] = &["TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"];

static EXTRA: OnceLock<Vec<String>> = OnceLock::new();

static SECRETS: RwLock<Option<Arc<dyn SecretEnv>>> = RwLock::new(None);

/// The user's stored secrets, as children see them (implemented by the secret store).
pub trait SecretEnv: Send + Sync {
    /// The name of every stored secret, of every scope: no child gets a variable of that name
    /// from hands' own environment.
    fn names(&self) -> Vec<String>;

    /// The secrets granted to the project at `root` (its own and the global ones), as
    /// `(NAME, value)`.
    fn granted(&self, root: &Path) -> Vec<(String, String)>;
}

/// The filter every spawner applies to hands' environment.
pub struct ChildEnv;

impl ChildEnv {
    /// Remove `names` too (the variable named by `model.api_key_env`, `[exec] env_remove`). Call
    /// once, before the first child starts; a second call is ignored (the first one wins).
    pub fn init<I, S>(names: I)
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let names: Vec<String> =
            names.into_iter().map(Into::into).filter(|n| !n.trim().is_empty()).collect();
        let _ = EXTRA.set(names);
    }

    /// Use `secrets` from now on (the binary installs the store at start-up).
    pub fn set_secrets(secrets: Arc<dyn SecretEnv>) {
        *SECRETS.write().unwrap_or_else(PoisonError::into_inner) = Some(secrets);
    }

    fn secrets() -> Option<Arc<dyn SecretEnv>> {
        SECRETS.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// True when a child must not see the variable `name` of hands' own environment.
    pub fn removes(name: &OsStr) -> bool {
        Self::removes_with(name, &Self::secrets().map(|s| s.names()).unwrap_or_default())
    }

    fn removes_with(name: &OsStr, stored: &[String]) -> bool {
        let Some(name) = name.to_str() else { return false };
        if PROVIDER_KEYS.contains(&name) || stored.iter().any(|s| s == name) {
            return true;
        }
        if EXTRA.get().is_some_and(|extra| extra.iter().any(|e| e == name)) {
            return true;
        }
        is_secret_setting(name)
    }

    /// hands' environment without what [`ChildEnv::removes`] names: for a child of no project
    /// (an MCP server, a sandbox's inner hands).
    pub fn vars() -> Vec<(OsString, OsString)> {
        let stored = Self::secrets().map(|s| s.names()).unwrap_or_default();
        std::env::vars_os().filter(|(name, _)| !Self::removes_with(name, &stored)).collect()
    }

    /// The environment of a child of the project at `root`: [`ChildEnv::vars`] plus the secrets
    /// granted to that project.
    pub fn vars_for(root: &Path) -> Vec<(OsString, OsString)> {
        let mut vars = Self::vars();
        for (name, value) in Self::granted(root) {
            vars.retain(|(n, _)| n.as_os_str() != OsStr::new(&name));
            vars.push((name.into(), value.into()));
        }
        vars
    }

    /// The secrets granted to the project at `root`, as `(NAME, value)` (none until a store is
    /// installed).
    pub fn granted(root: &Path) -> Vec<(String, String)> {
        Self::secrets().map(|s| s.granted(root)).unwrap_or_default()
    }
}

/// A `HANDS_SECTION__KEY` setting of a host-only section, or one whose name marks a secret.
fn is_secret_setting(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("HANDS_") else { return false };
    let Some((section, key)) = rest.split_once("__") else { return false };
    HOST_SECTIONS.contains(&section.to_ascii_lowercase().as_str())
        || SECRET_WORDS.iter().any(|word| key.to_ascii_uppercase().contains(word))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_keys_host_settings_and_secrets() {
        for name in [
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "GEMINI_API_KEY",
            "HANDS_SERVER__TOKEN",
            "HANDS_SANDBOX__TOKEN",
            "HANDS_MODEL__HEADERS__X_API_KEY",
            "HANDS_MCP_SERVERS__GH__ENV__GITHUB_TOKEN",
            "HANDS_STORE__URL",
            // The cluster's section was missing from this list once (it drifted from the
            // others); there is one list now.
            "HANDS_CLUSTER__ADVERTISE_URL",
            "HANDS_PREVIEW__SOME_TOKEN",
        ] {
            assert!(ChildEnv::removes(OsStr::new(name)), "{name}");
        }
        for name in [
            "PATH",
            "HOME",
            "HANDS_SESSION",
            "HANDS_SANDBOX_INNER",
            "HANDS_BASH__SHELL",
            "HANDS_LOG",
            "MY_API_KEY",
        ] {
            assert!(!ChildEnv::removes(OsStr::new(name)), "{name}");
        }
    }
}
