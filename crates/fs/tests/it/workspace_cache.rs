#![allow(clippy::unwrap_used, clippy::expect_used)]
//! A session reuses its opened root, but a root deleted and re-created (a fresh clone at the same
//! path) is opened again rather than served from the old, deleted directory.

use hands_core::{CoreConfig, Registry, Session, ToolCall};
use serde_json::json;

#[tokio::test]
async fn a_recreated_root_is_reopened() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("proj");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("a.txt"), "first\n").unwrap();
    let registry =
        hands_fs::register(Registry::builder(CoreConfig::default()), &Default::default()).build();
    let session = Session::new("s", &root);
    let read = |id: &str| ToolCall::new(id, "read_file", json!({"path": "a.txt"}));
    let out = registry.dispatch(&session, read("1")).await.unwrap();
    assert!(out.joined_text().contains("first"), "{}", out.joined_text());

    std::fs::remove_dir_all(&root).unwrap();
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("a.txt"), "second\n").unwrap();
    let out = registry.dispatch(&session, read("2")).await.unwrap();
    assert!(out.joined_text().contains("second"), "{}", out.joined_text());
    let out = registry
        .dispatch(
            &session,
            ToolCall::new("3", "write_file", json!({"path": "b.txt", "content": "x"})),
        )
        .await
        .unwrap();
    assert!(!out.is_error, "{}", out.joined_text());
    assert_eq!(std::fs::read_to_string(root.join("b.txt")).unwrap(), "x");
}

#[tokio::test]
async fn a_root_moved_aside_and_replaced_is_reopened_within_the_recheck_time() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("proj");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("a.txt"), "old\n").unwrap();
    let registry =
        hands_fs::register(Registry::builder(CoreConfig::default()), &Default::default()).build();
    let session = Session::new("s", &root);
    let read = |id: &str| ToolCall::new(id, "read_file", json!({"path": "a.txt"}));
    let out = registry.dispatch(&session, read("1")).await.unwrap();
    assert!(out.joined_text().contains("old"), "{}", out.joined_text());

    // The old folder still exists (not deleted): only the path check can notice.
    std::fs::rename(&root, tmp.path().join("proj.old")).unwrap();
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("a.txt"), "new\n").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(400));
    let out = registry.dispatch(&session, read("2")).await.unwrap();
    assert!(out.joined_text().contains("new"), "{}", out.joined_text());
}
