//! One request to run a tool, as a front end received it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool call: who asked (id, turn), for what (name), with which raw JSON arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's id, unique within its session (used for spilled output file names).
    pub id: String,
    /// The tool's name or alias, as the model wrote it.
    pub name: String,
    /// The raw arguments; parsed once into the tool's typed `Args`.
    pub args: Value,
    /// The turn this call belongs to, if the front end has turns (the dedup cache is per turn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<String>,
}

impl ToolCall {
    /// A call outside any turn.
    pub fn new(id: impl Into<String>, name: impl Into<String>, args: Value) -> Self {
        Self { id: id.into(), name: name.into(), args, turn: None }
    }

    /// The same call, inside `turn`.
    #[must_use]
    pub fn in_turn(mut self, turn: impl Into<String>) -> Self {
        self.turn = Some(turn.into());
        self
    }
}
