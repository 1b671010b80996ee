//! The MCP server: a hand-written rmcp [`ServerHandler`] over a [`Registry`]. One [`McpServer`]
//! serves one connection and owns one [`Session`]; `tools/list` comes from the session's mode,
//! `tools/call` goes through [`Registry::dispatch_with`] with the request's cancellation token and,
//! when the client asked for it, a rate-limited progress sink. A mode change, and a change of the
//! registry's live list (a remote server's new tools, a project that gained a preview), is
//! announced with `notifications/tools/list_changed`; under `approval = "ask"` the user is asked by elicitation.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use hands_core::approval::ApproverHandle;
use hands_core::{
    CallOptions, CancellationToken, DispatchError, Mode, Registry, Session, ToolCall, ToolSpec,
};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, GetTaskParams, GetTaskResult,
    Implementation, InitializeRequestParams, InitializeResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ServerCapabilities, ServerConfig, Tool, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler};
use serde_json::{Value, json};

use crate::approve::ElicitationApprover;
use crate::rounds::{Elicitor, ParkedCalls, Resumed, Running, Step};

/// Tools per `tools/list` page.
pub const PAGE_SIZE: usize = 100;

const INSTRUCTIONS: &str = "hands runs coding tools in one project root: read, search and edit \
files, run shell commands and background processes. Paths are relative to the root. Tool \
failures come back as results with isError and say what to do next. Plan mode restricts \
the tools to read-only research until the user approves a plan.";

/// What every connection of one server process shares: the registry, the root, the starting mode,
/// and the tool lists of both modes converted once per version of the registry's list.
pub struct ServerFactory {
    registry: Arc<Registry>,
    root: PathBuf,
    mode: Mode,
    converted: Mutex<Arc<Converted>>,
    /// Sessions of the connections alive now, closed together at shutdown.
    live: Mutex<HashMap<String, Session>>,
    /// Called at each connection's `initialize`.
    hook: Mutex<Option<SessionHook>>,
    /// The secrets tool's one-time pages, when an HTTP server serves them.
    secret_pages: crate::secret_page::SecretPages,
    /// Calls of 2026-07-28 clients waiting for the retry that answers them.
    parked: Arc<ParkedCalls>,
    /// The session of HTTP requests that come without an MCP session (2026-07-28 is stateless):
    /// they share it, so a process one starts is there for the next.
    stateless: std::sync::OnceLock<Session>,
    /// How often a long call tells a client that gave a progress token that it is alive.
    heartbeat: Duration,
    /// Calls run as tasks (the Tasks extension), polled with `tasks/get`.
    tasks: rmcp::task_manager::TaskManager,
    /// Which session started each task: only that session may read, answer or cancel it.
    task_owners: Mutex<HashMap<String, String>>,
    /// This node's id among several `hands serve` nodes: task ids and `requestState` name it.
    node: std::sync::OnceLock<String>,
}

/// Called at each connection's `initialize` with its session, the client and the client's
/// request: the binary fills it to give a session what needs the client — the client's sampling
/// as spawn_subagent's model, or hiding spawn_subagent when there is no model at all.
pub type SessionHook =
    Arc<dyn Fn(&Session, &Peer<RoleServer>, &InitializeRequestParams) + Send + Sync>;

impl ServerFactory {
    /// Record that `session` started task `task_id` (at most the newest 4,096 are kept).
    fn own_task(&self, task_id: &str, session: String) {
        let mut owners = self.task_owners.lock().unwrap_or_else(PoisonError::into_inner);
        if owners.len() >= 4096 {
            owners.clear();
        }
        owners.insert(task_id.to_owned(), session);
    }

    /// The secrets tool's one-time pages: [`router`](crate::router) serves them, and once
    /// `hands serve` sets their base, clients that declare URL elicitation are asked through them.
    pub fn secret_pages(&self) -> &crate::secret_page::SecretPages {
        &self.secret_pages
    }

    /// A factory serving `registry` over `root`; new sessions start in `mode`.
    pub fn new(registry: Arc<Registry>, root: impl Into<PathBuf>, mode: Mode) -> Arc<Self> {
        Arc::new(Self {
            converted: Mutex::new(Arc::new(Converted::of(&registry))),
            registry,
            root: root.into(),
            mode,
            live: Mutex::new(HashMap::new()),
            secret_pages: crate::secret_page::SecretPages::default(),
            hook: Mutex::new(None),
            parked: Arc::default(),
            stateless: std::sync::OnceLock::new(),
            heartbeat: crate::progress::heartbeat_from_env(),
            tasks: rmcp::task_manager::TaskManager::new(),
            task_owners: Mutex::default(),
            node: std::sync::OnceLock::new(),
        })
    }

    /// The root the server's tools work in (`--root` of `hands serve`, as given).
    pub fn root(&self) -> &std::path::Path {
        &self.root
    }

    /// Run as node `node` of several: the handles 2026-07-28 clients get back (a parked call's
    /// `requestState`, a task id) name it, so that any node can send the client's next request
    /// on to this one (see [`crate::node_of`]). Set once, before serving.
    pub fn set_node(&self, node: &str) {
        let _ = self.node.set(node.to_owned());
        self.parked.set_node(node);
    }

    fn node(&self) -> Option<&str> {
        self.node.get().map(String::as_str)
    }

    /// Set the hook run at each connection's `initialize` (replacing any earlier one).
    pub fn set_session_hook(&self, hook: SessionHook) {
        *self.hook.lock().unwrap_or_else(PoisonError::into_inner) = Some(hook);
    }

    /// A server for one new connection, with its own session.
    pub fn connection(self: &Arc<Self>) -> McpServer {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let id = format!("mcp-{}-{n}-{nanos:x}", std::process::id());
        let session = Session::new(id, self.root.clone());
        session.set_mode(self.mode);
        self.live().insert(session.id().to_owned(), session.clone());
        McpServer { factory: Arc::clone(self), session }
    }

    /// Close every live connection's session (at shutdown: their processes are stopped).
    pub async fn close_all(&self) {
        let sessions: Vec<Session> = self.live().drain().map(|(_, s)| s).collect();
        for session in sessions {
            session.close().await;
        }
    }

    /// The session shared by requests that come over HTTP without an MCP session.
    fn stateless_session(&self) -> Session {
        self.stateless
            .get_or_init(|| {
                let session = Session::new(
                    format!("mcp-{}-stateless", std::process::id()),
                    self.root.clone(),
                );
                session.set_mode(self.mode);
                self.live().insert(session.id().to_owned(), session.clone());
                session
            })
            .clone()
    }

    fn live(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The tools of both modes as MCP shows them, converted again when the registry's list
    /// changed (its sources look again first: a project that just gained a preview).
    fn tools(&self) -> Arc<Converted> {
        self.registry.recheck();
        let mut converted = self.converted.lock().unwrap_or_else(PoisonError::into_inner);
        if converted.version != self.registry.version() {
            *converted = Arc::new(Converted::of(&self.registry));
        }
        Arc::clone(&converted)
    }
}

/// The registry's tools of both modes as rmcp tools, at one version of its list.
struct Converted {
    version: u64,
    build: Vec<Tool>,
    plan: Vec<Tool>,
}

impl Converted {
    fn of(registry: &Registry) -> Self {
        // The version first: a change during the conversion makes the next listing convert again.
        let version = registry.version();
        let convert = |mode| registry.list(mode).iter().map(mcp_tool).collect();
        Self { version, build: convert(Mode::Build), plan: convert(Mode::Plan) }
    }

    fn get(&self, mode: Mode) -> &[Tool] {
        match mode {
            Mode::Build => &self.build,
            Mode::Plan => &self.plan,
        }
    }
}

/// The handler of one MCP connection. Dropping it closes its session (every process stopped).
pub struct McpServer {
    factory: Arc<ServerFactory>,
    session: Session,
}

impl McpServer {
    /// Refuse a task another session started, as if it did not exist (red-team round 3: a second
    /// MCP session read and cancelled the first one's task by its id); `Ok` with the task manager's
    /// id of the task (the one the client has without this node's tag).
    fn owned<'a>(
        &self,
        task_id: &'a str,
        context: &RequestContext<RoleServer>,
    ) -> Result<&'a str, ErrorData> {
        let session = self.session_for(context);
        let owners = self.factory.task_owners.lock().unwrap_or_else(PoisonError::into_inner);
        match (owners.get(task_id), crate::node::untagged(self.factory.node(), task_id)) {
            (Some(owner), Some(local)) if owner == session.id() => Ok(local),
            _ => Err(ErrorData::invalid_params(
                format!("unknown task `{}`", hands_core::redact::text(task_id)),
                None,
            )),
        }
    }

    /// This connection's session.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Announce tool-list changes whenever the session's mode or the registry's list changes,
    /// until the session closes or the peer is gone.
    fn watch_mode(&self, peer: Peer<RoleServer>) {
        let mut changes = self.session.mode_changes();
        let mut listed = self.factory.registry.subscribe();
        listed.borrow_and_update();
        let closed = self.session.closed_token().clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    changed = changes.changed() => {
                        if changed.is_err() { break }
                        changes.borrow_and_update();
                        if peer.notify_tool_list_changed().await.is_err() { break }
                    }
                    changed = listed.changed() => {
                        if changed.is_err() { break }
                        listed.borrow_and_update();
                        if peer.notify_tool_list_changed().await.is_err() { break }
                    }
                    () = closed.cancelled() => break,
                }
            }
        });
    }
}

impl Drop for McpServer {
    fn drop(&mut self) {
        self.factory.live().remove(self.session.id());
        if self.session.is_closed() {
            return;
        }
        let session = self.session.clone();
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move { session.close().await });
        }
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_tasks()
                .build(),
        )
        .with_server_info(Implementation::new("hands", env!("CARGO_PKG_VERSION")))
        .with_instructions(INSTRUCTIONS)
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        if request.capabilities.elicitation.is_some() {
            let approver = ElicitationApprover { elicitor: Elicitor::peer(context.peer.clone()) };
            self.session.insert_extension(ApproverHandle(Arc::new(approver)));
            let asker = crate::ask::ElicitationAsker::new(Elicitor::peer(context.peer.clone()));
            self.session.insert_extension(hands_core::ask::AskerHandle(Arc::new(asker)));
        }
        // A secret only ever through a page of ours (URL mode), never a form.
        let url_elicitation =
            request.capabilities.elicitation.as_ref().is_some_and(|e| e.url.is_some());
        if url_elicitation && self.factory.secret_pages.served() {
            let asker = crate::secret_page::UrlSecretAsker::new(
                Elicitor::peer(context.peer.clone()),
                self.factory.secret_pages.clone(),
            );
            self.session.insert_extension(hands_core::secret::SecretAskerHandle(Arc::new(asker)));
        }
        // A hands host serving a single `hands call` through this (inner, sandboxed) server: the
        // session is one-shot here too (no stale-write guard for a file never read, no
        // background process outliving the call).
        let one_shot = request
            .capabilities
            .experimental
            .as_ref()
            .and_then(|caps| caps.get(crate::client::listener::ONE_SHOT_CAPABILITY))
            .and_then(|flags| flags.get("oneShot"))
            .is_some_and(|flag| flag == &Value::Bool(true));
        if one_shot {
            self.session.mark_one_shot();
        }
        context.peer.set_peer_info(request.clone());
        let hook = self.factory.hook.lock().unwrap_or_else(PoisonError::into_inner).clone();
        if let Some(hook) = hook {
            self.session.extension::<Hooked>().0.store(true, Ordering::Relaxed);
            hook(&self.session, &context.peer, &request);
        }
        self.watch_mode(context.peer.clone());
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let session = self.session_for(&context);
        self.hook_once(&session, &context);
        let converted = self.factory.tools();
        let all = converted.get(session.mode());
        let shown: Vec<Tool>;
        let tools: &[Tool] = if all.iter().any(|t| session.is_tool_hidden(&t.name)) {
            shown = all.iter().filter(|t| !session.is_tool_hidden(&t.name)).cloned().collect();
            &shown
        } else {
            all
        };
        let start = match request.and_then(|r| r.cursor) {
            None => 0,
            Some(cursor) => {
                cursor.parse::<usize>().ok().filter(|n| *n <= tools.len()).ok_or_else(|| {
                    ErrorData::invalid_params(format!("invalid cursor {cursor:?}"), None)
                })?
            }
        };
        let end = (start + PAGE_SIZE).min(tools.len());
        let mut result = ListToolsResult::with_all_items(tools[start..end].to_vec());
        if end < tools.len() {
            result.next_cursor = Some(end.to_string());
        }
        Ok(result)
    }

    // hands offers no resources or prompts (skills reach the model through `use_skill`), but
    // clients probe for them anyway (Gemini CLI, the Inspector): an empty list is the true answer,
    // where rmcp's default method-not-found is logged as a WARN line on every probe.
    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::default())
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::default())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::default())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let registry = &self.factory.registry;
        let session = self.session_for(&context);
        self.hook_once(&session, &context);
        // Unknown now: the sources look again (list) before the answer is no.
        if !registry.contains(&request.name)
            && let offered = registry.list(session.mode())
            && !registry.contains(&request.name)
        {
            let offered: Vec<&str> = offered.iter().map(|spec| spec.name.as_str()).collect();
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool `{}`; available: {}",
                    hands_core::redact::text(&request.name),
                    offered.join(", ")
                ),
                None,
            ));
        }
        let token = request
            .meta
            .as_ref()
            .and_then(|meta| meta.get_progress_token())
            .or_else(|| context.meta.get_progress_token());
        // A hands proxy asks for what the tool had if it cancels the call (see below).
        let wants_partial =
            [request.meta.as_deref(), Some(&*context.meta)].into_iter().flatten().any(|meta| {
                meta.get(crate::client::listener::PARTIAL_META) == Some(&Value::Bool(true))
            });
        // Progress goes to the request that gave the token, not past its answer.
        let stop = CancellationToken::new();
        let _stop = stop.clone().drop_guard();
        let (sink, forwarder) = match token {
            Some(token) => {
                let (sink, forwarder) = crate::progress::sink(
                    context.peer.clone(),
                    token,
                    self.factory.heartbeat,
                    stop.clone(),
                );
                (Some(sink), Some(forwarder))
            }
            None => (None, None),
        };
        let args =
            request.arguments.map_or_else(|| Value::Object(Default::default()), Value::Object);
        let binding = crate::rounds::binding(session.id(), &request.name, &args);
        // A retry of a call that asked (2026-07-28): the answer goes to that call.
        if let Some(state) = &request.request_state {
            return match self.factory.parked.resume(state, binding, request.input_responses)? {
                Resumed::AskedAgain(question) => Ok(CallToolResponse::InputRequired(question)),
                Resumed::Answered(running) => self.drive(running, binding, &context).await,
            };
        }
        // SEP-414: the client's W3C trace context in `_meta` (a malformed one is ignored).
        let trace = [request.meta.as_deref(), Some(&*context.meta)]
            .into_iter()
            .flatten()
            .find_map(|meta| hands_core::telemetry::TraceParent::from_meta(meta));
        let call = ToolCall::new(["mcp-", &session.next_call_id()].concat(), request.name, args);
        let call = registry.prepare(&session, call);
        let rounds = asks_in_rounds(&context);
        if rounds {
            self.install_round_askers(&session, &context);
        }
        let tasks = context.client_capabilities().is_some_and(|caps| caps.supports_tasks());
        if tasks && call.policy().outlasts {
            let registry = Arc::clone(&self.factory.registry);
            let owner = session.id().to_owned();
            let mut task = crate::tasks::start(&self.factory.tasks, registry, session, call, trace);
            task.task.task_id = crate::node::tagged(self.factory.node(), &task.task.task_id);
            self.factory.own_task(&task.task.task_id, owner);
            return Ok(CallToolResponse::Task(task));
        }
        if rounds {
            // The call's own token: it outlives the request that started it.
            let cancel = CancellationToken::new();
            let options = CallOptions { progress: sink, cancel: Some(cancel.clone()) };
            let registry = Arc::clone(&self.factory.registry);
            let run = async move { registry.run(&session, call, options).await };
            let running =
                Running::start(hands_core::telemetry::with_remote_parent(trace, run), cancel);
            drop(forwarder);
            return self.drive(running, binding, &context).await;
        }
        let cancel = context.ct.clone();
        cancel_when_client_gone(&context, &cancel);
        let options = CallOptions { progress: sink, cancel: Some(cancel) };
        // A model reads notices as text: `[notice] …` blocks after the result's own.
        let result =
            hands_core::telemetry::with_remote_parent(trace, registry.run(&session, call, options))
                .await
                .map(hands_core::ToolOutput::notices_as_text);
        if let Some(forwarder) = forwarder {
            // Let the last reports go out before the result; the sink is gone with the call.
            let _ = tokio::time::timeout(Duration::from_millis(200), forwarder).await;
        }
        if wants_partial
            && context.ct.is_cancelled()
            && let Ok(output) = &result
        {
            // rmcp sends no response to a cancelled request, as MCP says; the partial result
            // (what bash printed before it was stopped, and the aborted note) goes to the
            // client that asked for it as a notification instead.
            let params = json!({"requestId": context.id, "result": output});
            let notification = rmcp::model::CustomNotification::new(
                crate::client::listener::PARTIAL_METHOD,
                Some(params),
            );
            let _ = context
                .peer
                .send_notification(rmcp::model::ServerNotification::CustomNotification(
                    notification,
                ))
                .await;
        }
        response(result)
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let local = self.owned(&request.task_id, &context)?;
        let mut task = self.factory.tasks.get_task(local)?;
        task.task.task_id = request.task_id;
        Ok(GetTaskResult::new(task))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let local = self.owned(&request.task_id, &context)?;
        self.factory.tasks.update_task(local, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let local = self.owned(&request.task_id, &context)?;
        self.factory.tasks.cancel_task(local)
    }
}

/// A call's result as the `tools/call` response.
fn response(
    result: Result<hands_core::ToolOutput, DispatchError>,
) -> Result<CallToolResponse, ErrorData> {
    match result {
        Ok(output) => Ok(CallToolResponse::Complete(crate::output::to_call_tool_result(output))),
        Err(DispatchError::Fatal(message)) => Err(ErrorData::internal_error(message, None)),
    }
}

/// Whether this request's client is asked in input-required rounds: it speaks 2026-07-28 or
/// later and declares elicitation in the request.
fn asks_in_rounds(context: &RequestContext<RoleServer>) -> bool {
    let modern = context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
    modern && context.client_capabilities().is_some_and(|caps| caps.elicitation.is_some())
}

/// Set on a session once the session hook ran for it.
#[derive(Default)]
struct Hooked(std::sync::atomic::AtomicBool);

impl McpServer {
    /// Run the session hook for a session that began without `initialize` (2026-07-28), once,
    /// with the request's `_meta` as what `initialize` would have said.
    fn hook_once(&self, session: &Session, context: &RequestContext<RoleServer>) {
        let modern = context
            .protocol_version()
            .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
        if !modern || session.extension::<Hooked>().0.swap(true, Ordering::Relaxed) {
            return;
        }
        let hook = self.factory.hook.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let Some(hook) = hook else { return };
        let capabilities = context.client_capabilities().unwrap_or_default();
        let client = context.client_info().unwrap_or_else(|| Implementation::new("unknown", "0"));
        let protocol = context.protocol_version().unwrap_or_default();
        let params =
            InitializeRequestParams::new(capabilities, client).with_protocol_version(protocol);
        hook(session, &context.peer, &params);
    }

    /// The session a request belongs to: this connection's, or over HTTP without an MCP session
    /// (2026-07-28), the one the server keeps for such requests.
    fn session_for(&self, context: &RequestContext<RoleServer>) -> Session {
        let stateless = context
            .extensions
            .get::<http::request::Parts>()
            .is_some_and(|parts| !parts.headers.contains_key("mcp-session-id"));
        if stateless { self.factory.stateless_session() } else { self.session.clone() }
    }

    /// Give `session` askers that ask in rounds when it has none yet (a session that began with
    /// `initialize` has elicitation ones, which ask in rounds too when a call runs in them).
    fn install_round_askers(&self, session: &Session, context: &RequestContext<RoleServer>) {
        use hands_core::ask::AskerHandle;
        use hands_core::secret::SecretAskerHandle;
        if session.get_extension::<ApproverHandle>().is_none() {
            let approver = ElicitationApprover { elicitor: Elicitor::rounds_only() };
            session.insert_extension(ApproverHandle(Arc::new(approver)));
        }
        if session.get_extension::<AskerHandle>().is_none() {
            let asker = crate::ask::ElicitationAsker::new(Elicitor::rounds_only());
            session.insert_extension(AskerHandle(Arc::new(asker)));
        }
        let url = context
            .client_capabilities()
            .and_then(|caps| caps.elicitation)
            .is_some_and(|e| e.url.is_some());
        if url
            && self.factory.secret_pages.served()
            && session.get_extension::<SecretAskerHandle>().is_none()
        {
            let pages = self.factory.secret_pages.clone();
            let asker = crate::secret_page::UrlSecretAsker::new(Elicitor::rounds_only(), pages);
            session.insert_extension(SecretAskerHandle(Arc::new(asker)));
        }
    }

    /// Drive a call in rounds until it ends (its result) or asks (parked, the question).
    async fn drive(
        &self,
        running: Running,
        binding: [u8; 32],
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let request = context.ct.clone();
        cancel_when_client_gone(context, &request);
        match running.drive(&request).await {
            Step::Done(result) => response(result.map(hands_core::ToolOutput::notices_as_text)),
            Step::Asks(running, ask) => {
                let question = self.factory.parked.park(binding, running, ask)?;
                Ok(CallToolResponse::InputRequired(question))
            }
        }
    }
}

/// Over HTTP, cancel the call when its client disconnects (the response body is dropped).
fn cancel_when_client_gone(context: &RequestContext<RoleServer>, cancel: &CancellationToken) {
    let Some(gone) = context
        .extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<crate::gone::ClientGone>())
    else {
        return;
    };
    let (gone, cancel) = (gone.0.clone(), cancel.clone());
    tokio::spawn(async move {
        tokio::select! {
            () = gone.cancelled() => cancel.cancel(),
            () = cancel.cancelled() => {}
        }
    });
}

/// A registry spec as an MCP tool.
fn mcp_tool(spec: &ToolSpec) -> Tool {
    let a = spec.annotations;
    let mut value = json!({
        "name": spec.name,
        "description": spec.description,
        "inputSchema": object_schema(&spec.input_schema),
        "annotations": {
            "readOnlyHint": a.read_only,
            "destructiveHint": a.destructive,
            "idempotentHint": a.idempotent,
            "openWorldHint": a.open_world,
        },
    });
    if let Some(output) = &spec.output_schema {
        value["outputSchema"] = object_schema(output);
    }
    serde_json::from_value(value).unwrap_or_else(|err| {
        // Every field above has the type rmcp expects; only a schema that is not an object could
        // fail, and object_schema makes it one.
        tracing::error!(tool = %spec.name, %err, "tool spec does not convert to MCP");
        Tool::new(spec.name.clone(), spec.description.clone(), Arc::new(Default::default()))
    })
}

/// MCP requires an object schema; a tool without arguments may derive `true` or a non-object.
fn object_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(map) if map.get("type").is_none_or(|t| t == "object") => schema.clone(),
        _ => json!({"type": "object"}),
    }
}
