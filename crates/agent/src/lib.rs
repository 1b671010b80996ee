//! The agent side of hands: the session tools (plan mode first), and later the model providers
//! and the loop.

mod ask;
mod checkpointing;
mod config;
pub mod elide;
pub mod event;
pub mod host;
pub mod model;
mod plan;
pub mod prompt;
pub mod provider;
pub mod provider_sampling;
mod secrets;
mod skill;
pub mod subagent;
mod telemetry;
mod todo;
pub mod turn;

pub use ask::{
    AskUser, AskUserArgs, DEFAULT_TIMEOUT_MS as ASK_USER_DEFAULT_TIMEOUT_MS, MAX_OPTIONS,
};
pub use config::{AgentConfig, AskUserConfig};
pub use plan::{EnterPlanMode, ExitPlanMode};
pub use secrets::{
    MAX_DESCRIPTION_CHARS, SecretAction, SecretEntry, Secrets, SecretsArgs, SecretsOutput,
    hint as secret_hint, run_it_yourself as secrets_set_message, valid_name as valid_secret_name,
};
pub use skill::{UseSkill, UseSkillArgs, user_skills_dir};
pub use todo::{MAX_TODOS, Todo, TodoStatus, TodoWrite, TodoWriteArgs, restore_todos, todos};

use hands_core::RegistryBuilder;

/// Add the agent's session tools (enter_plan_mode, exit_plan_mode, todo_write, ask_user,
/// use_skill) to `builder`, with the default settings. The project root is not known here, so
/// use_skill's description lists the user's skills only; [`register_with`] lists the project's too.
pub fn register(builder: RegistryBuilder) -> RegistryBuilder {
    let skills = UseSkill::discover(None, user_skills_dir().as_deref());
    register_with(builder, &AgentConfig::default(), skills)
}

/// [`register`] with the agent's settings and a use_skill built for the project, e.g.
/// `UseSkill::discover(Some(root), user_skills_dir().as_deref())`.
pub fn register_with(
    builder: RegistryBuilder,
    config: &AgentConfig,
    skills: UseSkill,
) -> RegistryBuilder {
    // use_skill where there is a skill to load: the user's (found now) or the project's.
    let user_skills = skills.has_skills();
    builder
        .tool(EnterPlanMode)
        .tool(ExitPlanMode)
        .tool(TodoWrite::default())
        .tool(AskUser::new(&config.ask_user))
        .tool_if(move |c| user_skills || c.project(|p| p.skills), skills)
}

/// Add the secrets tool over the user's `store`, waiting for the user as long as ask_user does.
/// Only where a store exists (the binary opens it); hosts that cannot ask give it no
/// [`SecretAskerHandle`](hands_core::secret::SecretAskerHandle), and the tool then tells the user
/// to run `hands secrets set NAME`.
pub fn register_secrets(
    builder: RegistryBuilder,
    store: std::sync::Arc<dyn hands_core::secret::SecretStore>,
    config: &AgentConfig,
) -> RegistryBuilder {
    builder.tool(Secrets::new(store, &config.ask_user))
}
