//! spawn_process: start a supervised background process, a `daemon` (runs until stopped) or a
//! `long-run` (finishes by itself, and its end is announced to the session).
//!
//! Flow: check the arguments and the per-session limit, start the process through the
//! [`Supervisor`] with a log file, wait (daemon: until ready by pattern, URL or port, see ready.rs;
//! long-run: for first output or its exit), then answer with id, pid, status, URL/port and the
//! first output. A watcher task records when the process ends and, for a long-run, queues a notice
//! with its exit status, duration and last lines (or stops it at its time limit).

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use hands_core::{Annotations, Context, Session, Tool, ToolError, ToolOutput};
use hands_core::{Family, Label, Policy};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::processes::{LAST_LINES, Notes, block, describe, exit_code, human, label, last_lines};
use crate::ready::{self, Checks, Found, Outcome, Signal, strip_ansi};
use crate::{ExecConfig, Kind, Proc, SpawnSpec, Status, Supervisor};

/// First output shown in the result at most: lines, and bytes.
const FIRST_LINES: usize = 40;
const FIRST_BYTES: usize = 8 * 1024;

/// `daemon` or `long-run`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ProcessType {
    /// Runs until stopped: a dev server, a watcher, a database.
    Daemon,
    /// Finishes by itself: a build, a test suite, a migration. Its end is reported back.
    LongRun,
}

/// Arguments of spawn_process.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SpawnArgs {
    /// The shell command line, run in the project root.
    pub command: String,
    /// `daemon` (runs until stopped) or `long-run` (finishes; its exit is reported later).
    #[serde(rename = "type")]
    pub kind: ProcessType,
    /// A short name for lists (default: the command).
    #[serde(default)]
    pub name: Option<String>,
    /// A regex over the output that means "ready" (e.g. `ready in \d+ ms`); without it a daemon is
    /// ready when it prints a local URL or listens on a port.
    #[serde(default)]
    pub ready_pattern: Option<String>,
    /// long-run only: stop it after this many milliseconds (default 30 minutes).
    #[serde(default)]
    pub timeout: Option<u64>,
}

/// The structured result of spawn_process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SpawnResult {
    /// Id for process_output, stop_process and list_processes.
    pub id: String,
    /// Process id of its shell (also its process group).
    pub pid: u32,
    /// `daemon` or `long-run`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Its name.
    pub name: String,
    /// `running`, `exited` or `stopped`.
    pub status: String,
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

/// The spawn_process tool.
#[derive(Debug, Clone)]
pub struct SpawnProcess {
    config: ExecConfig,
}

impl SpawnProcess {
    /// With `config`.
    pub fn new(config: ExecConfig) -> Self {
        Self { config }
    }
}

impl Tool for SpawnProcess {
    type Args = SpawnArgs;

    fn name(&self) -> &'static str {
        "spawn_process"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("spawn_process.md"))
    }

    fn annotations(&self) -> Annotations {
        Annotations { read_only: false, destructive: false, idempotent: false, open_world: true }
    }

    fn policy(&self) -> Policy {
        Policy::from_annotations(self.annotations())
            .label(Label::Key { key: "command" })
            .family(Family::Processes)
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        Some(hands_core::output_schema_for::<SpawnResult>())
    }

    async fn call(&self, ctx: Context, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let request = Request::from_args(args, &self.config)?;
        launch(&ctx, &self.config, request).await
    }
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
    fn from_args(args: SpawnArgs, config: &ExecConfig) -> Result<Self, ToolError> {
        let command = args.command.trim().to_owned();
        if command.is_empty() {
            return Err(ToolError::model(
                "`command` is empty: give the shell command to run, e.g. \"npm run dev\".",
            ));
        }
        let pattern = match args.ready_pattern.as_deref() {
            Some(p) => Some(ready::pattern(p).map_err(|e| {
                ToolError::model(format!("`ready_pattern` is not a valid regex: {e}"))
            })?),
            None => None,
        };
        let kind = match args.kind {
            ProcessType::Daemon => Kind::Daemon,
            ProcessType::LongRun => Kind::LongRun,
        };
        if kind == Kind::Daemon && args.timeout.is_some() {
            return Err(ToolError::model(
                "`timeout` applies to `long-run` processes only: a daemon runs until stop_process \
                 stops it (or the session ends). Drop `timeout`, or use type `long-run`.",
            ));
        }
        let limit_ms = args.timeout.unwrap_or(config.processes.long_run_timeout_ms);
        let limit =
            (kind == Kind::LongRun && limit_ms > 0).then(|| Duration::from_millis(limit_ms));
        let name = args.name.map(|n| n.trim().to_owned()).filter(|n| !n.is_empty());
        Ok(Self { command, kind, name, pattern, limit })
    }

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
        () = crate::bash::report_progress(ctx, &proc, "waiting until ready") => Outcome::Cancelled,
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

fn refuse_over_limit(supervisor: &Supervisor, config: &ExecConfig) -> Result<(), ToolError> {
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
        session.push_notice(format!(
            "Background process {} {outcome}. Last lines:\n{}",
            label(&proc),
            block(&last_lines(&proc, LAST_LINES))
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
        kind: kind.to_owned(),
        name: proc.name.clone(),
        status: crate::processes::state(&status).to_owned(),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn args(json: serde_json::Value) -> Result<Request, ToolError> {
        let args: SpawnArgs = hands_core::args::parse("spawn_process", json)?;
        Request::from_args(args, &ExecConfig::default())
    }

    fn message(result: Result<Request, ToolError>) -> String {
        match result {
            Err(ToolError::RespondToModel(m)) => m,
            other => panic!("expected an error for the model, got {other:?}"),
        }
    }

    #[test]
    fn arguments_are_checked() {
        let m = message(args(serde_json::json!({"command": "x", "type": "deamon"})));
        assert!(m.contains("field `type`") && m.contains("daemon"), "{m}");
        let m = message(args(serde_json::json!({"command": "  ", "type": "daemon"})));
        assert!(m.contains("`command` is empty"), "{m}");
        let m = message(args(
            serde_json::json!({"command": "x", "type": "daemon", "ready_pattern": "(("}),
        ));
        assert!(m.contains("`ready_pattern` is not a valid regex"), "{m}");
        let m = message(args(serde_json::json!({"command": "x", "type": "daemon", "timeout": 5})));
        assert!(m.contains("long-run"), "{m}");
    }

    #[test]
    fn long_runs_get_a_limit() {
        let r = args(serde_json::json!({"command": "make", "type": "long-run"})).unwrap();
        assert_eq!(r.kind, Kind::LongRun);
        assert_eq!(
            r.limit,
            Some(Duration::from_millis(ExecConfig::default().processes.long_run_timeout_ms))
        );
        let r = args(serde_json::json!({"command": "make", "type": "long-run", "timeout": 1500, "name": " build "})).unwrap();
        assert_eq!(r.limit, Some(Duration::from_millis(1500)));
        assert_eq!(r.name.as_deref(), Some("build"));
        let r =
            args(serde_json::json!({"command": "make", "type": "long-run", "timeout": 0})).unwrap();
        assert_eq!(r.limit, None, "0 means no limit");
        let r = args(serde_json::json!({"command": "vite", "type": "daemon"})).unwrap();
        assert_eq!(r.limit, None);
    }

    #[test]
    fn the_description_example_parses() {
        let md = include_str!("spawn_process.md");
        let json = md.split("```json").nth(1).and_then(|s| s.split("```").next()).unwrap();
        let value: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
        assert!(args(value).is_ok());
    }
}
