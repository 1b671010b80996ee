//! Forwarding of MCP 2026-07-28 requests to the node that holds what they name. Such a client
//! keeps no session, so a load balancer may send each of its requests to any node: a request
//! with no handle (`tools/list`, `server/discover`, a first `tools/call`) is answered where it
//! lands, but a retry whose `requestState` names a call parked on another node, and
//! `tasks/get`/`tasks/update`/`tasks/cancel` for a task another node runs, are sent on to that
//! node (its id is in the handle, see [`hands_mcp::node_of`]; its address comes from the node
//! table, as for [`crate::forward`]), which checks the handle as if the client had reached it.
//! Requests of an MCP session (`Mcp-Session-Id`, 2025-11-25) are never forwarded: they need a
//! load balancer that keeps each session on its node.
//!
//! What a node holds for such clients lives in its memory: when that node is gone (not
//! registered, or not answering), the call or task is lost, and the client gets a JSON-RPC error
//! saying so; nothing else is run in its place.

use std::sync::atomic::Ordering;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::forward::{FORWARDED_BY, Forwarder, send};

/// The handle a request carries that names another node.
#[derive(Debug, PartialEq, Eq)]
struct Named {
    /// The JSON-RPC id (echoed in an error).
    id: Value,
    /// The node.
    node: String,
    /// A parked call (`requestState`) rather than a task.
    call: bool,
}

/// The node a JSON-RPC request's handle names, when it has one.
fn named(body: &[u8]) -> Option<Named> {
    let message: Value = serde_json::from_slice(body).ok()?;
    let params = message.get("params")?;
    let (handle, call) = match message.get("method")?.as_str()? {
        "tools/call" => (params.get("requestState")?, true),
        "tasks/get" | "tasks/update" | "tasks/cancel" => (params.get("taskId")?, false),
        _ => return None,
    };
    let node = hands_mcp::node_of(handle.as_str()?)?;
    Some(Named { id: message.get("id").cloned().unwrap_or(Value::Null), node, call })
}

/// The middleware, on `/mcp` inside the guard.
pub async fn layer(State(forwarder): State<Forwarder>, request: Request, next: Next) -> Response {
    let (me, clustered) = forwarder.host.node_id();
    let me = me.to_owned();
    let headers = request.headers();
    if !clustered
        || request.method() != Method::POST
        || headers.contains_key(FORWARDED_BY)
        || headers.contains_key("mcp-session-id")
    {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, hands_mcp::MAX_BODY_BYTES).await else {
        let message = format!("the body is over {} bytes\n", hands_mcp::MAX_BODY_BYTES);
        return (StatusCode::PAYLOAD_TOO_LARGE, message).into_response();
    };
    let named = match named(&bytes) {
        Some(named) if named.node != me => named,
        _ => return next.run(Request::from_parts(parts, Body::from(bytes))).await,
    };
    let what = if named.call { "the call this requestState answers" } else { "this task" };
    let url = match forwarder.host.node_url(&named.node).await {
        Ok(Some(url)) => url,
        Ok(None) => return lost(&named, what),
        Err(err) => {
            tracing::warn!(node = %named.node, %err, "looking up a node");
            let message = format!("cannot look up node {} now ({err}); send it again", named.node);
            return rpc_error(&named.id, -32603, &message, &named.node);
        }
    };
    // The request carries the client's token: never over plain HTTP off this host.
    if let Err(why) = forwarder.host.may_forward_to(&url) {
        tracing::error!(node = %named.node, %why, "not forwarding");
        let message = format!(
            "{what} is held by node {}, which this node does not forward to: {why}",
            named.node
        );
        return rpc_error(&named.id, -32603, &message, &named.node);
    }
    match send(&forwarder, &url, &parts, bytes).await {
        Ok(response) => {
            forwarder.forwarded.fetch_add(1, Ordering::Relaxed);
            response
        }
        // Sent, and the answer lost: it may have taken effect, so it is not sent again.
        Err(err) if !err.is_connect() => {
            tracing::warn!(node = %named.node, %err, "the node died answering an MCP request");
            let message = format!(
                "node {} stopped while answering: {what} may have gone on there; look at its \
                 effects before making the call again",
                named.node
            );
            rpc_error(&named.id, -32603, &message, &named.node)
        }
        Err(err) => {
            tracing::warn!(node = %named.node, %err, "an MCP request's node does not answer");
            lost(&named, what)
        }
    }
}

/// The error for a handle whose node is gone: what it held is lost, nothing ran in its place.
fn lost(named: &Named, what: &str) -> Response {
    let again = if named.call {
        "it is lost and did not go on past its question: make the call again, without \
         requestState (the user is asked again)"
    } else {
        "it is lost with its result: start it again if it is still needed"
    };
    let message = format!("{what} was held by node {}, which is gone: {again}", named.node);
    rpc_error(&named.id, -32602, &message, &named.node)
}

/// A JSON-RPC error response to request `id` (HTTP 200, as MCP answers a failed request).
fn rpc_error(id: &Value, code: i64, message: &str, node: &str) -> Response {
    let body = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": code, "message": message, "data": {"node": node}},
    });
    let mut response = Response::new(Body::from(Bytes::from(body.to_string())));
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tagged(node: &str) -> String {
        hands_mcp::tagged_with_node(Some(node), "00ff")
    }

    #[test]
    fn only_a_retry_or_a_task_request_with_a_tagged_handle_names_a_node() {
        let state = tagged("node-a");
        let retry = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                           "params": {"name": "bash", "requestState": state}});
        let got = named(retry.to_string().as_bytes());
        assert_eq!(got, Some(Named { id: json!(7), node: "node-a".into(), call: true }));
        for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
            let request = json!({"id": "x", "method": method, "params": {"taskId": tagged("b")}});
            let got = named(request.to_string().as_bytes()).map(|n| (n.node, n.call));
            assert_eq!(got, Some(("b".to_owned(), false)), "{method}");
        }
        for plain in [
            json!({"id": 1, "method": "tools/call", "params": {"name": "bash"}}),
            json!({"id": 1, "method": "tools/call", "params": {"requestState": "00ff"}}),
            json!({"id": 1, "method": "tools/list", "params": {"requestState": tagged("a")}}),
            json!({"id": 1, "method": "tasks/get", "params": {"taskId": 5}}),
            json!([{"id": 1, "method": "tasks/get", "params": {"taskId": tagged("a")}}]),
        ] {
            assert_eq!(named(plain.to_string().as_bytes()), None, "{plain}");
        }
        assert_eq!(named(b"not json"), None);
    }

    #[test]
    fn the_error_is_json_rpc_with_the_request_id() {
        let named = Named { id: json!("r1"), node: "a".into(), call: true };
        let response = lost(&named, "the call");
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
    }
}
