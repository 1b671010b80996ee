//! The environment of every child hands starts — bash, background processes, the preview's server
//! and browser, MCP stdio servers, the inner hands of a bwrap sandbox: hands' own environment
//! minus its credentials. One place decides, so that no spawner forgets one.
//!
//! Always removed: the model providers' key variables, and every `HANDS_*` setting of a section
//! that only the host reads (`server`, `sandbox`, `model`, `mcp_servers`, `store` — tokens, keys,
//! headers and connection strings live there) or whose name says it holds a secret. The binary
//! adds the variable named by `model.api_key_env` and the user's `[exec] env_remove` once at
//! start-up ([`ChildEnv::init`]).

use std::ffi::{OsStr, OsString};
use std::sync::OnceLock;

/// Provider key variables no child gets, whatever the configuration says.
pub const PROVIDER_KEYS: &[&str] =
    &["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"];

/// Sections of `HANDS_*` settings that only the host reads; their variables may hold secrets.
const HOST_SECTIONS: &[&str] = &["server", "sandbox", "model", "mcp_servers", "store"];

/// Words that mark a `HANDS_*` setting as a secret wherever it sits.
const SECRET_WORDS: &[&str] = &["TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"];

static EXTRA: OnceLock<Vec<String>> = OnceLock::new();

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

    /// True when a child must not see the variable `name`.
    pub fn removes(name: &OsStr) -> bool {
        let Some(name) = name.to_str() else { return false };
        if PROVIDER_KEYS.contains(&name) {
            return true;
        }
        if EXTRA.get().is_some_and(|extra| extra.iter().any(|e| e == name)) {
            return true;
        }
        is_secret_setting(name)
    }

    /// hands' environment without what [`ChildEnv::removes`] names.
    pub fn vars() -> Vec<(OsString, OsString)> {
        std::env::vars_os().filter(|(name, _)| !Self::removes(name)).collect()
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
