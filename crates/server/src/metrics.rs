//! `GET /metrics`: the node's figures in Prometheus' text format (0.0.4): turns running,
//! sessions in memory, leases held, event streams, events appended (a counter: `rate()` gives
//! events/s) with the store's latency per append, lease renewals and their latency, lease
//! takeovers, writes refused by fencing, requests forwarded to another node. Behind the token.

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::Router;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use hands_agent::host::{BUCKETS, HistogramSnapshot, Host, MetricsSnapshot};

/// The route; `forwarded` counts requests sent on to another node.
pub fn routes(host: Arc<Host>, forwarded: Arc<AtomicU64>) -> Router {
    Router::new().route(
        "/metrics",
        get(move || {
            let text = render(&host.metrics(), forwarded.load(Ordering::Relaxed));
            async move { ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response() }
        }),
    )
}

fn metric(out: &mut String, name: &str, kind: &str, help: &str, value: impl std::fmt::Display) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}");
}

fn histogram(out: &mut String, name: &str, help: &str, h: &HistogramSnapshot) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
    for (bound, count) in BUCKETS.iter().zip(&h.cumulative) {
        let _ = writeln!(out, "{name}_bucket{{le=\"{bound}\"}} {count}");
    }
    let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {}", h.count);
    let _ = writeln!(out, "{name}_sum {}\n{name}_count {}", h.sum_seconds, h.count);
}

/// The text of `/metrics`.
pub fn render(m: &MetricsSnapshot, forwarded: u64) -> String {
    let mut out = String::new();
    metric(
        &mut out,
        "hands_turns_running",
        "gauge",
        "Turns running on this node.",
        m.turns_running,
    );
    metric(
        &mut out,
        "hands_sessions_live",
        "gauge",
        "Sessions in this node's memory.",
        m.sessions_live,
    );
    metric(
        &mut out,
        "hands_leases_held",
        "gauge",
        "Session leases this node holds.",
        m.leases_held,
    );
    metric(
        &mut out,
        "hands_event_subscribers",
        "gauge",
        "Event streams open on this node.",
        m.subscribers,
    );
    metric(&mut out, "hands_draining", "gauge", "1 while the node drains.", u8::from(m.draining));
    metric(
        &mut out,
        "hands_events_appended_total",
        "counter",
        "Events this node appended to the store.",
        m.event_appends.count,
    );
    histogram(
        &mut out,
        "hands_store_append_seconds",
        "How long the store took to append an event.",
        &m.event_appends,
    );
    histogram(
        &mut out,
        "hands_lease_renew_seconds",
        "How long renewing this node's leases took (one statement for all).",
        &m.lease_renewals,
    );
    metric(
        &mut out,
        "hands_lease_takeovers_total",
        "counter",
        "Expired leases of other nodes this node took over.",
        m.lease_takeovers,
    );
    metric(
        &mut out,
        "hands_fenced_writes_total",
        "counter",
        "Writes refused because this node's lease had moved.",
        m.fenced_writes,
    );
    metric(
        &mut out,
        "hands_forwarded_requests_total",
        "counter",
        "Requests sent on to the node holding the session's lease.",
        forwarded,
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_is_prometheus_exposition_format() {
        let mut m = MetricsSnapshot { turns_running: 3, lease_takeovers: 2, ..Default::default() };
        m.event_appends = HistogramSnapshot {
            cumulative: vec![1, 2, 3, 4, 4, 4, 4, 4, 4, 4],
            count: 5,
            sum_seconds: 0.25,
        };
        let text = render(&m, 7);
        assert!(
            text.contains("# TYPE hands_turns_running gauge\nhands_turns_running 3\n"),
            "{text}"
        );
        assert!(text.contains("hands_lease_takeovers_total 2\n"));
        assert!(text.contains("hands_forwarded_requests_total 7\n"));
        assert!(text.contains("hands_store_append_seconds_bucket{le=\"0.0005\"} 1\n"));
        assert!(text.contains("hands_store_append_seconds_bucket{le=\"+Inf\"} 5\n"));
        assert!(text.contains("hands_store_append_seconds_count 5\n"));
        // Every sample line is `name{labels} value` or `name value`.
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let (name, value) = line.rsplit_once(' ').unwrap();
            assert!(name.starts_with("hands_"), "{line}");
            assert!(value.parse::<f64>().is_ok(), "{line}");
        }
    }
}
