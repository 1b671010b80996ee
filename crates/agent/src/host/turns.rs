//! Turns and calls: recording what the loop does, running a turn on its own task, direct
//! tool calls, aborts and the session's processes.

use super::*;

/// Turns what the loop reports into stored messages, tool-call records and events.
pub(super) struct TurnRecorder {
    pub(super) live: Arc<Live>,
    pub(super) hub: Arc<Hub>,
    pub(super) store: Arc<dyn Store>,
    pub(super) session_id: String,
    pub(super) turn_id: Option<String>,
    /// The store's id of each call in flight, by the model's id for it: models' ids are not
    /// unique across sessions or even turns (local servers number them `call_0`, `call_1`, …).
    pub(super) record_ids: Mutex<HashMap<String, String>>,
}

impl TurnRecorder {
    pub(super) async fn started(&self, id: &str, name: &str, args: &Value) {
        let record_id = fresh_id("call");
        lock(&self.record_ids).insert(id.to_owned(), record_id.clone());
        let record = ToolCallRecord {
            id: record_id,
            session_id: self.session_id.clone(),
            turn_id: self.turn_id.clone(),
            name: name.to_owned(),
            args: args.clone(),
            result: None,
            is_error: None,
            started_at_ms: now_ms(),
            duration_ms: None,
        };
        if let Err(err) = self.store.start_tool_call(record).await {
            tracing::warn!(session = %self.session_id, call = id, %err, "storing a tool call");
        }
        self.hub
            .emit(EventKind::ToolCallStarted {
                turn_id: self.turn_id.clone(),
                call_id: id.to_owned(),
                name: name.to_owned(),
                args: args.clone(),
            })
            .await;
    }

    pub(super) async fn finished(
        &self,
        id: &str,
        name: &str,
        output: &ToolOutput,
        duration: Duration,
    ) {
        let duration_ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
        let result = serde_json::to_value(output).unwrap_or(Value::Null);
        let record_id = lock(&self.record_ids).remove(id).unwrap_or_else(|| id.to_owned());
        if let Err(err) =
            self.store.finish_tool_call(&record_id, result, output.is_error, duration_ms).await
        {
            tracing::warn!(session = %self.session_id, call = id, %err, "storing a tool result");
        }
        self.hub
            .emit(EventKind::ToolCallFinished {
                turn_id: self.turn_id.clone(),
                call_id: id.to_owned(),
                name: name.to_owned(),
                duration_ms,
                is_error: output.is_error,
                summary: turn::summary(output),
            })
            .await;
        // The registry moves queued notices onto results; announce them too, as the loop does
        // for those it injects itself.
        for notice in &output.notices {
            self.hub.emit(EventKind::ProcessNotice { text: notice.text.clone() }).await;
        }
        self.live.sync().await;
    }
}

impl Observer for TurnRecorder {
    fn text(&self, delta: String) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let turn_id = self.turn_id.clone().unwrap_or_default();
            self.hub.emit(EventKind::TextDelta { turn_id, text: delta }).await;
        })
    }

    fn notice(&self, text: String) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.hub.emit(EventKind::ProcessNotice { text }).await;
        })
    }

    fn call_started<'a>(&'a self, call: &'a ToolUse) -> BoxFuture<'a, ()> {
        Box::pin(self.started(&call.id, &call.name, &call.input))
    }

    fn call_finished<'a>(
        &'a self,
        call: &'a ToolUse,
        output: &'a ToolOutput,
        duration: Duration,
    ) -> BoxFuture<'a, ()> {
        Box::pin(self.finished(&call.id, &call.name, output, duration))
    }

    fn messages<'a>(&'a self, new: &'a [Message]) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            for message in new {
                let value = serde_json::to_value(message).unwrap_or(Value::Null);
                if let Err(err) = self
                    .store
                    .append_message(&self.session_id, self.turn_id.as_deref(), value)
                    .await
                {
                    tracing::warn!(session = %self.session_id, %err, "storing a message");
                    self.hub
                        .emit(EventKind::Error {
                            turn_id: self.turn_id.clone(),
                            message: format!(
                                "a message of this session could not be stored ({err}); a resumed \
                                 session will miss it"
                            ),
                        })
                        .await;
                }
            }
        })
    }
}

/// One turn on its own task.
pub(super) struct TurnTask {
    pub(super) parts: HostParts,
    pub(super) provider: Arc<dyn Provider>,
    pub(super) live: Arc<Live>,
    pub(super) turn_id: String,
    pub(super) text: String,
    pub(super) cancel: CancellationToken,
    pub(super) done: watch::Sender<Option<String>>,
}

impl TurnTask {
    pub(super) async fn run(self) {
        let hub = Arc::clone(&self.live.hub);
        let store = Arc::clone(&self.parts.store);
        let turn_id = self.turn_id.clone();
        let (status, text, error): (String, _, _) =
            match std::panic::AssertUnwindSafe(self.turn()).catch_unwind().await {
                Ok(outcome) => (outcome.reason.as_str().to_owned(), outcome.text, outcome.error),
                Err(_) => (
                    "error".to_owned(),
                    None,
                    Some("hands failed inside the turn (a bug); send the message again".into()),
                ),
            };
        if let Some(message) = error {
            hub.emit(EventKind::Error { turn_id: Some(turn_id.clone()), message }).await;
        }
        if let Err(err) = store.end_turn(&turn_id, &status, now_ms()).await {
            tracing::warn!(turn = %turn_id, %err, "storing the end of a turn");
        }
        // The turn is over before anyone hears so: a client that posts its next message as soon
        // as it sees turn_ended must not find this turn still running.
        {
            let mut state = lock(&self.live.turn);
            if state.running.as_ref().is_some_and(|r| r.id == turn_id) {
                state.running = None;
            }
            state.last_status = Some(status.clone());
        }
        hub.emit(EventKind::TurnEnded { turn_id: turn_id.clone(), reason: status.clone(), text })
            .await;
        self.done.send_replace(Some(status));
    }

    pub(super) async fn turn(&self) -> turn::Outcome {
        let session = &self.live.session;
        let prompt = SystemPrompt::load(session.root()).await;
        let render = |mode: Mode| prompt.render(mode);
        let recorder = TurnRecorder {
            live: Arc::clone(&self.live),
            hub: Arc::clone(&self.live.hub),
            store: Arc::clone(&self.parts.store),
            session_id: session.id().to_owned(),
            turn_id: Some(self.turn_id.clone()),
            record_ids: Mutex::default(),
        };
        let turn = Turn {
            provider: self.provider.as_ref(),
            registry: &self.parts.registry,
            session,
            turn_id: &self.turn_id,
            cancel: self.cancel.clone(),
            limits: self.parts.config.limits(),
            prompt: &render,
            scope: ToolScope::Mode,
            call_prefix: None,
            observer: &recorder,
        };
        let mut conversation = self.live.conversation.lock().await;
        turn.run(&mut conversation, Message::user(self.text.clone())).await
    }
}

impl Host {
    /// Start a turn with this user message; returns the turn id at once. `Conflict` when a turn
    /// is running, `NoModel` without a provider.
    pub async fn post_message(&self, id: &str, text: String) -> HostResult<String> {
        let live = self.live(id).await?;
        let Some(provider) = self.parts.provider.clone() else { return Err(HostError::NoModel) };
        if text.trim().is_empty() {
            return Err(HostError::BadRequest("the message is empty".into()));
        }
        let turn_id = fresh_id("turn");
        let (done_tx, done_rx) = watch::channel(None);
        {
            let mut state = lock(&live.turn);
            if let Some(running) = &state.running {
                return Err(HostError::Conflict(format!(
                    "turn {} is still running in session {id}: wait for it to end, or abort it",
                    running.id
                )));
            }
            state.running = Some(Running { id: turn_id.clone(), done: done_rx });
        }
        let cancel = live.session.cancel_token();
        let started = async {
            self.parts
                .store
                .start_turn(TurnRecord {
                    id: turn_id.clone(),
                    session_id: id.to_owned(),
                    status: "running".into(),
                    user_message: text.clone(),
                    started_at_ms: now_ms(),
                    ended_at_ms: None,
                })
                .await?;
            let title = lock(&live.record).title.is_none().then(|| title_of(&text));
            if let Some(title) = &title {
                self.parts.store.update_session(id, None, Some(title)).await?;
                lock(&live.record).title = Some(title.clone());
            }
            StoreResult::Ok(())
        };
        if let Err(err) = started.await {
            lock(&live.turn).running = None;
            return Err(err.into());
        }
        lock(&live.record).updated_at_ms = now_ms();
        live.hub
            .emit(EventKind::TurnStarted { turn_id: turn_id.clone(), message: text.clone() })
            .await;
        let task = TurnTask {
            parts: self.parts.clone(),
            provider,
            live: Arc::clone(&live),
            turn_id: turn_id.clone(),
            text,
            cancel,
            done: done_tx,
        };
        tokio::spawn(task.run());
        Ok(turn_id)
    }

    /// Wait until the session's running turn (if any) ends; returns its final status (without a
    /// running turn: how the last turn of this process ended, or of the stored ones; `None` when
    /// the session never had one).
    pub async fn wait_turn(&self, id: &str) -> HostResult<Option<String>> {
        let live = self.live(id).await?;
        if let Some(status) = live.wait_turn(None).await {
            return Ok(Some(status));
        }
        let turns = self.parts.store.turns(id).await?;
        Ok(turns.last().map(|t| t.status.clone()))
    }

    /// A direct tool call for clients that run their own loop; `turn_id` scopes de-duplication.
    /// It emits the same events and records as a call of the loop.
    pub async fn call_tool(
        &self,
        id: &str,
        turn_id: Option<String>,
        name: &str,
        args: Value,
    ) -> HostResult<ToolOutput> {
        // An empty turn id is no turn (its events carry none, it scopes no de-duplication).
        let turn_id = turn_id.filter(|turn| !turn.is_empty());
        let live = self.live(id).await?;
        let call_id = fresh_id("call");
        let recorder = TurnRecorder {
            live: Arc::clone(&live),
            hub: Arc::clone(&live.hub),
            store: Arc::clone(&self.parts.store),
            session_id: id.to_owned(),
            turn_id: turn_id.clone(),
            record_ids: Mutex::default(),
        };
        recorder.started(&call_id, name, &args).await;
        let started = std::time::Instant::now();
        let call = ToolCall { id: call_id.clone(), name: name.to_owned(), args, turn: turn_id };
        struct InFlight<'a>(&'a AtomicU64);
        impl Drop for InFlight<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        live.direct_calls.fetch_add(1, Ordering::SeqCst);
        let in_flight = InFlight(&live.direct_calls);
        let output = match self.parts.registry.dispatch(&live.session, call).await {
            Ok(output) => output,
            Err(err) => ToolOutput::error(format!("hands could not run {name}: {err}")),
        };
        drop(in_flight);
        recorder.finished(&call_id, name, &output, started.elapsed()).await;
        Ok(output)
    }

    /// Abort the session's turn and calls in flight and stop its processes. Waits (a few
    /// seconds at most) for the aborted turn to be recorded as ended.
    pub async fn abort_session(&self, id: &str) -> HostResult<()> {
        let live = lock(&self.live).get(id).cloned();
        match live {
            Some(live) => {
                self.abort_live(&live).await;
                Ok(())
            }
            // Not live: nothing runs. Still a 404 for a session that does not exist.
            None => self.stored(id).await.map(|_| ()),
        }
    }

    /// Abort every live session of a project; returns how many of them had something to abort
    /// (a turn, a direct call in flight, a running background process). 0 is fine: an idle
    /// project, or one whose sessions are not loaded.
    pub async fn abort_project(&self, project_id: &str) -> HostResult<usize> {
        let sessions: Vec<Arc<Live>> = lock(&self.live)
            .values()
            .filter(|l| l.session.project() == project_id)
            .cloned()
            .collect();
        let busy =
            futures_util::future::join_all(sessions.iter().map(|l| self.abort_live(l))).await;
        Ok(busy.into_iter().filter(|&b| b).count())
    }

    /// The session's background processes (none when background processes are off).
    pub async fn list_processes(&self, id: &str) -> HostResult<ProcessList> {
        let live = self.live(id).await?;
        Ok(match self.processes() {
            Some(processes) => processes.list(&live.session).await,
            None => ProcessList::default(),
        })
    }

    /// Stop one of them. `NotFound` for an unknown process id.
    pub async fn stop_process(&self, id: &str, process_id: &str) -> HostResult<ProcessStopped> {
        let live = self.live(id).await?;
        let Some(processes) = self.processes() else {
            return Err(HostError::BadRequest(
                "background processes are off (background_processes = false)".into(),
            ));
        };
        processes.stop(&live.session, process_id).await.map_err(|err| match err {
            ProcessError::NotFound(message) => HostError::NotFound(message),
        })
    }

    /// The process service the tools installed, if background processes are on.
    fn processes(&self) -> Option<Arc<dyn ProcessService>> {
        self.parts.registry.service::<Arc<dyn ProcessService>>()
    }

    /// Abort what runs in a live session: its calls and turn (the session's abort generation),
    /// then its background processes (each running one stopped). True when something
    /// was running.
    pub(super) async fn abort_live(&self, live: &Live) -> bool {
        let mut busy = live.running().is_some() || live.direct_calls.load(Ordering::SeqCst) > 0;
        live.session.abort();
        if let Some(processes) = self.processes() {
            busy |= processes.stop_running(&live.session).await > 0;
        }
        live.wait_turn(Some(ABORT_WAIT)).await;
        busy
    }
}
