//! The proxy backends. Every host session gets its own MCP session with an inner hands — its own
//! bwrap'd `hands mcp` child, or its own session on the remote `hands serve` — so that the inner
//! per-session state (the files a session read, for the stale-write guard; its processes) is not
//! shared between host sessions, and ends with the host session. Each call is forwarded by tool
//! name with its progress and cancellation (a cancelled call brings back the inner tool's partial
//! output). A closed transport is [`ToolError::SandboxGone`]; `get_or_create` then drops the lost
//! inner (bwrap) or runs the `recreate` hook (remote), and the retried call connects afresh.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use hands_core::{
    BoxFuture, Content, Context, DynTool, Prepared, Sandbox, SandboxProvider, Session, ToolError,
    ToolOutput,
};
use serde_json::Value;

use super::{INNER_ENV, SandboxError};
use crate::client::Background;
use crate::client::link::{self, CallError, Endpoint, Held};
use crate::client::listener::ToolList;

/// In the inner command's arguments, replaced by the project root.
pub(crate) const ROOT: &str = "{root}";

/// How long an inner hands gets to start and answer the handshake.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// How long the remote backend keeps reconnecting after `recreate`.
const RECONNECT_FOR: Duration = Duration::from_secs(60);

/// The host's timeout middleware limits calls (and cancels them); this only stops a lost answer
/// from waiting forever.
const CALL_BACKSTOP: Duration = Duration::from_secs(24 * 3600);

enum Kind {
    Bwrap(Arc<Bwrap>),
    Remote { url: String, token: Option<String>, recreate: Option<String> },
}

/// How an inner hands is started under bubblewrap.
pub struct Bwrap {
    /// The bwrap binary.
    pub bwrap: PathBuf,
    /// The inner command; `{root}` in it is replaced by the session's root.
    pub inner: Vec<String>,
    /// slirp4netns, when the sandbox gets a network (`[sandbox] network = true`); none: no
    /// network at all.
    pub slirp: Option<PathBuf>,
    /// What of the host the sandbox must not see: hands' own folders and files.
    pub hidden: Hidden,
}

/// hands' own things a bwrap sandbox must not read, and what it gets instead. Paths are absolute
/// and canonical; folders and files that do not exist are left out (bwrap cannot make a mount
/// point in the read-only `/`), so the caller creates hands' folders first.
#[derive(Debug, Clone, Default)]
pub struct Hidden {
    /// Covered with an empty tmpfs: the state, data, configuration and cache folders, the secret
    /// store, wherever the environment or the settings put them.
    pub folders: Vec<PathBuf>,
    /// Covered with an empty file (`/dev/null`): files of hands' own in a folder that is not
    /// (a session database kept in the home folder).
    pub files: Vec<PathBuf>,
    /// Bound read-only after the folders are hidden, as `(host path, path inside)`: the inner
    /// hands' own configuration file, in place of the user's.
    pub binds: Vec<(PathBuf, PathBuf)>,
}

impl Bwrap {
    /// The bwrap arguments that run the inner hands on `root` (canonical).
    ///
    /// Every namespace is the sandbox's own, with a user namespace and no capabilities: as root
    /// too, nothing inside can remount, and only `root` and the private /tmp are writable. The
    /// network namespace is always new: without slirp4netns it has only its own loopback; with
    /// it, slirp4netns is attached from outside and cannot reach the host's loopback.
    ///
    /// hands' own folders ([`Hidden`]) are covered with an empty tmpfs, after the private /tmp
    /// and before the root, so a root beneath one of them (or under /tmp) is bound on top, still
    /// visible; one beneath the root is covered after it. The hands binary is bound read-only at
    /// its own path when /tmp or a hidden folder would hide it.
    pub fn args(&self, root: &Path) -> Vec<String> {
        let root_text = root.display().to_string();
        let text = |p: &Path| p.display().to_string();
        let mut args: Vec<String> =
            ["--ro-bind", "/", "/", "--tmpfs", "/tmp"].map(String::from).into();
        let (below, above): (Vec<&PathBuf>, Vec<&PathBuf>) =
            self.hidden.folders.iter().partition(|f| f.starts_with(root) && f.as_path() != root);
        for folder in above {
            args.extend(["--tmpfs".into(), text(folder)]);
        }
        args.extend(["--bind".into(), root_text.clone(), root_text.clone()]);
        for folder in below {
            args.extend(["--tmpfs".into(), text(folder)]);
        }
        for file in &self.hidden.files {
            args.extend(["--ro-bind".into(), "/dev/null".into(), text(file)]);
        }
        for (host, inside) in &self.hidden.binds {
            args.extend(["--ro-bind".into(), text(host), text(inside)]);
        }
        if let Some(hands) = self.inner.first().map(Path::new)
            && hands.is_absolute()
            && !hands.starts_with(root)
            && (hands.starts_with("/tmp")
                || self.hidden.folders.iter().any(|f| hands.starts_with(f)))
        {
            args.extend(["--ro-bind".into(), text(hands), text(hands)]);
        }
        args.extend(
            [
                "--proc",
                "/proc",
                "--dev",
                "/dev",
                // Namespaces of its own. The user namespace is required (not "-try"): bwrap fails
                // rather than run without it. Its default mapping keeps hands' uid and gid, so files
                // written in the project belong to the real user.
                "--unshare-user",
                "--unshare-ipc",
                "--unshare-pid",
                "--unshare-net",
                "--unshare-uts",
                "--unshare-cgroup-try",
                "--cap-drop",
                "ALL",
                "--die-with-parent",
                // Own session: no TIOCSTI into the host terminal, and the inner hands leads its own
                // process group (outside it, getpgrp() would name a group the PID namespace cannot see).
                "--new-session",
            ]
            .map(String::from),
        );
        args.extend(["--chdir".into(), root_text.clone(), "--".into()]);
        args.extend(self.inner.iter().map(|a| a.replace(ROOT, &root_text)));
        args
    }

    /// The endpoint of an inner hands for the session whose root is `root`.
    fn endpoint(&self, root: &Path) -> Result<Endpoint, ToolError> {
        let root = std::fs::canonicalize(root).map_err(|err| {
            ToolError::Fatal(format!(
                "the bwrap sandbox cannot bind the session's root {}: {err}",
                root.display()
            ))
        })?;
        let env = BTreeMap::from([(INNER_ENV.to_owned(), "1".to_owned())]);
        Ok(Endpoint::Child {
            command: self.bwrap.display().to_string(),
            args: self.args(&root),
            env,
            cwd: Some(root),
            slirp: self.slirp.clone(),
        })
    }
}

/// A [`SandboxProvider`] that proxies calls to inner hands servers over MCP.
pub struct ProxyProvider {
    kind: Kind,
    background: Arc<Background>,
    sandboxes: tokio::sync::Mutex<HashMap<String, Arc<ProxySandbox>>>,
}

impl ProxyProvider {
    /// Run an inner hands under bubblewrap, one per host session, bound on that session's root
    /// (never on a folder named by the project id, which a client may choose).
    pub fn bwrap(bwrap: Bwrap) -> Result<Self, SandboxError> {
        Self::new(Kind::Bwrap(Arc::new(bwrap)))
    }

    /// Talk to the `hands serve` at `url`; `recreate` is run with `sh -c` when it is gone.
    pub fn remote(
        url: String,
        token: Option<String>,
        recreate: Option<String>,
    ) -> Result<Self, SandboxError> {
        Self::new(Kind::Remote { url, token, recreate })
    }

    fn new(kind: Kind) -> Result<Self, SandboxError> {
        let background =
            Background::start().map_err(|err| SandboxError::Runtime(err.to_string()))?;
        Ok(Self { kind, background, sandboxes: tokio::sync::Mutex::new(HashMap::new()) })
    }

    /// The pid of the project's newest bwrap process, if it has one (tests kill it).
    pub async fn pid(&self, project: &str) -> Option<u32> {
        let sandbox = self.sandboxes.lock().await.get(project).cloned()?;
        let links = sandbox.links.lock().await;
        links.values().max_by_key(|link| link.serial).and_then(|link| link.held.pid)
    }

    /// The pid of the bwrap process that serves host session `session` of `project`.
    pub async fn session_pid(&self, project: &str, session: &str) -> Option<u32> {
        let sandbox = self.sandboxes.lock().await.get(project).cloned()?;
        let links = sandbox.links.lock().await;
        links.get(session).and_then(|link| link.held.pid)
    }

    /// Call `name` with `args` in the inner hands that serves `session`, outside any tool call of
    /// the host: how the host's process service lists and stops the inner session's processes
    /// (over MCP, the inner hands' only interface).
    pub(crate) async fn call_inner(
        &self,
        session: &Session,
        name: &str,
        args: serde_json::Map<String, Value>,
    ) -> Result<ToolOutput, ToolError> {
        let sandbox = {
            let mut sandboxes = self.sandboxes.lock().await;
            match sandboxes.get(session.project()) {
                Some(sandbox) => Arc::clone(sandbox),
                None => {
                    let sandbox = self.sandbox(session.project(), false).await?;
                    sandboxes.insert(session.project().to_owned(), Arc::clone(&sandbox));
                    sandbox
                }
            }
        };
        let link = sandbox.link(session).await?;
        let conn = match link.held.conn() {
            Some(conn) if !link.held.is_closed() => conn,
            _ => return Err(sandbox.gone(&link, "its MCP session closed")),
        };
        let call = link::Call {
            name: name.to_owned(),
            args: Some(args),
            timeout: CALL_BACKSTOP,
            ctx: None,
        };
        match sandbox.background.run(async move { link::call(&conn, call).await }).await {
            None => Err(ToolError::Fatal("the sandbox client runtime stopped".into())),
            Some(Ok(output)) => Ok(output),
            Some(Err(CallError::Gone(reason))) => Err(sandbox.gone(&link, &reason)),
            Some(Err(err)) => Err(ToolError::model(format!("{name} in the sandbox: {err:?}"))),
        }
    }

    /// The project's sandbox; `fresh` runs the recreate hook first (remote).
    async fn sandbox(&self, project: &str, fresh: bool) -> Result<Arc<ProxySandbox>, ToolError> {
        let (endpoint, connect_for, shared_fate) = match &self.kind {
            Kind::Bwrap(bwrap) => (Target::Bwrap(Arc::clone(bwrap)), Duration::ZERO, false),
            Kind::Remote { url, token, recreate } => {
                if fresh && let Some(command) = recreate {
                    run_recreate(command, project).await?;
                }
                let endpoint = Endpoint::Http {
                    url: url.clone(),
                    token: token.clone(),
                    headers: BTreeMap::new(),
                };
                (Target::Fixed(endpoint), if fresh { RECONNECT_FOR } else { Duration::ZERO }, true)
            }
        };
        let id = format!("{} for {project}", endpoint_kind(&self.kind));
        Ok(Arc::new_cyclic(|me| ProxySandbox {
            id,
            endpoint,
            background: Arc::clone(&self.background),
            shared_fate,
            connect_until: Instant::now() + connect_for,
            lost: AtomicBool::new(false),
            links: tokio::sync::Mutex::new(HashMap::new()),
            me: me.clone(),
        }))
    }
}

fn endpoint_kind(kind: &Kind) -> &'static str {
    match kind {
        Kind::Bwrap(_) => "bwrap",
        Kind::Remote { .. } => "remote",
    }
}

/// Run the `recreate` hook; it must leave a sandbox starting at the configured URL.
async fn run_recreate(command: &str, project: &str) -> Result<(), ToolError> {
    tracing::warn!(command, project, "running sandbox.recreate");
    let status = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .env_clear()
        .envs(hands_core::env::ChildEnv::vars())
        .env("HANDS_PROJECT", project)
        .stdin(std::process::Stdio::null())
        .status()
        .await
        .map_err(|err| ToolError::Fatal(format!("cannot run sandbox.recreate: {err}")))?;
    if !status.success() {
        return Err(ToolError::Fatal(format!("sandbox.recreate `{command}` failed: {status}")));
    }
    Ok(())
}

impl SandboxProvider for ProxyProvider {
    fn get<'a>(&'a self, project: &'a str) -> BoxFuture<'a, Result<Arc<dyn Sandbox>, ToolError>> {
        Box::pin(async move {
            let mut sandboxes = self.sandboxes.lock().await;
            if let Some(sandbox) = sandboxes.get(project) {
                // Even a lost one: the call then reports SandboxGone and recovery takes over.
                return Ok(Arc::clone(sandbox) as Arc<dyn Sandbox>);
            }
            let sandbox = self.sandbox(project, false).await?;
            sandboxes.insert(project.to_owned(), Arc::clone(&sandbox));
            Ok(sandbox as Arc<dyn Sandbox>)
        })
    }

    fn get_or_create<'a>(
        &'a self,
        project: &'a str,
    ) -> BoxFuture<'a, Result<Arc<dyn Sandbox>, ToolError>> {
        Box::pin(async move {
            let mut sandboxes = self.sandboxes.lock().await;
            if let Some(sandbox) = sandboxes.get(project) {
                if !sandbox.shared_fate {
                    // bwrap: each session has its own inner; only the lost ones go, and the
                    // retried call starts a fresh one for its session.
                    sandbox.prune().await;
                    return Ok(Arc::clone(sandbox) as Arc<dyn Sandbox>);
                }
                // remote: replace only a server that a call saw lost; when two calls lose the
                // same one, the second finds the first's replacement and keeps it.
                if !sandbox.lost.load(Ordering::Relaxed) && !sandbox.any_closed().await {
                    return Ok(Arc::clone(sandbox) as Arc<dyn Sandbox>);
                }
            }
            sandboxes.remove(project);
            let sandbox = self.sandbox(project, true).await?;
            sandboxes.insert(project.to_owned(), Arc::clone(&sandbox));
            Ok(sandbox as Arc<dyn Sandbox>)
        })
    }
}

/// Where a sandbox's inner sessions are.
enum Target {
    /// bwrap: a new inner hands per session, bound on the session's root.
    Bwrap(Arc<Bwrap>),
    /// remote: the same server for every session.
    Fixed(Endpoint),
}

/// A project's sandbox: one inner session per host session.
struct ProxySandbox {
    id: String,
    endpoint: Target,
    background: Arc<Background>,
    /// remote: every session talks to the same server, so one lost session means all are lost.
    shared_fate: bool,
    /// Connections are retried until then (a recreated server may still be starting).
    connect_until: Instant,
    /// remote: set when a call found the server gone.
    lost: AtomicBool,
    /// By host session id.
    links: tokio::sync::Mutex<HashMap<String, Arc<Link>>>,
    me: Weak<ProxySandbox>,
}

/// One host session's connection to its inner hands.
struct Link {
    held: Held,
    /// Set when a call found the session gone.
    lost: AtomicBool,
    /// Creation order (the newest link's pid is the project's pid for tests).
    serial: u64,
}

impl ProxySandbox {
    /// The session's link, connected on its first call. A lost one is returned as it is: the
    /// call then reports SandboxGone, and recovery replaces it.
    async fn link(&self, session: &Session) -> Result<Arc<Link>, ToolError> {
        let mut links = self.links.lock().await;
        if let Some(link) = links.get(session.id()) {
            return Ok(Arc::clone(link));
        }
        let endpoint = match &self.endpoint {
            Target::Bwrap(bwrap) => bwrap.endpoint(session.root())?,
            Target::Fixed(endpoint) => endpoint.clone(),
        };
        let link = Arc::new(self.connect(endpoint, session.is_one_shot()).await?);
        links.insert(session.id().to_owned(), Arc::clone(&link));
        // The inner session (its processes, the inner bwrap) ends with the host session.
        let (sandbox, id, weak) = (self.me.clone(), session.id().to_owned(), Arc::downgrade(&link));
        session.on_close(Box::new(move || {
            Box::pin(async move {
                if let Some(sandbox) = sandbox.upgrade() {
                    let mut links = sandbox.links.lock().await;
                    if links.get(&id).is_some_and(|l| Weak::ptr_eq(&Arc::downgrade(l), &weak)) {
                        links.remove(&id);
                    }
                }
            })
        }));
        Ok(link)
    }

    /// Start (bwrap) or reach (remote) an inner hands and list its tools.
    async fn connect(&self, endpoint: Endpoint, one_shot: bool) -> Result<Link, ToolError> {
        static SERIAL: AtomicU64 = AtomicU64::new(0);
        let held = loop {
            let attempt = {
                let endpoint = endpoint.clone();
                self.background
                    .run(async move {
                        let tools = ToolList::new();
                        let held =
                            link::connect(&endpoint, START_TIMEOUT, Arc::clone(&tools), one_shot)
                                .await?;
                        if let Some(conn) = held.conn()
                            && let Err(err) = conn.list_into(&tools).await
                        {
                            tracing::warn!(%err, "the sandbox's hands did not list its tools");
                        }
                        Ok::<_, String>(held)
                    })
                    .await
            };
            match attempt {
                Some(Ok(held)) => break held,
                Some(Err(err)) if Instant::now() >= self.connect_until => {
                    return Err(ToolError::Fatal(format!(
                        "cannot start the sandbox ({}): {err}",
                        self.id
                    )));
                }
                None => return Err(ToolError::Fatal("the sandbox client runtime stopped".into())),
                Some(Err(_)) => tokio::time::sleep(Duration::from_millis(250)).await,
            }
        };
        tracing::info!(sandbox = %self.id, pid = ?held.pid, "sandbox session started");
        Ok(Link {
            held,
            lost: AtomicBool::new(false),
            serial: SERIAL.fetch_add(1, Ordering::Relaxed),
        })
    }

    /// Drop the links that a call saw lost or whose session closed (kills a bwrap that is still
    /// half alive).
    async fn prune(&self) {
        self.links
            .lock()
            .await
            .retain(|_, link| !link.lost.load(Ordering::Relaxed) && !link.held.is_closed());
    }

    async fn any_closed(&self) -> bool {
        self.links.lock().await.values().any(|link| link.held.is_closed())
    }

    fn gone(&self, link: &Link, reason: &str) -> ToolError {
        link.lost.store(true, Ordering::Relaxed);
        if self.shared_fate {
            self.lost.store(true, Ordering::Relaxed);
        }
        ToolError::SandboxGone(format!("{}: {reason}", self.id))
    }
}

impl Sandbox for ProxySandbox {
    fn id(&self) -> String {
        self.id.clone()
    }

    fn run<'a>(
        &'a self,
        tool: &'a dyn DynTool,
        ctx: Context,
        args: &'a Value,
        prepared: &'a Prepared,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let name = tool.spec().name.clone();
            // Tools that act for the host session (its mode, its todo list, its user, its model,
            // other MCP servers) run here even with a proxy backend: run inside, plan mode would
            // switch the inner session's tools and leave the host's as they were.
            if tool.spec().policy.on_host {
                return tool.run(ctx, args, prepared).await;
            }
            let link = self.link(ctx.session()).await?;
            let conn = match link.held.conn() {
                Some(conn) if !link.held.is_closed() => conn,
                _ => return Err(self.gone(&link, "its MCP session closed")),
            };
            if !link.held.tools.offers(&name) {
                let offered: Vec<String> =
                    link.held.tools.get().into_iter().map(|t| t.name).collect();
                return Err(ToolError::model(format!(
                    "{name} is not available in the sandbox ({}): the hands there offers {}. Use \
                     one of those.",
                    self.id,
                    offered.join(", ")
                )));
            }
            // Sent on as the model wrote them: the hands inside parses them for its tool.
            let args = match args {
                Value::Null => None,
                Value::Object(map) => Some(map.clone()),
                other => {
                    return Err(ToolError::model(format!(
                        "{name}: the arguments must be a JSON object, not {other}"
                    )));
                }
            };
            let call =
                link::Call { name: name.clone(), args, timeout: CALL_BACKSTOP, ctx: Some(ctx) };
            // The call watches the context's token itself: on abort it tells the inner hands,
            // which stops the tool and sends back what it had.
            let result = self.background.run(async move { link::call(&conn, call).await }).await;
            match result {
                None => Err(ToolError::Fatal("the sandbox client runtime stopped".into())),
                Some(Ok(output)) => Ok(output),
                Some(Err(CallError::Cancelled(Some(partial)))) => {
                    Ok(without_abort_note(&name, *partial))
                }
                Some(Err(CallError::Cancelled(None))) => {
                    Ok(ToolOutput::error(format!("{name} was aborted.")))
                }
                Some(Err(CallError::Gone(reason))) => Err(self.gone(&link, &reason)),
                Some(Err(CallError::Remote(message))) => Err(ToolError::model(message)),
                Some(Err(CallError::Timeout(limit))) => Err(ToolError::model(format!(
                    "{name} got no answer from the sandbox within {} s",
                    limit.as_secs()
                ))),
            }
        })
    }
}

/// The inner hands' own timeout middleware opens an aborted call's result with the same note the
/// host's adds; keep one.
fn without_abort_note(name: &str, mut partial: ToolOutput) -> ToolOutput {
    let note = format!("{name} was aborted before it finished.");
    if matches!(partial.content.first(), Some(Content::Text { text }) if *text == note) {
        partial.content.remove(0);
    }
    partial
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bwrap_drops_every_capability_and_shares_no_namespace() {
        let bwrap = Bwrap {
            bwrap: "/usr/bin/bwrap".into(),
            inner: vec!["hands".into(), "mcp".into(), "--root".into(), ROOT.into()],
            slirp: Some("/usr/bin/slirp4netns".into()),
            hidden: Hidden::default(),
        };
        let args = bwrap.args(Path::new("/work/app"));
        let has = |pair: &[&str]| args.windows(pair.len()).any(|w| w == pair);
        for flag in [
            "--unshare-user",
            "--unshare-ipc",
            "--unshare-pid",
            "--unshare-net",
            "--unshare-uts",
            "--die-with-parent",
            "--new-session",
        ] {
            assert!(args.iter().any(|a| a == flag), "{flag} missing: {args:?}");
        }
        assert!(has(&["--cap-drop", "ALL"]), "{args:?}");
        assert!(has(&["--ro-bind", "/", "/"]) && has(&["--bind", "/work/app", "/work/app"]));
        // A network is slirp4netns's, attached from outside: never `--share-net`.
        assert!(!args.iter().any(|a| a == "--share-net" || a == "--unshare-user-try"));
        assert!(args.ends_with(&[
            "hands".into(),
            "mcp".into(),
            "--root".into(),
            "/work/app".into()
        ]));
    }

    #[test]
    fn hands_folders_are_covered_around_the_root_and_the_binary_stays_reachable() {
        let bwrap = Bwrap {
            bwrap: "/usr/bin/bwrap".into(),
            inner: vec!["/tmp/t/hands".into(), "mcp".into()],
            slirp: None,
            hidden: Hidden {
                folders: vec![
                    "/h/.local/share/hands".into(),
                    "/h/.local/share/hands/p/app/.st".into(),
                ],
                files: vec!["/h/sessions.db".into()],
                binds: vec![(
                    "/h/state/sandbox/c.toml".into(),
                    "/h/.config/hands/config.toml".into(),
                )],
            },
        };
        let args = bwrap.args(Path::new("/h/.local/share/hands/p/app"));
        let at = |pair: &[&str]| {
            args.windows(pair.len())
                .position(|w| w == pair)
                .unwrap_or_else(|| panic!("{pair:?}: {args:?}"))
        };
        let tmp = at(&["--tmpfs", "/tmp"]);
        let data = at(&["--tmpfs", "/h/.local/share/hands"]);
        let root = at(&["--bind", "/h/.local/share/hands/p/app", "/h/.local/share/hands/p/app"]);
        let inner = at(&["--tmpfs", "/h/.local/share/hands/p/app/.st"]);
        assert!(tmp < data && data < root && root < inner, "{args:?}");
        assert!(at(&["--ro-bind", "/dev/null", "/h/sessions.db"]) > root);
        assert!(
            at(&["--ro-bind", "/h/state/sandbox/c.toml", "/h/.config/hands/config.toml"]) > data
        );
        assert!(at(&["--ro-bind", "/tmp/t/hands", "/tmp/t/hands"]) > tmp);
    }
}
