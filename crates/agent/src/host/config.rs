//! `[agent]`: the loop's limits, as the host applies them.

use serde::{Deserialize, Serialize};

use crate::turn::Limits;

/// `[agent]`: the loop's limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentConfig {
    /// Model calls per turn before the turn ends with `max_steps`.
    pub max_steps: u32,
    /// Output tokens per model response.
    pub max_tokens: u32,
    /// Steps of a sub-agent.
    pub subagent_max_steps: u32,
    /// Fraction of the context window at which the oldest tool results are elided.
    pub elide_at: f64,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self { max_steps: 50, max_tokens: 8192, subagent_max_steps: 20, elide_at: 0.8 }
    }
}

impl AgentConfig {
    /// The limits of a turn.
    pub fn limits(&self) -> Limits {
        Limits { max_steps: self.max_steps, max_tokens: self.max_tokens, elide_at: self.elide_at }
    }

    /// The limits of a sub-agent.
    pub fn subagent_limits(&self) -> Limits {
        Limits { max_steps: self.subagent_max_steps, ..self.limits() }
    }
}
