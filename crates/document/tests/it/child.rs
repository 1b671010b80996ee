//! Issue 15, item 4: the parent side of the child process. A child that never answers is killed
//! with its whole process group at the time limit; a cancelled parse stops at once; a child that
//! dies says so. (The real child, `hands __parse-document`, is driven in crates/cli/tests.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use hands_core::CancellationToken;
use hands_core::document::{DocumentError, DocumentParser, DocumentRequest};
use hands_document::{ChildCommand, ChildParser, Limits};

fn sh(script: &str, limits: Limits) -> ChildParser {
    ChildParser::new(
        ChildCommand {
            program: "sh".into(),
            args: vec!["-c".into(), script.into(), "child".into()],
            env: Vec::new(),
        },
        limits,
    )
}

#[tokio::test]
async fn a_child_that_stalls_is_killed_with_its_group_at_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("grandchild");
    // The grandchild would write its marker after 3 s: killing the group stops it too.
    let script = format!("(sleep 3; touch {}) & sleep 30", marker.display());
    let parser = sh(&script, Limits { timeout: Duration::from_millis(700), ..Limits::default() });
    let started = Instant::now();
    let err = parser
        .parse(b"%PDF-1.7".to_vec(), "a.pdf", DocumentRequest::default(), CancellationToken::new())
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    assert!(
        matches!(err, DocumentError::Limit(_)) && err.to_string().contains("longer than 0 s"),
        "{err}"
    );
    std::thread::sleep(Duration::from_millis(3500));
    assert!(!marker.exists(), "the grandchild outlived the timeout");
}

#[tokio::test]
async fn a_cancelled_parse_stops_at_once() {
    let parser = sh("sleep 30", Limits::default());
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let err =
        parser.parse(b"x".to_vec(), "a.txt", DocumentRequest::default(), cancel).await.unwrap_err();
    assert_eq!(err, DocumentError::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn a_child_that_dies_or_babbles_is_an_error_not_a_result() {
    let err = sh("cat >/dev/null; echo not json; exit 3", Limits::default())
        .parse(b"x".to_vec(), "a.txt", DocumentRequest::default(), CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(err, DocumentError::Internal(_)) && err.to_string().contains("failed"),
        "{err}"
    );
    let err = sh(
        "cat >/dev/null; echo 'memory allocation of 2147483648 bytes failed' >&2; kill -ABRT $$",
        Limits::default(),
    )
    .parse(b"x".to_vec(), "a.txt", DocumentRequest::default(), CancellationToken::new())
    .await
    .unwrap_err();
    assert!(
        matches!(err, DocumentError::Limit(_))
            && err.to_string().contains("more than 1024 MB of memory"),
        "{err}"
    );
    let big = ChildParser::new(
        ChildCommand { program: "true".into(), args: vec![], env: vec![] },
        Limits { max_file_bytes: 4, ..Limits::default() },
    );
    let err = big
        .parse(b"12345".to_vec(), "a.txt", DocumentRequest::default(), CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(err, DocumentError::Limit(_)), "{err}");
}

#[tokio::test]
async fn the_child_gets_no_environment_but_its_path() {
    // SAFETY-free: the variable is read by the child, not by this process.
    let parser = sh(
        "cat >/dev/null; printf '{\"ok\":{\"text\":\"%s\",\"format\":\"text\",\"parts\":null,\"notes\":[]}}' \"${HOME:-none}-${PATH:+path}\"",
        Limits::default(),
    );
    let doc = parser
        .parse(b"x".to_vec(), "a.txt", DocumentRequest::default(), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(doc.text, "none-path");
}
