//! Pure mappings from hands' tool calls, todos, modes and approvals onto ACP's shapes: a call's
//! kind, title and locations; its content (a diff for the file-writing tools, the result's text
//! for the others); the permission options and what each choice means for hands.

use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{
    Diff, PermissionOption, PermissionOptionKind, PlanEntry, PlanEntryPriority, PlanEntryStatus,
    SessionMode, SessionModeState, ToolCallContent, ToolCallLocation, ToolKind,
};
use hands_core::Mode;
use serde_json::Value;

/// The tools whose calls change files and are shown as a diff.
pub const EDIT_TOOLS: [&str; 3] = ["write_file", "edit_file", "apply_patch"];

/// The ACP kind of a hands tool.
pub fn kind(tool: &str) -> ToolKind {
    match tool {
        "read_file"
        | "list_files"
        | "repo_map"
        | "diagnostics"
        | "read_runtime_errors"
        | "preview_console"
        | "preview_network"
        | "preview_screenshot"
        | "preview_snapshot"
        | "preview_status"
        | "terminal_read"
        | "list_processes"
        | "process_output" => ToolKind::Read,
        "write_file" | "edit_file" | "apply_patch" => ToolKind::Edit,
        "grep" | "glob" | "code_navigation" | "mcp_list" => ToolKind::Search,
        "bash" | "spawn_process" | "stop_process" | "terminal_start" | "terminal_send"
        | "add_dependency" | "preview_open" | "preview_close" | "preview_act" => ToolKind::Execute,
        "web_search" | "web_scrape" | "download_to_repo" | "clone_site" | "reference_project" => {
            ToolKind::Fetch
        }
        "todo_write" | "ask_user" | "use_skill" | "spawn_subagent" => ToolKind::Think,
        "enter_plan_mode" | "exit_plan_mode" => ToolKind::SwitchMode,
        _ => ToolKind::Other,
    }
}

fn arg<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// What an editor shows for the call: close to Zed's Claude Code adapter (`` `cmd` `` for a
/// command, `Read path`, `Write path`, `Edit path`), else the tool's name and its main argument.
pub fn title(tool: &str, args: &Value) -> String {
    let path = arg(args, "path");
    match (tool, path) {
        ("bash", _) | ("spawn_process", _) if arg(args, "command").is_some() => {
            let command = arg(args, "command").unwrap_or_default();
            format!("`{}`", command.replace('`', "\\`"))
        }
        ("read_file", Some(path)) => format!("Read {path}"),
        ("write_file", Some(path)) => format!("Write {path}"),
        ("edit_file", Some(path)) => format!("Edit `{path}`"),
        ("apply_patch", _) => {
            let files = patch_paths(arg(args, "input").unwrap_or_default());
            if files.is_empty() {
                "Apply patch".to_owned()
            } else {
                format!("Edit {}", files.join(", "))
            }
        }
        ("list_files", Some(path)) => format!("List `{path}`"),
        ("grep", _) if arg(args, "pattern").is_some() => {
            format!("grep `{}`", arg(args, "pattern").unwrap_or_default())
        }
        ("todo_write", _) => "Update TODOs".to_owned(),
        ("exit_plan_mode", _) => "Ready to code?".to_owned(),
        ("enter_plan_mode", _) => "Plan first".to_owned(),
        _ => hands_core::approval::summary(tool, args),
    }
}

/// The files a call is about, absolute under `root` (an editor follows them).
pub fn locations(root: &Path, tool: &str, args: &Value) -> Vec<ToolCallLocation> {
    let paths: Vec<String> = match tool {
        "apply_patch" => patch_paths(arg(args, "input").unwrap_or_default()),
        _ => arg(args, "path").map(str::to_owned).into_iter().collect(),
    };
    paths.into_iter().map(|p| ToolCallLocation::new(absolute(root, &p))).collect()
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

/// The files a file-writing call may change, absolute: what to read before and after it.
pub fn edited_files(root: &Path, tool: &str, args: &Value) -> Vec<PathBuf> {
    if !EDIT_TOOLS.contains(&tool) {
        return Vec::new();
    }
    locations(root, tool, args).into_iter().map(|l| l.path).collect()
}

/// Diffs of the files that changed: `(path, text before (None: the file did not exist), text
/// after (None: it is gone))`. Unchanged files are left out.
pub fn diffs(changes: Vec<(PathBuf, Option<String>, Option<String>)>) -> Vec<ToolCallContent> {
    changes
        .into_iter()
        .filter(|(_, old, new)| old != new)
        .map(|(path, old, new)| {
            ToolCallContent::Diff(Diff::new(path, new.unwrap_or_default()).old_text(old))
        })
        .collect()
}

/// A diff from a call's arguments alone, before it runs (for the permission request): a
/// write_file's new content against the file's current text, an edit_file's strings.
pub fn proposed_diff(
    root: &Path,
    tool: &str,
    args: &Value,
    current: Option<String>,
) -> Option<ToolCallContent> {
    let path = absolute(root, arg(args, "path")?);
    match tool {
        "write_file" => {
            let new = args.get("content").and_then(Value::as_str)?.to_owned();
            Some(ToolCallContent::Diff(Diff::new(path, new).old_text(current)))
        }
        "edit_file" => {
            let old = args.get("old_string").and_then(Value::as_str).unwrap_or_default();
            let new = args.get("new_string").and_then(Value::as_str).unwrap_or_default();
            let replace_all = args.get("replace_all").and_then(Value::as_bool).unwrap_or(false);
            match current {
                Some(text) if !old.is_empty() && text.contains(old) => {
                    let after = if replace_all {
                        text.replace(old, new)
                    } else {
                        text.replacen(old, new, 1)
                    };
                    Some(ToolCallContent::Diff(Diff::new(path, after).old_text(text)))
                }
                _ => Some(ToolCallContent::Diff(
                    Diff::new(path, new.to_owned())
                        .old_text(Some(old.to_owned()).filter(|o| !o.is_empty())),
                )),
            }
        }
        _ => None,
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

/// The content of a finished call for the editor: the diffs for a file-writing call that
/// succeeded, else the result's text (redacted as every result of hands is).
pub fn finished_content(
    tool: &str,
    is_error: bool,
    text: String,
    diffs: Vec<ToolCallContent>,
) -> Vec<ToolCallContent> {
    if EDIT_TOOLS.contains(&tool) && !is_error && !diffs.is_empty() {
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
/// reject. exit_plan_mode's plan is approved or not: no "always".
pub fn permission_options(tool: &str) -> Vec<PermissionOption> {
    if tool == "exit_plan_mode" {
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

/// The choice for the selected option id (`None`: the request was cancelled).
pub fn choice(tool: &str, option: Option<&str>) -> Choice {
    match option {
        Some(ALLOW_ONCE) => Choice::Once,
        Some(ALLOW_ALWAYS) if tool != "exit_plan_mode" => Choice::Always,
        Some(_) if tool == "exit_plan_mode" => Choice::Reject(
            "the user did not approve the plan: stay in plan mode, ask what to change, and \
             present a revised plan with exit_plan_mode"
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
