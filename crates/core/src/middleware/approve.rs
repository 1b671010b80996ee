//! Approval. Under `approval = "ask"`, a call of a tool whose spec says it needs approval waits for
//! the session's [`Approver`](crate::approval::Approver); a denial becomes an error result carrying
//! the user's words, and a session without an approver refuses at once with what to do instead.
//! Outermost in the chain, so the time a user takes to answer does not count against the tool's
//! timeout; an abort of the session ends the wait.

use super::{Middleware, Next, Request};
use crate::approval::{ApprovalRequest, ApproverHandle, Decision, summary};
use crate::config::Approval;
use crate::{ToolError, ToolOutput};

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
    ) -> Result<ToolOutput, ToolError> {
        if !self.applies(&req) {
            return next.run(req).await;
        }
        let session = req.ctx.session();
        let Some(ApproverHandle(approver)) =
            session.get_extension::<ApproverHandle>().as_deref().cloned()
        else {
            return Ok(ToolOutput::error(format!(
                "{} needs the user's approval (approval = \"ask\"), but there is nobody to ask in \
                 this session, so it was not run. Ask the user to run it, or to set \
                 approval = \"auto\" (HANDS_APPROVAL=auto) if they trust these calls.",
                req.call.name
            )));
        };
        // A call whose arguments do not parse is not asked about: it fails as it would have
        // failed after a yes, and nothing ran.
        let details = req.tool.approval_details_json(&req.ctx, &req.call.args).await?;
        // Every approver (a terminal, MCP elicitation, an HTTP event) shows what it is given:
        // the secrets are replaced here, once for all of them.
        let mut args = req.call.args.clone();
        crate::redact::json(&mut args);
        let request = ApprovalRequest {
            session: session.id().to_owned(),
            tool: req.call.name.clone(),
            summary: summary(&req.call.name, &args),
            args,
            details: details.map(|text| crate::redact::text(&text).into_owned()),
        };
        match approver.approve(&request, req.ctx.cancel_token()).await {
            Decision::Approve => next.run(req).await,
            Decision::Deny(words) => Ok(ToolOutput::error(match words {
                Some(words) if !words.trim().is_empty() => {
                    format!("The user declined {} and said: {words}", req.call.name)
                }
                _ => format!(
                    "The user declined {}; it was not run. Ask what they want instead, or try \
                     another way.",
                    req.call.name
                ),
            })),
        }
    }

    fn applies(&self, req: &Request<'_>) -> bool {
        self.policy == Approval::Ask && req.tool.spec().needs_approval
    }
}
