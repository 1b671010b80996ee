//! Asking the user through the session's hosts: a secret through its [`SecretAskerHandle`] (out of
//! band, never the conversation), a public value through ask_user's [`AskerHandle`]. Every way of
//! not getting an answer becomes a message that tells the model what the user can do instead.

use hands_core::ask::{AskError, AskerHandle, Question};
use hands_core::secret::{SecretAskerHandle, SecretRequest, SecretStore, SecretValue};
use hands_core::{Context, ToolError};

/// Ask the user for the secret `name`; when this host cannot ask, use the value already stored
/// for the project (`hands secrets set NAME`), else tell the user how to store one.
pub(crate) async fn secret(
    ctx: &Context,
    store: &dyn SecretStore,
    tool: &str,
    name: &str,
    description: &str,
) -> Result<SecretValue, ToolError> {
    asked(ctx, tool, name, description, || {
        store.get(ctx.root(), name).ok_or_else(|| {
            ToolError::model(format!(
                "{tool} needs {name}, and this session cannot ask the user for a secret. Ask the \
                 user to run `hands secrets set {name}` in a terminal in this project ({description}), \
                 then call {tool} again: it uses the stored value. Nothing was stored."
            ))
        })
    })
    .await
}

/// As [`secret`], for a name the project or the model chose: when this host cannot ask, only a
/// value stored for this project is used, never a global secret of that name.
pub(crate) async fn project_secret(
    ctx: &Context,
    store: &dyn SecretStore,
    tool: &str,
    name: &str,
    description: &str,
) -> Result<SecretValue, ToolError> {
    use hands_core::secret::ProjectSecret;
    asked(ctx, tool, name, description, || match hands_core::secret::project_secret(
        store,
        ctx.root(),
        name,
    ) {
        ProjectSecret::Stored(value) => Ok(value),
        ProjectSecret::GlobalOnly => Err(ToolError::model(format!(
            "{tool} needs {name} for this project, and only a global secret {name} is stored: a \
             name the project or the model chose never selects a global secret. This session \
             cannot ask the user, so nothing was done. Ask the user to run `hands secrets set \
             {name}` in a terminal in this project (without --global; {description}), then call \
             {tool} again."
        ))),
        ProjectSecret::Missing => Err(ToolError::model(format!(
            "{tool} needs {name}, and this session cannot ask the user for a secret. Ask the \
             user to run `hands secrets set {name}` in a terminal in this project ({description}), \
             then call {tool} again: it uses the stored value. Nothing was stored."
        ))),
    })
    .await
}

/// Ask for `name`; `fallback` answers when this host cannot ask.
async fn asked(
    ctx: &Context,
    tool: &str,
    name: &str,
    description: &str,
    fallback: impl FnOnce() -> Result<SecretValue, ToolError>,
) -> Result<SecretValue, ToolError> {
    let asker = ctx.session().get_extension::<SecretAskerHandle>().map(|h| h.0.clone());
    let asked = match asker {
        Some(asker) => {
            let request = SecretRequest {
                session: ctx.session().id().to_owned(),
                id: format!("{}:{name}", ctx.call_id()),
                name: name.to_owned(),
                description: description.to_owned(),
            };
            let cancel = ctx.cancel_token();
            tokio::select! {
                answer = asker.request(&request, cancel) => answer,
                () = cancel.cancelled() => Err(AskError::Cancelled),
            }
        }
        None => Err(AskError::NoOneToAsk),
    };
    match asked {
        Ok(value) => Ok(value),
        Err(AskError::NoOneToAsk) => fallback(),
        Err(err) => Err(ToolError::model(format!(
            "{tool} did not get {name}: {}. Nothing was stored; call {tool} again when the user \
             is ready.",
            declined(&err)
        ))),
    }
}

/// Ask the user a question (a public value such as a project URL) through ask_user's asker.
pub(crate) async fn public(
    ctx: &Context,
    tool: &str,
    field: &str,
    question: &str,
) -> Result<String, ToolError> {
    let missing = || {
        ToolError::model(format!(
            "`{field}` is missing and this session cannot ask the user. Ask the user for it in \
             your reply, then call {tool} again with `{field}` set."
        ))
    };
    let Some(AskerHandle(asker)) = ctx.session().get_extension::<AskerHandle>().as_deref().cloned()
    else {
        return Err(missing());
    };
    let question = Question {
        session: ctx.session().id().to_owned(),
        id: format!("{}:{field}", ctx.call_id()),
        question: question.to_owned(),
        options: Vec::new(),
    };
    let cancel = ctx.cancel_token();
    let answer = tokio::select! {
        answer = asker.ask(&question, cancel) => answer,
        () = cancel.cancelled() => Err(AskError::Cancelled),
    };
    match answer {
        Ok(text) if !text.trim().is_empty() => Ok(text.trim().to_owned()),
        Ok(_) => Err(ToolError::model(format!(
            "The user gave an empty `{field}`. Call {tool} again with `{field}` set when you have it."
        ))),
        Err(AskError::NoOneToAsk) => Err(missing()),
        Err(err) => Err(ToolError::model(format!(
            "{tool} did not get `{field}`: {}. Nothing was stored.",
            declined(&err)
        ))),
    }
}

fn declined(err: &AskError) -> String {
    match err {
        AskError::Cancelled => "the call was stopped before the user answered".to_owned(),
        other => other.to_string(),
    }
}

/// The time limit of a connect call: the user may take a while to find a key (each secret is
/// asked in turn).
pub const ASK_TIMEOUT_MS: u64 = 900_000;
