//! `[otel]` and the standard `OTEL_*` variables, resolved into what the exporter needs: whether
//! traces are exported at all, where, over which protocol, with which headers and service name.
//!
//! Export is on when `[otel] enabled = true`, or when `[otel] endpoint`,
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT` names a collector (and
//! `enabled` is not `false`). `OTEL_SDK_DISABLED=true` and `OTEL_TRACES_EXPORTER=none` turn it off
//! whatever the rest says.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// `[otel]`: OpenTelemetry traces of turns, model requests and tool calls (the user's only).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OtelConfig {
    /// Export traces: `true` or `false`; unset, export is on when an endpoint is configured
    /// (here or in `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`).
    pub enabled: Option<bool>,
    /// The collector's base URL (as `OTEL_EXPORTER_OTLP_ENDPOINT`; over HTTP `/v1/traces` is
    /// added). Default: the variables, else `http://localhost:4318` (HTTP) or `:4317` (gRPC).
    pub endpoint: Option<String>,
    /// `http/protobuf` or `grpc` (default: `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`, then
    /// `OTEL_EXPORTER_OTLP_PROTOCOL`, then `http/protobuf`).
    pub protocol: Option<String>,
    /// `service.name` of the spans (default: `OTEL_SERVICE_NAME`, then `hands`).
    pub service_name: Option<String>,
    /// Record tool-call arguments and results on the spans, redacted like every result hands
    /// shows. Off: only names, ids, sizes, durations and outcomes.
    pub capture_content: bool,
}

/// How spans leave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// OTLP/HTTP with protobuf bodies (`POST …/v1/traces`).
    HttpProtobuf,
    /// OTLP/gRPC (`TraceService/Export`).
    Grpc,
}

impl Protocol {
    /// The name used in `OTEL_EXPORTER_OTLP_PROTOCOL`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::HttpProtobuf => "http/protobuf",
            Self::Grpc => "grpc",
        }
    }
}

/// Export settled: everything the exporter is built from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Export {
    /// The full URL spans are sent to (over HTTP, with `/v1/traces`).
    pub endpoint: String,
    /// The protocol.
    pub protocol: Protocol,
    /// Headers (or gRPC metadata) of every export request.
    pub headers: BTreeMap<String, String>,
    /// `service.name`.
    pub service_name: String,
    /// Whether tool arguments and results go on spans.
    pub capture_content: bool,
}

/// Settle `config` against the environment (`env` reads a variable). `Ok(None)`: export is off.
/// An error says which value is wrong; the caller leaves export off and says so.
pub fn resolve(
    config: &OtelConfig,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<Export>, String> {
    let var = |name: &str| env(name).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
    if var("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"))
        || var("OTEL_TRACES_EXPORTER").is_some_and(|v| v.eq_ignore_ascii_case("none"))
    {
        return Ok(None);
    }
    let signal_endpoint = var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
    let base_endpoint = config.endpoint.clone().or_else(|| var("OTEL_EXPORTER_OTLP_ENDPOINT"));
    let configured =
        config.endpoint.is_some() || signal_endpoint.is_some() || base_endpoint.is_some();
    if !config.enabled.unwrap_or(configured) {
        return Ok(None);
    }
    let protocol = match config
        .protocol
        .clone()
        .or_else(|| var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"))
        .or_else(|| var("OTEL_EXPORTER_OTLP_PROTOCOL"))
        .as_deref()
    {
        None | Some("http/protobuf") => Protocol::HttpProtobuf,
        Some("grpc") => Protocol::Grpc,
        Some(other) => {
            return Err(format!(
                "OTLP protocol {other:?} is not supported: use \"http/protobuf\" or \"grpc\""
            ));
        }
    };
    // `[otel] endpoint` is a base URL like OTEL_EXPORTER_OTLP_ENDPOINT, and beats both variables;
    // the signal's own variable is taken as it is.
    let endpoint = match (&config.endpoint, signal_endpoint, base_endpoint) {
        (None, Some(signal), _) => signal,
        (_, _, Some(base)) => with_signal_path(&base, protocol),
        (_, _, None) => match protocol {
            Protocol::HttpProtobuf => "http://localhost:4318/v1/traces".to_owned(),
            Protocol::Grpc => "http://localhost:4317".to_owned(),
        },
    };
    if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
        return Err(format!("OTLP endpoint {endpoint:?} is not an http:// or https:// URL"));
    }
    let headers = var("OTEL_EXPORTER_OTLP_TRACES_HEADERS")
        .or_else(|| var("OTEL_EXPORTER_OTLP_HEADERS"))
        .map(|h| parse_headers(&h))
        .unwrap_or_default();
    let service_name = config
        .service_name
        .clone()
        .filter(|s| !s.trim().is_empty())
        .or_else(|| var("OTEL_SERVICE_NAME"))
        .unwrap_or_else(|| "hands".to_owned());
    Ok(Some(Export {
        endpoint,
        protocol,
        headers,
        service_name,
        capture_content: config.capture_content,
    }))
}

/// A base URL with the traces path OTLP/HTTP adds to it (gRPC's is the base itself).
fn with_signal_path(base: &str, protocol: Protocol) -> String {
    match protocol {
        Protocol::Grpc => base.to_owned(),
        Protocol::HttpProtobuf if base.trim_end_matches('/').ends_with("/v1/traces") => {
            base.to_owned()
        }
        Protocol::HttpProtobuf => format!("{}/v1/traces", base.trim_end_matches('/')),
    }
}

/// `k1=v1,k2=v2` (values percent-decoded); malformed members are skipped.
fn parse_headers(value: &str) -> BTreeMap<String, String> {
    value
        .split(',')
        .filter_map(|member| {
            let (key, val) = member.split_once('=')?;
            let key = key.trim();
            if key.is_empty() {
                return None;
            }
            Some((key.to_owned(), percent_decode(val.trim())?))
        })
        .collect()
}

fn percent_decode(value: &str) -> Option<String> {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let pair = value.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(pair, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_env(config: &OtelConfig, vars: &[(&str, &str)]) -> Result<Option<Export>, String> {
        let vars: BTreeMap<String, String> =
            vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        resolve(config, |name| vars.get(name).cloned())
    }

    #[test]
    fn off_without_an_endpoint_or_a_yes() {
        assert_eq!(with_env(&OtelConfig::default(), &[]), Ok(None));
        let quiet = OtelConfig { capture_content: true, ..OtelConfig::default() };
        assert_eq!(with_env(&quiet, &[("OTEL_SERVICE_NAME", "x")]), Ok(None));
    }

    #[test]
    fn the_standard_variables_turn_it_on() {
        let export = with_env(
            &OtelConfig::default(),
            &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9/")],
        )
        .unwrap()
        .unwrap();
        assert_eq!(export.endpoint, "http://127.0.0.1:9/v1/traces");
        assert_eq!(export.protocol, Protocol::HttpProtobuf);
        assert_eq!(export.service_name, "hands");
        assert!(!export.capture_content);
        let export = with_env(
            &OtelConfig::default(),
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9"),
                ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:8/custom"),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
                ("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20abc, x-team = core ,bad"),
                ("OTEL_SERVICE_NAME", "agent-a"),
            ],
        )
        .unwrap()
        .unwrap();
        assert_eq!(export.endpoint, "http://127.0.0.1:8/custom", "the signal's URL as it is");
        assert_eq!(export.protocol, Protocol::Grpc);
        assert_eq!(export.headers["authorization"], "Bearer abc");
        assert_eq!(export.headers["x-team"], "core");
        assert_eq!(export.headers.len(), 2);
        assert_eq!(export.service_name, "agent-a");
    }

    #[test]
    fn settings_beat_variables_and_disabling_wins() {
        let config = OtelConfig {
            endpoint: Some("http://127.0.0.1:7".into()),
            protocol: Some("grpc".into()),
            service_name: Some("mine".into()),
            capture_content: true,
            ..OtelConfig::default()
        };
        let vars = [
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:8/v1/traces"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
            ("OTEL_SERVICE_NAME", "theirs"),
        ];
        let export = with_env(&config, &vars).unwrap().unwrap();
        assert_eq!(export.endpoint, "http://127.0.0.1:7");
        assert_eq!(export.protocol, Protocol::Grpc);
        assert_eq!(export.service_name, "mine");
        assert!(export.capture_content);
        let off = OtelConfig { enabled: Some(false), ..config.clone() };
        assert_eq!(with_env(&off, &vars), Ok(None));
        assert_eq!(with_env(&config, &[("OTEL_SDK_DISABLED", "TRUE")]), Ok(None));
        assert_eq!(with_env(&config, &[("OTEL_TRACES_EXPORTER", "none")]), Ok(None));
        assert!(with_env(&config, &[("OTEL_SDK_DISABLED", "false")]).unwrap().is_some());
    }

    #[test]
    fn enabled_alone_uses_the_default_collector() {
        let on = OtelConfig { enabled: Some(true), ..OtelConfig::default() };
        assert_eq!(
            with_env(&on, &[]).unwrap().unwrap().endpoint,
            "http://localhost:4318/v1/traces"
        );
        let grpc = [("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc")];
        assert_eq!(with_env(&on, &grpc).unwrap().unwrap().endpoint, "http://localhost:4317");
    }

    #[test]
    fn bad_values_are_named() {
        let on = OtelConfig { enabled: Some(true), ..OtelConfig::default() };
        let err = with_env(&on, &[("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")]).unwrap_err();
        assert!(err.contains("http/json"), "{err}");
        let bad = OtelConfig { endpoint: Some("127.0.0.1:4318".into()), ..OtelConfig::default() };
        let err = with_env(&bad, &[]).unwrap_err();
        assert!(err.contains("127.0.0.1:4318"), "{err}");
    }
}
