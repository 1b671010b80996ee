//! What exec remembers about each background process of a session beside the [`Supervisor`]'s own
//! state ([`Notes`]: read cursors, URL and port found at readiness, when each process ended), and
//! the words every process tool and notice uses for a process (its label, status, run time, last
//! lines).
//!
//! [`Supervisor`]: crate::supervisor::Supervisor

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use hands_core::process::{ProcessKind, ProcessStatus};
use hands_core::{Context, Session};
use tokio::time::Instant;

use crate::ready::strip_ansi;
use crate::supervisor::{Kind, Proc, Status};

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
        Self::of_session(ctx.session())
    }

    /// The notes of `session`.
    pub(crate) fn of_session(session: &Session) -> Arc<Self> {
        session.extension::<Self>()
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

/// The status column: running, exited, stopped.
pub(crate) fn state(status: &Status) -> ProcessStatus {
    match status {
        Status::Running => ProcessStatus::Running,
        Status::Exited { .. } => ProcessStatus::Exited,
        Status::Stopped { .. } => ProcessStatus::Stopped,
    }
}

/// The type column of a background process (`None` for bash's foreground commands).
pub(crate) fn process_kind(kind: Kind) -> Option<ProcessKind> {
    match kind {
        Kind::Foreground => None,
        Kind::Daemon => Some(ProcessKind::Daemon),
        Kind::LongRun => Some(ProcessKind::LongRun),
        Kind::Terminal => Some(ProcessKind::Terminal),
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

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(state(&Status::Stopped { reason: "stopped".into() }), ProcessStatus::Stopped);
        assert_eq!(exit_code(&Status::Exited { code: Some(0), signal: None }), Some(0));
    }

    #[test]
    fn durations_are_human() {
        assert_eq!(human(Duration::from_millis(400)), "0.4s");
        assert_eq!(human(Duration::from_secs(42)), "42s");
        assert_eq!(human(Duration::from_secs(192)), "3m 12s");
        assert_eq!(human(Duration::from_secs(7500)), "2h 5m");
    }
}
