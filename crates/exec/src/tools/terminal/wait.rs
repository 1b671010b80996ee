//! How a terminal call waits after it started or typed: the yield window, a `wait_for` pattern
//! within a timeout, or the exit ([`settle`]); and the watcher of a terminal's life that records
//! its end, stops what it left holding the terminal, and sends the `notify_on` wake-ups.

use std::sync::Arc;
use std::time::Duration;

use hands_core::{CancellationToken, Notice, NoticeKind, Session, ToolError};
use regex::Regex;

use super::text::clean;
use crate::notes::{Notes, describe, label};
use crate::supervisor::{Proc, Status};

/// The yield window when a call names none: long enough for a prompt to appear.
const DEFAULT_YIELD_MS: u64 = 1_000;
/// The wait for a `wait_for` pattern or the exit when a call names none.
const DEFAULT_WAIT_MS: u64 = 30_000;
/// The longest any call waits (the tool's own limit is a little longer).
pub(crate) const MAX_WAIT_MS: u64 = 600_000;

/// What a call waits for after it started or typed.
#[derive(Debug)]
pub(crate) enum Until {
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
pub(crate) enum Waited {
    Now,
    Yield,
    Match(String),
    Exit,
    Timeout,
    Cancelled,
}

impl Waited {
    pub(crate) fn word(&self) -> &'static str {
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

pub(crate) fn pattern(name: &str, text: &str) -> Result<Regex, ToolError> {
    regex::RegexBuilder::new(text)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| ToolError::model(format!("`{name}` is not a valid regex: {e}")))
}

pub(crate) fn until(
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

/// terminal_read's wait: a pattern or the exit within `timeout_ms`, or none.
pub(crate) fn until_read(
    wait_for: Option<&str>,
    wait_exit: bool,
    timeout_ms: Option<u64>,
) -> Result<Until, ToolError> {
    let timeout = Duration::from_millis(timeout_ms.unwrap_or(DEFAULT_WAIT_MS).min(MAX_WAIT_MS));
    match (wait_for, wait_exit) {
        (Some(_), true) => Err(ToolError::model(
            "terminal_read takes `wait_for` or `wait_exit`, not both (a wait_for ends at the exit \
             too).",
        )),
        (Some(text), false) => Ok(Until::Pattern(pattern("wait_for", text)?, timeout)),
        (None, true) => Ok(Until::Exit(timeout)),
        (None, false) => Ok(Until::Now),
    }
}

/// Wait as `until` says, watching the output from byte `from`.
pub(crate) async fn settle(
    proc: &Proc,
    from: u64,
    until: &Until,
    cancel: &CancellationToken,
) -> Waited {
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

/// Watch a terminal to its end: record it, stop what it left holding the terminal, and send the
/// wake-up notices `notify_on` asked for.
pub(crate) fn watch(session: Session, proc: Arc<Proc>, notify: Option<Regex>, grace: Duration) {
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
