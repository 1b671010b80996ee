//! What hands' traces need from the core, without any OpenTelemetry crate: the spans of tool
//! calls (target [`TARGET`]), whether their arguments and results may be recorded (content
//! capture, off by default, and then redacted), and the W3C trace context a client sent
//! (`traceparent`/`tracestate`, from MCP's `_meta` or the session API's headers), which the
//! exporter's crate makes the parent of hands' first span through an installed hook.
//!
//! With export off nothing here costs more than a disabled span: no subscriber layer wants the
//! target, so the spans are never built and their fields never formatted.

use std::future::Future;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// The `tracing` target of every span meant for export (and of no log line).
pub const TARGET: &str = "hands::span";

static CAPTURE: AtomicBool = AtomicBool::new(false);
static PARENT_HOOK: OnceLock<fn(&tracing::Span, &TraceParent)> = OnceLock::new();

tokio::task_local! {
    static REMOTE: Option<TraceParent>;
}

/// Record tool arguments and results on spans (redacted); `[otel] capture_content`.
pub fn set_capture_content(on: bool) {
    CAPTURE.store(on, Ordering::Relaxed);
}

/// True when tool arguments and results go on spans.
pub fn capture_content() -> bool {
    CAPTURE.load(Ordering::Relaxed)
}

/// `value` as a span may carry it: redacted with the session's secret redactor, cut at 8 KiB.
pub fn captured(value: &str) -> String {
    const MAX: usize = 8 * 1024;
    let clean = crate::redact::text(value);
    if clean.len() <= MAX {
        return clean.into_owned();
    }
    let mut end = MAX;
    while !clean.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &clean[..end])
}

/// A W3C `traceparent` (and its `tracestate`), checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceParent {
    /// The trace id (not all zeros).
    pub trace_id: [u8; 16],
    /// The caller's span id (not all zeros).
    pub span_id: [u8; 8],
    /// The trace flags (bit 0: sampled).
    pub flags: u8,
    /// The vendors' `tracestate`, when one came and was well formed.
    pub tracestate: Option<String>,
}

impl TraceParent {
    /// Parse a `traceparent` header value; `None` for anything the W3C format does not allow
    /// (a malformed context is ignored, never an error). A malformed `tracestate` is dropped.
    pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<Self> {
        let value = traceparent.trim_matches([' ', '\t']);
        let bytes = value.as_bytes();
        // ASCII only: every field below is sliced at fixed byte offsets.
        if bytes.len() < 55 || !value.is_ascii() {
            return None;
        }
        let version = hex_byte(&value[0..2])?;
        // Version ff is invalid; version 00 is exactly 55 characters; a later version may add
        // fields after a dash.
        if version == 0xff
            || (version == 0 && bytes.len() != 55)
            || (bytes.len() > 55 && bytes[55] != b'-')
        {
            return None;
        }
        if bytes[2] != b'-' || bytes[35] != b'-' || bytes[52] != b'-' {
            return None;
        }
        let mut trace_id = [0u8; 16];
        for (i, byte) in trace_id.iter_mut().enumerate() {
            *byte = hex_byte(&value[3 + 2 * i..5 + 2 * i])?;
        }
        let mut span_id = [0u8; 8];
        for (i, byte) in span_id.iter_mut().enumerate() {
            *byte = hex_byte(&value[36 + 2 * i..38 + 2 * i])?;
        }
        let flags = hex_byte(&value[53..55])?;
        if trace_id == [0; 16] || span_id == [0; 8] {
            return None;
        }
        // A tracestate holding a stored secret is dropped, not passed on to the collector (a
        // redacted one would not be a tracestate any more).
        let tracestate = tracestate
            .map(str::trim)
            .filter(|s| valid_tracestate(s) && !crate::redact::current().finds(s.as_bytes()))
            .map(str::to_owned);
        Some(Self { trace_id, span_id, flags, tracestate })
    }

    /// From a JSON object holding `traceparent` and maybe `tracestate` strings (MCP's `_meta`).
    pub fn from_meta(meta: &serde_json::Map<String, serde_json::Value>) -> Option<Self> {
        let traceparent = meta.get("traceparent")?.as_str()?;
        Self::parse(traceparent, meta.get("tracestate").and_then(|v| v.as_str()))
    }

    /// The trace id in lowercase hex.
    pub fn trace_id_hex(&self) -> String {
        hex(&self.trace_id)
    }

    /// The caller's span id in lowercase hex.
    pub fn span_id_hex(&self) -> String {
        hex(&self.span_id)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Two lowercase hex digits (W3C allows no uppercase).
fn hex_byte(pair: &str) -> Option<u8> {
    if pair.len() != 2 || !pair.bytes().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c)) {
        return None;
    }
    u8::from_str_radix(pair, 16).ok()
}

/// At most 32 `key=value` members of printable ASCII, 512 characters in all.
fn valid_tracestate(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= 512
        && value.bytes().all(|c| (0x20..0x7f).contains(&c))
        && value.split(',').filter(|m| !m.trim().is_empty()).count() <= 32
        && value
            .split(',')
            .filter(|m| !m.trim().is_empty())
            .all(|m| m.split_once('=').is_some_and(|(k, v)| !k.trim().is_empty() && !v.is_empty()))
}

/// Install the function that makes a [`TraceParent`] a span's parent (the exporter's crate does,
/// once, when export is on).
pub fn install_parent_hook(hook: fn(&tracing::Span, &TraceParent)) {
    let _ = PARENT_HOOK.set(hook);
}

/// Run `future` with `parent` as the remote parent of the first exported span it starts outside
/// any other (a tool call over MCP, a turn of the session API).
pub async fn with_remote_parent<F: Future>(parent: Option<TraceParent>, future: F) -> F::Output {
    REMOTE.scope(parent, future).await
}

/// The remote parent of this task, if one was given ([`with_remote_parent`]).
pub fn remote_parent() -> Option<TraceParent> {
    REMOTE.try_with(Clone::clone).ok().flatten()
}

/// Give `span` the task's remote parent when it has no local one (it was started outside any
/// exported span). Called right after the span is created, before it is entered.
pub fn adopt_remote_parent(span: &tracing::Span, outside: bool) {
    if span.is_disabled() || !outside {
        return;
    }
    if let (Some(hook), Some(parent)) = (PARENT_HOOK.get(), remote_parent()) {
        hook(span, &parent);
    }
}

/// True when no exported span is the current one (a span started now would be a root).
pub fn outside_any_span() -> bool {
    let current = tracing::Span::current();
    current.is_none() || current.metadata().is_none_or(|m| m.target() != TARGET)
}

/// The span of one tool call (`execute_tool NAME`, GenAI conventions): a child of the current
/// exported span (the turn's), else of the task's remote parent, else a root. Arguments go on it
/// only under content capture, redacted.
pub fn tool_span(session: &crate::Session, call: &crate::ToolCall) -> tracing::Span {
    use tracing::field::Empty;
    let outside = outside_any_span();
    let span = tracing::info_span!(
        target: "hands::span",
        "execute_tool",
        otel.name = %format!("execute_tool {}", call.name),
        otel.kind = "internal",
        otel.status_code = Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %call.name,
        gen_ai.tool.call.id = %call.id,
        gen_ai.conversation.id = %session.id(),
        hands.turn.id = call.turn.as_deref(),
        hands.mode = %session.mode(),
        hands.tool.outcome = Empty,
        hands.tool.result_bytes = Empty,
        hands.tool.duration_ms = Empty,
        error.type = Empty,
        gen_ai.tool.call.arguments = Empty,
        gen_ai.tool.call.result = Empty,
    );
    adopt_remote_parent(&span, outside);
    if capture_content() && !span.is_disabled() {
        span.record("gen_ai.tool.call.arguments", captured(&call.args.to_string()).as_str());
    }
    span
}

/// `n` as an OTel integer attribute (`tracing-opentelemetry` exports `i64`s as integers; an
/// unsigned value would become a string).
pub fn int(n: impl TryInto<i64>) -> i64 {
    n.try_into().unwrap_or(i64::MAX)
}

/// How a tool call ended, as its span says: `ok`, `error`, `denied` or `cancelled`.
pub fn tool_outcome(
    output: Option<&crate::ToolOutput>,
    denied: bool,
    cancelled: bool,
) -> &'static str {
    match output {
        _ if denied => "denied",
        _ if cancelled => "cancelled",
        Some(output) if !output.is_error => "ok",
        _ => "error",
    }
}

/// Put a finished call's outcome, duration and result size (and, under content capture, its
/// redacted result) on its span; `output` is `None` when the runtime failed.
pub fn record_tool_end(
    span: &tracing::Span,
    output: Option<&crate::ToolOutput>,
    outcome: &'static str,
    elapsed: std::time::Duration,
) {
    if span.is_disabled() {
        return;
    }
    span.record("hands.tool.outcome", outcome);
    span.record("hands.tool.duration_ms", int(elapsed.as_millis()));
    if outcome == "ok" {
        span.record("otel.status_code", "ok");
    } else {
        span.record("otel.status_code", "error");
        span.record("error.type", if output.is_none() { "runtime" } else { outcome });
    }
    let Some(output) = output else { return };
    let mut bytes = 0usize;
    for block in &output.content {
        bytes += match block {
            crate::Content::Text { text } => text.len(),
            crate::Content::Image { data, .. } => data.len(),
        };
    }
    if let Some(structured) = &output.structured {
        bytes += serde_json::to_vec(structured).map_or(0, |v| v.len());
    }
    span.record("hands.tool.result_bytes", int(bytes));
    if capture_content() {
        span.record("gen_ai.tool.call.result", captured(&output.joined_text()).as_str());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_well_formed_traceparent_parses() {
        let tp = TraceParent::parse(GOOD, Some("vendor=value,other=1")).unwrap();
        assert_eq!(tp.trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(tp.span_id_hex(), "00f067aa0ba902b7");
        assert_eq!(tp.flags, 1);
        assert_eq!(tp.tracestate.as_deref(), Some("vendor=value,other=1"));
        // Surrounding blanks are allowed; a later version may carry more after a dash.
        assert!(TraceParent::parse(&format!(" {GOOD}\t"), None).is_some());
        let future = "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-comes";
        assert!(TraceParent::parse(future, None).is_some());
    }

    #[test]
    fn malformed_traceparents_are_ignored() {
        for bad in [
            "",
            "garbage",
            // Uppercase hex, an all-zero trace or span id, version ff.
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            // Version 00 with more after it, wrong separators, short fields, non-hex.
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-011",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
            "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
            "00-4bf92f3577b34da6a3ce929d0e0é736-00f067aa0ba902b7-01",
        ] {
            assert_eq!(TraceParent::parse(bad, None), None, "{bad:?}");
        }
    }

    #[test]
    fn a_malformed_tracestate_is_dropped_not_the_parent() {
        for bad in
            ["", "novalue", "k=\u{7f}", &"k=v,".repeat(40), &format!("k={}", "v".repeat(600))]
        {
            let tp = TraceParent::parse(GOOD, Some(bad)).unwrap();
            assert_eq!(tp.tracestate, None, "{bad:?}");
        }
    }

    /// Replaces the canary, as the binary's redactor replaces a stored secret.
    struct Canary;

    impl crate::redact::Redactor for Canary {
        fn redact(&self, input: &[u8], _more: bool, out: &mut Vec<u8>) -> usize {
            let text = String::from_utf8_lossy(input).replace("CANARY9", "[secret:K]");
            out.extend_from_slice(text.as_bytes());
            input.len()
        }

        fn finds(&self, input: &[u8]) -> bool {
            String::from_utf8_lossy(input).contains("CANARY9")
        }
    }

    #[test]
    fn a_tracestate_holding_a_secret_is_dropped() {
        crate::redact::install(std::sync::Arc::new(Canary));
        let tp = TraceParent::parse(GOOD, Some("k=CANARY9,o=1")).unwrap();
        let plain = TraceParent::parse(GOOD, Some("k=v")).unwrap();
        crate::redact::install(std::sync::Arc::new(crate::redact::Nothing));
        assert_eq!(tp.tracestate, None);
        assert_eq!(plain.tracestate.as_deref(), Some("k=v"));
    }

    #[test]
    fn meta_objects_give_their_context() {
        let meta =
            serde_json::json!({"traceparent": GOOD, "tracestate": "a=b", "progressToken": 1});
        let tp = TraceParent::from_meta(meta.as_object().unwrap()).unwrap();
        assert_eq!(tp.tracestate.as_deref(), Some("a=b"));
        let meta = serde_json::json!({"traceparent": 7});
        assert_eq!(TraceParent::from_meta(meta.as_object().unwrap()), None);
    }

    #[test]
    fn captured_values_are_cut_on_a_character_boundary() {
        let long = "é".repeat(5000);
        let cut = captured(&long);
        assert!(cut.len() <= 8 * 1024 + '…'.len_utf8());
        assert!(cut.ends_with('…'));
        assert_eq!(captured("short"), "short");
    }
}
