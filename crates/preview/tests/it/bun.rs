//! The Bun path: a project with `compile.ts` is typechecked (`bun typecheck`), compiled
//! (`bun compile.ts`) and its `dist` served by the built-in server; the error it throws maps back
//! to the TypeScript source through the linked source map. Bun comes from the fixture's npm
//! packages (the `bun` package), which .ci/run installs: missing under CI is a failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::{Env, find, require, require_for};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bun_project_is_typechecked_compiled_and_served() {
    if !require_for("bun-app")
        || !require(
            &common::fixture("bun-app").join("node_modules/.bin/bun"),
            "npm ci in tests/preview/fixtures/bun-app",
        )
    {
        return;
    }
    let env = Env::fixture("bun-app", |_| {});
    let status = env.open().await;
    assert_eq!(status["kind"], "bun");
    assert_eq!(status["serverPid"], json!(null), "dist is served by the built-in server");
    assert!(env.root().join("dist/app.js").exists(), "bun compile.ts built it");
    let errors = env.errors_until(Duration::from_secs(10), |e| e["kind"] == "exception").await;
    let boom = find(&errors, "exception", "bun fixture boom")
        .unwrap_or_else(|| panic!("no exception in {errors:#?}"));
    assert_eq!(boom["originalLocation"], "src/app.ts:8:7", "{boom}");

    // A type error stops it at the typecheck, with tsc's message.
    env.ok("preview_close", json!({})).await;
    let app = env.root().join("src/app.ts");
    let source = std::fs::read_to_string(&app).unwrap();
    std::fs::write(&app, source.replace("text: 'compiled by bun'", "text: 42")).unwrap();
    let (text, status) = env.err("preview_open", json!({})).await;
    assert_eq!(status["stage"], "error", "{text}");
    let last = status["lastError"].as_str().unwrap();
    assert!(last.contains("bun typecheck") && last.contains("TS2322"), "{last}");
    env.session.close().await;
    assert!(env.nothing_left().await, "left running: {:?}", env.marked());
}
