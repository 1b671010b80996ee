//! OpenTelemetry traces of hands. [`config::resolve`] settles `[otel]` and the `OTEL_*`
//! variables; when export is on, [`Telemetry::start`] builds the OTLP exporter (HTTP/protobuf
//! over the reqwest hands already links, or gRPC over tonic), a batch processor, and one small
//! runtime thread (`hands-otel`) that the exports run on, and gives the `tracing` layer that turns
//! hands' spans (target [`hands_core::telemetry::TARGET`], and nothing else: no log line) into
//! OTel spans. With export off none of this exists: the binary installs no layer, starts no
//! thread and opens no connection.
//!
//! [`Telemetry::shutdown`] sends what is still queued before the process exits.

pub mod config;

use std::sync::Arc;
use std::time::Duration;

use opentelemetry::trace::{
    SpanContext, SpanId, TraceContextExt as _, TraceFlags, TraceId, TraceState, TracerProvider as _,
};
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _, WithTonicConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use tracing_subscriber::Layer;
use tracing_subscriber::registry::LookupSpan;

pub use config::{Export, OtelConfig, Protocol};

/// The name of the thread the exports run on (tests look for it).
pub const THREAD_NAME: &str = "hands-otel";

/// Export running: the tracer provider and the runtime its exporter sends on.
pub struct Telemetry {
    provider: SdkTracerProvider,
    runtime: Option<tokio::runtime::Runtime>,
    export: Export,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry").field("export", &self.export).finish_non_exhaustive()
    }
}

impl Telemetry {
    /// Start exporting as `export` says: the exporter, the batch processor, the runtime.
    pub fn start(export: Export) -> Result<Self, String> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name(THREAD_NAME)
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the OTLP exporter's thread: {e}"))?;
        let exporter = {
            // tonic's channel spawns its connection task where it is built.
            let _inside = runtime.enter();
            build_exporter(&export)?
        };
        let exporter = OnRuntime { inner: Arc::new(exporter), handle: runtime.handle().clone() };
        let resource = Resource::builder()
            .with_service_name(export.service_name.clone())
            .with_attribute(opentelemetry::KeyValue::new(
                "service.version",
                env!("CARGO_PKG_VERSION"),
            ))
            .build();
        let provider = SdkTracerProvider::builder()
            .with_resource(resource)
            .with_batch_exporter(exporter)
            .build();
        hands_core::telemetry::set_capture_content(export.capture_content);
        hands_core::telemetry::install_parent_hook(set_remote_parent);
        Ok(Self { provider, runtime: Some(runtime), export })
    }

    /// What is exported, and where.
    pub fn export(&self) -> &Export {
        &self.export
    }

    /// The layer that exports hands' spans (and only those).
    pub fn layer<S>(&self) -> impl Layer<S> + use<S>
    where
        S: tracing::Subscriber + for<'a> LookupSpan<'a>,
    {
        let tracer = self.provider.tracer("hands");
        tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_location(false)
            .with_threads(false)
            .with_level(false)
            .with_target(false)
            .with_tracked_inactivity(false)
            .with_filter(tracing_subscriber::filter::filter_fn(|meta| {
                meta.target() == hands_core::telemetry::TARGET
            }))
    }

    /// Send what is queued and stop (at most a few seconds: an unreachable collector does not
    /// hold the exit up).
    pub fn shutdown(mut self) {
        if let Err(err) = self.provider.shutdown_with_timeout(Duration::from_secs(5)) {
            tracing::warn!(%err, "OTLP export: the last spans may be lost");
        }
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_timeout(Duration::from_secs(1));
        }
    }
}

fn build_exporter(export: &Export) -> Result<opentelemetry_otlp::SpanExporter, String> {
    let built = match export.protocol {
        Protocol::HttpProtobuf => opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .with_endpoint(export.endpoint.clone())
            .with_headers(export.headers.clone().into_iter().collect())
            .build(),
        Protocol::Grpc => {
            let mut metadata = tonic::metadata::MetadataMap::new();
            for (key, value) in &export.headers {
                let key =
                    tonic::metadata::MetadataKey::from_bytes(key.to_ascii_lowercase().as_bytes());
                if let (Ok(key), Ok(value)) = (key, value.parse()) {
                    metadata.insert(key, value);
                }
            }
            opentelemetry_otlp::SpanExporter::builder()
                .with_tonic()
                .with_endpoint(export.endpoint.clone())
                .with_metadata(metadata)
                .build()
        }
    };
    built.map_err(|e| format!("cannot build the OTLP exporter for {}: {e}", export.endpoint))
}

/// The exporter, its sends run on the `hands-otel` runtime (the batch processor's own thread
/// has none, and reqwest and tonic need one).
#[derive(Debug)]
struct OnRuntime {
    inner: Arc<opentelemetry_otlp::SpanExporter>,
    handle: tokio::runtime::Handle,
}

impl SpanExporter for OnRuntime {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let inner = Arc::clone(&self.inner);
        match self.handle.spawn(async move { inner.export(batch).await }).await {
            Ok(result) => result,
            Err(err) => Err(OTelSdkError::InternalFailure(err.to_string())),
        }
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.set_resource(resource);
        }
    }
}

/// The parent hook: the client's span (from its `traceparent`) becomes `span`'s parent.
fn set_remote_parent(span: &tracing::Span, parent: &hands_core::telemetry::TraceParent) {
    let state =
        parent.tracestate.as_deref().and_then(|s| s.parse::<TraceState>().ok()).unwrap_or_default();
    let remote = SpanContext::new(
        TraceId::from_bytes(parent.trace_id),
        SpanId::from_bytes(parent.span_id),
        TraceFlags::new(parent.flags),
        true,
        state,
    );
    let _ = span.set_parent(opentelemetry::Context::new().with_remote_span_context(remote));
}
