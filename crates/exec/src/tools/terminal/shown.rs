//! What a terminal call answers: the new output within the call's budget (its start and its end
//! when there is too much, the skipped middle readable again by offset from memory or the log),
//! the screen for a full-screen program, and the [`TerminalResult`] that carries all of it.

use std::io::{Read, Seek, SeekFrom};

use hands_core::ToolError;
use hands_core::ToolOutput;
use hands_core::process::ProcessStatus;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::text::clean;
use super::wait::Waited;
use crate::notes::{describe, exit_code, label, state};
use crate::supervisor::{Proc, Status};

/// Bytes of new output a result shows when the call names no budget.
const DEFAULT_MAX_BYTES: usize = 8 * 1024;
/// The largest budget a call may ask for.
const MAX_BYTES: usize = 256 * 1024;

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

/// The call's output budget in bytes: its `max_bytes`, capped, or the default.
pub(crate) fn budget(max_bytes: Option<usize>) -> Result<usize, ToolError> {
    match max_bytes {
        Some(0) => Err(ToolError::model("`max_bytes` must be at least 1.")),
        Some(n) => Ok(n.min(MAX_BYTES)),
        None => Ok(DEFAULT_MAX_BYTES),
    }
}

/// New output from `from` on, within `max` bytes: (text, skipped bytes, where the skipped part
/// starts, the end offset). Too much output shows its start and its end, the middle skipped.
pub(crate) fn output_since(proc: &Proc, root: &std::path::Path, from: u64, max: usize) -> Shown {
    let (memory, total, dropped) = proc.read_since(from);
    let new = total.saturating_sub(from);
    if new as usize <= max && dropped == 0 {
        return Shown { text: clean(&memory), skipped: 0, skipped_from: None, end: total };
    }
    // The line that says what was skipped counts against the budget too: its length is known
    // once the skipped range is, and the range depends on the room left, so it is sized for the
    // longest offsets (20 digits) first.
    let marker = |skipped: u64, from: u64| {
        format!(
            "… [{skipped} bytes skipped: terminal_read {{\"id\": \"{}\", \"offset\": {from}}} reads \
             them] …\n",
            proc.id
        )
    };
    let room = max.saturating_sub(marker(u64::MAX, u64::MAX).len() + 1);
    if room == 0 {
        // A budget too small for the line: the start only; the fields say what was left out.
        let head = read_range(proc, root, from, max).unwrap_or_default();
        let skipped_from = from + head.len() as u64;
        let skipped = total - skipped_from;
        let skipped_from = (skipped > 0).then_some(skipped_from);
        return Shown { text: clean(&head), skipped, skipped_from, end: total };
    }
    let head_len = room / 4;
    let tail_len = room - head_len;
    let head = read_range(proc, root, from, head_len).unwrap_or_default();
    let tail_start = total.saturating_sub(tail_len as u64).max(from + head.len() as u64);
    let tail =
        read_range(proc, root, tail_start, (total - tail_start) as usize).unwrap_or_default();
    let skipped_from = from + head.len() as u64;
    let skipped = tail_start.saturating_sub(skipped_from);
    let mut text = clean(&head);
    if skipped > 0 {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&marker(skipped, skipped_from));
    }
    text.push_str(&clean(&tail));
    Shown { text, skipped, skipped_from: (skipped > 0).then_some(skipped_from), end: total }
}

/// What a result shows of the new output.
pub(crate) struct Shown {
    text: String,
    skipped: u64,
    skipped_from: Option<u64>,
    /// The end of the output read: the read cursor after this call.
    pub(crate) end: u64,
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
pub(crate) struct Answer<'a> {
    pub(crate) proc: &'a Proc,
    pub(crate) waited: Waited,
    pub(crate) shown: Shown,
    /// Bytes typed by the call (terminal_send).
    pub(crate) sent: Option<u64>,
    /// Render the screen even for a line-mode program.
    pub(crate) screen: bool,
}

pub(crate) fn render(answer: Answer<'_>) -> ToolOutput {
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
