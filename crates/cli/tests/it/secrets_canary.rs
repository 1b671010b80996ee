//! The canary test (issue 13, "Bad input and safety"): a secret stored with `hands secrets set`
//! for a project is printed by bash (as it is, by `printenv`, base64- and URL-encoded), read back
//! from `.env`, written by a background process in two pieces 50 ms apart, typed by the user into
//! a session and its title — and found nowhere afterwards: not in the tool results, the MCP
//! transcript (stdio bytes both ways), `.hands/outputs/`, `.hands/processes/`, the SQLite session
//! store, a captured SSE stream of `hands serve`'s session API, nor hands' stderr at
//! `HANDS_LOG=trace`. Also: the provider key is absent from `env` under `hands serve` and
//! `hands run`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};

/// The stored secret. `+` and `/` make its URL-encoded form differ from the value.
const NAME: &str = "CANARY_TOKEN";
const VALUE: &str = "cnry+w1re/7Qx9e41bZk";
/// Provider keys in hands' own environment: never in a child's.
const PROVIDER_CANARY: &str = "sk-provider-canary-0b5d";
const TOKEN: &str = "canary-serve-token";

/// Every form of the value that must never show up.
fn forbidden() -> Vec<(String, &'static str)> {
    let b64 = base64::engine::general_purpose::STANDARD.encode(VALUE);
    let url = VALUE.replace('+', "%2B").replace('/', "%2F");
    vec![
        (VALUE.to_owned(), "the value"),
        (b64.trim_end_matches('=').to_owned(), "its base64"),
        (url, "its URL encoding"),
        (PROVIDER_CANARY.to_owned(), "the provider key"),
    ]
}

/// Panics when `bytes` (what `surface` holds) contains the value in any form.
fn assert_clean(surface: &str, bytes: &[u8]) {
    for (form, what) in forbidden() {
        let found = bytes.windows(form.len()).any(|w| w == form.as_bytes());
        assert!(!found, "{what} ({form}) is in {surface}:\n{}", String::from_utf8_lossy(bytes));
    }
}

/// Every file under `dir` (recursively), concatenated (empty when it does not exist).
fn tree(dir: &Path) -> (Vec<u8>, usize) {
    let mut bytes = Vec::new();
    let mut files = 0;
    let Ok(entries) = std::fs::read_dir(dir) else { return (bytes, 0) };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            let (more, n) = tree(&path);
            bytes.extend(more);
            files += n;
        } else if let Ok(body) = std::fs::read(&path) {
            bytes.extend(body);
            files += 1;
        }
    }
    (bytes, files)
}

/// A project with the secret stored for it, and a HOME, state, data and config of its own.
struct World {
    tmp: tempfile::TempDir,
    root: PathBuf,
}

impl World {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("project");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(tmp.path().join("home/.config/hands")).unwrap();
        let world = Self { tmp, root };
        let mut set = world.hands();
        set.args(["secrets", "set", NAME, "--project"]).arg(&world.root);
        let child = set.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = child.spawn().unwrap();
        child.stdin.take().unwrap().write_all(format!("{VALUE}\n").as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "hands secrets set failed: {said}");
        assert_clean("the output of hands secrets set", said.as_bytes());
        std::fs::write(world.root.join(".env"), format!("{NAME}={VALUE}\nPORT=3000\n")).unwrap();
        world
    }

    fn home(&self) -> PathBuf {
        self.tmp.path().join("home")
    }

    fn store(&self) -> PathBuf {
        self.tmp.path().join("data")
    }

    /// `hands` with this world's environment (and the provider keys set to a canary).
    fn hands(&self) -> Command {
        let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("hands"));
        for (name, _) in std::env::vars() {
            if name.starts_with("HANDS_") {
                cmd.env_remove(name);
            }
        }
        cmd.env("HOME", self.home())
            .env("XDG_CONFIG_HOME", self.home().join(".config"))
            .env("XDG_DATA_HOME", self.home().join(".local/share"))
            .env("XDG_STATE_HOME", self.home().join(".local/state"))
            .env("HANDS_STORE__PATH", self.store().join("sessions.db"))
            .env("ANTHROPIC_API_KEY", PROVIDER_CANARY)
            .env("OPENAI_API_KEY", PROVIDER_CANARY)
            .current_dir(&self.root);
        cmd
    }

    /// `.hands/outputs/` and `.hands/processes/` of the project, checked, with how many files
    /// they hold.
    fn assert_project_files_clean(&self) -> usize {
        let mut files = 0;
        for dir in [".hands/outputs", ".hands/processes"] {
            let (bytes, n) = tree(&self.root.join(dir));
            assert_clean(dir, &bytes);
            files += n;
        }
        files
    }
}

/// The bash commands whose output holds the secret, one way or another.
fn bash_commands() -> Vec<String> {
    vec![
        format!("echo \"${NAME}\""),
        "printenv".to_owned(),
        // Over the result cap: the full text is spilled to .hands/outputs/.
        format!("echo \"${NAME}\"; seq 1 9000; echo \"${NAME}\""),
        format!("printf %s \"${NAME}\" | base64"),
        format!(
            "python3 -c 'import os,urllib.parse; print(urllib.parse.quote(os.environ[\"{NAME}\"], \
             safe=\"\"))'"
        ),
    ]
}

/// A background process that writes the value in two pieces 50 ms apart.
fn split_writer() -> String {
    format!(
        "printf %s \"${NAME}\" | head -c 7; sleep 0.05; printf %s \"${NAME}\" | tail -c +8; \
         echo; sleep 0.3"
    )
}

// ---------------------------------------------------------------------------------------------
// MCP over stdio

/// `hands mcp` at HANDS_LOG=trace, with every byte both ways recorded.
struct Mcp {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
    sent: Vec<u8>,
    received: Vec<u8>,
    stderr: PathBuf,
    next: u64,
}

impl Mcp {
    fn start(world: &World) -> Self {
        let stderr = world.tmp.path().join("mcp-stderr");
        let mut child = world
            .hands()
            .args(["mcp", "--root"])
            .arg(&world.root)
            .env("HANDS_LOG", "trace")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let mut mcp =
            Self { child, stdin, lines, sent: Vec::new(), received: Vec::new(), stderr, next: 1 };
        mcp.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "canary", "version": "1"}}),
        );
        mcp.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        mcp
    }

    fn send(&mut self, message: &Value) {
        let line = format!("{message}\n");
        self.sent.extend_from_slice(line.as_bytes());
        self.stdin.write_all(line.as_bytes()).unwrap();
    }

    /// Send a request and wait (at most 60 s) for its answer.
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.lines.recv_timeout(left).expect("no answer from hands mcp in 60 s");
            self.received.extend_from_slice(line.as_bytes());
            self.received.push(b'\n');
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message["result"].clone();
            }
        }
    }

    fn call(&mut self, tool: &str, args: Value) -> Value {
        let result = self.request("tools/call", json!({"name": tool, "arguments": args}));
        assert_eq!(result["isError"], false, "{tool} {args} failed: {result}");
        result
    }

    /// Close stdin and wait for the exit; stderr's bytes.
    fn finish(mut self) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
        drop(self.stdin);
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.child.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("hands mcp did not exit on stdin EOF");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        while let Ok(line) = self.lines.try_recv() {
            self.received.extend_from_slice(line.as_bytes());
        }
        (self.sent, self.received, std::fs::read(&self.stderr).unwrap())
    }
}

/// Chromium for the preview; missing, a failure under CI and a loud skip elsewhere.
fn chromium() -> bool {
    if Path::new("/usr/bin/chromium").exists() {
        return true;
    }
    assert!(std::env::var_os("CI").is_none(), "/usr/bin/chromium is missing, and CI must have it");
    eprintln!("\n!!! SKIPPED (the preview part): /usr/bin/chromium is missing !!!\n");
    false
}

/// Open the preview of the page and read its runtime errors until the logged one shows; every
/// result, as text.
fn preview_console(mcp: &mut Mcp) -> String {
    let mut seen = mcp.call("preview_open", json!({})).to_string();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let errors = mcp.call("read_runtime_errors", json!({"since": 0, "warnings": true}));
        let shown = errors.to_string();
        seen += &shown;
        if shown.contains("page key") {
            assert!(shown.contains(&format!("page key [secret:{NAME}]")), "{shown}");
            break;
        }
        assert!(Instant::now() < deadline, "the console error never showed: {shown}");
        std::thread::sleep(Duration::from_millis(300));
    }
    seen += &mcp.call("preview_close", json!({})).to_string();
    seen
}

fn text(result: &Value) -> String {
    result["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

fn python() -> bool {
    let ok = Command::new("python3").arg("--version").output().is_ok_and(|o| o.status.success());
    if !ok {
        assert!(std::env::var_os("CI").is_none(), "python3 is needed by the canary test");
        eprintln!("skipped: python3 is not installed");
    }
    ok
}

#[test]
fn the_secret_is_nowhere_in_what_mcp_returns_logs_or_leaves_in_the_project() {
    if !python() {
        return;
    }
    let world = World::new();
    // A page that logs the value (the preview's console and runtime errors).
    std::fs::write(
        world.root.join("index.html"),
        "<h1>canary</h1><script src=\"app.js\"></script>\n",
    )
    .unwrap();
    std::fs::write(
        world.root.join("app.js"),
        format!("console.log('{VALUE}');\nconsole.error('page key {VALUE}');\n"),
    )
    .unwrap();
    let mut mcp = Mcp::start(&world);
    let placeholder = format!("[secret:{NAME}]");
    let mut results = String::new();
    for command in bash_commands() {
        let result = mcp.call("bash", json!({"command": command}));
        let shown = text(&result);
        // The variable is there (granted to this project), shown as its placeholder.
        assert!(shown.contains(&placeholder), "{command}: {shown}");
        results += &result.to_string();
    }
    let env = text(&mcp.call("read_file", json!({"path": ".env"})));
    assert!(env.contains(&format!("{NAME}={placeholder}")), "{env}");
    results += &env;
    let spawned = mcp.call("spawn_process", json!({"command": split_writer(), "type": "long-run"}));
    results += &spawned.to_string();
    std::thread::sleep(Duration::from_millis(800));
    let output = mcp.call("process_output", json!({"id": "p1", "since": 0}));
    let shown = text(&output);
    assert!(shown.contains(&placeholder), "the split value was not redacted as one: {shown}");
    results += &shown;
    if chromium() {
        results += &preview_console(&mut mcp);
    }
    assert_clean("the tool results", results.as_bytes());
    let (sent, received, stderr) = mcp.finish();
    assert_clean("the MCP transcript (client to hands)", &sent);
    assert_clean("the MCP transcript (hands to client)", &received);
    assert!(!stderr.is_empty(), "HANDS_LOG=trace logged nothing");
    assert_clean("stderr at HANDS_LOG=trace", &stderr);
    world.assert_project_files_clean();
    let (spilled, files) = tree(&world.root.join(".hands/outputs"));
    assert!(files >= 1, "no spilled output to check");
    let marker = placeholder.as_bytes();
    assert!(spilled.windows(marker.len()).any(|w| w == marker), "the spill lost the placeholder");
    let (_, logs) = tree(&world.root.join(".hands/processes"));
    assert!(logs >= 1, "the background process left no log to check");
}

// ---------------------------------------------------------------------------------------------
// hands serve: the session API, its SSE stream and the SQLite store

struct Serve {
    child: Child,
    base: String,
    stderr: mpsc::Receiver<String>,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Serve {
    fn start(world: &World) -> Self {
        let unreachable = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = unreachable.local_addr().unwrap().port();
        drop(unreachable);
        let mut child = world
            .hands()
            .args(["serve", "--listen", "127.0.0.1:0", "--token", TOKEN, "--root"])
            .arg(&world.root)
            .args(["-c", "model.provider=openai", "-c", "model.model=test-model"])
            .args(["-c", &format!("model.base_url=http://127.0.0.1:{port}/v1")])
            .args(["-c", "model.max_retries=0"])
            .env("HANDS_LOG", "trace")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut early = Vec::new();
        let port = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = rx.recv_timeout(left).expect("hands serve did not start");
            let port = line
                .split("http://127.0.0.1:")
                .nth(1)
                .map(|rest| rest.chars().take_while(char::is_ascii_digit).collect::<String>());
            early.push(line);
            if let Some(port) = port.filter(|p| !p.is_empty()) {
                break port;
            }
        };
        let (tx2, stderr) = mpsc::channel();
        for line in early {
            tx2.send(line).unwrap();
        }
        std::thread::spawn(move || {
            while let Ok(line) = rx.recv() {
                if tx2.send(line).is_err() {
                    return;
                }
            }
        });
        Self { child, base: format!("http://127.0.0.1:{port}"), stderr }
    }

    /// SIGTERM, then everything it wrote on stderr.
    fn stop(mut self) -> String {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "hands serve did not stop on SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(100));
        let mut text = String::new();
        while let Ok(line) = self.stderr.try_recv() {
            text += &line;
            text.push('\n');
        }
        text
    }
}

async fn api(client: &reqwest::Client, method: &str, url: String, body: Value) -> (u16, Value) {
    let response = client
        .request(method.parse().unwrap(), url)
        .bearer_auth(TOKEN)
        .timeout(Duration::from_secs(60))
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let bytes = response.bytes().await.unwrap();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

/// The raw SSE bytes of `session` from the start until `turn_ended`.
async fn sse_until_turn_end(client: &reqwest::Client, base: &str, session: &str) -> String {
    let mut response = client
        .get(format!("{base}/v1/sessions/{session}/events"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut raw = String::new();
    while !raw.contains("event: turn_ended") {
        let chunk = tokio::time::timeout(Duration::from_secs(60), response.chunk())
            .await
            .expect("no turn_ended event within 60 s")
            .unwrap()
            .expect("the stream ended");
        raw.push_str(&String::from_utf8_lossy(&chunk));
    }
    raw
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_secret_is_nowhere_in_the_session_api_its_events_or_the_session_store() {
    let world = World::new();
    let server = Serve::start(&world);
    let base = server.base.clone();
    let client = reqwest::Client::new();
    let placeholder = format!("[secret:{NAME}]");
    // The user pastes the key into the title and a message: stored and streamed as placeholders.
    let (status, info) = api(
        &client,
        "POST",
        format!("{base}/v1/sessions"),
        json!({"root": world.root, "id": "canary", "title": format!("key {VALUE}")}),
    )
    .await;
    assert_eq!(status, 201, "{info}");
    let mut results = String::new();
    for command in ["echo \"$CANARY_TOKEN\"", "env"] {
        let (status, result) = api(
            &client,
            "POST",
            format!("{base}/v1/sessions/canary/tools/bash"),
            json!({"args": {"command": command}}),
        )
        .await;
        assert_eq!(status, 200, "{result}");
        let shown = result.to_string();
        assert!(shown.contains(&placeholder), "{command}: {shown}");
        results += &shown;
    }
    assert!(
        !results.contains("OPENAI_API_KEY="),
        "the provider key variable reached env: {results}"
    );
    let (status, accepted) = api(
        &client,
        "POST",
        format!("{base}/v1/sessions/canary/messages"),
        json!({"text": format!("my key is {VALUE}, use it")}),
    )
    .await;
    assert_eq!(status, 202, "{accepted}");
    let sse = sse_until_turn_end(&client, &base, "canary").await;
    assert!(sse.contains(&format!("my key is {placeholder}")), "{sse}");
    let (_, transcript) =
        api(&client, "GET", format!("{base}/v1/sessions/canary/messages"), Value::Null).await;
    let stderr = server.stop();
    assert_clean("the tool results of the session API", results.as_bytes());
    assert_clean("the SSE stream", sse.as_bytes());
    assert_clean("the stored transcript", transcript.to_string().as_bytes());
    assert_clean("stderr of hands serve at HANDS_LOG=trace", stderr.as_bytes());
    let (db, files) = tree(&world.store());
    assert!(files >= 1, "no session store in {}", world.store().display());
    assert_clean("the SQLite session store", &db);
    let marker = placeholder.as_bytes();
    assert!(db.windows(marker.len()).any(|w| w == marker), "the store kept nothing of the session");
    world.assert_project_files_clean();
}

// ---------------------------------------------------------------------------------------------
// hands run: the provider key is not in a child's environment

/// The key the scripted model server expects, and the variable hands reads it from.
const KEY: &str = "sk-scripted-canary-91f3";
const KEY_VAR: &str = "SCRIPTED_MODEL_KEY";

/// tests/agent/scripted_model.py on a free port; killed when dropped.
struct Model {
    child: Child,
    url: String,
    log: PathBuf,
}

impl Drop for Model {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Model {
    fn start(dir: &Path, script: &Value) -> Self {
        let script_path = dir.join("script.json");
        std::fs::write(&script_path, script.to_string()).unwrap();
        let port_file = dir.join("port");
        let log = dir.join("requests.jsonl");
        let program =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/agent/scripted_model.py");
        let mut child = Command::new("python3")
            .arg(&program)
            .args(["--format", "anthropic", "--port", "0", "--expect-key", KEY])
            .arg("--script")
            .arg(&script_path)
            .arg("--port-file")
            .arg(&port_file)
            .arg("--log")
            .arg(&log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        let port = loop {
            if let Ok(text) = std::fs::read_to_string(&port_file) {
                break text.trim().to_owned();
            }
            assert!(child.try_wait().unwrap().is_none(), "scripted_model.py exited early");
            assert!(Instant::now() < deadline, "scripted_model.py wrote no port file");
            std::thread::sleep(Duration::from_millis(20));
        };
        Self { child, url: format!("http://127.0.0.1:{port}"), log }
    }
}

#[test]
fn under_hands_run_env_has_no_provider_key_and_the_secret_only_as_a_placeholder() {
    if !python() {
        return;
    }
    let world = World::new();
    let model = Model::start(
        world.tmp.path(),
        &json!([
            {"tool_calls": [{"id": "b1", "name": "bash", "input": {"command": "env"}}]},
            {"text": "Listed the environment."},
        ]),
    );
    std::fs::write(
        world.home().join(".config/hands/config.toml"),
        format!(
            "approval = \"auto\"\n[model]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\n\
             base_url = \"{}\"\napi_key_env = \"{KEY_VAR}\"\nmax_retries = 0\n",
            model.url
        ),
    )
    .unwrap();
    let out = world
        .hands()
        .args(["run", "list the environment"])
        .env(KEY_VAR, KEY)
        .env("HANDS_LOG", "trace")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("Listed the environment."), "{stdout}");
    // What the model got back from `env`: the second request's last message.
    let requests = std::fs::read_to_string(&model.log).unwrap();
    let result = requests.lines().nth(1).expect("no second request: the tool result");
    assert!(result.contains(&format!("{NAME}=[secret:{NAME}]")), "{result}");
    for leak in [KEY, KEY_VAR, "ANTHROPIC_API_KEY", "OPENAI_API_KEY"] {
        assert!(!result.contains(leak), "{leak} reached env under hands run: {result}");
    }
    assert_clean("what the model got", result.as_bytes());
    assert_clean("stdout of hands run", stdout.as_bytes());
    assert_clean("stderr of hands run at HANDS_LOG=trace", stderr.as_bytes());
    let (db, _) = tree(&world.store());
    assert_clean("the session store of hands run", &db);
}

// ---------------------------------------------------------------------------------------------
// Egress: the model request and every route of the session API (issue 26, finding 6, finding 12
// and "redact at egress")

/// Where the value is planted, each with a label that the request must show beside the
/// placeholder (proof that the text reached the request, redacted).
const PLANTED: &[(&str, &str)] = &[
    ("AGENTS.md", "agents-md"),
    ("CLAUDE.md", "claude-md"),
    (".hands/instructions.md", "instructions-md"),
];

#[test]
fn the_model_request_carries_no_stored_value_from_instructions_skills_or_the_user() {
    if !python() {
        return;
    }
    let world = World::new();
    for (file, label) in PLANTED {
        let path = world.root.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, format!("{label} {VALUE}\n")).unwrap();
    }
    let skill = world.root.join(".hands/skills/deploy");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        format!(
            "---\nname: deploy\ndescription: skill-desc {VALUE} deploys the app\n---\nSteps.\n"
        ),
    )
    .unwrap();
    let model = Model::start(world.tmp.path(), &json!([{"text": "Noted."}]));
    std::fs::write(
        world.home().join(".config/hands/config.toml"),
        format!(
            "approval = \"auto\"\n[model]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\n\
             base_url = \"{}\"\napi_key_env = \"{KEY_VAR}\"\nmax_retries = 0\n",
            model.url
        ),
    )
    .unwrap();
    let out = world
        .hands()
        .args(["run", &format!("user-msg {VALUE} keep it safe")])
        .env(KEY_VAR, KEY)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let requests = std::fs::read_to_string(&model.log).unwrap();
    let first = requests.lines().next().expect("the model got no request");
    let placeholder = format!("[secret:{NAME}]");
    let labels = PLANTED.iter().map(|(_, l)| *l).chain(["skill-desc", "user-msg"]);
    for label in labels {
        assert!(
            first.contains(&format!("{label} {placeholder}")),
            "{label} did not reach the request as a placeholder: {first}"
        );
    }
    assert_clean("the requests the model got", requests.as_bytes());
    assert_clean("stdout of hands run", stdout.as_bytes());
}

impl Serve {
    /// `hands serve` on this world with the scripted model at `model` (Anthropic's format).
    fn with_model(world: &World, model: &Model) -> Self {
        std::fs::write(
            world.home().join(".config/hands/config.toml"),
            format!(
                "approval = \"auto\"\n[model]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\n\
                 base_url = \"{}\"\napi_key_env = \"{KEY_VAR}\"\nmax_retries = 0\n",
                model.url
            ),
        )
        .unwrap();
        let mut child = world
            .hands()
            .args(["serve", "--listen", "127.0.0.1:0", "--token", TOKEN, "--root"])
            .arg(&world.root)
            .env(KEY_VAR, KEY)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        let port = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = rx.recv_timeout(left).expect("hands serve did not start");
            let port = line
                .split("http://127.0.0.1:")
                .nth(1)
                .map(|rest| rest.chars().take_while(char::is_ascii_digit).collect::<String>());
            if let Some(port) = port.filter(|p| !p.is_empty()) {
                break port;
            }
        };
        Self { child, base: format!("http://127.0.0.1:{port}"), stderr: rx }
    }
}

/// The raw body of one request (any status, any content type).
async fn raw(
    client: &reqwest::Client,
    method: &str,
    url: &str,
    body: Option<&Value>,
) -> (u16, Vec<u8>) {
    let mut request = client
        .request(method.parse().unwrap(), url)
        .bearer_auth(TOKEN)
        .timeout(Duration::from_secs(30));
    if let Some(body) = body {
        request = request.json(body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.bytes().await.unwrap().to_vec())
}

/// The value URL-encoded for a path segment (its `/` and `+` would otherwise change the path).
fn in_path() -> String {
    VALUE.replace('+', "%2B").replace('/', "%2F")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_of_the_session_api_answers_without_the_value() {
    if !python() {
        return;
    }
    let world = World::new();
    // The model writes the value into a file through bash: the turn's checkpoint diff holds it.
    let model = Model::start(
        world.tmp.path(),
        &json!([
            {"tool_calls": [{"id": "b1", "name": "bash",
                "input": {"command": "printf 'key=%s\\n' \"$CANARY_TOKEN\" > key.txt"}}]},
            {"text": "Saved."},
        ]),
    );
    let server = Serve::with_model(&world, &model);
    let base = server.base.clone();
    let client = reqwest::Client::new();
    let (status, info) = api(
        &client,
        "POST",
        format!("{base}/v1/sessions"),
        json!({"root": world.root, "id": "egress"}),
    )
    .await;
    assert_eq!(status, 201, "{info}");
    let (status, accepted) = api(
        &client,
        "POST",
        format!("{base}/v1/sessions/egress/messages"),
        json!({"text": format!("save {VALUE} in key.txt")}),
    )
    .await;
    assert_eq!(status, 202, "{accepted}");
    let sse = sse_until_turn_end(&client, &base, "egress").await;
    assert!(
        std::fs::read_to_string(world.root.join("key.txt")).unwrap().contains(VALUE),
        "the turn did not write the value into key.txt"
    );
    // The live title comes from the first message: listed with the placeholder.
    let (_, listed) = raw(&client, "GET", &format!("{base}/v1/sessions"), None).await;
    let listed = String::from_utf8_lossy(&listed).into_owned();
    assert!(listed.contains(&format!("save [secret:{NAME}]")), "{listed}");
    // The checkpoints of the turn: the diff shows the placeholder, never the value.
    let (_, list) =
        api(&client, "GET", format!("{base}/v1/sessions/egress/checkpoints"), Value::Null).await;
    let checkpoints: Vec<u64> = list["checkpoints"]
        .as_array()
        .or(list.as_array())
        .map(|a| a.iter().filter_map(|c| c["n"].as_u64()).collect())
        .unwrap_or_default();
    assert!(checkpoints.len() >= 2, "no checkpoints of the turn: {list}");
    let last = *checkpoints.iter().max().unwrap();
    let (status, diff) =
        raw(&client, "GET", &format!("{base}/v1/sessions/egress/checkpoints/{last}/diff"), None)
            .await;
    let diff = String::from_utf8_lossy(&diff).into_owned();
    assert_eq!(status, 200, "{diff}");
    assert!(diff.contains(&format!("key=[secret:{NAME}]")), "{diff}");
    // Every route of the OpenAPI document, with the value wherever a request can carry it: in
    // each path parameter but the session's id, in the query, in the body.
    let (_, doc) = api(&client, "GET", format!("{base}/v1/openapi.json"), Value::Null).await;
    let paths = doc["paths"].as_object().expect("no paths in the OpenAPI document");
    let mut answers = vec![("the first SSE stream".to_owned(), sse.into_bytes())];
    let mut deletes = Vec::new();
    let mut routes = 0;
    for (template, operations) in paths {
        for (method, _) in operations.as_object().unwrap() {
            let mut path = template.replace("{id}", "egress").replace("{n}", &last.to_string());
            path = path.replace("{name}", "bash");
            while let Some(start) = path.find('{') {
                let end = path[start..].find('}').unwrap() + start;
                path.replace_range(start..=end, &in_path());
            }
            let url = format!("{base}{path}?q={}", in_path());
            let method = method.to_ascii_uppercase();
            if method == "DELETE" {
                deletes.push(url);
                continue;
            }
            routes += 1;
            if path.ends_with("/events") {
                // The stream from the start holds the whole turn; read it until its end.
                answers.push((
                    format!("GET {path}"),
                    sse_until_turn_end(&client, &base, "egress").await.into_bytes(),
                ));
                continue;
            }
            let body = json!({
                "text": format!("msg {VALUE}"), "title": format!("t {VALUE}"),
                "args": {"command": "printf '%s' \"$CANARY_TOKEN\""},
                "answer": VALUE, "value": VALUE, "reason": VALUE, "approve": false,
            });
            let body = (method != "GET").then_some(&body);
            let (status, bytes) = raw(&client, &method, &url, body).await;
            answers.push((format!("{method} {path} ({status})"), bytes));
        }
    }
    for url in deletes {
        routes += 1;
        let (status, bytes) = raw(&client, "DELETE", &url, None).await;
        answers.push((format!("DELETE {url} ({status})"), bytes));
    }
    assert!(routes >= 20, "only {routes} routes in the OpenAPI document");
    // Routes that do not exist echo their path: the fallback is covered too.
    let (_, bytes) = raw(&client, "GET", &format!("{base}/v1/nothing/{}", in_path()), None).await;
    answers.push(("an unknown route".to_owned(), bytes));
    drop(server);
    for (surface, bytes) in &answers {
        assert_clean(surface, bytes);
    }
    // `hands checkpoints diff` of the same checkpoint, from the command line.
    let out = world.hands().args(["checkpoints", "diff", &last.to_string()]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains(&format!("key=[secret:{NAME}]")), "{stdout}");
    assert_clean("hands checkpoints diff", stdout.as_bytes());
}
