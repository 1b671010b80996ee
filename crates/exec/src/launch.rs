//! Starting a supervised background process and waiting as its kind says: the machinery under
//! spawn_process and bash's dev-server short-circuit (daemon.rs).
//!
//! Flow: check the per-session limit, start the process through the [`Supervisor`] with a log
//! file, wait (daemon: until ready by pattern, URL or port, see ready.rs; long-run: for first
//! output or its exit), then answer with id, pid, status, URL/port and the first output. A watcher
//! task records when the process ends and, for a long-run, queues a notice with its exit status,
//! duration and last lines (or stops it at its time limit).

use std::sync::Arc;
use std::time::Duration;

use hands_core::process::{ProcessKind, ProcessStatus};
use hands_core::{Context, Notice, NoticeKind, Session, ToolError, ToolOutput};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::config::ExecConfig;
use crate::notes::{
    LAST_LINES, Notes, block, describe, exit_code, human, label, last_lines, process_kind, state,
};
use crate::progress::report_progress;
use crate::ready::{self, Checks, Found, Outcome, Signal, strip_ansi};
use crate::supervisor::{Kind, Proc, SpawnSpec, Status, Supervisor};

/// First output shown in the result at most: lines, and bytes.
const FIRST_LINES: usize = 40;
const FIRST_BYTES: usize = 8 * 1024;

/// The structured result of spawn_process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SpawnResult {
    /// Id for process_output, stop_process and list_processes.
    pub id: String,
    /// Process id of its shell (also its process group).
    pub pid: u32,
    /// `daemon` or `long-run`.
    #[serde(rename = "type")]
    pub kind: ProcessKind,
    /// Its name.
    pub name: String,
    /// Running, exited or stopped.
    pub status: ProcessStatus,
    /// Exit code, when it already exited by itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// What showed readiness: `pattern`, `url`, `port`; `not-confirmed` when the wait ran out;
    /// absent when nothing was waited for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<String>,
    /// A local URL it printed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The port it listens on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// Log file with the whole output, relative to the project root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<String>,
    /// What it printed so far (the start, capped).
    pub first_output: String,
    /// Bytes printed after `first_output` and not shown (process_output reads on).
    #[serde(default)]
    pub more_bytes: u64,
    /// True when a running daemon with the same command was reused instead.
    pub reused: bool,
}

/// A checked spawn request.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub command: String,
    pub kind: Kind,
    pub name: Option<String>,
    pub pattern: Option<regex::Regex>,
    /// long-run: the time limit (`None`: none).
    pub limit: Option<Duration>,
}

impl Request {
    /// A daemon as bash's dev-server short-circuit starts it.
    pub(crate) fn daemon(command: &str) -> Self {
        Self {
            command: command.trim().to_owned(),
            kind: Kind::Daemon,
            name: None,
            pattern: None,
            limit: None,
        }
    }
}

/// Start `request` and wait as its kind says; the result of spawn_process.
pub(crate) async fn launch(
    ctx: &Context,
    config: &ExecConfig,
    request: Request,
) -> Result<ToolOutput, ToolError> {
    let supervisor = Supervisor::of(ctx.session(), config);
    refuse_over_limit(&supervisor, config)?;
    let buffer = config.processes.buffer_bytes;
    let spec = SpawnSpec {
        command: request.command.clone(),
        kind: request.kind,
        name: request.name.clone(),
        cwd: ctx.root().to_path_buf(),
        head: buffer / 4,
        tail: buffer - buffer / 4,
        log: true,
    };
    let proc = supervisor
        .spawn(spec)
        .map_err(|e| ToolError::model(format!("Could not start `{}`: {e}.", request.command)))?;
    let notes = Notes::of(ctx);
    let checks = Checks {
        detect: request.kind == Kind::Daemon && request.pattern.is_none(),
        pattern: request.pattern.clone(),
        timeout: Duration::from_millis(config.processes.ready_timeout_ms),
        settle: Duration::from_millis(config.processes.settle_ms),
    };
    let outcome = tokio::select! {
        outcome = ready::wait(&proc, &checks, ctx.cancel_token()) => outcome,
        () = report_progress(ctx, &proc, "waiting until ready") => Outcome::Cancelled,
    };
    let grace = Duration::from_millis(config.processes.stop_grace_ms);
    match &outcome {
        Outcome::Cancelled => {
            proc.stop("aborted", grace).await;
            notes.ended(&proc.id);
            return Err(ToolError::model(format!(
                "spawn_process was cancelled while waiting for {}; it was stopped.",
                label(&proc)
            )));
        }
        Outcome::Exited(status) => {
            notes.ended(&proc.id);
            if request.kind == Kind::Daemon {
                return Err(exited_early(&proc, status, &checks));
            }
        }
        Outcome::Ready(found) => {
            notes.update(&proc.id, |n| {
                n.url.clone_from(&found.url);
                n.port = found.port;
            });
        }
        Outcome::NotConfirmed | Outcome::Settled => {}
    }
    if !matches!(outcome, Outcome::Exited(_)) {
        watch(ctx.session().clone(), Arc::clone(&proc), Arc::clone(&notes), request.limit, grace);
    }
    let mut output = render(&proc, &notes, &outcome, &checks, request.limit);
    if ctx.session().is_one_shot() && proc.status() == Status::Running {
        // A `hands call` is a session of one call: its processes end when it exits.
        output = output.with_text(
            "Note: this one-shot `hands call` session ends now, so the process is stopped as hands \
             exits. Run hands as a server (`hands mcp`, `hands serve`) for processes that outlive \
             a call.",
        );
    }
    Ok(output)
}

pub(crate) fn refuse_over_limit(
    supervisor: &Supervisor,
    config: &ExecConfig,
) -> Result<(), ToolError> {
    let max = config.processes.max_per_session;
    if supervisor.running() < max {
        return Ok(());
    }
    let running: Vec<String> = supervisor
        .list()
        .iter()
        .filter(|p| p.status() == Status::Running)
        .map(|p| format!("  {} ({}) `{}`", p.id, kind_word(p.kind), p.command))
        .collect();
    Err(ToolError::model(format!(
        "This session already runs {} background processes, the limit (processes.max_per_session \
         = {max}):\n{}\nStop one you no longer need with stop_process {{\"id\": \"…\"}}, then \
         spawn again.",
        running.len(),
        running.join("\n")
    )))
}

fn kind_word(kind: Kind) -> &'static str {
    match kind {
        Kind::Foreground => "foreground",
        Kind::Daemon => "daemon",
        Kind::LongRun => "long-run",
        Kind::Terminal => "terminal",
    }
}

fn exited_early(proc: &Proc, status: &Status, checks: &Checks) -> ToolError {
    let waited_for = if checks.pattern.is_some() {
        "its ready_pattern matched"
    } else {
        "it printed a URL or listened on a port"
    };
    ToolError::model(format!(
        "Daemon {} {} before {waited_for}. Last output:\n{}\n{}",
        label(proc),
        describe(status),
        block(&last_lines(proc, LAST_LINES)),
        proc.log_path().map_or(String::new(), |l| format!("Full output: {l}.")),
    ))
}

/// Record the end of `proc`; for a long-run, queue a notice for the model (or stop it at `limit`).
fn watch(
    session: Session,
    proc: Arc<Proc>,
    notes: Arc<Notes>,
    limit: Option<Duration>,
    grace: Duration,
) {
    tokio::spawn(async move {
        let status = match limit {
            Some(limit) => {
                let left = limit.saturating_sub(proc.started.elapsed());
                match tokio::time::timeout(left, proc.wait_exit()).await {
                    Ok(status) => status,
                    Err(_) => {
                        proc.stop("timeout", grace).await;
                        proc.status()
                    }
                }
            }
            None => proc.wait_exit().await,
        };
        notes.ended(&proc.id);
        if proc.kind != Kind::LongRun {
            return;
        }
        // Stopped on request or with the session: the model asked, or nobody is left to tell.
        if let Status::Stopped { reason } = &status
            && (reason == "stopped" || reason == "session ended")
        {
            return;
        }
        let _ = tokio::time::timeout(Duration::from_secs(2), proc.wait_drained()).await;
        let ran = human(proc.started.elapsed());
        let outcome = match &status {
            Status::Stopped { reason } if reason == "timeout" => format!(
                "timed out after {} and was stopped",
                limit.map_or_else(|| ran.clone(), human)
            ),
            other => format!("{} after {ran}", describe(other)),
        };
        session.push_notice(Notice::new(
            NoticeKind::ProcessExited,
            format!(
                "Background process {} {outcome}. Last lines:\n{}",
                label(&proc),
                block(&last_lines(&proc, LAST_LINES))
            ),
        ));
    });
}

/// The first output: up to [`FIRST_LINES`] lines or [`FIRST_BYTES`] bytes from the start, and how
/// many raw bytes that covers (the read cursor moves past them).
fn first_output(proc: &Proc) -> (String, u64, u64) {
    let (bytes, total, _dropped) = proc.read_since(0);
    let mut cut = bytes.len().min(FIRST_BYTES);
    if let Some((i, _)) =
        bytes[..cut].iter().enumerate().filter(|(_, b)| **b == b'\n').nth(FIRST_LINES - 1)
    {
        cut = i + 1;
    }
    // Do not split a UTF-8 character.
    while cut < bytes.len() && cut > 0 && bytes[cut] & 0xC0 == 0x80 {
        cut -= 1;
    }
    let text = strip_ansi(&String::from_utf8_lossy(&bytes[..cut])).trim_end().to_owned();
    let shown = total - (bytes.len() - cut) as u64;
    (text, shown, total)
}

fn render(
    proc: &Proc,
    notes: &Notes,
    outcome: &Outcome,
    checks: &Checks,
    limit: Option<Duration>,
) -> ToolOutput {
    let status = proc.status();
    let kind = kind_word(proc.kind);
    let note = notes.get(&proc.id);
    let (first, shown, total) = if matches!(outcome, Outcome::Exited(_)) {
        // It is over: the end matters more than the start.
        let (_, total, _) = proc.read_since(0);
        (last_lines(proc, LAST_LINES * 2), total, total)
    } else {
        first_output(proc)
    };
    notes.update(&proc.id, |n| n.cursor = n.cursor.max(shown));
    let mut text = format!("Started {kind} {} (pid {}).", label(proc), proc.pid);
    let ready = match outcome {
        Outcome::Ready(Found { by, url, port }) => {
            let at = match (url, port) {
                (Some(url), _) => format!(" at {url}"),
                (None, Some(port)) => format!(" on port {port}"),
                (None, None) => String::new(),
            };
            let (word, how) = match by {
                Signal::Pattern(line) => ("pattern", format!("ready_pattern matched \"{line}\"")),
                Signal::Url => ("url", "it printed its URL".to_owned()),
                Signal::Port => ("port", "it listens".to_owned()),
            };
            text.push_str(&format!("\nReady{at}: {how}."));
            Some(word.to_owned())
        }
        Outcome::NotConfirmed => {
            let what = if checks.pattern.is_some() {
                "its ready_pattern has not matched"
            } else {
                "it has printed no local URL and listens on no port"
            };
            text.push_str(&format!(
                "\nNot confirmed ready after {}: it is still running, but {what}. It may still be \
                 starting (check process_output) or serve nothing; pass ready_pattern to say what \
                 ready looks like.",
                human(checks.timeout)
            ));
            Some("not-confirmed".to_owned())
        }
        Outcome::Exited(_) => {
            text = format!(
                "{} finished after {}: {}.",
                label(proc),
                human(proc.started.elapsed()),
                describe(&status)
            );
            None
        }
        Outcome::Settled | Outcome::Cancelled => {
            if proc.kind == Kind::LongRun {
                let limit = limit.map_or(String::new(), |l| {
                    format!(" (it is stopped if it runs longer than {})", human(l))
                });
                text.push_str(&format!(
                    "\nStill running. When it finishes{limit}, its exit status, duration and last \
                     lines are reported with a later tool result."
                ));
            }
            None
        }
    };
    if let Some(log) = proc.log_path() {
        text.push_str(&format!("\nLog: {log}"));
    }
    let heading =
        if matches!(outcome, Outcome::Exited(_)) { "Output (end)" } else { "Output so far" };
    text.push_str(&format!("\n{heading}:\n{}", block(&first)));
    if shown < total {
        text.push_str(&format!(
            "\n… {} more bytes: process_output {{\"id\": \"{}\"}} reads on.",
            total - shown,
            proc.id
        ));
    }
    if status == Status::Running {
        text.push_str(&format!(
            "\nprocess_output {{\"id\": \"{0}\"}} shows new output; stop_process {{\"id\": \"{0}\"}} \
             stops it.",
            proc.id
        ));
    }
    let result = SpawnResult {
        id: proc.id.clone(),
        pid: proc.pid,
        // A spawned process is a daemon or a long-run (bash's dev-server start is a daemon).
        kind: process_kind(proc.kind).unwrap_or(ProcessKind::Daemon),
        name: proc.name.clone(),
        status: state(&status),
        exit_code: exit_code(&status),
        ready,
        url: note.url,
        port: note.port,
        log: proc.log_path(),
        first_output: first,
        more_bytes: total.saturating_sub(shown),
        reused: false,
    };
    let structured = serde_json::to_value(&result).unwrap_or(serde_json::Value::Null);
    ToolOutput::text(text).with_structured(structured)
}
