//! `hands run "task"`: one turn of the agent loop on the terminal. A session host over the
//! configured store and model (the same [`Host`] that serves `hands serve`'s session API), one
//! session created or resumed, the task posted as its user message, and the session's events
//! printed as they come ([`View`]): the model's text on stdout, one line per tool call on stderr
//! (a spinner while a call runs long, when stderr is a terminal). The host's approvals and
//! ask_user's questions are put to the person at the terminal and answered through the host
//! ([`Asks`]). Ctrl-C aborts the turn (its calls and processes), a second one quits at once.
//! `hands chat` ([`crate::chat`]) runs the same turns in a loop.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use hands_agent::event::EventKind;
use hands_agent::host::{Host, HostError, HostParts, NewSession};
use hands_agent::model::Provider;
use hands_agent::provider::ModelConfig;
use hands_core::approval::Decision;
use hands_core::ask::{AskError, Asker, AskerHandle, Question};
use hands_core::secret::{SecretAsker, SecretAskerHandle, SecretRequest, SecretValue};
use hands_core::{BoxFuture, CancellationToken, Mode, Registry};
use hands_store::{Store, StoreConfig};
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::task::JoinHandle;

use crate::approve::{self, Lines};
use crate::settings::{self, Settings};
use crate::term;
use crate::view::{SPIN_EVERY, View};

/// What `hands run` and `hands chat` are built from.
pub struct Setup {
    /// The tools.
    pub registry: Registry,
    /// The project root (new sessions are bound to it).
    pub root: PathBuf,
    /// `[model]`, `[store]`, `[agent]`.
    pub settings: Settings,
}

/// A new session, or one to resume.
pub enum Start {
    /// Create a session (with this id, when given) in this mode.
    New {
        /// `--session-id`.
        id: Option<String>,
        /// `--mode`.
        mode: Mode,
    },
    /// Go on with a stored session.
    Resume {
        /// `--resume`.
        id: String,
        /// `--mode`, when given: switch to it.
        mode: Option<Mode>,
    },
}

/// `hands run`: create or resume a session, run `task` as one turn, print it. Exit 0 when the
/// turn completed, 1 when it failed or ran out of steps, 130 when it was aborted.
pub fn run(setup: Setup, start: Start, task: String) -> Result<ExitCode> {
    block_on(async move {
        let mut interrupts = interrupts()?;
        let agent = Agent::start(setup, start, Prompter::terminal()).await?;
        let reason = agent.turn(task, &mut interrupts).await;
        agent.host.close().await;
        let code = match &reason {
            Ok(reason) => {
                explain(reason);
                exit_code(reason)
            }
            Err(err) => {
                term::errln(&format!("hands: {err:#}"));
                1
            }
        };
        if let Some(line) =
            crate::checkpoints::turn_changes(&agent.preview.0, &agent.checkpoints, &agent.id)
        {
            term::errln(&line);
        }
        term::errln(&format!("resume with: hands run --resume {} \"…\"", agent.id));
        Ok(ExitCode::from(code))
    })
}

/// Run `work` on a runtime of its own, then shut it down without waiting for a stuck task.
pub fn block_on(work: impl Future<Output = Result<ExitCode>>) -> Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let result = runtime.block_on(work);
    runtime.shutdown_timeout(Duration::from_millis(500));
    result
}

/// Ctrl-C, caught: from here on it aborts turns instead of killing hands.
pub fn interrupts() -> Result<Signal> {
    signal(SignalKind::interrupt()).context("cannot catch Ctrl-C (SIGINT)")
}

/// The exit code for a turn that ended with `reason`.
pub fn exit_code(reason: &str) -> u8 {
    match reason {
        "completed" => 0,
        "aborted" => 130,
        _ => 1,
    }
}

/// A line on stderr for a turn that did not complete (an error was printed when it came).
pub fn explain(reason: &str) {
    match reason {
        "aborted" => term::errln("hands: the turn was aborted"),
        "max_steps" => term::errln(
            "hands: the turn stopped after agent.max_steps model calls; resume the session to \
             let it go on, or raise agent.max_steps",
        ),
        _ => {}
    }
}

/// The model `[model]` names, or an error that says how to name one.
pub fn provider(model: &ModelConfig) -> Result<Arc<dyn Provider>> {
    if model.model.trim().is_empty() {
        let file = settings::user_config_file()
            .map_or_else(|| "~/.config/hands/config.toml".to_owned(), |p| p.display().to_string());
        bail!(
            "no model is configured: the agent needs [model] provider and model in {file}, e.g.\n\n\
             [model]\nprovider = \"anthropic\"        # or \"openai\" (also Ollama, vLLM, LM Studio)\n\
             model = \"claude-sonnet-4-5\"\napi_key_env = \"ANTHROPIC_API_KEY\"\n\n\
             (or HANDS_MODEL__PROVIDER / HANDS_MODEL__MODEL, or -c model.model=…). A project's \
             .hands/config.toml cannot set [model]."
        );
    }
    hands_agent::provider::from_config(model).context("cannot use [model]")
}

/// The session store `config` names, or an error that says which setting to change.
pub(crate) fn open_store(config: &StoreConfig) -> Result<Arc<dyn Store>> {
    hands_store::open_store(config).with_context(|| {
        format!(
            "cannot open the session store {}: set [store] path to a writable file, or \
             backend = \"memory\" to keep sessions only while hands runs",
            config.path.display()
        )
    })
}

/// The root a stored session is bound to, when the store has it (for `--resume` without
/// `--root`); `None` when it does not (the resume then says so).
pub fn stored_root(config: &StoreConfig, id: &str) -> Result<Option<PathBuf>> {
    let store = open_store(config)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let record = runtime.block_on(store.get_session(id)).ok();
    Ok(record.map(|r| PathBuf::from(r.root)))
}

/// Where approvals and questions are answered.
pub enum Prompter {
    /// Nobody: approvals are denied, ask_user is told to go on by itself.
    Nobody,
    /// The terminal, opened at the first prompt.
    Terminal(OnceLock<Option<Arc<Lines>>>),
    /// These lines (the chat's input, when it is the terminal).
    Lines(Arc<Lines>),
}

impl Prompter {
    /// The terminal, when a person is at one; else nobody.
    pub fn terminal() -> Self {
        if approve::terminal_available() { Self::Terminal(OnceLock::new()) } else { Self::Nobody }
    }

    fn available(&self) -> bool {
        !matches!(self, Self::Nobody)
    }

    fn lines(&self) -> Option<Arc<Lines>> {
        match self {
            Self::Nobody => None,
            Self::Terminal(lines) => lines.get_or_init(Lines::terminal).clone(),
            Self::Lines(lines) => Some(Arc::clone(lines)),
        }
    }
}

/// ask_user's asker when nobody is at a terminal: the model is told at once to go on by itself.
struct NobodyAsker;

impl Asker for NobodyAsker {
    fn ask<'a>(
        &'a self,
        _question: &'a Question,
        _cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<String, AskError>> {
        Box::pin(std::future::ready(Err(AskError::NoOneToAsk)))
    }
}

/// The secrets tool's asker when nobody is at a terminal: the model is told at once that the user
/// stores the secret with `hands secrets set NAME`.
struct NobodySecretAsker;

impl SecretAsker for NobodySecretAsker {
    fn request<'a>(
        &'a self,
        _request: &'a SecretRequest,
        _cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<SecretValue, AskError>> {
        Box::pin(std::future::ready(Err(AskError::NoOneToAsk)))
    }
}

/// What a session host of `hands run`, `hands chat` and `hands acp` is built from: the model
/// `[model]` names (first: without one nothing can run), the store, the tools and `[agent]`.
pub fn host_parts(registry: Registry, settings: &Settings) -> Result<HostParts> {
    let provider = provider(&settings.model)?;
    Ok(HostParts {
        store: open_store(&settings.store)?,
        registry: Arc::new(registry),
        provider: Some(provider),
        config: settings.agent.clone(),
        checkpoints: settings.checkpoints.clone(),
    })
}

/// One session of a host, driven from the terminal.
pub struct Agent {
    /// The host.
    pub host: Arc<Host>,
    /// The session.
    pub id: String,
    prompter: Prompter,
    /// The project root and `[preview]`, to show what preview_open runs when it asks.
    preview: (PathBuf, hands_preview::PreviewConfig),
    /// The host's tools, for the terminal's labels of calls.
    registry: Arc<Registry>,
    /// `[checkpoints]`, to find the turn's checkpoints.
    pub checkpoints: hands_checkpoint::Settings,
    /// `approval`: under `auto`, a plan nobody can be asked about is accepted as it was before.
    approval: hands_core::config::Approval,
}

impl Agent {
    /// Build the host (model first: without one nothing can run) and create or resume the
    /// session.
    pub async fn start(setup: Setup, start: Start, prompter: Prompter) -> Result<Self> {
        let preview = (setup.root.clone(), setup.settings.preview.clone());
        let checkpoints = setup.settings.checkpoints.clone();
        let approval = setup.settings.approval;
        let parts = host_parts(setup.registry, &setup.settings)?;
        let registry = Arc::clone(&parts.registry);
        let host = Host::open(parts).await.context("cannot open the session host")?;
        let id = match start {
            Start::New { id, mode } => {
                let new = NewSession { id, project_id: None, root: setup.root, mode, title: None };
                match host.create_session(new).await {
                    Ok(info) => info.id,
                    Err(HostError::Conflict(message)) => {
                        bail!("{message}: resume it with --resume, or choose another id")
                    }
                    Err(err) => return Err(err).context("cannot create the session"),
                }
            }
            Start::Resume { id, mode } => {
                match host.get_session(&id).await {
                    Ok(_) => {}
                    Err(HostError::NotFound(_)) => bail!(
                        "no session `{id}` in the store {}: check the id (`hands run` prints it \
                         at the end) and that [store] is the same as when it ran",
                        setup.settings.store.path.display()
                    ),
                    Err(err) => return Err(err).context("cannot load the session"),
                }
                if let Some(mode) = mode {
                    host.session(&id).await?.set_mode(mode);
                }
                id
            }
        };
        if !prompter.available() {
            let session = host.session(&id).await?;
            session.insert_extension(AskerHandle(Arc::new(NobodyAsker)));
            session.insert_extension(SecretAskerHandle(Arc::new(NobodySecretAsker)));
        }
        Ok(Self { host, id, prompter, preview, registry, checkpoints, approval })
    }

    /// Post `text` and print the turn until it ends; how it ended (`completed`, `max_steps`,
    /// `aborted`, `error`). Ctrl-C aborts it; a second Ctrl-C quits hands at once.
    pub async fn turn(&self, text: String, interrupts: &mut Signal) -> Result<String> {
        // Only what happens from now on: the stored past is not printed again.
        let mut events = self.host.subscribe(&self.id, 0).await?;
        events.replay.clear();
        let mode = self.host.session(&self.id).await?.mode();
        let turn_id = self.host.post_message(&self.id, text).await?;
        let mut view = View::new(mode, Arc::clone(&self.registry));
        let mut asks = Asks::default();
        let mut tick = tokio::time::interval(SPIN_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut aborting = false;
        loop {
            tokio::select! {
                event = events.next() => {
                    let Some(event) = event else {
                        view.end();
                        bail!("the session {} was closed during the turn", self.id);
                    };
                    if let EventKind::TurnEnded { turn_id: ended, reason, .. } = &event.kind
                        && *ended == turn_id
                    {
                        asks.cancel(None);
                        view.end();
                        // The host lets go of the turn just after announcing its end: the next
                        // message must not find it still running.
                        self.host.wait_turn(&self.id).await?;
                        return Ok(reason.clone());
                    }
                    view.event(&event.kind);
                    self.follow(&mut asks, &mut view, &event.kind);
                }
                _ = tick.tick(), if view.spinning() && asks.is_idle() => view.spin(),
                _ = interrupts.recv() => {
                    if aborting {
                        view.end();
                        kill_now(&self.id);
                        term::errln(&format!(
                            "hands: quit; resume with: hands run --resume {} \"…\"",
                            self.id
                        ));
                        std::process::exit(130);
                    }
                    aborting = true;
                    asks.cancel(None);
                    view.note("hands: aborting the turn (Ctrl-C again quits at once)");
                    let host = Arc::clone(&self.host);
                    let id = self.id.clone();
                    tokio::spawn(async move {
                        if let Err(err) = host.abort_session(&id).await {
                            tracing::warn!(session = %id, %err, "aborting the session");
                        }
                    });
                }
                (ask, answer) = asks.answered() => self.settle(&mut asks, ask, answer),
            }
            if let Some(denied) = asks.start_next(&self.prompter) {
                self.deny_unasked(&mut view, denied);
            }
        }
    }

    /// Queue the prompts an event asks for, drop those that were settled elsewhere.
    fn follow(&self, asks: &mut Asks, view: &mut View, kind: &EventKind) {
        match kind {
            EventKind::ApprovalRequested {
                approval_id,
                tool,
                summary,
                details,
                session_allowable,
                ..
            } => {
                view.pause();
                // The event's summary is cut at 300 characters: the call's own arguments give
                // the whole of it.
                let mut summary = view.approval_text(tool).unwrap_or_else(|| summary.clone());
                // A tool whose arguments say nothing of what it runs (preview_open): show that.
                let (root, config) = &self.preview;
                if let Some(detail) = hands_preview::approval_detail(tool, root, config) {
                    summary = format!("{summary}\n{detail}");
                }
                // The whole argument a cut summary is followed by is shown already.
                if let Some(details) = details
                    && !summary.contains(details.as_str())
                {
                    summary = format!("{summary}\n{details}");
                }
                let plan = view.is_plan(tool);
                asks.queue.push_back(Ask::Approval {
                    id: approval_id.clone(),
                    summary,
                    plan,
                    session_tool: (*session_allowable && !plan).then(|| tool.clone()),
                });
            }
            EventKind::Question { question_id, question, options } => {
                view.pause();
                asks.queue.push_back(Ask::Question(Question {
                    session: self.id.clone(),
                    id: question_id.clone(),
                    question: question.clone(),
                    options: options.clone(),
                }));
            }
            EventKind::SecretRequested { request_id, name, description } => {
                view.pause();
                asks.queue.push_back(Ask::Secret {
                    id: request_id.clone(),
                    name: name.clone(),
                    description: description.clone(),
                });
            }
            EventKind::ApprovalDecided { approval_id: id, .. }
            | EventKind::QuestionAnswered { question_id: id }
            | EventKind::SecretAnswered { request_id: id }
            | EventKind::SecretDeclined { request_id: id } => asks.cancel(Some(id)),
            _ => {}
        }
    }

    /// Hand the person's answer to the host.
    fn settle(&self, asks: &mut Asks, ask: Ask, answer: Answer) {
        let result = match (&ask, answer) {
            (Ask::Secret { id, .. }, Answer::Secret(None)) => {
                self.host.decline_secret(&self.id, id).map(drop)
            }
            (Ask::Secret { id, .. }, Answer::Secret(Some(value))) => {
                match self.host.give_secret(&self.id, id, SecretValue::new(value)) {
                    // Too short: say so and ask again (the request still waits).
                    Err(HostError::BadRequest(why)) => {
                        term::errln(&format!("hands: {why}"));
                        asks.queue.push_front(ask);
                        return;
                    }
                    other => other.map(drop),
                }
            }
            (Ask::Approval { id, .. }, Answer::Decision(decision)) => {
                self.host.decide_with(&self.id, id, decision)
            }
            (Ask::Question(q), Answer::Text(text)) => {
                self.host.answer(Some(&self.id), Some(&q.id), text)
            }
            _ => return,
        };
        // Settled meanwhile (an abort): nothing waits for the answer any more.
        if let Err(err) = result {
            tracing::debug!(%err, "answer not delivered");
        }
    }

    /// Without a terminal: deny an approval with a reason, and say so.
    fn deny_unasked(&self, view: &mut View, ask: Ask) {
        match ask {
            Ask::Approval { id, plan: true, .. }
                if self.approval == hands_core::config::Approval::Auto =>
            {
                // A plan is asked about under `auto` too, where somebody can answer; here
                // nobody can, and `auto` lets it through as it always did.
                view.note(
                    "hands: the plan was accepted unasked: there is no terminal to ask on \
                     (approval = \"auto\")",
                );
                let _ = self.host.decide(&self.id, &id, true, None);
            }
            Ask::Approval { id, summary, .. } => {
                let summary = term::line(&summary);
                if view.hinted {
                    view.note(&format!("hands: denied {summary} (no terminal to ask on)"));
                } else {
                    view.hinted = true;
                    view.note(&format!(
                        "hands: denied {summary}: it needs approval (approval = \"ask\") and \
                         there is no terminal to ask on; set approval = \"auto\" (-c \
                         approval=auto or HANDS_APPROVAL=auto) to let the agent run such calls \
                         unasked"
                    ));
                }
                let reason = "nobody is at a terminal to approve it (hands runs without one); \
                              do without it, or tell the user to set approval = \"auto\"";
                let _ = self.host.decide(&self.id, &id, false, Some(reason.to_owned()));
            }
            Ask::Question(q) => {
                let _ = self.host.answer(Some(&self.id), Some(&q.id), String::new());
            }
            Ask::Secret { id, .. } => {
                let _ = self.host.decline_secret(&self.id, &id);
            }
        }
    }
}

/// Quit at once: SIGKILL every process this hands started for session `id` (found by the
/// markers in their environment: `HANDS_SESSION=<id>` and `HANDS_OWNER=<our pid>.…`), where the
/// abort would have given them a grace period first. Nothing is left behind to outlive hands.
fn kill_now(id: &str) {
    let own = std::process::id();
    let session = format!("HANDS_SESSION={id}");
    let owner = format!("HANDS_OWNER={own}.");
    let Ok(entries) = std::fs::read_dir("/proc") else { return };
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else { continue };
        let mut vars = environ.split(|b| *b == 0);
        let ours = vars.clone().any(|v| v == session.as_bytes())
            && vars.any(|v| v.starts_with(owner.as_bytes()));
        if ours && let Some(pid) = rustix::process::Pid::from_raw(pid) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
    }
}

/// A prompt the host waits on.
enum Ask {
    /// `session_tool`: the tool the person may allow for the rest of the session (`a`).
    Approval {
        id: String,
        summary: String,
        plan: bool,
        session_tool: Option<String>,
    },
    Question(Question),
    Secret {
        id: String,
        name: String,
        description: String,
    },
}

impl Ask {
    fn id(&self) -> &str {
        match self {
            Self::Approval { id, .. } => id,
            Self::Question(q) => &q.id,
            Self::Secret { id, .. } => id,
        }
    }
}

/// What the person said.
enum Answer {
    Decision(Decision),
    Text(String),
    /// A secret's value (never shown or logged), or `None`: declined.
    Secret(Option<String>),
    /// The prompt was given up.
    Gone,
}

/// The prompts of a turn: one on screen at a time, the rest queued.
#[derive(Default)]
struct Asks {
    queue: VecDeque<Ask>,
    active: Option<(Ask, JoinHandle<Answer>, Arc<Lines>)>,
}

impl Asks {
    fn is_idle(&self) -> bool {
        self.active.is_none() && self.queue.is_empty()
    }

    /// Show the next prompt when none is on screen; returns it instead when nobody can answer.
    fn start_next(&mut self, prompter: &Prompter) -> Option<Ask> {
        if self.active.is_some() {
            return None;
        }
        let ask = self.queue.pop_front()?;
        let Some(lines) = prompter.lines() else { return Some(ask) };
        let task = {
            let lines = Arc::clone(&lines);
            match &ask {
                Ask::Approval { summary, plan, session_tool, .. } => {
                    let (summary, plan, tool) = (summary.clone(), *plan, session_tool.clone());
                    tokio::spawn(async move {
                        let tool = tool.as_deref();
                        Answer::Decision(approve::ask_approval(&lines, &summary, plan, tool).await)
                    })
                }
                Ask::Question(q) => {
                    let q = q.clone();
                    tokio::spawn(
                        async move { Answer::Text(approve::ask_question(&lines, &q).await) },
                    )
                }
                Ask::Secret { name, description, .. } => {
                    let (name, description) = (name.clone(), description.clone());
                    tokio::spawn(async move {
                        Answer::Secret(
                            crate::secret_prompt::ask_secret(&lines, &name, &description).await,
                        )
                    })
                }
            }
        };
        self.active = Some((ask, task, lines));
        None
    }

    /// Give up the prompt `id` (all with `None`): it was settled elsewhere, or the turn ended.
    fn cancel(&mut self, id: Option<&str>) {
        self.queue.retain(|ask| id.is_some_and(|id| ask.id() != id));
        let hit = self.active.as_ref().is_some_and(|(ask, ..)| id.is_none_or(|id| ask.id() == id));
        if hit && let Some((_, task, lines)) = self.active.take() {
            task.abort();
            lines.show("(no longer asked)\n");
        }
    }

    /// The answer to the prompt on screen (pending while there is none).
    async fn answered(&mut self) -> (Ask, Answer) {
        let Some((_, task, _)) = self.active.as_mut() else {
            return std::future::pending().await;
        };
        let answer = task.await.unwrap_or(Answer::Gone);
        match self.active.take() {
            Some((ask, ..)) => (ask, answer),
            None => std::future::pending().await,
        }
    }
}

/// True when `a` and `b` are the same folder.
pub fn same_dir(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_the_end_of_the_turn() {
        assert_eq!(exit_code("completed"), 0);
        assert_eq!(exit_code("aborted"), 130);
        assert_eq!(exit_code("max_steps"), 1);
        assert_eq!(exit_code("error"), 1);
    }
}
