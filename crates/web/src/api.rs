//! What the tools that call a paid API share (web_search, web_scrape, image_gen): the key, read at
//! call time from the user's secret store and then the environment, and refused for a host other
//! than the one recorded with it; one request through the egress guard, with a 429 retried once
//! after its `retry-after` (at most 10 s, and never past the call's cancellation).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use hands_core::secret::{SecretStore, SecretValue};
use hands_core::{Context, ToolError};
use hands_net::{Fetched, Guard, Request};

/// The longest `retry-after` waited for before the one retry of a 429.
pub(crate) const MAX_RETRY_WAIT: Duration = Duration::from_secs(10);

/// Where the keys come from: the user's secret store, then the environment.
#[derive(Clone, Default)]
pub(crate) struct Keys {
    store: Option<Arc<dyn SecretStore>>,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keys").field("store", &self.store.is_some()).finish()
    }
}

impl Keys {
    /// Keys read from `store` (when there is one), then the environment.
    pub(crate) fn new(store: Option<Arc<dyn SecretStore>>) -> Self {
        Self { store }
    }

    /// The key `name` granted to the project at `root`, else the variable `name`.
    pub(crate) fn get(&self, root: &Path, name: &str) -> Option<SecretValue> {
        self.store
            .as_ref()
            .and_then(|store| store.get(root, name))
            .or_else(|| std::env::var(name).ok().filter(|v| !v.is_empty()).map(SecretValue::new))
    }

    /// The key `name` for a request to `url`, or an error the model can relay: missing (`tool`
    /// says how to store it), or stored bound to another host than `url`'s.
    pub(crate) fn for_url(
        &self,
        root: &Path,
        tool: &str,
        name: &str,
        url: &str,
    ) -> Result<SecretValue, ToolError> {
        let key = self.get(root, name).ok_or_else(|| {
            ToolError::model(format!(
                "{tool} needs {name}: ask the user to store it (`hands secrets set {name}`) or \
                 set it in the environment."
            ))
        })?;
        let bound = self.store.as_ref().and_then(|store| store.host(root, name));
        if let Some(bound) = bound {
            let host = url::Url::parse(url)
                .ok()
                .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
                .unwrap_or_default();
            if !host.eq_ignore_ascii_case(bound.trim_end_matches('.')) {
                return Err(ToolError::model(format!(
                    "{name} is stored for {bound}, and {tool} would send it to {host}; nothing \
                     was sent. Ask the user to store the key for that host, or to change the \
                     base_url of their settings."
                )));
            }
        }
        Ok(key)
    }
}

/// `Authorization: <scheme> <key>` as a secret header value.
pub(crate) fn authorization(scheme: &str, key: &SecretValue) -> SecretValue {
    SecretValue::new(format!("{scheme} {}", key.expose()))
}

/// The `retry-after` of a response, in whole seconds.
pub(crate) fn retry_after(headers: &[(String, String)]) -> Option<Duration> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("retry-after"))
        .and_then(|(_, v)| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs)
}

/// The error of a 429 that is not retried (again).
pub(crate) fn rate_limited(service: &str, wait: Duration) -> ToolError {
    ToolError::model(format!(
        "{service} is rate-limiting this key (HTTP 429); try again in {} s or call it less often.",
        wait.as_secs().max(1)
    ))
}

/// Send `request` through `guard` as `tool` to `service`; a 429 is retried once after its
/// `retry-after` (1 s when it gives none) when that is at most 10 s. Returns the last answer,
/// whatever its status; a second 429 is an error.
pub(crate) async fn send(
    guard: &Guard,
    ctx: &Context,
    tool: &str,
    service: &str,
    request: Request,
) -> Result<Fetched, ToolError> {
    let once = |request: Request| async move {
        guard
            .send(request, ctx.cancel_token())
            .await
            .map_err(|err| ToolError::model(format!("{tool} could not reach {service}: {err}")))
    };
    let fetched = once(request.clone()).await?;
    if fetched.status != 429 {
        return Ok(fetched);
    }
    let wait = retry_after(&fetched.headers).unwrap_or(Duration::from_secs(1));
    if wait > MAX_RETRY_WAIT {
        return Err(rate_limited(service, wait));
    }
    tokio::select! {
        () = tokio::time::sleep(wait) => {}
        () = ctx.cancel_token().cancelled() => {
            return Err(ToolError::model(format!("{tool} was cancelled.")));
        }
    }
    let fetched = once(request).await?;
    if fetched.status == 429 {
        let wait = retry_after(&fetched.headers).unwrap_or(Duration::from_secs(1));
        return Err(rate_limited(service, wait));
    }
    Ok(fetched)
}

/// The `error`/`message`/`detail` text of a provider's JSON error body, on one line and at most
/// 300 characters: what it said about a bad request, for the model to act on.
pub(crate) fn error_message(body: &[u8]) -> Option<String> {
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    let pick = |v: &serde_json::Value| -> Option<String> {
        match v {
            serde_json::Value::String(s) => Some(s.clone()),
            serde_json::Value::Object(map) => map
                .get("message")
                .or_else(|| map.get("msg"))
                .and_then(|m| m.as_str())
                .map(str::to_owned),
            serde_json::Value::Array(items) => items.first().and_then(|first| {
                first.get("msg").or_else(|| first.get("message")).and_then(|m| m.as_str()).map(
                    |m| match first.get("loc") {
                        Some(loc) => format!("{m} (at {loc})"),
                        None => m.to_owned(),
                    },
                )
            }),
            _ => None,
        }
    };
    let text = ["error", "detail", "message"].iter().find_map(|k| value.get(*k).and_then(pick))?;
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.is_empty() {
        return None;
    }
    Some(if line.chars().count() > 300 {
        format!("{}…", line.chars().take(299).collect::<String>())
    } else {
        line
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_messages_of_each_provider_shape() {
        assert_eq!(
            error_message(br#"{"success":false,"error":"Invalid URL"}"#).as_deref(),
            Some("Invalid URL")
        );
        assert_eq!(
            error_message(br#"{"error":{"message":"Your prompt was\nrejected","type":"x"}}"#)
                .as_deref(),
            Some("Your prompt was rejected")
        );
        assert_eq!(
            error_message(br#"{"detail":[{"loc":["body","num_images"],"msg":"too big"}]}"#)
                .as_deref(),
            Some(r#"too big (at ["body","num_images"])"#)
        );
        assert_eq!(error_message(b"not json"), None);
        let long = format!(r#"{{"error":"{}"}}"#, "x".repeat(500));
        assert_eq!(error_message(long.as_bytes()).unwrap().chars().count(), 300);
    }

    #[test]
    fn retry_after_in_seconds() {
        let headers = vec![("Retry-After".to_owned(), " 7 ".to_owned())];
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(7)));
        assert_eq!(retry_after(&[]), None);
    }
}
