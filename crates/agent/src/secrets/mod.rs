//! secrets: collect a secret from the user out of band and keep it in the user's store for the
//! session's project. `request` asks through the session's [`SecretAskerHandle`] (a hidden
//! terminal prompt, the session API's `secret_requested` event, an MCP URL-mode elicitation),
//! waits like ask_user, stores the value with the [`SecretStore`] given at registration and
//! returns only the name and a masked hint. The value never reaches the result, the model, a log
//! or an event; `list` and `delete` never show one either.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use hands_core::ask::AskError;
use hands_core::secret::{
    SecretAskerHandle, SecretError, SecretRequest, SecretScope, SecretStore, SecretValue,
    StoredSecret,
};
use hands_core::{Annotations, Context, Family, Label, Policy, Tool, ToolError, ToolOutput};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ask::BACKSTOP_MARGIN_MS;
use crate::config::AskUserConfig;

/// Longest description the prompt shows.
pub const MAX_DESCRIPTION_CHARS: usize = 1_000;

/// What the call does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SecretAction {
    /// Ask the user for `name`.
    Request,
    /// Names and masked hints.
    List,
    /// Forget this project's `name`.
    Delete,
}

/// The secrets tool's arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SecretsArgs {
    /// What to do.
    pub action: SecretAction,
    /// Upper-case variable name, for `request` and `delete`.
    #[serde(default)]
    pub name: Option<String>,
    /// For `request`: what it is and where the user finds it.
    #[serde(default)]
    pub description: Option<String>,
}

/// One secret as the result shows it: never its value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SecretEntry {
    /// Its name (the environment variable).
    pub name: String,
    /// `project` (this project's own) or `global` (every project's).
    pub scope: String,
    /// A masked hint such as `sk_t…4f2a`.
    pub hint: String,
}

impl From<StoredSecret> for SecretEntry {
    fn from(stored: StoredSecret) -> Self {
        let scope = match stored.scope {
            SecretScope::Global => "global",
            SecretScope::Project(_) => "project",
        };
        Self { name: stored.name, scope: scope.to_owned(), hint: stored.hint }
    }
}

/// The structured result of every action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SecretsOutput {
    /// The action done.
    pub action: SecretAction,
    /// `request`: the secret stored; `list`: every secret this project can use; `delete`: none.
    pub secrets: Vec<SecretEntry>,
    /// `delete`: whether there was such a secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deleted: Option<bool>,
}

/// The secrets tool.
#[derive(Clone)]
pub struct Secrets {
    store: Arc<dyn SecretStore>,
    timeout: Duration,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Secrets").field("timeout", &self.timeout).finish_non_exhaustive()
    }
}

impl Secrets {
    /// Over `store`, waiting for the user as long as ask_user does (`config`).
    pub fn new(store: Arc<dyn SecretStore>, config: &AskUserConfig) -> Self {
        Self { store, timeout: Duration::from_millis(config.timeout_ms) }
    }
}

/// True for a secret name: `^[A-Z][A-Z0-9_]{1,63}$`.
pub fn valid_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    (2..=64).contains(&bytes.len())
        && bytes[0].is_ascii_uppercase()
        && bytes[1..].iter().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || *b == b'_')
}

/// A masked hint of `value` for people: a few characters at each end (at most a quarter of the
/// value each, and never more than 4), `…` between.
pub fn hint(value: &SecretValue) -> String {
    let chars: Vec<char> = value.expose().chars().collect();
    let shown = (chars.len() / 4).min(4);
    let head: String = chars[..shown].iter().collect();
    let tail: String = chars[chars.len() - shown..].iter().collect();
    format!("{head}…{tail}")
}

/// What the model reads when nobody can be asked here.
pub fn run_it_yourself(name: &str) -> String {
    format!(
        "Nobody can be asked for a secret in this session (no terminal, and no client that can \
         open a secure page). Tell the user to run `hands secrets set {name}` in a terminal in \
         this project (it asks for the value without showing it), then call secrets with action \
         \"list\" to check that {name} is there, and go on. Do not ask for the value in the chat."
    )
}

impl Tool for Secrets {
    type Args = SecretsArgs;

    fn name(&self) -> &'static str {
        "secrets"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("secrets.md"))
    }

    fn annotations(&self) -> Annotations {
        // It changes the user's store (not the project's files); a request asks again.
        Annotations { read_only: false, destructive: false, idempotent: false, open_world: false }
    }

    fn policy(&self) -> Policy {
        Policy::from_annotations(self.annotations())
            .needs_user()
            .label(Label::Key { key: "name" })
            .family(Family::Session)
            .on_host()
            // Like ask_user: its own wait first, the registry's limit as the backstop.
            .timeout_ms(
                u64::try_from(self.timeout.as_millis())
                    .unwrap_or(u64::MAX)
                    .saturating_add(BACKSTOP_MARGIN_MS),
            )
    }

    /// Asking twice must ask twice; a list changes with every request.
    fn cacheable(&self) -> bool {
        false
    }

    /// The user answers the request itself; storing what they typed needs no second question.
    fn needs_approval(&self) -> bool {
        false
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        Some(hands_core::output_schema_for::<SecretsOutput>())
    }

    async fn call(&self, ctx: Context, args: SecretsArgs) -> Result<ToolOutput, ToolError> {
        match args.action {
            SecretAction::List => Ok(self.list(&ctx)),
            SecretAction::Delete => self.delete(&ctx, &checked_name(args.name.as_deref())?),
            SecretAction::Request => {
                let name = checked_name(args.name.as_deref())?;
                let description = checked_description(args.description.as_deref())?;
                self.request(&ctx, name, description).await
            }
        }
    }
}

impl Secrets {
    fn list(&self, ctx: &Context) -> ToolOutput {
        let list: Vec<SecretEntry> =
            self.store.list(ctx.root()).into_iter().map(SecretEntry::from).collect();
        let text = if list.is_empty() {
            "No secrets are stored for this project. Ask for one with action \"request\".".into()
        } else {
            let lines: Vec<String> =
                list.iter().map(|s| format!("{} ({}, {})", s.name, s.scope, s.hint)).collect();
            format!(
                "{} secret{} available to this project's processes as environment variables:\n{}",
                list.len(),
                if list.len() == 1 { "" } else { "s" },
                lines.join("\n")
            )
        };
        output(text, SecretsOutput { action: SecretAction::List, secrets: list, deleted: None })
    }

    fn delete(&self, ctx: &Context, name: &str) -> Result<ToolOutput, ToolError> {
        let deleted = self.store.delete(ctx.root(), name).map_err(|err| store_error(&err))?;
        let text = if deleted {
            format!("{name} deleted from this project's secrets.")
        } else if self.store.list(ctx.root()).iter().any(|s| s.name == name) {
            format!(
                "{name} is a global secret, not this project's: the user deletes it with \
                 `hands secrets rm {name}`."
            )
        } else {
            format!("This project has no secret {name}; nothing was deleted.")
        };
        Ok(output(
            text,
            SecretsOutput { action: SecretAction::Delete, secrets: vec![], deleted: Some(deleted) },
        ))
    }

    async fn request(
        &self,
        ctx: &Context,
        name: String,
        description: String,
    ) -> Result<ToolOutput, ToolError> {
        let Some(SecretAskerHandle(asker)) =
            ctx.session().get_extension::<SecretAskerHandle>().as_deref().cloned()
        else {
            return Err(ToolError::model(run_it_yourself(&name)));
        };
        let request = SecretRequest {
            session: ctx.session().id().to_owned(),
            id: ctx.call_id().to_owned(),
            name,
            description,
        };
        let cancel = ctx.cancel_token();
        let value = tokio::select! {
            value = tokio::time::timeout(self.timeout, asker.request(&request, cancel)) => {
                value.unwrap_or(Err(AskError::TimedOut(self.timeout)))
            }
            // An asker that ignores its token still lets the call end.
            () = cancel.cancelled() => Err(AskError::Cancelled),
        };
        let value = value.map_err(|err| ask_error(&request.name, &err))?;
        let stored =
            self.store.put(ctx.root(), &request.name, &value).map_err(|err| store_error(&err))?;
        drop(value);
        let entry = SecretEntry::from(stored);
        let text = format!(
            "{name} stored ({hint}); available to this project's processes as ${name}",
            name = entry.name,
            hint = entry.hint
        );
        Ok(output(
            text,
            SecretsOutput { action: SecretAction::Request, secrets: vec![entry], deleted: None },
        ))
    }
}

fn output(text: String, structured: SecretsOutput) -> ToolOutput {
    let out = ToolOutput::text(text);
    match serde_json::to_value(structured) {
        Ok(value) => out.with_structured(value),
        Err(_) => out,
    }
}

/// The name, trimmed, or what is wrong with it.
fn checked_name(name: Option<&str>) -> Result<String, ToolError> {
    let Some(name) = name.map(str::trim).filter(|n| !n.is_empty()) else {
        return Err(ToolError::model(
            "`name` is missing: give the secret's name, an environment variable name in upper \
             case such as STRIPE_SECRET_KEY, and call secrets again.",
        ));
    };
    if !valid_name(name) {
        return Err(ToolError::model(format!(
            "{} Call secrets again with such a name.",
            SecretError::BadName(name.to_owned())
        )));
    }
    Ok(name.to_owned())
}

/// The description, trimmed, or what is wrong with it.
fn checked_description(description: Option<&str>) -> Result<String, ToolError> {
    let description = description.map(str::trim).unwrap_or_default();
    if description.is_empty() {
        return Err(ToolError::model(
            "`description` is missing: say what the value is and where the user finds it (e.g. \
             \"Stripe secret key: Dashboard → Developers → API keys\"), then call secrets again.",
        ));
    }
    let count = description.chars().count();
    if count > MAX_DESCRIPTION_CHARS {
        return Err(ToolError::model(format!(
            "`description` has {count} characters; keep it to {MAX_DESCRIPTION_CHARS} (what the \
             value is and where to find it), then call secrets again."
        )));
    }
    Ok(description.to_owned())
}

/// What the model reads when no value came.
fn ask_error(name: &str, err: &AskError) -> ToolError {
    ToolError::model(match err {
        AskError::NoOneToAsk => run_it_yourself(name),
        AskError::Cancelled => format!("The request for {name} was aborted; nothing was stored."),
        AskError::TimedOut(limit) => format!(
            "The user did not give {name} within {} s; nothing was stored. Go on with what does \
             not need it, or ask again later.",
            limit.as_secs()
        ),
        AskError::Declined(_) => format!(
            "The user declined to give {name}; nothing was stored. Go on without it and do not \
             ask for it in the chat; the user can store it later with `hands secrets set {name}`."
        ),
        AskError::Unavailable(why) => {
            format!("The user could not be asked for {name} ({why}). {}", run_it_yourself(name))
        }
    })
}

/// What the model reads when the store refused.
fn store_error(err: &SecretError) -> ToolError {
    match err {
        SecretError::TooShort => ToolError::model(format!(
            "Nothing was stored: {err}. Ask the user to check that they copied the whole value, \
             then call secrets again."
        )),
        SecretError::BadName(_) => {
            ToolError::model(format!("{err}. Call secrets again with such a name."))
        }
        SecretError::Io(_) => ToolError::model(format!(
            "{err}. Nothing was stored; tell the user, who can store it with `hands secrets set`."
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for good in ["AB", "STRIPE_SECRET_KEY", "A1", &format!("A{}", "B".repeat(63))] {
            assert!(valid_name(good), "{good}");
        }
        for bad in ["A", "a_KEY", "1ABC", "_ABC", "AB-C", "ÄB", &format!("A{}", "B".repeat(64))] {
            assert!(!valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn hints_show_little() {
        assert_eq!(hint(&SecretValue::new("sk_test_0123456789ab4f2a")), "sk_t…4f2a");
        assert_eq!(hint(&SecretValue::new("abcdefgh")), "ab…gh");
        assert_eq!(hint(&SecretValue::new("abc")), "…");
    }

    #[test]
    fn the_registry_lets_secrets_wait_as_long_as_ask_user() {
        struct Nothing;
        impl SecretStore for Nothing {
            fn put(
                &self,
                _: &std::path::Path,
                _: &str,
                _: &SecretValue,
            ) -> Result<StoredSecret, SecretError> {
                Err(SecretError::Io("none".into()))
            }
            fn get(&self, _: &std::path::Path, _: &str) -> Option<SecretValue> {
                None
            }
            fn list(&self, _: &std::path::Path) -> Vec<StoredSecret> {
                vec![]
            }
            fn delete(&self, _: &std::path::Path, _: &str) -> Result<bool, SecretError> {
                Ok(false)
            }
        }
        let tool = Secrets::new(Arc::new(Nothing), &AskUserConfig { timeout_ms: 60_000 });
        let policy = tool.policy();
        assert_eq!(policy.timeout_ms, Some(70_000));
        assert!(policy.needs_user && !policy.subagent);
    }
}
