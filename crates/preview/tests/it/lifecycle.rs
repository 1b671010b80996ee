//! The preview's processes and files over its life: reuse, close, session end, a crashed browser,
//! and the discovery file.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::{Duration, Instant};

use common::{Env, require_for};
use serde_json::{Value, json};

/// Addresses (as /proc/net/tcp writes them) listening on `port`.
fn listeners(port: u16) -> Vec<String> {
    let mut found = Vec::new();
    for file in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(file) else { continue };
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(state)) = (fields.get(1), fields.get(3)) else { continue };
            let Some((addr, p)) = local.rsplit_once(':') else { continue };
            if *state == "0A" && u16::from_str_radix(p, 16) == Ok(port) {
                found.push(addr.to_owned());
            }
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opening_twice_reuses_and_close_and_session_end_leave_nothing() {
    if !require_for("static-site") {
        return;
    }
    let env = Env::fixture("static-site", |_| {});
    let first = env.open().await;
    let browser = first["browserPid"].as_u64().unwrap() as u32;
    assert!(env.marked().contains(&browser), "the browser carries the session's marker");
    assert!(env.marked().len() > 1, "and so do its helper processes: {:?}", env.marked());
    // A fresh profile folder, named on the browser's command line.
    let cmdline = std::fs::read(format!("/proc/{browser}/cmdline")).unwrap();
    let profile = cmdline
        .split(|b| *b == 0)
        .find_map(|arg| arg.strip_prefix(b"--user-data-dir="))
        .map(|p| std::path::PathBuf::from(String::from_utf8_lossy(p).into_owned()))
        .unwrap();
    assert!(profile.is_dir(), "{}", profile.display());
    let flags = String::from_utf8_lossy(&cmdline).replace('\0', " ");
    for flag in [
        "--headless=new",
        "--no-first-run",
        "--disable-background-networking",
        "--remote-debugging-pipe",
    ] {
        assert!(flags.contains(flag), "{flag} missing: {flags}");
    }
    assert!(!flags.contains("--remote-debugging-port"), "no DevTools TCP port: {flags}");
    // Chromium's scratch folders go into the profile (removed at close), not the shared /tmp.
    let environ = std::fs::read(format!("/proc/{browser}/environ")).unwrap();
    let tmpdir = environ
        .split(|b| *b == 0)
        .find_map(|var| var.strip_prefix(b"TMPDIR="))
        .map(|p| std::path::PathBuf::from(String::from_utf8_lossy(p).into_owned()))
        .expect("the browser has a TMPDIR");
    assert!(tmpdir.starts_with(&profile), "TMPDIR {} is outside the profile", tmpdir.display());

    // The discovery file: every field, on loopback.
    let file = env.root().join(".hands/devtools.json");
    let discovery: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    // Kept out of git (and out of checkpoints): hands' .gitignore beside it.
    let ignore = std::fs::read_to_string(env.root().join(".hands/.gitignore")).unwrap();
    assert!(ignore.starts_with("# Written by hands") && ignore.contains("\ndevtools.json\n"));
    for key in [
        "version",
        "pid",
        "cdpPort",
        "browserWsEndpoint",
        "targetId",
        "previewUrl",
        "stage",
        "startedAt",
    ] {
        assert!(!discovery[key].is_null(), "{key} missing: {discovery}");
    }
    assert_eq!(discovery["pid"], std::process::id());
    assert_eq!(discovery["stage"], "ready");
    assert_eq!(discovery["cdpPort"], first["cdpPort"]);
    assert_eq!(discovery["previewUrl"], first["previewUrl"]);
    let port = discovery["cdpPort"].as_u64().unwrap() as u16;
    let ws = discovery["browserWsEndpoint"].as_str().unwrap();
    assert!(ws.starts_with(&format!("ws://127.0.0.1:{port}/devtools/browser/")), "{ws}");
    let addrs = listeners(port);
    assert!(!addrs.is_empty(), "nothing listens on the DevTools port {port}");
    assert!(
        addrs.iter().all(|a| a == "0100007F"),
        "DevTools must listen on 127.0.0.1 only: {addrs:?}"
    );

    let (text, again) = env.ok("preview_open", json!({})).await;
    assert!(text.contains("reused"), "{text}");
    assert_eq!(again["browserPid"], first["browserPid"]);

    // preview_close answers in text only (no output schema, no structured copy).
    let (text, closed) = env.ok("preview_close", json!({})).await;
    assert!(text.starts_with("Stopped the preview"), "{text}");
    assert!(closed.is_null(), "{closed}");
    assert!(env.nothing_left().await, "preview_close left {:?}", env.marked());
    assert!(!file.exists(), "the discovery file is removed");
    assert!(!profile.exists(), "the profile folder is removed");
    let (_, status) = env.ok("preview_status", json!({})).await;
    assert_eq!(
        (status["stage"].as_str(), status["running"].as_bool()),
        (Some("stopped"), Some(false))
    );
    let (text, _) = env.ok("preview_close", json!({})).await;
    assert!(text.contains("nothing to stop"), "{text}");

    // The end of the session stops a preview too.
    let reopened = env.open().await;
    assert_ne!(reopened["browserPid"], first["browserPid"]);
    assert!(file.exists());
    env.session.close().await;
    assert!(env.nothing_left().await, "session end left {:?}", env.marked());
    assert!(!file.exists(), "the discovery file is removed at session end");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_chromium_is_reported_and_the_next_open_recovers() {
    if !require_for("static-site") {
        return;
    }
    let env = Env::fixture("static-site", |_| {});
    let first = env.open().await;
    let browser = first["browserPid"].as_u64().unwrap();
    std::process::Command::new("kill").args(["-KILL", &browser.to_string()]).status().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        let (_, status) = env.ok("preview_status", json!({})).await;
        if status["stage"] == "error" || Instant::now() > deadline {
            break status;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(status["stage"], "error", "{status}");
    assert_eq!(status["running"], false);
    assert_eq!(status["attached"], false);
    let last = status["lastError"].as_str().unwrap();
    assert!(last.contains("Chromium") && last.contains("signal 9"), "{last}");
    let (_, read) = env.ok("read_runtime_errors", json!({})).await;
    assert!(
        common::find(read["errors"].as_array().unwrap(), "crash", "Chromium").is_some(),
        "{read}"
    );

    let second = env.open().await;
    assert_ne!(second["browserPid"].as_u64().unwrap(), browser);
    assert_eq!(second["running"], true);
    assert_eq!(second["lastError"], json!(null));
    env.session.close().await;
    assert!(env.nothing_left().await, "left running: {:?}", env.marked());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bricks_compatibility_writes_the_discovery_file_under_bricks() {
    if !require_for("static-site") {
        return;
    }
    let env = Env::fixture("static-site", |c| c.compat = hands_preview::Compat::Bricks);
    env.open().await;
    let bricks = env.root().join(".bricks/devtools.json");
    let discovery: Value =
        serde_json::from_str(&std::fs::read_to_string(&bricks).unwrap()).unwrap();
    assert_eq!(discovery["version"], 1);
    assert!(!env.root().join(".hands/devtools.json").exists());
    env.ok("preview_close", json!({})).await;
    assert!(!bricks.exists());
}

/// Whether this test runs as root (and so can act as `nobody`).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
}

/// Run a Python snippet as `nobody` (uid and gid 65534); its stdout, trimmed.
fn python_as_nobody(script: &str) -> String {
    let out = std::process::Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
            "/usr/bin/python3",
            "-c",
            script,
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_devtools_endpoint_serves_its_user_only() {
    if !require_for("static-site") {
        return;
    }
    let env = Env::fixture("static-site", |_| {});
    let opened = env.open().await;
    let file = env.root().join(".hands/devtools.json");
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the discovery file holds the endpoint's secret");
    let discovery: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let port = discovery["cdpPort"].as_u64().unwrap();
    assert_eq!(discovery["cdpPort"], opened["cdpPort"]);
    let ws = discovery["browserWsEndpoint"].as_str().unwrap().to_owned();
    let secret = ws.rsplit('/').next().unwrap().to_owned();
    assert_eq!(secret.len(), 64, "{ws}");

    // The user's own tools drive the page through it.
    let title = common::evaluate(env.root(), "1 + 2").await;
    assert_eq!(title, json!(3));

    if !is_root() {
        eprintln!("not root: the other-user check is skipped");
        return;
    }
    // Another local user: no listing, no guessable path, no discovery file.
    let script = format!(
        "import http.client, os\n\
         out = []\n\
         for path in ['/json/version', '/json/list', '/devtools/browser/x']:\n\
         \x20   c = http.client.HTTPConnection('127.0.0.1', {port}, timeout=10)\n\
         \x20   c.request('GET', path, headers={{'Connection': 'Upgrade', 'Upgrade': 'websocket', \
         'Sec-WebSocket-Version': '13', 'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ=='}})\n\
         \x20   out.append(str(c.getresponse().status))\n\
         try:\n\
         \x20   open('{file}').read(); out.append('read')\n\
         except PermissionError:\n\
         \x20   out.append('denied')\n\
         print(' '.join(out))",
        file = file.display()
    );
    // Opened up to the file itself, only the file's own mode keeps nobody out.
    let open = std::fs::Permissions::from_mode(0o755);
    let mut dir = file.parent().unwrap().to_path_buf();
    while dir.starts_with(std::env::temp_dir()) && dir != std::env::temp_dir() {
        std::fs::set_permissions(&dir, open.clone()).unwrap();
        dir.pop();
    }
    let answers = python_as_nobody(&script);
    assert_eq!(answers, "404 404 404 denied", "as nobody");
    assert!(!answers.contains(&secret));
    env.ok("preview_close", json!({})).await;
}
