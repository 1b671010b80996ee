//! One running language server: started as a supervised process of the session (hands-exec's
//! `Supervisor`: its own process group, the session's markers, stopped with the session), talked
//! to over two FIFOs, initialised within a time limit, and the diagnostics it publishes kept per
//! file (cut at a bound, the rest counted).
//!
//! Why FIFOs: the supervisor gives a child stdin on /dev/null and one pipe for stdout and stderr.
//! A `sh -c` wrapper sets `ulimit -v` (the memory bound) and execs the server with stdin and
//! stdout on two FIFOs in a private temp folder, so stderr alone goes to the supervisor's bounded
//! buffer, and the supervisor's spawn path (its one `unsafe` module) stays as it is.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use hands_exec::{Argv, Kind, Proc, SpawnSpec, Status, Supervisor};
use lsp_types::{Diagnostic, PublishDiagnosticsParams};
use serde_json::Value;
use tokio::sync::watch;

use crate::language::Language;
use crate::rpc::{Rpc, RpcError};
use crate::uri;

/// Why a server could not be had.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StartError {
    /// Spawning failed.
    #[error("could not start `{command}`: {reason}")]
    Spawn {
        /// The command.
        command: String,
        /// Why.
        reason: String,
    },
    /// `initialize` was not answered in time.
    #[error("`{command}` did not answer initialize within {ms} ms")]
    Hung {
        /// The command.
        command: String,
        /// The limit.
        ms: u64,
    },
    /// The server failed `initialize` or exited.
    #[error("`{command}` failed to initialize: {source}")]
    Failed {
        /// The command.
        command: String,
        /// What the connection said.
        source: RpcError,
    },
}

/// How long a file's publishes must pause before its diagnostics count as complete.
pub const QUIET: Duration = Duration::from_millis(150);
/// After the server's work in progress ends, how long a wait for a file's diagnostics gives it to
/// publish what that work found.
const AFTER_BUSY: Duration = Duration::from_secs(1);

/// The diagnostics of one file as last published.
#[derive(Debug, Clone, Default)]
pub struct FileDiagnostics {
    /// What was kept, in the server's order.
    pub items: Vec<Diagnostic>,
    /// How many more the server sent than were kept.
    pub dropped: usize,
    /// How many times this file's diagnostics were published.
    pub generation: u64,
}

/// Every file's diagnostics; a publish bumps the watch so that waiters look again.
#[derive(Debug)]
pub struct Store {
    files: Mutex<HashMap<PathBuf, FileDiagnostics>>,
    changed: watch::Sender<u64>,
    cap: usize,
    /// The server's work in progress (`$/progress` tokens begun and not ended): while it loads
    /// the project, what it published so far lacks the errors it has yet to find.
    busy: Mutex<std::collections::HashSet<String>>,
}

/// Work-in-progress tokens kept at most: a server that begins more and never ends them is not
/// waited on for the rest.
const MAX_BUSY: usize = 64;

impl Store {
    fn new(cap: usize) -> Self {
        Self {
            files: Mutex::new(HashMap::new()),
            changed: watch::Sender::new(0),
            cap,
            busy: Mutex::new(Default::default()),
        }
    }

    /// A `$/progress` notification: `begin` marks the server busy with its token, `end` not.
    fn progress(&self, params: &Value) {
        let token = match params.get("token") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => return,
        };
        let kind = params.pointer("/value/kind").and_then(Value::as_str);
        {
            let mut busy = self.busy.lock().unwrap_or_else(PoisonError::into_inner);
            match kind {
                Some("begin") if busy.len() < MAX_BUSY => {
                    busy.insert(token);
                }
                Some("end") => {
                    busy.remove(&token);
                }
                _ => return,
            }
        }
        self.changed.send_modify(|n| *n += 1);
    }

    /// The server is loading or checking (some work-done progress has begun and not ended).
    pub fn busy(&self) -> bool {
        !self.busy.lock().unwrap_or_else(PoisonError::into_inner).is_empty()
    }

    /// Wait until the server's work in progress ends, it exits, or `deadline`; true when it is
    /// idle.
    async fn wait_idle(&self, deadline: tokio::time::Instant, proc: &Proc) -> bool {
        let mut changes = self.changed.subscribe();
        while self.busy() {
            tokio::select! {
                r = changes.changed() => if r.is_err() { return false },
                _ = proc.wait_exit() => return false,
                () = tokio::time::sleep_until(deadline) => return false,
            }
        }
        true
    }

    fn publish(&self, params: PublishDiagnosticsParams) {
        let Some(path) = uri::to_path(&params.uri) else { return };
        let mut items = params.diagnostics;
        let dropped = items.len().saturating_sub(self.cap);
        items.truncate(self.cap);
        {
            let mut files = self.files.lock().unwrap_or_else(PoisonError::into_inner);
            let entry = files.entry(path).or_default();
            entry.items = items;
            entry.dropped = dropped;
            entry.generation += 1;
        }
        self.changed.send_modify(|n| *n += 1);
    }

    /// The diagnostics of `path`, as last published.
    pub fn get(&self, path: &Path) -> Option<FileDiagnostics> {
        self.files.lock().unwrap_or_else(PoisonError::into_inner).get(path).cloned()
    }

    /// Every file with its diagnostics.
    pub fn all(&self) -> Vec<(PathBuf, FileDiagnostics)> {
        let files = self.files.lock().unwrap_or_else(PoisonError::into_inner);
        files.iter().map(|(p, d)| (p.clone(), d.clone())).collect()
    }

    /// How many times `path`'s diagnostics were published so far.
    pub fn generation(&self, path: &Path) -> u64 {
        self.get(path).map_or(0, |d| d.generation)
    }

    /// Wait until `path` is published past `generation`, then until its publishes pause for
    /// [`QUIET`] (typescript-language-server publishes a file's syntactic, semantic and
    /// suggestion diagnostics one after the other: the first alone lacks the type errors), or
    /// the server exits, or `deadline`. True when something was published.
    pub async fn wait_settled(
        &self,
        path: &Path,
        generation: u64,
        deadline: tokio::time::Instant,
        proc: &Proc,
    ) -> bool {
        if !self.wait_past(path, generation, deadline, proc).await {
            return false;
        }
        loop {
            let seen = self.generation(path);
            let quiet = (tokio::time::Instant::now() + QUIET).min(deadline);
            if self.wait_past(path, seen, quiet, proc).await {
                continue;
            }
            // Quiet, but still loading the project (a cold server's first publish is its
            // syntactic check alone): wait for the work to end and what it publishes then.
            if !self.busy() || tokio::time::Instant::now() >= deadline {
                return true;
            }
            if !self.wait_idle(deadline, proc).await {
                return true;
            }
            // Idle now: what it found while busy is published next (tsserver's semantic check
            // of the file follows the project's load).
            let seen = self.generation(path);
            let grace = (tokio::time::Instant::now() + AFTER_BUSY).min(deadline);
            if !self.wait_past(path, seen, grace, proc).await {
                return true;
            }
        }
    }

    /// Wait until `path` is published past `generation`, the server exits, or `deadline`.
    pub async fn wait_past(
        &self,
        path: &Path,
        generation: u64,
        deadline: tokio::time::Instant,
        proc: &Proc,
    ) -> bool {
        let mut changes = self.changed.subscribe();
        loop {
            if self.generation(path) > generation {
                return true;
            }
            tokio::select! {
                r = changes.changed() => if r.is_err() { return false },
                _ = proc.wait_exit() => return self.generation(path) > generation,
                () = tokio::time::sleep_until(deadline) => return false,
            }
        }
    }
}

/// A running server.
pub struct Server {
    /// Its language.
    pub language: Language,
    /// The command it was started with, as shown.
    pub command: String,
    /// The connection.
    pub rpc: Arc<Rpc>,
    /// Its process.
    pub proc: Arc<Proc>,
    /// What it published.
    pub diagnostics: Arc<Store>,
    /// Open documents: their versions and a hash of the text the server has.
    docs: tokio::sync::Mutex<HashMap<PathBuf, (i32, u64)>>,
    /// The FIFOs' folder, removed with the server.
    _fifos: tempfile::TempDir,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("language", &self.language)
            .field("command", &self.command)
            .finish_non_exhaustive()
    }
}

/// How to start one.
pub struct Launch<'a> {
    /// The language.
    pub language: Language,
    /// Program and arguments.
    pub argv: &'a [String],
    /// The project root (its cwd and its only workspace folder).
    pub root: &'a Path,
    /// `RLIMIT_AS` in MiB (0: none).
    pub memory_mb: u64,
    /// `initialize`'s limit.
    pub initialize_timeout: Duration,
    /// Diagnostics kept per file.
    pub max_per_file: usize,
}

impl Server {
    /// Start and initialise the server.
    pub async fn start(
        supervisor: &Supervisor,
        launch: Launch<'_>,
    ) -> Result<Arc<Self>, StartError> {
        let command = launch.argv.join(" ");
        let spawn_error = |reason: String| StartError::Spawn { command: command.clone(), reason };
        let options =
            crate::language::initialization_options(launch.language, launch.argv, launch.root)
                .map_err(spawn_error)?;
        let fifos = tempfile::Builder::new()
            .prefix("hands-lsp-")
            .tempdir()
            .map_err(|e| spawn_error(e.to_string()))?;
        let (input, output) = (fifos.path().join("in"), fifos.path().join("out"));
        for fifo in [&input, &output] {
            rustix::fs::mknodat(
                rustix::fs::CWD,
                fifo,
                rustix::fs::FileType::Fifo,
                rustix::fs::Mode::from_raw_mode(0o600),
                0,
            )
            .map_err(|e| spawn_error(format!("mkfifo: {e}")))?;
        }
        // Both ends opened read-write: neither open blocks, whenever the child opens its side.
        let writer = tokio::net::unix::pipe::OpenOptions::new()
            .read_write(true)
            .open_sender(&input)
            .map_err(|e| spawn_error(e.to_string()))?;
        let reader = tokio::net::unix::pipe::OpenOptions::new()
            .read_write(true)
            .open_receiver(&output)
            .map_err(|e| spawn_error(e.to_string()))?;
        let limit = if launch.memory_mb > 0 {
            format!("ulimit -v {} 2>/dev/null || exit 97; ", launch.memory_mb * 1024)
        } else {
            String::new()
        };
        let script = format!("{limit}exec \"$@\" <\"$HANDS_LSP_IN\" >\"$HANDS_LSP_OUT\"");
        let mut argv = vec!["/bin/sh".to_owned(), "-c".to_owned(), script, "hands-lsp".to_owned()];
        argv.extend(launch.argv.iter().cloned());
        let argv = Argv {
            argv,
            env: vec![
                ("HANDS_LSP_IN".to_owned(), input.to_string_lossy().into_owned()),
                ("HANDS_LSP_OUT".to_owned(), output.to_string_lossy().into_owned()),
            ],
            project: launch.root.to_path_buf(),
        };
        let spec = SpawnSpec {
            command: command.clone(),
            kind: Kind::Daemon,
            name: Some(format!("{} language server", launch.language.title())),
            cwd: launch.root.to_path_buf(),
            head: 8 << 10,
            tail: 24 << 10,
            log: false,
        };
        let proc = supervisor.spawn_argv(spec, &argv).map_err(|e| spawn_error(e.to_string()))?;
        let store = Arc::new(Store::new(launch.max_per_file));
        let sink = Arc::clone(&store);
        let rpc = Rpc::start(
            reader,
            writer,
            Box::new(move |method, params| {
                if method == "$/progress" {
                    sink.progress(&params);
                } else if method == "textDocument/publishDiagnostics"
                    && let Ok(params) = serde_json::from_value::<PublishDiagnosticsParams>(params)
                {
                    sink.publish(params);
                }
            }),
        );
        // The connection ends when the process does (our own read-write ends never see EOF).
        let (watched, conn) = (Arc::clone(&proc), Arc::downgrade(&rpc));
        tokio::spawn(async move {
            watched.wait_exit().await;
            if let Some(rpc) = conn.upgrade() {
                rpc.close();
            }
        });
        let server = Arc::new(Self {
            language: launch.language,
            command: command.clone(),
            rpc,
            proc,
            diagnostics: store,
            docs: tokio::sync::Mutex::new(HashMap::new()),
            _fifos: fifos,
        });
        let init = server
            .rpc
            .request::<lsp_types::request::Initialize>(initialize_params(launch.root, options));
        match tokio::time::timeout(launch.initialize_timeout, init).await {
            Err(_) => {
                server.stop().await;
                Err(StartError::Hung { command, ms: launch.initialize_timeout.as_millis() as u64 })
            }
            Ok(Err(source)) => {
                server.stop().await;
                Err(StartError::Failed { command, source })
            }
            Ok(Ok(_)) => {
                let _ = server
                    .rpc
                    .notify::<lsp_types::notification::Initialized>(lsp_types::InitializedParams {})
                    .await;
                Ok(server)
            }
        }
    }

    /// True while the process runs and the connection holds.
    pub fn is_alive(&self) -> bool {
        self.proc.status() == Status::Running && !self.rpc.is_closed()
    }

    /// Stop the server: `shutdown` and `exit` briefly, then the process group.
    pub async fn stop(&self) {
        if self.is_alive() {
            let polite = async {
                let _ = self.rpc.request::<lsp_types::request::Shutdown>(()).await;
                let _ = self.rpc.notify::<lsp_types::notification::Exit>(()).await;
            };
            let _ = tokio::time::timeout(Duration::from_millis(500), polite).await;
        }
        self.rpc.close();
        self.proc.stop("stopped", Duration::from_millis(500)).await;
    }

    /// Tell the server `path` now holds `text` (didOpen the first time, didChange after).
    /// Returns the file's diagnostics generation before the change, or None when the server
    /// already has this text (nothing will be published).
    pub async fn sync(&self, path: &Path, text: String) -> Result<Option<u64>, RpcError> {
        let Some(uri) = uri::from_path(path) else {
            return Err(RpcError::Closed(Some(format!("{} has no file URI", path.display()))));
        };
        let hash = {
            use std::hash::{Hash, Hasher};
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            text.hash(&mut hasher);
            hasher.finish()
        };
        let generation = self.diagnostics.generation(path);
        let mut docs = self.docs.lock().await;
        match docs.get_mut(path) {
            Some((_, known)) if *known == hash => return Ok(None),
            Some((version, known)) => {
                *version += 1;
                *known = hash;
                let params = lsp_types::DidChangeTextDocumentParams {
                    text_document: lsp_types::VersionedTextDocumentIdentifier {
                        uri,
                        version: *version,
                    },
                    content_changes: vec![lsp_types::TextDocumentContentChangeEvent {
                        range: None,
                        range_length: None,
                        text,
                    }],
                };
                self.rpc.notify::<lsp_types::notification::DidChangeTextDocument>(params).await?;
            }
            None => {
                let item = lsp_types::TextDocumentItem {
                    uri,
                    language_id: self.language.language_id(path).to_owned(),
                    version: 1,
                    text,
                };
                let params = lsp_types::DidOpenTextDocumentParams { text_document: item };
                self.rpc.notify::<lsp_types::notification::DidOpenTextDocument>(params).await?;
                docs.insert(path.to_path_buf(), (1, hash));
            }
        }
        Ok(Some(generation))
    }

    /// Tell the server `path` is gone (closed, if it was open).
    pub async fn forget(&self, path: &Path) {
        let was_open = self.docs.lock().await.remove(path).is_some();
        if let (true, Some(uri)) = (was_open, uri::from_path(path)) {
            let params = lsp_types::DidCloseTextDocumentParams {
                text_document: lsp_types::TextDocumentIdentifier { uri },
            };
            let _ = self.rpc.notify::<lsp_types::notification::DidCloseTextDocument>(params).await;
        }
    }

    /// The open documents.
    pub async fn open_docs(&self) -> Vec<PathBuf> {
        self.docs.lock().await.keys().cloned().collect()
    }

    /// The server's stderr so far (head and tail), secrets replaced.
    pub fn stderr(&self) -> String {
        hands_core::redact::text(&self.proc.snapshot().text()).into_owned()
    }
}

fn initialize_params(root: &Path, options: Value) -> lsp_types::InitializeParams {
    use lsp_types::*;
    let root_uri: Option<lsp_types::Uri> = uri::from_path(root);
    let capabilities = ClientCapabilities {
        text_document: Some(TextDocumentClientCapabilities {
            publish_diagnostics: Some(PublishDiagnosticsClientCapabilities {
                version_support: Some(true),
                ..Default::default()
            }),
            hover: Some(HoverClientCapabilities {
                content_format: Some(vec![MarkupKind::PlainText, MarkupKind::Markdown]),
                ..Default::default()
            }),
            document_symbol: Some(DocumentSymbolClientCapabilities {
                hierarchical_document_symbol_support: Some(true),
                ..Default::default()
            }),
            synchronization: Some(TextDocumentSyncClientCapabilities {
                did_save: Some(false),
                ..Default::default()
            }),
            ..Default::default()
        }),
        // Work-done progress: a server says when it loads or checks the project, so that a
        // wait for diagnostics does not end on a cold server's first, syntax-only publish.
        window: Some(WindowClientCapabilities {
            work_done_progress: Some(true),
            ..Default::default()
        }),
        // No `workspace_folders` capability: pyright then waits for folder requests and checks nothing.
        workspace: Some(WorkspaceClientCapabilities {
            configuration: Some(true),
            ..Default::default()
        }),
        ..Default::default()
    };
    #[allow(deprecated)] // root_uri: servers older than workspace folders still read it.
    InitializeParams {
        process_id: Some(std::process::id()),
        root_uri: root_uri.clone(),
        capabilities,
        workspace_folders: root_uri
            .map(|uri| vec![WorkspaceFolder { uri, name: "root".to_owned() }]),
        client_info: Some(ClientInfo {
            name: "hands".to_owned(),
            version: Some(env!("CARGO_PKG_VERSION").to_owned()),
        }),
        initialization_options: Some(options),
        ..Default::default()
    }
}
