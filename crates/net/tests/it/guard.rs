//! The guard against real servers on 127.0.0.1 (the only traffic tests send): redirects into
//! loopback refused, addresses in every notation refused, a gzip bomb stopped at the cap, a slow
//! server stopped at the timeout.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::io::Write;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use hands_core::CancellationToken;
use hands_core::secret::SecretValue;
use hands_net::{Guard, NetConfig, NetError, Request};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the fixture answers for one path.
#[derive(Clone)]
enum Reply {
    Ok(&'static str),
    Redirect(String),
    /// An endless gzip stream of zeros.
    GzipBomb,
    /// Headers, then nothing for a long time.
    Slow,
    /// The request's headers as the body.
    Echo,
}

/// A fixture server on 127.0.0.1; `route` maps a path to a reply. Lives until the runtime ends.
async fn serve(route: fn(&str, SocketAddr) -> Reply) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(answer(stream, route, addr));
        }
    });
    addr
}

async fn answer(mut stream: TcpStream, route: fn(&str, SocketAddr) -> Reply, addr: SocketAddr) {
    let mut request = Vec::new();
    let mut buf = [0u8; 4096];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&request).into_owned();
    let path = text.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let _ = match route(&path, addr) {
        Reply::Ok(body) => {
            let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len());
            stream.write_all(format!("{head}{body}").as_bytes()).await
        }
        Reply::Echo => {
            let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", text.len());
            stream.write_all(format!("{head}{text}").as_bytes()).await
        }
        Reply::Redirect(to) => {
            let head = format!("HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\n\r\n");
            stream.write_all(head.as_bytes()).await
        }
        Reply::GzipBomb => bomb(&mut stream).await,
        Reply::Slow => {
            let head = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc";
            let _ = stream.write_all(head.as_bytes()).await;
            tokio::time::sleep(Duration::from_secs(30)).await;
            Ok(())
        }
    };
}

/// Serve gzip of zeros without end (bounded at 10 GB of zeros). Two 1 MiB blocks are compressed
/// once: after the first, every sync-flushed block of zeros compresses to the same bytes, so the
/// second is repeated.
async fn bomb(stream: &mut TcpStream) -> std::io::Result<()> {
    stream
        .write_all(
            b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n",
        )
        .await?;
    let zeros = vec![0u8; 1 << 20];
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut piece = || -> std::io::Result<Vec<u8>> {
        encoder.write_all(&zeros)?;
        encoder.flush()?;
        Ok(std::mem::take(encoder.get_mut()))
    };
    let first = piece()?;
    let repeated = piece()?;
    let mut send = async |bytes: &[u8]| -> std::io::Result<()> {
        stream.write_all(format!("{:x}\r\n", bytes.len()).as_bytes()).await?;
        stream.write_all(bytes).await?;
        stream.write_all(b"\r\n").await
    };
    send(&first).await?;
    for _ in 1..10_240 {
        send(&repeated).await?;
    }
    Ok(())
}

fn allow_fixture() -> NetConfig {
    NetConfig { allow_hosts: vec!["127.0.0.1".into()], ..NetConfig::default() }
}

async fn fetch(config: &NetConfig, url: &str) -> Result<hands_net::Fetched, NetError> {
    Guard::new(config).unwrap().send(Request::get(url), &CancellationToken::new()).await
}

fn routes(path: &str, addr: SocketAddr) -> Reply {
    let port = addr.port();
    match path {
        "/ok" => Reply::Ok("hello"),
        "/to-127-0-0-2" => Reply::Redirect(format!("http://127.0.0.2:{port}/ok")),
        "/to-v6" => Reply::Redirect(format!("http://[::1]:{port}/ok")),
        "/to-decimal" => Reply::Redirect(format!("http://2130706433:{port}/ok")),
        "/to-file" => Reply::Redirect("file:///etc/passwd".into()),
        "/relative" => Reply::Redirect("/ok".into()),
        "/to-other-origin" => Reply::Redirect(format!("http://localhost:{port}/echo")),
        "/to-same-origin" => Reply::Redirect("/echo".into()),
        "/echo" => Reply::Echo,
        "/bomb" => Reply::GzipBomb,
        "/slow" => Reply::Slow,
        loop_path if loop_path.starts_with("/loop/") => {
            let n: u32 = loop_path[6..].parse().unwrap_or(0);
            Reply::Redirect(format!("/loop/{}", n + 1))
        }
        _ => Reply::Ok("not found"),
    }
}

#[tokio::test]
async fn the_fixture_itself_needs_allow_hosts() {
    let addr = serve(routes).await;
    let url = format!("http://{addr}/ok");
    let err = fetch(&NetConfig::default(), &url).await.unwrap_err();
    assert!(matches!(err, NetError::Forbidden { .. }), "{err}");
    assert!(err.to_string().contains("allow_hosts"), "{err}");
    let page = fetch(&allow_fixture(), &url).await.unwrap();
    assert_eq!(page.status, 200);
    assert_eq!(page.body, b"hello");
    assert_eq!(page.final_url, url);
}

#[tokio::test]
async fn redirects_into_loopback_are_refused_unless_allowed() {
    let addr = serve(routes).await;
    for path in ["/to-127-0-0-2", "/to-v6"] {
        let err = fetch(&allow_fixture(), &format!("http://{addr}{path}")).await.unwrap_err();
        match &err {
            NetError::Forbidden { reason, .. } => {
                assert_eq!(*reason, hands_net::Forbidden::Loopback, "{path}")
            }
            other => panic!("{path}: {other}"),
        }
    }
    // 2130706433 is parsed as 127.0.0.1, the address the user allowed: followed.
    let page = fetch(&allow_fixture(), &format!("http://{addr}/to-decimal")).await.unwrap();
    assert_eq!(page.body, b"hello");
    assert!(page.final_url.starts_with("http://127.0.0.1:"), "{}", page.final_url);
    let err = fetch(&allow_fixture(), &format!("http://{addr}/to-file")).await.unwrap_err();
    assert!(matches!(err, NetError::Scheme { .. }), "{err}");
    let page = fetch(&allow_fixture(), &format!("http://{addr}/relative")).await.unwrap();
    assert_eq!(page.body, b"hello");
    assert!(page.final_url.ends_with("/ok"), "{}", page.final_url);
}

#[tokio::test]
async fn a_redirect_to_127_0_0_2_is_followed_when_the_user_allows_it() {
    let addr = serve(routes).await;
    // Bind the same routes on 127.0.0.2 with the same port is not guaranteed free: allow and
    // check that the refusal is gone (the connection may then fail, but not as Forbidden).
    let config = NetConfig {
        allow_hosts: vec!["127.0.0.1".into(), "127.0.0.2".into()],
        connect_timeout_ms: 2_000,
        ..NetConfig::default()
    };
    let result = fetch(&config, &format!("http://{addr}/to-127-0-0-2")).await;
    assert!(!matches!(result, Err(NetError::Forbidden { .. })), "{result:?}");
    let open = NetConfig { allow_private: true, connect_timeout_ms: 2_000, ..NetConfig::default() };
    let result = fetch(&open, &format!("http://{addr}/to-127-0-0-2")).await;
    assert!(!matches!(result, Err(NetError::Forbidden { .. })), "{result:?}");
}

#[tokio::test]
async fn literal_addresses_in_every_notation_are_refused_before_connecting() {
    for url in [
        "http://2130706433/",
        "http://0x7f.1/",
        "http://0177.0.0.1/",
        "http://[::ffff:127.0.0.1]/",
        "http://[::1]/",
        "http://169.254.169.254/latest/meta-data/",
        "http://localhost/",
    ] {
        let err = fetch(&NetConfig::default(), url).await.unwrap_err();
        assert!(matches!(err, NetError::Forbidden { .. }), "{url}: {err}");
    }
    for url in ["file:///etc/passwd", "gopher://127.0.0.1:70/_x"] {
        let err = fetch(&NetConfig::default(), url).await.unwrap_err();
        assert!(matches!(err, NetError::Scheme { .. }), "{url}: {err}");
    }
    let err = fetch(&NetConfig::default(), "http://user:canary-pass-1234@example.com/")
        .await
        .unwrap_err();
    assert!(matches!(err, NetError::Userinfo { .. }), "{err}");
    assert!(!err.to_string().contains("canary-pass-1234"), "{err}");
}

#[tokio::test]
async fn a_name_resolved_to_loopback_is_refused() {
    let addr = serve(routes).await;
    let resolve = BTreeMap::from([("fixture.test".to_owned(), vec![addr.ip()])]);
    let config = NetConfig { resolve: resolve.clone(), ..NetConfig::default() };
    let url = format!("http://fixture.test:{}/ok", addr.port());
    let err = fetch(&config, &url).await.unwrap_err();
    match &err {
        NetError::Forbidden { host, .. } => assert_eq!(host, "fixture.test"),
        other => panic!("{other}"),
    }
    // Allowing the address does not allow a name that resolves to it; allowing the name does.
    let by_addr = NetConfig { allow_hosts: vec!["127.0.0.1".into()], ..config.clone() };
    assert!(matches!(fetch(&by_addr, &url).await, Err(NetError::Forbidden { .. })));
    let by_name = NetConfig { allow_hosts: vec!["*.test".into()], ..config };
    assert_eq!(fetch(&by_name, &url).await.unwrap().body, b"hello");
}

#[tokio::test]
async fn a_gzip_bomb_stops_at_the_cap_quickly() {
    let addr = serve(routes).await;
    let guard = Guard::new(&allow_fixture()).unwrap();
    let started = Instant::now();
    let request = Request::get(format!("http://{addr}/bomb")).max_bytes(8 * 1024 * 1024);
    let err = guard.send(request, &CancellationToken::new()).await.unwrap_err();
    assert!(matches!(err, NetError::TooLarge { limit: 8_388_608, .. }), "{err}");
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
}

#[tokio::test]
async fn a_slow_server_stops_at_the_read_timeout() {
    let addr = serve(routes).await;
    let config = NetConfig { read_timeout_ms: 500, ..allow_fixture() };
    let started = Instant::now();
    let err = fetch(&config, &format!("http://{addr}/slow")).await.unwrap_err();
    assert!(matches!(err, NetError::Timeout { what: "read", .. }), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
}

#[tokio::test]
async fn a_cancelled_fetch_stops_at_once() {
    let addr = serve(routes).await;
    let guard = Guard::new(&allow_fixture()).unwrap();
    let token = CancellationToken::new();
    let stopper = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        stopper.cancel();
    });
    let started = Instant::now();
    let err = guard.send(Request::get(format!("http://{addr}/slow")), &token).await.unwrap_err();
    assert!(matches!(err, NetError::Cancelled { .. }), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn more_than_five_redirects_are_refused() {
    let addr = serve(routes).await;
    let err = fetch(&allow_fixture(), &format!("http://{addr}/loop/0")).await.unwrap_err();
    assert!(matches!(err, NetError::TooManyRedirects { max: 5, .. }), "{err}");
}

#[tokio::test]
async fn secret_headers_go_only_to_the_first_origin() {
    let addr = serve(routes).await;
    let config = NetConfig {
        allow_hosts: vec!["127.0.0.1".into(), "localhost".into()],
        resolve: BTreeMap::from([("localhost".to_owned(), vec![addr.ip()])]),
        ..NetConfig::default()
    };
    let guard = Guard::new(&config).unwrap();
    let send = |path: &str| {
        Request::get(format!("http://{addr}{path}"))
            .secret_header("X-Api-Key", SecretValue::new("canary-key-5678"))
            .header("Authorization", "Bearer canary-bearer-9012")
            .header("X-Plain", "kept")
    };
    let same = guard.send(send("/to-same-origin"), &CancellationToken::new()).await.unwrap();
    let same = String::from_utf8(same.body).unwrap();
    assert!(same.contains("canary-key-5678") && same.contains("canary-bearer-9012"), "{same}");
    let other = guard.send(send("/to-other-origin"), &CancellationToken::new()).await.unwrap();
    let other = String::from_utf8(other.body).unwrap();
    assert!(other.starts_with("GET /echo"), "{other}");
    assert!(!other.contains("canary-key-5678"), "{other}");
    assert!(!other.contains("canary-bearer-9012"), "{other}");
    assert!(other.contains("kept"), "{other}");
}

#[tokio::test]
async fn one_forbidden_address_in_an_answer_refuses_the_whole_answer() {
    // No traffic: the resolver refuses before anything connects.
    let resolve = BTreeMap::from([(
        "mixed.test".to_owned(),
        vec!["93.184.216.34".parse().unwrap(), "127.0.0.1".parse().unwrap()],
    )]);
    let config = NetConfig { resolve, ..NetConfig::default() };
    let err = fetch(&config, "http://mixed.test/").await.unwrap_err();
    assert!(matches!(err, NetError::Forbidden { .. }), "{err}");
}
