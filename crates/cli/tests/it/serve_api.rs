//! The session API through the real `hands serve` binary: the token and Origin checks on `/v1` and
//! `/vibe`, a session created, called and sent a message (the `[model]` flags reach the host: the
//! turn runs and fails on the unreachable model rather than being refused with 503), and the
//! session still there, with its transcript and events, after the server is restarted on the same
//! `[store]`; `--open` signing the browser in with a one-time link.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use serde_json::{Value, json};

const TOKEN: &str = "serve-api-test-token";

struct Serve {
    child: Child,
    base: String,
    /// Every line it printed on stderr so far.
    lines: Arc<Mutex<Vec<String>>>,
}

impl Serve {
    fn start(home: &Path, root: &Path, extra: &[String]) -> Self {
        Self::start_with(home, root, extra, &[])
    }

    /// With `envs` set for it too.
    fn start_with(home: &Path, root: &Path, extra: &[String], envs: &[(&str, &Path)]) -> Self {
        let mut child = Command::new(assert_cmd::cargo::cargo_bin("hands"))
            .args(["serve", "--listen", "127.0.0.1:0", "--token", TOKEN, "--root"])
            .arg(root)
            .args(extra)
            .env("HOME", home)
            .env("XDG_CONFIG_HOME", home.join("config"))
            .env("XDG_DATA_HOME", home.join("data"))
            .env("XDG_STATE_HOME", home.join("state"))
            .env("HANDS_STATE_DIR", home.join("state"))
            .env_remove("HANDS_SERVER__TOKEN")
            .envs(envs.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&lines);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                eprintln!("[hands serve] {line}");
                kept.lock().unwrap().push(line.clone());
                if let Some(rest) = line.split("http://127.0.0.1:").nth(1) {
                    let port: String = rest.chars().take_while(char::is_ascii_digit).collect();
                    let _ = tx.send(port);
                }
            }
        });
        let port = rx.recv_timeout(Duration::from_secs(30)).expect("hands serve did not start");
        Self { child, base: format!("http://127.0.0.1:{port}"), lines }
    }

    /// SIGTERM, as a user's Ctrl-C or a service manager would: a clean exit, soon, even with an
    /// event stream open.
    fn stop(mut self) {
        let status =
            Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status().unwrap();
        assert!(status.success());
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        let exited = loop {
            if let Some(exited) = self.child.try_wait().unwrap() {
                break exited;
            }
            assert!(std::time::Instant::now() < deadline, "hands serve did not stop on SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        };
        assert!(exited.success(), "hands serve exited with {exited}");
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn call(
    client: &reqwest::Client,
    method: &str,
    url: String,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = client
        .request(method.parse().unwrap(), url)
        .bearer_auth(TOKEN)
        .timeout(Duration::from_secs(60));
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let bytes = response.bytes().await.unwrap();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

/// The events of `session` from the start until `turn_ended` (its data included).
async fn events_until_turn_end(client: &reqwest::Client, base: &str, session: &str) -> Vec<Value> {
    let mut response = client
        .get(format!("{base}/v1/sessions/{session}/events"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut text = String::new();
    let mut events = Vec::new();
    loop {
        let chunk = tokio::time::timeout(Duration::from_secs(60), response.chunk())
            .await
            .expect("no turn_ended event within 60 s")
            .unwrap()
            .expect("the stream ended");
        text.push_str(std::str::from_utf8(&chunk).unwrap());
        while let Some(end) = text.find("\n\n") {
            let block: String = text.drain(..end + 2).collect();
            if let Some(data) = block.lines().find_map(|l| l.strip_prefix("data: ")) {
                let event: Value = serde_json::from_str(data).unwrap();
                let done = event["type"] == "turn_ended";
                events.push(event);
                if done {
                    return events;
                }
            }
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_api_through_hands_serve_survives_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let root: PathBuf = tmp.path().join("proj");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("hello.txt"), "hello from the binary\n").unwrap();
    // A model where nothing listens: turns start, and end with the provider's error.
    let model = [
        "-c".to_owned(),
        "model.provider=openai".to_owned(),
        "-c".to_owned(),
        "model.model=test-model".to_owned(),
        "-c".to_owned(),
        format!("model.base_url=http://127.0.0.1:{}/v1", free_port()),
        "-c".to_owned(),
        "model.max_retries=0".to_owned(),
    ];
    let client = reqwest::Client::new();

    let server = Serve::start(&home, &root, &model);
    let base = server.base.clone();
    // The guard of /mcp covers /v1 and /vibe too; /healthz stays open.
    let reply = client.get(format!("{base}/v1/sessions")).send().await.unwrap();
    assert_eq!(reply.status(), 401);
    assert_eq!(reply.headers()["www-authenticate"], "Bearer");
    let reply = client.post(format!("{base}/vibe/abort/p")).send().await.unwrap();
    assert_eq!(reply.status(), 401);
    let reply = client
        .get(format!("{base}/v1/sessions"))
        .bearer_auth(TOKEN)
        .header("Origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 403);
    assert_eq!(client.get(format!("{base}/healthz")).send().await.unwrap().status(), 200);
    let (status, doc) = call(&client, "GET", format!("{base}/v1/openapi.json"), None).await;
    assert_eq!(status, 200);
    assert!(doc["paths"]["/vibe/abort/{projectId}"]["post"].is_object(), "{doc}");

    let (status, info) = call(
        &client,
        "POST",
        format!("{base}/v1/sessions"),
        Some(json!({"root": root, "id": "kept", "project_id": "proj-x", "title": "kept"})),
    )
    .await;
    assert_eq!(status, 201, "{info}");
    let (status, result) = call(
        &client,
        "POST",
        format!("{base}/v1/sessions/kept/tools/read_file"),
        Some(json!({"args": {"path": "hello.txt"}})),
    )
    .await;
    assert_eq!(status, 200, "{result}");
    assert!(result["content"][0]["text"].as_str().unwrap().contains("hello from the binary"));
    let (status, accepted) = call(
        &client,
        "POST",
        format!("{base}/v1/sessions/kept/messages"),
        Some(json!({"text": "say hi"})),
    )
    .await;
    assert_eq!(status, 202, "{accepted}");
    let events = events_until_turn_end(&client, &base, "kept").await;
    let end = events.last().unwrap();
    assert_eq!(end["reason"], "error", "{end}");
    assert!(events.iter().any(|e| e["type"] == "error"), "{events:?}");
    let (status, aborted) =
        call(&client, "POST", format!("{base}/vibe/abort/idle-project"), None).await;
    assert_eq!((status, aborted), (200, json!({"aborted_sessions": 0})));
    server.stop();

    // Restarted on the same store, without a model: the session, its transcript and its events
    // are there; a new message is refused with 503 until a model is configured.
    let server = Serve::start(&home, &root, &[]);
    let base = server.base.clone();
    let (status, info) = call(&client, "GET", format!("{base}/v1/sessions/kept"), None).await;
    assert_eq!(status, 200, "{info}");
    assert_eq!(info["project_id"], "proj-x");
    let (status, transcript) =
        call(&client, "GET", format!("{base}/v1/sessions/kept/messages"), None).await;
    assert_eq!(status, 200);
    assert_eq!(transcript["messages"][0]["content"][0]["text"], "say hi", "{transcript}");
    let replayed = events_until_turn_end(&client, &base, "kept").await;
    assert_eq!(replayed, events);
    let (status, refused) = call(
        &client,
        "POST",
        format!("{base}/v1/sessions/kept/messages"),
        Some(json!({"text": "again"})),
    )
    .await;
    assert_eq!(status, 503, "{refused}");
    assert_eq!(refused["error"]["code"], "no_model");
    // A client that keeps its event stream open does not hold the shutdown up.
    let open = client
        .get(format!("{base}/v1/sessions/kept/events?after=1000000"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(open.status(), 200);
    server.stop();
    drop(open);
}

/// Polls `read` every 50 ms until it gives something, for at most `secs` seconds.
fn eventually<T>(secs: u64, what: &str, mut read: impl FnMut() -> Option<T>) -> T {
    let deadline = std::time::Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(value) = read() {
            return value;
        }
        assert!(std::time::Instant::now() < deadline, "{what} within {secs} s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Issue 34: `hands serve --open` opens the browser at a one-time sign-in link, never the token;
/// the code is traded once for the token, and a second use is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_open_signs_the_browser_in_once_with_a_one_time_link() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let root = tmp.path().join("proj");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&root).unwrap();
    // The "browser" records the URL it is asked to open, and the link the page there sends it
    // on to (read at once: the page is removed after the code's lifetime).
    let opened = tmp.path().join("opened.txt");
    let asked = tmp.path().join("asked.txt");
    let browser = tmp.path().join("browser.sh");
    std::fs::write(
        &browser,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$1\" > '{asked}'\n\
             stat -c %a \"${{1#file://}}\" >> '{asked}'\n\
             sed -n 's/.*id=\"signin\" href=\"\\([^\"]*\\)\".*/\\1/p' \"${{1#file://}}\" >> '{opened}'\n",
            asked = asked.display(),
            opened = opened.display()
        ),
    )
    .unwrap();
    let executable = <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755);
    std::fs::set_permissions(&browser, executable).unwrap();

    let server = Serve::start_with(&home, &root, &["--open".to_owned()], &[("BROWSER", &browser)]);
    let base = server.base.clone();
    let link = eventually(30, "the browser was opened", || {
        std::fs::read_to_string(&opened).ok().filter(|text| text.ends_with('\n'))
    });
    let link = link.trim_end();
    assert!(!link.contains(TOKEN), "the token is never in the URL: {link}");
    // Red-team round 4: another local user read the code from the browser's command line. The
    // browser is given a page only the user can read, never the link.
    let asked = std::fs::read_to_string(&asked).unwrap();
    let (page, mode) = asked.trim_end().split_once('\n').unwrap();
    assert!(page.starts_with("file:///") && page.ends_with(".html"), "{page}");
    assert!(
        !page.contains("signin=") && !page.contains(link.rsplit('=').next().unwrap()),
        "{page}"
    );
    assert_eq!(mode, "600", "the page is the user's only: {page}");
    let folder = std::path::Path::new(page.trim_start_matches("file://")).parent().unwrap();
    let folder_mode =
        std::os::unix::fs::PermissionsExt::mode(&folder.metadata().unwrap().permissions());
    assert_eq!(folder_mode & 0o777, 0o700, "{}", folder.display());
    let code = link
        .strip_prefix(&format!("{base}/#signin="))
        .unwrap_or_else(|| panic!("not a sign-in link of {base}: {link}"));
    assert!(code.len() >= 32 && code.bytes().all(|b| b.is_ascii_hexdigit()), "{code}");
    let said = eventually(30, "stderr said the link was opened", || {
        server.lines.lock().unwrap().iter().find(|l| l.contains("sign-in link")).cloned()
    });
    assert!(said.contains("60 s") && !said.contains(code), "{said}");

    let client = reqwest::Client::new();
    let exchange = || {
        client
            .post(format!("{base}/v1/signin"))
            .json(&json!({ "code": code }))
            .timeout(Duration::from_secs(60))
            .send()
    };
    // The exchange needs no token and answers with it, once.
    let reply = exchange().await.unwrap();
    assert_eq!(reply.status(), 200);
    assert_eq!(reply.headers()["cache-control"], "no-store");
    let body: Value = reply.json().await.unwrap();
    let token = body["token"].as_str().unwrap().to_owned();
    assert_eq!(token, TOKEN);
    let reply = client.get(format!("{base}/v1/sessions")).bearer_auth(&token).send().await.unwrap();
    assert_eq!(reply.status(), 200);
    let list: Value = reply.json().await.unwrap();
    assert_eq!(list["default_root"], json!(std::fs::canonicalize(&root).unwrap()), "{list}");

    let reply = exchange().await.unwrap();
    assert_eq!(reply.status(), 401, "a second use");
    let body: Value = reply.json().await.unwrap();
    assert_eq!(body["error"]["code"], "signin_refused", "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("already used or has expired"), "{message}");
    assert!(!message.contains(TOKEN));
    // Nothing it printed holds the code (the URL is printed only when no browser opened it).
    assert!(!server.lines.lock().unwrap().iter().any(|l| l.contains(code)));
    server.stop();
}
