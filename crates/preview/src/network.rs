//! The page's network requests, as the Network domain reports them: one entry per request
//! (method, URL, type, status, timing, size, why it failed), kept in a ring and read since a
//! cursor. Each update of an entry gives it the next sequence number, so that a read since a
//! cursor sees a request that was pending then and has finished since. Request bodies are kept
//! (capped) when the browser sends them along; response bodies are asked of the browser on demand
//! (preview_network). URLs and bodies are kept without the session's secrets.

use std::collections::{HashSet, VecDeque};
use std::sync::{Mutex, MutexGuard, PoisonError};

use serde_json::Value;
use tokio::sync::watch;

/// Entries kept (the oldest go first).
const MAX_ENTRIES: usize = 2000;
/// Request body bytes kept per entry.
pub const MAX_BODY: usize = 4096;

/// One request.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// Sequence number of its last update.
    pub seq: u64,
    /// The browser's request id (for the response body).
    pub id: String,
    /// GET, POST, …
    pub method: String,
    /// The URL, without secrets.
    pub url: String,
    /// Document, Fetch, XHR, Script, Image, …
    pub resource: String,
    /// The HTTP status once the response came.
    pub status: Option<u16>,
    /// The response's MIME type.
    pub mime: Option<String>,
    /// When it was sent (the browser's monotonic clock, seconds).
    pub started: f64,
    /// How long it took, in milliseconds, once done.
    pub ms: Option<f64>,
    /// Bytes received (encoded), once done.
    pub bytes: Option<u64>,
    /// Why it failed, when it did.
    pub failed: Option<String>,
    /// The request body, capped, without secrets.
    pub body: Option<String>,
    /// The page load it belongs to.
    pub page_load: u64,
}

impl Request {
    /// Failed, or answered with a status of 400 or more.
    pub fn is_failure(&self) -> bool {
        self.failed.is_some() || self.status.is_some_and(|s| s >= 400)
    }

    /// Still waiting for its end.
    pub fn is_pending(&self) -> bool {
        self.ms.is_none() && self.failed.is_none()
    }

    /// One line: `#12 POST /api/items → 201 (Fetch, 12 ms, 340 B)`.
    pub fn line(&self, origin: Option<&str>) -> String {
        let url = match origin {
            Some(origin) if self.url.starts_with(origin) => &self.url[origin.len()..],
            _ => self.url.as_str(),
        };
        let url = if url.is_empty() { "/" } else { url };
        let outcome = match (&self.failed, self.status) {
            (Some(why), _) => format!("failed: {why}"),
            (None, Some(status)) => status.to_string(),
            (None, None) => "pending".to_owned(),
        };
        let mut details = vec![self.resource.clone()];
        if let Some(ms) = self.ms {
            details.push(format!("{ms:.0} ms"));
        }
        if let Some(bytes) = self.bytes {
            details.push(format!("{bytes} B"));
        }
        format!("#{} {} {url} → {outcome} ({})", self.seq, self.method, details.join(", "))
    }
}

struct Inner {
    entries: VecDeque<Request>,
    seq: u64,
    pending: HashSet<String>,
}

/// The session's requests.
pub struct NetworkLog {
    inner: Mutex<Inner>,
    /// The number of requests in flight; changes as they start and end.
    inflight: watch::Sender<usize>,
}

impl std::fmt::Debug for NetworkLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NetworkLog").finish_non_exhaustive()
    }
}

impl Default for NetworkLog {
    fn default() -> Self {
        Self {
            inner: Mutex::new(Inner { entries: VecDeque::new(), seq: 0, pending: HashSet::new() }),
            inflight: watch::Sender::new(0),
        }
    }
}

fn clean(text: &str) -> String {
    hands_core::redact::text(text).into_owned()
}

/// `text` cut to `max` bytes at a character boundary, with a marker when cut.
pub fn capped(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}… [{} more bytes]", &text[..cut], text.len() - cut)
}

impl NetworkLog {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The latest sequence number (a cursor for [`since`](Self::since)).
    pub fn cursor(&self) -> u64 {
        self.lock().seq
    }

    /// Requests in flight now, as a watch.
    pub fn inflight(&self) -> watch::Receiver<usize> {
        self.inflight.subscribe()
    }

    fn publish(&self, inner: &Inner) {
        self.inflight.send_replace(inner.pending.len());
    }

    /// `Network.requestWillBeSent`.
    pub fn sent(&self, p: &Value, page_load: u64) {
        let Some(id) = p["requestId"].as_str() else { return };
        let request = &p["request"];
        let mut inner = self.lock();
        inner.seq += 1;
        let seq = inner.seq;
        // A redirect reuses the id: the earlier hop ends here.
        if let Some(old) = inner.entries.iter_mut().rev().find(|e| e.id == id && e.is_pending()) {
            old.ms = Some(
                ((p["timestamp"].as_f64().unwrap_or(old.started) - old.started) * 1000.0).max(0.0),
            );
            old.status = p["redirectResponse"]["status"].as_u64().map(|s| s as u16);
        }
        inner.entries.push_back(Request {
            seq,
            id: id.to_owned(),
            method: request["method"].as_str().unwrap_or("GET").to_owned(),
            url: clean(request["url"].as_str().unwrap_or("")),
            resource: p["type"].as_str().unwrap_or("Other").to_owned(),
            status: None,
            mime: None,
            started: p["timestamp"].as_f64().unwrap_or(0.0),
            ms: None,
            bytes: None,
            failed: None,
            body: request["postData"].as_str().map(|b| capped(&clean(b), MAX_BODY)),
            page_load,
        });
        while inner.entries.len() > MAX_ENTRIES {
            inner.entries.pop_front();
        }
        inner.pending.insert(id.to_owned());
        self.publish(&inner);
    }

    fn update(&self, id: &str, end: bool, change: impl FnOnce(&mut Request)) {
        let mut inner = self.lock();
        inner.seq += 1;
        let seq = inner.seq;
        if let Some(entry) = inner.entries.iter_mut().rev().find(|e| e.id == id) {
            change(entry);
            entry.seq = seq;
        }
        if end {
            inner.pending.remove(id);
        }
        self.publish(&inner);
    }

    /// `Network.responseReceived`.
    pub fn response(&self, p: &Value) {
        let Some(id) = p["requestId"].as_str() else { return };
        let response = &p["response"];
        self.update(id, false, |e| {
            e.status = response["status"].as_u64().map(|s| s as u16);
            e.mime = response["mimeType"].as_str().map(str::to_owned);
        });
    }

    /// `Network.loadingFinished`.
    pub fn finished(&self, p: &Value) {
        let Some(id) = p["requestId"].as_str() else { return };
        let at = p["timestamp"].as_f64();
        let bytes = p["encodedDataLength"].as_f64().map(|b| b as u64);
        self.update(id, true, |e| {
            e.ms = Some(at.map_or(0.0, |at| ((at - e.started) * 1000.0).max(0.0)));
            e.bytes = bytes;
        });
    }

    /// `Network.loadingFailed`.
    pub fn failed(&self, p: &Value) {
        let Some(id) = p["requestId"].as_str() else { return };
        let at = p["timestamp"].as_f64();
        let why = match (p["blockedReason"].as_str(), p["canceled"].as_bool()) {
            (Some(blocked), _) => format!("blocked ({blocked})"),
            (None, Some(true)) => "canceled".to_owned(),
            _ => p["errorText"].as_str().unwrap_or("failed").to_owned(),
        };
        self.update(id, true, |e| {
            e.ms = Some(at.map_or(0.0, |at| ((at - e.started) * 1000.0).max(0.0)));
            e.failed = Some(why);
        });
    }

    /// A new document: what was in flight will not finish.
    pub fn navigated(&self) {
        let mut inner = self.lock();
        inner.pending.clear();
        self.publish(&inner);
    }

    /// Entries updated after `since`, oldest first.
    pub fn since(&self, since: u64) -> Vec<Request> {
        let inner = self.lock();
        let mut out: Vec<Request> =
            inner.entries.iter().filter(|e| e.seq > since).cloned().collect();
        out.sort_by_key(|e| e.seq);
        out
    }
}

/// What preview_network filters by.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Method, any case.
    pub method: Option<String>,
    /// A part of the URL.
    pub url: Option<String>,
    /// A status (`500`), a class (`4xx`), or `failed` (failed or ≥ 400).
    pub status: Option<String>,
    /// Only requests that took at least this many milliseconds.
    pub min_ms: Option<f64>,
    /// Only responses of at least this many bytes.
    pub min_bytes: Option<u64>,
    /// Resource type (`fetch`, `xhr`, `document`, …), any case.
    pub resource: Option<String>,
}

impl Filter {
    /// True when `request` passes.
    pub fn keeps(&self, request: &Request) -> bool {
        let method = self.method.as_ref().is_none_or(|m| m.eq_ignore_ascii_case(&request.method));
        let url = self.url.as_ref().is_none_or(|u| request.url.contains(u.as_str()));
        let resource =
            self.resource.as_ref().is_none_or(|r| r.eq_ignore_ascii_case(&request.resource));
        let ms = self.min_ms.is_none_or(|min| request.ms.is_some_and(|ms| ms >= min));
        let bytes = self.min_bytes.is_none_or(|min| request.bytes.is_some_and(|b| b >= min));
        let status = match self.status.as_deref().map(str::trim) {
            None | Some("") => true,
            Some("failed") => request.is_failure(),
            Some(class) if class.len() == 3 && class.ends_with("xx") => {
                request.status.is_some_and(|s| s.to_string().starts_with(&class[..1]))
            }
            Some(exact) => request.status.is_some_and(|s| s.to_string() == exact),
        };
        method && url && resource && ms && bytes && status
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn requests_are_followed_to_their_end_and_filtered() {
        let log = NetworkLog::default();
        log.sent(
            &json!({"requestId": "1", "type": "Fetch", "timestamp": 10.0,
                    "request": {"method": "POST", "url": "http://h/api/items", "postData": "{\"a\":1}"}}),
            1,
        );
        assert_eq!(*log.inflight().borrow(), 1);
        let cursor = log.cursor();
        log.response(
            &json!({"requestId": "1", "response": {"status": 500, "mimeType": "text/plain"}}),
        );
        log.finished(&json!({"requestId": "1", "timestamp": 10.25, "encodedDataLength": 31}));
        assert_eq!(*log.inflight().borrow(), 0);
        let done = log.since(cursor);
        assert_eq!(done.len(), 1, "the update is new since the cursor");
        let request = &done[0];
        assert_eq!((request.status, request.bytes, request.ms), (Some(500), Some(31), Some(250.0)));
        assert_eq!(
            request.line(Some("http://h")),
            "#3 POST /api/items → 500 (Fetch, 250 ms, 31 B)"
        );
        assert!(Filter { status: Some("5xx".into()), ..Filter::default() }.keeps(request));
        assert!(Filter { status: Some("failed".into()), ..Filter::default() }.keeps(request));
        assert!(!Filter { method: Some("get".into()), ..Filter::default() }.keeps(request));
        assert!(!Filter { min_ms: Some(300.0), ..Filter::default() }.keeps(request));
        assert_eq!(request.body.as_deref(), Some("{\"a\":1}"));
    }

    #[test]
    fn bodies_are_capped_at_a_character_boundary() {
        assert_eq!(capped("héllo", 2), "h… [5 more bytes]");
        assert_eq!(capped("abc", 3), "abc");
    }
}
