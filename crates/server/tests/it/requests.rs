//! The session API's handling of requests before any session work: routing, bodies (malformed,
//! wrong types, unknown fields, content types, the size cap), ids, the OpenAPI document's
//! completeness, and the Host/Origin/token guard on `/v1` and `/vibe` — against a real listener.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::{BTreeMap, BTreeSet};

use common::{TestServer, response};
use hands_server::ServerConfig;
use serde_json::{Value, json};

/// Every route of the API as the brief names it: method and path.
const ROUTES: &[(&str, &str)] = &[
    ("post", "/v1/sessions"),
    ("get", "/v1/sessions"),
    ("get", "/v1/sessions/{id}"),
    ("patch", "/v1/sessions/{id}"),
    ("delete", "/v1/sessions/{id}"),
    ("patch", "/v1/sessions/{id}"),
    ("get", "/v1/sessions/{id}/messages"),
    ("post", "/v1/sessions/{id}/messages"),
    ("post", "/v1/sessions/{id}/abort"),
    ("get", "/v1/sessions/{id}/events"),
    ("post", "/v1/sessions/{id}/tools/{name}"),
    ("post", "/v1/sessions/{id}/answer"),
    ("post", "/v1/sessions/{id}/approvals/{approval_id}"),
    ("post", "/v1/sessions/{id}/secrets/{request_id}"),
    ("get", "/v1/sessions/{id}/processes"),
    ("get", "/v1/sessions/{id}/processes/{process_id}/output"),
    ("post", "/v1/sessions/{id}/processes/{process_id}/stop"),
    ("get", "/v1/sessions/{id}/preview"),
    ("get", "/v1/sessions/{id}/preview/screenshot"),
    ("get", "/v1/sessions/{id}/preview/errors"),
    ("get", "/v1/sessions/{id}/checkpoints"),
    ("get", "/v1/sessions/{id}/checkpoints/{n}/diff"),
    ("post", "/v1/sessions/{id}/checkpoints/{n}/restore"),
    ("post", "/vibe/answer"),
    ("post", "/vibe/abort/{projectId}"),
    ("post", "/v1/signin"),
    ("get", "/v1/openapi.json"),
];

fn assert_error(status: u16, body: &Value, want_status: u16, want_code: &str) {
    assert_eq!(status, want_status, "{body}");
    assert_eq!(body["error"]["code"], want_code, "{body}");
    assert!(!body["error"]["message"].as_str().unwrap_or("").is_empty(), "{body}");
}

#[tokio::test]
async fn malformed_json_is_400_with_the_parsers_message() {
    let server = TestServer::start(None).await;
    let (status, body) =
        server.post_raw("/v1/sessions", "application/json", br#"{"root": "/tmp""#.to_vec()).await;
    assert_error(status, &body, 400, "invalid_body");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("EOF while parsing"), "{message}");
    assert!(message.contains("line 1 column"), "{message}");

    let (status, body) = server.post_raw("/vibe/answer", "application/json", b"".to_vec()).await;
    assert_error(status, &body, 400, "invalid_body");
}

#[tokio::test]
async fn wrong_types_and_unknown_fields_are_400_naming_the_field() {
    let server = TestServer::start(None).await;
    let (status, body) = server.post("/v1/sessions", json!({"root": 5})).await;
    assert_error(status, &body, 400, "invalid_body");
    assert!(body["error"]["message"].as_str().unwrap().contains("invalid type: integer `5`"));

    let (status, body) = server.post("/v1/sessions", json!({"root": "/", "mode": "fly"})).await;
    assert_error(status, &body, 400, "invalid_body");
    assert!(body["error"]["message"].as_str().unwrap().contains("unknown variant `fly`"));

    let (status, body) = server.post("/v1/sessions", json!({"root": "/", "rooot": 1})).await;
    assert_error(status, &body, 400, "invalid_body");
    assert!(body["error"]["message"].as_str().unwrap().contains("unknown field `rooot`"));

    let (status, body) = server.post("/v1/sessions/s/messages", json!({"text": ["a"]})).await;
    assert_error(status, &body, 400, "invalid_body");

    let (status, body) = server.post("/v1/sessions/s/approvals/a", json!({"approve": "yes"})).await;
    assert_error(status, &body, 400, "invalid_body");

    let (status, body) = server.post("/v1/sessions/s/tools/read_file", json!({"args": 1})).await;
    assert_error(status, &body, 400, "invalid_body");

    let (status, body) = server.post("/vibe/answer", json!({"answer": 42})).await;
    assert_error(status, &body, 400, "invalid_body");

    let (status, body) = server.post("/v1/sessions", json!([1, 2])).await;
    assert_error(status, &body, 400, "invalid_body");
}

#[tokio::test]
async fn a_body_that_is_not_json_is_415() {
    let server = TestServer::start(None).await;
    let (status, body) =
        server.post_raw("/v1/sessions", "text/plain", br#"{"root":"/"}"#.to_vec()).await;
    assert_error(status, &body, 415, "unsupported_media_type");
    let (status, body) = server.post_empty("/vibe/answer").await;
    assert_error(status, &body, 415, "unsupported_media_type");
    let (status, body) = server
        .post_raw("/v1/sessions", "application/x-www-form-urlencoded", b"root=/".to_vec())
        .await;
    assert_error(status, &body, 415, "unsupported_media_type");
}

#[tokio::test]
async fn bad_ids_and_roots_are_400() {
    let server = TestServer::start(None).await;
    let root = server.root.clone();
    for body in [
        json!({"root": root, "id": "a/b"}),
        json!({"root": root, "id": ""}),
        json!({"root": root, "project_id": "-x"}),
        json!({"root": "relative/path"}),
        json!({"root": root.join("missing")}),
    ] {
        let (status, reply) = server.post("/v1/sessions", body.clone()).await;
        assert_error(status, &reply, 400, "bad_request");
        println!("{body} -> {}", reply["error"]["message"]);
    }
    let (status, reply) = server.post("/v1/sessions/s/messages", json!({"text": "  "})).await;
    assert_error(status, &reply, 400, "bad_request");
}

#[tokio::test]
async fn a_17_mb_body_is_413_and_a_10_mb_one_is_read() {
    let server = TestServer::start(None).await;
    let big = json!({"text": "x".repeat(17 * 1000 * 1000)}).to_string().into_bytes();
    let (status, body) =
        server.post_raw("/v1/sessions/nope/messages", "application/json", big).await;
    assert_error(status, &body, 413, "payload_too_large");
    assert!(body["error"]["message"].as_str().unwrap().contains("max_body_bytes"));

    // 10 MB is under the default 16 MiB: the body is read and parsed, and the unknown session is
    // what is refused.
    let ten = json!({"text": "x".repeat(10 * 1000 * 1000)}).to_string().into_bytes();
    let (status, body) = server.post_raw("/vibe/answer", "application/json", ten).await;
    assert_error(status, &body, 400, "invalid_body");
    assert!(body["error"]["message"].as_str().unwrap().contains("missing field `answer`"));

    // The cap is configuration.
    let config = ServerConfig { max_body_bytes: 1000, ..ServerConfig::default() };
    let small = TestServer::start_with(None, config).await;
    let body = json!({"answer": "y".repeat(2000)}).to_string().into_bytes();
    let (status, reply) = small.post_raw("/vibe/answer", "application/json", body).await;
    assert_error(status, &reply, 413, "payload_too_large");
}

#[tokio::test]
async fn unknown_routes_and_methods_are_json_errors() {
    let server = TestServer::start(None).await;
    let (status, body) = server.get("/v1/nothing/here").await;
    assert_error(status, &body, 404, "not_found");
    assert!(body["error"]["message"].as_str().unwrap().contains("/v1/openapi.json"));

    let reply = server.client.put(server.url("/v1/sessions")).send().await.unwrap();
    let allow = reply.headers()["allow"].to_str().unwrap().to_owned();
    let (status, body) = response(reply).await;
    assert_error(status, &body, 405, "method_not_allowed");
    assert!(allow.contains("GET") && allow.contains("POST"), "{allow}");
}

#[tokio::test]
async fn a_last_event_id_that_is_not_a_number_is_400() {
    let server = TestServer::start(None).await;
    let reply = server
        .client
        .get(server.url("/v1/sessions/s/events"))
        .header("Last-Event-ID", "abc")
        .send()
        .await
        .unwrap();
    let (status, body) = response(reply).await;
    assert_error(status, &body, 400, "bad_request");
    let (status, body) = server.get("/v1/sessions/s/events?after=-1").await;
    assert_error(status, &body, 400, "bad_request");
}

/// The document names exactly the routes above, and each documented path answers exactly its
/// documented methods (an unused method gets 405 with an `Allow` header listing them).
#[tokio::test]
async fn the_openapi_document_and_the_router_agree() {
    let server = TestServer::start(None).await;
    let (status, doc) = server.get("/v1/openapi.json").await;
    assert_eq!(status, 200);
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"), "{}", doc["openapi"]);
    let mut documented: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            documented.entry(path.clone()).or_default().insert(method.clone());
        }
    }
    let mut expected: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (method, path) in ROUTES {
        expected.entry((*path).to_owned()).or_default().insert((*method).to_owned());
    }
    assert_eq!(documented, expected);

    for (path, methods) in &documented {
        let concrete = path
            .split('/')
            .map(|s| if s.starts_with('{') { "x" } else { s })
            .collect::<Vec<_>>()
            .join("/");
        // PUT: a method no route of the API takes.
        let reply = server.client.put(server.url(&concrete)).send().await.unwrap();
        assert_eq!(reply.status(), 405, "PUT {concrete}");
        let allow: BTreeSet<String> = reply.headers()["allow"]
            .to_str()
            .unwrap()
            .split(',')
            .map(|m| m.trim().to_ascii_lowercase())
            .filter(|m| m != "head")
            .collect();
        assert_eq!(&allow, methods, "{path}");
    }

    // Every operation documents its errors with the error schema, and bodies with a schema.
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let responses = op["responses"].as_object().unwrap();
            assert!(responses.contains_key("401"), "{method} {path}");
            if matches!(method.as_str(), "post" | "patch") && op.get("requestBody").is_some() {
                for status in ["400", "413", "415"] {
                    assert!(responses.contains_key(status), "{method} {path} {status}");
                }
            }
        }
    }
}

fn guarded(token: Option<&str>) -> ServerConfig {
    ServerConfig {
        token: token.map(str::to_owned),
        allowed_origins: vec!["https://app.example.com".into()],
        ..ServerConfig::default()
    }
}

#[tokio::test]
async fn v1_and_vibe_need_the_token_when_the_server_has_one() {
    let server = TestServer::start_with(None, guarded(Some("s3cret"))).await;
    for (method, path) in
        [("GET", "/v1/openapi.json"), ("GET", "/v1/sessions"), ("POST", "/vibe/abort/p")]
    {
        let request =
            server.client.request(method.parse().unwrap(), server.url(path)).header("x-a", "b");
        let reply = request.send().await.unwrap();
        assert_eq!(reply.status(), 401, "{method} {path}");
        assert_eq!(reply.headers()["www-authenticate"], "Bearer");
        let (_, body) = response(reply).await;
        assert_eq!(body["error"]["code"], "unauthorized", "{body}");

        let reply = server
            .client
            .request(method.parse().unwrap(), server.url(path))
            .bearer_auth("wrong")
            .send()
            .await
            .unwrap();
        assert_eq!(reply.status(), 401, "{method} {path}");
    }
    let reply = server
        .client
        .get(server.url("/v1/openapi.json"))
        .bearer_auth("s3cret")
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 200);
    // Past the guard, the body checks answer.
    let reply = server
        .client
        .post(server.url("/vibe/answer"))
        .bearer_auth("s3cret")
        .header("content-type", "text/plain")
        .body("x")
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 415);
    // /healthz stays open; /mcp is guarded as before.
    let reply = server.client.get(server.url("/healthz")).send().await.unwrap();
    assert_eq!(reply.status(), 200);
    let reply = server.client.post(server.url("/mcp")).send().await.unwrap();
    assert_eq!(reply.status(), 401);
}

#[tokio::test]
async fn foreign_hosts_and_origins_are_403_on_v1_and_vibe() {
    let server = TestServer::start_with(None, guarded(None)).await;
    for path in ["/v1/openapi.json", "/v1/sessions", "/vibe/abort/p"] {
        let method = if path.starts_with("/vibe") { "POST" } else { "GET" };
        let reply = server
            .client
            .request(method.parse().unwrap(), server.url(path))
            .header("host", "evil.example.com")
            .send()
            .await
            .unwrap();
        let (status, body) = response(reply).await;
        assert_error(status, &body, 403, "forbidden");
        assert!(body["error"]["message"].as_str().unwrap().contains("evil.example.com"));

        let reply = server
            .client
            .request(method.parse().unwrap(), server.url(path))
            .header("origin", "https://evil.example.com")
            .send()
            .await
            .unwrap();
        let (status, body) = response(reply).await;
        assert_error(status, &body, 403, "forbidden");
    }
    for origin in ["http://localhost:3000", "https://app.example.com"] {
        let reply = server
            .client
            .get(server.url("/v1/openapi.json"))
            .header("origin", origin)
            .send()
            .await
            .unwrap();
        assert_eq!(reply.status(), 200, "{origin}");
    }
}

/// Issue 34: `POST /v1/signin` is the one operation without the token (the document says so):
/// a code that is not a live one is 401 `signin_refused`, a bad body 400 or 415, and the
/// Host/Origin checks still apply.
#[tokio::test]
async fn signin_needs_no_token_and_refuses_codes_it_did_not_make() {
    let server = TestServer::start_with(None, guarded(Some("s3cret"))).await;
    let (status, body) = server.post("/v1/signin", json!({"code": "0".repeat(64)})).await;
    assert_error(status, &body, 401, "signin_refused");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("already used or has expired"), "{message}");
    assert!(!message.contains("s3cret"));
    let (status, body) = server.post("/v1/signin", json!({"code": 5})).await;
    assert_error(status, &body, 400, "invalid_body");
    let (status, body) = server.post("/v1/signin", json!({"code": "x", "token": "y"})).await;
    assert_error(status, &body, 400, "invalid_body");
    let (status, body) = server.post_raw("/v1/signin", "text/plain", b"code".to_vec()).await;
    assert_error(status, &body, 415, "unsupported_media_type");
    let reply = server
        .client
        .post(server.url("/v1/signin"))
        .header("origin", "https://evil.example.com")
        .json(&json!({"code": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 403);

    let reply = server
        .client
        .get(server.url("/v1/openapi.json"))
        .bearer_auth("s3cret")
        .send()
        .await
        .unwrap();
    let (_, doc) = response(reply).await;
    let signin = &doc["paths"]["/v1/signin"]["post"];
    assert_eq!(signin["security"], json!([]), "{signin}");
    assert!(signin["responses"]["401"]["description"].as_str().unwrap().contains("expired"));
    let lifetime = format!("{} s", hands_server::signin::LIFETIME.as_secs());
    assert!(signin["description"].as_str().unwrap().contains(&lifetime), "{signin}");
    let others = doc["paths"].as_object().unwrap().iter().filter(|(path, _)| *path != "/v1/signin");
    for (path, item) in others {
        for (method, op) in item.as_object().unwrap() {
            assert!(op.get("security").is_none(), "{method} {path} is open");
        }
    }
}

/// Replaces one string, to see what the egress pass masks.
struct Masks(&'static str);

impl hands_core::redact::Redactor for Masks {
    fn redact(&self, input: &[u8], _more: bool, out: &mut Vec<u8>) -> usize {
        let text = String::from_utf8_lossy(input).replace(self.0, "[redacted:test]");
        out.extend_from_slice(text.as_bytes());
        input.len()
    }

    fn finds(&self, input: &[u8]) -> bool {
        input.windows(self.0.len()).any(|w| w == self.0.as_bytes())
    }
}

/// Issue 34: a live code is traded once for the token, whole even when the egress pass would
/// mask it elsewhere (a token of the user's choosing may look like a key).
#[tokio::test]
async fn a_live_code_is_traded_once_for_the_token_as_it_is() {
    const TOKEN: &str = "sk-signin-canary-0123456789";
    hands_core::redact::install(std::sync::Arc::new(Masks(TOKEN)));
    let server = TestServer::start_with(None, guarded(Some(TOKEN))).await;
    let code = server.signin.mint().unwrap();
    let reply = server
        .client
        .post(server.url("/v1/signin"))
        .json(&json!({ "code": code }))
        .send()
        .await
        .unwrap();
    assert_eq!(reply.headers()["cache-control"], "no-store");
    let (status, body) = response(reply).await;
    assert_eq!((status, &body), (200, &json!({ "token": TOKEN })));
    let (status, body) = server.post("/v1/signin", json!({ "code": code })).await;
    assert_error(status, &body, 401, "signin_refused");
    // The pass is on: the same value in any other answer is masked.
    let reply = server
        .client
        .post(server.url("/v1/sessions"))
        .bearer_auth(TOKEN)
        .json(&json!({ "root": server.root, "title": TOKEN }))
        .send()
        .await
        .unwrap();
    let (status, info) = response(reply).await;
    assert_eq!(status, 201, "{info}");
    assert_eq!(info["title"], "[redacted:test]", "{info}");
}
