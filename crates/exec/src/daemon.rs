//! Starting (or reusing) a daemon and waiting until it is ready: by `ready_pattern`, by a URL it
//! prints, or by a port it listens on (ready.rs); shared by spawn_process and bash's dev-server
//! short-circuit.
//!
//! Flow of [`start_or_reuse`]: a running daemon of the session with the same command (whitespace
//! aside) is reused and its recent output shown; otherwise the command starts as spawn_process
//! `daemon` would start it.

use hands_core::{Context, ToolError, ToolOutput};

use hands_core::process::{ProcessKind, ProcessStatus};

use crate::config::ExecConfig;
use crate::launch::{self, Request, SpawnResult};
use crate::notes::{Notes, block, human, label, last_lines};
use crate::supervisor::{Kind, Status, Supervisor};

/// Lines of recent output shown for a reused daemon.
const RECENT_LINES: usize = 20;

/// Start `command` as a daemon, or reuse the session's running daemon with the same command; wait
/// until it is ready and answer with its id, pid, URL/port and first output.
pub async fn start_or_reuse(
    ctx: &Context,
    config: &ExecConfig,
    command: &str,
) -> Result<ToolOutput, ToolError> {
    if let Some(output) = reuse(ctx, config, command) {
        return Ok(output);
    }
    launch::launch(ctx, config, Request::daemon(command)).await
}

/// Collapse runs of whitespace, so that `npm  run dev` is `npm run dev`.
fn normalized(command: &str) -> String {
    command.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn reuse(ctx: &Context, config: &ExecConfig, command: &str) -> Option<ToolOutput> {
    let supervisor = Supervisor::of(ctx.session(), config);
    let wanted = normalized(command);
    let proc = supervisor.list().into_iter().rev().find(|p| {
        p.kind == Kind::Daemon && p.status() == Status::Running && normalized(&p.command) == wanted
    })?;
    let note = Notes::of(ctx).get(&proc.id);
    let recent = last_lines(&proc, RECENT_LINES);
    let mut text = format!(
        "Reused the running daemon {} (pid {}), up {}; it was not started again.",
        label(&proc),
        proc.pid,
        human(proc.started.elapsed())
    );
    match (&note.url, note.port) {
        (Some(url), _) => text.push_str(&format!("\nURL: {url}")),
        (None, Some(port)) => text.push_str(&format!("\nPort: {port}")),
        (None, None) => {}
    }
    if let Some(log) = proc.log_path() {
        text.push_str(&format!("\nLog: {log}"));
    }
    text.push_str(&format!("\nRecent output:\n{}", block(&recent)));
    text.push_str(&format!(
        "\nTo restart it, stop_process {{\"id\": \"{}\"}} first and run the command again.",
        proc.id
    ));
    let result = SpawnResult {
        id: proc.id.clone(),
        pid: proc.pid,
        kind: ProcessKind::Daemon,
        name: proc.name.clone(),
        status: ProcessStatus::Running,
        exit_code: None,
        ready: None,
        url: note.url,
        port: note.port,
        log: proc.log_path(),
        first_output: recent,
        more_bytes: 0,
        reused: true,
    };
    let structured = serde_json::to_value(&result).unwrap_or(serde_json::Value::Null);
    Some(ToolOutput::text(text).with_structured(structured))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_match_whitespace_aside() {
        assert_eq!(normalized("  npm   run\tdev "), "npm run dev");
        assert_ne!(normalized("npm run dev"), normalized("npm run dev -- --port 4000"));
    }
}
