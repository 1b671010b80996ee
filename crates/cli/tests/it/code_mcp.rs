//! Code intelligence through the real `hands mcp` binary over stdio, as Claude Code or Codex
//! see it: an edit that breaks a type carries the error in its own result (a `[notice]` line the
//! model reads), the fix says so, code_navigation finds a definition in another file, and when
//! the client goes away the language servers go with the session (0 survivors). The servers are
//! the real ones that `.ci/run` installs with `npm ci` in tests/lsp, found on PATH.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt, service::RunningService};
use serde_json::{Value, json};

fn lsp_bin() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/lsp/node_modules/.bin");
    if dir.join("typescript-language-server").exists() {
        return Some(dir);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "no language servers in {}: npm ci in tests/lsp",
        dir.display()
    );
    eprintln!("SKIPPED: no language servers in {} (run `npm ci` in tests/lsp)", dir.display());
    None
}

async fn call(client: &RunningService<RoleClient, ()>, name: &str, args: Value) -> (bool, String) {
    let mut params = CallToolRequestParams::new(name.to_owned());
    params.arguments = args.as_object().cloned();
    let result = serde_json::to_value(client.call_tool(params).await.unwrap()).unwrap();
    let text: Vec<&str> =
        result["content"].as_array().unwrap().iter().filter_map(|c| c["text"].as_str()).collect();
    (result["isError"] == json!(true), text.join("\n"))
}

#[tokio::test(flavor = "multi_thread")]
async fn an_edit_that_breaks_a_type_shows_the_error_in_its_own_result_over_mcp() {
    let Some(bin) = lsp_bin() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let (root, home) = (tmp.path().join("app"), tmp.path().join("home"));
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(home.join(".config/hands")).unwrap();
    // The first check of a cold server can take seconds on a loaded machine.
    std::fs::write(
        home.join(".config/hands/config.toml"),
        "[code]\ndiagnostics_wait_ms = 20000\nrequest_timeout_ms = 60000\n",
    )
    .unwrap();
    std::fs::write(
        root.join("tsconfig.json"),
        r#"{"compilerOptions": {"strict": true, "noEmit": true}, "include": ["src"]}"#,
    )
    .unwrap();
    std::fs::write(
        root.join("src/util.ts"),
        "export function twice(n: number): number {\n  return n * 2;\n}\n",
    )
    .unwrap();
    std::fs::write(
        root.join("src/main.ts"),
        "import { twice } from \"./util\";\n\nexport const four: number = twice(2);\n",
    )
    .unwrap();

    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let mut cmd = tokio::process::Command::new(assert_cmd::cargo::cargo_bin("hands"));
    cmd.arg("mcp").arg("--root").arg(&root).env("HANDS_LOG", "warn").env("HOME", &home);
    cmd.env("PATH", path).env_remove("XDG_CONFIG_HOME");
    let transport = TokioChildProcess::new(cmd).unwrap();
    let pid = transport.id().unwrap();
    let client = ().serve(transport).await.unwrap();

    let edit =
        |old: &str, new: &str| json!({"path": "src/main.ts", "old_string": old, "new_string": new});
    let (failed, text) = call(&client, "edit_file", edit("twice(2)", "twice(\"2\")")).await;
    assert!(!failed, "{text}");
    assert!(text.contains("[notice] 1 new error from the TypeScript language server:"), "{text}");
    assert!(
        text.contains("src/main.ts:3:35: Argument of type 'string' is not assignable"),
        "{text}"
    );
    let (_, text) = call(&client, "edit_file", edit("twice(\"2\")", "twice(2)")).await;
    assert!(text.contains("[notice] src/main.ts: 1 error fixed, no errors now"), "{text}");
    assert!(!text.contains("not assignable"), "{text}");

    let at = json!({"action": "definition", "path": "src/main.ts", "line": 3, "column": 29});
    let (failed, text) = call(&client, "code_navigation", at).await;
    assert!(!failed && text.starts_with("src/util.ts:1:17: export function twice"), "{text}");

    let servers = || common::live_with_env(&format!("HANDS_SESSION=mcp-{pid}-"));
    assert!(!servers().is_empty(), "the language server runs as a process of the session");
    client.cancel().await.unwrap();
    let started = Instant::now();
    while !servers().is_empty() && started.elapsed() < Duration::from_secs(20) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(servers().is_empty(), "left running after the session: {:?}", servers());
}
