//! Every console message of the page (log, info, debug, warn, error …), kept in a ring and read
//! since a cursor. The runtime-error collector keeps the errors and warnings among them with
//! their stacks, counted and source-mapped; this log is the plain stream a developer watches in
//! the DevTools console, kept without the session's secrets.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Messages kept.
const MAX_MESSAGES: usize = 1000;
/// Longest message kept, in bytes.
const MAX_TEXT: usize = 2000;

/// One console message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Its sequence number.
    pub seq: u64,
    /// log, info, debug, warning, error, assert, …
    pub level: String,
    /// The arguments, joined by spaces.
    pub text: String,
    /// `url:line:col` of the call, when known.
    pub location: Option<String>,
    /// The page load it belongs to.
    pub page_load: u64,
}

impl Message {
    /// `[error] boom (app.js:3:9)`.
    pub fn line(&self) -> String {
        let place = self
            .location
            .as_deref()
            .map_or(String::new(), |l| format!(" ({})", l.rsplit('/').next().unwrap_or(l)));
        format!("#{} [{}] {}{place}", self.seq, self.level, self.text)
    }
}

#[derive(Default)]
struct Inner {
    messages: VecDeque<Message>,
    seq: u64,
}

/// The session's console messages.
#[derive(Default)]
pub struct ConsoleLog {
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for ConsoleLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsoleLog").finish_non_exhaustive()
    }
}

impl ConsoleLog {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Keep a message.
    pub fn record(&self, level: &str, text: &str, location: Option<String>, page_load: u64) {
        let text = crate::network::capped(&hands_core::redact::text(text), MAX_TEXT);
        let location = location.map(|l| hands_core::redact::text(&l).into_owned());
        let mut inner = self.lock();
        inner.seq += 1;
        let seq = inner.seq;
        inner.messages.push_back(Message {
            seq,
            level: level.to_owned(),
            text,
            location,
            page_load,
        });
        while inner.messages.len() > MAX_MESSAGES {
            inner.messages.pop_front();
        }
    }

    /// The latest sequence number.
    pub fn cursor(&self) -> u64 {
        self.lock().seq
    }

    /// Messages after `since`, oldest first.
    pub fn since(&self, since: u64) -> Vec<Message> {
        self.lock().messages.iter().filter(|m| m.seq > since).cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_read_since_a_cursor() {
        let log = ConsoleLog::default();
        log.record("log", "hello", None, 1);
        let cursor = log.cursor();
        log.record("error", "boom", Some("http://h/src/app.js:3:9".into()), 1);
        let read = log.since(cursor);
        assert_eq!(read.len(), 1);
        assert_eq!(read[0].line(), "#2 [error] boom (app.js:3:9)");
        assert_eq!(log.since(0).len(), 2);
    }
}
