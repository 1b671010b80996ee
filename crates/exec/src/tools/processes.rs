//! The agent's view of its background processes: list_processes, process_output, stop_process,
//! over the rows and the stop of background.rs and the per-session notes of notes.rs.
//!
//! list_processes and process_output are read-only (no approval), but not cacheable: the registry
//! serves identical read-only calls within a turn from its dedup cache, and these two must answer
//! anew each time (new output arrives, a process exits).

use std::borrow::Cow;
use std::time::Duration;

use hands_core::process::{ProcessKind, ProcessList, ProcessRow, ProcessStatus};
use hands_core::{Annotations, Context, Tool, ToolError, ToolOutput};
use hands_core::{Family, Label, Modes, Policy};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::background::{self, unknown};
use crate::config::ExecConfig;
use crate::notes::{Notes, block, describe, human, label, last_lines};
use crate::ready::strip_ansi;
use crate::supervisor::Supervisor;

/// Arguments of list_processes (none).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {}

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

fn render_list(rows: &[ProcessRow]) -> String {
    if rows.is_empty() {
        return "No background processes in this session. Start one with spawn_process.".into();
    }
    let mut lines = vec![format!("{} background process(es):", rows.len())];
    for r in rows {
        let time = human(Duration::from_millis(r.duration_ms));
        let time = if r.status == ProcessStatus::Running {
            format!("up {time}")
        } else {
            format!("ran {time}")
        };
        let kind = match r.kind {
            ProcessKind::Daemon => "daemon",
            ProcessKind::LongRun => "long-run",
            ProcessKind::Terminal => "terminal",
        };
        let mut line = format!("{}  {kind}  {}  {}  {time}", r.id, r.detail, r.name);
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
        let list = background::list(&supervisor, &Notes::of(&ctx));
        let text = render_list(&list.processes);
        let structured = serde_json::to_value(list)
            .map_err(|e| ToolError::Fatal(format!("list_processes: {e}")))?;
        Ok(ToolOutput::text(text).with_structured(structured))
    }
}

/// Arguments of process_output.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutputArgs {
    /// Process id (`p1`, …).
    pub id: String,
    /// The last N lines instead of the new output (the cursor does not move).
    #[serde(default)]
    pub tail: Option<usize>,
    /// Read from this byte offset (a cursor of an earlier result).
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
        let proc = supervisor
            .get(&args.id)
            .ok_or_else(|| ToolError::model(unknown(&supervisor, &args.id).to_string()))?;
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
                |log| format!("the whole output is in {log} (read it in parts, with an offset and a limit)"),
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
    /// Process id (`p1`, …).
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
            .timeout_ms(30_000)
    }

    /// Stopping only ends what this session started and never touches the user's data; it is the
    /// safe direction, so it needs no approval.
    fn needs_approval(&self) -> bool {
        false
    }

    async fn call(&self, ctx: Context, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let supervisor = Supervisor::of(ctx.session(), &self.config);
        let proc = supervisor
            .get(&args.id)
            .ok_or_else(|| ToolError::model(unknown(&supervisor, &args.id).to_string()))?;
        let grace = Duration::from_millis(self.config.processes.stop_grace_ms);
        Ok(ToolOutput::text(background::stop(&proc, &Notes::of(&ctx), grace).await))
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
    fn the_list_shows_url_unread_and_log() {
        let rows = [ProcessRow {
            id: "p1".into(),
            kind: ProcessKind::Daemon,
            name: "web".into(),
            command: "npm run dev".into(),
            pid: 42,
            status: ProcessStatus::Running,
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
