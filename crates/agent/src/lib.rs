//! The agent side of hands: the session tools (plan mode first), and later the model providers
//! and the loop.

pub mod event;
pub mod host;
pub mod model;
mod plan;

pub use plan::{EnterPlanMode, ExitPlanMode};

use hands_core::RegistryBuilder;

/// Add the agent's session tools (enter_plan_mode, exit_plan_mode) to `builder`.
pub fn register(builder: RegistryBuilder) -> RegistryBuilder {
    builder.tool(EnterPlanMode).tool(ExitPlanMode)
}
