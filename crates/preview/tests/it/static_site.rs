//! A static site served by the built-in server: opened, its errors and its 404 collected, shot
//! whole, and reloaded when a file changes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::{Env, find, require_for};
use serde_json::json;

fn png_size(data: &[u8]) -> (u32, u32) {
    assert_eq!(&data[..8], b"\x89PNG\r\n\x1a\n");
    let width = u32::from_be_bytes(data[16..20].try_into().unwrap());
    let height = u32::from_be_bytes(data[20..24].try_into().unwrap());
    (width, height)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_static_site_is_served_by_the_built_in_server_and_reloaded_on_change() {
    if !require_for("static-site") {
        return;
    }
    let env = Env::fixture("static-site", |c| c.watch_interval_ms = 150);
    let status = env.open().await;
    assert_eq!(status["kind"], "static");
    assert_eq!(status["serverPid"], json!(null), "the built-in server is no process");
    assert!(status["previewUrl"].as_str().unwrap().starts_with("http://127.0.0.1:"));

    let errors = env
        .errors_until_all(Duration::from_secs(10), |errors| {
            find(errors, "http_error", "missing.png").is_some()
                && find(errors, "exception", "widget").is_some()
                && find(errors, "console_warning", "static fixture").is_some()
        })
        .await;
    let thrown = find(&errors, "exception", "widget is undefined")
        .unwrap_or_else(|| panic!("no exception in {errors:#?}"));
    assert_eq!(thrown["message"], "TypeError: static fixture: widget is undefined");
    assert!(thrown["location"].as_str().unwrap().ends_with("/app.js:4:9"), "{thrown}");
    assert_eq!(thrown["stack"][0]["function"], "loadWidget");
    let image = find(&errors, "http_error", "missing.png").unwrap();
    assert!(image["message"].as_str().unwrap().contains("404"), "{image}");
    assert!(image["message"].as_str().unwrap().contains("(Image)"), "{image}");
    assert!(find(&errors, "console_warning", "static fixture warning").is_some());
    let (_, no_warnings) =
        env.ok("read_runtime_errors", json!({"since": 0, "warnings": false})).await;
    assert!(
        find(no_warnings["errors"].as_array().unwrap(), "console_warning", "").is_none(),
        "warnings: false leaves them out"
    );

    // The window, and the whole page (2400 px of it is one tall block).
    let shot = env.call("preview_screenshot", json!({})).await;
    let hands_core::Content::Image { data, .. } = &shot.content[0] else { panic!("{shot:?}") };
    assert_eq!(png_size(data), (1280, 800));
    let shot = env.call("preview_screenshot", json!({"full_page": true})).await;
    let hands_core::Content::Image { data, .. } = &shot.content[0] else { panic!("{shot:?}") };
    let (width, height) = png_size(data);
    assert!(width >= 1200 && height > 2400, "{width}×{height}");

    // A change to a file reloads the page: a second page load throws again.
    let index = env.root().join("index.html");
    let html = std::fs::read_to_string(&index).unwrap();
    std::fs::write(&index, html.replace("static fixture</h1>", "static fixture, changed</h1>"))
        .unwrap();
    let errors = env
        .errors_until(Duration::from_secs(15), |e| e["pageLoad"] == 2 && e["kind"] == "exception")
        .await;
    assert!(
        errors.iter().any(|e| e["pageLoad"] == 2 && e["kind"] == "exception"),
        "no reload: {errors:#?}"
    );
    env.session.close().await;
    assert!(env.nothing_left().await, "left running: {:?}", env.marked());
}
