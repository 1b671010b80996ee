//! `[sandbox]`: where tools run.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Which backend runs the tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// In the hands process, confined to the root.
    #[default]
    Local,
    /// In an inner `hands mcp` under bubblewrap.
    Bwrap,
    /// In a `hands serve` at `url` (a container, a Kubernetes pod).
    Remote,
}

/// `[sandbox]`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxConfig {
    /// `local`, `bwrap` or `remote`.
    pub backend: Backend,
    /// bwrap: give the sandbox a network (through slirp4netns, which cannot reach the host's
    /// loopback). Off by default: the sandbox has only its own loopback.
    pub network: bool,
    /// remote: the MCP URL of the `hands serve` (e.g. `http://10.0.0.7:7777/mcp`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// remote: its bearer token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// remote: a shell command that brings a fresh sandbox up at `url` when the old one is gone
    /// (e.g. `kubectl delete pod …` and wait); run with `sh -c`, then hands reconnects.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recreate: Option<String>,
    /// bwrap: the hands binary to run inside (default: this one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hands: Option<PathBuf>,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        Self {
            backend: Backend::Local,
            network: false,
            url: None,
            token: None,
            recreate: None,
            hands: None,
        }
    }
}
