//! The exported spans of the agent loop (target `hands::span`, GenAI conventions): one
//! `invoke_agent hands` span per turn, one `chat MODEL` span per model request inside it; the
//! tool calls' spans (`execute_tool NAME`, made by the registry) are the turn's children too.
//! Only names, ids and counts go on them: never a prompt, a message or a result.

use std::time::Duration;

use hands_core::telemetry::int;
use tracing::Span;
use tracing::field::Empty;

use crate::model::{ModelRequest, ModelResponse, Provider, ProviderError, StopReason, Usage};

/// The span of a turn: a child of the current exported span (a sub-agent's turn runs inside
/// its parent's `spawn_agent` call), else of the task's remote parent (the session API's
/// `traceparent`), else a root.
pub(crate) fn turn_span(
    session: &hands_core::Session,
    turn_id: &str,
    provider: &dyn Provider,
) -> Span {
    let outside = hands_core::telemetry::outside_any_span();
    let span = tracing::info_span!(
        target: "hands::span",
        "invoke_agent",
        otel.name = "invoke_agent hands",
        otel.kind = "internal",
        otel.status_code = Empty,
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.name = "hands",
        gen_ai.conversation.id = %session.id(),
        gen_ai.provider.name = provider.name(),
        gen_ai.request.model = provider.model(),
        hands.session.id = %session.id(),
        hands.turn.id = turn_id,
        hands.mode = %session.mode(),
        hands.turn.outcome = Empty,
        hands.turn.steps = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        error.type = Empty,
    );
    hands_core::telemetry::adopt_remote_parent(&span, outside);
    span
}

/// How the turn ended (`reason`: the stored turn status), on its span.
pub(crate) fn record_turn_end(span: &Span, reason: &'static str, steps: u32, usage: Usage) {
    if span.is_disabled() {
        return;
    }
    span.record("hands.turn.outcome", reason);
    span.record("hands.turn.steps", int(steps));
    span.record("gen_ai.usage.input_tokens", int(usage.input_tokens));
    span.record("gen_ai.usage.output_tokens", int(usage.output_tokens));
    let failure = match reason {
        "error" => Some("provider"),
        "max_steps" => Some("max_steps"),
        _ => None,
    };
    match failure {
        Some(kind) => {
            span.record("otel.status_code", "error");
            span.record("error.type", kind);
        }
        None => {
            span.record("otel.status_code", "ok");
        }
    }
}

/// The span of one model request.
pub(crate) fn model_span(
    session: &hands_core::Session,
    provider: &dyn Provider,
    request: &ModelRequest,
) -> Span {
    tracing::info_span!(
        target: "hands::span",
        "chat",
        otel.name = %format!("chat {}", provider.model()),
        otel.kind = "client",
        otel.status_code = Empty,
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = provider.name(),
        gen_ai.request.model = provider.model(),
        gen_ai.request.max_tokens = i64::from(request.max_tokens),
        gen_ai.conversation.id = %session.id(),
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.response.finish_reasons = Empty,
        hands.model.outcome = Empty,
        hands.model.latency_ms = Empty,
        error.type = Empty,
    )
}

/// What a model request gave, on its span: tokens and finish reason, or the kind of failure.
pub(crate) fn record_model_end(
    span: &Span,
    result: &Result<ModelResponse, ProviderError>,
    latency: Duration,
) {
    if span.is_disabled() {
        return;
    }
    span.record("hands.model.latency_ms", int(latency.as_millis()));
    match result {
        Ok(response) => {
            span.record("hands.model.outcome", "ok");
            span.record("otel.status_code", "ok");
            span.record("gen_ai.usage.input_tokens", int(response.usage.input_tokens));
            span.record("gen_ai.usage.output_tokens", int(response.usage.output_tokens));
            let reason = match &response.stop {
                StopReason::EndTurn => "stop",
                StopReason::ToolUse => "tool_call",
                StopReason::MaxTokens => "length",
                StopReason::Other(other) => other.as_str(),
            };
            span.record("gen_ai.response.finish_reasons", reason);
        }
        Err(error) => {
            let kind = error_kind(error);
            span.record("hands.model.outcome", kind);
            span.record("error.type", kind);
            span.record("otel.status_code", "error");
        }
    }
}

/// A failure's kind (never its message: a provider may echo the request).
fn error_kind(error: &ProviderError) -> &'static str {
    match error {
        ProviderError::Auth(_) => "auth",
        ProviderError::UnknownModel(_) => "unknown_model",
        ProviderError::ContextOverflow(_) => "context_overflow",
        ProviderError::RateLimited { .. } => "rate_limited",
        ProviderError::Server { .. } => "server",
        ProviderError::BadRequest { .. } => "bad_request",
        ProviderError::Transport(_) => "transport",
        ProviderError::Protocol(_) => "protocol",
        ProviderError::Cancelled => "cancelled",
    }
}
