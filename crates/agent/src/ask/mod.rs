//! ask_user: put a question to the user and wait for the answer. The session's
//! [`AskerHandle`] reaches the user (a terminal prompt, MCP elicitation, the HTTP host's
//! `POST …/answer`); the wait ends with the answer, the time limit, or the call's cancellation.
//! Every way of not getting an answer is an error result that tells the model to go on with its
//! own judgement.

use std::borrow::Cow;
use std::time::Duration;

use hands_core::ask::{AskError, AskerHandle, Question};
use hands_core::{Annotations, Context, Tool, ToolError, ToolOutput};
use hands_core::{Family, Label, Policy};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::config::AskUserConfig;
pub use crate::config::DEFAULT_TIMEOUT_MS;

/// Choices one question may offer.
pub const MAX_OPTIONS: usize = 20;

/// ask_user's arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskUserArgs {
    /// Complete enough to answer on its own.
    pub question: String,
    /// Two or more short choices; leave out for a free answer.
    #[serde(default)]
    pub options: Option<Vec<String>>,
}

/// How much longer than its own wait the registry's time limit for ask_user is.
pub const BACKSTOP_MARGIN_MS: u64 = 10_000;

/// The ask_user tool.
#[derive(Debug, Clone)]
pub struct AskUser {
    timeout: Duration,
}

impl Default for AskUser {
    fn default() -> Self {
        Self::new(&AskUserConfig::default())
    }
}

impl AskUser {
    /// With the time limit from `config`.
    pub fn new(config: &AskUserConfig) -> Self {
        Self { timeout: Duration::from_millis(config.timeout_ms) }
    }
}

impl Tool for AskUser {
    type Args = AskUserArgs;

    fn name(&self) -> &'static str {
        "ask_user"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("ask_user.md"))
    }

    fn annotations(&self) -> Annotations {
        // Changes nothing (plan mode offers it), but the same question may get another answer.
        Annotations { idempotent: false, ..Annotations::READ_ONLY }
    }

    fn policy(&self) -> Policy {
        Policy::from_annotations(self.annotations())
            .needs_user()
            .label(Label::Key { key: "question" })
            .family(Family::Session)
            .on_host()
            .guideline(
                "When something is unclear and you cannot find out yourself, ask the user \
                 (ask_user) instead of guessing.",
            )
            // ask_user waits up to its own `ask_user.timeout_ms` (10 min) for the user; the
            // registry's limit is the backstop, with a margin so that ask_user's clearer message
            // comes first.
            .timeout_ms(
                u64::try_from(self.timeout.as_millis())
                    .unwrap_or(u64::MAX)
                    .saturating_add(BACKSTOP_MARGIN_MS),
            )
    }

    /// Asking twice must ask twice.
    fn cacheable(&self) -> bool {
        false
    }

    async fn call(&self, ctx: Context, args: AskUserArgs) -> Result<ToolOutput, ToolError> {
        let question = checked(args)?;
        let Some(AskerHandle(asker)) =
            ctx.session().get_extension::<AskerHandle>().as_deref().cloned()
        else {
            return Err(answer_error(&AskError::NoOneToAsk));
        };
        let question = Question {
            session: ctx.session().id().to_owned(),
            id: ctx.call_id().to_owned(),
            question: question.0,
            options: question.1,
        };
        let cancel = ctx.cancel_token();
        let answer = tokio::select! {
            answer = tokio::time::timeout(self.timeout, asker.ask(&question, cancel)) => {
                answer.unwrap_or(Err(AskError::TimedOut(self.timeout)))
            }
            // An asker that ignores its token still lets the call end.
            () = cancel.cancelled() => Err(AskError::Cancelled),
        };
        let answer = answer.map_err(|err| answer_error(&err))?;
        let answer = answer.trim();
        Ok(ToolOutput::text(if answer.is_empty() {
            "The user answered with an empty reply. Go on with your own judgement and say what you \
             assumed."
                .to_owned()
        } else if question.options.iter().any(|o| o == answer) {
            format!("The user chose: {answer}")
        } else {
            format!("The user answered: {answer}")
        }))
    }
}

/// The question and its options, trimmed, or what is wrong with them.
fn checked(args: AskUserArgs) -> Result<(String, Vec<String>), ToolError> {
    let question = args.question.trim().to_owned();
    if question.is_empty() {
        return Err(ToolError::model(
            "`question` is empty: write the question for the user, then call ask_user again.",
        ));
    }
    let options: Vec<String> =
        args.options.unwrap_or_default().iter().map(|o| o.trim().to_owned()).collect();
    let fix = "Fix `options` (two or more distinct, non-empty choices, or leave it out for a \
               free-form answer) and call ask_user again.";
    if options.len() == 1 {
        return Err(ToolError::model(format!(
            "`options` has a single choice, which is no choice. {fix}"
        )));
    }
    if options.len() > MAX_OPTIONS {
        return Err(ToolError::model(format!(
            "`options` has {} choices; at most {MAX_OPTIONS} fit a question. {fix}",
            options.len()
        )));
    }
    if let Some(n) = options.iter().position(String::is_empty) {
        return Err(ToolError::model(format!("option {} is empty. {fix}", n + 1)));
    }
    if let Some((n, dup)) = options.iter().enumerate().find(|(i, o)| options[..*i].contains(o)) {
        return Err(ToolError::model(format!("option {} repeats `{dup}`. {fix}", n + 1)));
    }
    Ok((question, options))
}

/// What the model reads when no answer came.
fn answer_error(err: &AskError) -> ToolError {
    let go_on = "Go on with your own judgement and say what you assumed.";
    ToolError::model(match err {
        AskError::NoOneToAsk => "There is nobody to ask in this session (no terminal, no client \
                                 that can show a question). Answer the question from your own \
                                 judgement and say what you assumed."
            .to_owned(),
        AskError::Cancelled => "ask_user was aborted before the user answered.".to_owned(),
        AskError::TimedOut(limit) => format!(
            "The user did not answer within {}. {go_on} Ask again later if it still matters.",
            human(*limit)
        ),
        AskError::Declined(Some(words)) if !words.trim().is_empty() => {
            format!("The user declined to answer and said: {}. {go_on}", words.trim())
        }
        AskError::Declined(_) => format!("The user declined to answer. {go_on}"),
        AskError::Unavailable(why) => format!("The user could not be asked ({why}). {go_on}"),
    })
}

fn human(d: Duration) -> String {
    match d.as_millis() {
        ms if ms > 0 && ms % 60_000 == 0 => format!("{} min", ms / 60_000),
        ms if ms % 1000 == 0 => format!("{} s", ms / 1000),
        ms => format!("{ms} ms"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_lets_ask_user_wait_as_long_as_it_is_set_to() {
        assert_eq!(AskUser::default().policy().timeout_ms, Some(610_000));
        let long = AskUser::new(&AskUserConfig { timeout_ms: 3_600_000 });
        assert_eq!(long.policy().timeout_ms, Some(3_610_000));
    }

    #[test]
    fn human_durations() {
        assert_eq!(human(Duration::from_secs(600)), "10 min");
        assert_eq!(human(Duration::from_secs(90)), "90 s");
        assert_eq!(human(Duration::from_millis(250)), "250 ms");
        assert_eq!(human(Duration::from_millis(1500)), "1500 ms");
    }

    #[test]
    fn options_are_checked() {
        let args = |options: &[&str]| AskUserArgs {
            question: " Which? ".into(),
            options: Some(options.iter().map(|s| (*s).to_owned()).collect()),
        };
        assert_eq!(checked(args(&[])).unwrap(), ("Which?".to_owned(), vec![]));
        assert_eq!(checked(args(&["a ", " b"])).unwrap().1, vec!["a", "b"]);
        assert!(checked(args(&["a"])).unwrap_err().to_string().contains("single choice"));
        assert!(checked(args(&["a", " "])).unwrap_err().to_string().contains("option 2 is empty"));
        assert!(
            checked(args(&["a", "b", "a"]))
                .unwrap_err()
                .to_string()
                .contains("option 3 repeats `a`")
        );
        let many: Vec<String> = (0..=MAX_OPTIONS).map(|i| i.to_string()).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        assert!(checked(args(&many)).unwrap_err().to_string().contains("at most 20"));
    }
}
