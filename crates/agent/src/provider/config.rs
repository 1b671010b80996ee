//! `[model]`: which provider and model the agent loop talks to, and how. [`from_config`](super::from_config) checks
//! the section (model named, key present where one is needed, URL and headers well-formed) and
//! builds the provider; the binary merges the layers and hands the section over.

use std::collections::BTreeMap;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::{Deserialize, Serialize};

use super::exchange::{self, Endpoint};
use super::retry::RetryPolicy;

/// Which wire format the model server speaks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// Anthropic's Messages API.
    #[default]
    Anthropic,
    /// OpenAI's Chat Completions, and the servers that copy it (Ollama, vLLM, llama.cpp, LM Studio).
    #[serde(rename = "openai")]
    OpenAi,
}

impl ProviderKind {
    /// `anthropic` or `openai`, as in the configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Anthropic => "anthropic",
            Self::OpenAi => "openai",
        }
    }

    /// Where the provider is when `base_url` is not set.
    pub fn default_base_url(self) -> &'static str {
        match self {
            Self::Anthropic => "https://api.anthropic.com",
            Self::OpenAi => "https://api.openai.com/v1",
        }
    }

    /// The variable that holds the key when `api_key_env` is not set.
    pub fn default_key_env(self) -> &'static str {
        match self {
            Self::Anthropic => "ANTHROPIC_API_KEY",
            Self::OpenAi => "OPENAI_API_KEY",
        }
    }
}

/// `[model]`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModelConfig {
    /// `anthropic` or `openai` (any OpenAI-compatible server).
    pub provider: ProviderKind,
    /// The model's name as the provider knows it (`claude-sonnet-4-5`, `gpt-4o`, `llama3.1:8b`).
    pub model: String,
    /// The server; default `https://api.anthropic.com` or `https://api.openai.com/v1`
    /// (Ollama: `http://localhost:11434/v1`).
    pub base_url: Option<String>,
    /// The environment variable that holds the API key; default `ANTHROPIC_API_KEY` or
    /// `OPENAI_API_KEY`. It may be unset only for `openai` at a `base_url` other than OpenAI's
    /// own (local servers need no key).
    pub api_key_env: Option<String>,
    /// The model's context window in tokens; default: known for the model's family, else 128000.
    pub context_window: Option<u64>,
    /// Retries of a failed call (429, 5xx, connection errors) before giving up; 0 never retries.
    pub max_retries: u32,
    /// Longest wait for the connection, the response headers, or the next piece of the stream,
    /// in milliseconds (a whole answer may take longer).
    pub request_timeout_ms: u64,
    /// Extra HTTP headers sent with every request (`anthropic-beta`, an `OpenAI-Organization`, a
    /// gateway's key).
    pub headers: BTreeMap<String, String>,
}

impl Default for ModelConfig {
    fn default() -> Self {
        Self {
            provider: ProviderKind::Anthropic,
            model: String::new(),
            base_url: None,
            api_key_env: None,
            context_window: None,
            max_retries: RetryPolicy::default().max_retries,
            request_timeout_ms: 300_000,
            headers: BTreeMap::new(),
        }
    }
}

/// Why `[model]` cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// `model` is empty.
    #[error("[model] model is not set: name the model to use, e.g. model = \"claude-sonnet-4-5\"")]
    NoModel,
    /// The key's variable is not set (or empty) and the provider needs a key.
    #[error(
        "{var} is not set: the {provider} provider needs an API key (set {var}, or point [model] api_key_env at the variable that holds it)"
    )]
    MissingKey {
        /// The variable.
        var: String,
        /// The provider.
        provider: &'static str,
    },
    /// `base_url` is not an http(s) URL.
    #[error("[model] base_url {url:?} is not an http:// or https:// URL: {reason}")]
    BaseUrl {
        /// As configured.
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// A header name or value cannot be sent.
    #[error("[model] header {name:?} cannot be sent over HTTP: {reason}")]
    Header {
        /// The header's name.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// The HTTP client could not be built (TLS setup).
    #[error("could not set up the HTTP client for the model provider: {0}")]
    Client(String),
}

impl ModelConfig {
    /// The provider options this section describes, reading the key with `env`.
    pub fn options(
        &self,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<ProviderOptions, ConfigError> {
        let model = self.model.trim();
        if model.is_empty() {
            return Err(ConfigError::NoModel);
        }
        let key_env =
            self.api_key_env.clone().unwrap_or_else(|| self.provider.default_key_env().to_owned());
        let api_key = env(&key_env).filter(|k| !k.trim().is_empty());
        // OpenAI's own API needs a key as Anthropic's does; a local server (Ollama, llama.cpp)
        // at another base URL often needs none.
        let hosted = match self.provider {
            ProviderKind::Anthropic => true,
            ProviderKind::OpenAi => self.base_url.as_deref().is_none_or(|url| {
                reqwest::Url::parse(url.trim())
                    .is_ok_and(|u| u.host_str() == Some("api.openai.com"))
            }),
        };
        if api_key.is_none() && hosted {
            return Err(ConfigError::MissingKey { var: key_env, provider: self.provider.as_str() });
        }
        let mut options = ProviderOptions::new(self.provider, model);
        if let Some(url) = &self.base_url {
            options.base_url = url.trim().to_owned();
        }
        options.api_key = api_key;
        options.api_key_env = key_env;
        if let Some(window) = self.context_window {
            options.context_window = window;
        }
        options.retry.max_retries = self.max_retries;
        options.request_timeout = Duration::from_millis(self.request_timeout_ms.max(1));
        options.headers = self.headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        Ok(options)
    }
}

/// The context window of a known model family, else 128000. Local servers often run a model
/// with a smaller window than it supports (Ollama's `num_ctx`): set `context_window` for them.
pub fn default_context_window(model: &str) -> u64 {
    // Longest prefix first where two share a start (gpt-4o before gpt-4).
    const FAMILIES: &[(&str, u64)] = &[
        ("claude-", 200_000),
        ("gpt-5", 400_000),
        ("gpt-4.1", 1_047_576),
        ("gpt-4o", 128_000),
        ("gpt-4-turbo", 128_000),
        ("gpt-4-32k", 32_768),
        ("gpt-4", 8_192),
        ("gpt-3.5-turbo", 16_385),
        ("o1-mini", 128_000),
        ("o1", 200_000),
        ("o3", 200_000),
        ("o4-mini", 200_000),
        ("llama3.1", 131_072),
        ("llama3.2", 131_072),
        ("llama3.3", 131_072),
        ("llama3", 8_192),
        ("qwen2.5", 32_768),
        ("qwen3", 40_960),
        ("mistral", 32_768),
        ("gemma2", 8_192),
        ("gemma3", 131_072),
    ];
    // `openai/gpt-4o` (gateways), `llama3.1:8b` (Ollama tags): the family is in the last segment.
    let name = model.rsplit('/').next().unwrap_or(model).to_ascii_lowercase();
    FAMILIES
        .iter()
        .find(|(prefix, _)| name.starts_with(prefix))
        .map_or(128_000, |&(_, window)| window)
}

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
    pub(super) fn endpoint(
        &self,
        path: &str,
        mut headers: HeaderMap,
    ) -> Result<Endpoint, ConfigError> {
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
pub(super) fn secret_header(name: &str, value: &str) -> Result<HeaderValue, ConfigError> {
    let mut value = HeaderValue::from_str(value).map_err(|_| ConfigError::Header {
        name: name.to_owned(),
        reason: "the API key holds characters that cannot be sent in a header".into(),
    })?;
    value.set_sensitive(true);
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::from_config_with;

    fn parse(toml_text: &str) -> Result<ModelConfig, toml::de::Error> {
        toml::from_str(toml_text)
    }

    #[test]
    fn a_section_parses_with_defaults_and_refuses_unknown_keys() {
        let cfg = parse("provider = \"openai\"\nmodel = \"llama3.1:8b\"\nbase_url = \"http://localhost:11434/v1\"\n[headers]\nx-a = \"1\"\n").unwrap();
        assert_eq!(cfg.provider, ProviderKind::OpenAi);
        assert_eq!(cfg.max_retries, 3);
        assert_eq!(cfg.request_timeout_ms, 300_000);
        assert_eq!(cfg.headers.get("x-a").map(String::as_str), Some("1"));
        assert!(
            parse("model = \"x\"\napi_key = \"secret\"\n").is_err(),
            "keys never live in the file"
        );
        assert!(parse("provider = \"gemini\"\n").is_err());
    }

    #[test]
    fn options_fill_in_the_provider_defaults() {
        let cfg = ModelConfig { model: "claude-sonnet-4-5".into(), ..ModelConfig::default() };
        let opts = cfg.options(|v| (v == "ANTHROPIC_API_KEY").then(|| "k".to_owned())).unwrap();
        assert_eq!(opts.base_url, "https://api.anthropic.com");
        assert_eq!(opts.api_key.as_deref(), Some("k"));
        assert_eq!(opts.api_key_env, "ANTHROPIC_API_KEY");
        assert_eq!(opts.context_window, 200_000);
        assert_eq!(opts.retry.max_retries, 3);

        let cfg = ModelConfig {
            provider: ProviderKind::OpenAi,
            model: "qwen2.5-coder:7b".into(),
            base_url: Some("http://localhost:11434/v1".into()),
            context_window: Some(16_384),
            max_retries: 0,
            ..ModelConfig::default()
        };
        let opts = cfg.options(|_| None).unwrap();
        assert_eq!(opts.api_key, None, "local servers need no key");
        assert_eq!(opts.api_key_env, "OPENAI_API_KEY");
        assert_eq!(opts.base_url, "http://localhost:11434/v1");
        assert_eq!(opts.context_window, 16_384);
        assert_eq!(opts.retry.max_retries, 0);
    }

    #[test]
    fn errors_say_what_is_missing() {
        let cfg = ModelConfig { model: "claude-sonnet-4-5".into(), ..ModelConfig::default() };
        let err = from_config_with(&cfg, |_| Some(" ".into())).err().unwrap();
        assert_eq!(
            err.to_string(),
            "ANTHROPIC_API_KEY is not set: the anthropic provider needs an API key (set ANTHROPIC_API_KEY, or point [model] api_key_env at the variable that holds it)"
        );
        let custom = ModelConfig { api_key_env: Some("MY_KEY".into()), ..cfg.clone() };
        assert!(matches!(
            from_config_with(&custom, |_| None).err().unwrap(),
            ConfigError::MissingKey { var, .. } if var == "MY_KEY"
        ));
        // OpenAI's own API fails at once too, before any request; a local server does not.
        let openai = ModelConfig {
            provider: ProviderKind::OpenAi,
            model: "gpt-5".into(),
            ..ModelConfig::default()
        };
        assert_eq!(
            from_config_with(&openai, |_| None).err().unwrap().to_string(),
            "OPENAI_API_KEY is not set: the openai provider needs an API key (set OPENAI_API_KEY, or point [model] api_key_env at the variable that holds it)"
        );
        let explicit =
            ModelConfig { base_url: Some("https://api.openai.com/v1".into()), ..openai.clone() };
        assert!(matches!(
            from_config_with(&explicit, |_| None).err().unwrap(),
            ConfigError::MissingKey { .. }
        ));
        let local = ModelConfig { base_url: Some("http://127.0.0.1:8080/v1".into()), ..openai };
        assert!(from_config_with(&local, |_| None).is_ok(), "a local server needs no key");
        let err = from_config_with(&ModelConfig::default(), |_| Some("k".into())).err().unwrap();
        assert_eq!(err, ConfigError::NoModel);
        let bad_url = ModelConfig { base_url: Some("localhost:11434".into()), ..cfg.clone() };
        assert!(matches!(
            from_config_with(&bad_url, |_| Some("k".into())).err().unwrap(),
            ConfigError::BaseUrl { .. }
        ));
        let mut bad_header = cfg.clone();
        bad_header.headers.insert("bad header".into(), "v".into());
        assert!(matches!(
            from_config_with(&bad_header, |_| Some("k".into())).err().unwrap(),
            ConfigError::Header { name, .. } if name == "bad header"
        ));
    }

    #[test]
    fn providers_report_name_model_and_window() {
        let cfg = ModelConfig {
            provider: ProviderKind::OpenAi,
            model: "gpt-4o-mini".into(),
            ..ModelConfig::default()
        };
        let provider = from_config_with(&cfg, |_| Some("k".into())).unwrap();
        assert_eq!(provider.name(), "openai");
        assert_eq!(provider.model(), "gpt-4o-mini");
        assert_eq!(provider.context_window(), 128_000);
        let cfg = ModelConfig { model: "claude-opus-4-1".into(), ..ModelConfig::default() };
        let provider = from_config_with(&cfg, |_| Some("k".into())).unwrap();
        assert_eq!((provider.name(), provider.context_window()), ("anthropic", 200_000));
    }

    #[test]
    fn context_windows_follow_the_family() {
        assert_eq!(default_context_window("claude-3-5-haiku-latest"), 200_000);
        assert_eq!(default_context_window("gpt-4o-2024-08-06"), 128_000);
        assert_eq!(default_context_window("gpt-4"), 8_192);
        assert_eq!(default_context_window("gpt-4.1-mini"), 1_047_576);
        assert_eq!(default_context_window("openai/gpt-5"), 400_000);
        assert_eq!(default_context_window("llama3.1:8b"), 131_072);
        assert_eq!(default_context_window("some-new-model"), 128_000);
    }
}
