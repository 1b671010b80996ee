//! Where a connector's key may go: an origin (scheme, host, port), as the user recorded it with
//! the secret (`hands secrets set NAME --host …`) and as a connector's base_url names it. The
//! record binds all three (issue 26): `api.example.com` is https on port 443 only,
//! `api.example.com:8443` https on 8443, and plain http only when the user wrote
//! `http://host[:port]`. A repository's connector file picks the base_url, so without the scheme
//! and the port in the record it could send the key over plain http, or to another service on
//! the same host.

/// A scheme, a host and a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// True for plain `http`, false for `https`.
    pub http: bool,
    /// The host, lower case (an IPv6 address in brackets).
    pub host: String,
    /// The port (the scheme's default when none is written).
    pub port: u16,
}

impl Origin {
    /// The origin of an http or https `url`.
    pub fn of_url(url: &url::Url) -> Option<Self> {
        let http = match url.scheme() {
            "http" => true,
            "https" => false,
            _ => return None,
        };
        Some(Self {
            http,
            host: url.host_str()?.to_ascii_lowercase(),
            port: url.port_or_known_default()?,
        })
    }

    /// The origin a record of the secret store names (`host`, `host:port`, `http://host:port`,
    /// `https://…`); `None` when it is not one.
    pub fn of_record(record: &str) -> Option<Self> {
        let lower = record.trim().to_ascii_lowercase();
        let spelled = if lower.starts_with("http://") || lower.starts_with("https://") {
            lower
        } else {
            format!("https://{lower}")
        };
        let url = url::Url::parse(&spelled).ok()?;
        let plain = url.username().is_empty()
            && url.password().is_none()
            && url.path() == "/"
            && url.query().is_none()
            && url.fragment().is_none();
        if plain { Self::of_url(&url) } else { None }
    }

    /// What the user passes to `hands secrets set NAME --host …` to allow exactly this origin
    /// (the form the store keeps: `host`, `host:port`, `http://host[:port]`).
    pub fn record(&self) -> String {
        let default = if self.http { 80 } else { 443 };
        let port = if self.port == default { String::new() } else { format!(":{}", self.port) };
        if self.http {
            format!("http://{}{port}", self.host)
        } else {
            format!("{}{port}", self.host)
        }
    }
}

impl std::fmt::Display for Origin {
    /// `https://host:443`: every part spelled out, for messages.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scheme = if self.http { "http" } else { "https" };
        write!(f, "{scheme}://{}:{}", self.host, self.port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(url: &str) -> Origin {
        Origin::of_url(&url::Url::parse(url).unwrap()).unwrap()
    }

    #[test]
    fn a_bare_host_is_https_on_443_and_http_must_be_written() {
        let bare = Origin::of_record("api.example.com").unwrap();
        assert_eq!(bare, of("https://API.example.com/v1"));
        assert_ne!(bare, of("http://api.example.com/v1"));
        assert_ne!(bare, of("https://api.example.com:8443/v1"));
        assert_eq!(
            Origin::of_record("api.example.com:8443").unwrap(),
            of("https://api.example.com:8443")
        );
        assert_eq!(
            Origin::of_record("http://127.0.0.1:8080").unwrap(),
            of("http://127.0.0.1:8080/x")
        );
        assert_eq!(Origin::of_record("[::1]:9").unwrap(), of("https://[::1]:9/"));
        for bad in ["http://u:p@h", "h/x", "h?x", "ftp://h", ""] {
            assert_eq!(Origin::of_record(bad), None, "{bad}");
        }
        for url in
            ["https://a.example", "https://a.example:8443", "http://127.0.0.1", "http://[::1]:8080"]
        {
            let origin = of(url);
            assert_eq!(Origin::of_record(&origin.record()), Some(origin), "{url}");
        }
        assert_eq!(of("http://127.0.0.1:8080").to_string(), "http://127.0.0.1:8080");
    }
}
