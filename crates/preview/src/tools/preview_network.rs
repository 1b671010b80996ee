//! preview_network: the page's requests since a cursor, filtered; one request's bodies on demand.

use std::borrow::Cow;
use std::sync::atomic::Ordering;

use base64::Engine as _;
use hands_core::{Annotations, Context, Tool, ToolError, ToolOutput};
use hands_core::{Family, Modes, Policy};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::network::{Filter, MAX_BODY, capped};
use crate::preview::Preview;

/// Requests listed at most.
const MAX_LISTED: usize = 100;

/// Arguments of preview_network.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NetworkArgs {
    /// Requests updated after this cursor (default: where the last call stopped; 0: all kept).
    #[serde(default)]
    pub since: Option<u64>,
    /// Only this method (GET, POST, …).
    #[serde(default)]
    pub method: Option<String>,
    /// Only URLs containing this text.
    #[serde(default)]
    pub url: Option<String>,
    /// A status (`500`), a class (`4xx`), or `failed` (failed or ≥ 400).
    #[serde(default)]
    pub status: Option<String>,
    /// Only this resource type (fetch, xhr, document, script, image, …).
    #[serde(default, rename = "type")]
    pub resource: Option<String>,
    /// Only requests that took at least this many milliseconds.
    #[serde(default)]
    pub min_ms: Option<f64>,
    /// Only responses of at least this many bytes.
    #[serde(default)]
    pub min_bytes: Option<u64>,
    /// Show this request's (`#N` of a listing) request and response bodies, capped at 4 KB each.
    #[serde(default)]
    pub body: Option<u64>,
}

/// The preview_network tool.
#[derive(Debug, Clone, Default)]
pub struct PreviewNetwork;

impl Tool for PreviewNetwork {
    type Args = NetworkArgs;

    fn name(&self) -> &'static str {
        "preview_network"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("preview_network.md"))
    }

    fn annotations(&self) -> Annotations {
        Annotations { read_only: true, destructive: false, idempotent: false, open_world: false }
    }

    fn policy(&self) -> Policy {
        Policy::from_annotations(self.annotations()).modes(Modes::BUILD).family(Family::Preview)
    }

    fn cacheable(&self) -> bool {
        false
    }

    async fn call(&self, ctx: Context, args: NetworkArgs) -> Result<ToolOutput, ToolError> {
        let Some(preview) = Preview::existing(ctx.session()) else {
            return Err(ToolError::model(
                "No preview is open in this session: call preview_open first.",
            ));
        };
        let origin = preview.origin();
        if let Some(seq) = args.body {
            return body(&preview, seq, origin.as_deref()).await;
        }
        let since = args.since.unwrap_or_else(|| preview.network_read.load(Ordering::Relaxed));
        let cursor = preview.network.cursor();
        preview.network_read.fetch_max(cursor, Ordering::Relaxed);
        let filter = Filter {
            method: args.method,
            url: args.url,
            status: args.status,
            min_ms: args.min_ms,
            min_bytes: args.min_bytes,
            resource: args.resource,
        };
        let kept: Vec<_> =
            preview.network.since(since).into_iter().filter(|r| filter.keeps(r)).collect();
        let omitted = kept.len().saturating_sub(MAX_LISTED);
        let mut text = format!(
            "{} request{} since cursor {since} (cursor now {cursor}){}:",
            kept.len(),
            if kept.len() == 1 { "" } else { "s" },
            origin.as_deref().map_or(String::new(), |o| format!("; paths are on {o}")),
        );
        if kept.is_empty() {
            text.pop();
            text.push('.');
        }
        if omitted > 0 {
            text.push_str(&format!("\n({omitted} older left out; narrow with the filters)"));
        }
        for request in &kept[omitted..] {
            text.push('\n');
            text.push_str(&request.line(origin.as_deref()));
        }
        let refused = preview.refused();
        if !refused.is_empty() {
            text.push_str("\nRefused by the egress rule (no connection was made):");
            for r in refused.iter().rev().take(20) {
                text.push_str(&format!("\n  {} — {}", r.target, r.reason));
            }
        }
        Ok(ToolOutput::text(text))
    }
}

/// One request with its bodies.
async fn body(preview: &Preview, seq: u64, origin: Option<&str>) -> Result<ToolOutput, ToolError> {
    let request = preview.network.since(0).into_iter().find(|r| r.seq == seq).ok_or_else(|| {
        ToolError::model(format!(
            "No request #{seq} is kept: list them with preview_network first."
        ))
    })?;
    let mut text = request.line(origin);
    text.push_str(&format!("\nURL: {}", request.url));
    if let Some(mime) = &request.mime {
        text.push_str(&format!("\nType: {mime}"));
    }
    if let Some(sent) = &request.body {
        text.push_str(&format!("\nRequest body:\n{sent}"));
    }
    let answer = match preview.page() {
        Some((cdp, page)) => cdp
            .call("Network.getResponseBody", json!({"requestId": request.id}), Some(&page))
            .await
            .map_err(|e| e.to_string()),
        None => Err("the preview is closed".to_owned()),
    };
    match answer {
        Ok(got) => {
            let raw = got["body"].as_str().unwrap_or("");
            let decoded = if got["base64Encoded"].as_bool() == Some(true) {
                let bytes =
                    base64::engine::general_purpose::STANDARD.decode(raw).unwrap_or_default();
                match String::from_utf8(bytes) {
                    Ok(text) => text,
                    Err(e) => format!("({} bytes of binary data)", e.into_bytes().len()),
                }
            } else {
                raw.to_owned()
            };
            let clean = hands_core::redact::text(&decoded);
            text.push_str(&format!("\nResponse body:\n{}", capped(&clean, MAX_BODY)));
        }
        Err(why) => text.push_str(&format!("\nResponse body: not available ({why})")),
    }
    Ok(ToolOutput::text(text))
}
