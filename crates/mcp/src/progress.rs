//! `notifications/progress` for a call whose client gave a `progressToken`: the tool's reports,
//! at most one per [`REPORTS_EVERY`] and always increasing, and between them a heartbeat every
//! [`HEARTBEAT`] (`HANDS_MCP_HEARTBEAT_MS`) so that a client whose timeout restarts on progress
//! (opencode, the SDKs' `resetTimeoutOnProgress`) does not cut a long call. Every notification
//! carries the client's token: one without it resets no client's timer.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use hands_core::{CancellationToken, Progress, ProgressSink};
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};

/// At most one of the tool's progress reports per call in this interval.
const REPORTS_EVERY: Duration = Duration::from_millis(100);

/// A heartbeat after this long without a notification.
pub const HEARTBEAT: Duration = Duration::from_secs(10);

/// [`HEARTBEAT`], or `HANDS_MCP_HEARTBEAT_MS` when set to a positive number of milliseconds.
pub(crate) fn heartbeat_from_env() -> Duration {
    std::env::var("HANDS_MCP_HEARTBEAT_MS")
        .ok()
        .and_then(|ms| ms.trim().parse::<u64>().ok())
        .filter(|ms| *ms > 0)
        .map_or(HEARTBEAT, Duration::from_millis)
}

/// A sink for a call's progress and the task that sends it to `peer` under `token`, with a
/// heartbeat every `heartbeat`; the task ends when the sink is dropped (the call ended) or when
/// `stop` fires (the request that gave the token was answered while the call goes on).
pub(crate) fn sink(
    peer: Peer<RoleServer>,
    token: ProgressToken,
    heartbeat: Duration,
    stop: CancellationToken,
) -> (ProgressSink, tokio::task::JoinHandle<()>) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Progress>();
    let last: Mutex<Option<(Instant, f64)>> = Mutex::new(None);
    let sink: ProgressSink = Arc::new(move |progress: Progress| {
        let mut last = last.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        if let Some((at, value)) = *last
            && (now.duration_since(at) < REPORTS_EVERY || progress.progress <= value)
        {
            return;
        }
        *last = Some((now, progress.progress));
        let _ = tx.send(progress);
    });
    let task = tokio::spawn(async move {
        let started = Instant::now();
        let mut sent: Option<(f64, Option<f64>)> = None;
        let mut beat = tokio::time::interval_at(tokio::time::Instant::now() + heartbeat, heartbeat);
        beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let param = tokio::select! {
                () = stop.cancelled() => break,
                progress = rx.recv() => {
                    let Some(progress) = progress else { break };
                    // MCP wants every value above the last one sent, heartbeats included.
                    if sent.is_some_and(|(value, _)| progress.progress <= value) {
                        continue;
                    }
                    sent = Some((progress.progress, progress.total));
                    beat.reset();
                    let mut param = ProgressNotificationParam::new(token.clone(), progress.progress);
                    param.total = progress.total;
                    param.message = progress.message;
                    param
                }
                _ = beat.tick() => {
                    let (value, total) = sent.unwrap_or((0.0, None));
                    let next = value + (value.abs() * 1e-9).max(1e-6);
                    sent = Some((next, total));
                    let mut param = ProgressNotificationParam::new(token.clone(), next);
                    param.total = total.filter(|total| next <= *total);
                    param.message =
                        Some(format!("still running ({} s)", started.elapsed().as_secs()));
                    param
                }
            };
            if peer.notify_progress(param).await.is_err() {
                break;
            }
        }
    });
    (sink, task)
}
