#![allow(clippy::unwrap_used, clippy::expect_used)]
//! What the approval of a write shows: a new file's content, an existing file's diff, an edit's
//! diff; a call whose arguments do not parse is refused before anybody is asked.

use crate::common;

use std::sync::{Arc, Mutex};

use common::Project;
use hands_core::BoxFuture;
use hands_core::approval::{ApprovalRequest, Approver, ApproverHandle, Decision};
use hands_core::config::Approval;
use serde_json::json;

/// Approves everything and keeps what it was asked.
#[derive(Default)]
struct Recorder(Mutex<Vec<ApprovalRequest>>);

impl Approver for Recorder {
    fn approve<'a>(
        &'a self,
        request: &'a ApprovalRequest,
        _cancel: &'a hands_core::CancellationToken,
    ) -> BoxFuture<'a, Decision> {
        self.0.lock().unwrap().push(request.clone());
        Box::pin(async { Decision::Approve })
    }
}

fn asking() -> (Project, Arc<Recorder>) {
    let core = hands_core::CoreConfig { approval: Approval::Ask, ..Default::default() };
    let p = Project::with_configs(core, hands_fs::FsConfig::default());
    let recorder = Arc::new(Recorder::default());
    p.session.insert_extension(ApproverHandle(recorder.clone()));
    (p, recorder)
}

fn last_details(recorder: &Recorder) -> String {
    recorder.0.lock().unwrap().last().unwrap().details.clone().expect("details")
}

#[tokio::test]
async fn a_new_file_shows_its_content_and_an_existing_one_its_diff() {
    let (p, asked) = asking();
    p.ok("write_file", json!({"path": "src/a.py", "content": "print('one')\nprint('two')\n"}))
        .await;
    let details = last_details(&asked);
    assert_eq!(details, "new file, 2 lines:\nprint('one')\nprint('two')\n");

    p.ok("write_file", json!({"path": "src/a.py", "content": "print('one')\nprint('2')\n"})).await;
    let details = last_details(&asked);
    assert!(details.contains("--- a/src/a.py") && details.contains("+++ b/src/a.py"), "{details}");
    assert!(details.contains("-print('two')\n+print('2')"), "{details}");
    assert!(details.contains(" print('one')"), "context line: {details}");
}

#[tokio::test]
async fn an_edit_shows_the_diff_it_will_make() {
    let (p, asked) = asking();
    p.put("app.js", "const a = 1;\nconst b = 2;\n");
    p.ok("edit_file", json!({"path": "app.js", "old_string": "b = 2", "new_string": "b = 3"}))
        .await;
    let details = last_details(&asked);
    assert!(details.contains("-const b = 2;\n+const b = 3;"), "{details}");
    assert_eq!(p.get("app.js"), b"const a = 1;\nconst b = 3;\n");
}

#[tokio::test]
async fn an_edit_or_a_write_that_would_fail_is_refused_before_anybody_is_asked() {
    let (p, asked) = asking();
    p.put("app.js", "const a = 1;\n");
    let err =
        p.err("edit_file", json!({"path": "app.js", "old_string": "zzz", "new_string": "y"})).await;
    assert!(err.contains("not found"), "{err}");
    // Outside the project, and into .git: refused by the review, as the write itself would.
    let out = p.call("write_file", json!({"path": "../escape.txt", "content": "x"})).await;
    assert!(out.is_error, "{}", out.joined_text());
    std::fs::create_dir_all(p.path(".git")).unwrap();
    let out = p.call("write_file", json!({"path": ".git/config", "content": "x"})).await;
    assert!(out.is_error, "{}", out.joined_text());
    assert!(asked.0.lock().unwrap().is_empty(), "asked about a call that cannot run");
    assert_eq!(std::fs::read_to_string(p.path("app.js")).unwrap(), "const a = 1;\n");
    assert!(!p.path(".git/config").exists());
}

#[tokio::test]
async fn malformed_arguments_are_refused_before_anybody_is_asked() {
    let (p, asked) = asking();
    let out = p.call("write_file", json!({"path": "a.txt"})).await;
    assert!(out.is_error, "{}", out.joined_text());
    assert!(out.joined_text().contains("content"), "{}", out.joined_text());
    assert!(asked.0.lock().unwrap().is_empty(), "asked about a call that cannot run");
    assert!(!p.path("a.txt").exists());
}
