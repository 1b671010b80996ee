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

use std::borrow::Cow;
use std::io::{Read, Seek, SeekFrom};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use hands_core::process::ProcessStatus;
use hands_core::{Annotations, Context, Notice, NoticeKind, Session, Tool, ToolError, ToolOutput};
use hands_core::{CancellationToken, Family, Label, Modes, Policy};
use regex::Regex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::config::ExecConfig;
use crate::launch::refuse_over_limit;
use crate::notes::{Notes, describe, exit_code, label, state};
use crate::ready::strip_ansi;
use crate::supervisor::{Kind, Proc, SpawnSpec, Status, Supervisor};
use crate::terminal::{self, KEY_NAMES, Size, WriteError};

/// The yield window when a call names none: long enough for a prompt to appear.
const DEFAULT_YIELD_MS: u64 = 1_000;
/// The wait for a `wait_for` pattern or the exit when a call names none.
const DEFAULT_WAIT_MS: u64 = 30_000;
/// The longest any call waits (the tool's own limit is a little longer).
const MAX_WAIT_MS: u64 = 600_000;
/// Bytes of new output a result shows when the call names no budget.
const DEFAULT_MAX_BYTES: usize = 8 * 1024;
/// The largest budget a call may ask for.
const MAX_BYTES: usize = 256 * 1024;
/// How long a write waits for a program that does not read its input.
const WRITE_DEADLINE: Duration = Duration::from_secs(5);
/// Input one call may type at most.
const MAX_INPUT: usize = 64 * 1024;

/// The structured result of every terminal tool: everything its text says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TerminalResult {
    /// The terminal's id (`p1`, …), shared with the background processes: stop_process stops it.
    pub id: String,
    /// Process id of its shell.
    pub pid: u32,
    /// Running, exited or stopped.
    pub status: ProcessStatus,
    /// Exit code, once it exited by itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// What ended the wait: `yield` (the window ran out), `match` (`wait_for` matched), `exit`,
    /// `timeout` (`wait_for` did not match in time), or `none` (nothing was waited for).
    pub waited: String,
    /// The text `wait_for` matched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matched: Option<String>,
    /// The new output, escape codes removed and progress redraws collapsed, capped by the budget.
    pub output: String,
    /// The output's end as a byte offset: the read cursor now.
    pub offset: u64,
    /// Bytes of new output left out by the budget (they are in the log).
    pub skipped_bytes: u64,
    /// Byte offset where the left-out output starts (read on with terminal_read `offset`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped_from: Option<u64>,
    /// Bytes typed into the terminal by this call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_bytes: Option<u64>,
    /// The screen as a person sees it (with `screen`, or for a full-screen program).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screen: Option<String>,
    /// Cursor row and column on the screen, from 0 (with `screen`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<[u16; 2]>,
    /// The whole output, relative to the project root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<String>,
}

/// Arguments of terminal_start.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StartArgs {
    /// The command line, run with `bash -c` in a new terminal in the project root.
    pub command: String,
    /// A name for people (defaults to the command).
    #[serde(default)]
    pub name: Option<String>,
    /// Return once the output matches this regex (or the program exits), instead of after the
    /// yield window.
    #[serde(default)]
    pub wait_for: Option<String>,
    /// With `wait_for`: the longest wait in milliseconds (default 30000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Without `wait_for`: milliseconds to let it run before answering (default 1000); it
    /// answers sooner when the program exits.
    #[serde(default)]
    pub yield_ms: Option<u64>,
    /// Bytes of output to return at most (default 8192).
    #[serde(default)]
    pub max_bytes: Option<usize>,
    /// Terminal columns (default 120).
    #[serde(default)]
    pub cols: Option<u16>,
    /// Terminal rows (default 40).
    #[serde(default)]
    pub rows: Option<u16>,
    /// Wake-up: when the output matches this regex, or the program exits, a notice reaches the
    /// model with its next tool result.
    #[serde(default)]
    pub notify_on: Option<String>,
}

/// Arguments of terminal_send.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendArgs {
    /// The terminal's id from terminal_start (`p1`, …).
    pub id: String,
    /// Text to type; a newline is sent as Enter.
    #[serde(default)]
    pub text: Option<String>,
    /// Named keys typed after the text, in order: Enter, Tab, Esc, Backspace, Up, Down, Left,
    /// Right, Home, End, PageUp, PageDown, Delete, Ctrl-C, Ctrl-D, … Ctrl-Z.
    #[serde(default)]
    pub keys: Vec<String>,
    /// Return once the new output matches this regex (or the program exits).
    #[serde(default)]
    pub wait_for: Option<String>,
    /// With `wait_for`: the longest wait in milliseconds (default 30000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Without `wait_for`: milliseconds to wait for the answer (default 1000).
    #[serde(default)]
    pub yield_ms: Option<u64>,
    /// Bytes of output to return at most (default 8192).
    #[serde(default)]
    pub max_bytes: Option<usize>,
}

/// Arguments of terminal_read.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadArgs {
    /// The terminal's id from terminal_start (`p1`, …).
    pub id: String,
    /// Wait until the new output matches this regex (or the program exits).
    #[serde(default)]
    pub wait_for: Option<String>,
    /// Wait until the program exits.
    #[serde(default)]
    pub wait_exit: bool,
    /// With `wait_for` or `wait_exit`: the longest wait in milliseconds (default 30000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Render the screen as a person sees it (for vi, less, top and other full-screen programs).
    #[serde(default)]
    pub screen: bool,
    /// Read the output from this byte offset (from `skipped_from` or an earlier `offset`) instead
    /// of from the last read.
    #[serde(default)]
    pub offset: Option<u64>,
    /// Bytes of output to return at most (default 8192).
    #[serde(default)]
    pub max_bytes: Option<usize>,
}

/// What a call waits for after it started or typed.
#[derive(Debug)]
enum Until {
    /// Nothing: answer now.
    Now,
    /// The window, or the exit.
    Yield(Duration),
    /// The pattern, or the exit, within the time.
    Pattern(Regex, Duration),
    /// The exit, within the time.
    Exit(Duration),
}

/// How the wait ended.
#[derive(Debug, PartialEq)]
enum Waited {
    Now,
    Yield,
    Match(String),
    Exit,
    Timeout,
    Cancelled,
}

impl Waited {
    fn word(&self) -> &'static str {
        match self {
            Waited::Now => "none",
            Waited::Yield => "yield",
            Waited::Match(_) => "match",
            Waited::Exit => "exit",
            Waited::Timeout => "timeout",
            Waited::Cancelled => "cancelled",
        }
    }
}

fn pattern(name: &str, text: &str) -> Result<Regex, ToolError> {
    regex::RegexBuilder::new(text)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| ToolError::model(format!("`{name}` is not a valid regex: {e}")))
}

fn until(
    wait_for: Option<&str>,
    timeout_ms: Option<u64>,
    yield_ms: Option<u64>,
) -> Result<Until, ToolError> {
    let clamp = |ms: u64| Duration::from_millis(ms.min(MAX_WAIT_MS));
    match wait_for {
        Some(text) => Ok(Until::Pattern(
            pattern("wait_for", text)?,
            clamp(timeout_ms.unwrap_or(DEFAULT_WAIT_MS)),
        )),
        None => Ok(Until::Yield(clamp(yield_ms.unwrap_or(DEFAULT_YIELD_MS)))),
    }
}

fn budget(max_bytes: Option<usize>) -> Result<usize, ToolError> {
    match max_bytes {
        Some(0) => Err(ToolError::model("`max_bytes` must be at least 1.")),
        Some(n) => Ok(n.min(MAX_BYTES)),
        None => Ok(DEFAULT_MAX_BYTES),
    }
}

/// Wait as `until` says, watching the output from byte `from`.
async fn settle(proc: &Proc, from: u64, until: &Until, cancel: &CancellationToken) -> Waited {
    let (limit, regex) = match until {
        Until::Now => return Waited::Now,
        Until::Yield(d) | Until::Exit(d) => (*d, None),
        Until::Pattern(re, d) => (*d, Some(re)),
    };
    let deadline = tokio::time::Instant::now() + limit;
    let mut changes = proc.subscribe();
    // Where the next search starts: a little before the end of what was searched, so that a
    // match split across two reads is found, without searching everything again each time.
    let mut scan_from = from;
    loop {
        if let Some(re) = regex {
            let (bytes, total, _) = proc.read_since(scan_from);
            let text = clean(&bytes);
            if let Some(m) = re.find(&text) {
                return Waited::Match(m.as_str().to_owned());
            }
            scan_from = total.saturating_sub(4096).max(from);
        }
        if proc.status() != Status::Running {
            // What it printed last may still be on its way through the drain.
            let _ = tokio::time::timeout(Duration::from_millis(200), proc.wait_drained()).await;
            if let Some(re) = regex {
                let (bytes, _, _) = proc.read_since(scan_from);
                if let Some(m) = re.find(&clean(&bytes)) {
                    return Waited::Match(m.as_str().to_owned());
                }
            }
            return Waited::Exit;
        }
        tokio::select! {
            changed = changes.changed() => {
                if changed.is_err() {
                    return Waited::Exit;
                }
            }
            () = tokio::time::sleep_until(deadline) => {
                return match until {
                    Until::Yield(_) => Waited::Yield,
                    _ => Waited::Timeout,
                };
            }
            () = cancel.cancelled() => return Waited::Cancelled,
        }
    }
}

static EXTRA_ESCAPES: LazyLock<Option<Regex>> = LazyLock::new(|| {
    // What strip_ansi leaves: charset selection (`ESC ( B`), keypad modes (`ESC =`, `ESC >`),
    // cursor save and restore (`ESC 7`, `ESC 8`).
    Regex::new(r"\x1b[()*+][0-9A-Za-z]|\x1b[=>78]").ok()
});

/// Terminal output as text a model reads: escape codes removed, `\r` redraws collapsed to what
/// the line finally shows, backspaces applied, other control characters dropped.
pub(crate) fn clean(bytes: &[u8]) -> String {
    let text = strip_ansi(&String::from_utf8_lossy(bytes));
    let text = match EXTRA_ESCAPES.as_ref() {
        Some(re) if text.contains('\x1b') => re.replace_all(&text, "").into_owned(),
        _ => text,
    };
    let mut out = String::with_capacity(text.len());
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let line = line.trim_end_matches('\r');
        // A progress bar redraws its line after `\r`: what a person sees is the last drawing.
        let shown = line.rsplit('\r').find(|part| !part.is_empty()).unwrap_or("");
        let mut kept = String::with_capacity(shown.len());
        for c in shown.chars() {
            match c {
                '\u{8}' => {
                    kept.pop();
                }
                '\t' => kept.push(c),
                c if c.is_control() => {}
                c => kept.push(c),
            }
        }
        out.push_str(&kept);
    }
    out
}

/// New output from `from` on, within `max` bytes: (text, skipped bytes, where the skipped part
/// starts, the end offset). Too much output shows its start and its end, the middle skipped.
fn output_since(proc: &Proc, root: &std::path::Path, from: u64, max: usize) -> Shown {
    let (memory, total, dropped) = proc.read_since(from);
    let new = total.saturating_sub(from);
    if new as usize <= max && dropped == 0 {
        return Shown { text: clean(&memory), skipped: 0, skipped_from: None, end: total };
    }
    let head_len = max / 4;
    let tail_len = max - head_len;
    let head = read_range(proc, root, from, head_len).unwrap_or_default();
    let tail_start = total.saturating_sub(tail_len as u64).max(from + head.len() as u64);
    let tail =
        read_range(proc, root, tail_start, (total - tail_start) as usize).unwrap_or_default();
    let skipped_from = from + head.len() as u64;
    let skipped = tail_start.saturating_sub(skipped_from);
    let mut text = clean(&head);
    if skipped > 0 {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!(
            "… [{skipped} bytes skipped: terminal_read {{\"id\": \"{}\", \"offset\": {skipped_from}}} \
             reads them] …\n",
            proc.id
        ));
    }
    text.push_str(&clean(&tail));
    Shown { text, skipped, skipped_from: (skipped > 0).then_some(skipped_from), end: total }
}

struct Shown {
    text: String,
    skipped: u64,
    skipped_from: Option<u64>,
    end: u64,
}

/// `len` bytes of output from `offset`: from memory when kept there, else from the log.
fn read_range(proc: &Proc, root: &std::path::Path, offset: u64, len: usize) -> Option<Vec<u8>> {
    let (memory, _, dropped) = proc.read_since(offset);
    if dropped == 0 {
        return Some(memory[..len.min(memory.len())].to_vec());
    }
    let log = proc.log_path()?;
    let name = log.rsplit('/').next()?;
    let dir = hands_core::middleware::truncate::hands_subdir(root, "processes").ok()?;
    let mut file = dir.open(name).ok()?.into_std();
    file.seek(SeekFrom::Start(offset)).ok()?;
    let mut bytes = Vec::with_capacity(len);
    file.take(len as u64).read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

/// The answer of a terminal call.
struct Answer<'a> {
    proc: &'a Proc,
    waited: Waited,
    shown: Shown,
    sent: Option<u64>,
    screen: bool,
}

fn render(answer: Answer<'_>) -> ToolOutput {
    let Answer { proc, waited, shown, sent, screen } = answer;
    let status = proc.status();
    let mut text = format!("Terminal {} — {}.", label(proc), describe(&status));
    if let Some(sent) = sent {
        text.push_str(&format!(" Typed {sent} bytes."));
    }
    match &waited {
        Waited::Match(m) => text.push_str(&format!("\nwait_for matched \"{m}\".")),
        Waited::Timeout => text.push_str("\nwait_for did not match before the timeout."),
        Waited::Cancelled => text.push_str("\nThe wait was cancelled."),
        Waited::Now | Waited::Yield | Waited::Exit => {}
    }
    let view = proc.terminal().map(|t| t.screen());
    // A full-screen program's output is drawing, not text: its screen says more.
    let show_screen = screen || view.as_ref().is_some_and(|v| v.alternate);
    let screen_text = view.as_ref().filter(|_| show_screen).map(|v| v.text());
    if let Some(screen_text) = &screen_text {
        text.push_str(&format!("\nScreen:\n{screen_text}"));
    } else if shown.text.trim().is_empty() {
        text.push_str("\nNo new output.");
    } else {
        text.push_str(&format!("\nOutput:\n{}", shown.text.trim_end_matches('\n')));
    }
    if status == Status::Running {
        text.push_str(&format!(
            "\nterminal_send {{\"id\": \"{0}\", \"text\": \"…\"}} types into it, terminal_read \
             {{\"id\": \"{0}\", \"wait_for\": \"…\"}} waits for output, stop_process {{\"id\": \
             \"{0}\"}} stops it.",
            proc.id
        ));
    }
    let result = TerminalResult {
        id: proc.id.clone(),
        pid: proc.pid,
        status: state(&status),
        exit_code: exit_code(&status),
        waited: waited.word().to_owned(),
        matched: match waited {
            Waited::Match(m) => Some(m),
            _ => None,
        },
        output: shown.text,
        offset: shown.end,
        skipped_bytes: shown.skipped,
        skipped_from: shown.skipped_from,
        sent_bytes: sent,
        screen: screen_text,
        cursor: view.filter(|_| show_screen).map(|v| [v.cursor.0, v.cursor.1]),
        log: proc.log_path(),
    };
    let structured = serde_json::to_value(&result).unwrap_or(serde_json::Value::Null);
    ToolOutput::text(text).with_structured(structured)
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

/// Watch a terminal to its end: record it, stop what it left holding the terminal, and send the
/// wake-up notices `notify_on` asked for.
fn watch(session: Session, proc: Arc<Proc>, notify: Option<Regex>, grace: Duration) {
    tokio::spawn(async move {
        let notes = Notes::of_session(&session);
        if let Some(re) = &notify {
            let mut changes = proc.subscribe();
            let mut scan_from = 0u64;
            while proc.status() == Status::Running {
                let (bytes, total, _) = proc.read_since(scan_from);
                let text = clean(&bytes);
                if let Some(m) = re.find(&text) {
                    session.push_notice(Notice::new(
                        NoticeKind::ProcessOutput,
                        format!(
                            "Terminal {} printed \"{}\" (notify_on). terminal_read {{\"id\": \"{}\"}} \
                             shows its new output.",
                            label(&proc),
                            m.as_str(),
                            proc.id
                        ),
                    ));
                    // Each notice for new output only: search on from the end of this read.
                    scan_from = total;
                } else {
                    scan_from = total.saturating_sub(4096).max(scan_from);
                }
                if changes.changed().await.is_err() {
                    break;
                }
            }
        }
        let status = proc.wait_exit().await;
        notes.ended(&proc.id);
        // A program that leaves a child holding the terminal (a daemon that did not detach) is
        // over when its shell is: the rest is stopped, as bash stops what a command leaves.
        if tokio::time::timeout(Duration::from_millis(500), proc.wait_drained()).await.is_err()
            || proc.has_leftovers()
        {
            proc.stop("exited", grace).await;
        }
        let by_request = matches!(&status, Status::Stopped { reason }
            if reason == "stopped" || reason == "session ended");
        if notify.is_some() && !by_request {
            session.push_notice(Notice::new(
                NoticeKind::ProcessExited,
                format!("Terminal {} {}.", label(&proc), describe(&status)),
            ));
        }
    });
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

    /// Typing into a terminal the model started was approved with its start (terminal_start asks
    /// as bash does): the program it talks to is the one approved.
    fn needs_approval(&self) -> bool {
        false
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
        if args.wait_for.is_some() && args.wait_exit {
            return Err(ToolError::model(
                "terminal_read takes `wait_for` or `wait_exit`, not both (a wait_for ends at the \
                 exit too).",
            ));
        }
        let max = budget(args.max_bytes)?;
        let timeout = Duration::from_millis(args.timeout_ms.unwrap_or(DEFAULT_WAIT_MS));
        let until = match (&args.wait_for, args.wait_exit) {
            (Some(text), _) => {
                Until::Pattern(pattern("wait_for", text)?, timeout.min(MAX_WAIT_MS_DURATION))
            }
            (None, true) => Until::Exit(timeout.min(MAX_WAIT_MS_DURATION)),
            (None, false) => Until::Now,
        };
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

const MAX_WAIT_MS_DURATION: Duration = Duration::from_millis(MAX_WAIT_MS);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cleaning_removes_escapes_and_collapses_redraws() {
        assert_eq!(clean(b"\x1b[32mok\x1b[0m\r\n"), "ok\n");
        assert_eq!(clean(b"10%\r50%\r100%\r\ndone"), "100%\ndone");
        assert_eq!(clean(b"abc\x08\x08X\x07"), "aX");
        assert_eq!(clean(b"\x1b(B\x1b=prompt> "), "prompt> ");
    }

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
