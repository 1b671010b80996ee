//! todo_write: the session's task list. Each call checks the whole new list (ids unique and not
//! empty, content not empty, at most one item in progress, at most [`MAX_TODOS`] items) and then
//! replaces the old one. The list lives in a session extension as a `watch` channel, so that front
//! ends see every change ([`todos`]: the session API streams "todo changed" events) and a resumed
//! session gets its list back ([`restore_todos`]).

use std::borrow::Cow;
use std::collections::BTreeMap;

use hands_core::{Annotations, Context, Session, Tool, ToolError, ToolOutput};
use hands_core::{Family, Label, Policy};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

/// Items a list may hold.
pub const MAX_TODOS: usize = 100;

/// Characters one item's content may have (an item is one line, not a document).
pub const MAX_CONTENT_CHARS: usize = 2000;

/// Where an item stands: `pending`, `in_progress` or `completed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)] // The variants are the wire names, documented on the type.
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
}

impl TodoStatus {
    fn mark(self) -> &'static str {
        match self {
            Self::Pending => "[ ]",
            Self::InProgress => "[>]",
            Self::Completed => "[x]",
        }
    }
}

/// One item of the list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Todo {
    /// Short, unique.
    pub id: String,
    /// One line.
    pub content: String,
    /// Status.
    pub status: TodoStatus,
}

/// todo_write's arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TodoWriteArgs {
    /// The whole list, in order.
    pub todos: Vec<Todo>,
}

/// The structured result: the list as it is now.
#[derive(Debug, Serialize, JsonSchema)]
struct TodoList<'a> {
    /// The items, in order.
    todos: &'a [Todo],
}

/// The session's list, as a watch channel (the sender lives in the session).
struct TodoState(watch::Sender<Vec<Todo>>);

impl Default for TodoState {
    fn default() -> Self {
        Self(watch::Sender::new(Vec::new()))
    }
}

/// The session's todo list now and as it changes: every todo_write that changes the list sends it.
pub fn todos(session: &Session) -> watch::Receiver<Vec<Todo>> {
    session.extension::<TodoState>().0.subscribe()
}

/// Put `list` in the session as its todo list (a resumed session gets its stored list back).
/// Watchers see it as a change when it differs from the current list.
pub fn restore_todos(session: &Session, list: Vec<Todo>) {
    session.extension::<TodoState>().0.send_if_modified(|current| {
        let changed = *current != list;
        *current = list;
        changed
    });
}

/// The todo_write tool.
#[derive(Debug, Clone)]
pub struct TodoWrite {
    max_items: usize,
}

impl Default for TodoWrite {
    fn default() -> Self {
        Self { max_items: MAX_TODOS }
    }
}

impl Tool for TodoWrite {
    type Args = TodoWriteArgs;

    fn name(&self) -> &'static str {
        "todo_write"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("todo_write.md"))
    }

    fn annotations(&self) -> Annotations {
        // It changes the session's state, never the project; writing the same list twice changes
        // nothing more.
        Annotations { read_only: false, destructive: false, idempotent: true, open_world: false }
    }

    fn policy(&self) -> Policy {
        Policy::from_annotations(self.annotations())
            .label(Label::Count { key: "todos", noun: "item" })
            .family(Family::Session)
            .on_host()
    }

    /// The list is the model's own notes: nothing for the user to approve.
    fn needs_approval(&self) -> bool {
        false
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        Some(hands_core::output_schema_for::<TodoList<'static>>())
    }

    async fn call(&self, ctx: Context, args: TodoWriteArgs) -> Result<ToolOutput, ToolError> {
        let list = checked(args.todos, self.max_items)?;
        let text = render(&list);
        let structured = serde_json::to_value(TodoList { todos: &list })
            .map_err(|err| ToolError::Fatal(format!("todo list to JSON: {err}")))?;
        restore_todos(ctx.session(), list);
        Ok(ToolOutput::text(text).with_structured(structured))
    }
}

/// The list with ids and content trimmed, or an error naming every problem.
fn checked(todos: Vec<Todo>, max_items: usize) -> Result<Vec<Todo>, ToolError> {
    if todos.len() > max_items {
        return Err(ToolError::model(format!(
            "`todos` has {} items; the list holds at most {max_items}. Merge small steps into \
             larger ones or leave out finished work, then call todo_write again with the whole list.",
            todos.len()
        )));
    }
    let list: Vec<Todo> = todos
        .into_iter()
        .map(|t| Todo { id: t.id.trim().to_owned(), content: t.content.trim().to_owned(), ..t })
        .collect();
    let mut problems = Vec::new();
    let mut positions: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (index, todo) in list.iter().enumerate() {
        let n = index + 1;
        if todo.id.is_empty() {
            problems.push(format!(
                "item {n} has an empty `id`: give every item a short id such as \"{n}\""
            ));
        } else {
            positions.entry(todo.id.as_str()).or_default().push(n);
        }
        if todo.content.is_empty() {
            problems.push(format!("item {n} has empty `content`: say what the step is"));
        } else if todo.content.chars().count() > MAX_CONTENT_CHARS {
            problems.push(format!(
                "item {n}'s `content` has {} characters: keep each item to one line (at most \
                 {MAX_CONTENT_CHARS})",
                todo.content.chars().count()
            ));
        }
    }
    for (id, at) in positions.iter().filter(|(_, at)| at.len() > 1) {
        let at: Vec<String> = at.iter().map(ToString::to_string).collect();
        problems
            .push(format!("the id `{id}` is used by items {}: ids must be unique", at.join(", ")));
    }
    let busy: Vec<String> = list
        .iter()
        .filter(|t| t.status == TodoStatus::InProgress)
        .map(|t| format!("`{}`", t.id))
        .collect();
    if busy.len() > 1 {
        problems.push(format!(
            "{} items are in_progress ({}), but at most one may be: keep the one you are \
             working on in_progress and set the others to pending or completed",
            busy.len(),
            busy.join(", ")
        ));
    }
    if problems.is_empty() {
        Ok(list)
    } else {
        Err(ToolError::model(format!(
            "The todo list was not changed:\n- {}\nFix the list and call todo_write again with \
             every item.",
            problems.join("\n- ")
        )))
    }
}

/// `[x] done`, `[>] in progress`, `[ ] pending`, under a count, with a hint when nothing is in
/// progress.
fn render(list: &[Todo]) -> String {
    if list.is_empty() {
        return "The todo list is now empty.".to_owned();
    }
    let count = |status| list.iter().filter(|t| t.status == status).count();
    let (done, busy, pending) =
        (count(TodoStatus::Completed), count(TodoStatus::InProgress), count(TodoStatus::Pending));
    let mut text = format!(
        "Todo list ({} item{}: {done} completed, {busy} in progress, {pending} pending):\n",
        list.len(),
        if list.len() == 1 { "" } else { "s" }
    );
    for todo in list {
        text.push_str(todo.status.mark());
        text.push(' ');
        text.push_str(&todo.content);
        text.push('\n');
    }
    if pending == 0 && busy == 0 {
        text.push_str("Every item is completed.");
    } else if busy == 0 {
        text.push_str("Nothing is in progress: mark the next item in_progress when you start it.");
    }
    text.trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn todo(id: &str, content: &str, status: TodoStatus) -> Todo {
        Todo { id: id.into(), content: content.into(), status }
    }

    #[test]
    fn render_marks_each_status() {
        let list = [
            todo("1", "read", TodoStatus::Completed),
            todo("2", "fix", TodoStatus::InProgress),
            todo("3", "test", TodoStatus::Pending),
        ];
        assert_eq!(
            render(&list),
            "Todo list (3 items: 1 completed, 1 in progress, 1 pending):\n[x] read\n[>] fix\n[ ] test"
        );
        assert!(render(&list[2..]).ends_with("mark the next item in_progress when you start it."));
        assert!(render(&list[..1]).ends_with("Every item is completed."));
    }

    #[test]
    fn checked_reports_every_problem_at_once() {
        let err = checked(
            vec![
                todo("a", "x", TodoStatus::InProgress),
                todo(" a ", "y", TodoStatus::InProgress),
                todo("", " ", TodoStatus::Pending),
            ],
            MAX_TODOS,
        )
        .unwrap_err()
        .to_string();
        for part in [
            "item 3 has an empty `id`",
            "item 3 has empty `content`",
            "the id `a` is used by items 1, 2",
            "2 items are in_progress (`a`, `a`)",
        ] {
            assert!(err.contains(part), "{part:?} missing from {err}");
        }
    }

    #[test]
    fn the_item_limit_is_the_constructors() {
        let list = vec![todo("1", "x", TodoStatus::Pending), todo("2", "y", TodoStatus::Pending)];
        assert!(checked(list.clone(), 2).is_ok());
        assert!(checked(list, 1).unwrap_err().to_string().contains("at most 1"));
    }
}
