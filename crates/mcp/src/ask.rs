//! ask_user over MCP: the question goes to the client as an elicitation (an input-required
//! round for a 2026-07-28 client), a form with one field,
//! `answer` — free text, or a choice among the options when the model gave some. Accept returns the
//! answer; decline and cancel are the user declining; a failed request means the user could not be
//! asked. Installed by the server next to the approver when the client offers elicitation.

use hands_core::ask::{AskError, Asker, Question};
use hands_core::{BoxFuture, CancellationToken};
use rmcp::model::{ElicitRequestParams, ElicitationAction};
use serde_json::{Value, json};

use crate::rounds::Elicitor;

/// Asks the MCP client's user.
pub(crate) struct ElicitationAsker {
    elicitor: Elicitor,
}

impl ElicitationAsker {
    /// Asks through `elicitor`.
    pub(crate) fn new(elicitor: Elicitor) -> Self {
        Self { elicitor }
    }
}

/// The elicitation request for `question`.
fn request(question: &Question) -> Result<ElicitRequestParams, serde_json::Error> {
    let answer = if question.options.is_empty() {
        json!({"type": "string", "title": "Answer"})
    } else {
        json!({"type": "string", "title": "Answer", "enum": question.options})
    };
    serde_json::from_value(json!({
        "mode": "form",
        "message": question.question,
        "requestedSchema": {
            "type": "object",
            "properties": {"answer": answer},
            "required": ["answer"],
        }
    }))
}

/// The answer of an elicitation result.
fn answer(action: ElicitationAction, content: Option<&Value>) -> Result<String, AskError> {
    match action {
        ElicitationAction::Accept => content
            .and_then(|c| c.get("answer"))
            .map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .ok_or_else(|| AskError::Unavailable("the client accepted without an answer".into())),
        _ => Err(AskError::Declined(None)),
    }
}

impl Asker for ElicitationAsker {
    fn ask<'a>(
        &'a self,
        question: &'a Question,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<String, AskError>> {
        Box::pin(async move {
            let params = request(question)
                .map_err(|err| AskError::Unavailable(format!("cannot build the form: {err}")))?;
            tokio::select! {
                result = self.elicitor.elicit(params) => match result {
                    Ok(result) => answer(result.action, result.content.as_ref()),
                    Err(err) => Err(AskError::Unavailable(err)),
                },
                () = cancel.cancelled() => Err(AskError::Cancelled),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn question(options: &[&str]) -> Question {
        Question {
            session: "s".into(),
            id: "q".into(),
            question: "Which one?".into(),
            options: options.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    #[test]
    fn the_form_is_free_text_or_an_enum_of_the_options() {
        let free = serde_json::to_value(request(&question(&[])).unwrap()).unwrap();
        assert_eq!(free["message"], "Which one?");
        assert_eq!(free["requestedSchema"]["properties"]["answer"]["type"], "string");
        assert!(free["requestedSchema"]["properties"]["answer"].get("enum").is_none());
        assert_eq!(free["requestedSchema"]["required"], json!(["answer"]));

        let choice = serde_json::to_value(request(&question(&["red", "blue"])).unwrap()).unwrap();
        assert_eq!(
            choice["requestedSchema"]["properties"]["answer"]["enum"],
            json!(["red", "blue"])
        );
    }

    #[test]
    fn accept_gives_the_answer_and_anything_else_declines() {
        let content = json!({"answer": "blue"});
        assert_eq!(answer(ElicitationAction::Accept, Some(&content)), Ok("blue".into()));
        assert!(matches!(answer(ElicitationAction::Accept, None), Err(AskError::Unavailable(_))));
        assert_eq!(answer(ElicitationAction::Decline, None), Err(AskError::Declined(None)));
        assert_eq!(answer(ElicitationAction::Cancel, None), Err(AskError::Declined(None)));
    }
}
