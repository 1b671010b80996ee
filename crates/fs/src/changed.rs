//! After a write: the session's watchers of changed files (a language server's diagnostics) are
//! told which files changed, and their notices go on the writing tool's own result. Each watcher
//! bounds its wait; an aborted call does not wait at all.

use std::path::PathBuf;

use hands_core::{Context, ToolOutput};

/// `output` with what the session's change watchers say about the files it names.
pub(crate) async fn announce(ctx: &Context, mut output: ToolOutput) -> ToolOutput {
    let session = ctx.session();
    if !session.watches_changes() {
        return output;
    }
    let paths = paths_of(&output);
    let absolute: Vec<PathBuf> = paths.iter().map(|p| ctx.root().join(p)).collect();
    tokio::select! {
        notices = session.files_changed(&absolute) => output.notices.extend(notices),
        () = ctx.cancel_token().cancelled() => {}
    }
    output
}

/// The root-relative paths a structured write result names (`path`, and each file's `path` and
/// `moved_to` in a patch's `files`).
fn paths_of(output: &ToolOutput) -> Vec<String> {
    let Some(value) = &output.structured else { return Vec::new() };
    let mut paths = Vec::new();
    let mut take = |v: &serde_json::Value| {
        for key in ["path", "moved_to"] {
            if let Some(p) = v.get(key).and_then(serde_json::Value::as_str) {
                paths.push(p.to_owned());
            }
        }
    };
    match value.get("files").and_then(serde_json::Value::as_array) {
        Some(files) => files.iter().for_each(&mut take),
        None => take(value),
    }
    paths
}
