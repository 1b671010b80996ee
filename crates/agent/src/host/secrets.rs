//! Secrets waiting on the user: the secrets tool's requests, announced as `secret_requested`
//! events and answered by [`Host::give_secret`](super::Host::give_secret) (the session API's
//! `POST /v1/sessions/{id}/secrets/{request_id}`, the terminal's hidden prompt) or
//! [`Host::decline_secret`](super::Host::decline_secret). The value goes from the answer straight
//! to the waiting tool: no event, log or store record ever holds it.

use std::sync::{Arc, Mutex};

use hands_core::ask::AskError;
use hands_core::secret::{SecretAsker, SecretRequest, SecretValue};
use hands_core::{BoxFuture, CancellationToken};
use tokio::sync::oneshot;

use crate::event::EventKind;

use super::error::{HostError, HostResult};
use super::events::Hub;
use super::ids::fresh_id;
use super::lock::lock;

/// Fewer characters than this cannot be hidden safely (the store refuses them too).
pub const MIN_SECRET_CHARS: usize = 8;

/// Secret requests waiting for the user.
#[derive(Default)]
pub(super) struct SecretRequests(Mutex<Vec<WaitingSecret>>);

struct WaitingSecret {
    session: String,
    id: String,
    name: String,
    reply: oneshot::Sender<Result<SecretValue, AskError>>,
}

impl SecretRequests {
    /// Hand `value` to the request `id` of `session`; its name. `NotFound` when no such request
    /// waits; `BadRequest` (the request still waits) for a value too short to be a secret.
    pub(super) fn give(&self, session: &str, id: &str, value: SecretValue) -> HostResult<String> {
        let mut table = lock(&self.0);
        let Some(index) = table.iter().position(|w| w.session == session && w.id == id) else {
            return Err(unknown(session, id));
        };
        let trimmed = value.expose().trim();
        if trimmed.chars().count() < MIN_SECRET_CHARS {
            return Err(HostError::BadRequest(format!(
                "the value is too short: a secret has at least {MIN_SECRET_CHARS} characters; \
                 the request still waits for the whole value"
            )));
        }
        let value =
            if trimmed.len() == value.expose().len() { value } else { SecretValue::new(trimmed) };
        let waiting = table.remove(index);
        // The tool may have given up meanwhile (an abort); then nothing waits for this.
        let _ = waiting.reply.send(Ok(value));
        Ok(waiting.name)
    }

    /// End the request `id` of `session` without a value.
    pub(super) fn decline(&self, session: &str, id: &str) -> HostResult<String> {
        let mut table = lock(&self.0);
        let Some(index) = table.iter().position(|w| w.session == session && w.id == id) else {
            return Err(unknown(session, id));
        };
        let waiting = table.remove(index);
        let _ = waiting.reply.send(Err(AskError::Declined(None)));
        Ok(waiting.name)
    }

    fn remove(&self, id: &str) {
        lock(&self.0).retain(|w| w.id != id);
    }
}

fn unknown(session: &str, id: &str) -> HostError {
    HostError::NotFound(format!(
        "no secret request `{id}` is waiting in session {session} (it was answered, declined or \
         timed out)"
    ))
}

/// The session's secret asker: parks the request, announces it, waits for the value.
pub(super) struct HostSecretAsker {
    hub: Arc<Hub>,
    requests: Arc<SecretRequests>,
}

impl HostSecretAsker {
    pub(super) fn new(hub: Arc<Hub>, requests: Arc<SecretRequests>) -> Self {
        Self { hub, requests }
    }
}

impl SecretAsker for HostSecretAsker {
    fn request<'a>(
        &'a self,
        request: &'a SecretRequest,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<SecretValue, AskError>> {
        Box::pin(async move {
            let id = fresh_id("secret");
            let (reply, value) = oneshot::channel();
            lock(&self.requests.0).push(WaitingSecret {
                session: request.session.clone(),
                id: id.clone(),
                name: request.name.clone(),
                reply,
            });
            // Leaves the table however the wait ends; a wait dropped midway (the tool's time
            // limit) still tells the watchers that the request is over.
            struct Leave<'a> {
                requests: &'a SecretRequests,
                hub: &'a Arc<Hub>,
                id: &'a str,
                ended: bool,
            }
            impl Drop for Leave<'_> {
                fn drop(&mut self) {
                    self.requests.remove(self.id);
                    if !self.ended
                        && let Ok(runtime) = tokio::runtime::Handle::try_current()
                    {
                        let hub = Arc::clone(self.hub);
                        let request_id = self.id.to_owned();
                        runtime.spawn(async move {
                            hub.emit(EventKind::SecretDeclined { request_id }).await;
                        });
                    }
                }
            }
            let mut leave =
                Leave { requests: &self.requests, hub: &self.hub, id: &id, ended: false };
            self.hub
                .emit(EventKind::SecretRequested {
                    request_id: id.clone(),
                    name: request.name.clone(),
                    description: request.description.clone(),
                })
                .await;
            let outcome = tokio::select! {
                value = value => value.unwrap_or(Err(AskError::Cancelled)),
                () = cancel.cancelled() => Err(AskError::Cancelled),
            };
            leave.ended = true;
            drop(leave);
            let end = match outcome {
                Ok(_) => EventKind::SecretAnswered { request_id: id.clone() },
                Err(_) => EventKind::SecretDeclined { request_id: id.clone() },
            };
            self.hub.emit(end).await;
            outcome
        })
    }
}
