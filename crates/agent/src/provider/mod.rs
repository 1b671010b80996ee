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

use std::sync::Arc;

pub use anthropic::Anthropic;
use config::secret_header;
pub use config::{ConfigError, ModelConfig, ProviderKind, ProviderOptions, default_context_window};
pub use openai::OpenAi;
pub use retry::RetryPolicy;

use crate::model::Provider;

/// The provider `[model]` describes, its key read from the environment.
pub fn from_config(cfg: &ModelConfig) -> Result<Arc<dyn Provider>, ConfigError> {
    from_config_with(cfg, |name| std::env::var(name).ok())
}

/// [`from_config`] with the environment given as a function (for tests and embedders).
pub fn from_config_with(
    cfg: &ModelConfig,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Arc<dyn Provider>, ConfigError> {
    let options = cfg.options(env)?;
    Ok(match cfg.provider {
        ProviderKind::Anthropic => Arc::new(Anthropic::new(options)?),
        ProviderKind::OpenAi => Arc::new(OpenAi::new(options)?),
    })
}
