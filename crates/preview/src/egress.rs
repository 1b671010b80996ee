//! What the preview's page may reach: its own origin directly, everything else through a small
//! loopback proxy of hands that applies the egress guard's rule.
//!
//! Chromium is started with `--proxy-server` pointing here and a bypass list of the preview's
//! origin only (`<-loopback>` removes Chromium's implicit bypass of loopback addresses, so
//! `127.0.0.2` or another loopback port goes through the proxy too). WebSockets go through a
//! proxy as `CONNECT` tunnels, and WebRTC is held to proxied UDP, which an HTTP proxy does not
//! carry ([`flags`]). The proxy answers `CONNECT host:port` (https, wss) by resolving the name,
//! checking every address with hands-net's [`check_addr`] (loopback, private, link-local … are
//! refused) and tunnelling to the first allowed one; a plain-http request (`GET http://…`) is
//! refused without a connection (a proxied keep-alive connection may carry requests for several
//! hosts, which a tunnel cannot check one by one). Every refusal is kept for preview_network.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use hands_net::{NetConfig, check_addr};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// Largest request head read from the browser.
const MAX_HEAD: usize = 16 * 1024;
/// Refusals kept.
const MAX_REFUSED: usize = 500;

/// A request the proxy refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// `host:port` or the URL asked for.
    pub target: String,
    /// Why.
    pub reason: String,
}

/// The running proxy; stops when dropped.
#[derive(Debug)]
pub struct Egress {
    /// Where it listens (127.0.0.1).
    pub addr: SocketAddr,
    refused: Arc<Mutex<Vec<Refusal>>>,
    stop: CancellationToken,
}

impl Drop for Egress {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Egress {
    /// Listen on a free loopback port.
    pub async fn start(config: NetConfig) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let refused: Arc<Mutex<Vec<Refusal>>> = Arc::default();
        let stop = CancellationToken::new();
        let (kept, stopped, config) = (Arc::clone(&refused), stop.clone(), Arc::new(config));
        tokio::spawn(async move {
            loop {
                let stream = tokio::select! {
                    accepted = listener.accept() => match accepted {
                        Ok((stream, _)) => stream,
                        Err(_) => continue,
                    },
                    () = stopped.cancelled() => break,
                };
                let (kept, config, stopped) =
                    (Arc::clone(&kept), Arc::clone(&config), stopped.clone());
                tokio::spawn(async move {
                    tokio::select! {
                        () = serve(stream, &config, &kept) => {}
                        () = stopped.cancelled() => {}
                    }
                });
            }
        });
        Ok(Self { addr, refused, stop })
    }

    /// The refusals so far, oldest first.
    pub fn refused(&self) -> Vec<Refusal> {
        self.refused.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// The Chromium flags that send every request but those to `origin` (`http://host:port`)
/// through the proxy at `proxy`, and keep WebRTC off direct UDP.
pub fn flags(proxy: SocketAddr, origin: &url::Url) -> Vec<String> {
    let host = origin.host_str().unwrap_or("127.0.0.1");
    let port = origin.port_or_known_default().unwrap_or(80);
    // The origin exactly as the preview opened it: not its other loopback names, which may be
    // other servers (a service on `[::1]:PORT` beside the preview's 127.0.0.1:PORT; `localhost`
    // resolving to either). A page that asks another name goes through the proxy's rule.
    let bypass = ["<-loopback>".to_owned(), format!("{host}:{port}")];
    vec![
        format!("--proxy-server=http://{proxy}"),
        format!("--proxy-bypass-list={}", bypass.join(";")),
        "--force-webrtc-ip-handling-policy=disable_non_proxied_udp".to_owned(),
        "--webrtc-ip-handling-policy=disable_non_proxied_udp".to_owned(),
    ]
}

/// The fresh profile's preferences: WebRTC sends nothing over UDP that is not proxied (an HTTP
/// proxy carries none), so STUN, TURN over UDP and host candidates reach no socket.
pub const PREFERENCES: &str = r#"{"webrtc": {"ip_handling_policy": "disable_non_proxied_udp",
  "multiple_routes_enabled": false, "nonproxied_udp_enabled": false}}"#;

fn keep(refused: &Mutex<Vec<Refusal>>, target: &str, reason: String) {
    let mut refused = refused.lock().unwrap_or_else(PoisonError::into_inner);
    if refused.len() >= MAX_REFUSED {
        refused.remove(0);
    }
    refused.push(Refusal { target: target.to_owned(), reason });
}

/// One proxy connection: read the head, tunnel or refuse.
async fn serve(mut stream: TcpStream, config: &NetConfig, refused: &Mutex<Vec<Refusal>>) {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
        if head.len() > MAX_HEAD {
            return;
        }
    }
    let text = String::from_utf8_lossy(&head);
    let mut words = text.lines().next().unwrap_or("").split_whitespace();
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    // Chromium's own calls are refused like the page's, but not listed among the page's
    // refusals (preview_network): they are not the app's, and the model has nothing to do there.
    let host = match method {
        "CONNECT" => target.rsplit_once(':').map_or(target, |(h, _)| h).to_owned(),
        _ => url::Url::parse(target)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
            .unwrap_or_default(),
    };
    let listed = !browser_service(host.trim_matches(['[', ']']));
    if method != "CONNECT" {
        let reason = "a plain-http request outside the preview's origin (hands refuses it)";
        if listed {
            keep(refused, target, reason.to_owned());
        }
        let _ = stream.write_all(&refusal(reason)).await;
        return;
    }
    match tunnel_to(target, config).await {
        Ok(mut upstream) => {
            if stream.write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n").await.is_ok() {
                let _ = tokio::io::copy_bidirectional(&mut stream, &mut upstream).await;
            }
        }
        Err(reason) => {
            if listed {
                keep(refused, target, reason.clone());
            } else {
                tracing::debug!(%target, "refused a background call of the preview's browser");
            }
            let _ = stream.write_all(&refusal(&reason)).await;
        }
    }
}

/// Hosts Chromium itself calls in the background whatever its flags say — the accounts in the
/// profile's cookie jar (`ListAccounts`, which no flag turns off), autofill, component updates,
/// network time, safe browsing — never the page: refused by name, before any lookup, so that on
/// a network with DNS the preview's browser does not call home. `*.` entries match every name
/// under the domain.
const BROWSER_SERVICES: &[&str] = &[
    "accounts.google.com",
    "content-autofill.googleapis.com",
    "update.googleapis.com",
    "safebrowsing.googleapis.com",
    "optimizationguide-pa.googleapis.com",
    "clientservices.googleapis.com",
    "passwordsleakcheck-pa.googleapis.com",
    "android.clients.google.com",
    "clients1.google.com",
    "clients2.google.com",
    "clients3.google.com",
    "clients4.google.com",
    "clients5.google.com",
    "clients6.google.com",
    "sb-ssl.google.com",
    "*.gvt1.com",
];

/// `host` is one of Chromium's own services ([`BROWSER_SERVICES`]).
fn browser_service(host: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    BROWSER_SERVICES.iter().any(|entry| match entry.strip_prefix("*.") {
        Some(domain) => host == domain || host.ends_with(&format!(".{domain}")),
        None => host == *entry,
    })
}

/// Connect to `host:port` when the guard's rule allows one of its addresses.
async fn tunnel_to(target: &str, config: &NetConfig) -> Result<TcpStream, String> {
    let (host, port) = target
        .rsplit_once(':')
        .and_then(|(h, p)| Some((h.trim_matches(['[', ']']), p.parse::<u16>().ok()?)))
        .ok_or_else(|| format!("{target:?} is not host:port"))?;
    if browser_service(host) {
        return Err(format!(
            "{host} is one of Chromium's own background services, not the page's: the preview's \
             browser does not call home"
        ));
    }
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
        .await
        .map_err(|err| format!("{host} could not be resolved ({err})"))?
        .collect();
    let mut last = format!("{host} has no address");
    for addr in addrs {
        match check_addr(host, addr.ip(), config) {
            Ok(()) => match TcpStream::connect(addr).await {
                Ok(stream) => return Ok(stream),
                Err(err) => last = format!("{addr}: {err}"),
            },
            Err(err) => last = err.to_string(),
        }
    }
    Err(last)
}

fn refusal(reason: &str) -> Vec<u8> {
    let body = format!("hands refused this request from the preview: {reason}\n");
    format!(
        "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: \
         close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_origin_bypasses_the_proxy() {
        let proxy: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let flags = flags(proxy, &url::Url::parse("http://127.0.0.1:5173/").unwrap());
        assert_eq!(flags[0], "--proxy-server=http://127.0.0.1:9");
        assert_eq!(flags[1], "--proxy-bypass-list=<-loopback>;127.0.0.1:5173");
        // Red-team round 3: `[::1]:PORT` and `localhost:PORT` bypassed the proxy too, reaching a
        // service on ::1 at the preview's port.
        let named = super::flags(proxy, &url::Url::parse("http://localhost:5173/").unwrap());
        assert_eq!(named[1], "--proxy-bypass-list=<-loopback>;localhost:5173");
    }

    #[tokio::test]
    async fn loopback_tunnels_and_plain_http_are_refused_without_a_connection() {
        let target = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let port = target.local_addr().unwrap().port();
        let egress = Egress::start(NetConfig::default()).await.unwrap();
        for head in [
            format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: x\r\n\r\n"),
            format!("GET http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: x\r\n\r\n"),
        ] {
            let mut browser = TcpStream::connect(egress.addr).await.unwrap();
            browser.write_all(head.as_bytes()).await.unwrap();
            let mut answer = String::new();
            browser.read_to_string(&mut answer).await.unwrap();
            assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
        }
        assert_eq!(egress.refused().len(), 2);
        let accepted =
            tokio::time::timeout(std::time::Duration::from_millis(50), target.accept()).await;
        assert!(accepted.is_err(), "the proxy connected to the refused target");
    }

    /// The user's `[net] allow_hosts` is the proxy's rule too: a named local service the user
    /// allowed is tunnelled to, and another loopback port still refused.
    #[tokio::test]
    async fn allow_hosts_lets_the_page_reach_what_the_user_allowed() {
        let target = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let port = target.local_addr().unwrap().port();
        let config = NetConfig { allow_hosts: vec!["127.0.0.1".into()], ..NetConfig::default() };
        let egress = Egress::start(config).await.unwrap();
        let mut browser = TcpStream::connect(egress.addr).await.unwrap();
        let head = format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: x\r\n\r\n");
        browser.write_all(head.as_bytes()).await.unwrap();
        let (mut served, _) = target.accept().await.unwrap();
        let mut answer = [0u8; 12];
        browser.read_exact(&mut answer).await.unwrap();
        assert_eq!(&answer, b"HTTP/1.1 200", "{:?}", String::from_utf8_lossy(&answer));
        served.write_all(b"through").await.unwrap();
        let mut rest = Vec::new();
        let mut buf = [0u8; 64];
        while !rest.ends_with(b"through") {
            let n = browser.read(&mut buf).await.unwrap();
            assert!(n > 0, "the tunnel closed: {:?}", String::from_utf8_lossy(&rest));
            rest.extend_from_slice(&buf[..n]);
        }
        assert!(egress.refused().is_empty(), "{:?}", egress.refused());
        let mut other = TcpStream::connect(egress.addr).await.unwrap();
        other.write_all(b"CONNECT 127.0.0.2:9 HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
        let mut answer = String::new();
        other.read_to_string(&mut answer).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    }

    /// Chromium's own background calls are refused by name, before any lookup (no "could not be
    /// resolved": on a network with DNS they would have been tunnelled).
    #[tokio::test]
    async fn the_browsers_own_services_are_refused_by_name() {
        let egress = Egress::start(NetConfig::default()).await.unwrap();
        for host in
            ["accounts.google.com", "Content-Autofill.googleapis.com.", "redirector.gvt1.com"]
        {
            let mut browser = TcpStream::connect(egress.addr).await.unwrap();
            let head = format!("CONNECT {host}:443 HTTP/1.1\r\nHost: x\r\n\r\n");
            browser.write_all(head.as_bytes()).await.unwrap();
            let mut answer = String::new();
            browser.read_to_string(&mut answer).await.unwrap();
            assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
            assert!(answer.contains("Chromium's own background services"), "{answer}");
        }
        assert!(egress.refused().is_empty(), "not the page's: {:?}", egress.refused());
        assert!(!browser_service("fonts.googleapis.com") && !browser_service("gvt1.com.evil.test"));
        assert!(!browser_service("maps.google.com") && browser_service("gvt1.com"));
    }
}
