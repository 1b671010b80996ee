//! Input-required rounds (MCP 2026-07-28, SEP-2322). A client of 2026-07-28 gets no
//! server-initiated request in the middle of a call, so its `tools/call` runs as a task the server
//! keeps: when the call asks the user (an approval, ask_user, plan approval, the secrets page),
//! the request is answered with an [`InputRequiredResult`] whose `requestState` is a random handle
//! to the parked call, and the retry carrying that state and its `inputResponses` hands the
//! answer to the same call, which goes on from where it waited. The handle is bound to the
//! session, the tool and the arguments (a SHA-256 of them): a retry with anything else is refused
//! and the parked call is told no, so an answer never runs another call. Parked calls are bounded
//! in count ([`MAX_PARKED`]) and time ([`PARKED_FOR`]); one that expires is told no. On a node of
//! several, the state starts with the node's id ([`crate::node`]), so that whichever node gets
//! the retry sends it here.

use std::collections::HashMap;
use std::io::Read as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use hands_core::{CancellationToken, DispatchError, ToolOutput};
use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, InputRequest, InputRequests,
    InputRequiredResult, InputResponses,
};
use rmcp::{ErrorData, Peer, RoleServer};
use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

/// At most this many calls wait for an answer at once (the oldest is told no to make room).
pub const MAX_PARKED: usize = 64;

/// A call waits this long for the retry that answers it, then is told no.
pub const PARKED_FOR: Duration = Duration::from_secs(15 * 60);

tokio::task_local! {
    /// The questions channel of the call this task runs, when it runs in rounds.
    static ROUND: Asking;
}

#[derive(Clone)]
struct Asking(mpsc::UnboundedSender<Ask>);

/// One question of a call in rounds: the elicitation to send and where its answer goes.
pub(crate) struct Ask {
    params: ElicitRequestParams,
    answer: oneshot::Sender<Value>,
}

impl Ask {
    /// The elicitation asked.
    pub(crate) fn params(&self) -> ElicitRequestParams {
        self.params.clone()
    }

    /// Give the call the client's answer (an elicitation result as JSON).
    pub(crate) fn answer(self, value: Value) {
        // The call may be gone meanwhile; then nobody waits for the answer.
        let _ = self.answer.send(value);
    }
}

/// How the user is asked: within the current call's rounds when it runs in rounds (2026-07-28),
/// else by a server-initiated elicitation to `peer` (2025-11-25 and older).
#[derive(Clone)]
pub(crate) struct Elicitor {
    peer: Option<Peer<RoleServer>>,
}

impl Elicitor {
    /// Asks through `peer` outside rounds.
    pub(crate) fn peer(peer: Peer<RoleServer>) -> Self {
        Self { peer: Some(peer) }
    }

    /// Asks only within rounds (a stateless 2026-07-28 client has no peer to send requests to).
    pub(crate) fn rounds_only() -> Self {
        Self { peer: None }
    }

    /// Ask `params` and wait for the user's answer.
    pub(crate) async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, String> {
        if let Ok(asking) = ROUND.try_with(Clone::clone) {
            let (answer, answered) = oneshot::channel();
            if asking.0.send(Ask { params, answer }).is_err() {
                return Err("the call's request is gone".into());
            }
            return match answered.await {
                Ok(value) => serde_json::from_value(value)
                    .map_err(|err| format!("the client's answer is no elicitation result: {err}")),
                Err(_) => Err("no answer came (the retry never arrived, or was refused)".into()),
            };
        }
        match &self.peer {
            Some(peer) => peer.create_elicitation(params).await.map_err(|err| err.to_string()),
            None => Err("this client can only be asked within a call's rounds".into()),
        }
    }
}

/// A call running in rounds.
pub(crate) struct Running {
    task: JoinHandle<Result<ToolOutput, DispatchError>>,
    asks: mpsc::UnboundedReceiver<Ask>,
    cancel: CancellationToken,
}

impl Drop for Running {
    // A call dropped while it waits (refused, expired, evicted, the server closing) stops.
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

impl Running {
    /// Run `call` in rounds; `cancel` is the call's own token (it outlives each request).
    pub(crate) fn start<F>(call: F, cancel: CancellationToken) -> Self
    where
        F: Future<Output = Result<ToolOutput, DispatchError>> + Send + 'static,
    {
        let (tx, asks) = mpsc::unbounded_channel();
        let task = tokio::spawn(ROUND.scope(Asking(tx), call));
        Self { task, asks, cancel }
    }

    /// Drive the call until it ends or asks; `request` is the current request's cancellation
    /// (the client cancelled it or went away: the call stops).
    pub(crate) async fn drive(mut self, request: &CancellationToken) -> Step {
        enum Got {
            Done(Result<ToolOutput, DispatchError>),
            Ask(Ask),
            Cancelled,
        }
        let got = tokio::select! {
            result = &mut self.task => Got::Done(joined(result)),
            Some(ask) = self.asks.recv() => Got::Ask(ask),
            () = request.cancelled() => Got::Cancelled,
        };
        match got {
            Got::Done(result) => Step::Done(result),
            Got::Ask(ask) => Step::Asks(self, ask),
            Got::Cancelled => {
                self.cancel.cancel();
                Step::Done(joined((&mut self.task).await))
            }
        }
    }
}

fn joined(
    result: Result<Result<ToolOutput, DispatchError>, tokio::task::JoinError>,
) -> Result<ToolOutput, DispatchError> {
    result.unwrap_or_else(|err| Err(DispatchError::Fatal(format!("the call failed: {err}"))))
}

/// Where a driven call stands.
pub(crate) enum Step {
    /// It ended with this result.
    Done(Result<ToolOutput, DispatchError>),
    /// It asks the user this and waits.
    Asks(Running, Ask),
}

/// What a call in rounds is bound to: its session, tool and arguments.
pub(crate) fn binding(session: &str, tool: &str, args: &Value) -> [u8; 32] {
    let mut hash = Sha256::new();
    for part in [session, "\0", tool, "\0"] {
        hash.update(part.as_bytes());
    }
    hash.update(canonical(args).as_bytes());
    hash.finalize().into()
}

/// `value` as JSON with every object's keys sorted, so the order a client writes them in
/// does not matter.
fn canonical(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let fields: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::String(k.clone()), canonical(&map[k])))
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(items) => {
            format!("[{}]", items.iter().map(canonical).collect::<Vec<_>>().join(","))
        }
        other => other.to_string(),
    }
}

/// A call waiting for the retry that answers its question.
struct Parked {
    binding: [u8; 32],
    running: Running,
    ask: Ask,
    key: String,
    since: Instant,
}

/// Why a retry does not resume a call.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Refusal {
    /// No parked call has this state (never, expired, or already resumed).
    #[error("unknown or expired requestState: no call waits for it; call the tool again")]
    Unknown,
    /// The retry names another call than the one that asked.
    #[error(
        "requestState belongs to another call (a different tool or different arguments): \
         refused, and the call that asked was told no"
    )]
    OtherCall,
}

impl From<Refusal> for ErrorData {
    fn from(refusal: Refusal) -> Self {
        ErrorData::invalid_params(refusal.to_string(), None)
    }
}

/// The parked calls of one server.
#[derive(Default)]
pub(crate) struct ParkedCalls {
    calls: Mutex<HashMap<String, Parked>>,
    /// This node's id among several (`requestState` names it, see [`crate::node`]).
    node: std::sync::OnceLock<String>,
}

impl ParkedCalls {
    /// Tag every `requestState` from now on with `node` (the first id set stays).
    pub(crate) fn set_node(&self, node: &str) {
        let _ = self.node.set(node.to_owned());
    }

    fn calls(&self) -> std::sync::MutexGuard<'_, HashMap<String, Parked>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Park `running`, which asks `ask`, and answer its request with the question.
    pub(crate) fn park(
        self: &Arc<Self>,
        binding: [u8; 32],
        running: Running,
        ask: Ask,
    ) -> Result<InputRequiredResult, ErrorData> {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let key = format!("hands-{}", NEXT.fetch_add(1, Ordering::Relaxed));
        let state = random_state()
            .map_err(|err| ErrorData::internal_error(format!("no random state: {err}"), None))?;
        let state = crate::node::tagged(self.node.get().map(String::as_str), &state);
        let result = question(&key, &ask.params, &state);
        self.insert(state, Parked { binding, running, ask, key, since: Instant::now() });
        Ok(result)
    }

    fn insert(self: &Arc<Self>, state: String, parked: Parked) {
        let mut calls = self.calls();
        calls.retain(|_, p| p.since.elapsed() < PARKED_FOR);
        while calls.len() >= MAX_PARKED {
            let Some(oldest) = calls.iter().min_by_key(|(_, p)| p.since).map(|(k, _)| k.clone())
            else {
                break;
            };
            calls.remove(&oldest);
        }
        calls.insert(state.clone(), parked);
        drop(calls);
        // Told no when its time is up, even if nobody calls again.
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            tokio::time::sleep(PARKED_FOR).await;
            if let Some(parked) = weak.upgrade() {
                let expired = {
                    let mut calls = parked.calls();
                    match calls.get(&state) {
                        Some(p) if p.since.elapsed() >= PARKED_FOR => calls.remove(&state),
                        _ => None,
                    }
                };
                drop(expired);
            }
        });
    }

    /// Resume the call parked under `state` with the answer in `responses`. The same question
    /// again when `responses` does not answer it; refused when `binding` is not the call's.
    pub(crate) fn resume(
        self: &Arc<Self>,
        state: &str,
        binding: [u8; 32],
        responses: Option<InputResponses>,
    ) -> Result<Resumed, Refusal> {
        let parked = self.calls().remove(state).ok_or(Refusal::Unknown)?;
        if parked.since.elapsed() >= PARKED_FOR {
            return Err(Refusal::Unknown);
        }
        if parked.binding != binding {
            // Dropped here: the call is cancelled and its question gets no answer (a no).
            return Err(Refusal::OtherCall);
        }
        let answer = responses.and_then(|mut r| r.remove(&parked.key));
        let Some(answer) = answer else {
            let again = question(&parked.key, &parked.ask.params, state);
            self.insert(state.to_owned(), parked);
            return Ok(Resumed::AskedAgain(again));
        };
        let Parked { running, ask, .. } = parked;
        // The call may be gone (cancelled meanwhile): its result is then what drive returns.
        let _ = ask.answer.send(answer);
        Ok(Resumed::Answered(running))
    }
}

/// A retry's outcome.
pub(crate) enum Resumed {
    /// The answer went to the call; drive it on.
    Answered(Running),
    /// The retry did not answer: the question again.
    AskedAgain(InputRequiredResult),
}

/// The input-required result asking `params` under `key`.
fn question(key: &str, params: &ElicitRequestParams, state: &str) -> InputRequiredResult {
    let mut requests = InputRequests::new();
    requests.insert(key.to_owned(), InputRequest::Elicitation(ElicitRequest::new(params.clone())));
    InputRequiredResult::new(Some(requests), Some(state.to_owned()))
}

/// 256 random bits as hex: the handle is unguessable, so it needs no seal.
fn random_state() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    #[test]
    fn the_binding_ignores_key_order_and_sees_every_value() {
        let a = binding("s", "bash", &json!({"command": "ls", "timeout": 5}));
        let b = binding("s", "bash", &json!({"timeout": 5, "command": "ls"}));
        assert_eq!(a, b);
        assert_ne!(a, binding("s", "bash", &json!({"command": "rm -rf x", "timeout": 5})));
        assert_ne!(a, binding("t", "bash", &json!({"command": "ls", "timeout": 5})));
        assert_ne!(a, binding("s", "read_file", &json!({"command": "ls", "timeout": 5})));
    }

    fn params() -> ElicitRequestParams {
        serde_json::from_value(json!({
            "mode": "form", "message": "Allow?",
            "requestedSchema": {"type": "object", "properties": {}}
        }))
        .unwrap()
    }

    async fn asking_call() -> (Running, Ask) {
        let call = async {
            let answer = Elicitor::rounds_only().elicit(params()).await;
            Ok(ToolOutput::text(format!("{answer:?}")))
        };
        match Running::start(call, CancellationToken::new()).drive(&CancellationToken::new()).await
        {
            Step::Asks(running, ask) => (running, ask),
            Step::Done(_) => panic!("the call did not ask"),
        }
    }

    #[tokio::test]
    async fn a_retry_with_other_arguments_is_refused_and_the_call_told_no() {
        let parked = Arc::new(ParkedCalls::default());
        let (running, ask) = asking_call().await;
        let mine = binding("s", "bash", &json!({"command": "ls"}));
        let result = parked.park(mine, running, ask).unwrap();
        let state = result.request_state.clone().unwrap();
        let key = result.input_requests.as_ref().unwrap().keys().next().unwrap().clone();
        let answer: InputResponses = [(key, json!({"action": "accept"}))].into();
        let other = binding("s", "bash", &json!({"command": "rm -rf /"}));
        assert!(matches!(
            parked.resume(&state, other, Some(answer.clone())),
            Err(Refusal::OtherCall)
        ));
        assert!(matches!(parked.resume(&state, mine, Some(answer)), Err(Refusal::Unknown)));
    }

    #[tokio::test]
    async fn a_node_of_several_names_itself_in_the_state_and_takes_only_the_whole_state() {
        let parked = Arc::new(ParkedCalls::default());
        parked.set_node("node-7");
        let (running, ask) = asking_call().await;
        let mine = binding("s", "bash", &json!({}));
        let state = parked.park(mine, running, ask).unwrap().request_state.unwrap();
        assert_eq!(crate::node::node_of(&state).as_deref(), Some("node-7"), "{state}");
        let (_, bare) = state.split_once('.').unwrap();
        assert!(matches!(parked.resume(bare, mine, None), Err(Refusal::Unknown)));
        assert!(matches!(parked.resume(&state, mine, None), Ok(Resumed::AskedAgain(_))));
    }

    #[tokio::test]
    async fn the_answer_resumes_the_same_call() {
        let parked = Arc::new(ParkedCalls::default());
        let (running, ask) = asking_call().await;
        let mine = binding("s", "bash", &json!({}));
        let result = parked.park(mine, running, ask).unwrap();
        let state = result.request_state.clone().unwrap();
        let key = result.input_requests.as_ref().unwrap().keys().next().unwrap().clone();
        // No answer: the same question again.
        assert!(matches!(parked.resume(&state, mine, None), Ok(Resumed::AskedAgain(_))));
        let answer: InputResponses = [(key, json!({"action": "decline"}))].into();
        let Ok(Resumed::Answered(running)) = parked.resume(&state, mine, Some(answer)) else {
            panic!("not resumed")
        };
        let Step::Done(Ok(output)) = running.drive(&CancellationToken::new()).await else {
            panic!("not done")
        };
        assert!(format!("{output:?}").contains("Decline"), "{output:?}");
    }
}
