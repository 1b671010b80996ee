//! Plan mode: enter_plan_mode switches the session to the read-only tool set, exit_plan_mode
//! presents the plan and switches back. The registry filters the tools by the session's mode;
//! front ends watch `Session::mode_changes` to announce the new list. Under `approval = "ask"`,
//! exit_plan_mode waits for the user's yes (the approval middleware), so the user approves the plan.

use std::borrow::Cow;

use hands_core::{Annotations, Context, Mode, Tool, ToolError, ToolOutput};
use hands_core::{Family, Label, Modes, Policy};
use schemars::JsonSchema;
use serde::Deserialize;

/// `enter_plan_mode`: no arguments.
#[derive(Debug, Clone, Copy, Default)]
pub struct EnterPlanMode;

/// enter_plan_mode takes no arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnterArgs {}

impl Tool for EnterPlanMode {
    type Args = EnterArgs;

    fn name(&self) -> &'static str {
        "enter_plan_mode"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("enter_plan_mode.md"))
    }

    fn annotations(&self) -> Annotations {
        // It changes the conversation, not the project.
        Annotations::READ_ONLY
    }

    fn policy(&self) -> Policy {
        // Plan mode is entered from build mode only.
        Policy::from_annotations(self.annotations())
            .modes(Modes::BUILD)
            .family(Family::Session)
            .on_host()
    }

    fn needs_approval(&self) -> bool {
        false
    }

    fn cacheable(&self) -> bool {
        false
    }

    async fn call(&self, ctx: Context, _args: EnterArgs) -> Result<ToolOutput, ToolError> {
        let text = match ctx.session().set_mode(Mode::Plan) {
            Mode::Plan => "Already in plan mode. Research with the read-only tools, then call \
                           exit_plan_mode with your plan."
                .to_owned(),
            Mode::Build => "Plan mode is on: only read-only tools are available now. Research \
                            the task, then call exit_plan_mode with your plan."
                .to_owned(),
        };
        Ok(ToolOutput::text(text))
    }
}

/// `exit_plan_mode`: the plan, for the user to approve.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExitPlanMode;

/// exit_plan_mode's arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExitArgs {
    /// The plan in Markdown: steps, files to change, how to check the result.
    pub plan: String,
}

impl Tool for ExitPlanMode {
    type Args = ExitArgs;

    fn name(&self) -> &'static str {
        "exit_plan_mode"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("exit_plan_mode.md"))
    }

    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY
    }

    fn policy(&self) -> Policy {
        // Plan mode only; a sub-agent cannot leave plan mode.
        Policy::from_annotations(self.annotations())
            .modes(Modes::PLAN)
            .subagent(false)
            .label(Label::Plan { key: "plan" })
            .family(Family::Session)
            .on_host()
            .asks_each_time()
    }

    /// The user approves the plan before the build tools come back, whatever `approval` says
    /// (under `auto` too, wherever somebody can be asked: `Policy::asks_each_time`).
    fn needs_approval(&self) -> bool {
        true
    }

    fn cacheable(&self) -> bool {
        false
    }

    async fn call(&self, ctx: Context, args: ExitArgs) -> Result<ToolOutput, ToolError> {
        if args.plan.trim().is_empty() {
            return Err(ToolError::model(
                "`plan` is empty: write the steps you will take, then call exit_plan_mode again.",
            ));
        }
        ctx.session().set_mode(Mode::Build);
        Ok(ToolOutput::text(
            "Plan accepted; build mode is on and every tool is available again. Carry out the plan.",
        ))
    }
}

#[cfg(test)]
mod tests {
    use hands_core::{CoreConfig, Registry, Session, ToolCall};
    use serde_json::json;

    use super::*;

    fn registry() -> Registry {
        crate::register(Registry::builder(CoreConfig::default())).build()
    }

    #[tokio::test]
    async fn enter_then_exit_switches_the_mode_and_the_tool_list() {
        let registry = registry();
        let session = Session::new("s", "/tmp");
        let names = |mode| -> Vec<String> {
            registry.list(mode).into_iter().map(|s| s.name.clone()).collect()
        };
        // Plan mode offers the questions and the skills, not the todo list (docs/tools.md).
        assert_eq!(
            names(Mode::Build),
            vec!["enter_plan_mode", "todo_write", "ask_user", "use_skill"]
        );
        assert_eq!(names(Mode::Plan), vec!["exit_plan_mode", "ask_user", "use_skill"]);

        let out = registry
            .dispatch(&session, ToolCall::new("1", "enter_plan_mode", json!({})))
            .await
            .unwrap();
        assert!(!out.is_error, "{out:?}");
        assert_eq!(session.mode(), Mode::Plan);

        let out = registry
            .dispatch(&session, ToolCall::new("2", "exit_plan_mode", json!({"plan": " "})))
            .await
            .unwrap();
        assert!(out.is_error);
        assert_eq!(session.mode(), Mode::Plan);

        let out = registry
            .dispatch(&session, ToolCall::new("3", "exit_plan_mode", json!({"plan": "1. do it"})))
            .await
            .unwrap();
        assert!(!out.is_error, "{out:?}");
        assert_eq!(session.mode(), Mode::Build);
    }

    #[tokio::test]
    async fn exit_plan_mode_asks_under_ask_and_is_refused_without_an_approver() {
        let config =
            CoreConfig { approval: hands_core::config::Approval::Ask, ..CoreConfig::default() };
        let registry = crate::register(Registry::builder(config)).build();
        let session = Session::new("s", "/tmp");
        session.set_mode(Mode::Plan);
        let out = registry
            .dispatch(&session, ToolCall::new("1", "exit_plan_mode", json!({"plan": "1. x"})))
            .await
            .unwrap();
        assert!(out.is_error && out.joined_text().contains("approval"), "{out:?}");
        assert_eq!(session.mode(), Mode::Plan);
    }

    #[test]
    fn descriptions_examples_parse_as_arguments() {
        for (md, parse) in [
            (
                include_str!("enter_plan_mode.md"),
                (|v| serde_json::from_value::<EnterArgs>(v).is_ok())
                    as fn(serde_json::Value) -> bool,
            ),
            (include_str!("exit_plan_mode.md"), |v| serde_json::from_value::<ExitArgs>(v).is_ok()),
        ] {
            let example = md.split("```json\n").nth(1).and_then(|s| s.split("```").next()).unwrap();
            assert!(parse(serde_json::from_str(example).unwrap()), "{example}");
        }
    }
}
