//! The secrets tool over the real session API: a `secret_requested` event on the SSE stream,
//! `POST /v1/sessions/{id}/secrets/{request_id}` with the value (JSON or plain text) stored in the
//! real secret store, and the value found nowhere else: not in the response, the event stream, the
//! transcript or the model's requests. Unknown requests are 404, short values and unreadable
//! bodies 400 (without echoing them), a decline ends the request.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::{Reply, Scripted, SseStream, TestServer};
use hands_core::CoreConfig;
use hands_core::secret::SecretStore;
use hands_server::ServerConfig;
use serde_json::{Value, json};

const CANARY: &str = "sk_test_CANARY_api_51HxQ9v2Lr8p4f2a";

async fn until(stream: &mut SseStream, name: &str, seen: &mut String) -> Value {
    loop {
        let message = stream
            .next_within(Duration::from_secs(60))
            .await
            .unwrap_or_else(|| panic!("no {name} event came"));
        seen.push_str(&format!("{message:?}\n"));
        if message.event == name {
            return message.data;
        }
    }
}

async fn server(
    model: Arc<Scripted>,
) -> (TestServer, Arc<hands_secrets::Store>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(hands_secrets::Store::at(dir.path().join("secrets")));
    let registry = common::registry_builder(CoreConfig::default());
    let registry =
        hands_agent::register_secrets(registry, store.clone(), &Default::default()).build();
    let server = TestServer::start_registry(Some(model), ServerConfig::default(), registry).await;
    (server, store, dir)
}

fn request(name: &str) -> Reply {
    Reply::tool(
        "secrets",
        json!({"action": "request", "name": name, "description": "the key, from the dashboard"}),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_is_given_over_the_api_and_appears_nowhere_else() {
    let model =
        Scripted::new([request("STRIPE_SECRET_KEY"), request("OTHER_KEY"), Reply::text("all set")]);
    let (server, store, _dir) = server(model.clone()).await;
    let id = server.session(json!({})).await;
    let mut stream = SseStream::open(&server, &id, None).await;
    let mut seen = String::new();
    let (status, _) =
        server.post(&format!("/v1/sessions/{id}/messages"), json!({"text": "stripe"})).await;
    assert_eq!(status, 202);

    let asked = until(&mut stream, "secret_requested", &mut seen).await;
    assert_eq!(asked["name"], "STRIPE_SECRET_KEY");
    assert_eq!(asked["description"], "the key, from the dashboard");
    let request_id = asked["request_id"].as_str().unwrap().to_owned();
    let path = format!("/v1/sessions/{id}/secrets/{request_id}");

    // Bad input: nothing is echoed, and the request still waits.
    let (status, body) = server
        .post(&format!("/v1/sessions/{id}/secrets/secret-nope"), json!({"value": CANARY}))
        .await;
    assert_eq!(status, 404, "{body}");
    let (status, body) = server.post(&path, json!({"value": "short"})).await;
    assert_eq!(status, 400, "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("too short"), "{body}");
    let (status, body) = server.post(&path, json!({"value": CANARY, "decline": CANARY})).await;
    assert_eq!(status, 400, "{body}");
    assert!(!body.to_string().contains(CANARY), "{body}");
    let (status, body) = server
        .post_raw(&path, "application/json", format!("{{\"value\": {CANARY}}}").into_bytes())
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(!body.to_string().contains(CANARY), "{body}");
    let (status, body) = server
        .post_raw(
            &path,
            "application/x-www-form-urlencoded",
            format!("value={CANARY}").into_bytes(),
        )
        .await;
    assert_eq!(status, 415, "{body}");
    let (status, body) = server.post(&path, json!({})).await;
    assert_eq!(status, 400, "{body}");

    let (status, body) = server.post(&path, json!({"value": CANARY})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        json!({"name": "STRIPE_SECRET_KEY", "hint": "sk_t…4f2a", "message": "stored as STRIPE_SECRET_KEY (sk_t…4f2a)"})
    );
    let answered = until(&mut stream, "secret_answered", &mut seen).await;
    assert_eq!(answered["request_id"], request_id.as_str());
    let (status, _) = server.post(&path, json!({"value": CANARY})).await;
    assert_eq!(status, 404, "answered once");

    // The second request, answered as plain text, then the turn ends.
    let asked = until(&mut stream, "secret_requested", &mut seen).await;
    let path = format!("/v1/sessions/{id}/secrets/{}", asked["request_id"].as_str().unwrap());
    let other = format!("{CANARY}-other");
    let (status, body) = server
        .post_raw(&path, "text/plain; charset=utf-8", format!("{other}\n").into_bytes())
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["name"], "OTHER_KEY");
    let end = until(&mut stream, "turn_ended", &mut seen).await;
    assert_eq!(end["reason"], "completed", "{end}");

    assert_eq!(store.get(&server.root, "STRIPE_SECRET_KEY").unwrap().expose(), CANARY);
    assert_eq!(store.get(&server.root, "OTHER_KEY").unwrap().expose(), other, "trimmed");
    let messages = format!("{:?}", model.last_messages());
    assert!(messages.contains("STRIPE_SECRET_KEY stored (sk_t…4f2a)"), "{messages}");
    let (_, transcript) = server.get(&format!("/v1/sessions/{id}/messages")).await;
    for (surface, text) in
        [("events", seen), ("model", messages), ("transcript", transcript.to_string())]
    {
        assert!(!text.contains(CANARY), "{surface} holds the value: {text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declined_secret_ends_the_request_and_stores_nothing() {
    let model = Scripted::new([request("API_KEY"), Reply::text("ok")]);
    let (server, store, _dir) = server(model.clone()).await;
    let id = server.session(json!({})).await;
    let mut stream = SseStream::open(&server, &id, None).await;
    let mut seen = String::new();
    server.post(&format!("/v1/sessions/{id}/messages"), json!({"text": "go"})).await;
    let asked = until(&mut stream, "secret_requested", &mut seen).await;
    let path = format!("/v1/sessions/{id}/secrets/{}", asked["request_id"].as_str().unwrap());
    let (status, body) = server.post(&path, json!({"decline": true})).await;
    assert_eq!((status, body), (200, json!({"name": "API_KEY", "message": "API_KEY declined"})));
    until(&mut stream, "secret_declined", &mut seen).await;
    until(&mut stream, "turn_ended", &mut seen).await;
    assert!(format!("{:?}", model.last_messages()).contains("declined to give API_KEY"));
    assert!(store.list(&server.root).is_empty());
}

#[tokio::test]
async fn the_openapi_document_describes_the_secret_route() {
    let model = Scripted::new([]);
    let (server, _store, _dir) = server(model).await;
    let (status, doc) = server.get("/v1/openapi.json").await;
    assert_eq!(status, 200);
    let op = &doc["paths"]["/v1/sessions/{id}/secrets/{request_id}"]["post"];
    assert_eq!(op["operationId"], "answerSecret", "{op}");
    assert!(doc["components"]["schemas"]["SecretAnswer"]["properties"]["value"].is_object());
    let events = doc["components"]["schemas"].to_string();
    for kind in ["secret_requested", "secret_answered", "secret_declined"] {
        assert!(events.contains(kind), "{kind} missing from {events}");
    }
}
