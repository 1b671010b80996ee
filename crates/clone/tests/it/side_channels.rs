//! Issue 26: the channels of a cloned page that the `Fetch` interception does not see —
//! WebSocket, WebRTC (STUN/TURN), `<link rel=preconnect>`, service workers — reach nothing, and
//! clone_site's Chromium runs with its own sandbox. Everything on loopback: the page is served
//! on 127.0.0.1 (which the guard is told to allow); the targets listen on 127.0.0.2, a loopback
//! address the guard refuses. Each check is an absence, so the page first proves it ran: its
//! script asks for a marker image once each attempt has ended (or given up), and the page's load
//! event waits for that marker (an image the server holds until then).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hands_core::{CoreConfig, Registry, Session, ToolCall};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, UdpSocket};
use tokio::sync::Notify;

const CHROMIUM: &str = "/usr/bin/chromium";
/// The loopback address the guard refuses (only 127.0.0.1 is allowed).
const FORBIDDEN: &str = "127.0.0.2";

fn chromium_present() -> bool {
    if Path::new(CHROMIUM).exists() {
        return true;
    }
    assert!(std::env::var("CI").is_err(), "Chromium is required in CI at {CHROMIUM}");
    eprintln!("SKIPPED: no Chromium at {CHROMIUM}");
    false
}

/// What the page's server saw.
#[derive(Default)]
struct Seen {
    paths: Mutex<Vec<String>>,
    marker: Notify,
}

/// Serve `page` at `/` and `files` at their paths on 127.0.0.1. `/hold.png` is answered once
/// `/marker.png…` was asked for (20 s at most, then the test fails on the missing marker).
async fn serve(page: String, files: Vec<(&'static str, &'static str, String)>) -> (u16, Arc<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Seen::default());
    let state = Arc::clone(&seen);
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else { return };
            let (page, files, seen) = (page.clone(), files.clone(), Arc::clone(&state));
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let n = sock.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]);
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
                seen.paths.lock().unwrap().push(path.clone());
                let (ctype, body) = if path == "/" {
                    ("text/html", page)
                } else if path.starts_with("/marker.png") {
                    seen.marker.notify_waiters();
                    seen.marker.notify_one();
                    ("image/gif", String::new())
                } else if path == "/hold.png" {
                    let marked =
                        seen.paths.lock().unwrap().iter().any(|p| p.starts_with("/marker"));
                    if !marked {
                        let _ =
                            tokio::time::timeout(Duration::from_secs(20), seen.marker.notified())
                                .await;
                    }
                    ("image/gif", String::new())
                } else if let Some((_, t, b)) = files.iter().find(|(p, _, _)| *p == path) {
                    (*t, b.clone())
                } else {
                    ("text/plain", "no".to_owned())
                };
                let header = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = sock.write_all(header.as_bytes()).await;
                let _ = sock.write_all(body.as_bytes()).await;
            });
        }
    });
    (port, seen)
}

/// A page whose `head` holds `head` and whose script runs `attempts` (JavaScript that pushes
/// promises onto `tries`), then asks for the marker once every one has settled or 5 s passed.
fn page(head: &str, attempts: &str) -> String {
    format!(
        r#"<!doctype html><html><head>{head}<script>
const tries = [];
const ended = (name, p) => Promise.race([
  p.then(() => name + ':done', (e) => name + ':failed'),
  new Promise((r) => setTimeout(() => r(name + ':timeout'), 5000)),
]);
{attempts}
Promise.all(tries).then((r) => {{
  const img = new Image();
  img.src = '/marker.png?' + encodeURIComponent(r.join(','));
  document.documentElement.appendChild(img);
}});
</script></head><body><h1>probe</h1><img src="/hold.png" alt=""></body></html>"#
    )
}

/// Run clone_site on `http://127.0.0.1:{port}/` with the guard allowing 127.0.0.1 only.
/// With `namespaces: false`, without Chromium's sandbox and its empty network namespace (as on a
/// platform without user namespaces): what holds then is the resolver rules and the WebRTC
/// policy. (Each call has a session of its own: closing one stops its processes.)
async fn clone(port: u16, namespaces: bool) -> (hands_core::ToolOutput, tempfile::TempDir) {
    let config =
        hands_net::NetConfig { allow_hosts: vec!["127.0.0.1".into()], ..Default::default() };
    let guard = hands_net::Guard::new(&config).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let tool = hands_clone::CloneSite::new(guard, CHROMIUM.to_owned());
    let tool = if namespaces { tool } else { tool.without_namespaces() };
    let registry = Registry::builder(CoreConfig::default()).tool(tool).build();
    let session = Session::new(format!("side-{port}"), dir.path());
    let args = serde_json::json!({"url": format!("http://127.0.0.1:{port}/"), "dest": "clone"});
    let out = registry.dispatch(&session, ToolCall::new("c1", "clone_site", args)).await.unwrap();
    session.close().await;
    (out, dir)
}

/// The page ran its attempts to the end: the marker was asked for.
fn marker(seen: &Seen) -> String {
    let paths = seen.paths.lock().unwrap().clone();
    paths
        .iter()
        .find(|p| p.starts_with("/marker.png"))
        .cloned()
        .unwrap_or_else(|| panic!("the page never asked for its marker: {paths:?}"))
}

/// No connection is waiting on `listener` (a bounded wait: anything the page opened is long
/// in the backlog by now).
async fn no_connection(listener: &TcpListener, what: &str) {
    let accepted = tokio::time::timeout(Duration::from_millis(500), listener.accept()).await;
    if let Ok(Ok((_, from))) = accepted {
        panic!(
            "{what}: the cloned page connected to {FORBIDDEN}:{} from {from}",
            port_of(listener)
        );
    }
}

fn port_of(listener: &TcpListener) -> u16 {
    listener.local_addr().unwrap().port()
}

async fn forbidden_listener() -> TcpListener {
    TcpListener::bind((FORBIDDEN, 0)).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_of_the_cloned_page_connects_nowhere() {
    if !chromium_present() {
        return;
    }
    for namespaces in [true, false] {
        a_websocket_of_the_cloned_page_connects_nowhere_with(namespaces).await;
    }
}

async fn a_websocket_of_the_cloned_page_connects_nowhere_with(namespaces: bool) {
    let target = forbidden_listener().await;
    let attempts = format!(
        "tries.push(ended('ws', new Promise((ok, no) => {{ const w = new WebSocket('ws://{FORBIDDEN}:{}/'); \
         w.onopen = ok; w.onerror = no; w.onclose = no; }})));",
        port_of(&target)
    );
    let (port, seen) = serve(page("", &attempts), vec![]).await;
    let (out, _dir) = clone(port, namespaces).await;
    assert!(!out.is_error, "{}", out.joined_text());
    let unconfined = out.joined_text().contains("without its sandbox");
    assert_eq!(unconfined, !namespaces, "{}", out.joined_text());
    let marker = marker(&seen);
    no_connection(&target, "ws://").await;
    assert!(marker.contains("ws%3Afailed"), "{marker}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secure_websocket_of_the_cloned_page_connects_nowhere() {
    if !chromium_present() {
        return;
    }
    for namespaces in [true, false] {
        a_secure_websocket_of_the_cloned_page_connects_nowhere_with(namespaces).await;
    }
}

async fn a_secure_websocket_of_the_cloned_page_connects_nowhere_with(namespaces: bool) {
    let target = forbidden_listener().await;
    let attempts = format!(
        "tries.push(ended('wss', new Promise((ok, no) => {{ const w = new WebSocket('wss://{FORBIDDEN}:{}/'); \
         w.onopen = ok; w.onerror = no; w.onclose = no; }})));",
        port_of(&target)
    );
    let (port, seen) = serve(page("", &attempts), vec![]).await;
    let (out, _dir) = clone(port, namespaces).await;
    assert!(!out.is_error, "{}", out.joined_text());
    let unconfined = out.joined_text().contains("without its sandbox");
    assert_eq!(unconfined, !namespaces, "{}", out.joined_text());
    let marker = marker(&seen);
    no_connection(&target, "wss://").await;
    assert!(marker.contains("wss%3Afailed"), "{marker}");
}

/// WebRTC: a STUN server and a TURN server over UDP (a socket the test owns sees no packet)
/// and a TURN server over TCP (a listener sees no connection); no candidate is gathered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webrtc_of_the_cloned_page_sends_no_packet() {
    if !chromium_present() {
        return;
    }
    for namespaces in [true, false] {
        webrtc_of_the_cloned_page_sends_no_packet_with(namespaces).await;
    }
}

async fn webrtc_of_the_cloned_page_sends_no_packet_with(namespaces: bool) {
    let udp = UdpSocket::bind((FORBIDDEN, 0)).await.unwrap();
    let udp_port = udp.local_addr().unwrap().port();
    let turn_tcp = forbidden_listener().await;
    let attempts = format!(
        r#"const candidates = [];
tries.push(ended('rtc', new Promise((ok, no) => {{
  const pc = new RTCPeerConnection({{iceServers: [
    {{urls: 'stun:{FORBIDDEN}:{udp_port}'}},
    {{urls: 'turn:{FORBIDDEN}:{udp_port}', username: 'u', credential: 'c'}},
    {{urls: 'turn:{FORBIDDEN}:{tcp}?transport=tcp', username: 'u', credential: 'c'}}]}});
  pc.onicecandidate = (e) => {{ if (e.candidate && e.candidate.candidate) candidates.push(e.candidate.type); }};
  pc.onicegatheringstatechange = () => {{ if (pc.iceGatheringState === 'complete') ok(); }};
  pc.createDataChannel('d');
  pc.createOffer().then((o) => pc.setLocalDescription(o)).catch(no);
}}).then(() => {{ if (candidates.length) throw new Error(candidates.join()); }})));"#,
        tcp = port_of(&turn_tcp)
    );
    let (port, seen) = serve(page("", &attempts), vec![]).await;
    let (out, _dir) = clone(port, namespaces).await;
    assert!(!out.is_error, "{}", out.joined_text());
    let unconfined = out.joined_text().contains("without its sandbox");
    assert_eq!(unconfined, !namespaces, "{}", out.joined_text());
    let marker = marker(&seen);
    let mut buf = [0u8; 2048];
    let got = tokio::time::timeout(Duration::from_millis(500), udp.recv_from(&mut buf)).await;
    if let Ok(Ok((n, from))) = got {
        panic!("WebRTC: {n} bytes reached {FORBIDDEN}:{udp_port} from {from}");
    }
    no_connection(&turn_tcp, "TURN over TCP").await;
    // Gathering ends with no candidate at all (a host candidate is a local address the page
    // would learn) — or, where it does not end, it sent nothing, which the checks above say.
    assert!(!marker.contains("rtc%3Afailed"), "{marker}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preconnect_of_the_cloned_page_opens_no_connection() {
    if !chromium_present() {
        return;
    }
    for namespaces in [true, false] {
        a_preconnect_of_the_cloned_page_opens_no_connection_with(namespaces).await;
    }
}

async fn a_preconnect_of_the_cloned_page_opens_no_connection_with(namespaces: bool) {
    let target = forbidden_listener().await;
    let port_t = port_of(&target);
    let head = format!(
        r#"<link rel="preconnect" href="http://{FORBIDDEN}:{port_t}"><link rel="dns-prefetch" href="http://{FORBIDDEN}:{port_t}">"#
    );
    // Wait for the document's own requests to be under way: the preconnect is made by the
    // preload scanner before the script runs.
    let attempts = "tries.push(ended('wait', new Promise((ok) => setTimeout(ok, 1000))));";
    let (port, seen) = serve(page(&head, attempts), vec![]).await;
    let (out, _dir) = clone(port, namespaces).await;
    assert!(!out.is_error, "{}", out.joined_text());
    let unconfined = out.joined_text().contains("without its sandbox");
    assert_eq!(unconfined, !namespaces, "{}", out.joined_text());
    marker(&seen);
    no_connection(&target, "<link rel=preconnect>").await;
}

/// A service worker's fetches are not seen by the page's `Fetch` interception: the page may not
/// get one at all (its script is not fetched, so nothing of it runs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_worker_of_the_cloned_page_fetches_nothing() {
    if !chromium_present() {
        return;
    }
    for namespaces in [true, false] {
        a_service_worker_of_the_cloned_page_fetches_nothing_with(namespaces).await;
    }
}

async fn a_service_worker_of_the_cloned_page_fetches_nothing_with(namespaces: bool) {
    let target = forbidden_listener().await;
    let worker = format!(
        "fetch('http://{FORBIDDEN}:{}/from-the-worker').catch(() => 0);\n\
         self.addEventListener('install', () => self.skipWaiting());",
        port_of(&target)
    );
    let attempts = "tries.push(ended('sw', navigator.serviceWorker.register('/sw.js')\
                    .then(() => navigator.serviceWorker.ready)));";
    let (port, seen) =
        serve(page("", attempts), vec![("/sw.js", "application/javascript", worker)]).await;
    let (out, _dir) = clone(port, namespaces).await;
    assert!(!out.is_error, "{}", out.joined_text());
    let unconfined = out.joined_text().contains("without its sandbox");
    assert_eq!(unconfined, !namespaces, "{}", out.joined_text());
    let marker = marker(&seen);
    no_connection(&target, "the service worker's fetch").await;
    assert!(marker.contains("sw%3Afailed"), "{marker}");
    let paths = seen.paths.lock().unwrap().clone();
    assert!(!paths.iter().any(|p| p == "/sw.js"), "the worker's script was fetched: {paths:?}");
}

/// clone_site's Chromium runs with its own sandbox (the renderers under seccomp-bpf, in
/// namespaces of their own) and in a network namespace with nothing in it — as root too, where
/// Chromium refuses its sandbox unless it sees another user id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clone_browser_runs_sandboxed_and_offline() {
    if !chromium_present() {
        return;
    }
    use serde_json::json;
    let dir = tempfile::tempdir().unwrap();
    let session = Session::new("sandbox", dir.path());
    let supervisor = hands_exec::Supervisor::of(&session, &hands_exec::ExecConfig::default());
    let cancel = hands_core::CancellationToken::new();
    let launch = hands_preview::Launch {
        supervisor: &supervisor,
        root: dir.path(),
        grace: Duration::from_secs(2),
        cancel: &cancel,
    };
    let (browser, confinement) = hands_clone::start_browser(launch, CHROMIUM, true)
        .await
        .unwrap_or_else(|err| panic!("Chromium did not start: {err:?}"));
    let hands_preview::Browser { proc, profile, cdp, events: _events } = browser;
    let target =
        cdp.call("Target.createTarget", json!({"url": "about:blank"}), None).await.unwrap();
    let attached = cdp
        .call(
            "Target.attachToTarget",
            json!({"targetId": target["targetId"], "flatten": true}),
            None,
        )
        .await
        .unwrap();
    let sid = attached["sessionId"].as_str().unwrap().to_owned();
    cdp.call("Page.navigate", json!({"url": "data:text/html,<h1>hi</h1>"}), Some(&sid))
        .await
        .unwrap();
    let info = cdp.call("SystemInfo.getProcessInfo", json!({}), None).await.unwrap();
    let ours = std::fs::read_link("/proc/self/ns/net").unwrap();
    let mut renderers = 0;
    let mut report = Vec::new();
    for p in info["processInfo"].as_array().unwrap() {
        let pid = p["id"].as_u64().unwrap();
        let kind = p["type"].as_str().unwrap_or("").to_owned();
        let seccomp_of = || {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
            status.lines().find(|l| l.starts_with("Seccomp:")).map(str::to_owned)
        };
        let Some(mut seccomp) = seccomp_of() else { continue };
        // A renderer forked a moment ago applies its filter just after: look again, a bounded
        // number of times, before calling it unfiltered.
        for _ in 0..50 {
            if kind != "renderer" || seccomp.ends_with('2') {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            match seccomp_of() {
                Some(again) => seccomp = again,
                None => break,
            }
        }
        let net = std::fs::read_link(format!("/proc/{pid}/ns/net")).unwrap();
        report.push(format!("{kind} {pid} {seccomp:?} {}", net.display()));
        assert_ne!(net, ours, "{kind} {pid} shares the test's network: {report:?}");
        if kind == "renderer" {
            renderers += 1;
            assert!(seccomp.ends_with('2'), "a renderer without seccomp-bpf: {report:?}");
        }
    }
    assert!(renderers > 0, "no renderer: {report:?}");
    assert_eq!(confinement, hands_preview::Confinement::Isolated, "{report:?}");
    cdp.close();
    proc.stop("test done", Duration::from_secs(2)).await;
    drop(profile);
    session.close().await;
}
