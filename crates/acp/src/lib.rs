//! `hands acp`: hands as an [Agent Client Protocol](https://agentclientprotocol.com) agent over
//! stdio, for editors (Zed's `agent_servers`, any ACP client). Each `session/new` opens a hands
//! session whose root is the request's `cwd`; `session/prompt` runs one turn of hands' agent loop
//! with the configured model and streams it as `session/update` notifications (the model's text,
//! every tool call with its kind, locations, diff or output, todo_write's plan, mode changes);
//! where hands' approval policy asks the user, the editor is sent `session/request_permission`;
//! `session/set_mode` switches plan ↔ build; `session/cancel` aborts the turn and its processes.
//!
//! stdout carries JSON-RPC only: logs go to stderr (the binary's tracing writer).

mod map;
mod session;
mod turn;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, CurrentModeUpdate, Implementation, InitializeRequest,
    InitializeResponse, NewSessionRequest, NewSessionResponse, PromptCapabilities, PromptRequest,
    SessionNotification, SessionUpdate, SetSessionModeRequest, SetSessionModeResponse,
};
use agent_client_protocol::{Agent, Client, Error, Stdio};
use hands_agent::host::{Host, HostParts, NewSession};
use hands_core::ask::{AskError, Asker, AskerHandle, Question};
use hands_core::secret::{SecretAsker, SecretAskerHandle, SecretRequest, SecretValue};
use hands_core::{BoxFuture, CancellationToken, Mode, Registry};

use crate::session::{AcpSession, internal, invalid};
use hands_store::Store;

/// Builds what a hands session host needs for a project root: the project's settings, its tools,
/// the configured model (the same code `hands run` uses). Called once per root, on a thread of
/// its own (it may block); the error is shown to the editor.
pub type Projects = Arc<dyn Fn(&Path) -> anyhow::Result<HostParts> + Send + Sync>;

/// Serve ACP on stdin/stdout until the client closes stdin.
pub async fn serve(projects: Projects) -> anyhow::Result<()> {
    let state = Arc::new(State {
        projects,
        hosts: tokio::sync::Mutex::default(),
        sessions: Mutex::default(),
    });
    let (s1, s2, s3, s4) =
        (Arc::clone(&state), Arc::clone(&state), Arc::clone(&state), Arc::clone(&state));
    Agent
        .v1()
        .name("hands")
        .on_receive_request(
            async move |_request: InitializeRequest, responder, _cx| {
                responder.respond(initialize())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest, responder, _cx| {
                let state = Arc::clone(&s1);
                // Building the project's tools may take a while: not on the dispatch loop.
                tokio::spawn(async move {
                    let result = state.new_session(request).await;
                    if let Err(err) = responder.respond_with_result(result) {
                        tracing::warn!(%err, "answering session/new");
                    }
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest, responder, cx| {
                let state = Arc::clone(&s2);
                match state.session(&request.session_id.0) {
                    Ok(session) => {
                        tokio::spawn(turn::run(session, request, responder, cx));
                        Ok(())
                    }
                    Err(err) => responder.respond_with_error(err),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionModeRequest, responder, cx| {
                let result = s3.set_mode(&request, &cx).await;
                responder.respond_with_result(result)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: CancelNotification, _cx| {
                if let Ok(session) = s4.session(&notification.session_id.0) {
                    session.cancel();
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(Stdio::new())
        .await
        .map_err(|err| anyhow::anyhow!("ACP connection: {err}"))?;
    // The client is gone: end what still runs.
    let sessions: Vec<Arc<AcpSession>> = map::lock(&state.sessions).values().cloned().collect();
    for session in sessions {
        if let Err(err) = session.host.abort_session(&session.id).await {
            tracing::debug!(%err, "aborting at exit");
        }
    }
    Ok(())
}

/// What hands declares: text and embedded context in prompts, no images or audio, no
/// session/load (sessions live while `hands acp` runs), no MCP servers from the client.
/// hands speaks protocol version 1: that is the answer whatever version the client asked for
/// (a client that cannot speak it closes the connection).
fn initialize() -> InitializeResponse {
    let capabilities = AgentCapabilities::new()
        .load_session(false)
        .prompt_capabilities(PromptCapabilities::new().embedded_context(true));
    InitializeResponse::new(agent_client_protocol::schema::ProtocolVersion::V1)
        .agent_capabilities(capabilities)
        .agent_info(
            Implementation::new("hands", env!("CARGO_PKG_VERSION")).title("hands".to_owned()),
        )
}

/// A project's host and its store.
type ProjectHost = (Arc<Host>, Arc<dyn Store>, Arc<Registry>);

struct State {
    projects: Projects,
    /// One host per project root (its tools are bound to the root).
    hosts: tokio::sync::Mutex<HashMap<PathBuf, ProjectHost>>,
    sessions: Mutex<HashMap<String, Arc<AcpSession>>>,
}

impl State {
    fn session(&self, id: &str) -> Result<Arc<AcpSession>, Error> {
        map::lock(&self.sessions).get(id).cloned().ok_or_else(|| {
            Error::invalid_params().data(serde_json::json!(format!(
                "no session `{id}` in this hands acp process: create one with session/new"
            )))
        })
    }

    async fn new_session(&self, request: NewSessionRequest) -> Result<NewSessionResponse, Error> {
        let root = check_cwd(&request.cwd).map_err(invalid)?;
        let (host, store, registry) = self.host(&root).await?;
        let new = NewSession {
            id: None,
            project_id: None,
            root: root.clone(),
            mode: Mode::Build,
            title: None,
        };
        let info = host
            .create_session(new)
            .await
            .map_err(|err| invalid(format!("cannot create the session: {err}")))?;
        let live = host.session(&info.id).await.map_err(|err| internal(err.to_string()))?;
        // ACP has no question or secret prompt: ask_user tells the model to go on by itself, the
        // secrets tool tells the user to run `hands secrets set NAME`.
        live.insert_extension(AskerHandle(Arc::new(NobodyAsker)));
        live.insert_extension(SecretAskerHandle(Arc::new(NobodySecretAsker)));
        let mode = live.mode();
        let session = Arc::new(AcpSession {
            id: info.id.clone(),
            host,
            store,
            registry,
            root: PathBuf::from(&info.root),
            allowed: Mutex::default(),
            cancel: Mutex::new(CancellationToken::new()),
        });
        map::lock(&self.sessions).insert(info.id.clone(), session);
        Ok(NewSessionResponse::new(info.id).modes(map::modes(mode)))
    }

    async fn host(&self, root: &Path) -> Result<ProjectHost, Error> {
        let mut hosts = self.hosts.lock().await;
        if let Some((host, store, registry)) = hosts.get(root) {
            return Ok((Arc::clone(host), Arc::clone(store), Arc::clone(registry)));
        }
        let projects = Arc::clone(&self.projects);
        let path = root.to_path_buf();
        let (tx, rx) = tokio::sync::oneshot::channel();
        // The registry is built as `hands run` builds it: outside the async runtime.
        std::thread::spawn(move || {
            let _ = tx.send(projects(&path));
        });
        let parts = rx
            .await
            .map_err(|_| internal("building the project's tools failed".to_owned()))?
            .map_err(|err| invalid(format!("{err:#}")))?;
        let store = Arc::clone(&parts.store);
        let registry = Arc::clone(&parts.registry);
        let host = Host::open(parts)
            .await
            .map_err(|err| internal(format!("cannot open the session host: {err}")))?;
        hosts.insert(
            root.to_path_buf(),
            (Arc::clone(&host), Arc::clone(&store), Arc::clone(&registry)),
        );
        Ok((host, store, registry))
    }

    async fn set_mode(
        &self,
        request: &SetSessionModeRequest,
        cx: &ConnectionTo<Client>,
    ) -> Result<SetSessionModeResponse, Error> {
        let session = self.session(&request.session_id.0)?;
        let mode = map::mode_of(&request.mode_id.0).ok_or_else(|| {
            invalid(format!("no mode `{}`: hands has `build` and `plan`", request.mode_id.0))
        })?;
        let live =
            session.host.session(&session.id).await.map_err(|err| internal(err.to_string()))?;
        if live.set_mode(mode) != mode {
            tracing::debug!(session = %session.id, ?mode, "mode set");
        }
        let update = SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(map::mode_id(mode)));
        cx.send_notification(SessionNotification::new(session.id.clone(), update))?;
        Ok(SetSessionModeResponse::new())
    }
}

/// The session's root: `cwd` must be absolute and an existing folder.
fn check_cwd(cwd: &Path) -> Result<PathBuf, String> {
    if cwd.as_os_str().is_empty() {
        return Err("session/new needs `cwd`: the absolute path of the project folder".to_owned());
    }
    if !cwd.is_absolute() {
        return Err(format!(
            "session/new's cwd `{}` is relative: send the absolute path of the project folder",
            cwd.display()
        ));
    }
    if !cwd.is_dir() {
        return Err(format!("session/new's cwd `{}` is not an existing folder", cwd.display()));
    }
    std::fs::canonicalize(cwd).map_err(|err| format!("cannot use cwd `{}`: {err}", cwd.display()))
}

/// ask_user without anybody to ask: the model is told at once to go on by itself.
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

/// The secrets tool without a prompt: the model is told the user stores it with `hands secrets`.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relative_or_missing_cwd_is_refused_with_the_reason() {
        let err = check_cwd(Path::new("src/app")).unwrap_err();
        assert!(err.contains("relative"), "{err}");
        let err = check_cwd(Path::new("")).unwrap_err();
        assert!(err.contains("needs `cwd`"), "{err}");
        let err = check_cwd(Path::new("/no/such/folder/for/hands")).unwrap_err();
        assert!(err.contains("not an existing folder"), "{err}");
        assert!(check_cwd(&std::env::temp_dir()).is_ok());
    }

    #[test]
    fn capabilities_are_what_hands_does() {
        let response = initialize();
        let json = serde_json::to_value(&response).unwrap_or_default();
        assert_eq!(json["agentCapabilities"]["loadSession"], false);
        assert_eq!(json["agentCapabilities"]["promptCapabilities"]["image"], false);
        assert_eq!(json["agentCapabilities"]["promptCapabilities"]["embeddedContext"], true);
        assert_eq!(json["agentInfo"]["name"], "hands");
    }
}
