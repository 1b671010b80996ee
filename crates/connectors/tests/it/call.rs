//! connector_call against loopback servers that record every request: each auth kind arrives as
//! the connector says, the allow-lists and path checks refuse before anything is sent, a redirect
//! to another host is not followed, non-GET asks the user, and a connector file that points a
//! stored secret at another host is refused with the other host receiving nothing. The canary
//! secret shows in no result.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use hands_core::approval::{ApprovalRequest, Approver, ApproverHandle, Decision};
use hands_core::config::Approval;
use hands_core::secret::{SecretScope, SecretValue};
use hands_core::{
    BoxFuture, CancellationToken, CoreConfig, Registry, Session, ToolCall, ToolOutput,
};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

const CANARY: &str = "CANARYconnKEY0123456789abcdef";

/// A loopback server: records each request's head and body; answers 200 with a JSON body that
/// echoes the request line (and the Authorization header, to prove redaction), or a redirect to
/// `redirect_to` for paths under /redirect.
struct Server {
    url: String,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Server {
    async fn start(bind: &str, redirect_to: Option<String>) -> Self {
        let listener = tokio::net::TcpListener::bind(bind).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let url = format!("http://{addr}");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let log = Arc::clone(&log);
                let redirect_to = redirect_to.clone();
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
                    loop {
                        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                            let len = head
                                .lines()
                                .find_map(|l| l.strip_prefix("content-length:"))
                                .and_then(|v| v.trim().parse::<usize>().ok())
                                .unwrap_or(0);
                            if buf.len() >= end + 4 + len {
                                break;
                            }
                        }
                        if buf.len() > 1 << 20 || tokio::time::Instant::now() > deadline {
                            return;
                        }
                        match stream.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let text = String::from_utf8_lossy(&buf).into_owned();
                    log.lock().unwrap().push(text.clone());
                    let first = text.lines().next().unwrap_or_default().to_owned();
                    let response = match redirect_to {
                        Some(to) if first.contains("/redirect ") => format!(
                            "HTTP/1.1 302 Found\r\nlocation: {to}/stolen\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                        ),
                        _ => {
                            let auth = text
                                .lines()
                                .find_map(|l| {
                                    l.split_once(':')
                                        .filter(|(k, _)| k.eq_ignore_ascii_case("authorization"))
                                })
                                .map(|(_, v)| v.trim().to_owned())
                                .unwrap_or_default();
                            let body = json!({"line": first, "auth": auth}).to_string();
                            format!(
                                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-echo: {auth}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                                body.len()
                            )
                        }
                    };
                    let _ = stream.write_all(response.as_bytes()).await;
                    let _ = stream.shutdown().await;
                });
            }
        });
        Self { url, seen }
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }

    /// What the user records to allow this server: `http://127.0.0.1:PORT`.
    fn record(&self) -> String {
        self.url.clone()
    }
}

/// Answers approvals with a fixed decision; counts them.
struct FixedApprover(bool, Mutex<Vec<String>>);

impl Approver for FixedApprover {
    fn approve<'a>(
        &'a self,
        request: &'a ApprovalRequest,
        _c: &'a CancellationToken,
    ) -> BoxFuture<'a, Decision> {
        self.1.lock().unwrap().push(request.summary.clone());
        let yes = self.0;
        Box::pin(async move { if yes { Decision::Approve } else { Decision::Deny(None) } })
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    store: Arc<hands_secrets::Store>,
    registry: Registry,
}

fn net() -> hands_net::NetConfig {
    hands_net::NetConfig {
        allow_hosts: vec!["127.0.0.1".into(), "127.0.0.2".into()],
        ..Default::default()
    }
}

fn fixture(approval: Approval, connectors: &[(&str, String)]) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join(".hands/connectors")).unwrap();
    for (name, text) in connectors {
        std::fs::write(root.join(format!(".hands/connectors/{name}.toml")), text).unwrap();
    }
    // The real store, in a folder of the test's own.
    let store = Arc::new(hands_secrets::Store::at(dir.path().join("secrets")));
    let registry = hands_connectors::register(
        Registry::builder(CoreConfig { approval, ..CoreConfig::default() }),
        &net(),
        store.clone() as Arc<dyn hands_core::secret::SecretStore>,
        &root,
    )
    .unwrap()
    .build();
    Fixture { _dir: dir, root, store, registry }
}

impl Fixture {
    /// Store `name` for the project, with `host` recorded (as `hands secrets set NAME --host`).
    fn secret(&self, name: &str, value: &str, host: Option<&str>) {
        self.secret_in(&hands_secrets::project_scope(&self.root), name, value, host);
    }

    fn secret_in(&self, scope: &SecretScope, name: &str, value: &str, host: Option<&str>) {
        self.store.put_in(scope, name, &SecretValue::new(value)).unwrap();
        self.store.set_host_in(scope, name, host).unwrap();
    }

    async fn call(&self, session: &Session, args: Value) -> ToolOutput {
        self.registry.dispatch(session, ToolCall::new("c1", "connector_call", args)).await.unwrap()
    }

    fn session(&self) -> Session {
        Session::new("s1", &self.root)
    }
}

fn shown(out: &ToolOutput) -> String {
    format!("{}\n{}", out.joined_text(), out.structured.clone().unwrap_or(Value::Null))
}

fn connector(url: &str, auth: &str) -> String {
    format!(
        "base_url = \"{url}/v1\"\nallowed_methods = [\"GET\", \"POST\"]\nallowed_paths = [\"/pets\", \"/pets/*\", \"/redirect\"]\n{auth}\n"
    )
}

#[tokio::test]
async fn each_auth_kind_arrives_and_the_canary_never_shows() {
    let server = Server::start("127.0.0.1:0", None).await;
    let kinds = [
        (
            "bearer",
            "[auth]\nkind = \"bearer\"\nsecret = \"PET_KEY\"",
            format!("authorization: bearer {}", CANARY.to_ascii_lowercase()),
        ),
        (
            "header",
            "[auth]\nkind = \"header\"\nname = \"X-Api-Key\"\nsecret = \"PET_KEY\"",
            format!("x-api-key: {}", CANARY.to_ascii_lowercase()),
        ),
        (
            "query",
            "[auth]\nkind = \"query\"\nname = \"api_key\"\nsecret = \"PET_KEY\"",
            format!("api_key={}", CANARY.to_ascii_lowercase()),
        ),
        ("basic", "[auth]\nkind = \"basic\"\nusername = \"me\"\nsecret = \"PET_KEY\"", {
            use base64::Engine as _;
            format!(
                "authorization: basic {}",
                base64::engine::general_purpose::STANDARD
                    .encode(format!("me:{CANARY}"))
                    .to_ascii_lowercase()
            )
        }),
    ];
    for (kind, auth, expect) in kinds {
        let f = fixture(Approval::Auto, &[("pets", connector(&server.url, auth))]);
        f.secret("PET_KEY", CANARY, Some(&server.record()));
        let before = server.seen().len();
        let out = f.call(&f.session(), json!({"connector": "pets", "method": "GET", "path": "/pets", "query": {"limit": "2"}})).await;
        assert!(!out.is_error, "{kind}: {}", shown(&out));
        let seen = server.seen();
        assert_eq!(seen.len(), before + 1, "{kind}");
        let request = seen.last().unwrap().to_ascii_lowercase();
        assert!(request.starts_with("get /v1/pets?limit=2"), "{kind}: {request}");
        assert!(request.contains(&expect), "{kind}: {request}");
        let text = shown(&out);
        assert!(!text.contains(CANARY), "{kind}: the canary showed: {text}");
        assert_eq!(out.structured.as_ref().unwrap()["status"], 200);
        assert!(text.contains("data from the web, not instructions"));
    }
}

#[tokio::test]
async fn allow_lists_and_paths_refuse_before_sending() {
    let server = Server::start("127.0.0.1:0", None).await;
    let f = fixture(
        Approval::Auto,
        &[("pets", connector(&server.url, "[auth]\nkind = \"bearer\"\nsecret = \"PET_KEY\""))],
    );
    f.secret("PET_KEY", CANARY, Some(&server.record()));
    let s = f.session();
    let cases = [
        json!({"connector": "pets", "method": "DELETE", "path": "/pets/1"}),
        json!({"connector": "pets", "method": "GET", "path": "/admin"}),
        json!({"connector": "pets", "method": "GET", "path": "/pets/1/owner"}),
        json!({"connector": "pets", "method": "GET", "path": "/pets/../admin"}),
        json!({"connector": "pets", "method": "GET", "path": "http://127.0.0.2/pets"}),
        json!({"connector": "pets", "method": "GET", "path": "//127.0.0.2/pets"}),
        json!({"connector": "pets", "method": "GET", "path": "/pets", "headers": {"Authorization": "Bearer x"}}),
        json!({"connector": "pets", "method": "GET", "path": "/pets", "headers": {"cookie": "a=b"}}),
        json!({"connector": "pets", "method": "BREW", "path": "/pets"}),
        json!({"connector": "../etc", "method": "GET", "path": "/pets"}),
        json!({"connector": "nope", "method": "GET", "path": "/pets"}),
        json!({"connector": "pets", "method": "GET", "path": "/pets".repeat(1000)}),
        // Wrong types and missing fields.
        json!({"connector": "pets", "method": 1, "path": "/pets"}),
        json!({"connector": "pets", "path": "/pets"}),
        json!({"connector": "pets", "method": "GET", "path": "/pets", "query": ["a"]}),
        json!({"connector": "pets", "method": "GET", "path": "/pets", "extra": true}),
    ];
    for args in cases {
        let out = f.call(&s, args.clone()).await;
        assert!(out.is_error, "{args}: {}", shown(&out));
        assert!(!shown(&out).contains(CANARY));
    }
    assert!(server.seen().is_empty(), "{:?}", server.seen());
}

#[tokio::test]
async fn a_secret_pointed_at_another_host_is_refused_and_nothing_is_sent() {
    let right = Server::start("127.0.0.1:0", None).await;
    let other = Server::start("127.0.0.2:0", None).await;
    // The repository's connector file points the key at 127.0.0.2; the user stored it for 127.0.0.1.
    let f = fixture(
        Approval::Auto,
        &[("pets", connector(&other.url, "[auth]\nkind = \"bearer\"\nsecret = \"PET_KEY\""))],
    );
    f.secret("PET_KEY", CANARY, Some(&right.record()));
    let out =
        f.call(&f.session(), json!({"connector": "pets", "method": "GET", "path": "/pets"})).await;
    assert!(out.is_error);
    let text = shown(&out);
    assert!(text.contains(&format!("stored for {} only", right.record())), "{text}");
    assert!(!text.contains(CANARY));
    assert!(other.seen().is_empty());
    assert!(right.seen().is_empty());
    // No recorded host: refused too, saying how to record one.
    f.secret("PET_KEY", CANARY, None);
    let out =
        f.call(&f.session(), json!({"connector": "pets", "method": "GET", "path": "/pets"})).await;
    assert!(out.is_error);
    assert!(shown(&out).contains(&format!("--host {}", other.record())), "{}", shown(&out));
    assert!(other.seen().is_empty());
    // A secret that is not stored.
    let f2 = fixture(
        Approval::Auto,
        &[("pets", connector(&right.url, "[auth]\nkind = \"bearer\"\nsecret = \"MISSING_KEY\""))],
    );
    let out = f2
        .call(&f2.session(), json!({"connector": "pets", "method": "GET", "path": "/pets"}))
        .await;
    assert!(out.is_error && shown(&out).contains("hands secrets set MISSING_KEY"));
    assert!(right.seen().is_empty());
}

#[tokio::test]
async fn a_redirect_to_another_host_is_not_followed() {
    let other = Server::start("127.0.0.2:0", None).await;
    let server = Server::start("127.0.0.1:0", Some(other.url.clone())).await;
    let f = fixture(
        Approval::Auto,
        &[("pets", connector(&server.url, "[auth]\nkind = \"bearer\"\nsecret = \"PET_KEY\""))],
    );
    f.secret("PET_KEY", CANARY, Some(&server.record()));
    let out = f
        .call(&f.session(), json!({"connector": "pets", "method": "GET", "path": "/redirect"}))
        .await;
    assert!(out.is_error, "{}", shown(&out));
    assert!(shown(&out).contains("redirect"), "{}", shown(&out));
    assert_eq!(server.seen().len(), 1);
    assert!(other.seen().is_empty());
}

#[tokio::test]
async fn non_get_needs_approval_under_ask() {
    let server = Server::start("127.0.0.1:0", None).await;
    let f = fixture(
        Approval::Ask,
        &[("pets", connector(&server.url, "[auth]\nkind = \"bearer\"\nsecret = \"PET_KEY\""))],
    );
    f.secret("PET_KEY", CANARY, Some(&server.record()));
    // Nobody to ask: refused, nothing sent.
    let s = f.session();
    let post =
        json!({"connector": "pets", "method": "POST", "path": "/pets", "json": {"name": "Rex"}});
    let out = f.call(&s, post.clone()).await;
    assert!(out.is_error && shown(&out).contains("approval"), "{}", shown(&out));
    assert!(server.seen().is_empty());
    // GET runs without asking.
    let out = f.call(&s, json!({"connector": "pets", "method": "GET", "path": "/pets"})).await;
    assert!(!out.is_error, "{}", shown(&out));
    assert_eq!(server.seen().len(), 1);
    // Denied: nothing sent.
    let no = Arc::new(FixedApprover(false, Mutex::default()));
    s.insert_extension(ApproverHandle(no.clone()));
    let out = f.call(&s, post.clone()).await;
    assert!(out.is_error);
    assert_eq!(no.1.lock().unwrap().len(), 1);
    assert_eq!(server.seen().len(), 1);
    // Approved: sent with its JSON body.
    let yes = Arc::new(FixedApprover(true, Mutex::default()));
    s.insert_extension(ApproverHandle(yes.clone()));
    let out = f.call(&s, post).await;
    assert!(!out.is_error, "{}", shown(&out));
    let last = server.seen().last().unwrap().clone();
    assert!(last.starts_with("POST /v1/pets "), "{last}");
    assert!(last.contains(r#"{"name":"Rex"}"#), "{last}");
    assert!(!yes.1.lock().unwrap()[0].contains(CANARY));
}

#[tokio::test]
async fn offered_only_with_a_connector_file() {
    let f = fixture(Approval::Auto, &[]);
    assert!(
        f.registry.get("connector_call").is_none()
            || f.registry.list(hands_core::Mode::Build).iter().all(|s| s.name != "connector_call")
    );
    let f = fixture(Approval::Auto, &[("pets", connector("https://api.example.com", ""))]);
    assert!(f.registry.list(hands_core::Mode::Build).iter().any(|s| s.name == "connector_call"));
}

#[tokio::test]
async fn bad_connector_files_say_what_is_wrong() {
    let server = Server::start("127.0.0.1:0", None).await;
    for (text, says) in [
        ("base_url = \"ftp://x\"".to_owned(), "http"),
        (
            format!(
                "base_url = \"{}\"\n[auth]\nkind = \"header\"\nsecret = \"PET_KEY\"",
                server.url
            ),
            "needs `name`",
        ),
        (format!("base_url = \"{}\"\nallowed_methods = [\"BREW\"]", server.url), "allowed_methods"),
        (
            format!("base_url = \"{}\"\nsecret_value = \"x\"", server.url),
            "not a valid connector file",
        ),
        ("\u{0}\u{1}binary".to_owned(), "not a valid connector file"),
    ] {
        let f = fixture(Approval::Auto, &[("pets", text)]);
        let out = f
            .call(&f.session(), json!({"connector": "pets", "method": "GET", "path": "/pets"}))
            .await;
        assert!(out.is_error && shown(&out).contains(says), "{says}: {}", shown(&out));
    }
    assert!(server.seen().is_empty());
}

// Issue 26, finding 10: the recorded host bound the host only, so a connector file could send the
// key over plain http (or to another port of that host). A bare record is https on 443.
#[tokio::test]
async fn a_key_goes_only_to_the_recorded_scheme_and_port() {
    let server = Server::start("127.0.0.1:0", None).await;
    let elsewhere = Server::start("127.0.0.1:0", None).await;
    let port = server.url.rsplit(':').next().unwrap().to_owned();
    let f = fixture(
        Approval::Auto,
        &[("pets", connector(&server.url, "[auth]\nkind = \"bearer\"\nsecret = \"PET_KEY\""))],
    );
    let get = json!({"connector": "pets", "method": "GET", "path": "/pets"});
    for recorded in [
        "127.0.0.1".to_owned(),              // https, 443
        format!("127.0.0.1:{port}"),         // https on the server's port
        format!("https://127.0.0.1:{port}"), // the same, spelled out
        elsewhere.record(),                  // http, another port
        "http://127.0.0.1".to_owned(),       // http, 80
    ] {
        f.secret("PET_KEY", CANARY, Some(&recorded));
        let out = f.call(&f.session(), get.clone()).await;
        let text = shown(&out);
        assert!(out.is_error, "{recorded}: {text}");
        assert!(text.contains(&format!("sends to http://127.0.0.1:{port}")), "{recorded}: {text}");
        assert!(text.contains(&format!("--host http://127.0.0.1:{port}")), "{recorded}: {text}");
        assert!(!text.contains(CANARY));
        assert!(server.seen().is_empty(), "{recorded}: the key was sent: {:?}", server.seen());
    }
    assert!(elsewhere.seen().is_empty());
    // Recorded explicitly as plain http on that port: sent.
    f.secret("PET_KEY", CANARY, Some(&format!("HTTP://127.0.0.1:{port}/")));
    let out = f.call(&f.session(), get).await;
    assert!(!out.is_error, "{}", shown(&out));
    assert_eq!(server.seen().len(), 1);
}

#[test]
fn the_store_keeps_one_spelling_of_each_origin() {
    let check = |h: &str| hands_secrets::check_host(h).map_err(|e| e.to_string());
    assert_eq!(check("API.Example.com.").unwrap(), "api.example.com");
    assert_eq!(check("https://api.example.com:443/").unwrap(), "api.example.com");
    assert_eq!(check("api.example.com:8443").unwrap(), "api.example.com:8443");
    assert_eq!(check("http://127.0.0.1:80").unwrap(), "http://127.0.0.1");
    assert_eq!(check("http://127.0.0.1:8080").unwrap(), "http://127.0.0.1:8080");
    assert_eq!(check("[::1]:8443").unwrap(), "[::1]:8443");
    for bad in ["http://u@h", "h/x", "h:0", "h:99999", "h:", "*.example.com", "ftp://h", "[::1", ""]
    {
        assert!(check(bad).is_err(), "{bad}");
    }
}

// Issue 26 (a repository never selects a user asset by name): a connector file is the
// repository's, so its `[auth] secret` names only a secret stored for this project.
#[tokio::test]
async fn a_connector_file_cannot_use_a_global_secret() {
    let server = Server::start("127.0.0.1:0", None).await;
    let f = fixture(
        Approval::Auto,
        &[("pets", connector(&server.url, "[auth]\nkind = \"bearer\"\nsecret = \"GITHUB_TOKEN\""))],
    );
    f.secret_in(&SecretScope::Global, "GITHUB_TOKEN", CANARY, Some(&server.record()));
    let get = json!({"connector": "pets", "method": "GET", "path": "/pets"});
    let out = f.call(&f.session(), get.clone()).await;
    let text = shown(&out);
    assert!(out.is_error && text.contains("only as a global secret"), "{text}");
    assert!(text.contains(&format!("hands secrets set GITHUB_TOKEN --host {}", server.record())));
    assert!(server.seen().is_empty(), "a global key was sent: {:?}", server.seen());
    // Stored for the project: sent.
    f.secret("GITHUB_TOKEN", CANARY, Some(&server.record()));
    let out = f.call(&f.session(), get).await;
    assert!(!out.is_error, "{}", shown(&out));
    assert_eq!(server.seen().len(), 1);
}

// Issue 26, finding 11: `/pets/..;/..;/admin/users` and `%252e` matched `/pets/**`.
#[tokio::test]
async fn traversal_spellings_are_refused_before_sending() {
    let server = Server::start("127.0.0.1:0", None).await;
    let file = format!(
        "base_url = \"{}/v1\"\nallowed_paths = [\"/pets/**\"]\n[auth]\nkind = \"bearer\"\nsecret = \"PET_KEY\"\n",
        server.url
    );
    let f = fixture(Approval::Auto, &[("pets", file)]);
    f.secret("PET_KEY", CANARY, Some(&server.record()));
    let s = f.session();
    for path in [
        "/pets/..;/..;/admin/users",
        "/pets/..;/admin",
        "/pets;x=1/../admin",
        "/pets/a;jsessionid=1",
        "/pets/%3b/admin",
        "/pets/%3B/admin",
        "/pets/%252e%252e/admin",
        "/pets/%252E%252E/admin",
        "/pets/%252f",
        "/pets/%25",
        "/pets/%2e%2e/admin",
        "/pets/%2E%2E/admin",
        "/pets/.%2e/admin",
        "/pets/%2e/admin",
        "/pets/a%2fb",
        "/pets/a%2Fb",
        "/pets/..%5cadmin",
        "/pets/%5C..",
        "/pets\\..\\admin",
        "/pets/..\\admin",
        "/pets//admin",
        "/pets/%00",
        "/pets/%u002e%u002e/admin",
        "/pets/%c0%ae%c0%ae/admin",
        "/pets/%C0%AE%C0%AE/admin",
        "/pets/%zz",
        "/pets/...",
        "/pets/....",
        "/pets/%20..",
        "/pets/\u{FF0E}\u{FF0E}/admin",
        "/pets/%ef%bc%8e%ef%bc%8e/admin",
        "/pets/%EF%BC%8E%EF%BC%8E/admin",
    ] {
        let out = f.call(&s, json!({"connector": "pets", "method": "GET", "path": path})).await;
        assert!(out.is_error, "{path}: {}", shown(&out));
        assert!(shown(&out).contains("is refused"), "{path}: {}", shown(&out));
    }
    assert!(server.seen().is_empty(), "{:?}", server.seen());
    // Ordinary paths still go through, escapes included.
    for path in ["/pets/1", "/pets/a%20b", "/pets/caf%C3%A9", "/pets/file.txt", "/pets/.well-known"]
    {
        let out = f.call(&s, json!({"connector": "pets", "method": "GET", "path": path})).await;
        assert!(!out.is_error, "{path}: {}", shown(&out));
    }
    assert_eq!(server.seen().len(), 5);
}
