//! Sandbox backends behind core's [`SandboxProvider`]: `local` (tools run in this process),
//! `bwrap` (an inner `hands mcp` under bubblewrap, proxied over MCP stdio) and `remote` (a
//! `hands serve` elsewhere, proxied over Streamable HTTP, with a `recreate` hook). A proxied call
//! whose transport is closed reports [`hands_core::ToolError::SandboxGone`]; the recover
//! middleware then asks the provider for a fresh sandbox and retries.

mod config;
mod error;
mod hidden;
mod inner;
pub(crate) mod net;
mod processes;
mod proxy;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use hands_core::{LocalProvider, RegistryBuilder, SandboxProvider};

pub use config::{Backend, SandboxConfig};
pub use error::SandboxError;
pub use hidden::HostFiles;
pub use inner::{INNER_ENV, is_inner};
pub use processes::ProxyProcesses;
pub use proxy::{Bwrap, Hidden, ProxyProvider};

/// Run the registry's tools where `config` says ([`provider`]); with a proxy backend the
/// processes of a session live in its inner hands, so the process service front ends use is
/// [`ProxyProcesses`] (replacing the local one exec installed). A bwrap sandbox sees none of
/// hands' own folders, nor those `host` adds.
pub fn register(
    builder: RegistryBuilder,
    config: &SandboxConfig,
    flags: &[String],
    host: &HostFiles,
) -> Result<RegistryBuilder, SandboxError> {
    Ok(match proxy(config, flags, host)? {
        Some(proxy) => {
            let proxy = Arc::new(proxy);
            let local = builder.installed::<Arc<dyn hands_core::ProcessService>>();
            let builder = builder.sandbox(Arc::clone(&proxy) as Arc<dyn SandboxProvider>);
            match local {
                // No local service: background processes are off, there is nothing to reach.
                None => builder,
                Some(local) => builder.service(ProxyProcesses::service(proxy, local.as_ref())),
            }
        }
        None => builder.sandbox(Arc::new(LocalProvider)),
    })
}

/// The provider `config` asks for. In an inner hands ([`is_inner`]) always `local`. `flags` are
/// the host's `-c key=value` overrides: an inner bwrap hands gets those of the tools' settings
/// (it reads the project's configuration file and the environment itself, and `host`'s copy of
/// the user's file), never those of the host's own sections (`server`, `sandbox`,
/// `mcp_servers`, `model`), which may hold tokens and mean nothing inside. The inner hands reads no file of the host's hands: it gets `host`'s copy of
/// the user's configuration instead.
pub fn provider(
    config: &SandboxConfig,
    flags: &[String],
    host: &HostFiles,
) -> Result<Arc<dyn SandboxProvider>, SandboxError> {
    Ok(match proxy(config, flags, host)? {
        Some(proxy) => Arc::new(proxy),
        None => Arc::new(LocalProvider),
    })
}

/// The proxy `config` asks for; `None` for the local backend.
fn proxy(
    config: &SandboxConfig,
    flags: &[String],
    host: &HostFiles,
) -> Result<Option<ProxyProvider>, SandboxError> {
    if is_inner() {
        return Ok(None);
    }
    match config.backend {
        Backend::Local => Ok(None),
        Backend::Bwrap => {
            let bwrap = find_on_path("bwrap").ok_or(SandboxError::BwrapMissing)?;
            // The binary this sandbox was started from, wherever it is (bound inside when /tmp
            // or a hidden folder would hide it), canonical so that it is bound as it is.
            let hands = match &config.hands {
                Some(path) => path.clone(),
                None => std::env::current_exe()
                    .map_err(|err| SandboxError::HandsMissing(err.to_string()))?,
            };
            let hands = std::fs::canonicalize(&hands)
                .map_err(|err| SandboxError::HandsMissing(format!("{}: {err}", hands.display())))?;
            let mut inner = vec![hands.display().to_string()];
            for flag in flags.iter().filter(|flag| passes_inside(flag)) {
                inner.extend(["-c".to_owned(), flag.clone()]);
            }
            inner.extend(["mcp".to_owned(), "--root".to_owned(), proxy::ROOT.to_owned()]);
            // Never the host's network: none, or slirp4netns's (which has no way to the host's
            // loopback).
            let slirp = if config.network {
                Some(find_on_path("slirp4netns").ok_or(SandboxError::SlirpMissing)?)
            } else {
                None
            };
            let hidden = hidden::hidden(host);
            Ok(Some(ProxyProvider::bwrap(Bwrap { bwrap, inner, slirp, hidden })?))
        }
        Backend::Remote => {
            let url = config.url.clone().ok_or(SandboxError::UrlMissing)?;
            Ok(Some(ProxyProvider::remote(url, config.token.clone(), config.recreate.clone())?))
        }
    }
}

/// True for a `-c key=value` flag an inner hands should get too.
fn passes_inside(flag: &str) -> bool {
    let key = flag.split_once('=').map_or(flag, |(key, _)| key).trim();
    let section = key.split('.').next().unwrap_or(key);
    !hands_core::config::HOST_ONLY_SECTIONS.contains(&section)
}

/// `name` in one of `PATH`'s folders, if it is there.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(name)).find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    path.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_flag_of_a_host_only_section_passes_inside() {
        for flag in hands_core::config::HOST_ONLY_SECTIONS {
            assert!(!passes_inside(&format!("{flag}.x=1")), "{flag}");
        }
        // store and cluster were missing from this list once: the same list as everywhere now.
        assert!(!passes_inside("store.path=/tmp/x.db") && !passes_inside("cluster.node=a"));
        assert!(passes_inside("bash.default_timeout_ms=5") && passes_inside("approval=ask"));
    }
}
