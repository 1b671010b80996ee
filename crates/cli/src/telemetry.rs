//! hands' `tracing` setup: its log (stderr, `HANDS_LOG`, redacted) and, when `[otel]` or the
//! `OTEL_*` variables turn export on, the OpenTelemetry layer that exports hands' spans. With
//! export off no OTel layer is installed and no exporter thread starts.

use std::io::IsTerminal;

use tracing_subscriber::Layer;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt as _;

use crate::{log, term};

/// The log layer: `HANDS_LOG` (default `warn`), plain text unless stderr is a terminal, never
/// the spans meant for export.
fn log_layer<S>() -> impl Layer<S>
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
{
    let filter = tracing_subscriber::EnvFilter::try_from_env("HANDS_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    // rmcp traces every message whole: a secret page's URL (its own capability) must not reach
    // the log, whatever HANDS_LOG says. Only a filter that traces needs the cap (adding it to
    // a quieter one would make rmcp louder).
    let traces = filter.max_level_hint() == Some(tracing_subscriber::filter::LevelFilter::TRACE);
    let filter = match "rmcp::service=debug".parse() {
        Ok(cap) if traces => filter.add_directive(cap),
        _ => filter,
    };
    // Colour only for a person at a terminal: clients that capture hands' stderr (MCP hosts,
    // logs) get plain text.
    tracing_subscriber::fmt::layer()
        .with_writer(log::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_filter(filter)
        .with_filter(tracing_subscriber::filter::filter_fn(|meta| {
            meta.target() != hands_core::telemetry::TARGET
        }))
}

/// A log-only subscriber, for what runs before the settings are known (their own warnings).
pub(crate) fn early() -> impl tracing::Subscriber + Send + Sync {
    tracing_subscriber::registry().with(log_layer())
}

/// Install the process' subscriber: the log, and the exporter when `config` and the environment
/// turn it on (`export` false: a command that runs no tool, never exported). The returned handle
/// flushes the spans on [`hands_otel::Telemetry::shutdown`].
pub(crate) fn init(config: &hands_otel::OtelConfig, export: bool) -> Option<hands_otel::Telemetry> {
    let telemetry = if export { start(config) } else { None };
    let registry = tracing_subscriber::registry().with(log_layer());
    match &telemetry {
        Some(telemetry) => registry.with(telemetry.layer()).init(),
        None => registry.init(),
    }
    match &telemetry {
        Some(t) => tracing::debug!(protocol = t.export().protocol.as_str(), "otel: export on"),
        None => tracing::debug!("otel: export off"),
    }
    telemetry
}

fn start(config: &hands_otel::OtelConfig) -> Option<hands_otel::Telemetry> {
    let export = match hands_otel::config::resolve(config, |name| std::env::var(name).ok()) {
        Ok(Some(export)) => export,
        Ok(None) => return None,
        Err(err) => {
            term::errln(&format!("hands: OpenTelemetry export is off: {err}"));
            return None;
        }
    };
    match hands_otel::Telemetry::start(export) {
        Ok(telemetry) => Some(telemetry),
        Err(err) => {
            term::errln(&format!("hands: OpenTelemetry export is off: {err}"));
            None
        }
    }
}
