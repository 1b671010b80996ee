//! Approval. Under `approval = "ask"`, a call that its tool says needs approval waits for
//! the session's [`Approver`](crate::approval::Approver); a denial becomes an error result carrying
//! the user's words, and a session without an approver refuses at once with what to do instead.
//! Outermost in the chain, so the time a user takes to answer does not count against the tool's
//! timeout; an abort of the session ends the wait, and the result says how long it was
//! ([`ToolOutput::approval_wait`]). A plan ([`Policy::asks_each_time`](crate::Policy)) is the
//! user's under every policy: asked whatever `approval` says, and accepted unasked (the result
//! says so) only where nobody can be asked under `approval = "auto"`.

use super::{Middleware, Next, Request};
use crate::approval::{
    ApprovalRequest, Approved, ApproverHandle, Decision, SessionAllows, summary,
};
use crate::config::Approval;
use crate::{ChainError, ToolError, ToolOutput};

/// The approval middleware.
#[derive(Debug, Clone, Copy)]
pub struct Approve {
    policy: Approval,
}

impl Approve {
    /// With the configured policy.
    pub fn new(policy: Approval) -> Self {
        Self { policy }
    }
}

impl Middleware for Approve {
    async fn handle<'a>(
        &'a self,
        req: Request<'a>,
        next: Next<'a>,
    ) -> Result<ToolOutput, ChainError> {
        if !self.applies(&req) {
            return next.run(req).await;
        }
        let session = req.ctx.session();
        // The user allowed this tool for the rest of the session: no question, as if it had
        // been asked and approved (the call still goes through every other step).
        let scope = allowance(&req.call.name, req.tool.spec().policy.session_scope, &req.call.args);
        if session.get_extension::<SessionAllows>().is_some_and(|a| a.allows(&scope)) {
            return next.run(req).await;
        }
        let Some(ApproverHandle(approver)) =
            session.get_extension::<ApproverHandle>().as_deref().cloned()
        else {
            if self.policy != Approval::Ask {
                // A plan under `auto` where nobody can be asked (an MCP client without
                // elicitation, `hands call` without a terminal): accepted, as it always was
                // here, and the model is told that nobody saw it.
                let name = req.call.name.clone();
                let output = next.run(req).await?;
                return Ok(output.with_text(format!(
                    "(Nobody was asked to approve this {name} call: this client has no way to \
                     ask its user, and approval = \"auto\", so it was accepted as written. Tell \
                     the user what you are about to do.)"
                )));
            }
            return Ok(ToolOutput::error(format!(
                "{} needs the user's approval (approval = \"ask\"), but there is nobody to ask in \
                 this session, so it was not run. Ask the user to run it, or to set \
                 approval = \"auto\" (HANDS_APPROVAL=auto) if they trust these calls.",
                req.call.name
            )));
        };
        // The arguments were parsed at dispatch; what the tool shows of this call is computed
        // now, before asking. A review that fails refuses the call, and nobody is asked.
        let review = match req.tool.review(&req.ctx, req.prepared).await {
            Ok(review) => review,
            // Outside the redaction step: a refusal that quotes a secret is redacted here.
            Err(refused) => return ToolError::into_chain(Err(redacted(refused))),
        };
        if review.nothing_to_ask {
            return next.run(req).await;
        }
        // Every approver (a terminal, MCP elicitation, an HTTP event) shows what it is given:
        // the secrets are replaced here, once for all of them.
        let mut args = req.call.args.clone();
        crate::redact::json(&mut args);
        let summary = match review.summary {
            Some(summary) => crate::redact::text(&summary).into_owned(),
            None => summary(&req.call.name, &args),
        };
        let details = review.details.map(|text| crate::redact::text(&text).into_owned());
        let request = ApprovalRequest {
            session: session.id().to_owned(),
            tool: req.call.name.clone(),
            summary,
            args,
            details,
            session_allowable: !req.tool.spec().policy.asks_each_time,
        };
        let asked = std::time::Instant::now();
        let decision = approver.approve(&request, req.ctx.cancel_token()).await;
        let waited = asked.elapsed();
        if decision == Decision::ApproveForSession && request.session_allowable {
            session.extension::<SessionAllows>().allow(&scope);
        }
        match decision {
            Decision::Approve | Decision::ApproveForSession => {
                let approved = Approved { summary: request.summary, details: request.details };
                let ctx = req.ctx.clone().with_approved(approved);
                let mut output = next.run(Request { ctx, ..req }).await?;
                output.approval_wait += waited;
                Ok(output)
            }
            Decision::Deny(words) => {
                req.ctx.mark_denied();
                let denied = ToolOutput::error(match words {
                    Some(words) if !words.trim().is_empty() => {
                        format!("The user declined {} and said: {words}", req.call.name)
                    }
                    _ => format!(
                        "The user declined {}; it was not run. Ask what they want instead, or try \
                     another way.",
                        req.call.name
                    ),
                });
                Ok(ToolOutput { approval_wait: waited, ..denied })
            }
        }
    }

    fn applies(&self, req: &Request<'_>) -> bool {
        req.policy().needs_approval
            && (self.policy == Approval::Ask || req.tool.spec().policy.asks_each_time)
    }
}

/// What an allowance for the session is kept under: the tool's name, and for a tool that
/// dispatches to others the values of its scoping arguments (`mcp_call(server=a, tool=read)`).
fn allowance(tool: &str, scope: &[&str], args: &serde_json::Value) -> String {
    if scope.is_empty() {
        return tool.to_owned();
    }
    let values: Vec<String> = scope
        .iter()
        .map(|key| {
            let value = match args.get(*key) {
                Some(serde_json::Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            };
            format!("{key}={value:?}")
        })
        .collect();
    format!("{tool}({})", values.join(", "))
}

/// `err` with its secrets replaced.
fn redacted(err: ToolError) -> ToolError {
    let clean = |m: String| crate::redact::text(&m).into_owned();
    match err {
        ToolError::RespondToModel(m) => ToolError::RespondToModel(clean(m)),
        ToolError::Fatal(m) => ToolError::Fatal(clean(m)),
        ToolError::SandboxGone(m) => ToolError::SandboxGone(clean(m)),
    }
}
