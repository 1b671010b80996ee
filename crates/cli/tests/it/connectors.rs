//! Connectors through the real binary: `hands connectors add|list|rm` from an OpenAPI file and
//! from a URL fetched through the egress guard (an address the user did not allow is refused),
//! no secret in a connector file (a key shape in the document is refused), the secret's state
//! against the host it was stored for; connector_scaffold through `hands call` (and refused under
//! `approval = "ask"` with nobody to ask); and the registry's gate re-evaluated mid-session over
//! MCP — a connector file written by a call, or by the user behind hands' back, brings
//! connector_call and connector_scaffold, with `notifications/tools/list_changed`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use hands_core::secret::{SecretStore as _, SecretValue};
use rmcp::model::CallToolRequestParams;
use rmcp::service::NotificationContext;
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};

const PETSTORE: &str = include_str!("../../../connectors/tests/fixtures/petstore.yaml");
const CANARY: &str = "CANARYconnectorsCLI0123456789";

struct Setup {
    tmp: tempfile::TempDir,
}

impl Setup {
    /// A temp HOME and state folder; the user's configuration allows 127.0.0.1 only.
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("home/.config/hands")).unwrap();
        std::fs::create_dir_all(tmp.path().join("root")).unwrap();
        std::fs::write(
            tmp.path().join("home/.config/hands/config.toml"),
            "[net]\nallow_hosts = [\"127.0.0.1\"]\n",
        )
        .unwrap();
        std::fs::write(tmp.path().join("root/package.json"), "{\"private\": true}\n").unwrap();
        Self { tmp }
    }

    fn root(&self) -> PathBuf {
        self.tmp.path().join("root")
    }

    fn store(&self) -> hands_secrets::Store {
        hands_secrets::Store::at(self.tmp.path().join("state/hands/secrets"))
    }

    fn command(&self) -> Command {
        let mut cmd = Command::cargo_bin("hands").unwrap();
        cmd.env("HOME", self.tmp.path().join("home"))
            .env("XDG_STATE_HOME", self.tmp.path().join("state"))
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("HANDS_APPROVAL")
            .env_remove("HTTP_PROXY")
            .env_remove("http_proxy")
            .timeout(Duration::from_secs(90))
            .arg("--root")
            .arg(self.root());
        cmd
    }

    fn run(&self, args: &[&str]) -> (i32, String, String) {
        let out = self.command().args(args).output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

/// Serves `body` at every path on 127.0.0.1; counts requests.
fn serve(body: String) -> (u16, Arc<Mutex<usize>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(Mutex::new(0));
    let seen = Arc::clone(&count);
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            *seen.lock().unwrap() += 1;
            let _ = stream.write_all(
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/yaml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                )
                .as_bytes(),
            );
        }
    });
    (port, count)
}

#[test]
fn add_list_and_rm_from_a_file_and_through_the_guard() {
    let setup = Setup::new();
    // A canary stored for the project: no connector file may ever hold it.
    setup.store().put(&setup.root(), "PETSTORE_API_KEY", &SecretValue::new(CANARY)).unwrap();
    let (code, out, _) = setup.run(&["connectors", "list"]);
    assert_eq!(code, 0);
    assert!(out.contains("no connectors"), "{out}");

    let spec = setup.tmp.path().join("petstore.yaml");
    std::fs::write(&spec, PETSTORE).unwrap();
    let (code, out, err) =
        setup.run(&["connectors", "add", "petstore", "--from-openapi", spec.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("wrote .hands/connectors/petstore.toml"), "{out}");
    assert!(out.contains("stored without a host"), "{out}");
    assert!(
        out.contains("hands secrets set PETSTORE_API_KEY --host petstore.example.com"),
        "{out}"
    );
    let toml =
        std::fs::read_to_string(setup.root().join(".hands/connectors/petstore.toml")).unwrap();
    assert!(
        toml.contains("allowed_paths = [\"/pets\", \"/pets/*\", \"/categories/tree\"]"),
        "{toml}"
    );
    assert!(toml.contains("kind = \"header\"") && toml.contains("name = \"X-Api-Key\""), "{toml}");
    for file in ["petstore.toml", "petstore.openapi.json"] {
        let text =
            std::fs::read_to_string(setup.root().join(".hands/connectors").join(file)).unwrap();
        assert!(!text.contains(CANARY), "{file} holds the secret");
    }
    let (code, _, err) =
        setup.run(&["connectors", "add", "petstore", "--from-openapi", spec.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("exists") && err.contains("--force"), "{err}");

    // From a URL: through the guard, to an allowed loopback address only.
    let relative = PETSTORE.replace("https://petstore.example.com/{version}", "/api/{version}");
    let (port, count) = serve(relative);
    let url = format!("http://127.0.0.1:{port}/docs/openapi.yaml");
    let (code, out, err) = setup.run(&["connectors", "add", "served", "--from-openapi", &url]);
    assert_eq!(code, 0, "{out}{err}");
    let served =
        std::fs::read_to_string(setup.root().join(".hands/connectors/served.toml")).unwrap();
    assert!(served.contains(&format!("base_url = \"http://127.0.0.1:{port}/api/v1\"")), "{served}");
    assert!(served.contains("secret = \"SERVED_API_KEY\""), "{served}");
    let before = *count.lock().unwrap();
    let forbidden = format!("http://127.0.0.2:{port}/docs/openapi.yaml");
    let (code, _, err) = setup.run(&["connectors", "add", "other", "--from-openapi", &forbidden]);
    assert_eq!(code, 2);
    assert!(err.contains("could not be fetched"), "{err}");
    assert_eq!(*count.lock().unwrap(), before, "a refused address was contacted");

    // The list says where each secret may go.
    setup.store().set_host(&setup.root(), "PETSTORE_API_KEY", Some("evil.example")).unwrap();
    let (code, out, _) = setup.run(&["connectors", "list", "--json"]);
    assert_eq!(code, 0);
    let rows: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(rows[0]["name"], "petstore");
    assert!(rows[0]["secret_state"].as_str().unwrap().contains("evil.example only"), "{rows}");
    assert_eq!(rows[1]["secret_state"], "not stored");
    assert!(!out.contains(CANARY));
    setup
        .store()
        .set_host(&setup.root(), "PETSTORE_API_KEY", Some("petstore.example.com"))
        .unwrap();
    let (_, out, _) = setup.run(&["connectors", "list"]);
    assert!(out.contains("PETSTORE_API_KEY: stored for this host"), "{out}");

    let (code, out, _) = setup.run(&["connectors", "rm", "served"]);
    assert_eq!(code, 0);
    assert!(out.contains("removed .hands/connectors/served.openapi.json"), "{out}");
    assert!(!setup.root().join(".hands/connectors/served.toml").exists());
    let (code, _, err) = setup.run(&["connectors", "rm", "served"]);
    assert_eq!(code, 2);
    assert!(err.contains("there is no connector served"), "{err}");
}

#[test]
fn bad_documents_and_flags_are_refused_and_nothing_is_written() {
    let setup = Setup::new();
    let dir = setup.tmp.path();
    let keyed = json!({"openapi": "3.1.0", "info": {"title": "t", "version": "1"},
        "servers": [{"url": "https://x.example"}],
        "paths": {"/a": {"get": {"summary": "use sk_live_CANARY0123456789abcdef here",
            "responses": {}}}}});
    let huge = format!("openapi: 3.1.0\n# {}\n", "x".repeat(11 * 1024 * 1024));
    let looped = json!({"openapi": "3.1.0", "info": {"title": "t", "version": "1"},
        "servers": [{"url": "https://x.example"}],
        "components": {"schemas": {"A": {"$ref": "#/components/schemas/A"}}}});
    for (name, text, says) in [
        ("keyed", keyed.to_string(), "would contain a secret"),
        ("huge", huge, "at most"),
        ("looped", looped.to_string(), "$ref loop"),
        ("broken", "{nope".to_owned(), "not valid JSON"),
    ] {
        let path = dir.join(format!("{name}.json"));
        std::fs::write(&path, text).unwrap();
        let (code, _, err) =
            setup.run(&["connectors", "add", name, "--from-openapi", path.to_str().unwrap()]);
        assert_eq!(code, 2, "{name}");
        assert!(err.contains(says), "{name}: {err}");
    }
    for (args, says) in [
        (vec!["connectors", "add", "x"], "--from-openapi"),
        (vec!["connectors", "add", "x", "--base-url", "https://x.example"], "--path"),
        (
            vec!["connectors", "add", "X!", "--base-url", "https://x.example", "--path", "/a"],
            "not a connector name",
        ),
        (vec!["connectors", "add", "x", "--base-url", "ftp://x.example", "--path", "/a"], "http"),
        (
            vec![
                "connectors",
                "add",
                "x",
                "--base-url",
                "https://x.example",
                "--path",
                "/a",
                "--auth",
                "cookie",
            ],
            "--auth",
        ),
        (vec!["connectors", "add", "x", "--from-openapi", "/nonexistent.yaml"], "cannot read"),
    ] {
        let (code, _, err) = setup.run(&args);
        assert_ne!(code, 0, "{args:?}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    assert!(
        !setup.root().join(".hands/connectors").exists()
            || std::fs::read_dir(setup.root().join(".hands/connectors")).unwrap().next().is_none(),
        "something was written"
    );
    // By flags: a connector connector_call accepts.
    let (code, out, err) = setup.run(&[
        "connectors",
        "add",
        "notes",
        "--base-url",
        "https://notes.example.com",
        "--path",
        "/notes/**",
        "--method",
        "get",
        "--method",
        "post",
        "--auth",
        "header:X-Key",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let toml = std::fs::read_to_string(setup.root().join(".hands/connectors/notes.toml")).unwrap();
    assert!(toml.contains("allowed_methods = [\"GET\", \"POST\"]"), "{toml}");
    assert!(toml.contains("secret = \"NOTES_API_KEY\""), "{toml}");
}

#[test]
fn connector_scaffold_through_hands_call() {
    let setup = Setup::new();
    let spec = setup.tmp.path().join("petstore.yaml");
    std::fs::write(&spec, PETSTORE).unwrap();
    let (code, out, err) =
        setup.run(&["connectors", "add", "petstore", "--from-openapi", spec.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    let args = r#"{"connector": "petstore", "target": "client"}"#;
    // Under ask, with nobody at a terminal to answer: refused, nothing written.
    let (code, out, err) = setup.run(&["-c", "approval=ask", "call", "connector_scaffold", args]);
    assert_eq!(code, 1, "{out}");
    assert!(format!("{out}{err}").contains("needs the user's approval"), "{out}{err}");
    assert!(!setup.root().join("connectors").exists());
    let (code, out, err) = setup.run(&["call", "connector_scaffold", args, "--json"]);
    assert_eq!(code, 0, "{out}{err}");
    let result: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(result["structuredContent"]["files"][1]["path"], "connectors/petstore.route.ts");
    let client = std::fs::read_to_string(setup.root().join("connectors/petstore.ts")).unwrap();
    assert!(!client.contains("PETSTORE_API_KEY"), "{client}");
    let env = std::fs::read_to_string(setup.root().join(".env.example")).unwrap();
    assert!(env.contains("PETSTORE_API_KEY="), "{env}");
}

/// Counts `notifications/tools/list_changed`.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<usize>>);

impl ClientHandler for Recorder {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        *self.0.lock().unwrap() += 1;
    }
}

async fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let started = Instant::now();
    while started.elapsed() < limit {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    done()
}

fn connector_tools(names: &[String]) -> Vec<&str> {
    names.iter().map(String::as_str).filter(|n| n.starts_with("connector_")).collect()
}

/// Issue 14, item 4: the connector tools' gate is looked at again when it can change.
#[tokio::test(flavor = "multi_thread")]
async fn a_connector_file_added_mid_session_brings_the_connector_tools() {
    let setup = Setup::new();
    let root = setup.root();
    let mut cmd = tokio::process::Command::new(assert_cmd::cargo::cargo_bin("hands"));
    cmd.arg("mcp")
        .arg("--root")
        .arg(&root)
        .env("HOME", setup.tmp.path().join("home"))
        .env("XDG_STATE_HOME", setup.tmp.path().join("state"))
        .env_remove("XDG_CONFIG_HOME")
        .env("HANDS_LOG", "warn");
    let recorder = Recorder::default();
    let client = recorder.clone().serve(TokioChildProcess::new(cmd).unwrap()).await.unwrap();
    let names = || async {
        let tools = client.list_all_tools().await.unwrap();
        tools.iter().map(|t| t.name.to_string()).collect::<Vec<_>>()
    };
    assert!(connector_tools(&names().await).is_empty());

    // A call writes a connector file: the list changes after that call, and clients hear it.
    let mut params = CallToolRequestParams::new("write_file");
    params.arguments = json!({"path": ".hands/connectors/notes.toml",
        "content": "base_url = \"https://notes.example.com\"\nallowed_paths = [\"/notes\"]\n"})
    .as_object()
    .cloned();
    let wrote = serde_json::to_value(client.call_tool(params).await.unwrap()).unwrap();
    assert_eq!(wrote["isError"], json!(false), "{wrote}");
    let heard = Arc::clone(&recorder.0);
    assert!(
        wait_until(Duration::from_secs(5), || *heard.lock().unwrap() >= 1).await,
        "no notifications/tools/list_changed after the connector file was written"
    );
    assert_eq!(connector_tools(&names().await), ["connector_call", "connector_scaffold"]);

    // Removed behind hands' back (the user's editor, `hands connectors rm`): seen at the next
    // listing after a second, and announced.
    std::fs::remove_file(root.join(".hands/connectors/notes.toml")).unwrap();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert!(connector_tools(&names().await).is_empty());
    assert!(wait_until(Duration::from_secs(5), || *heard.lock().unwrap() >= 2).await);
    // Added behind hands' back: the same.
    std::fs::write(
        root.join(".hands/connectors/api.toml"),
        "base_url = \"https://api.example.com\"\nallowed_paths = [\"/x\"]\n",
    )
    .unwrap();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(connector_tools(&names().await), ["connector_call", "connector_scaffold"]);
    client.cancel().await.unwrap();
}

#[test]
fn hands_tools_lists_the_connector_tools_only_with_a_connector() {
    let setup = Setup::new();
    let listed = |setup: &Setup| {
        let (code, out, _) = setup.run(&["tools"]);
        assert_eq!(code, 0);
        out
    };
    assert!(!listed(&setup).contains("connector_call"));
    std::fs::create_dir_all(setup.root().join(".hands/connectors")).unwrap();
    std::fs::write(
        setup.root().join(".hands/connectors/api.toml"),
        "base_url = \"https://api.example.com\"\n",
    )
    .unwrap();
    let out = listed(&setup);
    assert!(out.contains("connector_call") && out.contains("connector_scaffold"), "{out}");
}
