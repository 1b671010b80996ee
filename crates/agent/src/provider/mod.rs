//! The model providers: [`Anthropic`] (the Messages API) and [`OpenAi`] (Chat Completions, and
//! every server that copies it: Ollama, vLLM, llama.cpp's server, LM Studio). Each translates a
//! [`ModelRequest`](crate::model::ModelRequest) into its wire format and decodes its event stream
//! ([`sse`] lines → the provider's events → a `ModelResponse`); the HTTP round trip, retries and
//! cancellation are shared ([`exchange`]), and so is the mapping of errors ([`error`]).
//! [`from_config`] builds the configured one from `[model]`.

mod anthropic;
mod config;
mod error;
mod exchange;
mod openai;
mod retry;
mod sse;

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

pub use anthropic::Anthropic;
pub use config::{
    ConfigError, ModelConfig, ProviderKind, default_context_window, from_config, from_config_with,
};
pub use openai::OpenAi;
pub use retry::RetryPolicy;

use exchange::Endpoint;

/// Everything a provider is built from; [`ModelConfig::options`] makes it from `[model]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderOptions {
    /// The model's name as the provider knows it.
    pub model: String,
    /// The server: `https://api.anthropic.com`, `https://api.openai.com/v1`,
    /// `http://localhost:11434/v1`, …
    pub base_url: String,
    /// The API key, when there is one.
    pub api_key: Option<String>,
    /// The variable the key came from (named in authentication errors).
    pub api_key_env: String,
    /// The model's context window in tokens.
    pub context_window: u64,
    /// Retries and backoff.
    pub retry: RetryPolicy,
    /// Longest wait to connect, for the response headers, or for the next piece of the stream.
    pub request_timeout: Duration,
    /// Extra headers for every request.
    pub headers: Vec<(String, String)>,
}

impl ProviderOptions {
    /// The defaults for `kind` and `model`: the provider's public URL, its usual key variable
    /// (not read here), the model family's context window.
    pub fn new(kind: ProviderKind, model: impl Into<String>) -> Self {
        let model = model.into();
        Self {
            base_url: kind.default_base_url().to_owned(),
            api_key: None,
            api_key_env: kind.default_key_env().to_owned(),
            context_window: default_context_window(&model),
            retry: RetryPolicy::default(),
            request_timeout: Duration::from_millis(ModelConfig::default().request_timeout_ms),
            headers: Vec::new(),
            model,
        }
    }

    /// The endpoint at `base_url` + `path`, sending `headers` and then the configured extras
    /// (which may override them, e.g. `anthropic-version`).
    fn endpoint(&self, path: &str, mut headers: HeaderMap) -> Result<Endpoint, ConfigError> {
        let base = self.base_url.trim_end_matches('/');
        let url = reqwest::Url::parse(base).map_err(|e| ConfigError::BaseUrl {
            url: self.base_url.clone(),
            reason: e.to_string(),
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ConfigError::BaseUrl {
                url: self.base_url.clone(),
                reason: format!("the scheme is {:?}", url.scheme()),
            });
        }
        for (name, value) in &self.headers {
            let bad = |reason: String| ConfigError::Header { name: name.clone(), reason };
            let header_name =
                HeaderName::from_bytes(name.as_bytes()).map_err(|e| bad(e.to_string()))?;
            let header_value = HeaderValue::from_str(value).map_err(|e| bad(e.to_string()))?;
            headers.insert(header_name, header_value);
        }
        let client = reqwest::Client::builder()
            .connect_timeout(self.request_timeout.min(Duration::from_secs(30)))
            .read_timeout(self.request_timeout)
            .user_agent(concat!("hands/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ConfigError::Client(exchange::describe(&e)))?;
        Ok(Endpoint { client, url: format!("{base}{path}"), headers, retry: self.retry.clone() })
    }
}

/// A secret header value (kept out of debug output).
fn secret_header(name: &str, value: &str) -> Result<HeaderValue, ConfigError> {
    let mut value = HeaderValue::from_str(value).map_err(|_| ConfigError::Header {
        name: name.to_owned(),
        reason: "the API key holds characters that cannot be sent in a header".into(),
    })?;
    value.set_sensitive(true);
    Ok(value)
}
