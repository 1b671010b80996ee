//! The preview routes over the real host and hands-preview's service: the state of a project
//! with a preview (stopped, then ready once preview_open ran in real Chromium), a fresh PNG, and
//! the runtime errors with their counts — which the model's read_runtime_errors still returns as
//! new afterwards. Without a preview in the build, the routes answer as for a preview that is not
//! available.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::Path;

use common::{TestServer, registry, registry_builder};
use hands_core::CoreConfig;
use hands_server::ServerConfig;
use serde_json::{Value, json};

const FIXTURE: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/preview/fixtures/static-site");

async fn png(server: &TestServer, session: &str) -> (u16, String, Vec<u8>) {
    let reply = server
        .client
        .get(server.url(&format!("/v1/sessions/{session}/preview/screenshot")))
        .send()
        .await
        .unwrap();
    let status = reply.status().as_u16();
    let kind = reply.headers()["content-type"].to_str().unwrap().to_owned();
    (status, kind, reply.bytes().await.unwrap().to_vec())
}

#[tokio::test]
async fn without_a_preview_in_the_build_the_routes_say_so() {
    let server =
        TestServer::start_registry(None, ServerConfig::default(), registry(CoreConfig::default()))
            .await;
    let id = server.session(json!({})).await;
    let (status, state) = server.get(&format!("/v1/sessions/{id}/preview")).await;
    assert_eq!(status, 200, "{state}");
    assert_eq!(state["available"], false);
    assert_eq!(state["stage"], "stopped");
    assert_eq!(state["errors"]["errors"], 0);
    let (status, kind, body) = png(&server, &id).await;
    assert_eq!(status, 409);
    assert!(kind.starts_with("application/json"), "{kind}");
    let body: Value = serde_json::from_slice(&body).unwrap();
    assert!(body["error"]["message"].as_str().unwrap().contains("no preview"), "{body}");
    let (status, errors) = server.get(&format!("/v1/sessions/{id}/preview/errors")).await;
    assert_eq!(
        (status, errors),
        (
            200,
            json!({"errors": [], "counts": {"errors": 0, "warnings": 0, "occurrences": 0, "unread": 0, "dropped": 0}})
        )
    );
    let (status, body) = server.get("/v1/sessions/nope/preview").await;
    assert_eq!(status, 404, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_preview_of_the_static_fixture_is_read_without_moving_the_models_cursor() {
    let project = tempfile::tempdir().unwrap();
    for file in ["index.html", "app.js"] {
        std::fs::copy(Path::new(FIXTURE).join(file), project.path().join(file)).unwrap();
    }
    let builder = registry_builder(CoreConfig::default());
    // A loaded machine may take its time to start a browser.
    let config = hands_preview::PreviewConfig { browser_timeout_ms: 120_000, ..Default::default() };
    let builder = hands_preview::register(builder, &config, &Default::default(), project.path());
    let server = TestServer::start_registry(None, ServerConfig::default(), builder.build()).await;
    let root = project.path().to_str().unwrap();
    let (status, info) = server.post("/v1/sessions", json!({"root": root})).await;
    assert_eq!(status, 201, "{info}");
    let id = info["id"].as_str().unwrap().to_owned();

    let (_, state) = server.get(&format!("/v1/sessions/{id}/preview")).await;
    assert_eq!(
        (state["available"].clone(), state["stage"].clone()),
        (json!(true), json!("stopped")),
        "{state}"
    );
    let (status, _, body) = png(&server, &id).await;
    assert_eq!(status, 409);
    let body: Value = serde_json::from_slice(&body).unwrap();
    assert!(body["error"]["message"].as_str().unwrap().contains("preview_open"), "{body}");

    if !Path::new("/usr/bin/chromium").exists() {
        assert!(std::env::var_os("CI").is_none(), "CI must have /usr/bin/chromium");
        eprintln!("\n!!! SKIPPED the open preview: /usr/bin/chromium is missing !!!\n");
        return;
    }
    let (status, opened) =
        server.post(&format!("/v1/sessions/{id}/tools/preview_open"), json!({"args": {}})).await;
    assert_eq!(status, 200, "{opened}");
    assert_eq!(opened["isError"], false, "{opened}");
    let (_, state) = server.get(&format!("/v1/sessions/{id}/preview")).await;
    assert_eq!(state["stage"], "ready", "{state}");
    assert_eq!(state["running"], true);
    assert!(state["url"].as_str().unwrap().starts_with("http://127.0.0.1:"), "{state}");
    assert_eq!(state["kind"], "static");

    // The fixture throws on load; the list has it with its count, and so do the counts.
    let mut errors = Value::Null;
    for _ in 0..100 {
        errors = server.get(&format!("/v1/sessions/{id}/preview/errors")).await.1;
        if errors["counts"]["errors"].as_u64().unwrap() > 0
            && errors["counts"]["warnings"].as_u64().unwrap() > 0
        {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let list = errors["errors"].as_array().unwrap();
    let thrown =
        list.iter().find(|e| e["message"].as_str().unwrap().contains("widget is undefined"));
    let thrown = thrown.unwrap_or_else(|| panic!("no exception in {errors}"));
    assert_eq!(
        (thrown["kind"].clone(), thrown["count"].clone()),
        (json!("exception"), json!(1)),
        "{thrown}"
    );
    assert!(list.iter().any(|e| e["kind"] == "console_warning"), "{errors}");
    assert_eq!(errors["counts"]["unread"].as_u64().unwrap() as usize, list.len(), "{errors}");

    // Reading them here moved nothing: the model's read returns them, and only then are they read.
    let (_, read) = server
        .post(&format!("/v1/sessions/{id}/tools/read_runtime_errors"), json!({"args": {}}))
        .await;
    let read_list = read["structuredContent"]["errors"].as_array().unwrap();
    assert!(read_list.iter().any(|e| e["message"] == thrown["message"]), "{read}");
    let (_, state) = server.get(&format!("/v1/sessions/{id}/preview")).await;
    assert_eq!(state["errors"]["unread"], 0, "{state}");

    let (status, kind, body) = png(&server, &id).await;
    assert_eq!((status, kind.as_str()), (200, "image/png"));
    assert!(body.starts_with(b"\x89PNG\r\n\x1a\n") && body.len() > 1000, "{} bytes", body.len());

    let (status, _) = server.delete(&format!("/v1/sessions/{id}")).await;
    assert_eq!(status, 204);
}
