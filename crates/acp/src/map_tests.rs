use std::path::Path;

use agent_client_protocol::v1::schema::{ToolCallContent, ToolKind};
use serde_json::json;

use super::*;

#[test]
fn tools_map_to_acp_kinds() {
    assert_eq!(kind("read_file"), ToolKind::Read);
    assert_eq!(kind("write_file"), ToolKind::Edit);
    assert_eq!(kind("edit_file"), ToolKind::Edit);
    assert_eq!(kind("apply_patch"), ToolKind::Edit);
    assert_eq!(kind("grep"), ToolKind::Search);
    assert_eq!(kind("bash"), ToolKind::Execute);
    assert_eq!(kind("spawn_process"), ToolKind::Execute);
    assert_eq!(kind("web_search"), ToolKind::Fetch);
    assert_eq!(kind("todo_write"), ToolKind::Think);
    assert_eq!(kind("exit_plan_mode"), ToolKind::SwitchMode);
    assert_eq!(kind("mcp__github__list_issues"), ToolKind::Other);
}

#[test]
fn titles_follow_what_editors_show() {
    assert_eq!(title("bash", &json!({"command": "echo `hi`"})), "`echo \\`hi\\``");
    assert_eq!(title("write_file", &json!({"path": "a.txt", "content": "x"})), "Write a.txt");
    assert_eq!(title("edit_file", &json!({"path": "src/m.rs"})), "Edit `src/m.rs`");
    assert_eq!(title("exit_plan_mode", &json!({"plan": "p"})), "Ready to code?");
    let patch =
        "*** Begin Patch\n*** Update File: a.rs\n@@\n-x\n+y\n*** Add File: b.rs\n+z\n*** End Patch";
    assert_eq!(title("apply_patch", &json!({"input": patch})), "Edit a.rs, b.rs");
    // Any other tool: hands' one-line summary.
    assert_eq!(title("web_search", &json!({"query": "q"})), "web_search: {\"query\":\"q\"}");
}

#[test]
fn locations_are_absolute_under_the_root() {
    let root = Path::new("/work/app");
    let at = locations(root, "read_file", &json!({"path": "src/main.rs"}));
    assert_eq!(at.len(), 1);
    assert_eq!(at[0].path, Path::new("/work/app/src/main.rs"));
    let patch = "*** Begin Patch\n*** Delete File: old.rs\n*** Update File: a.rs\n*** Move to: b.rs\n*** End Patch";
    let at = edited_files(root, "apply_patch", &json!({"input": patch}));
    assert_eq!(at, vec![root.join("old.rs"), root.join("a.rs"), root.join("b.rs")]);
    assert!(edited_files(root, "bash", &json!({"command": "ls"})).is_empty());
}

#[test]
fn a_changed_file_is_a_diff_with_old_and_new_text() {
    let changes = vec![
        ("/r/new.txt".into(), None, Some("hello\n".to_owned())),
        ("/r/same.txt".into(), Some("x".to_owned()), Some("x".to_owned())),
        ("/r/edited.txt".into(), Some("a\n".to_owned()), Some("b\n".to_owned())),
    ];
    let content = diffs(changes);
    let json = serde_json::to_value(&content).unwrap_or_default();
    assert_eq!(
        json,
        json!([
            // A new file: no oldText.
            {"type": "diff", "path": "/r/new.txt", "newText": "hello\n"},
            {"type": "diff", "path": "/r/edited.txt", "oldText": "a\n", "newText": "b\n"},
        ])
    );
    // A failed edit shows its error text, not a diff.
    let shown = finished_content("edit_file", true, "old_string not found".into(), content);
    assert!(matches!(shown.as_slice(), [ToolCallContent::Content(_)]));
}

#[test]
fn a_proposed_write_or_edit_shows_its_diff_before_it_runs() {
    let root = Path::new("/r");
    let write = proposed_diff(
        root,
        "write_file",
        &json!({"path": "a", "content": "new"}),
        Some("old".into()),
    );
    let json = serde_json::to_value(&write).unwrap_or_default();
    assert_eq!(json, json!({"type": "diff", "path": "/r/a", "oldText": "old", "newText": "new"}));
    let edit = proposed_diff(
        root,
        "edit_file",
        &json!({"path": "a", "old_string": "b", "new_string": "c"}),
        Some("abab".into()),
    );
    let json = serde_json::to_value(&edit).unwrap_or_default();
    assert_eq!(json, json!({"type": "diff", "path": "/r/a", "oldText": "abab", "newText": "acab"}));
    assert!(proposed_diff(root, "bash", &json!({"command": "ls"}), None).is_none());
}

#[test]
fn bash_output_is_the_results_text() {
    let result = json!({"content": [{"type": "text", "text": "line 1"}, {"type": "text", "text": "exit 0"}], "isError": false});
    let text = result_text(&result);
    assert_eq!(text, "line 1\nexit 0");
    let shown = finished_content("bash", false, text, Vec::new());
    let json = serde_json::to_value(&shown).unwrap_or_default();
    assert_eq!(
        json,
        json!([{"type": "content", "content": {"type": "text", "text": "line 1\nexit 0"}}])
    );
}

#[test]
fn permission_choices_map_onto_hands_approvals() {
    let ids: Vec<String> =
        permission_options("write_file").iter().map(|o| o.option_id.0.to_string()).collect();
    assert_eq!(ids, [ALLOW_ONCE, ALLOW_ALWAYS, REJECT]);
    assert_eq!(choice("write_file", Some(ALLOW_ONCE)), Choice::Once);
    assert_eq!(choice("write_file", Some(ALLOW_ALWAYS)), Choice::Always);
    assert!(
        matches!(choice("write_file", Some(REJECT)), Choice::Reject(why) if why.contains("rejected"))
    );
    assert!(matches!(choice("write_file", None), Choice::Reject(why) if why.contains("cancelled")));
    assert!(matches!(choice("write_file", Some("something-else")), Choice::Reject(_)));
    // A plan is approved once or not: no "always".
    let ids: Vec<String> =
        permission_options("exit_plan_mode").iter().map(|o| o.option_id.0.to_string()).collect();
    assert_eq!(ids, [ALLOW_ONCE, REJECT]);
    assert!(
        matches!(choice("exit_plan_mode", Some(ALLOW_ALWAYS)), Choice::Reject(why) if why.contains("plan"))
    );
}

#[test]
fn todos_become_plan_entries_and_modes_session_modes() {
    let todos = json!([
        {"id": "1", "content": "read", "status": "completed"},
        {"id": "2", "content": "write", "status": "in_progress"},
        {"id": "3", "content": "test", "status": "pending"},
    ]);
    let json = serde_json::to_value(plan_entries(&todos)).unwrap_or_default();
    assert_eq!(json[0]["status"], "completed");
    assert_eq!(json[1]["status"], "in_progress");
    assert_eq!(json[2]["content"], "test");
    assert_eq!(mode_of("plan"), Some(Mode::Plan));
    assert_eq!(mode_of(mode_id(Mode::Build)), Some(Mode::Build));
    assert_eq!(mode_of("yolo"), None);
    let state = serde_json::to_value(modes(Mode::Plan)).unwrap_or_default();
    assert_eq!(state["currentModeId"], "plan");
    assert_eq!(state["availableModes"].as_array().map(Vec::len), Some(2));
}
