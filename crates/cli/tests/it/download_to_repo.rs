//! download_to_repo through the real binary (`hands call`), against fixture servers on 127.0.0.1
//! (the only traffic tests send): the SSRF table of issue 13, the gzip bomb, the slow server,
//! confined paths, magic bytes, overwrite, and bad input. A refused or failed download leaves no
//! file behind.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use assert_cmd::Command;
use serde_json::Value;
use sha2::Digest;

/// A 2×3 PNG (one IDAT of zeros).
fn png() -> Vec<u8> {
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let chunk = |out: &mut Vec<u8>, kind: &[u8], data: &[u8]| {
        out.extend_from_slice(&(data.len() as u32).to_be_bytes());
        out.extend_from_slice(kind);
        out.extend_from_slice(data);
        out.extend_from_slice(&crc32(&[kind, data].concat()).to_be_bytes());
    };
    chunk(&mut out, b"IHDR", &[0, 0, 0, 2, 0, 0, 0, 3, 8, 6, 0, 0, 0]);
    let raw = vec![0u8; 3 * (1 + 2 * 4)];
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(&raw).unwrap();
    chunk(&mut out, b"IDAT", &z.finish().unwrap());
    chunk(&mut out, b"IEND", &[]);
    out
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

/// Start the fixture on 127.0.0.1; it serves until the test process ends.
fn fixture() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || answer(stream, addr));
        }
    });
    addr
}

fn answer(mut stream: TcpStream, addr: SocketAddr) {
    let mut request = Vec::new();
    let mut buf = [0u8; 4096];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&request).into_owned();
    let path = text.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let port = addr.port();
    let ok = |stream: &mut TcpStream, body: &[u8]| {
        let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len());
        let _ = stream.write_all(head.as_bytes());
        let _ = stream.write_all(body);
    };
    let redirect = |stream: &mut TcpStream, to: &str| {
        let head = format!("HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\n\r\n");
        let _ = stream.write_all(head.as_bytes());
    };
    match path.as_str() {
        "/pic.png" => ok(&mut stream, &png()),
        "/page.html" => ok(&mut stream, b"<!doctype html><h1>hi</h1>"),
        "/data.json" => ok(&mut stream, br#"{"ok": true}"#),
        "/via-redirect.png" => redirect(&mut stream, "/pic.png"),
        "/to-127-0-0-2" => redirect(&mut stream, &format!("http://127.0.0.2:{port}/pic.png")),
        "/to-v6" => redirect(&mut stream, &format!("http://[::1]:{port}/pic.png")),
        "/to-metadata" => redirect(&mut stream, "http://169.254.169.254/latest/meta-data/"),
        "/bomb.txt" => {
            let _ = bomb(&mut stream);
        }
        "/slow.png" => {
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n\x89PNG");
            std::thread::sleep(Duration::from_secs(20));
        }
        _ => {
            let _ = stream.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
        }
    }
}

/// An endless gzip stream of zeros (10 GB at most): the second sync-flushed block is repeated.
fn bomb(stream: &mut TcpStream) -> std::io::Result<()> {
    stream.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n",
    )?;
    let zeros = vec![0u8; 1 << 20];
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut piece = || -> std::io::Result<Vec<u8>> {
        encoder.write_all(&zeros)?;
        encoder.flush()?;
        Ok(std::mem::take(encoder.get_mut()))
    };
    let first = piece()?;
    let repeated = piece()?;
    let mut send = |bytes: &[u8]| -> std::io::Result<()> {
        stream.write_all(format!("{:x}\r\n", bytes.len()).as_bytes())?;
        stream.write_all(bytes)?;
        stream.write_all(b"\r\n")
    };
    send(&first)?;
    for _ in 1..10_240 {
        send(&repeated)?;
    }
    Ok(())
}

/// A project in a temp HOME whose user config allows the fixture's address (and adds `extra`).
struct Project {
    tmp: tempfile::TempDir,
}

impl Project {
    fn new(extra: &str) -> Self {
        Self::with_config(&format!("[net]\nallow_hosts = [\"127.0.0.1\"]\n{extra}"))
    }

    /// A user config that allows no host.
    fn with_config(config: &str) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("home/.config/hands")).unwrap();
        std::fs::create_dir_all(tmp.path().join("root")).unwrap();
        // A web project: download_to_repo is offered where there are assets to fetch.
        std::fs::write(tmp.path().join("root/index.html"), "<h1>app</h1>\n").unwrap();
        std::fs::write(tmp.path().join("home/.config/hands/config.toml"), config).unwrap();
        Self { tmp }
    }

    fn root(&self) -> std::path::PathBuf {
        self.tmp.path().join("root")
    }

    fn call(&self, args: &str) -> Out {
        self.call_with(args, &[])
    }

    fn call_with(&self, args: &str, env: &[(&str, &str)]) -> Out {
        let mut cmd = Command::cargo_bin("hands").unwrap();
        cmd.env("HOME", self.tmp.path().join("home"))
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("HANDS_APPROVAL")
            .env_remove("HTTP_PROXY")
            .env_remove("http_proxy")
            .env_remove("ALL_PROXY")
            .envs(env.iter().copied())
            .timeout(Duration::from_secs(60))
            .args(["call", "download_to_repo", args, "--json", "--root"])
            .arg(self.root());
        let out = cmd.output().unwrap();
        Out {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Every file under the root, relative (hands' own `.hands` folder and the project's marker
    /// `index.html` left out).
    fn files(&self) -> Vec<String> {
        fn walk(dir: &Path, base: &Path, out: &mut Vec<String>) {
            for entry in std::fs::read_dir(dir).unwrap().flatten() {
                let path = entry.path();
                let rel = path.strip_prefix(base).unwrap().to_string_lossy().into_owned();
                if rel == ".hands" || rel == "index.html" {
                    continue;
                }
                if path.is_dir() {
                    walk(&path, base, out);
                } else {
                    out.push(rel);
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.root(), &self.root(), &mut out);
        out.sort();
        out
    }
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Out {
    /// The result's text (an error's is on stderr).
    fn text(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("{e}: {}", self.stdout))
    }
}

fn args(url: &str, path: &str) -> String {
    serde_json::json!({"url": url, "path": path}).to_string()
}

#[test]
fn a_png_is_downloaded_with_its_dimensions_hash_and_image() {
    let addr = fixture();
    let project = Project::new("");
    let out = project.call(&args(&format!("http://{addr}/via-redirect.png"), "public/img/a.png"));
    assert_eq!(out.code, 0, "{}", out.text());
    let written = std::fs::read(project.root().join("public/img/a.png")).unwrap();
    assert_eq!(written, png());
    let v = out.json();
    let s = &v["structuredContent"];
    assert_eq!(s["action"], "created");
    assert_eq!(s["path"], "public/img/a.png");
    assert_eq!(s["bytes"], png().len());
    assert_eq!(s["mime_type"], "image/png");
    assert_eq!(s["width"], 2);
    assert_eq!(s["height"], 3);
    assert_eq!(s["final_url"], format!("http://{addr}/pic.png"));
    assert_eq!(s["sha256"], hex(&sha2::Sha256::digest(png())));
    let image = v["content"].as_array().unwrap().iter().find(|c| c["type"] == "image").unwrap();
    assert_eq!(image["mimeType"], "image/png");
    assert!(v["content"][0]["text"].as_str().unwrap().contains("2×3"), "{v}");
    // A text format with no magic bytes.
    let out = project.call(&args(&format!("http://{addr}/data.json"), "data/x.json"));
    assert_eq!(out.code, 0, "{}", out.text());
    assert_eq!(out.json()["structuredContent"]["mime_type"], "application/json");
    assert!(out.json()["structuredContent"].get("width").is_none());
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn the_ssrf_table_is_refused_end_to_end_and_leaves_no_file() {
    let addr = fixture();
    let port = addr.port();
    let project = Project::new(
        "[net.resolve]\n\"fixture.test\" = [\"127.0.0.1\"]\n\"meta.test\" = [\"169.254.169.254\"]\n",
    );
    // The fixture's address is allowed here: what it redirects to, and a name the resolve map
    // answers with that address, are not.
    let through_fixture = [
        (format!("http://{addr}/to-127-0-0-2"), "loopback"),
        (format!("http://{addr}/to-v6"), "loopback"),
        (format!("http://{addr}/to-metadata"), "link-local"),
        (format!("http://fixture.test:{port}/pic.png"), "loopback"),
        ("http://meta.test/latest".to_owned(), "link-local"),
    ];
    // No host is allowed here: addresses in every notation, schemes, credentials.
    let strict = Project::with_config("");
    let direct = [
        ("http://2130706433/x.png".to_owned(), "loopback"),
        ("http://0x7f.1/x.png".to_owned(), "loopback"),
        ("http://0177.0.0.1/x.png".to_owned(), "loopback"),
        ("http://[::ffff:127.0.0.1]/x.png".to_owned(), "loopback"),
        ("http://[::1]/x.png".to_owned(), "loopback"),
        ("http://localhost/x.png".to_owned(), "loopback"),
        ("http://169.254.169.254/latest/meta-data/".to_owned(), "link-local"),
        ("http://10.0.0.1/x.png".to_owned(), "private"),
        ("file:///etc/passwd".to_owned(), "only http"),
        ("gopher://127.0.0.1:70/_x".to_owned(), "only http"),
        (format!("http://user:canary-pw-31337@{addr}/pic.png"), "user name or password"),
    ];
    let runs = through_fixture
        .iter()
        .map(|case| (&project, case))
        .chain(direct.iter().map(|case| (&strict, case)));
    for (project, (url, expected)) in runs {
        let out = project.call(&args(url, "got.png"));
        assert_eq!(out.code, 1, "{url}: {}", out.text());
        assert!(out.text().contains(expected), "{url}: {}", out.text());
        assert!(out.text().contains("Nothing was written"), "{url}: {}", out.text());
        assert!(!out.text().contains("canary-pw-31337"), "{url}: {}", out.text());
    }
    assert!(strict.files().is_empty(), "{:?}", strict.files());
    assert!(project.files().is_empty(), "{:?}", project.files());
}

#[test]
fn a_projects_config_cannot_open_the_network() {
    let addr = fixture();
    let project = Project::new("");
    // The user allows nothing here; the repository tries to.
    std::fs::write(project.tmp.path().join("home/.config/hands/config.toml"), "").unwrap();
    std::fs::create_dir_all(project.root().join(".hands")).unwrap();
    std::fs::write(
        project.root().join(".hands/config.toml"),
        "[net]\nallow_hosts = [\"127.0.0.1\"]\nallow_private = true\n",
    )
    .unwrap();
    let out = project.call(&args(&format!("http://{addr}/pic.png"), "a.png"));
    assert_eq!(out.code, 1, "{}", out.text());
    assert!(out.text().contains("allow_hosts"), "{}", out.text());
    assert!(!project.root().join("a.png").exists());
}

#[test]
fn a_gzip_bomb_stops_at_the_cap_and_leaves_no_file() {
    let addr = fixture();
    let project = Project::new("");
    let started = Instant::now();
    let call = serde_json::json!({"url": format!("http://{addr}/bomb.txt"), "path": "bomb.txt",
        "max_bytes": 2_000_000});
    let out = project.call(&call.to_string());
    assert_eq!(out.code, 1, "{}", out.text());
    assert!(out.text().contains("more than 2000000 bytes"), "{}", out.text());
    assert!(started.elapsed() < Duration::from_secs(30), "{:?}", started.elapsed());
    assert!(project.files().is_empty(), "{:?}", project.files());
}

#[test]
fn a_slow_server_stops_at_the_read_timeout() {
    let addr = fixture();
    let project = Project::new("read_timeout_ms = 1000\n");
    let started = Instant::now();
    let out = project.call(&args(&format!("http://{addr}/slow.png"), "slow.png"));
    assert_eq!(out.code, 1, "{}", out.text());
    assert!(out.text().contains("did not answer in time"), "{}", out.text());
    assert!(started.elapsed() < Duration::from_secs(15), "{:?}", started.elapsed());
    assert!(project.files().is_empty(), "{:?}", project.files());
}

#[test]
fn paths_outside_the_project_or_into_git_are_refused() {
    let addr = fixture();
    let project = Project::new("");
    std::fs::create_dir_all(project.root().join(".git/hooks")).unwrap();
    let url = format!("http://{addr}/pic.png");
    for (path, expected) in [
        ("../escape.png", "outside the project root"),
        ("/tmp/hands-download-escape.png", "outside the project root"),
        ("a/../../escape.png", "outside the project root"),
        (".git/hooks/x.png", ".git"),
        ("noext", "no extension"),
    ] {
        let out = project.call(&args(&url, path));
        assert_eq!(out.code, 1, "{path}: {}", out.text());
        assert!(out.text().contains(expected), "{path}: {}", out.text());
    }
    assert!(!project.tmp.path().join("escape.png").exists());
    assert!(!Path::new("/tmp/hands-download-escape.png").exists());
    assert!(!project.root().join(".git/hooks/x.png").exists());
    // A symlinked folder leading out of the project is refused too.
    std::os::unix::fs::symlink(project.tmp.path(), project.root().join("out")).unwrap();
    let out = project.call(&args(&url, "out/escaped.png"));
    assert_eq!(out.code, 1, "{}", out.text());
    assert!(!project.tmp.path().join("escaped.png").exists());
}

#[test]
fn content_must_match_the_extension() {
    let addr = fixture();
    let project = Project::new("");
    for (url, path, expected) in [
        ("/pic.png", "pic.jpg", "image/png"),
        ("/page.html", "logo.png", "text/html"),
        ("/pic.png", "notes.txt", "image/png"),
        ("/page.html", "data.json", "not valid JSON"),
        ("/missing.png", "missing.png", "HTTP status 404"),
    ] {
        let out = project.call(&args(&format!("http://{addr}{url}"), path));
        assert_eq!(out.code, 1, "{path}: {}", out.text());
        assert!(out.text().contains(expected), "{path}: {}", out.text());
        assert!(out.text().contains("othing was written"), "{path}: {}", out.text());
    }
    assert!(project.files().is_empty(), "{:?}", project.files());
}

#[test]
fn an_existing_file_is_replaced_only_with_overwrite() {
    let addr = fixture();
    let project = Project::new("");
    std::fs::write(project.root().join("a.png"), "old").unwrap();
    let url = format!("http://{addr}/pic.png");
    let out = project.call(&args(&url, "a.png"));
    assert_eq!(out.code, 1, "{}", out.text());
    assert!(out.text().contains("already exists"), "{}", out.text());
    assert!(out.text().contains("overwrite"), "{}", out.text());
    assert_eq!(std::fs::read(project.root().join("a.png")).unwrap(), b"old");
    let call = serde_json::json!({"url": url, "path": "a.png", "overwrite": true});
    let out = project.call(&call.to_string());
    assert_eq!(out.code, 0, "{}", out.text());
    assert_eq!(out.json()["structuredContent"]["action"], "replaced");
    assert_eq!(std::fs::read(project.root().join("a.png")).unwrap(), png());
}

#[test]
fn bad_input_gets_a_clear_error() {
    let project = Project::new("[web]\ndownload_max_bytes = 1000\n");
    for (call, expected) in [
        (r#"{"url": 3, "path": "a.png"}"#, "url"),
        (r#"{"url": "http://127.0.0.1/a.png"}"#, "path"),
        (r#"{"path": "a.png"}"#, "url"),
        (r#"{"url": "http://127.0.0.1/a.png", "path": "a.png", "overwrite": "yes"}"#, "overwrite"),
        (r#"{"url": "http://127.0.0.1/a.png", "path": "a.png", "max_bytes": -1}"#, "max_bytes"),
        (r#"{"url": "http://127.0.0.1/a.png", "path": "a.png", "filename": "x"}"#, "filename"),
        (r#"{"url": "http://127.0.0.1/a.png", "path": "a.png", "max_bytes": 5000}"#, "1000"),
        (r#"{"url": "not a url", "path": "a.png"}"#, "not a valid URL"),
    ] {
        let out = project.call(call);
        assert_eq!(out.code, 1, "{call}: {}", out.text());
        assert!(out.text().contains(expected), "{call}: {}", out.text());
    }
    assert!(project.files().is_empty(), "{:?}", project.files());
}

/// A "proxy" on 127.0.0.1 that answers every request with the PNG and counts requests and
/// records their first lines.
fn proxy_fixture() -> (SocketAddr, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let n = stream.read(&mut buf).unwrap_or(0);
            let text = String::from_utf8_lossy(&buf[..n]).into_owned();
            log.lock().unwrap().push(text.lines().next().unwrap_or_default().to_owned());
            let body = png();
            let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len());
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
        }
    });
    (addr, seen)
}

#[test]
fn proxy_variables_are_ignored_and_a_configured_proxy_is_used() {
    let addr = fixture();
    let (proxy, seen) = proxy_fixture();
    let project = Project::new("");
    let proxy_url = format!("http://{proxy}");
    let env = [
        ("HTTP_PROXY", proxy_url.as_str()),
        ("http_proxy", proxy_url.as_str()),
        ("ALL_PROXY", proxy_url.as_str()),
    ];
    let out = project.call_with(&args(&format!("http://{addr}/pic.png"), "direct.png"), &env);
    assert_eq!(out.code, 0, "{}", out.text());
    assert!(seen.lock().unwrap().is_empty(), "the environment's proxy was used: {seen:?}");
    // Configured by the user: used, and the name is left to the proxy to resolve.
    let project = Project::new(&format!("proxy = \"{proxy_url}\"\n"));
    let out = project.call(&args("http://assets.example/logo.png", "via-proxy.png"));
    assert_eq!(out.code, 0, "{}", out.text());
    assert_eq!(std::fs::read(project.root().join("via-proxy.png")).unwrap(), png());
    assert_eq!(*seen.lock().unwrap(), ["GET http://assets.example/logo.png HTTP/1.1"]);
}
