//! todo_write through the registry: the list is replaced only when it is valid, watchers see each
//! change, and every bad input is an error result that names the problem.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use hands_agent::{MAX_TODOS, Todo, TodoStatus, restore_todos, todos};
use hands_core::config::Approval;
use hands_core::{CoreConfig, Mode, Registry, Session, ToolCall, ToolOutput};
use serde_json::{Value, json};

fn registry(config: CoreConfig) -> Registry {
    hands_agent::register(Registry::builder(config)).build()
}

async fn call(registry: &Registry, session: &Session, args: Value) -> ToolOutput {
    let id = session.next_call_id();
    registry.dispatch(session, ToolCall::new(id, "todo_write", args)).await.unwrap()
}

fn item(id: &str, content: &str, status: &str) -> Value {
    json!({"id": id, "content": content, "status": status})
}

fn three() -> Value {
    json!({"todos": [
        item("1", "Read the failing test", "completed"),
        item("2", "Fix the parser", "in_progress"),
        item("3", "Run the tests", "pending"),
    ]})
}

#[tokio::test]
async fn a_valid_list_replaces_the_old_one_and_is_rendered() {
    let registry = registry(CoreConfig::default());
    let session = Session::new("s", "/tmp");
    let out = call(&registry, &session, three()).await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(
        out.joined_text(),
        "Todo list (3 items: 1 completed, 1 in progress, 1 pending):\n\
         [x] Read the failing test\n[>] Fix the parser\n[ ] Run the tests"
    );
    let structured = out.structured.unwrap();
    assert_eq!(structured["todos"][1], item("2", "Fix the parser", "in_progress"));
    assert_eq!(todos(&session).borrow().len(), 3);

    // The next call replaces, not appends.
    let out =
        call(&registry, &session, json!({"todos": [item("9", " Ship it ", "pending")]})).await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(
        *todos(&session).borrow(),
        vec![Todo { id: "9".into(), content: "Ship it".into(), status: TodoStatus::Pending }]
    );
    assert!(out.joined_text().contains("Nothing is in progress"), "{}", out.joined_text());

    // An empty list clears it.
    let out = call(&registry, &session, json!({"todos": []})).await;
    assert_eq!(out.joined_text(), "The todo list is now empty.");
    assert!(todos(&session).borrow().is_empty());
}

#[tokio::test]
async fn watchers_see_each_change_but_not_a_rejected_or_identical_list() {
    let registry = registry(CoreConfig::default());
    let session = Session::new("s", "/tmp");
    let mut watch = todos(&session);
    assert!(!watch.has_changed().unwrap());

    call(&registry, &session, three()).await;
    assert!(watch.has_changed().unwrap());
    assert_eq!(watch.borrow_and_update()[2].content, "Run the tests");

    // The same list again changes nothing.
    call(&registry, &session, three()).await;
    assert!(!watch.has_changed().unwrap());

    // A rejected list leaves the old one in place, silently.
    let bad = json!({"todos": [item("1", "a", "in_progress"), item("2", "b", "in_progress")]});
    assert!(call(&registry, &session, bad).await.is_error);
    assert!(!watch.has_changed().unwrap());
    assert_eq!(watch.borrow().len(), 3);

    // A waiting watcher wakes up on a change from another task.
    let waiter = tokio::spawn(async move {
        watch.changed().await.unwrap();
        watch.borrow().clone()
    });
    let done = json!({"todos": [item("1", "Read the failing test", "completed")]});
    call(&registry, &session, done).await;
    let seen =
        tokio::time::timeout(std::time::Duration::from_secs(5), waiter).await.unwrap().unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].status, TodoStatus::Completed);

    // Sessions do not share lists.
    assert!(todos(&Session::new("other", "/tmp")).borrow().is_empty());
}

#[tokio::test]
async fn restore_puts_a_stored_list_back_and_tells_watchers() {
    let session = Session::new("s", "/tmp");
    let mut watch = todos(&session);
    let list = vec![Todo { id: "a".into(), content: "x".into(), status: TodoStatus::InProgress }];
    restore_todos(&session, list.clone());
    assert!(watch.has_changed().unwrap());
    assert_eq!(*watch.borrow_and_update(), list);
    restore_todos(&session, list);
    assert!(!watch.has_changed().unwrap());
}

/// Bad input: each is an error result naming the problem, and the list stays as it was.
#[tokio::test]
async fn bad_lists_are_refused_with_what_to_fix() {
    let registry = registry(CoreConfig::default());
    let session = Session::new("s", "/tmp");
    call(&registry, &session, three()).await;
    let huge: Vec<Value> =
        (0..=MAX_TODOS).map(|i| item(&i.to_string(), "step", "pending")).collect();
    let cases: Vec<(Value, &[&str])> = vec![
        (
            json!({"todos": [item("a", "x", "in_progress"), item("b", "y", "in_progress"), item("c", "z", "pending")]}),
            &["2 items are in_progress (`a`, `b`)", "at most one"],
        ),
        (
            json!({"todos": [item("1", "x", "pending"), item("1", "y", "pending")]}),
            &["the id `1` is used by items 1, 2", "unique"],
        ),
        (json!({"todos": [item("1", "  ", "pending")]}), &["item 1 has empty `content`"]),
        (json!({"todos": [item("", "x", "pending")]}), &["item 1 has an empty `id`"]),
        (json!({"todos": huge}), &["101 items", "at most 100"]),
        (
            json!({"todos": [item("1", &"long ".repeat(500), "pending")]}),
            &["item 1's `content` has 2499 characters"],
        ),
        // Wrong types and shapes: the parser names the field.
        (json!({"todos": "1. read 2. fix"}), &["field `todos`", "expected a sequence"]),
        (
            json!({"todos": [item("1", "x", "done")]}),
            &["todos[0].status", "unknown variant `done`"],
        ),
        (
            json!({"todos": [{"id": 1, "content": "x", "status": "pending"}]}),
            &["todos[0].id", "expected a string"],
        ),
        (json!({"todos": [{"id": "1", "status": "pending"}]}), &["missing field `content`"]),
        (
            json!({"todos": [{"id": "1", "content": "x", "status": "pending", "priority": "high"}]}),
            &["unknown field `priority`"],
        ),
        (json!({}), &["missing field `todos`"]),
        (json!({"todos": [], "extra": 1}), &["unknown field `extra`"]),
    ];
    for (args, expected) in cases {
        let out = call(&registry, &session, args.clone()).await;
        let text = out.joined_text();
        assert!(out.is_error, "{args}: {text}");
        for part in expected {
            assert!(text.contains(part), "{args}: expected {part:?} in {text}");
        }
        assert_eq!(todos(&session).borrow().len(), 3, "{args} changed the list");
    }
}

#[tokio::test]
async fn it_needs_no_approval_changes_nothing_on_disk_and_plan_mode_does_not_offer_it() {
    // Under approval = "ask" with nobody to ask, a tool that needs approval is refused; the todo
    // list is the model's own notes, so it goes through.
    let registry = registry(CoreConfig { approval: Approval::Ask, ..CoreConfig::default() });
    let spec = registry.get("todo_write").unwrap().spec().clone();
    assert!(!spec.needs_approval && !spec.annotations.read_only && !spec.annotations.destructive);
    assert!(spec.output_schema.is_some());
    let session = Session::new("s", "/tmp");
    let out = call(&registry, &session, three()).await;
    assert!(!out.is_error, "{out:?}");

    session.set_mode(Mode::Plan);
    let out = call(&registry, &session, three()).await;
    assert!(out.is_error && out.joined_text().contains("not available in plan mode"), "{out:?}");
}
