//! Approvals over MCP: the call's summary (and its whole argument when the summary is cut) as a
//! form with one boolean, `approve`, and an optional comment, sent through the [`Elicitor`] (an
//! elicitation for 2025-11-25 clients, an input-required round for 2026-07-28 ones). Only an accept
//! whose `approve` is the boolean `true` (or absent: the form's default) approves.

use hands_core::approval::{ApprovalRequest, Approver, Decision};
use hands_core::{BoxFuture, CancellationToken};
use rmcp::model::{ElicitRequestParams, ElicitationAction};
use serde_json::{Value, json};

use crate::rounds::Elicitor;

/// Asks the user through MCP elicitation: accept approves (unless the form says otherwise),
/// decline and cancel deny, with the user's words when they gave any.
pub(crate) struct ElicitationApprover {
    pub(crate) elicitor: Elicitor,
}

impl Approver for ElicitationApprover {
    fn approve<'a>(
        &'a self,
        request: &'a ApprovalRequest,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Decision> {
        Box::pin(async move {
            // A summary cut short is never all that is shown: the whole argument follows (a
            // terminal shows it whole by itself).
            let details = request
                .details
                .clone()
                .or_else(|| hands_core::approval::whole_when_cut(&request.args));
            // A client may print the message to a terminal: control characters, bidi overrides
            // and screens of blanks are shown, not obeyed (`echo safe\r…touch HIDDEN`).
            let summary = hands_core::visible::line(&request.summary);
            let message = match &details {
                Some(details) => {
                    let details = hands_core::visible::block(details);
                    format!("hands wants to run {summary}.\n{details}\nAllow it?")
                }
                None => format!("hands wants to run {summary}. Allow it?"),
            };
            let params = json!({
                "mode": "form",
                "message": message,
                "requestedSchema": {
                    "type": "object",
                    "properties": {
                        "approve": {"type": "boolean", "title": "Allow", "default": true},
                        "comment": {
                            "type": "string",
                            "title": "Comment",
                            "description": "Optional: why not, or what to do instead"
                        }
                    }
                }
            });
            let params: ElicitRequestParams = match serde_json::from_value(params) {
                Ok(params) => params,
                Err(err) => return Decision::Deny(Some(format!("cannot ask the user: {err}"))),
            };
            tokio::select! {
                answer = self.elicitor.elicit(params) => match answer {
                    Ok(result) => {
                        let comment = result
                            .content
                            .as_ref()
                            .and_then(|c| c.get("comment"))
                            .and_then(Value::as_str)
                            .map(str::trim)
                            .filter(|c| !c.is_empty())
                            .map(str::to_owned);
                        // The form's default is a yes; a value that is no boolean (`"false"`,
                        // `0`) is no answer to the question, so it is a no.
                        let approved = match result.content.as_ref().and_then(|c| c.get("approve"))
                        {
                            None => true,
                            Some(value) => value.as_bool() == Some(true),
                        };
                        match result.action {
                            ElicitationAction::Accept if approved => Decision::Approve,
                            _ => Decision::Deny(comment),
                        }
                    }
                    Err(err) => Decision::Deny(Some(format!("the user could not be asked: {err}"))),
                },
                () = cancel.cancelled() => Decision::Deny(Some("aborted".into())),
            }
        })
    }
}
