//! What waits on the user: approvals ([`Host::decide`]) and questions ([`Host::answer`]).

use std::sync::{Arc, Mutex};

use futures_util::FutureExt as _;
use hands_core::approval::{ApprovalRequest, Approver, Decision};
use hands_core::ask::{AskError, Asker, PendingQuestions, Question};
use hands_core::{BoxFuture, CancellationToken};
use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::event::EventKind;

use super::events::Hub;
use super::ids::fresh_id;
use super::lock::lock;

/// Approvals waiting for [`Host::decide`].
#[derive(Default)]
pub(super) struct Approvals(Mutex<Vec<WaitingApproval>>);

/// An approval waiting for the user's decision.
pub(super) struct WaitingApproval {
    session: String,
    id: String,
    tool: String,
    summary: String,
    details: Option<String>,
    reply: oneshot::Sender<Decision>,
}

impl WaitingApproval {
    /// Send the user's decision; the approver may have given up meanwhile (an abort), then
    /// nothing waits for it.
    pub(super) fn reply(self, decision: Decision) {
        let _ = self.reply.send(decision);
    }
}

impl Approvals {
    /// Put an approval on the table.
    fn push(&self, waiting: WaitingApproval) {
        lock(&self.0).push(waiting);
    }

    /// Take the approval `id` of `session` off the table; the ids waiting in the session when it
    /// is not there.
    pub(super) fn take(&self, session: &str, id: &str) -> Result<WaitingApproval, Vec<String>> {
        let mut table = lock(&self.0);
        match table.iter().position(|a| a.session == session && a.id == id) {
            Some(index) => Ok(table.remove(index)),
            None => {
                Err(table.iter().filter(|a| a.session == session).map(|a| a.id.clone()).collect())
            }
        }
    }

    /// The approvals waiting in `session`: `[{approval_id, tool, summary, details?}]`.
    pub(super) fn pending(&self, session: &str) -> Vec<Value> {
        lock(&self.0)
            .iter()
            .filter(|a| a.session == session)
            .map(|a| {
                let mut entry = json!({"approval_id": a.id, "tool": a.tool, "summary": a.summary});
                if let Some(details) = &a.details {
                    entry["details"] = json!(details);
                }
                entry
            })
            .collect()
    }

    /// Forget the approval `id` (its approver gave up, or got its answer).
    fn remove(&self, id: &str) {
        lock(&self.0).retain(|a| a.id != id);
    }
}

/// The session's approver: announces the request and waits for [`Host::decide`].
pub(super) struct HostApprover {
    hub: Arc<Hub>,
    approvals: Arc<Approvals>,
}

impl HostApprover {
    /// An approver that announces on `hub` and waits on `approvals`.
    pub(super) fn new(hub: Arc<Hub>, approvals: Arc<Approvals>) -> Self {
        Self { hub, approvals }
    }
}

impl Approver for HostApprover {
    fn approve<'a>(
        &'a self,
        request: &'a ApprovalRequest,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Decision> {
        Box::pin(async move {
            let id = fresh_id("approval");
            let (reply, decision) = oneshot::channel();
            // A summary cut short is never all that is shown: the whole argument follows.
            let details = request
                .details
                .clone()
                .or_else(|| hands_core::approval::whole_when_cut(&request.args));
            self.approvals.push(WaitingApproval {
                session: request.session.clone(),
                id: id.clone(),
                tool: request.tool.clone(),
                summary: request.summary.clone(),
                details: details.clone(),
                reply,
            });
            struct Leave<'a>(&'a Approvals, &'a str);
            impl Drop for Leave<'_> {
                fn drop(&mut self) {
                    self.0.remove(self.1);
                }
            }
            let _leave = Leave(&self.approvals, &id);
            self.hub
                .emit(EventKind::ApprovalRequested {
                    approval_id: id.clone(),
                    tool: request.tool.clone(),
                    summary: request.summary.clone(),
                    details: details.clone(),
                    session_allowable: request.session_allowable,
                })
                .await;
            let decision = tokio::select! {
                decision = decision => decision.unwrap_or(Decision::Deny(None)),
                () = cancel.cancelled() => Decision::Deny(Some("the call was aborted".into())),
            };
            let approved = decision.approves();
            let for_session = decision == Decision::ApproveForSession && request.session_allowable;
            self.hub
                .emit(EventKind::ApprovalDecided { approval_id: id.clone(), approved, for_session })
                .await;
            decision
        })
    }
}

/// The session's asker: parks the question in the host's table, announces it, waits.
pub(super) struct HostAsker {
    hub: Arc<Hub>,
    questions: PendingQuestions,
}

impl HostAsker {
    /// An asker that parks questions in `questions` and announces them on `hub`.
    pub(super) fn new(hub: Arc<Hub>, questions: PendingQuestions) -> Self {
        Self { hub, questions }
    }
}

impl Asker for HostAsker {
    fn ask<'a>(
        &'a self,
        question: &'a Question,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<String, AskError>> {
        Box::pin(async move {
            let wait = self.questions.ask(question, cancel);
            tokio::pin!(wait);
            // One poll puts the question in the table, so that it can be answered as soon as the
            // event is out.
            if let Some(early) = (&mut wait).now_or_never() {
                return early;
            }
            self.hub
                .emit(EventKind::Question {
                    question_id: question.id.clone(),
                    question: question.question.clone(),
                    options: question.options.clone(),
                })
                .await;
            let answer = wait.await;
            if answer.is_ok() {
                self.hub
                    .emit(EventKind::QuestionAnswered { question_id: question.id.clone() })
                    .await;
            }
            answer
        })
    }
}
