//! The runtime-error collector of one session: what the page throws, logs and fails to load, and
//! what the typecheck and build steps report, normalized and counted.
//!
//! Every occurrence gets the next sequence number. Occurrences with the same key (page load, kind,
//! message and location, with cache-busting query strings removed) are one entry whose `count`
//! grows and whose `seq` moves to the latest occurrence, so that a cursor (`since`) returns what is
//! new or repeated since. The collector keeps at most `max` entries, dropping the oldest.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, PoisonError};

use tokio::sync::watch;

/// Stack frames kept per error.
pub const MAX_FRAMES: usize = 5;

pub use hands_core::preview::{ErrorCounts, ErrorKind, Frame, RuntimeError};

/// One kept entry: the row, whether source maps were consulted for it, and the key repeats of it
/// share.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// What the model and the front ends see.
    pub error: RuntimeError,
    /// True once source maps were consulted for its frames.
    pub mapped: bool,
    key: String,
}

/// An occurrence to record.
#[derive(Debug, Clone, Default)]
pub struct Occurrence {
    /// Message.
    pub message: String,
    /// Location `url:line:col`.
    pub location: Option<String>,
    /// Frames, top first.
    pub stack: Vec<Frame>,
}

/// What a read returns.
#[derive(Debug, Clone, PartialEq)]
pub struct Read {
    /// New or repeated entries since the cursor, oldest first.
    pub entries: Vec<Entry>,
    /// The cursor to pass as `since` next time.
    pub cursor: u64,
    /// The cursor the read started from.
    pub since: u64,
    /// Entries dropped (over `max`) that the reader had not seen.
    pub dropped: u64,
    /// URL of each page load, by number.
    pub loads: Vec<(u64, String)>,
}

struct Inner {
    entries: VecDeque<Entry>,
    seq: u64,
    read_cursor: u64,
    announced: u64,
    dropped_after: Vec<u64>,
    load: u64,
    loads: Vec<(u64, String)>,
}

/// The errors of one session's preview.
pub struct Collector {
    inner: Mutex<Inner>,
    max: usize,
    changes: watch::Sender<u64>,
}

impl std::fmt::Debug for Collector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Collector").field("max", &self.max).finish_non_exhaustive()
    }
}

impl Collector {
    /// Keep at most `max` entries.
    pub fn new(max: usize) -> Self {
        Self {
            inner: Mutex::new(Inner {
                entries: VecDeque::new(),
                seq: 0,
                read_cursor: 0,
                announced: 0,
                dropped_after: Vec::new(),
                load: 0,
                loads: Vec::new(),
            }),
            max: max.max(1),
            changes: watch::Sender::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new page load began at `url`; returns its number.
    pub fn page_load(&self, url: &str) -> u64 {
        let mut inner = self.lock();
        inner.load += 1;
        let n = inner.load;
        inner.loads.push((n, clean(strip_cache_busters(url))));
        if inner.loads.len() > 64 {
            inner.loads.remove(0);
        }
        n
    }

    /// The current page load's number (0 before the first).
    pub fn current_load(&self) -> u64 {
        self.lock().load
    }

    /// Record an occurrence in the current page load.
    pub fn record(&self, kind: ErrorKind, occurrence: Occurrence) {
        let load = self.current_load();
        self.record_in(kind, occurrence, load);
    }

    /// Record an occurrence that belongs to no page (typecheck, build).
    pub fn record_build(&self, kind: ErrorKind, occurrence: Occurrence) {
        self.record_in(kind, occurrence, 0);
    }

    fn record_in(&self, kind: ErrorKind, mut occurrence: Occurrence, page_load: u64) {
        // Kept without secrets: the page may log a key, a URL may carry one in its query.
        occurrence.message = clean(normalize_message(&occurrence.message));
        occurrence.location = occurrence.location.map(|l| clean(strip_cache_busters(&l)));
        occurrence.stack.truncate(MAX_FRAMES);
        for frame in &mut occurrence.stack {
            frame.url = clean(strip_cache_busters(&frame.url));
            frame.function = clean(std::mem::take(&mut frame.function));
        }
        let key = format!(
            "{page_load}\u{1}{kind:?}\u{1}{}\u{1}{}",
            occurrence.message,
            occurrence.location.as_deref().unwrap_or("")
        );
        let now_ms = now_ms();
        let seq = {
            let mut inner = self.lock();
            inner.seq += 1;
            let seq = inner.seq;
            if let Some(entry) = inner.entries.iter_mut().find(|e| e.key == key) {
                entry.error.seq = seq;
                entry.error.count += 1;
                entry.error.last_at_ms = now_ms;
            } else {
                let error = RuntimeError {
                    seq,
                    kind,
                    message: occurrence.message,
                    location: occurrence.location,
                    original_location: None,
                    stack: occurrence.stack,
                    count: 1,
                    page_load,
                    last_at_ms: now_ms,
                };
                inner.entries.push_back(Entry { error, mapped: false, key });
                while inner.entries.len() > self.max {
                    if let Some(old) = inner.entries.pop_front() {
                        inner.dropped_after.push(old.error.seq);
                        if inner.dropped_after.len() > 4096 {
                            inner.dropped_after.remove(0);
                        }
                    }
                }
            }
            seq
        };
        self.changes.send_replace(seq);
    }

    /// Entries new or repeated after `since` (default: where the last read stopped), warnings
    /// included or not. Moves the session's read cursor.
    pub fn read(&self, since: Option<u64>, warnings: bool) -> Read {
        let mut inner = self.lock();
        let since = since.unwrap_or(inner.read_cursor);
        let mut entries: Vec<Entry> = inner
            .entries
            .iter()
            .filter(|e| e.error.seq > since && (warnings || !e.error.kind.is_warning()))
            .cloned()
            .collect();
        entries.sort_by_key(|e| e.error.seq);
        let cursor = inner.seq;
        inner.read_cursor = inner.read_cursor.max(cursor);
        inner.announced = inner.announced.max(cursor);
        let dropped = inner.dropped_after.iter().filter(|s| **s > since).count() as u64;
        Read { entries, cursor, since, dropped, loads: inner.loads.clone() }
    }

    /// Store what source maps said about an entry's frames.
    pub fn set_mapped(&self, of: &Entry, stack: Vec<Frame>, original: Option<String>) {
        let mut inner = self.lock();
        if let Some(entry) = inner.entries.iter_mut().find(|e| e.key == of.key) {
            entry.error.stack = stack;
            entry.error.original_location = original;
            entry.mapped = true;
        }
    }

    /// Every entry kept, oldest first, and the counts; the read cursor does not move (for front
    /// ends that show the errors beside the model).
    pub fn snapshot(&self) -> (Vec<RuntimeError>, ErrorCounts) {
        let inner = self.lock();
        let mut errors: Vec<RuntimeError> = inner.entries.iter().map(|e| e.error.clone()).collect();
        errors.sort_by_key(|e| e.seq);
        (errors, counts(&inner))
    }

    /// The counts alone.
    pub fn counts(&self) -> ErrorCounts {
        counts(&self.lock())
    }

    /// Errors (not warnings) new since the last read or notice, as one line for the next tool
    /// result; `None` when there are none. Each error is announced once.
    pub fn notice(&self) -> Option<String> {
        let mut inner = self.lock();
        let after = inner.read_cursor.max(inner.announced);
        if inner.seq <= after {
            return None;
        }
        let new = inner
            .entries
            .iter()
            .filter(|e| e.error.seq > after && !e.error.kind.is_warning())
            .count();
        inner.announced = inner.seq;
        match new {
            0 => None,
            1 => Some("1 new runtime error in the preview — read_runtime_errors".to_owned()),
            n => Some(format!("{n} new runtime errors in the preview — read_runtime_errors")),
        }
    }

    /// Count everything so far as announced (a result that already tells of the unread errors).
    pub fn announce_all(&self) {
        let mut inner = self.lock();
        inner.announced = inner.seq;
    }

    /// Errors and warnings not yet read.
    pub fn unread(&self) -> usize {
        let inner = self.lock();
        inner.entries.iter().filter(|e| e.error.seq > inner.read_cursor).count()
    }

    /// Entries kept.
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// True when nothing was recorded (or all was dropped).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The latest sequence number; changes with every occurrence (for waiting in tests and
    /// benchmarks).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }
}

fn counts(inner: &Inner) -> ErrorCounts {
    let warnings = inner.entries.iter().filter(|e| e.error.kind.is_warning()).count();
    ErrorCounts {
        errors: inner.entries.len() - warnings,
        warnings,
        occurrences: inner.entries.iter().map(|e| e.error.count).sum(),
        unread: inner.entries.iter().filter(|e| e.error.seq > inner.read_cursor).count(),
        dropped: inner.dropped_after.len() as u64,
    }
}

/// `text` with its secrets replaced (no copy when it has none).
fn clean(text: String) -> String {
    match hands_core::redact::text(&text) {
        std::borrow::Cow::Borrowed(_) => text,
        std::borrow::Cow::Owned(clean) => clean,
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Collapse runs of whitespace and trim; very long messages are cut.
pub fn normalize_message(message: &str) -> String {
    let mut out = String::with_capacity(message.len().min(4096));
    for (i, line) in message.trim().lines().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(line.trim_end());
        if out.len() > 4000 {
            let mut cut = 4000;
            while !out.is_char_boundary(cut) {
                cut -= 1;
            }
            out.truncate(cut);
            out.push_str(" …");
            break;
        }
    }
    out
}

/// Remove the query parameters dev servers add to bust caches (`?t=1712345`, `?v=ab12cd`,
/// `?import`), so that the same error after a hot update is the same entry.
pub fn strip_cache_busters(url: &str) -> String {
    let Some(q) = url.find('?') else { return url.to_owned() };
    // The query ends at `#` or at a `:line:col` suffix.
    let rest = &url[q + 1..];
    let end = rest.find(['#', ':', ' ', ')']).unwrap_or(rest.len());
    let kept: Vec<&str> = rest[..end]
        .split('&')
        .filter(|p| {
            let name = p.split('=').next().unwrap_or("");
            !matches!(name, "t" | "v" | "import" | "direct" | "used")
        })
        .collect();
    let mut out = url[..q].to_owned();
    if !kept.is_empty() && !kept.iter().all(|p| p.is_empty()) {
        out.push('?');
        out.push_str(&kept.join("&"));
    }
    out.push_str(&rest[end..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn occurrence(message: &str, location: &str) -> Occurrence {
        Occurrence { message: message.into(), location: Some(location.into()), stack: vec![] }
    }

    #[test]
    fn console_errors_and_urls_are_kept_without_secrets() {
        // The slot is process-wide: no other test of this binary logs this value.
        hands_core::redact::install(std::sync::Arc::new(hands_core::redact::Literals(vec![(
            "PAGE_KEY".into(),
            "canary-e5a0-page-value".into(),
        )])));
        let c = Collector::new(10);
        c.page_load("http://127.0.0.1:5173/?key=canary-e5a0-page-value");
        let mut seen = occurrence(
            "key is canary-e5a0-page-value",
            "http://h/a.js?k=canary-e5a0-page-value:1:2",
        );
        seen.stack.push(Frame {
            function: "f".into(),
            url: "http://h/a.js?k=canary-e5a0-page-value".into(),
            line: 1,
            column: 2,
            original: None,
        });
        c.record(ErrorKind::ConsoleError, seen);
        let read = c.read(None, true);
        let shown = format!("{:?} {:?}", read.entries, read.loads);
        assert!(!shown.contains("canary-e5a0"), "{shown}");
        assert_eq!(read.entries[0].error.message, "key is [secret:PAGE_KEY]");
        assert_eq!(read.loads[0].1, "http://127.0.0.1:5173/?key=[secret:PAGE_KEY]");
    }

    #[test]
    fn repeats_are_counted_and_the_cursor_returns_what_is_new() {
        let c = Collector::new(10);
        c.page_load("http://127.0.0.1:5173/");
        c.record(ErrorKind::Exception, occurrence("Error: boom", "http://h/src/a.ts?t=1:3:9"));
        c.record(ErrorKind::Exception, occurrence("Error: boom", "http://h/src/a.ts?t=2:3:9"));
        c.record(ErrorKind::ConsoleWarning, occurrence("careful", "http://h/src/a.ts:1:1"));
        let first = c.read(None, true);
        assert_eq!(first.entries.len(), 2);
        assert_eq!(first.entries[0].error.count, 2);
        assert_eq!(first.entries[0].error.location.as_deref(), Some("http://h/src/a.ts:3:9"));
        assert_eq!(first.entries[0].error.page_load, 1);
        assert_eq!(first.cursor, 3);
        assert!(c.read(None, true).entries.is_empty(), "nothing new");
        c.record(ErrorKind::Exception, occurrence("Error: boom", "http://h/src/a.ts:3:9"));
        let again = c.read(None, true);
        assert_eq!(again.entries.len(), 1);
        assert_eq!(again.entries[0].error.count, 3);
        // An explicit `since` reads from there.
        assert_eq!(c.read(Some(0), false).entries.len(), 1, "warnings left out");
        // A new page load makes a new entry for the same error.
        c.page_load("http://127.0.0.1:5173/");
        c.record(ErrorKind::Exception, occurrence("Error: boom", "http://h/src/a.ts:3:9"));
        let reloaded = c.read(None, true);
        assert_eq!((reloaded.entries[0].error.page_load, reloaded.entries[0].error.count), (2, 1));
    }

    #[test]
    fn the_notice_counts_new_errors_once() {
        let c = Collector::new(10);
        assert_eq!(c.notice(), None);
        c.record(ErrorKind::Exception, occurrence("a", "x:1:1"));
        c.record(ErrorKind::HttpError, occurrence("404 GET /missing.json", "/missing.json"));
        c.record(ErrorKind::ConsoleWarning, occurrence("w", "x:1:1"));
        assert_eq!(
            c.notice().as_deref(),
            Some("2 new runtime errors in the preview — read_runtime_errors")
        );
        assert_eq!(c.notice(), None, "announced once");
        c.record(ErrorKind::Exception, occurrence("b", "x:1:1"));
        let _ = c.read(None, true);
        assert_eq!(c.notice(), None, "read already");
    }

    #[test]
    fn old_entries_are_dropped_and_counted() {
        let c = Collector::new(2);
        for i in 0..5 {
            c.record(ErrorKind::ConsoleError, occurrence(&format!("e{i}"), "x:1:1"));
        }
        let read = c.read(None, true);
        assert_eq!(read.entries.len(), 2);
        assert_eq!(read.dropped, 3);
        assert_eq!(read.entries[1].error.message, "e4");
    }

    #[test]
    fn cache_busters_are_removed() {
        assert_eq!(strip_cache_busters("http://h/src/a.ts?t=123:4:5"), "http://h/src/a.ts:4:5");
        assert_eq!(strip_cache_busters("http://h/a.js?v=ab12&x=1"), "http://h/a.js?x=1");
        assert_eq!(strip_cache_busters("http://h/a.css?import&t=9"), "http://h/a.css");
        assert_eq!(strip_cache_busters("http://h/a.js"), "http://h/a.js");
    }
}
