//! The redaction step of the chain: with a secret installed, what a tool returns is clean in the
//! result, in the spill file of a truncated result (`.hands/outputs/`) and in the dedup cache, and
//! a queued notice is clean too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::Echo;
use hands_core::config::OutputConfig;
use hands_core::redact::{self, Literals};
use hands_core::{CoreConfig, Notice, NoticeKind, Registry, Session, ToolCall};
use serde_json::json;

const CANARY: &str = "canary-5e0b-spill-value";

#[tokio::test]
async fn results_spill_files_cache_and_notices_hold_no_secret() {
    // The only test of this binary: the process-wide slot is ours.
    redact::install(Arc::new(Literals(vec![("API_TOKEN".into(), CANARY.into())])));
    let root = tempfile::tempdir().unwrap();
    let (echo, runs) = Echo::new("read_file", true);
    let config = CoreConfig { output: OutputConfig { max_bytes: 200 }, ..CoreConfig::default() };
    let registry = Registry::builder(config).tool(echo).build();
    let session = Session::new("s", root.path().to_path_buf());
    session.push_notice(Notice::new(NoticeKind::Other, format!("log said {CANARY}")));
    let text = format!("{CANARY} ");
    let call =
        || ToolCall::new("c1", "read_file", json!({"text": text, "count": 50})).in_turn("t1");
    let first = registry.dispatch(&session, call()).await.unwrap();
    let shown = first.joined_text();
    assert!(!shown.contains(CANARY), "{shown}");
    assert!(shown.contains("[secret:API_TOKEN]"), "{shown}");
    assert!(first.notices.iter().all(|n| !n.text.contains(CANARY)), "{:?}", first.notices);
    assert_eq!(first.notices[0].text, "log said [secret:API_TOKEN]");
    // The full text was spilled: redacted there too.
    let outputs = root.path().join(".hands/outputs");
    let mut spilled = 0;
    for entry in std::fs::read_dir(&outputs).unwrap() {
        let body = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        if body.contains("[secret:API_TOKEN]") {
            spilled += 1;
        }
        assert!(!body.contains(CANARY), "{body}");
    }
    assert_eq!(spilled, 1, "no spill file found in {}", outputs.display());
    // Served from the dedup cache: the tool did not run again and the cached copy is clean.
    let second = registry.dispatch(&session, call()).await.unwrap();
    assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert!(!second.joined_text().contains(CANARY));
    redact::install(Arc::new(redact::Nothing));
}
