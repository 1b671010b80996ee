//! enable_stripe: ask the user for a Stripe secret key, verify it, store it.
//!
//! Flow: ask `STRIPE_SECRET_KEY` through the session's secret asker (or take the stored value when
//! no one can be asked), check its shape and mode, `GET {stripe.base_url}/v1/account` through the
//! egress guard with the key as a secret header, then store it for the project and add the names
//! to `.env.example`. Any failure before the store leaves nothing stored.

use std::borrow::Cow;
use std::sync::Arc;

use hands_core::secret::{SecretStore, SecretValue};
use hands_core::{Annotations, Context, Family, Label, Policy, Tool, ToolError, ToolOutput};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::config::StripeConfig;
use crate::{ask, files};

/// The variable the secret key is stored as.
pub const SECRET_NAME: &str = "STRIPE_SECRET_KEY";
/// The publishable key's variable (public; the user sets it).
pub const PUBLISHABLE_NAME: &str = "STRIPE_PUBLISHABLE_KEY";

/// Where the user finds the key, shown with the request.
const WHERE: &str = "your Stripe secret key (sk_test_… or sk_live_…, or a restricted rk_… key): \
                     Stripe dashboard → Developers → API keys";

/// A Stripe key's mode.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StripeMode {
    /// Test mode: no real money moves.
    #[default]
    Test,
    /// Live mode: real payments.
    Live,
}

impl StripeMode {
    fn as_str(self) -> &'static str {
        match self {
            Self::Test => "test",
            Self::Live => "live",
        }
    }
}

/// Arguments of enable_stripe.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnableStripeArgs {
    /// `test` (default) or `live`: the mode of the key the user must give.
    #[serde(default)]
    pub mode: Option<StripeMode>,
}

/// The structured result of enable_stripe: everything its text says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct StripeResult {
    /// The Stripe account id (`acct_…`).
    pub account_id: String,
    /// The account's display name, when Stripe gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_name: Option<String>,
    /// `test` or `live`.
    pub mode: StripeMode,
    /// Stripe's own word on the key: true for a live key.
    pub livemode: bool,
    /// The variable the key is stored as and given to the project's processes.
    pub stored_as: String,
    /// A masked hint of the key (`sk_t…4f2a`), never the key.
    pub hint: String,
    /// The names added to `.env.example` (empty when they were there).
    pub env_example_added: Vec<String>,
}

/// The enable_stripe tool.
#[derive(Clone)]
pub struct EnableStripe {
    config: StripeConfig,
    guard: hands_net::Guard,
    store: Arc<dyn SecretStore>,
}

impl EnableStripe {
    /// With the Stripe settings, the egress guard and the user's secret store.
    pub fn new(config: StripeConfig, guard: hands_net::Guard, store: Arc<dyn SecretStore>) -> Self {
        Self { config, guard, store }
    }
}

impl Tool for EnableStripe {
    type Args = EnableStripeArgs;

    fn name(&self) -> &'static str {
        "enable_stripe"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("enable_stripe.md"))
    }

    fn annotations(&self) -> Annotations {
        Annotations { read_only: false, destructive: false, idempotent: true, open_world: true }
    }

    fn policy(&self) -> Policy {
        Policy::from_annotations(self.annotations())
            .needs_user()
            .label(Label::Key { key: "mode" })
            .family(Family::Project)
            // The user may take a while to find the key.
            .timeout_ms(ask::ASK_TIMEOUT_MS)
    }

    fn cacheable(&self) -> bool {
        false
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        Some(hands_core::output_schema_for::<StripeResult>())
    }

    async fn call(&self, ctx: Context, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let mode = args.mode.unwrap_or_default();
        let key = ask::secret(&ctx, &*self.store, "enable_stripe", SECRET_NAME, WHERE).await?;
        check_key(key.expose(), mode)?;
        let account = self.verify(&ctx, &key, mode).await?;
        let stored = self.store.put(ctx.root(), SECRET_NAME, &key).map_err(|err| {
            ToolError::model(format!("the key was verified but not stored: {err}"))
        })?;
        let added = add_env_names(&ctx)?;
        let result = StripeResult {
            account_id: account.id,
            account_name: account.name,
            mode,
            livemode: account.livemode,
            stored_as: SECRET_NAME.to_owned(),
            hint: stored.hint,
            env_example_added: added,
        };
        Ok(ToolOutput::text(text(&result)).with_structured(
            serde_json::to_value(&result)
                .map_err(|err| ToolError::Fatal(format!("a result did not serialize: {err}")))?,
        ))
    }
}

/// What Stripe says of the account.
struct Account {
    id: String,
    name: Option<String>,
    livemode: bool,
}

impl EnableStripe {
    async fn verify(
        &self,
        ctx: &Context,
        key: &SecretValue,
        mode: StripeMode,
    ) -> Result<Account, ToolError> {
        let url = format!("{}/v1/account", self.config.base_url.trim_end_matches('/'));
        let mut request = hands_net::Request::get(url);
        request.secret_headers.push((
            "Authorization".to_owned(),
            SecretValue::new(format!("Bearer {}", key.expose())),
        ));
        request.max_bytes = 1 << 20;
        let fetched = self.guard.send(request, ctx.cancel_token()).await.map_err(|err| {
            ToolError::model(format!(
                "Could not reach Stripe to verify the key: {err}. Nothing was stored; call \
                 enable_stripe again when the network is back."
            ))
        })?;
        match fetched.status {
            200 => {}
            401 => {
                return Err(ToolError::model(
                    "Stripe refused the key (401 Unauthorized): it is wrong, revoked or was not \
                     copied whole. Nothing was stored. Ask the user to copy the secret key again \
                     from the Stripe dashboard → Developers → API keys, then call enable_stripe \
                     again.",
                ));
            }
            403 => {
                return Err(ToolError::model(
                    "Stripe accepted the key but it may not read the account (403): a restricted \
                     key needs at least read access to Account. Nothing was stored. Ask the user \
                     for a secret key or a restricted key with that permission, then call \
                     enable_stripe again.",
                ));
            }
            status => {
                return Err(ToolError::model(format!(
                    "Stripe answered {status} to GET /v1/account, so the key could not be \
                     verified. Nothing was stored; try enable_stripe again later."
                )));
            }
        }
        let body: serde_json::Value = serde_json::from_slice(&fetched.body).map_err(|_| {
            ToolError::model(
                "Stripe's answer to GET /v1/account was not JSON, so the key could not be \
                 verified (is [stripe] base_url right?). Nothing was stored.",
            )
        })?;
        let Some(id) = body.get("id").and_then(serde_json::Value::as_str) else {
            return Err(ToolError::model(
                "Stripe's answer to GET /v1/account has no account id, so the key could not be \
                 verified (is [stripe] base_url right?). Nothing was stored.",
            ));
        };
        // Stripe's account object has no livemode; the key's prefix says the mode, and a
        // `livemode` in the answer (a proxy's, a newer API's) must agree with it.
        let livemode = mode == StripeMode::Live;
        if let Some(said) = body.get("livemode").and_then(serde_json::Value::as_bool)
            && said != livemode
        {
            return Err(ToolError::model(format!(
                "Stripe says this key is {} but it looks like a {} key. Nothing was stored; ask \
                 the user for a {} key.",
                if said { "live" } else { "test" },
                mode.as_str(),
                mode.as_str()
            )));
        }
        let name =
            ["settings.dashboard.display_name", "business_profile.name"].iter().find_map(|path| {
                path.split('.')
                    .try_fold(&body, |v, k| v.get(k))
                    .and_then(serde_json::Value::as_str)
                    .filter(|s| !s.trim().is_empty())
                    .map(str::to_owned)
            });
        Ok(Account { id: id.to_owned(), name, livemode })
    }
}

/// Refuse a value that is not a Stripe secret or restricted key of `mode`:
/// `^(sk|rk)_(test|live)_[0-9A-Za-z]{10,}$`.
pub fn check_key(key: &str, mode: StripeMode) -> Result<(), ToolError> {
    let shape = key
        .strip_prefix("sk_")
        .or_else(|| key.strip_prefix("rk_"))
        .and_then(|rest| {
            rest.strip_prefix("test_")
                .map(|r| (StripeMode::Test, r))
                .or_else(|| rest.strip_prefix("live_").map(|r| (StripeMode::Live, r)))
        })
        .filter(|(_, tail)| tail.len() >= 10 && tail.bytes().all(|b| b.is_ascii_alphanumeric()));
    let Some((found, _)) = shape else {
        let hint = if key.starts_with("pk_") {
            " It looks like a publishable key (pk_…), which is public; the secret key is the one \
             beside it."
        } else {
            ""
        };
        return Err(ToolError::model(format!(
            "The value given is not a Stripe secret key (sk_test_…, sk_live_…, rk_test_… or \
             rk_live_…).{hint} Nothing was stored. Ask the user to copy the secret key from the \
             Stripe dashboard → Developers → API keys, then call enable_stripe again."
        )));
    };
    if found != mode {
        return Err(ToolError::model(format!(
            "The user gave a {} key but `mode` is {}. Nothing was stored. Call enable_stripe again \
             with mode `{}` if that is what the user wants, or ask them for a {} key.",
            found.as_str(),
            mode.as_str(),
            found.as_str(),
            mode.as_str()
        )));
    }
    Ok(())
}

/// Add the two names to `.env.example` when missing.
fn add_env_names(ctx: &Context) -> Result<Vec<String>, ToolError> {
    let ws = hands_fs::Workspace::of(ctx)?;
    let dir = ws.dir();
    let name = ".env.example";
    let existing = files::read(dir, name).map_err(|err| files::error(name, &err))?;
    let Some((text, added)) = files::env_example_with(&existing, &[SECRET_NAME, PUBLISHABLE_NAME])
    else {
        return Ok(Vec::new());
    };
    files::write(dir, name, text.as_bytes()).map_err(|err| files::error(name, &err))?;
    Ok(added)
}

fn text(result: &StripeResult) -> String {
    let name = result.account_name.as_deref().map(|n| format!(" ({n})")).unwrap_or_default();
    let env = if result.env_example_added.is_empty() {
        String::new()
    } else {
        format!(" Added {} to .env.example.", result.env_example_added.join(", "))
    };
    format!(
        "Stripe connected in {} mode: account {}{name}. The key is stored as {} ({}) and \
         available to this project's processes as ${}; read it from the environment, never write \
         it into a file.{env} The publishable key ({}) is public: ask the user for it and put it \
         in the app's configuration.",
        result.mode.as_str(),
        result.account_id,
        result.stored_as,
        result.hint,
        result.stored_as,
        PUBLISHABLE_NAME
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_shapes_and_modes() {
        assert!(check_key("sk_test_0123456789abcdef", StripeMode::Test).is_ok());
        assert!(check_key("rk_live_0123456789", StripeMode::Live).is_ok());
        for bad in [
            "",
            "sk_test_short",
            "pk_test_0123456789abcdef",
            "sk_prod_0123456789abc",
            "sk_test_0123456789-abc",
            "sk_test_0123456789 ",
            " sk_test_0123456789",
        ] {
            let err = check_key(bad, StripeMode::Test).unwrap_err().to_string();
            assert!(err.contains("not a Stripe secret key"), "{bad}: {err}");
        }
        let err = check_key("pk_live_0123456789abcdef", StripeMode::Live).unwrap_err().to_string();
        assert!(err.contains("publishable key"), "{err}");
        let err = check_key("sk_live_0123456789abcdef", StripeMode::Test).unwrap_err().to_string();
        assert!(err.contains("a live key but `mode` is test"), "{err}");
        let err = check_key("sk_test_0123456789abcdef", StripeMode::Live).unwrap_err().to_string();
        assert!(err.contains("a test key but `mode` is live"), "{err}");
    }
}
