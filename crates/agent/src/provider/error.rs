//! From a provider's error (an HTTP status with its body, or an error event inside the stream) to
//! a [`ProviderError`] that tells the user what to do, and whether another attempt may help.
//! Each provider extracts its own fields ([`ErrorInfo`]); the mapping is shared.

use std::time::Duration;

use super::exchange::{Failure, snippet};
use super::retry::RETRYABLE_STATUSES;
use crate::model::ProviderError;

/// The fields of a provider's error body.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ErrorInfo {
    /// The human message (or the raw body when it was not the provider's JSON).
    pub message: String,
    /// `error.type` (`invalid_request_error`, `overloaded_error`, …).
    pub kind: String,
    /// `error.code` (`context_length_exceeded`, `model_not_found`, …), as text.
    pub code: String,
}

impl ErrorInfo {
    /// Info for a body that is not JSON we know: its text is the message.
    pub fn raw(status: u16, body: &str) -> Self {
        let message = match snippet(body) {
            text if text.is_empty() => format!("HTTP {status} with an empty body"),
            text => text,
        };
        Self { message, ..Self::default() }
    }
}

/// What the messages need to know about the call.
#[derive(Debug, Clone, Default)]
pub(crate) struct Caller {
    pub model: String,
    pub url: String,
    pub key_env: String,
    pub key_set: bool,
}

/// Map one error. `overflow` is the provider's own test for "the prompt is too long".
pub(crate) fn classify(
    status: u16,
    info: &ErrorInfo,
    overflow: bool,
    retry_after: Option<Duration>,
    caller: &Caller,
) -> Failure {
    let message = info.message.clone();
    let error = if status == 401 || status == 403 {
        let key = if caller.key_set {
            format!("the key is read from {}", caller.key_env)
        } else {
            format!("{} is not set", caller.key_env)
        };
        ProviderError::Auth(format!("{message} (HTTP {status}; {key})"))
    } else if overflow {
        ProviderError::ContextOverflow(message)
    } else if status == 404
        || ((400..500).contains(&status) && status != 429 && model_not_found(info))
    {
        ProviderError::UnknownModel(format!(
            "{} ({message}; HTTP {status} from {})",
            caller.model, caller.url
        ))
    } else if status == 429 {
        ProviderError::RateLimited { retry_after, message }
    } else if status >= 500 {
        ProviderError::Server { status, message }
    } else {
        ProviderError::BadRequest { status, message }
    };
    Failure { error, retryable: RETRYABLE_STATUSES.contains(&status), retry_after }
}

/// "model not found" in the words of OpenAI (`model_not_found`), Ollama ("model \"x\" not found,
/// try pulling it first"), vLLM and LM Studio ("The model `x` does not exist").
fn model_not_found(info: &ErrorInfo) -> bool {
    let message = info.message.to_ascii_lowercase();
    info.code == "model_not_found"
        || message.contains("model not found")
        || (message.contains("model")
            && (message.contains("not found") || message.contains("does not exist")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller() -> Caller {
        Caller {
            model: "m-1".into(),
            url: "http://h/v1/x".into(),
            key_env: "X_API_KEY".into(),
            key_set: true,
        }
    }

    fn info(message: &str, code: &str) -> ErrorInfo {
        ErrorInfo { message: message.into(), code: code.into(), ..ErrorInfo::default() }
    }

    #[test]
    fn statuses_map_to_errors_that_say_what_to_do() {
        let f = classify(401, &info("invalid x-api-key", ""), false, None, &caller());
        assert_eq!(
            f.error,
            ProviderError::Auth(
                "invalid x-api-key (HTTP 401; the key is read from X_API_KEY)".into()
            )
        );
        assert!(!f.retryable);
        let unset = Caller { key_set: false, ..caller() };
        let f = classify(403, &info("no", ""), false, None, &unset);
        assert_eq!(f.error, ProviderError::Auth("no (HTTP 403; X_API_KEY is not set)".into()));

        let f = classify(404, &info("model: m-1", ""), false, None, &caller());
        assert_eq!(
            f.error,
            ProviderError::UnknownModel("m-1 (model: m-1; HTTP 404 from http://h/v1/x)".into())
        );
        let f = classify(
            400,
            &info("model \"m-1\" not found, try pulling it first", ""),
            false,
            None,
            &caller(),
        );
        assert!(matches!(f.error, ProviderError::UnknownModel(_)));

        let f = classify(400, &info("too long", ""), true, None, &caller());
        assert_eq!(f.error, ProviderError::ContextOverflow("too long".into()));

        let wait = Some(Duration::from_secs(2));
        let f = classify(429, &info("slow down", ""), false, wait, &caller());
        assert_eq!(
            f.error,
            ProviderError::RateLimited { retry_after: wait, message: "slow down".into() }
        );
        assert!(f.retryable);
        assert_eq!(f.retry_after, wait);

        for status in [500, 502, 503, 504, 529] {
            let f = classify(status, &info("boom", ""), false, None, &caller());
            assert_eq!(f.error, ProviderError::Server { status, message: "boom".into() });
            assert!(f.retryable, "{status}");
        }
        let f = classify(501, &info("nope", ""), false, None, &caller());
        assert!(!f.retryable);
        let f = classify(422, &info("bad", ""), false, None, &caller());
        assert_eq!(f.error, ProviderError::BadRequest { status: 422, message: "bad".into() });
    }

    #[test]
    fn a_body_that_is_not_json_becomes_the_message() {
        assert_eq!(
            ErrorInfo::raw(502, "  <html>bad gateway</html>\n").message,
            "<html>bad gateway</html>"
        );
        assert_eq!(ErrorInfo::raw(502, "").message, "HTTP 502 with an empty body");
    }
}
