//! The host's counters for `/metrics`: events appended (and how long the store took), lease
//! takeovers, writes refused by fencing, lease renewals (and their latency). Plain atomics,
//! read by [`Metrics::snapshot`]; the latency histograms have fixed buckets.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds of the latency buckets, in seconds.
pub const BUCKETS: [f64; 10] = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.5, 2.0];

/// A latency histogram.
#[derive(Default)]
pub(super) struct Histogram {
    counts: [AtomicU64; BUCKETS.len()],
    total: AtomicU64,
    sum_us: AtomicU64,
}

impl Histogram {
    fn observe(&self, took: Duration) {
        let seconds = took.as_secs_f64();
        for (bound, count) in BUCKETS.iter().zip(&self.counts) {
            if seconds <= *bound {
                count.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.total.fetch_add(1, Ordering::Relaxed);
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        self.sum_us.fetch_add(micros, Ordering::Relaxed);
    }

    fn snapshot(&self) -> HistogramSnapshot {
        HistogramSnapshot {
            cumulative: self.counts.iter().map(|c| c.load(Ordering::Relaxed)).collect(),
            count: self.total.load(Ordering::Relaxed),
            sum_seconds: self.sum_us.load(Ordering::Relaxed) as f64 / 1e6,
        }
    }
}

/// A histogram as read: cumulative counts per bucket of [`BUCKETS`], the count and the sum.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramSnapshot {
    /// Observations ≤ each bound of [`BUCKETS`].
    pub cumulative: Vec<u64>,
    /// Observations.
    pub count: u64,
    /// Their sum, in seconds.
    pub sum_seconds: f64,
}

/// The counters.
#[derive(Default)]
pub(super) struct Metrics {
    appends: Histogram,
    renewals: Histogram,
    takeovers: AtomicU64,
    fenced: AtomicU64,
}

impl Metrics {
    pub(super) fn appended(&self, took: Duration) {
        self.appends.observe(took);
    }

    pub(super) fn renewed(&self, took: Duration) {
        self.renewals.observe(took);
    }

    pub(super) fn took_over(&self) {
        self.takeovers.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn fenced(&self) {
        self.fenced.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn snapshot(&self) -> MetricsSnapshot {
        MetricsSnapshot {
            event_appends: self.appends.snapshot(),
            lease_renewals: self.renewals.snapshot(),
            lease_takeovers: self.takeovers.load(Ordering::Relaxed),
            fenced_writes: self.fenced.load(Ordering::Relaxed),
            ..MetricsSnapshot::default()
        }
    }
}

/// What `/metrics` shows of the host.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MetricsSnapshot {
    /// Turns running on this node.
    pub turns_running: u64,
    /// Sessions in this node's memory.
    pub sessions_live: u64,
    /// Leases this node holds.
    pub leases_held: u64,
    /// Event streams open on this node.
    pub subscribers: u64,
    /// Event appends and how long the store took for each.
    pub event_appends: HistogramSnapshot,
    /// Lease renewals (one round trip for all of the node's leases) and their latency.
    pub lease_renewals: HistogramSnapshot,
    /// Expired leases of other nodes this node took over.
    pub lease_takeovers: u64,
    /// Writes refused because this node's lease had moved.
    pub fenced_writes: u64,
    /// Whether the node is draining.
    pub draining: bool,
}

impl Default for HistogramSnapshot {
    fn default() -> Self {
        Self { cumulative: vec![0; BUCKETS.len()], count: 0, sum_seconds: 0.0 }
    }
}
