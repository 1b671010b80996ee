//! The agent's view of its background processes: list_processes, process_output, stop_process,
//! and the per-session [`Notes`] they share with spawn_process (read cursors, URL and port found at
//! readiness, when each process ended).
//!
//! list_processes and process_output are read-only (no approval), but not cacheable: the registry
//! serves identical read-only calls within a turn from its dedup cache, and these two must answer
//! anew each time (new output arrives, a process exits).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use hands_core::{Annotations, Context, Tool, ToolError, ToolOutput};
use hands_core::{Family, Label, Modes, Policy};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::ready::strip_ansi;
use crate::{ExecConfig, Kind, Proc, Status, Supervisor};

/// Lines of output shown when a process ends or is stopped.
pub(crate) const LAST_LINES: usize = 20;

/// What the process tools remember about each background process of a session.
#[derive(Debug, Default)]
pub(crate) struct Notes(Mutex<HashMap<String, Note>>);

/// One process's entry in [`Notes`].
#[derive(Debug, Clone, Default)]
pub(crate) struct Note {
    /// Output up to this byte offset has been shown to the model.
    pub cursor: u64,
    /// The URL it printed, if any.
    pub url: Option<String>,
    /// The port it listens on, if known.
    pub port: Option<u16>,
    /// When its exit was observed.
    pub ended: Option<Instant>,
}

impl Notes {
    /// The session's notes.
    pub(crate) fn of(ctx: &Context) -> Arc<Self> {
        ctx.session().extension::<Self>()
    }

    /// A copy of the note of `id`.
    pub(crate) fn get(&self, id: &str) -> Note {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).get(id).cloned().unwrap_or_default()
    }

    /// Change the note of `id`.
    pub(crate) fn update(&self, id: &str, change: impl FnOnce(&mut Note)) {
        change(
            self.0.lock().unwrap_or_else(PoisonError::into_inner).entry(id.to_owned()).or_default(),
        );
    }

    /// Record that `id` ended now, unless an earlier end was recorded.
    pub(crate) fn ended(&self, id: &str) {
        self.update(id, |n| {
            n.ended.get_or_insert_with(Instant::now);
        });
    }
}

/// `running`, `exited with code 1`, `killed by signal 9`, `stopped (timeout)`.
pub(crate) fn describe(status: &Status) -> String {
    match status {
        Status::Running => "running".into(),
        Status::Exited { code: Some(code), .. } => format!("exited with code {code}"),
        Status::Exited { signal: Some(signal), .. } => format!("killed by signal {signal}"),
        Status::Exited { .. } => "exited".into(),
        Status::Stopped { reason } if reason == "timeout" => "timed out and was stopped".into(),
        Status::Stopped { reason } => format!("stopped ({reason})"),
    }
}

/// One word for the status column: running, exited, stopped.
pub(crate) fn state(status: &Status) -> &'static str {
    match status {
        Status::Running => "running",
        Status::Exited { .. } => "exited",
        Status::Stopped { .. } => "stopped",
    }
}

/// The exit code, when it exited by itself with one.
pub(crate) fn exit_code(status: &Status) -> Option<i32> {
    match status {
        Status::Exited { code, .. } => *code,
        _ => None,
    }
}

/// `0.4s`, `12s`, `3m 12s`, `2h 5m`.
pub(crate) fn human(d: Duration) -> String {
    let secs = d.as_secs();
    match secs {
        0..10 => format!("{:.1}s", d.as_secs_f64()),
        10..60 => format!("{secs}s"),
        60..3600 => format!("{}m {}s", secs / 60, secs % 60),
        _ => format!("{}h {}m", secs / 3600, secs % 3600 / 60),
    }
}

/// How long it has run (still running) or ran (ended).
pub(crate) fn run_time(proc: &Proc, note: &Note) -> Duration {
    let started = Instant::from_std(proc.started);
    match (proc.status(), note.ended) {
        (Status::Running, _) | (_, None) => started.elapsed(),
        (_, Some(ended)) => ended.saturating_duration_since(started),
    }
}

/// The last `n` lines of what `proc` printed, ANSI colours stripped; a gap where output was dropped
/// from memory is marked.
pub(crate) fn last_lines(proc: &Proc, n: usize) -> String {
    let snap = proc.snapshot();
    let mut bytes = snap.head;
    if snap.dropped > 0 {
        bytes.extend_from_slice(
            format!("\n… [{} bytes not kept in memory] …\n", snap.dropped).as_bytes(),
        );
    }
    bytes.extend_from_slice(&snap.tail);
    tail_lines(&strip_ansi(&String::from_utf8_lossy(&bytes)), n)
}

/// The last `n` lines of `text`, without a trailing newline.
pub(crate) fn tail_lines(text: &str, n: usize) -> String {
    let text = text.trim_end_matches(['\n', '\r']);
    let start = text.match_indices('\n').rev().nth(n.saturating_sub(1)).map_or(0, |(i, _)| i + 1);
    if n == 0 { String::new() } else { text[start..].to_owned() }
}

/// `p3 (npm run dev)`, or just the command when it has no other name.
pub(crate) fn label(proc: &Proc) -> String {
    if proc.name == proc.command {
        format!("{} (`{}`)", proc.id, proc.command)
    } else {
        format!("{} ({}: `{}`)", proc.id, proc.name, proc.command)
    }
}

/// Indent `text` as a block under a heading.
pub(crate) fn block(text: &str) -> String {
    if text.trim().is_empty() {
        return "  (no output)".into();
    }
    text.lines().map(|l| format!("  {l}")).collect::<Vec<_>>().join("\n")
}

fn unknown(supervisor: &Supervisor, id: &str) -> ToolError {
    let ids: Vec<String> = supervisor.list().iter().map(|p| p.id.clone()).collect();
    if ids.is_empty() {
        ToolError::model(format!(
            "No background process `{id}`: this session has none. Start one with spawn_process."
        ))
    } else {
        ToolError::model(format!(
            "No background process `{id}`. Known ids: {}. See list_processes.",
            ids.join(", ")
        ))
    }
}

/// Arguments of list_processes (none).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {}

/// One row of list_processes.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ProcessRow {
    /// Id for process_output and stop_process.
    pub id: String,
    /// `daemon` or `long-run`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Name given at spawn (or the command).
    pub name: String,
    /// The command line.
    pub command: String,
    /// Process id of its shell.
    pub pid: u32,
    /// `running`, `exited` or `stopped`.
    pub status: String,
    /// The status in words (`exited with code 1`, `stopped (timeout)`).
    pub detail: String,
    /// Exit code, when it exited by itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Uptime (running) or how long it ran, in milliseconds.
    pub duration_ms: u64,
    /// URL it printed, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Port it listens on, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// Output bytes not yet read with process_output.
    pub unread_bytes: u64,
    /// Log file with its whole output, relative to the project root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<String>,
}

/// The structured result of list_processes.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ProcessList {
    /// The session's background processes, oldest first.
    pub processes: Vec<ProcessRow>,
}

/// The list_processes tool.
#[derive(Debug, Clone)]
pub struct ListProcesses {
    config: ExecConfig,
}

impl ListProcesses {
    /// With `config`.
    pub fn new(config: ExecConfig) -> Self {
        Self { config }
    }
}

fn kind_name(kind: Kind) -> String {
    match kind {
        Kind::Foreground => "foreground",
        Kind::Daemon => "daemon",
        Kind::LongRun => "long-run",
    }
    .into()
}

fn row(proc: &Proc, notes: &Notes) -> ProcessRow {
    let note = notes.get(&proc.id);
    let status = proc.status();
    let total = proc.snapshot().total;
    ProcessRow {
        id: proc.id.clone(),
        kind: kind_name(proc.kind),
        name: proc.name.clone(),
        command: proc.command.clone(),
        pid: proc.pid,
        status: state(&status).into(),
        detail: describe(&status),
        exit_code: exit_code(&status),
        duration_ms: u64::try_from(run_time(proc, &note).as_millis()).unwrap_or(u64::MAX),
        url: note.url,
        port: note.port,
        unread_bytes: total.saturating_sub(note.cursor),
        log: proc.log_path(),
    }
}

fn render_list(rows: &[ProcessRow]) -> String {
    if rows.is_empty() {
        return "No background processes in this session. Start one with spawn_process.".into();
    }
    let mut lines = vec![format!("{} background process(es):", rows.len())];
    for r in rows {
        let time = human(Duration::from_millis(r.duration_ms));
        let time = if r.status == "running" { format!("up {time}") } else { format!("ran {time}") };
        let mut line = format!("{}  {}  {}  {}  {time}", r.id, r.kind, r.detail, r.name);
        if r.name != r.command {
            line.push_str(&format!(" (`{}`)", r.command));
        }
        match (&r.url, r.port) {
            (Some(url), _) => line.push_str(&format!("  {url}")),
            (None, Some(port)) => line.push_str(&format!("  port {port}")),
            (None, None) => {}
        }
        line.push_str(&format!("  unread {} B", r.unread_bytes));
        if let Some(log) = &r.log {
            line.push_str(&format!("  log {log}"));
        }
        lines.push(line);
    }
    lines.join("\n")
}

impl Tool for ListProcesses {
    type Args = ListArgs;

    fn name(&self) -> &'static str {
        "list_processes"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("list_processes.md"))
    }

    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY
    }

    fn policy(&self) -> Policy {
        // Build mode only: the processes are build mode's.
        Policy::from_annotations(self.annotations()).modes(Modes::BUILD).family(Family::Processes)
    }

    /// The list changes by itself (processes end): never answered from the dedup cache.
    fn cacheable(&self) -> bool {
        false
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        Some(hands_core::output_schema_for::<ProcessList>())
    }

    async fn call(&self, ctx: Context, _args: Self::Args) -> Result<ToolOutput, ToolError> {
        let supervisor = Supervisor::of(ctx.session(), &self.config);
        let notes = Notes::of(&ctx);
        let rows: Vec<ProcessRow> = supervisor
            .list()
            .iter()
            .filter(|p| p.kind != Kind::Foreground)
            .map(|p| row(p, &notes))
            .collect();
        let text = render_list(&rows);
        let structured = serde_json::to_value(ProcessList { processes: rows })
            .map_err(|e| ToolError::Fatal(format!("list_processes: {e}")))?;
        Ok(ToolOutput::text(text).with_structured(structured))
    }
}

/// Arguments of process_output.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutputArgs {
    /// The process id from spawn_process or list_processes (`p1`, …).
    pub id: String,
    /// Return the last N lines instead of the new output (does not move the read cursor).
    #[serde(default)]
    pub tail: Option<usize>,
    /// Read from this byte offset (a cursor from an earlier result) instead of the last read.
    #[serde(default)]
    pub since: Option<u64>,
}

/// The process_output tool.
#[derive(Debug, Clone)]
pub struct ProcessOutput {
    config: ExecConfig,
}

impl ProcessOutput {
    /// With `config`.
    pub fn new(config: ExecConfig) -> Self {
        Self { config }
    }
}

impl Tool for ProcessOutput {
    type Args = OutputArgs;

    fn name(&self) -> &'static str {
        "process_output"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("process_output.md"))
    }

    fn annotations(&self) -> Annotations {
        // Changes nothing but this session's read cursor.
        Annotations { read_only: true, destructive: false, idempotent: false, open_world: false }
    }

    fn policy(&self) -> Policy {
        // Build mode only: the processes are build mode's.
        Policy::from_annotations(self.annotations())
            .modes(Modes::BUILD)
            .label(Label::Key { key: "id" })
            .family(Family::Processes)
    }

    /// Identical calls in one turn see new output: never answered from the dedup cache.
    fn cacheable(&self) -> bool {
        false
    }

    async fn call(&self, ctx: Context, args: Self::Args) -> Result<ToolOutput, ToolError> {
        if args.tail.is_some() && args.since.is_some() {
            return Err(ToolError::model(
                "process_output takes `tail` or `since`, not both: `tail` gives the last N lines, \
                 `since` the output after a byte cursor.",
            ));
        }
        let supervisor = Supervisor::of(ctx.session(), &self.config);
        let proc = supervisor.get(&args.id).ok_or_else(|| unknown(&supervisor, &args.id))?;
        let notes = Notes::of(&ctx);
        let status = describe(&proc.status());
        if let Some(n) = args.tail {
            let text = last_lines(&proc, n);
            return Ok(ToolOutput::text(format!(
                "{} — {status}. Last {n} line(s):\n{}",
                label(&proc),
                block(&text)
            )));
        }
        let from = args.since.unwrap_or_else(|| notes.get(&proc.id).cursor);
        let (bytes, cursor, dropped) = proc.read_since(from);
        notes.update(&proc.id, |n| n.cursor = cursor);
        let mut text = format!("{} — {status}.", label(&proc));
        if dropped > 0 {
            let log = proc.log_path().map_or_else(
                || "it was not logged".to_owned(),
                |log| format!("the whole output is in {log} (read_file can page through it)"),
            );
            text.push_str(&format!(
                "\n[{dropped} bytes of output were dropped from memory before they were read; {log}]"
            ));
        }
        if bytes.is_empty() {
            text.push_str(&format!("\nNo new output (cursor {cursor})."));
        } else {
            text.push_str(&format!("\nNew output ({} bytes, cursor now {cursor}):\n", bytes.len()));
            text.push_str(strip_ansi(&String::from_utf8_lossy(&bytes)).trim_end_matches('\n'));
        }
        Ok(ToolOutput::text(text))
    }
}

/// Arguments of stop_process.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StopArgs {
    /// The process id from spawn_process or list_processes (`p1`, …).
    pub id: String,
}

/// The stop_process tool.
#[derive(Debug, Clone)]
pub struct StopProcess {
    config: ExecConfig,
}

impl StopProcess {
    /// With `config`.
    pub fn new(config: ExecConfig) -> Self {
        Self { config }
    }
}

impl Tool for StopProcess {
    type Args = StopArgs;

    fn name(&self) -> &'static str {
        "stop_process"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("stop_process.md"))
    }

    fn annotations(&self) -> Annotations {
        Annotations { read_only: false, destructive: false, idempotent: true, open_world: false }
    }

    fn policy(&self) -> Policy {
        Policy::from_annotations(self.annotations())
            .label(Label::Key { key: "id" })
            .family(Family::Processes)
    }

    /// Stopping only ends what this session started and never touches the user's data; it is the
    /// safe direction, so it needs no approval.
    fn needs_approval(&self) -> bool {
        false
    }

    async fn call(&self, ctx: Context, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let supervisor = Supervisor::of(ctx.session(), &self.config);
        let proc = supervisor.get(&args.id).ok_or_else(|| unknown(&supervisor, &args.id))?;
        let notes = Notes::of(&ctx);
        let before = proc.status();
        if before != Status::Running {
            notes.ended(&proc.id);
            let ran = human(run_time(&proc, &notes.get(&proc.id)));
            return Ok(ToolOutput::text(format!(
                "{} was not running: it {} after {ran}. Nothing to stop. Last lines:\n{}",
                label(&proc),
                describe(&before),
                block(&last_lines(&proc, LAST_LINES))
            )));
        }
        let grace = Duration::from_millis(self.config.processes.stop_grace_ms);
        let report = proc.stop("stopped", grace).await;
        notes.ended(&proc.id);
        let _ = tokio::time::timeout(Duration::from_secs(1), proc.wait_drained()).await;
        let note = notes.get(&proc.id);
        let mut text = format!(
            "Stopped {} after {}: SIGTERM to {} process(es)",
            label(&proc),
            human(run_time(&proc, &note)),
            report.terminated
        );
        if report.killed > 0 {
            text.push_str(&format!(
                ", {} still alive after the {} grace got SIGKILL",
                report.killed,
                human(grace)
            ));
        }
        text.push_str(&format!(". Status: {}.", describe(&proc.status())));
        if report.survivors > 0 {
            text.push_str(&format!(
                "\nWarning: {} of its processes could not be stopped.",
                report.survivors
            ));
        }
        text.push_str(&format!("\nLast lines:\n{}", block(&last_lines(&proc, LAST_LINES))));
        Ok(ToolOutput::text(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example(md: &str) -> serde_json::Value {
        let json = md.split("```json").nth(1).and_then(|s| s.split("```").next()).unwrap();
        serde_json::from_str(json.trim()).unwrap()
    }

    #[test]
    fn the_description_examples_parse() {
        hands_core::args::parse::<ListArgs>(
            "list_processes",
            example(include_str!("list_processes.md")),
        )
        .unwrap();
        let a: OutputArgs =
            hands_core::args::parse("process_output", example(include_str!("process_output.md")))
                .unwrap();
        assert_eq!((a.id.as_str(), a.tail), ("p1", Some(50)));
        let a: StopArgs =
            hands_core::args::parse("stop_process", example(include_str!("stop_process.md")))
                .unwrap();
        assert_eq!(a.id, "p1");
    }

    #[test]
    fn tail_lines_takes_the_last_n() {
        assert_eq!(tail_lines("a\nb\nc\n", 2), "b\nc");
        assert_eq!(tail_lines("a\nb\nc", 5), "a\nb\nc");
        assert_eq!(tail_lines("a\nb\nc", 0), "");
        assert_eq!(tail_lines("", 3), "");
    }

    #[test]
    fn statuses_read_as_words() {
        assert_eq!(describe(&Status::Exited { code: Some(2), signal: None }), "exited with code 2");
        assert_eq!(describe(&Status::Exited { code: None, signal: Some(9) }), "killed by signal 9");
        assert_eq!(
            describe(&Status::Stopped { reason: "timeout".into() }),
            "timed out and was stopped"
        );
        assert_eq!(state(&Status::Stopped { reason: "stopped".into() }), "stopped");
        assert_eq!(exit_code(&Status::Exited { code: Some(0), signal: None }), Some(0));
    }

    #[test]
    fn durations_are_human() {
        assert_eq!(human(Duration::from_millis(400)), "0.4s");
        assert_eq!(human(Duration::from_secs(42)), "42s");
        assert_eq!(human(Duration::from_secs(192)), "3m 12s");
        assert_eq!(human(Duration::from_secs(7500)), "2h 5m");
    }

    #[test]
    fn the_list_shows_url_unread_and_log() {
        let rows = [ProcessRow {
            id: "p1".into(),
            kind: "daemon".into(),
            name: "web".into(),
            command: "npm run dev".into(),
            pid: 42,
            status: "running".into(),
            detail: "running".into(),
            exit_code: None,
            duration_ms: 65_000,
            url: Some("http://localhost:5173/".into()),
            port: Some(5173),
            unread_bytes: 120,
            log: Some(".hands/processes/p1.log".into()),
        }];
        let text = render_list(&rows);
        for part in [
            "p1",
            "daemon",
            "web",
            "`npm run dev`",
            "up 1m 5s",
            "http://localhost:5173/",
            "unread 120 B",
            ".hands/processes/p1.log",
        ] {
            assert!(text.contains(part), "{part} missing from {text}");
        }
        assert!(render_list(&[]).starts_with("No background processes"));
    }
}
