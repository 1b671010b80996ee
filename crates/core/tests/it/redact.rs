//! The redaction step of the chain: with a secret installed, what a tool returns is clean in the
//! result, in the spill file of a truncated result (`.hands/outputs/`) and in the dedup cache, and
//! a queued notice, an approval request and a progress message are clean too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::{Arc, Mutex, Once};

use common::Echo;
use hands_core::approval::{ApprovalRequest, Approver, ApproverHandle, Decision};
use hands_core::config::OutputConfig;
use hands_core::redact::{self, Literals};
use hands_core::{
    BoxFuture, CancellationToken, Context, CoreConfig, Notice, NoticeKind, Progress, Registry,
    Session, ToolCall,
};
use serde_json::json;

const CANARY: &str = "canary-5e0b-spill-value";

/// Every test of this binary installs the same engine (the slot is process-wide).
fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        redact::install(Arc::new(Literals(vec![("API_TOKEN".into(), CANARY.into())])));
    });
}

#[tokio::test]
async fn results_spill_files_cache_and_notices_hold_no_secret() {
    install();
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
}

/// Remembers what it was asked, and approves.
#[derive(Default)]
struct Remember(Mutex<Vec<ApprovalRequest>>);

impl Approver for Remember {
    fn approve<'a>(
        &'a self,
        request: &'a ApprovalRequest,
        _cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Decision> {
        self.0.lock().unwrap().push(request.clone());
        Box::pin(async { Decision::Approve })
    }
}

#[tokio::test]
async fn an_approval_request_shows_placeholders() {
    install();
    let (write, runs) = Echo::new("write_file", false);
    let config =
        CoreConfig { approval: hands_core::config::Approval::Ask, ..CoreConfig::default() };
    let registry = Registry::builder(config).tool(write).build();
    let session = Session::new("s", std::env::temp_dir());
    let approver = Arc::new(Remember::default());
    session.insert_extension(ApproverHandle(approver.clone()));
    let call = ToolCall::new("1", "write_file", json!({"text": format!("key={CANARY}")}));
    let out = registry.dispatch(&session, call).await.unwrap();
    assert!(!out.is_error, "{}", out.joined_text());
    assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 1, "the tool got the real value");
    let asked = approver.0.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert!(!asked[0].summary.contains(CANARY), "{}", asked[0].summary);
    assert!(asked[0].summary.contains("[secret:API_TOKEN]"), "{}", asked[0].summary);
    assert_eq!(asked[0].args, json!({"text": "key=[secret:API_TOKEN]"}));
}

#[test]
fn a_progress_message_shows_placeholders() {
    install();
    let session = Session::new("s", std::env::temp_dir());
    let seen: Arc<Mutex<Vec<Progress>>> = Arc::default();
    let sink = Arc::clone(&seen);
    let ctx = Context::new(&session, "c", None)
        .with_progress(Some(Arc::new(move |p| sink.lock().unwrap().push(p))));
    ctx.progress(1.0, None, Some(format!("fetched with {CANARY}")));
    let seen = seen.lock().unwrap();
    assert_eq!(seen[0].message.as_deref(), Some("fetched with [secret:API_TOKEN]"));
}
