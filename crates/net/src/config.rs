//! `[net]`: what the egress guard lets through. The whole section is the user's only: a
//! repository's `.hands/config.toml` cannot open this machine's network to the tools.

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

/// Settings of the egress guard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NetConfig {
    /// Hosts that may be reached even at a loopback, private, link-local or other non-public
    /// address: an exact name or address (`db.internal`, `127.0.0.1`, `[::1]`), or
    /// `*.example.com` for every name under example.com.
    pub allow_hosts: Vec<String>,
    /// Let every host reach non-public addresses (turns the address check off).
    pub allow_private: bool,
    /// A proxy for every fetch (`http://proxy:3128`). Without it the `HTTP(S)_PROXY`/`ALL_PROXY`
    /// variables are ignored. Through a proxy, names are resolved by the proxy, so only the
    /// URL's own host (and an address written in it) is checked.
    pub proxy: Option<String>,
    /// Time to connect, in milliseconds.
    pub connect_timeout_ms: u64,
    /// Longest wait for the next piece of a response, in milliseconds.
    pub read_timeout_ms: u64,
    /// Redirects followed at most (each target is checked again).
    pub max_redirects: u8,
    /// Static answers for names, like curl's `--resolve`: `"api.test" = ["127.0.0.1"]`. The
    /// answers are checked like any other (a loopback answer needs `allow_hosts`).
    pub resolve: BTreeMap<String, Vec<IpAddr>>,
}

impl Default for NetConfig {
    fn default() -> Self {
        Self {
            allow_hosts: Vec::new(),
            allow_private: false,
            proxy: None,
            connect_timeout_ms: 10_000,
            read_timeout_ms: 30_000,
            max_redirects: 5,
            resolve: BTreeMap::new(),
        }
    }
}
