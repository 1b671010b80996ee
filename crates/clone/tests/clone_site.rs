//! clone_site against a fixture site served on 127.0.0.1 by the test, in the real Chromium.
//! Without Chromium the test fails under CI (`CI=true`) and skips loudly elsewhere.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use hands_core::{CoreConfig, Registry, Session, ToolCall};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

const CHROMIUM: &str = "/usr/bin/chromium";

fn chromium_present() -> bool {
    if Path::new(CHROMIUM).exists() {
        return true;
    }
    assert!(std::env::var("CI").is_err(), "Chromium is required in CI at {CHROMIUM}");
    eprintln!("SKIPPED: no Chromium at {CHROMIUM}");
    false
}

/// A one-file-per-path HTTP server; returns its port.
async fn serve(files: Vec<(&'static str, &'static str, Vec<u8>)>) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else { return };
            let files = files.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let n = sock.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]);
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
                let found = files.iter().find(|(p, _, _)| *p == path);
                let (status, ctype, body) = match found {
                    Some((_, t, b)) => ("200 OK", *t, b.clone()),
                    None => ("404 Not Found", "text/plain", b"no".to_vec()),
                };
                let header = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = sock.write_all(header.as_bytes()).await;
                let _ = sock.write_all(&body).await;
            });
        }
    });
    port
}

/// A 2×2 red PNG (hand-made, no encoder needed).
fn png() -> Vec<u8> {
    vec![
        0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44,
        0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x02, 0x00, 0x00, 0x00, 0x90,
        0x77, 0x53, 0xde, 0x00, 0x00, 0x00, 0x0c, 0x49, 0x44, 0x41, 0x54, 0x08, 0xd7, 0x63, 0xf8,
        0xcf, 0xc0, 0x00, 0x00, 0x03, 0x01, 0x01, 0x00, 0x18, 0xdd, 0x8d, 0xb0, 0x00, 0x00, 0x00,
        0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
    ]
}

fn fixture() -> Vec<(&'static str, &'static str, Vec<u8>)> {
    let html = r#"<!doctype html><html><head><link rel="stylesheet" href="/style.css">
<script src="/app.js"></script></head><body><h1 class="t">Fixture</h1>
<p>Hello <a href="/x">there</a>.</p><img src="/img/dot.png" alt="dot" width="40" height="40">
<img src="http://169.254.169.254/latest/meta-data/x.png" alt="meta"></body></html>"#;
    let css = "body{background:#1a2b3c;color:rgb(250, 250, 250);font-family:'Fixture Sans',sans-serif}\n\
               .t{background:url(img/dot.png)}";
    vec![
        ("/", "text/html", html.as_bytes().to_vec()),
        ("/style.css", "text/css", css.as_bytes().to_vec()),
        ("/app.js", "application/javascript", b"document.title='ran';".to_vec()),
        ("/img/dot.png", "image/png", png()),
    ]
}

fn registry() -> Registry {
    let config =
        hands_net::NetConfig { allow_hosts: vec!["127.0.0.1".into()], ..Default::default() };
    let guard = hands_net::Guard::new(&config).unwrap();
    hands_clone::register(
        Registry::builder(CoreConfig::default()),
        &guard,
        CHROMIUM,
        Path::new("/"),
    )
    .build()
}

async fn call(root: &Path, args: serde_json::Value) -> hands_core::ToolOutput {
    let registry = registry();
    let session = Session::new("s1", root);
    let out = registry.dispatch(&session, ToolCall::new("c1", "clone_site", args)).await.unwrap();
    session.close().await;
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_is_cloned_with_its_assets_and_the_forbidden_one_blocked() {
    if !chromium_present() {
        return;
    }
    let port = serve(fixture()).await;
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{port}/");
    let out = call(dir.path(), serde_json::json!({"url": url, "dest": "clone"})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    let clone = dir.path().join("clone");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(clone.join("manifest.json")).unwrap()).unwrap();
    let blocked = manifest["blocked"].as_array().unwrap();
    assert!(
        blocked.iter().any(|b| b["url"].as_str().unwrap().contains("169.254.169.254")),
        "{manifest}"
    );
    let assets = manifest["assets"].as_array().unwrap();
    assert!(assets.iter().any(|a| a["type"] == "text/css"), "{manifest}");
    assert!(assets.iter().any(|a| a["type"] == "image/png"), "{manifest}");
    assert!(assets.iter().all(|a| !a["url"].as_str().unwrap().ends_with(".js")), "{manifest}");
    assert!(manifest["colours"].as_array().unwrap().iter().any(|c| c == "#1a2b3c"));
    assert!(manifest["font_families"].as_array().unwrap().iter().any(|c| c == "Fixture Sans"));
    let html = std::fs::read_to_string(clone.join("index.html")).unwrap();
    assert!(!html.contains("<script"), "{html}");
    assert!(!html.contains(&format!("127.0.0.1:{port}/style.css")), "{html}");
    assert!(html.contains("assets/"), "{html}");
    for entry in std::fs::read_dir(clone.join("assets")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(!name.ends_with(".js"), "a script was saved: {name}");
    }
    let shot = std::fs::read(clone.join("screenshot.png")).unwrap();
    assert_eq!(&shot[..8], b"\x89PNG\r\n\x1a\n");
    let md = std::fs::read_to_string(clone.join("page.md")).unwrap();
    assert!(md.contains("# Fixture"), "{md}");
    assert!(out.content.iter().any(|c| matches!(c, hands_core::Content::Image { .. })));
}

#[tokio::test]
async fn bad_inputs_are_refused_before_a_browser_starts() {
    let dir = tempfile::tempdir().unwrap();
    for (args, says) in [
        (serde_json::json!({"url": "not a url"}), "not a URL"),
        (serde_json::json!({"url": "file:///etc/passwd"}), "file:"),
        (serde_json::json!({"url": "ftp://127.0.0.1/"}), "ftp:"),
        (serde_json::json!({"url": "http://127.0.0.1:1/", "dest": "../out"}), "dest"),
        (serde_json::json!({"url": "http://127.0.0.1:1/", "max_assets": 0}), "max_assets"),
        (serde_json::json!({"url": "http://127.0.0.1:1/", "max_bytes": 1u64 << 40}), "max_bytes"),
        (serde_json::json!({"url": 5}), "url"),
        (serde_json::json!({}), "url"),
    ] {
        if !Path::new(CHROMIUM).exists() {
            return; // the tool is not offered at all without Chromium
        }
        let out = call(dir.path(), args.clone()).await;
        assert!(out.is_error, "{args}: {}", out.joined_text());
        assert!(out.joined_text().contains(says), "{args}: {}", out.joined_text());
    }
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none(), "something was written");
}
