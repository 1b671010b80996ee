//! The code intelligence of one session: its language servers, started when a file of their
//! language is first touched, kept warm, restarted when they crash (at most `max_restarts`
//! times, then given up on and said so), and stopped when the session closes.
//!
//! One [`Code`] per session lives in a session extension, created on first use; creating it
//! registers a closer (stop every server), and watch.rs adds the session's change watcher. The
//! servers are processes of the session's `Supervisor`, so they count as its processes and the
//! supervisor's own close stops whatever a server left behind.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use hands_core::Session;
use hands_exec::{ExecConfig, Status, Supervisor};

use crate::CodeConfig;
use crate::language::Language;
use crate::report::Problem;
use crate::server::{Launch, Server};

/// What the tools share.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// `[code]`
    pub code: CodeConfig,
    /// The supervisor's settings.
    pub exec: ExecConfig,
}

/// The state of one language's server.
#[derive(Debug, Default)]
struct Slot {
    server: Option<Arc<Server>>,
    /// How many times it was started.
    starts: u32,
    /// Why it was given up on.
    given_up: Option<String>,
}

/// A server, or why there is none, and what happened on the way (restarts) for the model.
pub struct Acquired {
    /// The server, or why there is none.
    pub server: Result<Arc<Server>, String>,
    /// News: a crash noticed, a restart, a give-up.
    pub news: Vec<String>,
}

/// The session's slot for its code intelligence.
#[derive(Default)]
struct Extension(OnceLock<Arc<Code>>);

/// The language servers of one session.
pub struct Code {
    pub(crate) settings: Arc<Settings>,
    pub(crate) root: PathBuf,
    supervisor: Arc<Supervisor>,
    slots: tokio::sync::Mutex<HashMap<Language, Slot>>,
    /// What was last reported per file: the errors already told are not told again.
    pub(crate) reported: Mutex<HashMap<PathBuf, Vec<Problem>>>,
}

impl std::fmt::Debug for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Code").field("root", &self.root).finish_non_exhaustive()
    }
}

impl Code {
    /// The session's code intelligence and whether this call created it (see
    /// `crate::watch::code_of`, which every caller goes through).
    pub(crate) fn get_or_create(session: &Session, settings: &Arc<Settings>) -> (Arc<Code>, bool) {
        let slot = session.extension::<Extension>();
        let mut created = false;
        let code = slot.0.get_or_init(|| {
            created = true;
            Arc::new(Code {
                settings: Arc::clone(settings),
                root: session.root().to_path_buf(),
                supervisor: Supervisor::of(session, &settings.exec),
                slots: tokio::sync::Mutex::new(HashMap::new()),
                reported: Mutex::new(HashMap::new()),
            })
        });
        if created {
            // After the supervisor's closer was registered: closers run newest first, so the
            // servers get their polite shutdown before the supervisor stops what is left.
            let on_close = Arc::clone(code);
            session.on_close(Box::new(move || Box::pin(async move { on_close.stop_all().await })));
        }
        (Arc::clone(code), created)
    }

    /// The session's code intelligence if it was created.
    pub fn existing(session: &Session) -> Option<Arc<Code>> {
        session.get_extension::<Extension>().and_then(|slot| slot.0.get().cloned())
    }

    /// The server of `language`, started (or restarted) if need be.
    pub async fn server(&self, language: Language) -> Acquired {
        let config = &self.settings.code;
        let mut news = Vec::new();
        let mut slots = self.slots.lock().await;
        let slot = slots.entry(language).or_default();
        if let Some(server) = &slot.server {
            if server.is_alive() {
                return Acquired { server: Ok(Arc::clone(server)), news };
            }
            let how = match server.proc.status() {
                Status::Exited { code: Some(code), .. } => format!("exited with code {code}"),
                Status::Exited { signal: Some(signal), .. } => {
                    format!("was killed by signal {signal}")
                }
                Status::Stopped { reason } => format!("was stopped ({reason})"),
                _ => "closed its connection".to_owned(),
            };
            news.push(format!(
                "the {} language server {how}{}",
                language.title(),
                stderr_tail(server)
            ));
            slot.server = None;
        }
        if let Some(reason) = &slot.given_up {
            return Acquired { server: Err(reason.clone()), news };
        }
        let Some(argv) = language.command(config, &self.root) else {
            let reason = format!(
                "no {} language server is installed ({})",
                language.title(),
                install_hint(language)
            );
            return Acquired { server: Err(reason), news };
        };
        if slot.starts > config.max_restarts {
            let reason = format!(
                "the {} language server failed {} times; hands gave up on it for this session",
                language.title(),
                slot.starts
            );
            news.push(reason.clone());
            slot.given_up = Some(reason.clone());
            return Acquired { server: Err(reason), news };
        }
        if slot.starts > 0 {
            news.push(format!(
                "restarting the {} language server (restart {} of at most {})",
                language.title(),
                slot.starts,
                config.max_restarts
            ));
        }
        // One start per call: a server that hangs on initialize costs one timeout per call, and
        // the next call that needs it tries again, until the restarts are used up.
        slot.starts += 1;
        let launch = Launch {
            language,
            argv: &argv,
            root: &self.root,
            memory_mb: config.memory_mb,
            initialize_timeout: Duration::from_millis(config.initialize_timeout_ms),
            max_per_file: config.max_diagnostics_per_file,
        };
        match Server::start(&self.supervisor, launch).await {
            Ok(server) => {
                slot.server = Some(Arc::clone(&server));
                Acquired { server: Ok(server), news }
            }
            Err(err) => {
                let reason = err.to_string();
                news.push(reason.clone());
                if slot.starts > config.max_restarts {
                    let gave_up = format!(
                        "hands gave up on the {} language server for this session after {} failed starts",
                        language.title(),
                        slot.starts
                    );
                    news.push(gave_up.clone());
                    slot.given_up = Some(gave_up.clone());
                    return Acquired { server: Err(format!("{reason}; {gave_up}")), news };
                }
                Acquired { server: Err(reason), news }
            }
        }
    }

    /// The languages with a running server.
    pub async fn running(&self) -> Vec<Arc<Server>> {
        let slots = self.slots.lock().await;
        slots.values().filter_map(|s| s.server.clone()).filter(|s| s.is_alive()).collect()
    }

    /// Each language: its server's command when installed, and its state.
    pub async fn status(&self) -> Vec<(Language, Option<String>, &'static str)> {
        let slots = self.slots.lock().await;
        Language::ALL
            .iter()
            .map(|&language| {
                let command =
                    language.command(&self.settings.code, &self.root).map(|a| a.join(" "));
                let state = match slots.get(&language) {
                    Some(Slot { given_up: Some(_), .. }) => "given up",
                    Some(Slot { server: Some(s), .. }) if s.is_alive() => "running",
                    Some(Slot { server: Some(_), .. }) => "exited",
                    _ if command.is_some() => "not started",
                    _ => "not installed",
                };
                (language, command, state)
            })
            .collect()
    }

    async fn stop_all(&self) {
        let servers: Vec<_> = {
            let mut slots = self.slots.lock().await;
            slots.values_mut().filter_map(|s| s.server.take()).collect()
        };
        for server in servers {
            server.stop().await;
        }
    }

    /// The problems of `path` as last published, filtered by severity.
    pub(crate) fn problems(
        &self,
        server: &Server,
        path: &Path,
        warnings: bool,
    ) -> (Vec<Problem>, usize) {
        let Some(file) = server.diagnostics.get(path) else { return (Vec::new(), 0) };
        let rel = crate::report::relative(&self.root, path);
        let problems = file
            .items
            .iter()
            .filter(|d| crate::report::wanted(d, warnings))
            .map(|d| Problem::new(&rel, d))
            .collect();
        (problems, file.dropped)
    }

    /// Remember `problems` as what was reported of `path`; returns what was reported before.
    pub(crate) fn remember(&self, path: &Path, problems: Vec<Problem>) -> Option<Vec<Problem>> {
        self.reported
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(path.to_path_buf(), problems)
    }
}

fn install_hint(language: Language) -> &'static str {
    match language {
        Language::TypeScript => {
            "add typescript-language-server and typescript to the project's devDependencies, or put it on PATH"
        }
        Language::Python => {
            "install pyright or basedpyright (npm or pip), or put pyright-langserver on PATH"
        }
        Language::Rust => {
            "rust-analyzer runs in a Cargo project (Cargo.toml at the root); install it with rustup component add rust-analyzer"
        }
        Language::Go => "gopls runs in a Go module (go.mod at the root); install gopls",
    }
}

/// The last lines of a dead server's stderr, secrets replaced, for the model.
fn stderr_tail(server: &Server) -> String {
    let text = server.stderr();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return String::new();
    }
    let tail = lines[lines.len().saturating_sub(3)..].join(" | ");
    let tail: String = tail.chars().take(400).collect();
    format!("; its stderr ends: {tail}")
}
