//! The guard: one reqwest client whose every connection is checked.
//!
//! Flow of [`Guard::send`]: the URL is checked (http/https, no credentials, an address written in
//! it is classified; the `url` crate's WHATWG parser has already turned `2130706433`, `0x7f.1`
//! and `0177.0.0.1` into `127.0.0.1`); a name is resolved by [`GuardResolver`], which refuses the
//! whole answer if any address in it is forbidden, so the connector only ever sees checked
//! addresses; redirects are followed here, by hand, each target checked the same way, secret
//! headers dropped once the origin changes; the body is read chunk by chunk after decompression
//! and stopped at the cap. Every wait is bounded by the timeouts and the call's token.

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use hands_core::CancellationToken;
use hands_core::secret::SecretValue;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::header::{HeaderName, HeaderValue, LOCATION};
use url::{Host, Url};

use crate::{Forbidden, NetConfig, NetError, check_addr, host_allowed};

/// The default cap of a response body, when a request sets none.
pub const DEFAULT_MAX_BYTES: u64 = 10 * 1024 * 1024;

/// An HTTP method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Method {
    /// GET.
    #[default]
    Get,
    /// HEAD.
    Head,
    /// POST.
    Post,
    /// PUT.
    Put,
    /// PATCH.
    Patch,
    /// DELETE.
    Delete,
}

impl Method {
    fn to_reqwest(self) -> reqwest::Method {
        match self {
            Self::Get => reqwest::Method::GET,
            Self::Head => reqwest::Method::HEAD,
            Self::Post => reqwest::Method::POST,
            Self::Put => reqwest::Method::PUT,
            Self::Patch => reqwest::Method::PATCH,
            Self::Delete => reqwest::Method::DELETE,
        }
    }
}

/// One request through the guard.
#[derive(Debug, Clone)]
pub struct Request {
    /// The method.
    pub method: Method,
    /// The absolute http(s) URL.
    pub url: String,
    /// Headers sent on every hop of a redirect chain (`Authorization` and `Cookie` excepted: they
    /// are dropped once the origin changes, like the secret ones).
    pub headers: Vec<(String, String)>,
    /// Headers carrying a secret: sent only to the first URL's origin, dropped for good on a
    /// redirect to another origin, marked sensitive (never logged by the client).
    pub secret_headers: Vec<(String, SecretValue)>,
    /// The body, if any (dropped when a 303, or a 301/302 of a POST, turns the request into a GET).
    pub body: Option<Vec<u8>>,
    /// The most bytes of body accepted, counted after decompression.
    pub max_bytes: u64,
}

impl Request {
    /// A GET of `url`.
    pub fn get(url: impl Into<String>) -> Self {
        Self {
            method: Method::Get,
            url: url.into(),
            headers: Vec::new(),
            secret_headers: Vec::new(),
            body: None,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }

    /// A POST of `body` to `url`.
    pub fn post(url: impl Into<String>, body: Vec<u8>) -> Self {
        Self { method: Method::Post, body: Some(body), ..Self::get(url) }
    }

    /// With `method`.
    #[must_use]
    pub fn method(mut self, method: Method) -> Self {
        self.method = method;
        self
    }

    /// With the header `name: value`.
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// With the secret header `name: value`.
    #[must_use]
    pub fn secret_header(mut self, name: impl Into<String>, value: SecretValue) -> Self {
        self.secret_headers.push((name.into(), value));
        self
    }

    /// With `body`.
    #[must_use]
    pub fn body(mut self, body: Vec<u8>) -> Self {
        self.body = Some(body);
        self
    }

    /// Accept at most `max_bytes` of body.
    #[must_use]
    pub fn max_bytes(mut self, max_bytes: u64) -> Self {
        self.max_bytes = max_bytes;
        self
    }
}

/// A response read whole.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The URL that answered, after redirects.
    pub final_url: String,
    /// Its status code (any: the caller decides what a 404 means).
    pub status: u16,
    /// Its headers, in order (values not UTF-8 are shown lossily).
    pub headers: Vec<(String, String)>,
    /// The body, decompressed.
    pub body: Vec<u8>,
    /// The `Content-Type` header, if any.
    pub content_type: Option<String>,
}

/// The egress guard. Cheap to clone (one shared client and configuration).
///
/// The HTTP client is built on the first fetch, not with the guard: building it reads the
/// system's certificate store (hundreds of files), which every `hands` start would pay (an MCP
/// server's start-up to its first answer) though most sessions never fetch.
#[derive(Debug, Clone)]
pub struct Guard {
    client: Arc<OnceLock<Result<reqwest::Client, String>>>,
    config: Arc<NetConfig>,
    proxy: Option<Url>,
}

impl Guard {
    /// A guard with `config`; a bad `[net] proxy` is an error now, not at the first fetch.
    pub fn new(config: &NetConfig) -> Result<Self, NetError> {
        let proxy = match &config.proxy {
            None => None,
            Some(proxy) => {
                let parsed = Url::parse(proxy)
                    .map_err(|err| NetError::Config(format!("proxy {proxy:?}: {err}")))?;
                reqwest::Proxy::all(parsed.as_str())
                    .map_err(|err| NetError::Config(format!("proxy: {err}")))?;
                Some(parsed)
            }
        };
        Ok(Self { client: Arc::default(), config: Arc::new(config.clone()), proxy })
    }

    /// The shared client, built on first use.
    fn client(&self) -> Result<&reqwest::Client, NetError> {
        self.client
            .get_or_init(|| self.build_client().map_err(|err| err.to_string()))
            .as_ref()
            .map_err(|message| NetError::Config(message.clone()))
    }

    fn build_client(&self) -> Result<reqwest::Client, NetError> {
        let config = &self.config;
        let mut proxy_host = None;
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .retry(reqwest::retry::never())
            .referer(false)
            .connect_timeout(Duration::from_millis(config.connect_timeout_ms))
            .read_timeout(Duration::from_millis(config.read_timeout_ms))
            .user_agent(concat!("hands/", env!("CARGO_PKG_VERSION")));
        builder = match &self.proxy {
            None => builder.no_proxy(),
            Some(parsed) => {
                proxy_host = parsed.host_str().map(str::to_owned);
                let proxy = reqwest::Proxy::all(parsed.as_str())
                    .map_err(|err| NetError::Config(format!("proxy: {err}")))?;
                builder.proxy(proxy)
            }
        };
        let resolver = GuardResolver { config: config.clone(), proxy_host };
        builder
            .dns_resolver(resolver)
            .build()
            .map_err(|err| NetError::Config(format!("the HTTP client: {}", chain(&err))))
    }

    /// The settings the guard applies.
    pub fn config(&self) -> &NetConfig {
        &self.config
    }

    /// Check `url` without fetching it: the error [`Guard::send`] would give before connecting.
    pub fn check_url(&self, url: &str) -> Result<(), NetError> {
        check_url(url, &self.config).map(drop)
    }

    /// Send `request`, following redirects, and read the whole body.
    pub async fn send(
        &self,
        request: Request,
        cancel: &CancellationToken,
    ) -> Result<Fetched, NetError> {
        let url = request.url.clone();
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(NetError::Cancelled { url: without_userinfo(&url) }),
            result = self.run(request) => result,
        }
    }

    async fn run(&self, request: Request) -> Result<Fetched, NetError> {
        let Request {
            mut method,
            url: first,
            mut headers,
            mut secret_headers,
            mut body,
            max_bytes,
        } = request;
        let mut url = check_url(&first, &self.config)?;
        let mut redirects: u8 = 0;
        let read_timeout = Duration::from_millis(self.config.read_timeout_ms);
        let wait = Duration::from_millis(self.config.connect_timeout_ms) + read_timeout;
        loop {
            let mut builder = self.client()?.request(method.to_reqwest(), url.clone());
            for (name, value) in &headers {
                builder = builder.header(name.as_str(), value.as_str());
            }
            for (name, value) in &secret_headers {
                let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| NetError::Http {
                    url: url.to_string(),
                    message: format!("bad header {name}"),
                })?;
                let mut value =
                    HeaderValue::from_str(value.expose()).map_err(|_| NetError::Http {
                        url: url.to_string(),
                        message: format!("the secret header {name} is not a valid header value"),
                    })?;
                value.set_sensitive(true);
                builder = builder.header(name, value);
            }
            if let Some(body) = &body {
                builder = builder.body(body.clone());
            }
            let response = match tokio::time::timeout(wait, builder.send()).await {
                Ok(sent) => sent.map_err(|err| map_error(&err, &url, &self.config))?,
                Err(_) => return Err(timeout(&url, "read", self.config.read_timeout_ms)),
            };
            let status = response.status();
            let location = response.headers().get(LOCATION).cloned();
            if status.is_redirection()
                && let Some(location) = location
            {
                redirects += 1;
                if redirects > self.config.max_redirects {
                    return Err(NetError::TooManyRedirects {
                        url: without_userinfo(&first),
                        max: self.config.max_redirects,
                    });
                }
                let text = String::from_utf8_lossy(location.as_bytes()).into_owned();
                let next = url.join(&text).map_err(|_| NetError::BadRedirect {
                    url: url.to_string(),
                    location: text.clone(),
                })?;
                let next = check_url(next.as_str(), &self.config)?;
                let code = status.as_u16();
                if code == 303 || (matches!(code, 301 | 302) && method == Method::Post) {
                    if method != Method::Head {
                        method = Method::Get;
                    }
                    body = None;
                }
                if next.origin() != url.origin() {
                    secret_headers.clear();
                    headers.retain(|(name, _)| !is_credential(name));
                }
                url = next;
                continue;
            }
            return read(response, &url, max_bytes, read_timeout, &self.config).await;
        }
    }
}

/// Headers that carry credentials even when not declared secret.
fn is_credential(name: &str) -> bool {
    ["authorization", "cookie", "proxy-authorization"].iter().any(|c| name.eq_ignore_ascii_case(c))
}

async fn read(
    mut response: reqwest::Response,
    url: &Url,
    max_bytes: u64,
    read_timeout: Duration,
    config: &NetConfig,
) -> Result<Fetched, NetError> {
    let too_large = || NetError::TooLarge { url: url.to_string(), limit: max_bytes };
    // Set only when the body is not compressed: then it is the decompressed size too.
    if response.content_length().is_some_and(|len| len > max_bytes) {
        return Err(too_large());
    }
    let status = response.status().as_u16();
    let headers: Vec<(String, String)> = response
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_owned(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
        .collect();
    let content_type = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-type"))
        .map(|(_, v)| v.clone());
    let mut body = Vec::new();
    loop {
        let chunk = match tokio::time::timeout(read_timeout, response.chunk()).await {
            Ok(chunk) => chunk.map_err(|err| map_error(&err, url, config))?,
            Err(_) => return Err(timeout(url, "read", config.read_timeout_ms)),
        };
        let Some(chunk) = chunk else { break };
        if body.len() as u64 + chunk.len() as u64 > max_bytes {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Fetched { final_url: url.to_string(), status, headers, body, content_type })
}

fn timeout(url: &Url, what: &'static str, ms: u64) -> NetError {
    NetError::Timeout { url: url.to_string(), what, ms }
}

/// The guard's own refusal if the resolver gave one, else the failure in words.
fn map_error(err: &reqwest::Error, url: &Url, config: &NetConfig) -> NetError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(current) = source {
        if let Some(net) = current.downcast_ref::<NetError>() {
            return net.clone();
        }
        source = current.source();
    }
    if err.is_timeout() {
        return if err.is_connect() {
            timeout(url, "connect", config.connect_timeout_ms)
        } else {
            timeout(url, "read", config.read_timeout_ms)
        };
    }
    let message =
        if err.is_connect() { format!("could not connect: {}", chain(err)) } else { chain(err) };
    NetError::Http { url: url.to_string(), message }
}

/// An error and its sources, without reqwest's URL (the caller shows the URL once).
fn chain(err: &reqwest::Error) -> String {
    let mut parts = Vec::new();
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(err);
    while let Some(current) = source {
        let text = current.to_string();
        if !parts.contains(&text) {
            parts.push(text);
        }
        source = current.source();
    }
    if parts.is_empty() {
        parts.push(err.to_string());
    }
    parts.join(": ")
}

/// Parse and check `raw`: http(s) only, no credentials, an address in it classified.
fn check_url(raw: &str, config: &NetConfig) -> Result<Url, NetError> {
    let url = Url::parse(raw.trim())
        .map_err(|err| NetError::BadUrl { url: without_userinfo(raw), reason: err.to_string() })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(NetError::Scheme { scheme: url.scheme().to_owned() });
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(NetError::Userinfo { url: without_userinfo(raw) });
    }
    let host_text = url.host_str().unwrap_or_default().to_owned();
    match url.host() {
        Some(Host::Ipv4(addr)) => check_addr(&host_text, IpAddr::V4(addr), config)?,
        Some(Host::Ipv6(addr)) => check_addr(&host_text, IpAddr::V6(addr), config)?,
        Some(Host::Domain(name)) => {
            // A proxy resolves names itself; `localhost` is this machine whatever DNS says.
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            if (name == "localhost" || name.ends_with(".localhost"))
                && !config.allow_private
                && !host_allowed(&host_text, config)
            {
                return Err(NetError::Forbidden {
                    host: host_text,
                    addr: IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
                    reason: Forbidden::Loopback,
                });
            }
        }
        None => {
            return Err(NetError::BadUrl {
                url: without_userinfo(raw),
                reason: "it has no host".into(),
            });
        }
    }
    Ok(url)
}

/// `raw` with any `user:password@` removed, for messages.
fn without_userinfo(raw: &str) -> String {
    match Url::parse(raw) {
        Ok(mut url) => {
            let _ = url.set_username("");
            let _ = url.set_password(None);
            url.to_string()
        }
        // Not a URL: cut at the last `@` before the path so a credential is not echoed.
        Err(_) => match raw.split_once("://") {
            Some((scheme, rest)) => {
                let authority_end = rest.find('/').unwrap_or(rest.len());
                let authority = &rest[..authority_end];
                match authority.rfind('@') {
                    Some(at) => format!("{scheme}://{}", &rest[at + 1..]),
                    None => raw.to_owned(),
                }
            }
            None => raw.to_owned(),
        },
    }
}

/// Resolves names for the client and refuses any answer with a forbidden address: the client
/// connects only to what this returns, so a name cannot be checked once and connected to
/// another address (DNS rebinding).
struct GuardResolver {
    config: Arc<NetConfig>,
    /// The configured proxy's host: the user chose it, so it may be on their network.
    proxy_host: Option<String>,
}

impl Resolve for GuardResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let config = self.config.clone();
        let host = name.as_str().to_owned();
        let is_proxy = self.proxy_host.as_deref().is_some_and(|p| p.eq_ignore_ascii_case(&host));
        Box::pin(async move {
            let addrs = lookup(&host, &config).await?;
            if !is_proxy {
                for addr in &addrs {
                    check_addr(&host, *addr, &config)?;
                }
            }
            let addrs: Addrs = Box::new(addrs.into_iter().map(|ip| SocketAddr::new(ip, 0)));
            Ok(addrs)
        })
    }
}

/// The addresses of `host`: the `[net] resolve` map's answer, else the system resolver's.
async fn lookup(host: &str, config: &NetConfig) -> Result<Vec<IpAddr>, NetError> {
    let key = host.trim_end_matches('.');
    if let Some((_, addrs)) = config.resolve.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)) {
        return Ok(addrs.clone());
    }
    let dns = |message: String| NetError::Dns { host: host.to_owned(), message };
    let found: Vec<IpAddr> = tokio::net::lookup_host((host, 0))
        .await
        .map_err(|err| dns(err.to_string()))?
        .map(|addr| addr.ip())
        .collect();
    if found.is_empty() {
        return Err(dns("no address".into()));
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(url: &str) -> NetError {
        check_url(url, &NetConfig::default()).unwrap_err()
    }

    #[test]
    fn ip_literals_in_every_form_are_parsed_to_the_address_and_refused() {
        for (url, host) in [
            ("http://2130706433/", "127.0.0.1"),
            ("http://0x7f.1/", "127.0.0.1"),
            ("http://0x7f000001/", "127.0.0.1"),
            ("http://0177.0.0.1/", "127.0.0.1"),
            ("http://017700000001/", "127.0.0.1"),
            ("http://127.1/", "127.0.0.1"),
            ("http://[::ffff:127.0.0.1]/", "[::ffff:7f00:1]"),
            ("http://[::1]:8080/", "[::1]"),
            ("http://169.254.169.254/latest/meta-data/", "169.254.169.254"),
            ("http://0/", "0.0.0.0"),
            ("http://LOCALHOST./", "localhost."),
            ("http://a.localhost/", "a.localhost"),
        ] {
            let parsed = Url::parse(url).unwrap();
            assert_eq!(parsed.host_str(), Some(host), "{url}");
            match refused(url) {
                NetError::Forbidden { .. } => {}
                other => panic!("{url}: {other}"),
            }
        }
    }

    #[test]
    fn only_http_and_https_without_credentials() {
        for url in ["file:///etc/passwd", "gopher://example.com/", "ftp://example.com/x"] {
            assert!(matches!(refused(url), NetError::Scheme { .. }), "{url}");
        }
        let err = refused("https://user:hunter2pass@example.com/x");
        assert!(matches!(err, NetError::Userinfo { .. }), "{err}");
        assert!(!err.to_string().contains("hunter2pass"), "{err}");
        assert!(matches!(refused("https://user@example.com/"), NetError::Userinfo { .. }));
        let bad = refused("not a url at all");
        assert!(matches!(bad, NetError::BadUrl { .. }), "{bad}");
        assert!(check_url("https://example.com/a.png", &NetConfig::default()).is_ok());
    }

    #[test]
    fn credentials_are_cut_from_unparsable_urls_in_messages() {
        assert_eq!(without_userinfo("http://u:s3cr3t@[bad/x"), "http://[bad/x");
    }
}
