//! `GET /readyz`: 200 when this node can take requests (its store answers at the schema version
//! it needs, and it is not draining), else 503 with why. `/healthz` (alive) is hands-mcp's. Both
//! are open (no token), for load balancers and orchestrators' probes.

use std::sync::Arc;

use axum::Router;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use hands_agent::host::Host;

/// The route.
pub fn routes(host: Arc<Host>) -> Router {
    Router::new().route(
        "/readyz",
        get(move || {
            let host = Arc::clone(&host);
            async move {
                match host.ready().await {
                    Ok(()) => (StatusCode::OK, "ready\n".to_owned()).into_response(),
                    Err(why) => {
                        (StatusCode::SERVICE_UNAVAILABLE, format!("{why}\n")).into_response()
                    }
                }
            }
        }),
    )
}
