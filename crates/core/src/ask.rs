//! Questions for the user: ask_user pauses its call until the user answers through the host. The
//! host answers through an [`Asker`] set on the session (a terminal prompt, MCP elicitation, an HTTP
//! endpoint); with no asker there is nobody to ask and the tool says so at once — never a hang.
//!
//! [`PendingQuestions`] is the asker of hosts whose answers arrive later by another route (HTTP's
//! `POST /vibe/answer` and `POST /v1/sessions/{id}/answer`): `ask` parks the question under its id
//! until `answer` routes the user's text to it, or the call is cancelled.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde::Serialize;
use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;

use crate::BoxFuture;

/// A question for the user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Question {
    /// The session asking.
    pub session: String,
    /// The question's id, unique within its session (ask_user uses its call id); answers are
    /// routed by it.
    pub id: String,
    /// The question, for people.
    pub question: String,
    /// Choices the model offers (empty: a free-form answer).
    pub options: Vec<String>,
}

/// Why no answer came.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AskError {
    /// The session has no way to reach the user.
    #[error("there is nobody to ask in this session")]
    NoOneToAsk,
    /// The call was cancelled (aborted, or its time limit passed) while waiting.
    #[error("the question was cancelled")]
    Cancelled,
    /// The user did not answer in time.
    #[error("the user did not answer within {} s", .0.as_secs())]
    TimedOut(Duration),
    /// The user declined to answer, with their words when they gave any.
    #[error("the user declined to answer{}", .0.as_deref().map(|w| format!(": {w}")).unwrap_or_default())]
    Declined(Option<String>),
    /// The host could not put the question to the user (a transport error, a duplicate id).
    #[error("the user could not be asked: {0}")]
    Unavailable(String),
}

/// Puts a question to the user. Implemented by each host.
pub trait Asker: Send + Sync {
    /// Ask `question` and wait for the answer; give up with [`AskError::Cancelled`] when `cancel`
    /// fires. Time limits are the caller's business.
    fn ask<'a>(
        &'a self,
        question: &'a Question,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<String, AskError>>;
}

/// The asker a session has, kept as a session extension.
#[derive(Clone)]
pub struct AskerHandle(pub Arc<dyn Asker>);

/// An answer that found no question to go to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoSuchQuestion {
    /// Nothing is waiting for an answer.
    #[error("no question is waiting for an answer")]
    NonePending,
    /// No pending question has this id.
    #[error("no pending question has the id `{id}`; pending: {}", list(.pending))]
    Unknown {
        /// The id given.
        id: String,
        /// The ids of the questions pending now.
        pending: Vec<String>,
    },
    /// No id was given and several questions are waiting: the answer must say which.
    #[error("{} questions are waiting, so the answer must name one by id: {}", .pending.len(), list(.pending))]
    Ambiguous {
        /// The ids of the questions pending now.
        pending: Vec<String>,
    },
}

fn list(ids: &[String]) -> String {
    if ids.is_empty() { "none".to_owned() } else { ids.join(", ") }
}

struct Waiting {
    question: Question,
    reply: oneshot::Sender<String>,
}

#[derive(Default)]
struct Table {
    /// In the order asked.
    waiting: Vec<Waiting>,
}

struct Shared {
    table: Mutex<Table>,
    /// The pending questions, oldest first, for hosts that announce them (an SSE "question" event).
    changes: watch::Sender<Vec<Question>>,
}

/// Questions waiting for an answer that arrives by another route (HTTP). Cheap to clone; every
/// clone shares the same table. Usable as an [`Asker`] itself.
#[derive(Clone)]
pub struct PendingQuestions(Arc<Shared>);

impl Default for PendingQuestions {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for PendingQuestions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingQuestions").field("pending", &self.pending()).finish()
    }
}

impl PendingQuestions {
    /// An empty table.
    pub fn new() -> Self {
        Self(Arc::new(Shared {
            table: Mutex::new(Table::default()),
            changes: watch::Sender::new(Vec::new()),
        }))
    }

    /// Park `question` until [`PendingQuestions::answer`] routes an answer to it or `cancel` fires.
    /// The question leaves the table however the wait ends (also when this future is dropped).
    pub async fn ask(
        &self,
        question: &Question,
        cancel: &CancellationToken,
    ) -> Result<String, AskError> {
        let (reply, answer) = oneshot::channel();
        {
            let mut table = self.lock();
            if table.waiting.iter().any(|w| same(&w.question, question)) {
                return Err(AskError::Unavailable(format!(
                    "a question with the id `{}` is already waiting in this session",
                    question.id
                )));
            }
            table.waiting.push(Waiting { question: question.clone(), reply });
            self.publish(&table);
        }
        let _leave = Leave { pending: self, question };
        tokio::select! {
            answer = answer => answer.map_err(|_| AskError::Cancelled),
            () = cancel.cancelled() => Err(AskError::Cancelled),
        }
    }

    /// Route `text` to the question `id`, or, without an id, to the only question waiting.
    pub fn answer(&self, id: Option<&str>, text: impl Into<String>) -> Result<(), NoSuchQuestion> {
        self.answer_where(id, text.into(), |_| true)
    }

    /// [`PendingQuestions::answer`] among the questions of `session` only (the session API's
    /// `POST /v1/sessions/{id}/answer`).
    pub fn answer_in(
        &self,
        session: &str,
        id: Option<&str>,
        text: impl Into<String>,
    ) -> Result<(), NoSuchQuestion> {
        self.answer_where(id, text.into(), |q| q.session == session)
    }

    /// The questions waiting now, oldest first.
    pub fn pending(&self) -> Vec<Question> {
        self.lock().waiting.iter().map(|w| w.question.clone()).collect()
    }

    /// The waiting questions as they change (each question asked or settled sends a new list).
    pub fn changes(&self) -> watch::Receiver<Vec<Question>> {
        self.0.changes.subscribe()
    }

    fn answer_where(
        &self,
        id: Option<&str>,
        text: String,
        mut scope: impl FnMut(&Question) -> bool,
    ) -> Result<(), NoSuchQuestion> {
        let mut table = self.lock();
        let in_scope: Vec<usize> =
            (0..table.waiting.len()).filter(|&i| scope(&table.waiting[i].question)).collect();
        let ids = || in_scope.iter().map(|&i| table.waiting[i].question.id.clone()).collect();
        let index = match id {
            // Ids are unique per session; two sessions' questions may share one.
            Some(id) => match in_scope
                .iter()
                .copied()
                .filter(|&i| table.waiting[i].question.id == id)
                .collect::<Vec<_>>()
                .as_slice()
            {
                [] => return Err(NoSuchQuestion::Unknown { id: id.to_owned(), pending: ids() }),
                [only] => *only,
                _ => return Err(NoSuchQuestion::Ambiguous { pending: ids() }),
            },
            None => match in_scope.as_slice() {
                [] => return Err(NoSuchQuestion::NonePending),
                [only] => *only,
                _ => return Err(NoSuchQuestion::Ambiguous { pending: ids() }),
            },
        };
        let waiting = table.waiting.remove(index);
        self.publish(&table);
        // The asker may have given up between our lookup and now; its answer is then dropped,
        // which is what a late answer deserves.
        let _ = waiting.reply.send(text);
        Ok(())
    }

    fn remove(&self, question: &Question) {
        let mut table = self.lock();
        let before = table.waiting.len();
        table.waiting.retain(|w| !same(&w.question, question));
        if table.waiting.len() != before {
            self.publish(&table);
        }
    }

    fn publish(&self, table: &Table) {
        let list: Vec<Question> = table.waiting.iter().map(|w| w.question.clone()).collect();
        self.0.changes.send_replace(list);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.0.table.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Takes a question out of the table when its wait ends, however it ends.
struct Leave<'a> {
    pending: &'a PendingQuestions,
    question: &'a Question,
}

impl Drop for Leave<'_> {
    fn drop(&mut self) {
        self.pending.remove(self.question);
    }
}

/// One question: ids are unique within a session.
fn same(a: &Question, b: &Question) -> bool {
    a.session == b.session && a.id == b.id
}

impl Asker for PendingQuestions {
    fn ask<'a>(
        &'a self,
        question: &'a Question,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<String, AskError>> {
        Box::pin(PendingQuestions::ask(self, question, cancel))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn question(session: &str, id: &str) -> Question {
        Question {
            session: session.into(),
            id: id.into(),
            question: format!("question {id}?"),
            options: Vec::new(),
        }
    }

    /// Start asking `q` on a task; returns once the question is in the table.
    async fn asking(
        pending: &PendingQuestions,
        q: Question,
        cancel: CancellationToken,
    ) -> tokio::task::JoinHandle<Result<String, AskError>> {
        let mut changes = pending.changes();
        let id = q.id.clone();
        let task = {
            let pending = pending.clone();
            tokio::spawn(async move { pending.ask(&q, &cancel).await })
        };
        changes.wait_for(|list| list.iter().any(|q| q.id == id)).await.unwrap();
        task
    }

    #[tokio::test]
    async fn the_only_pending_question_gets_an_answer_without_an_id() {
        let pending = PendingQuestions::new();
        assert_eq!(pending.answer(None, "early"), Err(NoSuchQuestion::NonePending));
        let task = asking(&pending, question("s", "q1"), CancellationToken::new()).await;
        assert_eq!(pending.pending(), vec![question("s", "q1")]);
        pending.answer(None, "blue").unwrap();
        assert_eq!(task.await.unwrap(), Ok("blue".to_owned()));
        assert!(pending.pending().is_empty());
        assert_eq!(pending.answer(None, "again"), Err(NoSuchQuestion::NonePending));
    }

    #[tokio::test]
    async fn answers_are_routed_by_id_and_ambiguity_is_refused() {
        let pending = PendingQuestions::new();
        let a = asking(&pending, question("s1", "a"), CancellationToken::new()).await;
        let b = asking(&pending, question("s2", "b"), CancellationToken::new()).await;
        assert_eq!(
            pending.answer(None, "?"),
            Err(NoSuchQuestion::Ambiguous { pending: vec!["a".into(), "b".into()] })
        );
        assert_eq!(
            pending.answer(Some("zz"), "?"),
            Err(NoSuchQuestion::Unknown { id: "zz".into(), pending: vec!["a".into(), "b".into()] })
        );
        pending.answer(Some("b"), "for b").unwrap();
        assert_eq!(b.await.unwrap(), Ok("for b".to_owned()));
        // Scoped to a session: s2 has nothing left, s1's only question needs no id.
        assert_eq!(pending.answer_in("s2", None, "x"), Err(NoSuchQuestion::NonePending));
        assert!(matches!(
            pending.answer_in("s2", Some("a"), "x"),
            Err(NoSuchQuestion::Unknown { .. })
        ));
        pending.answer_in("s1", None, "for a").unwrap();
        assert_eq!(a.await.unwrap(), Ok("for a".to_owned()));
    }

    #[tokio::test]
    async fn cancel_and_drop_take_the_question_out() {
        let pending = PendingQuestions::new();
        let cancel = CancellationToken::new();
        let task = asking(&pending, question("s", "q"), cancel.clone()).await;
        cancel.cancel();
        assert_eq!(task.await.unwrap(), Err(AskError::Cancelled));
        assert!(pending.pending().is_empty());

        let task = asking(&pending, question("s", "q"), CancellationToken::new()).await;
        task.abort();
        let _ = task.await;
        assert!(pending.pending().is_empty(), "a dropped wait leaves no question behind");
        assert_eq!(
            pending.answer(Some("q"), "late"),
            Err(NoSuchQuestion::Unknown { id: "q".into(), pending: vec![] })
        );
    }

    #[tokio::test]
    async fn sessions_may_reuse_an_id_and_the_session_route_tells_them_apart() {
        let pending = PendingQuestions::new();
        let a = asking(&pending, question("s1", "call-1"), CancellationToken::new()).await;
        let mut changes = pending.changes();
        let b = {
            let pending = pending.clone();
            tokio::spawn(async move {
                pending.ask(&question("s2", "call-1"), &CancellationToken::new()).await
            })
        };
        changes.wait_for(|list| list.len() == 2).await.unwrap();
        assert!(matches!(
            pending.answer(Some("call-1"), "?"),
            Err(NoSuchQuestion::Ambiguous { .. })
        ));
        pending.answer_in("s2", Some("call-1"), "for s2").unwrap();
        assert_eq!(b.await.unwrap(), Ok("for s2".to_owned()));
        pending.answer(Some("call-1"), "for s1").unwrap();
        assert_eq!(a.await.unwrap(), Ok("for s1".to_owned()));
    }

    #[tokio::test]
    async fn a_second_question_with_the_same_id_is_refused() {
        let pending = PendingQuestions::new();
        let _first = asking(&pending, question("s", "q"), CancellationToken::new()).await;
        let second = pending.ask(&question("s", "q"), &CancellationToken::new()).await;
        assert!(
            matches!(second, Err(AskError::Unavailable(ref m)) if m.contains("`q`")),
            "{second:?}"
        );
        assert_eq!(pending.pending().len(), 1);
    }

    #[test]
    fn errors_read_well() {
        assert_eq!(
            AskError::Declined(Some("not now".into())).to_string(),
            "the user declined to answer: not now"
        );
        assert_eq!(AskError::Declined(None).to_string(), "the user declined to answer");
        assert_eq!(
            AskError::TimedOut(Duration::from_secs(600)).to_string(),
            "the user did not answer within 600 s"
        );
    }
}
