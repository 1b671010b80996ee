//! The Vite fixture in real Chromium: the dev server is detected and opened, and what the page
//! throws, logs and fails to load arrives in read_runtime_errors with its source location.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::{Env, evaluate, find, require_for};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_vite_fixture_opens_and_its_errors_arrive_with_source_locations() {
    if !require_for("vite-app") {
        return;
    }
    let env = Env::fixture("vite-app", |_| {});
    let status = env.open().await;
    assert_eq!(status["kind"], "vite");
    assert_eq!(status["running"], true);
    assert_eq!(status["attached"], true);
    let url = status["previewUrl"].as_str().unwrap().to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");

    // On load: a console.error and a fetch of a file that does not exist.
    let errors = env
        .errors_until_all(Duration::from_secs(20), |errors| {
            find(errors, "http_error", "missing.json").is_some()
                && find(errors, "console_error", "not configured").is_some()
        })
        .await;
    let console = find(&errors, "console_error", "the widget is not configured")
        .unwrap_or_else(|| panic!("no console.error in {errors:#?}"));
    assert_eq!(console["pageLoad"], 1);
    assert!(console["originalLocation"].as_str().unwrap().starts_with("src/main.ts:"), "{console}");
    let missing = find(&errors, "http_error", "missing.json").unwrap();
    assert!(missing["message"].as_str().unwrap().starts_with("404"), "{missing}");

    // A click that throws: the message, and the line in the TypeScript source (mapped through
    // Vite's inline source map: the interface above it is gone from the served code).
    let _ = env.call("read_runtime_errors", json!({})).await; // everything so far is read
    evaluate(env.root(), "document.querySelector('#boom').click(); 1").await;
    let errors = env.errors_until(Duration::from_secs(10), |e| e["kind"] == "exception").await;
    let boom = find(&errors, "exception", "boom from the button")
        .unwrap_or_else(|| panic!("no exception in {errors:#?}"));
    assert_eq!(boom["message"], "Error: boom from the button");
    assert_eq!(boom["originalLocation"], "src/explode.ts:11:9", "{boom}");
    let generated = boom["location"].as_str().unwrap();
    assert!(generated.contains("/src/explode.ts:") && !generated.ends_with(":11:9"), "{generated}");
    let frames = boom["stack"].as_array().unwrap();
    assert_eq!(frames[0]["function"], "explode");
    assert!(frames[1]["original"].as_str().unwrap().starts_with("src/main.ts:"), "{frames:?}");

    // Another tool's result says that errors arrived; the next read returns only what is new.
    evaluate(
        env.root(),
        "document.querySelector('#boom').click(); document.querySelector('#reject').click(); 1",
    )
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let other = env.call("list_processes", json!({})).await.notices_as_text().joined_text();
    assert!(
        other.contains("[notice] 2 new runtime errors in the preview — read_runtime_errors"),
        "{other}"
    );
    let again = env.call("list_processes", json!({})).await.notices_as_text().joined_text();
    assert!(!again.contains("[notice]"), "announced once: {again}");
    let (text, result) = env.ok("read_runtime_errors", json!({})).await;
    let new = result["errors"].as_array().unwrap();
    assert_eq!(new.len(), 2, "{text}");
    let repeated = find(new, "exception", "boom from the button").unwrap();
    assert_eq!(repeated["count"], 2, "counted, not repeated: {text}");
    assert!(find(new, "unhandled_rejection", "rejected by the fixture").is_some(), "{text}");
    assert!(text.contains("(×2)") && text.contains("src/explode.ts:11:9"), "{text}");
    let (text, result) = env.ok("read_runtime_errors", json!({})).await;
    assert_eq!(result["errors"], json!([]), "{text}");
    let after = env.call("list_processes", json!({})).await.notices_as_text().joined_text();
    assert!(!after.contains("[notice]"), "read already: {after}");

    // The screenshot shows the page.
    let shot = env.call("preview_screenshot", json!({})).await;
    assert!(!shot.is_error, "{}", shot.joined_text());
    let hands_core::Content::Image { data, mime_type } = &shot.content[0] else {
        panic!("no image: {shot:?}")
    };
    assert_eq!(mime_type, "image/png");
    assert_eq!(&data[..8], b"\x89PNG\r\n\x1a\n");
    let width = u32::from_be_bytes(data[16..20].try_into().unwrap());
    assert_eq!(width, 1280, "the window size");

    env.ok("preview_close", json!({})).await;
    assert!(env.nothing_left().await, "left running: {:?}", env.marked());
}

/// The fixture built instead of served by Vite's dev server: `tsc --noEmit`, `vite build`, then
/// `vite preview`.
fn build_based(config: &mut hands_preview::PreviewConfig) {
    config.typecheck = "tsc --noEmit".into();
    config.build = "vite build".into();
    config.serve = "vite preview --port {port} --strictPort --host 127.0.0.1".into();
    config.watch_interval_ms = 200;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_type_error_stops_a_build_based_preview_at_error_and_the_fix_gets_to_ready() {
    if !require_for("vite-app") {
        return;
    }
    let env = Env::fixture("vite-app", build_based);
    let source = env.root().join("src/explode.ts");
    let good = std::fs::read_to_string(&source).unwrap();
    std::fs::write(&source, good.replace("const blast: Blast", "const blast: number")).unwrap();

    let (text, status) = env.err("preview_open", json!({})).await;
    assert_eq!(status["stage"], "error", "{text}");
    let last = status["lastError"].as_str().unwrap();
    assert!(last.contains("tsc --noEmit") && last.contains("error TS2322"), "{last}");
    assert!(last.contains("src/explode.ts(10,"), "the compiler's own message: {last}");
    assert_eq!(status["running"], false);
    assert!(env.nothing_left().await, "a failed open leaves nothing: {:?}", env.marked());
    let (_, read) = env.ok("read_runtime_errors", json!({})).await;
    let typecheck = find(read["errors"].as_array().unwrap(), "typecheck", "TS2322").unwrap();
    assert_eq!(typecheck["location"], "src/explode.ts:10:9", "{typecheck}");
    let (_, status) = env.ok("preview_status", json!({})).await;
    assert_eq!(status["stage"], "error");

    std::fs::write(&source, &good).unwrap();
    let status = env.open().await;
    assert_eq!(status["kind"], "configured");
    assert!(status["serverPid"].as_u64().is_some());
    assert_eq!(status["pageLoads"], 1);

    // A change rebuilds and reloads: a second page load, with the new message.
    let main = env.root().join("src/main.ts");
    let text = std::fs::read_to_string(&main).unwrap();
    std::fs::write(&main, text.replace("the widget is not configured", "rebuilt after a change"))
        .unwrap();
    let errors = env
        .errors_until(Duration::from_secs(60), |e| {
            e["message"].as_str().unwrap().contains("rebuilt after a change")
        })
        .await;
    let rebuilt = find(&errors, "console_error", "rebuilt after a change")
        .unwrap_or_else(|| panic!("no rebuild seen: {errors:#?}"));
    assert_eq!(rebuilt["pageLoad"], 2);
    let (_, status) = env.ok("preview_status", json!({})).await;
    assert_eq!((status["stage"].as_str(), status["pageLoads"].as_u64()), (Some("ready"), Some(2)));

    // A type error in a rebuild: the preview reports it and keeps the last good page.
    std::fs::write(&source, good.replace("const blast: Blast", "const blast: number")).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let status = loop {
        let (_, status) = env.ok("preview_status", json!({})).await;
        if status["stage"] == "error" || std::time::Instant::now() > deadline {
            break status;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(status["stage"], "error", "{status}");
    assert!(status["lastError"].as_str().unwrap().contains("TS2322"), "{status}");
    assert_eq!(status["attached"], true, "the browser stays");

    env.session.close().await;
    assert!(env.nothing_left().await, "left running: {:?}", env.marked());
}
