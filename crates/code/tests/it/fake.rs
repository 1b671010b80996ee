//! Servers that misbehave (fixtures/fake_server.py): one that crashes is restarted, then given
//! up on; one that hangs on initialize is bounded by the timeout and reported; one that floods is
//! cut to 20 lines and the rest counted. Their stderr never reaches the model unredacted.

use std::path::Path;

use hands_code::CodeConfig;
use serde_json::json;

use crate::common::{Project, notices};

fn fake(mode: &str, starts: &Path) -> CodeConfig {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/fixtures/fake_server.py");
    let argv = vec![
        "python3".to_owned(),
        script.to_string_lossy().into_owned(),
        mode.to_owned(),
        starts.to_string_lossy().into_owned(),
    ];
    let mut config = CodeConfig::default();
    config.servers.insert("python".into(), argv);
    config.max_restarts = 2;
    config.initialize_timeout_ms = 1_000;
    config.diagnostics_wait_ms = 20_000;
    config
}

fn starts(path: &Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |t| t.lines().count())
}

/// Replaces the fake server's token, as the binary's redactor replaces stored secrets.
struct Token;

const TOKEN: &[u8] = b"sk-live-abcdefghijklmnopqrstuvwx";

impl hands_core::redact::Redactor for Token {
    fn redact(&self, input: &[u8], _more: bool, out: &mut Vec<u8>) -> usize {
        let text = String::from_utf8_lossy(input)
            .replace(std::str::from_utf8(TOKEN).unwrap(), "[redacted:test]");
        out.extend_from_slice(text.as_bytes());
        input.len()
    }

    fn finds(&self, input: &[u8]) -> bool {
        input.windows(TOKEN.len()).any(|w| w == TOKEN)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashing_server_is_restarted_then_given_up_on() {
    hands_core::redact::install(std::sync::Arc::new(Token));
    let log = tempfile::NamedTempFile::new().unwrap();
    let p = Project::new(&[], fake("crash", log.path()));
    let mut said = Vec::new();
    for i in 0..5 {
        let out =
            p.call("write_file", json!({"path": "a.py", "content": format!("x = {i}\n")})).await;
        assert!(!out.is_error, "{}", out.joined_text());
        said.push(notices(&out));
    }
    let all = said.join("\n");
    assert!(all.contains("the Python language server exited with code 3"), "{all}");
    assert!(
        all.contains("restarting the Python language server (restart 1 of at most 2)"),
        "{all}"
    );
    assert!(all.contains("restart 2 of at most 2"), "{all}");
    assert!(all.contains("hands gave up on it for this session"), "{all}");
    assert!(all.contains("its stderr ends: fake server starting, token=[redacted:test]"), "{all}");
    assert!(!all.contains("sk-live-abcdefghijklmnopqrstuvwx"), "a secret from stderr: {all}");
    assert_eq!(starts(log.path()), 3, "one start and two restarts: {all}");
    // Given up: later writes do not start it again, and the tools say why.
    let out = p.call("diagnostics", json!({"path": "a.py"})).await;
    assert!(out.joined_text().contains("gave up"), "{}", out.joined_text());
    assert_eq!(starts(log.path()), 3);
    p.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_hangs_on_initialize_is_bounded_and_reported() {
    let log = tempfile::NamedTempFile::new().unwrap();
    let p = Project::new(&[], fake("hang", log.path()));
    let out = p.call("write_file", json!({"path": "a.py", "content": "x = 1\n"})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    let said = notices(&out);
    assert!(said.contains("did not answer initialize within 1000 ms"), "{said}");
    let nav =
        p.call("code_navigation", json!({"action": "document_symbols", "path": "a.py"})).await;
    assert!(
        nav.is_error && nav.joined_text().contains("did not answer initialize"),
        "{}",
        nav.joined_text()
    );
    let third = p.call("diagnostics", json!({"path": "a.py"})).await;
    assert!(third.joined_text().contains("gave up"), "{}", third.joined_text());
    assert_eq!(starts(log.path()), 3);
    p.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_diagnostics_is_cut_to_twenty_and_counted() {
    let log = tempfile::NamedTempFile::new().unwrap();
    let mut config = fake("flood", log.path());
    config.max_diagnostics_per_file = 100;
    let p = Project::new(&[], config);
    let out = p.call("write_file", json!({"path": "a.py", "content": "x = 1\n"})).await;
    let said = notices(&out);
    assert!(said.starts_with("500 new errors from the Python language server:"), "{said}");
    assert_eq!(
        said.lines().filter(|l| l.starts_with("a.py:")).count(),
        hands_code::MAX_SHOWN,
        "{said}"
    );
    assert!(said.contains("a.py:1:1: flood error 0 [F0]"), "{said}");
    assert!(said.ends_with("… and 480 more"), "{said}");
    let listed = p.call("diagnostics", json!({"path": "a.py", "limit": 10})).await;
    let s = listed.structured.as_ref().unwrap();
    assert_eq!((s["total"].as_u64(), s["problems"].as_array().unwrap().len()), (Some(500), 10));
    p.close().await;
}

/// A cold server publishes its syntax-only check at once and the type errors after loading the
/// project, with a work-done progress around the load: the wait does not end on the first,
/// empty publish (a quiet pause while the server is busy is not the answer).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_loading_its_project_is_waited_for() {
    let dir = tempfile::tempdir().unwrap();
    let starts_file = dir.path().join("starts");
    let p = Project::new(&[("app/main.py", "x = 1\n")], fake("loading", &starts_file));
    let out = p.call("diagnostics", json!({"path": "app/main.py"})).await;
    let text = out.joined_text();
    assert!(!out.is_error, "{text}");
    assert!(text.contains("app/main.py:1:5: found once the project loaded [L1]"), "{text}");
    assert_eq!(out.structured.as_ref().unwrap()["total"], 1, "{text}");
    p.close().await;
}
