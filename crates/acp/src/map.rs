//! Pure mappings from hands' tool calls, todos, modes and approvals onto ACP's shapes: a call's
//! kind, title and locations; its content (a diff for the file-writing tools, the result's text
//! for the others); the permission options and what each choice means for hands.

use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{
    Diff, PermissionOption, PermissionOptionKind, PlanEntry, PlanEntryPriority, PlanEntryStatus,
    SessionMode, SessionModeState, ToolCallContent, ToolCallLocation, ToolKind,
};
use hands_core::{Family, Label, Mode, Registry};
use serde_json::Value;

/// What the registry says of a tool, all an editor's view of its calls is made from (no tool is
/// named here: policy lives on the tool).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Info {
    /// Its family (files, search, processes, …).
    pub family: Family,
    /// It changes nothing.
    pub read_only: bool,
    /// How its calls are shown.
    pub label: Label,
}

impl Info {
    /// The registry's facts about `tool` (an unknown tool: other, not read-only).
    pub fn of(registry: &Registry, tool: &str) -> Self {
        registry.get(tool).map_or(
            Self { family: Family::Other, read_only: false, label: Label::Arguments },
            |t| {
                let spec = t.spec();
                Self {
                    family: spec.policy.family,
                    read_only: spec.annotations.read_only,
                    label: spec.policy.label,
                }
            },
        )
    }

    /// The argument holding a plan for the user to approve (exit_plan_mode's).
    pub fn plan_key(&self) -> Option<&'static str> {
        match self.label {
            Label::Plan { key } => Some(key),
            _ => None,
        }
    }
}

/// The ACP kind of a tool.
pub fn kind(info: &Info) -> ToolKind {
    if info.plan_key().is_some() {
        return ToolKind::SwitchMode;
    }
    match (info.family, info.read_only) {
        (Family::Files, false) => ToolKind::Edit,
        (Family::Search, _) => ToolKind::Search,
        (Family::Web, _) => ToolKind::Fetch,
        (Family::Session | Family::Delegation, _) => ToolKind::Think,
        (Family::Processes | Family::Preview | Family::Project, false) => ToolKind::Execute,
        (_, true) => ToolKind::Read,
        _ => ToolKind::Other,
    }
}

fn arg<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// What an editor shows for the call, close to Zed's Claude Code adapter: `` `cmd` `` for a
/// command, `Read path`, `Edit path`; else the tool's name and its main argument.
pub fn title(tool: &str, info: &Info, args: &Value) -> String {
    let main = info.label.text(args).filter(|t| !t.is_empty());
    match (kind(info), main) {
        (ToolKind::Execute, Some(command)) => format!("`{}`", command.replace('`', "\\`")),
        (ToolKind::Read, Some(path)) if info.family == Family::Files => format!("Read {path}"),
        (ToolKind::Edit, _) => {
            let files = paths(args);
            if files.is_empty() {
                format!("Edit ({tool})")
            } else {
                format!("Edit {}", files.join(", "))
            }
        }
        (ToolKind::SwitchMode, _) => "Ready to code?".to_owned(),
        (_, Some(main)) => format!("{tool} {main}"),
        (_, None) => hands_core::approval::summary(tool, args),
    }
}

/// The paths a call names: its `path` argument, or the files of a patch in any string argument.
fn paths(args: &Value) -> Vec<String> {
    if let Some(path) = arg(args, "path") {
        return vec![path.to_owned()];
    }
    let Some(object) = args.as_object() else { return Vec::new() };
    object
        .values()
        .filter_map(Value::as_str)
        .find(|s| s.contains("*** Begin Patch"))
        .map(patch_paths)
        .unwrap_or_default()
}

/// The files a call is about, absolute under `root` (an editor follows them).
pub fn locations(root: &Path, args: &Value) -> Vec<ToolCallLocation> {
    paths(args).into_iter().map(|p| ToolCallLocation::new(absolute(root, &p))).collect()
}

/// `path` under `root` when it is relative.
pub fn absolute(root: &Path, path: &str) -> PathBuf {
    let path = Path::new(path);
    if path.is_absolute() { path.to_path_buf() } else { root.join(path) }
}

/// The paths an apply_patch input names (`*** Add File: p`, `*** Update File: p`,
/// `*** Delete File: p`, `*** Move to: p`), in order, each once.
pub fn patch_paths(input: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in input.lines() {
        let line = line.trim_end();
        let found = ["*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "]
            .iter()
            .find_map(|prefix| line.strip_prefix(prefix));
        if let Some(path) = found.map(str::trim).filter(|p| !p.is_empty())
            && !out.iter().any(|p| p == path)
        {
            out.push(path.to_owned());
        }
    }
    out
}

/// The files a file-changing call may change, absolute: what to read before and after it.
pub fn edited_files(root: &Path, info: &Info, args: &Value) -> Vec<PathBuf> {
    if kind(info) != ToolKind::Edit {
        return Vec::new();
    }
    locations(root, args).into_iter().map(|l| l.path).collect()
}

/// A diff for the editor, both sides redacted as every text hands shows is: a file may hold a
/// stored secret (a key in `.env`), and the editor keeps the thread or hands it to its own model.
fn diff(path: PathBuf, new: String, old: Option<String>) -> ToolCallContent {
    let shown = |text: String| hands_core::redact::text(&text).into_owned();
    ToolCallContent::Diff(Diff::new(path, shown(new)).old_text(old.map(shown)))
}

/// Diffs of the files that changed: `(path, text before (None: the file did not exist), text
/// after (None: it is gone))`. Unchanged files are left out.
pub fn diffs(changes: Vec<(PathBuf, Option<String>, Option<String>)>) -> Vec<ToolCallContent> {
    changes
        .into_iter()
        .filter(|(_, old, new)| old != new)
        .map(|(path, old, new)| diff(path, new.unwrap_or_default(), old))
        .collect()
}

/// A diff from a call's arguments alone, before it runs (for the permission request): a
/// write_file's new content against the file's current text, an edit_file's strings.
pub fn proposed_diff(
    root: &Path,
    info: &Info,
    args: &Value,
    current: Option<String>,
) -> Option<ToolCallContent> {
    if kind(info) != ToolKind::Edit {
        return None;
    }
    let path = absolute(root, arg(args, "path")?);
    if let Some(new) = args.get("content").and_then(Value::as_str) {
        return Some(diff(path, new.to_owned(), current));
    }
    let old = args.get("old_string").and_then(Value::as_str)?;
    let new = args.get("new_string").and_then(Value::as_str).unwrap_or_default();
    let replace_all = args.get("replace_all").and_then(Value::as_bool).unwrap_or(false);
    match current {
        Some(text) if !old.is_empty() && text.contains(old) => {
            let after =
                if replace_all { text.replace(old, new) } else { text.replacen(old, new, 1) };
            Some(diff(path, after, Some(text)))
        }
        _ => Some(diff(path, new.to_owned(), Some(old.to_owned()).filter(|o| !o.is_empty()))),
    }
}

/// The text parts of a stored result (`{"content": [{"type": "text", "text": …}], …}`).
pub fn result_text(result: &Value) -> String {
    let parts =
        result.get("content").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let texts: Vec<&str> = parts
        .iter()
        .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .collect();
    texts.join("\n")
}

/// The content of a finished call for the editor: the diffs of a file-changing call that
/// succeeded, else the result's text (redacted as every result of hands is).
pub fn finished_content(
    is_error: bool,
    text: String,
    diffs: Vec<ToolCallContent>,
) -> Vec<ToolCallContent> {
    if !is_error && !diffs.is_empty() {
        return diffs;
    }
    if text.is_empty() { Vec::new() } else { vec![ToolCallContent::from(text)] }
}

/// The option ids of a permission request.
pub const ALLOW_ONCE: &str = "allow_once";
/// Allow this tool for the rest of the session.
pub const ALLOW_ALWAYS: &str = "allow_always";
/// Do not run the call.
pub const REJECT: &str = "reject";

/// The options offered for a call of `tool`: allow once, allow `tool` always (in this session),
/// reject. A plan (exit_plan_mode's) is approved or not: no "always".
pub fn permission_options(tool: &str, plan: bool) -> Vec<PermissionOption> {
    if plan {
        return vec![
            PermissionOption::new(
                ALLOW_ONCE,
                "Yes, start building",
                PermissionOptionKind::AllowOnce,
            ),
            PermissionOption::new(REJECT, "No, keep planning", PermissionOptionKind::RejectOnce),
        ];
    }
    vec![
        PermissionOption::new(ALLOW_ONCE, "Allow once", PermissionOptionKind::AllowOnce),
        PermissionOption::new(
            ALLOW_ALWAYS,
            format!("Always allow {tool} in this session"),
            PermissionOptionKind::AllowAlways,
        ),
        PermissionOption::new(REJECT, "Reject", PermissionOptionKind::RejectOnce),
    ]
}

/// What the user's choice means for hands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// Run this call.
    Once,
    /// Run it, and the tool's later calls in this session without asking.
    Always,
    /// Do not run it; the model is told why.
    Reject(String),
}

/// The choice for the selected option id (`None`: the request was cancelled); `plan`: the call
/// presents a plan.
pub fn choice(plan: bool, option: Option<&str>) -> Choice {
    match option {
        Some(ALLOW_ONCE) => Choice::Once,
        Some(ALLOW_ALWAYS) if !plan => Choice::Always,
        Some(_) if plan => Choice::Reject(
            "the user did not approve the plan: stay in plan mode, ask what to change, and \
             present a revised plan"
                .to_owned(),
        ),
        Some(_) => Choice::Reject(
            "the user rejected this call in the editor: do not retry it; ask the user, or do \
             without it"
                .to_owned(),
        ),
        None => {
            Choice::Reject("the permission request was cancelled: the call did not run".to_owned())
        }
    }
}

/// todo_write's list as an ACP plan's entries.
pub fn plan_entries(todos: &Value) -> Vec<PlanEntry> {
    let items = todos.as_array().map(Vec::as_slice).unwrap_or_default();
    items
        .iter()
        .filter_map(|todo| {
            let content = todo.get("content").and_then(Value::as_str)?;
            let status = match todo.get("status").and_then(Value::as_str) {
                Some("in_progress") => PlanEntryStatus::InProgress,
                Some("completed") => PlanEntryStatus::Completed,
                _ => PlanEntryStatus::Pending,
            };
            Some(PlanEntry::new(content, PlanEntryPriority::Medium, status))
        })
        .collect()
}

/// The ACP id of a hands mode.
pub fn mode_id(mode: Mode) -> &'static str {
    match mode {
        Mode::Plan => "plan",
        Mode::Build => "build",
    }
}

/// The hands mode of an ACP mode id.
pub fn mode_of(id: &str) -> Option<Mode> {
    match id {
        "plan" => Some(Mode::Plan),
        "build" => Some(Mode::Build),
        _ => None,
    }
}

/// hands' modes as ACP session modes, `current` selected.
pub fn modes(current: Mode) -> SessionModeState {
    SessionModeState::new(
        mode_id(current),
        vec![
            SessionMode::new("build", "Build")
                .description("Every tool; changes are approved as [approval] says".to_owned()),
            SessionMode::new("plan", "Plan").description(
                "Read-only tools: research, then present a plan for approval".to_owned(),
            ),
        ],
    )
}

/// Lock `mutex`, also after a panic elsewhere held it.
pub fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
#[path = "map_tests.rs"]
mod tests;
