//! The user's exceptions to the classifier: `[net] allow_hosts` and `allow_private`.

use std::net::IpAddr;

use crate::{NetConfig, NetError, classify};

/// True when `host` (as the URL names it) is in `allow_hosts`: an exact name or address (any
/// case, a trailing dot ignored, IPv6 with or without brackets), or `*.example.com` for every
/// name under example.com (not example.com itself).
pub fn host_allowed(host: &str, config: &NetConfig) -> bool {
    let host = normalize(host);
    config.allow_hosts.iter().any(|entry| {
        let entry = normalize(entry);
        match entry.strip_prefix("*.") {
            Some(domain) => {
                host.len() > domain.len() + 1
                    && host.ends_with(domain)
                    && host.as_bytes()[host.len() - domain.len() - 1] == b'.'
            }
            None => host == entry,
        }
    })
}

fn normalize(host: &str) -> String {
    let host = host.trim();
    let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    let host = host.strip_suffix('.').unwrap_or(host);
    // An address written in another form (`::ffff:127.0.0.1`) compares by its canonical text.
    match host.parse::<IpAddr>() {
        Ok(ip) => ip.to_string(),
        Err(_) => host.to_ascii_lowercase(),
    }
}

/// Whether a connection to `addr`, reached through the name `host`, is allowed: a public
/// address always; any other only when the user allows `host` in `[net] allow_hosts` or sets
/// `allow_private`. For connections that are not HTTP (a database) to apply the same rule.
pub fn check_addr(host: &str, addr: IpAddr, config: &NetConfig) -> Result<(), NetError> {
    match classify(addr) {
        None => Ok(()),
        Some(_) if config.allow_private || host_allowed(host, config) => Ok(()),
        Some(reason) => Err(NetError::Forbidden { host: host.to_owned(), addr, reason }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn allow_hosts_matches_exact_names_wildcards_and_addresses() {
        let config = NetConfig {
            allow_hosts: vec![
                "127.0.0.1".into(),
                "*.Internal.Example".into(),
                "Db.Local.".into(),
                "[::1]".into(),
            ],
            ..NetConfig::default()
        };
        for yes in ["127.0.0.1", "a.internal.example", "x.y.internal.example", "db.local", "[::1]"]
        {
            assert!(host_allowed(yes, &config), "{yes}");
        }
        for no in ["127.0.0.2", "internal.example", "evilinternal.example", "db.local.evil", "::2"]
        {
            assert!(!host_allowed(no, &config), "{no}");
        }
    }

    #[test]
    fn check_addr_refuses_unless_allowed() {
        let config = NetConfig { allow_hosts: vec!["db.local".into()], ..NetConfig::default() };
        let err = check_addr("evil.test", ip("10.0.0.5"), &config).unwrap_err().to_string();
        assert!(err.contains("private network") && err.contains("allow_hosts"), "{err}");
        assert!(check_addr("db.local", ip("10.0.0.5"), &config).is_ok());
        assert!(check_addr("evil.test", ip("8.8.8.8"), &config).is_ok());
        let open = NetConfig { allow_private: true, ..NetConfig::default() };
        assert!(check_addr("evil.test", ip("169.254.169.254"), &open).is_ok());
    }
}
