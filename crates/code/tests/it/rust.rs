//! Rust through the real rust-analyzer (the toolchain's component, `rustup component add
//! rust-analyzer` in .ci/run), configured as the user's `code.servers` command, the only way hands
//! starts it: a write that breaks a type shows the error in its own result, the fix clears it, and
//! navigation finds a definition in another file.

use std::path::PathBuf;

use serde_json::json;

use crate::common::{Project, notices};

/// The toolchain's rust-analyzer itself (not rustup's proxy, which would follow a project's
/// rust-toolchain.toml): `HANDS_RUST_ANALYZER`, else `rustup which rust-analyzer`.
fn rust_analyzer() -> Option<PathBuf> {
    let found = std::env::var_os("HANDS_RUST_ANALYZER").map(PathBuf::from).or_else(|| {
        let out = std::process::Command::new("rustup").args(["which", "rust-analyzer"]).output();
        out.ok()
            .filter(|o| o.status.success())
            .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim().to_owned()))
    });
    if let Some(path) = found.filter(|p| p.is_file()) {
        return Some(path);
    }
    if std::env::var_os("CI").is_some() {
        panic!("rust-analyzer is not installed: rustup component add rust-analyzer");
    }
    eprintln!("SKIPPED: rust-analyzer is not installed (rustup component add rust-analyzer)");
    None
}

const CARGO_TOML: &str =
    "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n";
const UTIL: &str = "pub fn double(n: i32) -> i32 {\n    n * 2\n}\n";
const LIB: &str = "pub mod util;\n\npub fn total() -> i32 {\n    util::double(21)\n}\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_analyzer_reports_a_new_error_on_the_write_and_finds_a_definition() {
    let Some(ra) = rust_analyzer() else { return };
    let mut config = hands_code::CodeConfig::default();
    config.servers.insert("rust".into(), vec![ra.to_string_lossy().into_owned()]);
    // rust-analyzer loads the crate and the standard library before it answers: seconds on a
    // loaded machine. The wait ends as soon as it has.
    config.diagnostics_wait_ms = 120_000;
    config.request_timeout_ms = 120_000;
    config.initialize_timeout_ms = 120_000;
    let p = Project::new(
        &[("Cargo.toml", CARGO_TOML), ("src/util.rs", UTIL), ("src/lib.rs", LIB)],
        config,
    );
    let edit =
        |old: &str, new: &str| json!({"path": "src/lib.rs", "old_string": old, "new_string": new});
    // The first touch starts the server; the clean file has no errors.
    let first = p.call("diagnostics", json!({"path": "src/lib.rs"})).await;
    assert!(!first.is_error, "{}", first.joined_text());

    let broken = p.call("edit_file", edit("util::double(21)", "util::double(\"21\")")).await;
    assert!(!broken.is_error, "{}", broken.joined_text());
    let said = notices(&broken);
    assert!(said.contains("from the Rust language server"), "{said}");
    assert!(said.contains("src/lib.rs:4:"), "{said}");
    assert!(said.contains("src/lib.rs:4:18: expected i32, found &"), "{said}");
    assert!(said.contains("[E0308]"), "{said}");

    let fixed = p.call("edit_file", edit("util::double(\"21\")", "util::double(21)")).await;
    let said = notices(&fixed);
    assert!(said.contains("no errors now"), "{said}");

    let def = p
        .call(
            "code_navigation",
            json!({"action": "definition", "path": "src/lib.rs", "line": 4, "column": 11}),
        )
        .await;
    let text = def.joined_text();
    assert!(!def.is_error, "{text}");
    assert!(text.contains("src/util.rs:1:"), "{text}");
    p.close().await;
}
