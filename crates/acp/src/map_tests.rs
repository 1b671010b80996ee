use std::path::Path;

use agent_client_protocol::v1::schema::{ToolCallContent, ToolKind};
use hands_core::{Family, Label};
use serde_json::json;

use super::*;

// Tools as the registry describes them (no tool is named: the facts decide).
const COMMAND: Info =
    Info { family: Family::Processes, read_only: false, label: Label::Key { key: "command" } };
const READ: Info =
    Info { family: Family::Files, read_only: true, label: Label::Key { key: "path" } };
const WRITE: Info =
    Info { family: Family::Files, read_only: false, label: Label::Key { key: "path" } };
const PATCH: Info = Info { family: Family::Files, read_only: false, label: Label::Nothing };
const PLAN: Info =
    Info { family: Family::Session, read_only: true, label: Label::Plan { key: "plan" } };
const SEARCH: Info =
    Info { family: Family::Search, read_only: true, label: Label::Key { key: "pattern" } };
const WEB: Info = Info { family: Family::Web, read_only: true, label: Label::Key { key: "query" } };
const TODOS: Info = Info {
    family: Family::Session,
    read_only: true,
    label: Label::Count { key: "todos", noun: "item" },
};
const OTHER: Info = Info { family: Family::Mcp, read_only: false, label: Label::Arguments };

#[test]
fn tools_map_to_acp_kinds_by_family_and_annotations() {
    assert_eq!(kind(&READ), ToolKind::Read);
    assert_eq!(kind(&WRITE), ToolKind::Edit);
    assert_eq!(kind(&PATCH), ToolKind::Edit);
    assert_eq!(kind(&SEARCH), ToolKind::Search);
    assert_eq!(kind(&COMMAND), ToolKind::Execute);
    assert_eq!(kind(&WEB), ToolKind::Fetch);
    assert_eq!(kind(&TODOS), ToolKind::Think);
    assert_eq!(kind(&PLAN), ToolKind::SwitchMode);
    assert_eq!(kind(&OTHER), ToolKind::Other);
    let listing = Info { family: Family::Mcp, read_only: true, label: Label::Arguments };
    assert_eq!(kind(&listing), ToolKind::Read);
}

#[test]
fn titles_follow_what_editors_show() {
    assert_eq!(title("run", &COMMAND, &json!({"command": "echo `hi`"})), "`echo \\`hi\\``");
    assert_eq!(title("read", &READ, &json!({"path": "a.txt"})), "Read a.txt");
    assert_eq!(
        title("write", &WRITE, &json!({"path": "src/m.rs", "content": "x"})),
        "Edit src/m.rs"
    );
    assert_eq!(title("present", &PLAN, &json!({"plan": "p"})), "Ready to code?");
    let patch =
        "*** Begin Patch\n*** Update File: a.rs\n@@\n-x\n+y\n*** Add File: b.rs\n+z\n*** End Patch";
    assert_eq!(title("patch", &PATCH, &json!({"input": patch})), "Edit a.rs, b.rs");
    assert_eq!(title("find", &WEB, &json!({"query": "q"})), "find q");
    // No main argument: hands' one-line summary.
    assert_eq!(title("remote", &OTHER, &json!({"q": 1})), "remote: {\"q\":1}");
}

#[test]
fn locations_are_absolute_under_the_root() {
    let root = Path::new("/work/app");
    let at = locations(root, &json!({"path": "src/main.rs"}));
    assert_eq!(at.len(), 1);
    assert_eq!(at[0].path, Path::new("/work/app/src/main.rs"));
    let patch = "*** Begin Patch\n*** Delete File: old.rs\n*** Update File: a.rs\n*** Move to: b.rs\n*** End Patch";
    let at = edited_files(root, &PATCH, &json!({"input": patch}));
    assert_eq!(at, vec![root.join("old.rs"), root.join("a.rs"), root.join("b.rs")]);
    assert!(edited_files(root, &COMMAND, &json!({"command": "ls", "path": "x"})).is_empty());
    assert!(edited_files(root, &READ, &json!({"path": "x"})).is_empty());
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
    let shown = finished_content(true, "old_string not found".into(), content);
    assert!(matches!(shown.as_slice(), [ToolCallContent::Content(_)]));
}

#[test]
fn a_proposed_write_or_edit_shows_its_diff_before_it_runs() {
    let root = Path::new("/r");
    let write =
        proposed_diff(root, &WRITE, &json!({"path": "a", "content": "new"}), Some("old".into()));
    let json = serde_json::to_value(&write).unwrap_or_default();
    assert_eq!(json, json!({"type": "diff", "path": "/r/a", "oldText": "old", "newText": "new"}));
    let edit = proposed_diff(
        root,
        &WRITE,
        &json!({"path": "a", "old_string": "b", "new_string": "c"}),
        Some("abab".into()),
    );
    let json = serde_json::to_value(&edit).unwrap_or_default();
    assert_eq!(json, json!({"type": "diff", "path": "/r/a", "oldText": "abab", "newText": "acab"}));
    assert!(proposed_diff(root, &COMMAND, &json!({"command": "ls", "path": "a"}), None).is_none());
}

#[test]
fn command_output_is_the_results_text() {
    let result = json!({"content": [{"type": "text", "text": "line 1"}, {"type": "text", "text": "exit 0"}], "isError": false});
    let text = result_text(&result);
    assert_eq!(text, "line 1\nexit 0");
    let shown = finished_content(false, text, Vec::new());
    let json = serde_json::to_value(&shown).unwrap_or_default();
    assert_eq!(
        json,
        json!([{"type": "content", "content": {"type": "text", "text": "line 1\nexit 0"}}])
    );
}

#[test]
fn permission_choices_map_onto_hands_approvals() {
    let ids: Vec<String> =
        permission_options("write", false).iter().map(|o| o.option_id.0.to_string()).collect();
    assert_eq!(ids, [ALLOW_ONCE, ALLOW_ALWAYS, REJECT]);
    assert_eq!(choice(false, Some(ALLOW_ONCE)), Choice::Once);
    assert_eq!(choice(false, Some(ALLOW_ALWAYS)), Choice::Always);
    assert!(matches!(choice(false, Some(REJECT)), Choice::Reject(why) if why.contains("rejected")));
    assert!(matches!(choice(false, None), Choice::Reject(why) if why.contains("cancelled")));
    assert!(matches!(choice(false, Some("something-else")), Choice::Reject(_)));
    // A plan is approved once or not: no "always".
    let ids: Vec<String> =
        permission_options("present", true).iter().map(|o| o.option_id.0.to_string()).collect();
    assert_eq!(ids, [ALLOW_ONCE, REJECT]);
    assert!(
        matches!(choice(true, Some(ALLOW_ALWAYS)), Choice::Reject(why) if why.contains("plan"))
    );
    assert_eq!(PLAN.plan_key(), Some("plan"));
    assert_eq!(WRITE.plan_key(), None);
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

/// Replaces the canary, as the binary's redactor replaces a stored secret.
struct Canary;

const CANARY: &str = "CANARY_4711_value";

impl hands_core::redact::Redactor for Canary {
    fn redact(&self, input: &[u8], _more: bool, out: &mut Vec<u8>) -> usize {
        let text = String::from_utf8_lossy(input).replace(CANARY, "[secret:TOKEN]");
        out.extend_from_slice(text.as_bytes());
        input.len()
    }

    fn finds(&self, input: &[u8]) -> bool {
        String::from_utf8_lossy(input).contains(CANARY)
    }
}

#[test]
fn diffs_are_redacted_on_both_sides() {
    hands_core::redact::install(std::sync::Arc::new(Canary));
    let before = format!("token={CANARY}\n");
    let after = format!("token={CANARY}\nmore\n");
    let done = diffs(vec![("/r/.env".into(), Some(before.clone()), Some(after))]);
    let write = format!("k={CANARY}");
    let proposed = proposed_diff(
        Path::new("/r"),
        &WRITE,
        &json!({"path": "a", "content": write}),
        Some(before),
    );
    let edit = json!({"path": ".env", "old_string": "more", "new_string": CANARY});
    let edited = proposed_diff(Path::new("/r"), &WRITE, &edit, None);
    let shown = format!(
        "{} {} {}",
        serde_json::to_value(&done).unwrap_or_default(),
        serde_json::to_value(&proposed).unwrap_or_default(),
        serde_json::to_value(&edited).unwrap_or_default()
    );
    hands_core::redact::install(std::sync::Arc::new(hands_core::redact::Nothing));
    assert!(!shown.contains(CANARY), "{shown}");
    assert!(shown.contains(r#""newText":"token=[secret:TOKEN]\nmore\n""#), "{shown}");
    assert!(shown.contains(r#""oldText":"token=[secret:TOKEN]\n""#), "{shown}");
    assert!(shown.contains(r#""newText":"k=[secret:TOKEN]""#), "{shown}");
}
