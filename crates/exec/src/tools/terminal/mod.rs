//! Terminal sessions: terminal_start, terminal_send and terminal_read, over the supervisor's
//! pseudo-terminals (terminal.rs).
//!
//! Flow: terminal_start checks the arguments and the per-session limit, starts the command in a
//! new pty as a `Kind::Terminal` process (id `pN`, listed and stopped with the other background
//! processes), then *settles*: it waits for the yield window, a `wait_for` pattern or the exit,
//! whichever comes first, and answers with the output since the session's read cursor, capped by
//! the call's budget. terminal_send writes text and named keys, then settles the same way;
//! terminal_read settles without writing, reads from an offset, or renders the screen. A watcher
//! task records the exit, stops what the command left holding the terminal, and — when the call
//! asked with `notify_on` — queues a notice for the model's next result when the output matches
//! or the program exits.

mod shown;
mod text;
mod wait;

pub use shown::TerminalResult;

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use hands_core::approval::Review;
use hands_core::{Annotations, Context, Tool, ToolError, ToolOutput};
use hands_core::{Family, Label, Modes, Policy};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::config::ExecConfig;
use crate::launch::refuse_over_limit;
use crate::notes::{Notes, describe, label};
use crate::supervisor::{Kind, Proc, SpawnSpec, Status, Supervisor};
use crate::terminal::{self, KEY_NAMES, Size, WriteError};
use shown::{Answer, budget, output_since, render};
use wait::{MAX_WAIT_MS, Waited, pattern, settle, until, until_read, watch};

/// How long a write waits for a program that does not read its input.
const WRITE_DEADLINE: Duration = Duration::from_secs(5);
/// Input one call may type at most.
const MAX_INPUT: usize = 64 * 1024;

/// Arguments of terminal_start.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StartArgs {
    /// The command line, run with `bash -c`.
    pub command: String,
    /// Name for people (default: the command).
    #[serde(default)]
    pub name: Option<String>,
    /// Return once the output matches this regex.
    #[serde(default)]
    pub wait_for: Option<String>,
    /// Longest `wait_for` wait, ms (default 30000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Without `wait_for`: ms to wait (default 1000).
    #[serde(default)]
    pub yield_ms: Option<u64>,
    /// Output bytes returned at most (default 8192).
    #[serde(default)]
    pub max_bytes: Option<usize>,
    /// Terminal columns (default 120).
    #[serde(default)]
    pub cols: Option<u16>,
    /// Terminal rows (default 40).
    #[serde(default)]
    pub rows: Option<u16>,
    /// Regex: when the output matches it or the program exits, a notice comes with a later tool
    /// result.
    #[serde(default)]
    pub notify_on: Option<String>,
}

/// Arguments of terminal_send.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendArgs {
    /// Terminal id (`p1`, …).
    pub id: String,
    /// Text to type.
    #[serde(default)]
    pub text: Option<String>,
    /// Keys typed after the text: Enter, Tab, Esc, Backspace, Up, Down, Left, Right, Home, End,
    /// PageUp, PageDown, Delete, Ctrl-A … Ctrl-Z.
    #[serde(default)]
    pub keys: Vec<String>,
    /// Return once the new output matches this regex.
    #[serde(default)]
    pub wait_for: Option<String>,
    /// Longest `wait_for` wait, ms (default 30000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Without `wait_for`: ms to wait (default 1000).
    #[serde(default)]
    pub yield_ms: Option<u64>,
    /// Output bytes returned at most (default 8192).
    #[serde(default)]
    pub max_bytes: Option<usize>,
}

/// Arguments of terminal_read.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadArgs {
    /// Terminal id (`p1`, …).
    pub id: String,
    /// Wait until the new output matches this regex.
    #[serde(default)]
    pub wait_for: Option<String>,
    /// Wait until the program exits.
    #[serde(default)]
    pub wait_exit: bool,
    /// Longest wait, ms (default 30000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Render the screen as a person sees it (full-screen programs are shown so anyway).
    #[serde(default)]
    pub screen: bool,
    /// Read from this byte offset (`skipped_from` of an earlier result).
    #[serde(default)]
    pub offset: Option<u64>,
    /// Output bytes returned at most (default 8192).
    #[serde(default)]
    pub max_bytes: Option<usize>,
}

/// The terminal `id` of this session, or a model error listing the ones there are.
fn find(ctx: &Context, config: &ExecConfig, id: &str) -> Result<Arc<Proc>, ToolError> {
    let supervisor = Supervisor::of(ctx.session(), config);
    match supervisor.get(id) {
        Some(proc) if proc.terminal().is_some() => Ok(proc),
        Some(proc) => Err(ToolError::model(format!(
            "{} is a background process, not a terminal: it takes no input. Read it with \
             process_output; start commands that need input with terminal_start.",
            label(&proc)
        ))),
        None => {
            let ids: Vec<String> = supervisor
                .list()
                .iter()
                .filter(|p| p.kind == Kind::Terminal)
                .map(|p| p.id.clone())
                .collect();
            Err(ToolError::model(if ids.is_empty() {
                format!("No terminal `{id}`: this session has none. Start one with terminal_start.")
            } else {
                format!("No terminal `{id}`. This session's terminals: {}.", ids.join(", "))
            }))
        }
    }
}

fn check_command(command: &str) -> Result<(), ToolError> {
    if command.trim().is_empty() {
        return Err(ToolError::model("`command` is empty: give the command line to run."));
    }
    if command.contains('\0') {
        return Err(ToolError::model("`command` contains a NUL byte, which no command can carry."));
    }
    Ok(())
}

fn size(cols: Option<u16>, rows: Option<u16>) -> Result<Size, ToolError> {
    let cols = cols.unwrap_or(Size::DEFAULT.cols);
    let rows = rows.unwrap_or(Size::DEFAULT.rows);
    if !(20..=500).contains(&cols) || !(5..=200).contains(&rows) {
        return Err(ToolError::model(format!(
            "A terminal of {cols}x{rows} cannot be made: `cols` must be 20–500 and `rows` 5–200."
        )));
    }
    Ok(Size { cols, rows })
}

/// The terminal_start tool.
#[derive(Debug, Clone)]
pub struct TerminalStart {
    config: ExecConfig,
}

impl TerminalStart {
    /// With `config`.
    pub fn new(config: ExecConfig) -> Self {
        Self { config }
    }
}

impl Tool for TerminalStart {
    type Args = StartArgs;

    /// A wait for output.
    fn outlasts(&self, args: &Self::Args) -> bool {
        args.wait_for.is_some()
    }

    fn name(&self) -> &'static str {
        "terminal_start"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("terminal_start.md"))
    }

    fn annotations(&self) -> Annotations {
        // As bash: it runs a command.
        Annotations { read_only: false, destructive: true, idempotent: false, open_world: true }
    }

    fn policy(&self) -> Policy {
        Policy::from_annotations(self.annotations())
            .label(Label::Key { key: "command" })
            .family(Family::Processes)
            .timeout_ms(MAX_WAIT_MS + 10_000)
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        Some(hands_core::output_schema_for::<TerminalResult>())
    }

    async fn call(&self, ctx: Context, args: Self::Args) -> Result<ToolOutput, ToolError> {
        check_command(&args.command)?;
        let size = size(args.cols, args.rows)?;
        let until = until(args.wait_for.as_deref(), args.timeout_ms, args.yield_ms)?;
        let max = budget(args.max_bytes)?;
        let notify = args.notify_on.as_deref().map(|p| pattern("notify_on", p)).transpose()?;
        let supervisor = Supervisor::of(ctx.session(), &self.config);
        refuse_over_limit(&supervisor, &self.config)?;
        let buffer = self.config.processes.buffer_bytes;
        let spec = SpawnSpec {
            command: args.command.clone(),
            kind: Kind::Terminal,
            name: args.name.clone(),
            cwd: ctx.root().to_path_buf(),
            head: buffer / 4,
            tail: buffer - buffer / 4,
            log: true,
        };
        let proc = supervisor.spawn_terminal(spec, size).map_err(|e| {
            ToolError::model(format!("Could not start `{}` in a terminal: {e}.", args.command))
        })?;
        let grace = Duration::from_millis(self.config.processes.stop_grace_ms);
        watch(ctx.session().clone(), Arc::clone(&proc), notify, grace);
        let waited = settle(&proc, 0, &until, ctx.cancel_token()).await;
        if waited == Waited::Cancelled {
            proc.stop("aborted", grace).await;
            return Err(ToolError::model(format!(
                "terminal_start was cancelled; {} was stopped.",
                label(&proc)
            )));
        }
        let notes = Notes::of(&ctx);
        let shown = output_since(&proc, ctx.root(), 0, max);
        notes.update(&proc.id, |n| n.cursor = n.cursor.max(shown.end));
        let mut output = render(Answer { proc: &proc, waited, shown, sent: None, screen: false });
        if ctx.session().is_one_shot() && proc.status() == Status::Running {
            output = output.with_text(
                "Note: this one-shot `hands call` session ends now, so the terminal is stopped as \
                 hands exits. Run hands as a server (`hands mcp`, `hands serve`) to type into it.",
            );
        }
        Ok(output)
    }
}

/// The terminal_send tool.
#[derive(Debug, Clone)]
pub struct TerminalSend {
    config: ExecConfig,
}

impl TerminalSend {
    /// With `config`.
    pub fn new(config: ExecConfig) -> Self {
        Self { config }
    }
}

/// Keys that only move or page and the few letters a pager pages and quits with: typed into the
/// terminal without asking. Everything else may make the program run something it was not
/// approved to run — Enter, but also bash's Ctrl-O or `Esc 1 Esc #` (which uncomments and runs
/// the line), a vi-mode shell's `v` … `ZZ` — and asks.
const MOVES_ONLY: &[&str] = &[
    "up",
    "down",
    "left",
    "right",
    "home",
    "end",
    "pageup",
    "page-up",
    "pgup",
    "pagedown",
    "page-down",
    "pgdn",
    "ctrl-c",
    "c-c",
];

/// Text a pager takes for paging or quitting: space, `q`, `j`, `k`, `b`, `g`, `G`. It goes in
/// unasked only while a full-screen program holds the terminal (less, man, top: the alternate
/// screen); typed into a shell, `bg` or `gg` is a command line like any other.
fn pages_only(text: &str) -> bool {
    text.chars().all(|c| matches!(c, ' ' | 'q' | 'j' | 'k' | 'b' | 'g' | 'G'))
}

/// Every key only moves or pages (see [`MOVES_ONLY`]).
fn keys_move(keys: &[String]) -> bool {
    keys.iter().all(|k| {
        let lower = k.trim().to_ascii_lowercase().replace(['_', ' ', '+'], "-");
        MOVES_ONLY.contains(&lower.as_str())
    })
}

/// The call may make the program run something: any text (a pager's letters are let through by
/// the review, on a full-screen program only) or a key that does more than move.
fn may_run(text: Option<&str>, keys: &[String]) -> bool {
    !(text.is_none() && keys_move(keys))
}

/// The screen row the cursor is on: what Enter would submit to a shell (a line recalled from
/// its history with Up is there, not in what is typed).
fn cursor_line(screen: &crate::terminal::ScreenView) -> Option<String> {
    let line = screen.lines.get(usize::from(screen.cursor.0))?.trim_end();
    (!line.trim().is_empty()).then(|| typed(line.as_bytes()))
}

/// `bytes` as the user should read them: printable text as it is, Enter as `⏎`, other control
/// bytes as `^X`, the rest escaped.
fn typed(bytes: &[u8]) -> String {
    let mut out = String::new();
    for chunk in String::from_utf8_lossy(bytes).chars() {
        match chunk {
            '\r' | '\n' => out.push('⏎'),
            '\x1b' => out.push_str("^["),
            c if (c as u32) < 0x20 => {
                out.push('^');
                out.push(char::from(b'@' + c as u8));
            }
            '\x7f' => out.push_str("^?"),
            c if c.is_control() => out.extend(c.escape_unicode()),
            c => out.push(c),
        }
    }
    out
}

/// The bytes `text` and `keys` type: text first (a newline as Enter), then the keys.
fn keystrokes(
    text: Option<&str>,
    keys: &[String],
    application_cursor: bool,
) -> Result<Vec<u8>, ToolError> {
    let mut bytes = Vec::new();
    if let Some(text) = text {
        // A keyboard's Enter sends a carriage return; the terminal turns it into a newline for
        // programs that read lines, and raw programs (vi) expect it.
        bytes.extend(text.replace("\r\n", "\r").replace('\n', "\r").into_bytes());
    }
    for name in keys {
        let key = terminal::key(name, application_cursor).ok_or_else(|| {
            ToolError::model(format!("`{name}` is not a key this tool knows. Keys: {KEY_NAMES}."))
        })?;
        bytes.extend(key);
    }
    if bytes.is_empty() {
        return Err(ToolError::model(
            "Nothing to type: give `text`, `keys`, or both. To only wait or read, use \
             terminal_read.",
        ));
    }
    if bytes.len() > MAX_INPUT {
        return Err(ToolError::model(format!(
            "{} bytes is more input than one call types (at most {MAX_INPUT}). Write long text to \
             a file first and have the program read it.",
            bytes.len()
        )));
    }
    Ok(bytes)
}

impl Tool for TerminalSend {
    type Args = SendArgs;

    /// A wait for output.
    fn outlasts(&self, args: &Self::Args) -> bool {
        args.wait_for.is_some()
    }

    fn name(&self) -> &'static str {
        "terminal_send"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("terminal_send.md"))
    }

    fn annotations(&self) -> Annotations {
        Annotations { read_only: false, destructive: false, idempotent: false, open_world: false }
    }

    fn policy(&self) -> Policy {
        Policy::from_annotations(self.annotations())
            .label(Label::Key { key: "id" })
            .family(Family::Processes)
            .timeout_ms(MAX_WAIT_MS + 10_000)
    }

    /// Keys that only move or page (and a pager's space, `q`, `j`, `k`, `b`, `g`) were approved
    /// with the terminal's start (terminal_start asks as bash does). Any other input asks: a
    /// pager's `!command`, an editor's `:!command`, a line typed into a shell — or a key binding
    /// that runs the line without Enter — runs what the start's approval never showed.
    fn call_policy(&self, args: &Self::Args) -> hands_core::CallPolicy {
        hands_core::CallPolicy {
            needs_approval: may_run(args.text.as_deref(), &args.keys),
            mutates: true,
            cacheable: false,
            outlasts: false,
        }
    }

    /// The terminal's program and exactly what is typed, control keys named, with the screen's
    /// line at the cursor, which the input joins. A pager's letters into a full-screen program
    /// are not asked about.
    async fn review(&self, ctx: &Context, args: &Self::Args) -> Result<Review, ToolError> {
        let proc = find(ctx, &self.config, &args.id)?;
        let bytes = keystrokes(args.text.as_deref(), &args.keys, false)?;
        let screen = proc.terminal().map(|t| t.screen());
        if let Some(screen) = &screen
            && screen.alternate
            && args.text.as_deref().is_some_and(pages_only)
            && keys_move(&args.keys)
        {
            return Ok(Review { nothing_to_ask: true, ..Review::default() });
        }
        let review = Review::summary(format!(
            "terminal_send: type into {}: {}",
            label(&proc),
            typed(&bytes)
        ));
        Ok(match screen.as_ref().and_then(cursor_line) {
            Some(line) => review.with_details(format!(
                "The terminal's line at the cursor, which this input joins (Enter submits it): \
                 {line}"
            )),
            None => review,
        })
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        Some(hands_core::output_schema_for::<TerminalResult>())
    }

    async fn call(&self, ctx: Context, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let until = until(args.wait_for.as_deref(), args.timeout_ms, args.yield_ms)?;
        let max = budget(args.max_bytes)?;
        let proc = find(&ctx, &self.config, &args.id)?;
        let Some(terminal) = proc.terminal() else {
            return Err(ToolError::model(format!("{} has no terminal.", label(&proc))));
        };
        let bytes = keystrokes(args.text.as_deref(), &args.keys, terminal.application_cursor())?;
        if proc.status() != Status::Running {
            return Err(ToolError::model(format!(
                "Terminal {} {}: there is nothing to type into. terminal_read {{\"id\": \"{}\"}} \
                 shows what it printed.",
                label(&proc),
                describe(&proc.status()),
                proc.id
            )));
        }
        let notes = Notes::of(&ctx);
        let from = notes.get(&proc.id).cursor;
        let sent = match terminal.write(bytes, WRITE_DEADLINE).await {
            Ok(n) => n,
            Err(WriteError::NotReading { sent }) => {
                return Err(ToolError::model(format!(
                    "Terminal {} has not read its input for {}s: only {sent} bytes went in. It \
                     may be busy or stopped; terminal_read {{\"id\": \"{}\", \"screen\": true}} \
                     shows its screen, Ctrl-C (keys: [\"Ctrl-C\"]) interrupts it.",
                    label(&proc),
                    WRITE_DEADLINE.as_secs(),
                    proc.id
                )));
            }
            Err(WriteError::Closed) => {
                return Err(ToolError::model(format!(
                    "Terminal {} closed before the input could be typed.",
                    label(&proc)
                )));
            }
        };
        let waited = settle(&proc, from, &until, ctx.cancel_token()).await;
        let shown = output_since(&proc, ctx.root(), from, max);
        notes.update(&proc.id, |n| n.cursor = n.cursor.max(shown.end));
        Ok(render(Answer { proc: &proc, waited, shown, sent: Some(sent as u64), screen: false }))
    }
}

/// The terminal_read tool.
#[derive(Debug, Clone)]
pub struct TerminalRead {
    config: ExecConfig,
}

impl TerminalRead {
    /// With `config`.
    pub fn new(config: ExecConfig) -> Self {
        Self { config }
    }
}

impl Tool for TerminalRead {
    type Args = ReadArgs;

    /// A wait for output or for the program's end.
    fn outlasts(&self, args: &Self::Args) -> bool {
        args.wait_for.is_some() || args.wait_exit
    }

    fn name(&self) -> &'static str {
        "terminal_read"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("terminal_read.md"))
    }

    fn annotations(&self) -> Annotations {
        // Changes nothing but this session's read cursor.
        Annotations { read_only: true, destructive: false, idempotent: false, open_world: false }
    }

    fn policy(&self) -> Policy {
        // Build mode only: the terminals are build mode's.
        Policy::from_annotations(self.annotations())
            .modes(Modes::BUILD)
            .label(Label::Key { key: "id" })
            .family(Family::Processes)
            .timeout_ms(MAX_WAIT_MS + 10_000)
    }

    /// New output arrives by itself: never answered from the dedup cache.
    fn cacheable(&self) -> bool {
        false
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        Some(hands_core::output_schema_for::<TerminalResult>())
    }

    async fn call(&self, ctx: Context, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let max = budget(args.max_bytes)?;
        let until = until_read(args.wait_for.as_deref(), args.wait_exit, args.timeout_ms)?;
        let proc = find(&ctx, &self.config, &args.id)?;
        let notes = Notes::of(&ctx);
        let cursor = notes.get(&proc.id).cursor;
        let from = args.offset.unwrap_or(cursor);
        let total = proc.read_since(u64::MAX).1;
        if from > total {
            return Err(ToolError::model(format!(
                "`offset` {from} is past the end of the output ({total} bytes so far)."
            )));
        }
        let waited = settle(&proc, from, &until, ctx.cancel_token()).await;
        let shown = output_since(&proc, ctx.root(), from, max);
        if args.offset.is_none() {
            notes.update(&proc.id, |n| n.cursor = n.cursor.max(shown.end));
        }
        Ok(render(Answer { proc: &proc, waited, shown, sent: None, screen: args.screen }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_keys_become_keystrokes() {
        let bytes = keystrokes(Some("ls\n"), &["Ctrl-C".into()], false).unwrap();
        assert_eq!(bytes, b"ls\r\x03");
        assert!(keystrokes(None, &[], false).is_err());
        let err = keystrokes(None, &["Hyper".into()], false).unwrap_err().to_string();
        assert!(err.contains("Enter, Tab"), "{err}");
    }

    fn example(md: &str) -> serde_json::Value {
        let json = md.split("```json").nth(1).and_then(|s| s.split("```").next()).unwrap();
        serde_json::from_str(json.trim()).unwrap()
    }

    #[test]
    fn the_description_examples_parse() {
        let a: StartArgs =
            hands_core::args::parse("terminal_start", example(include_str!("terminal_start.md")))
                .unwrap();
        assert_eq!(a.command, "python3");
        let a: SendArgs =
            hands_core::args::parse("terminal_send", example(include_str!("terminal_send.md")))
                .unwrap();
        assert_eq!(a.id, "p1");
        let a: ReadArgs =
            hands_core::args::parse("terminal_read", example(include_str!("terminal_read.md")))
                .unwrap();
        assert_eq!(a.id, "p1");
    }
}
