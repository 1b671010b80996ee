//! The secrets tool over MCP, through the real binary: `hands serve` sends a client that declares
//! URL elicitation to a one-time page of its own; the client's "user" opens it and posts the value
//! over loopback; the tool says "stored" and the value is in the user's store only. The page is
//! single-use and needs no bearer token. Under stdio `hands mcp`, or for a client without URL
//! elicitation, the tool tells the user to run `hands secrets set NAME`: never a form.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationCapability, FormElicitationCapability, UrlElicitationCapability,
};
use rmcp::service::RequestContext;
use rmcp::transport::{
    StreamableHttpClientTransport, TokioChildProcess,
    streamable_http_client::StreamableHttpClientTransportConfig,
};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};

const CANARY: &str = "sk_test_CANARY_mcp_51HxQ9v2Lr8p4f2a";
const TOKEN: &str = "s3cret-token-for-the-test";

/// A client whose "user" opens the page it is sent to and types the value there.
#[derive(Clone)]
struct User {
    url: bool,
    seen: Arc<Mutex<Vec<Value>>>,
    pages: Arc<Mutex<Vec<(u16, String)>>>,
}

impl User {
    fn new(url: bool) -> Self {
        Self { url, seen: Arc::default(), pages: Arc::default() }
    }
}

impl ClientHandler for User {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let mut caps = ClientCapabilities::default();
        let elicitation =
            ElicitationCapability::new().with_form(FormElicitationCapability::default());
        caps.elicitation = Some(if self.url {
            elicitation.with_url(UrlElicitationCapability::new())
        } else {
            elicitation
        });
        rmcp::model::ClientConfig::new(caps, rmcp::model::Implementation::new("user", "1"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        self.seen.lock().unwrap().push(serde_json::to_value(&request).unwrap());
        let ElicitRequestParams::UrlElicitationParams { url, .. } = request else {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        let client = reqwest::Client::new();
        // The page, without the bearer token: the URL is the capability.
        let page = client.get(&url).send().await.unwrap();
        let status = page.status().as_u16();
        let text = page.text().await.unwrap();
        self.pages.lock().unwrap().push((status, text));
        // Too short first: refused, and the page still waits.
        let short = client
            .post(&url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body("value=short")
            .send()
            .await
            .unwrap();
        let status = short.status().as_u16();
        let text = short.text().await.unwrap();
        self.pages.lock().unwrap().push((status, text));
        let stored = client
            .post(&url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("value={CANARY}"))
            .send()
            .await
            .unwrap();
        let status = stored.status().as_u16();
        let text = stored.text().await.unwrap();
        self.pages.lock().unwrap().push((status, text));
        // Single use.
        let again = client.get(&url).send().await.unwrap();
        let status = again.status().as_u16();
        self.pages.lock().unwrap().push((status, url));
        Ok(ElicitResult::new(ElicitationAction::Accept))
    }
}

struct Serve {
    child: Child,
    port: u16,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(tmp: &Path) -> Serve {
    let root = tmp.join("proj");
    std::fs::create_dir_all(&root).unwrap();
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("hands"))
        .args(["serve", "--listen", "127.0.0.1:0", "--token", TOKEN, "--root"])
        .arg(&root)
        .env("HOME", tmp)
        .env("HANDS_STATE_DIR", tmp.join("state"))
        .env("XDG_STATE_HOME", tmp.join("state"))
        .env("XDG_DATA_HOME", tmp.join("data"))
        .env("HANDS_LOG", "trace")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let log = tmp.join("stderr.log");
    std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.split("serving MCP at http://127.0.0.1:").nth(1) {
                let port: u16 = rest.split('/').next().unwrap().parse().unwrap();
                let _ = tx.send(port);
            }
            all.push_str(&line);
            all.push('\n');
            let _ = std::fs::write(&log, &all);
        }
    });
    let port = rx.recv_timeout(Duration::from_secs(60)).expect("hands serve did not start");
    Serve { child, port }
}

fn request(name: &str) -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new("secrets");
    params.arguments = json!({"action": "request", "name": name,
        "description": "Stripe secret key: Dashboard, Developers, API keys"})
    .as_object()
    .cloned();
    params
}

#[tokio::test(flavor = "multi_thread")]
async fn over_hands_serve_a_secret_is_typed_into_a_one_time_page() {
    let tmp = tempfile::tempdir().unwrap();
    let server = serve(tmp.path());
    let config = StreamableHttpClientTransportConfig::with_uri(format!(
        "http://127.0.0.1:{}/mcp",
        server.port
    ))
    .auth_header(TOKEN);
    let user = User::new(true);
    let client =
        user.clone().serve(StreamableHttpClientTransport::from_config(config)).await.unwrap();
    let result = client.call_tool(request("STRIPE_SECRET_KEY")).await.unwrap();
    let result = serde_json::to_value(result).unwrap();
    assert_eq!(result["isError"], json!(false), "{result}");
    assert_eq!(
        result["content"][0]["text"],
        "STRIPE_SECRET_KEY stored (sk_t…4f2a); available to this project's processes as \
         $STRIPE_SECRET_KEY"
    );
    assert_eq!(result["structuredContent"]["secrets"][0]["hint"], "sk_t…4f2a");

    let seen = user.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0]["mode"], "url", "never a form: {seen:?}");
    let url = seen[0]["url"].as_str().unwrap();
    let prefix = format!("http://127.0.0.1:{}/v1/secret-requests/", server.port);
    let token = url.strip_prefix(&prefix).unwrap_or_else(|| panic!("{url}"));
    assert_eq!(token.len(), 64, "{token}");
    assert!(seen[0]["message"].as_str().unwrap().contains("STRIPE_SECRET_KEY"));

    let pages = user.pages.lock().unwrap().clone();
    assert_eq!(pages[0].0, 200, "{pages:?}");
    assert!(pages[0].1.contains("type=\"password\"") && pages[0].1.contains("STRIPE_SECRET_KEY"));
    assert_eq!(pages[1].0, 400, "too short: {pages:?}");
    assert_eq!(pages[2].0, 200, "{pages:?}");
    assert!(pages[2].1.contains("Stored as STRIPE_SECRET_KEY (sk_t…4f2a)"), "{pages:?}");
    assert!(!pages[2].1.contains(CANARY));
    assert_eq!(pages[3].0, 404, "single use: {pages:?}");

    // A listed secret, and the value nowhere but the store (stderr at HANDS_LOG=trace too).
    let mut list = CallToolRequestParams::new("secrets");
    list.arguments = json!({"action": "list"}).as_object().cloned();
    let listed = serde_json::to_value(client.call_tool(list).await.unwrap()).unwrap();
    assert!(listed.to_string().contains("STRIPE_SECRET_KEY (project, sk_t…4f2a)"), "{listed}");
    assert!(!listed.to_string().contains(CANARY) && !result.to_string().contains(CANARY));
    client.cancel().await.unwrap();
    drop(server);
    // The reader thread writes what is left once the pipe closes.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let log = std::fs::read_to_string(tmp.path().join("stderr.log")).unwrap_or_default();
    assert!(!log.contains(CANARY), "stderr holds the value");
    let leaks: Vec<&str> = log.lines().filter(|l| l.contains(token)).collect();
    assert!(leaks.is_empty(), "stderr holds the page's token: {leaks:?}");
    let secrets = std::fs::read_dir(tmp.path().join("state/secrets")).unwrap();
    let stored = secrets
        .flatten()
        .any(|f| std::fs::read_to_string(f.path()).is_ok_and(|t| t.contains(CANARY)));
    assert!(stored, "the value is in the user's store");
}

#[tokio::test(flavor = "multi_thread")]
async fn over_stdio_or_without_url_elicitation_the_user_is_told_to_run_hands_secrets_set() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("proj");
    std::fs::create_dir(&root).unwrap();
    // Stdio: no page can be served, whatever the client offers.
    let mut cmd = tokio::process::Command::new(assert_cmd::cargo::cargo_bin("hands"));
    cmd.args(["mcp", "--root"])
        .arg(&root)
        .env("HOME", tmp.path())
        .env("HANDS_STATE_DIR", tmp.path().join("state"));
    let user = User::new(true);
    let client = user.clone().serve(TokioChildProcess::new(cmd).unwrap()).await.unwrap();
    let result = serde_json::to_value(client.call_tool(request("API_KEY")).await.unwrap()).unwrap();
    assert_eq!(result["isError"], json!(true), "{result}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("`hands secrets set API_KEY`"), "{text}");
    assert!(user.seen.lock().unwrap().is_empty(), "no elicitation at all, least of all a form");
    client.cancel().await.unwrap();

    // HTTP, but a client with form elicitation only.
    let server = serve(tmp.path());
    let config = StreamableHttpClientTransportConfig::with_uri(format!(
        "http://127.0.0.1:{}/mcp",
        server.port
    ))
    .auth_header(TOKEN);
    let user = User::new(false);
    let client =
        user.clone().serve(StreamableHttpClientTransport::from_config(config)).await.unwrap();
    let result = serde_json::to_value(client.call_tool(request("API_KEY")).await.unwrap()).unwrap();
    assert_eq!(result["isError"], json!(true), "{result}");
    assert!(result.to_string().contains("`hands secrets set API_KEY`"), "{result}");
    assert!(user.seen.lock().unwrap().is_empty(), "never a form for a secret");
    client.cancel().await.unwrap();
}
