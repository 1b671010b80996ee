//! The per-session process supervisor.
//!
//! Flow of a process: `spawn` starts `<shell> -c <command>` in its own session and process group
//! (stdin closed, stdout and stderr on one pipe, the non-interactive environment plus the markers), a
//! drain thread reads the pipe into the [`Proc`]'s head+tail buffer (and log file for background
//! processes) as fast as it is written, and the exit is observed through a pidfd (its status read
//! with `WNOWAIT`, so the zombie keeps the pid and process group from being reused while we may
//! still signal the group). `stop` sends SIGTERM to the group and to every marked descendant,
//! waits the grace period, SIGKILLs what is left (freezing fork loops first), reaps, and verifies
//! that nothing marked survives.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use hands_core::{CancellationToken, Session};
use tokio::sync::watch;

use crate::config::ExecConfig;
use crate::kill::{self, StopReport};
use crate::output::{CappedLog, HeadTail};
use crate::procfs::{self, Target};
use crate::record::{self, Record};
use crate::shared::{Exit, Life, Shared, remove_record};
use crate::terminal::{Pty, Screen, Size, Terminal};
use crate::watch::{Script, reap_on_sigchld, spawn_drain, watch_exit};
use crate::{reap, spawn, tracked};

/// Commands longer than this go through a script file: one exec argument is limited to 128 KiB.
pub const INLINE_COMMAND_MAX: usize = 100 * 1024;

/// What kind of process this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A bash call: the call waits for it.
    Foreground,
    /// Runs until stopped (dev servers).
    Daemon,
    /// Finishes by itself; its exit is announced to the session.
    LongRun,
    /// Runs in a pseudo-terminal the model types into (a REPL, a prompt, a full-screen program).
    Terminal,
}

/// How to start a process.
#[derive(Debug, Clone)]
pub struct SpawnSpec {
    /// The shell command line.
    pub command: String,
    /// Foreground, daemon or long-run.
    pub kind: Kind,
    /// A name for people (defaults to the command).
    pub name: Option<String>,
    /// Working directory (the project root).
    pub cwd: PathBuf,
    /// Bytes of output kept in memory: the first `head` and the last `tail`.
    pub head: usize,
    /// See `head`.
    pub tail: usize,
    /// Write the output to a capped log file under `.hands/processes/` too.
    pub log: bool,
}

/// A program started without a shell (a package manager with arguments it was given): no word of
/// it is interpreted, `argv[0]` is looked up on PATH.
#[derive(Debug, Clone)]
pub struct Argv {
    /// The program and its arguments.
    pub argv: Vec<String>,
    /// Variables set on top of the child's environment (`CI=1`).
    pub env: Vec<(String, String)>,
    /// The project whose granted secrets the child gets: its root, where `SpawnSpec::cwd` may be
    /// a sub-project.
    pub project: PathBuf,
}

/// Where a process is in its life.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum Status {
    /// Still running.
    Running,
    /// The main process exited by itself.
    Exited {
        /// Its exit code, when it exited normally.
        code: Option<i32>,
        /// The signal that ended it, if any.
        signal: Option<i32>,
    },
    /// Stopped by hands (stop_process, timeout, abort, session end).
    Stopped {
        /// Why: "stopped", "timeout", "aborted", "session ended".
        reason: String,
    },
}

/// Output of a process as kept: head, tail, and how much was dropped between them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// The first bytes.
    pub head: Vec<u8>,
    /// The last bytes (not overlapping `head`).
    pub tail: Vec<u8>,
    /// Bytes produced in all.
    pub total: u64,
    /// Bytes between head and tail that were not kept.
    pub dropped: u64,
}

impl Snapshot {
    /// Head and tail as text (invalid UTF-8 replaced), with `… [N bytes dropped] …` between them
    /// when something was dropped.
    pub fn text(&self) -> String {
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        if self.dropped > 0 {
            if !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&format!("… [{} bytes dropped] …\n", self.dropped));
        }
        text.push_str(&String::from_utf8_lossy(&self.tail));
        text
    }
}

/// One supervised process.
#[derive(Debug)]
pub struct Proc {
    /// Short id, unique in the session (`p1`, `p2`, … for background processes, `b1`, … for bash
    /// calls).
    pub id: String,
    /// Pid of the shell (also its process group and session id).
    pub pid: u32,
    /// Foreground, daemon or long-run.
    pub kind: Kind,
    /// Name for people.
    pub name: String,
    /// The command line.
    pub command: String,
    /// When it started.
    pub started: Instant,
    /// When it started, wall clock.
    pub started_at: SystemTime,
    /// Its start time in clock ticks since boot (as `/proc` says).
    start_tick: u64,
    shared: Arc<Shared>,
    marker: String,
    owner: String,
    session: String,
    log_path: Option<String>,
    terminal: Option<Terminal>,
}

impl Proc {
    /// Its terminal, for a terminal session.
    pub fn terminal(&self) -> Option<&Terminal> {
        self.terminal.as_ref()
    }

    fn target(&self, with_group: bool) -> Target {
        Target {
            owner: self.owner.clone(),
            session: Some(self.session.clone()),
            process: Some(self.marker.clone()),
            group: with_group.then_some(self.pid as i32),
            // A bash call also stops the unmarked orphans born while it ran (a background
            // process's may be long-lived on purpose; the end of its session stops those).
            orphans_since: (self.kind == Kind::Foreground).then_some(self.start_tick),
        }
    }

    /// Where it is now.
    pub fn status(&self) -> Status {
        let life = self.shared.life();
        match (&life.exit, &life.stop_reason) {
            (None, _) => Status::Running,
            (Some(_), Some(reason)) => Status::Stopped { reason: reason.clone() },
            (Some(exit), None) => Status::Exited { code: exit.code, signal: exit.signal },
        }
    }

    /// How the main process ended, once it has.
    pub fn exit(&self) -> Option<Exit> {
        self.shared.life().exit
    }

    /// The marker its descendants carry (`HANDS_PROCESS`).
    pub fn marker(&self) -> &str {
        &self.marker
    }

    /// Wait until the main process has exited (not necessarily its descendants).
    pub async fn wait_exit(&self) -> Status {
        let mut rx = self.shared.exited.subscribe();
        let _ = rx.wait_for(|done| *done).await;
        self.status()
    }

    /// Wait until every writer of the output pipe is gone and the output is fully drained.
    pub async fn wait_drained(&self) {
        let mut rx = self.shared.drained.subscribe();
        let _ = rx.wait_for(|done| *done).await;
    }

    /// The output kept so far.
    pub fn snapshot(&self) -> Snapshot {
        let out = self.shared.output.lock().unwrap_or_else(PoisonError::into_inner);
        Snapshot {
            head: out.head().to_vec(),
            tail: out.tail(),
            total: out.total(),
            dropped: out.dropped(),
        }
    }

    /// Output bytes after byte offset `cursor` that are still in memory, the new cursor (= total
    /// produced), and how many bytes after `cursor` were dropped before they could be read.
    pub fn read_since(&self, cursor: u64) -> (Vec<u8>, u64, u64) {
        let out = self.shared.output.lock().unwrap_or_else(PoisonError::into_inner);
        let (bytes, dropped) = out.since(cursor);
        (bytes, out.total(), dropped)
    }

    /// A receiver that changes whenever output arrives or the process exits (for readiness checks).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.shared.progress.subscribe()
    }

    /// Pids of the process and all its live descendants, including those that escaped the group
    /// (found by their marker).
    pub fn pids(&self) -> Vec<u32> {
        let with_group = !self.shared.life().reaped;
        procfs::find(&self.target(with_group)).into_iter().map(|p| p.pid.unsigned_abs()).collect()
    }

    /// True when a descendant of this process may still be alive (the main process excluded):
    /// a quick walk of hands' own process tree rather than a scan of every process.
    pub fn has_leftovers(&self) -> bool {
        let with_group = !self.shared.life().reaped;
        procfs::any_left(&self.target(with_group), self.pid as i32)
    }

    /// SIGTERM to the process group, while its leader is not reaped (until then the group id
    /// cannot name anyone else). The first step of a stop, for ordered shutdowns.
    pub(crate) fn terminate_group(&self, reason: &str) {
        let mut life = self.shared.life();
        if life.exit.is_none() && !life.reaped {
            // Recorded first, so that the exit this causes reads as a stop, not a crash.
            if life.stop_reason.is_none() {
                life.stop_reason = Some(reason.to_owned());
            }
            kill::term_group(self.pid as i32);
            life.group_termed = true;
        }
    }

    /// Path of the log file relative to the root, for background processes.
    pub fn log_path(&self) -> Option<String> {
        self.log_path.clone()
    }

    /// Stop the process and every descendant: SIGTERM, `grace`, SIGKILL, reap, verify.
    pub async fn stop(&self, reason: &str, grace: Duration) -> StopReport {
        let (with_group, termed) = {
            let mut life = self.shared.life();
            life.stopping = true;
            if life.exit.is_none() && life.stop_reason.is_none() {
                life.stop_reason = Some(reason.to_owned());
            }
            (!life.reaped, life.group_termed)
        };
        let target = self.target(with_group);
        let shared = Arc::clone(&self.shared);
        let pid = self.pid as i32;
        let job = tokio::task::spawn_blocking(move || {
            let report = kill::stop(&target, grace, termed);
            // The main process is dead or dying now; reap it (bounded: a process in
            // uninterruptible sleep may take a moment).
            for _ in 0..100 {
                if shared.reap_main(pid, &mut shared.life()) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            shared.life().stopping = false;
            reap::request_reap();
            if report.survivors == 0 {
                remove_record(&shared);
            }
            report
        });
        match job.await {
            Ok(report) => report,
            Err(err) => {
                tracing::error!(%err, "stop task failed");
                StopReport { survivors: 1, ..StopReport::default() }
            }
        }
    }
}

/// The session's slot for its supervisor (created once, even under concurrent first use).
#[derive(Default)]
struct Slot(OnceLock<Arc<Supervisor>>);

/// The processes of one session.
#[derive(Debug)]
pub struct Supervisor {
    config: ExecConfig,
    session: String,
    closed: CancellationToken,
    is_closed: AtomicBool,
    procs: Mutex<Vec<Arc<Proc>>>,
    next_background: AtomicU64,
    next_foreground: AtomicU64,
    records: Mutex<Option<PathBuf>>,
    /// The start time (clock ticks) of the session's first process: the end of the session
    /// stops the unmarked orphans born since.
    first_tick: AtomicU64,
}

impl Supervisor {
    /// The session's supervisor, created on first use; it stops every process when the session
    /// closes.
    pub fn of(session: &Session, config: &ExecConfig) -> Arc<Supervisor> {
        let slot = session.extension::<Slot>();
        let mut created = false;
        let sup = slot.0.get_or_init(|| {
            created = true;
            Arc::new(Supervisor {
                config: config.clone(),
                session: session.id().to_owned(),
                closed: session.closed_token().clone(),
                is_closed: AtomicBool::new(false),
                procs: Mutex::new(Vec::new()),
                next_background: AtomicU64::new(0),
                next_foreground: AtomicU64::new(0),
                records: Mutex::new(record::records_dir()),
                first_tick: AtomicU64::new(u64::MAX),
            })
        });
        if created {
            let on_close = Arc::clone(sup);
            session.on_close(Box::new(move || {
                Box::pin(async move {
                    on_close.is_closed.store(true, Ordering::SeqCst);
                    on_close.stop_all("session ended").await;
                })
            }));
            if let Ok(handle) = tokio::runtime::Handle::try_current() {
                handle.spawn(reap_on_sigchld(sup.closed.clone()));
            }
        }
        Arc::clone(sup)
    }

    /// Where records of background processes are written (None: not at all). Defaults to
    /// [`crate::records_dir`]; tests point it elsewhere.
    pub fn set_records_dir(&self, dir: Option<PathBuf>) {
        *self.records.lock().unwrap_or_else(PoisonError::into_inner) = dir;
    }

    /// Start a process. Must be called within a tokio runtime.
    pub fn spawn(&self, spec: SpawnSpec) -> std::io::Result<Arc<Proc>> {
        self.start(spec, None, None)
    }

    /// Start a shell command in a new pseudo-terminal of `size` (its controlling terminal, its
    /// own session and process group, `TERM=xterm-256color`), supervised like any process; its
    /// kind should be [`Kind::Terminal`]. Must be called within a tokio runtime.
    pub fn spawn_terminal(&self, spec: SpawnSpec, size: Size) -> std::io::Result<Arc<Proc>> {
        self.start(spec, None, Some(size))
    }

    /// Start `argv` without a shell, supervised like any process (its own session and process
    /// group, the markers, the whole tree stopped by [`Proc::stop`]); `spec.command` is only how
    /// it is shown. Must be called within a tokio runtime.
    pub fn spawn_argv(&self, spec: SpawnSpec, argv: &Argv) -> std::io::Result<Arc<Proc>> {
        if argv.argv.is_empty() || argv.argv.iter().any(|a| a.contains('\0')) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "the argv is empty or contains a NUL byte",
            ));
        }
        self.start(spec, Some(argv), None)
    }

    fn start(
        &self,
        spec: SpawnSpec,
        argv: Option<&Argv>,
        terminal: Option<Size>,
    ) -> std::io::Result<Arc<Proc>> {
        if self.is_closed.load(Ordering::SeqCst) || self.closed.is_cancelled() {
            return Err(std::io::Error::other("the session has ended"));
        }
        if spec.command.contains('\0') {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "the command contains a NUL byte",
            ));
        }
        let runtime = tokio::runtime::Handle::try_current().map_err(std::io::Error::other)?;
        let id = match spec.kind {
            Kind::Foreground => {
                format!("b{}", self.next_foreground.fetch_add(1, Ordering::SeqCst) + 1)
            }
            _ => format!("p{}", self.next_background.fetch_add(1, Ordering::SeqCst) + 1),
        };
        let marker = format!("{}/{id}", self.session);
        let owner = procfs::owner_marker();
        let markers = [
            (procfs::OWNER_VAR, owner.clone()),
            (procfs::SESSION_VAR, self.session.clone()),
            (procfs::PROCESS_VAR, marker.clone()),
        ];
        let script = if argv.is_none() && spec.command.len() > INLINE_COMMAND_MAX {
            Some(Script::write(&spec.command)?)
        } else {
            None
        };
        let program = match (argv, &script) {
            (Some(argv), _) => spawn::Program::Argv(&argv.argv),
            (None, Some(s)) => spawn::Program::Script(&s.0),
            (None, None) => spawn::Program::Inline(&spec.command),
        };
        // A shell command starts in its project's root (`SpawnSpec::cwd`): the secrets granted
        // there.
        let vars = spawn::ChildVars {
            project: argv.map_or(spec.cwd.as_path(), |a| a.project.as_path()),
            markers: &markers,
            extra: argv.map_or(&[], |a| a.env.as_slice()),
        };
        let (log, log_path) = if spec.log {
            // Through a handle on the root, never following a symlinked `.hands/processes`.
            let dir = hands_core::middleware::truncate::hands_subdir(&spec.cwd, "processes")?;
            let (log, name) = CappedLog::create(&dir, &id, self.config.processes.log_max_bytes)?;
            (Some(log), Some(format!(".hands/processes/{name}")))
        } else {
            (None, None)
        };
        reap::become_subreaper();
        let pty = terminal.map(Pty::open).transpose()?;
        let stdio = match &pty {
            Some(pty) => spawn::Io::Terminal(pty.slave_path.as_c_str()),
            None => spawn::Io::Pipe,
        };
        let started = {
            // Held across the fork so that the orphan reaper never sees the child untracked.
            let mut guard = tracked::tracked();
            let started = spawn::start(&self.config.bash.shell, program, &spec.cwd, &vars, stdio)?;
            tracked::track(&mut guard, started.pid as i32);
            started
        };
        let pid = started.pid;
        // The drain reads the pipe, or a second descriptor of the terminal's master; hands' own
        // copy of the slave goes once the child holds it.
        let (output, terminal) = match (started.output, pty) {
            (Some(pipe), _) => (pipe, None),
            (None, Some(pty)) => {
                drop(pty.slave);
                let reader = rustix::io::fcntl_dupfd_cloexec(&pty.master, 0)?;
                let screen = Arc::new(Screen::new(terminal.unwrap_or(Size::DEFAULT)));
                (reader, Some((pty.master, screen)))
            }
            (None, None) => return Err(std::io::Error::other("the child has no output")),
        };
        // Read while the child is unreaped (its pid cannot be reused yet).
        let start_tick = procfs::start_time(pid as i32).unwrap_or(0);
        self.first_tick.fetch_min(start_tick, Ordering::SeqCst);
        let shared = Arc::new(Shared {
            output: Mutex::new(HeadTail::new(spec.head, spec.tail)),
            log: Mutex::new(log),
            progress: watch::Sender::new(0),
            drained: watch::Sender::new(false),
            exited: watch::Sender::new(false),
            life: Mutex::new(Life::default()),
            record: Mutex::new(None),
            screen: terminal.as_ref().map(|(_, screen)| Arc::clone(screen)),
        });
        let proc = Arc::new(Proc {
            name: spec.name.clone().unwrap_or_else(|| spec.command.clone()),
            id,
            pid,
            kind: spec.kind,
            command: spec.command.clone(),
            started: Instant::now(),
            started_at: SystemTime::now(),
            start_tick,
            shared: Arc::clone(&shared),
            marker,
            owner,
            session: self.session.clone(),
            log_path,
            terminal: terminal.map(|(master, screen)| Terminal::new(master, screen)),
        });
        if spec.kind != Kind::Foreground {
            self.write_record(&proc);
        }
        spawn_drain(Arc::clone(&shared), output, script)?;
        runtime.spawn(watch_exit(Arc::clone(&shared), pid as i32, proc.target(false)));
        self.procs.lock().unwrap_or_else(PoisonError::into_inner).push(Arc::clone(&proc));
        Ok(proc)
    }

    fn write_record(&self, proc: &Proc) {
        let Some(dir) = self.records.lock().unwrap_or_else(PoisonError::into_inner).clone() else {
            return;
        };
        let me = procfs::own_pid();
        let pid = proc.pid as i32;
        let record = Record {
            owner_pid: me,
            owner_start: procfs::start_time(me).unwrap_or(0),
            owner: proc.owner.clone(),
            pid,
            pgid: pid,
            start: procfs::start_time(pid).unwrap_or(0),
            command: proc.command.clone(),
            session: self.session.clone(),
            marker: proc.marker.clone(),
        };
        match record.write(&dir) {
            Ok(path) => {
                *proc.shared.record.lock().unwrap_or_else(PoisonError::into_inner) = Some(path);
            }
            Err(err) => {
                tracing::warn!(%err, dir = %dir.display(), "could not write process record")
            }
        }
    }

    /// The process with this id.
    pub fn get(&self, id: &str) -> Option<Arc<Proc>> {
        self.procs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|p| p.id == id)
            .cloned()
    }

    /// Forget a finished process (bash forgets its call's process once it has answered).
    pub fn forget(&self, id: &str) {
        self.procs.lock().unwrap_or_else(PoisonError::into_inner).retain(|p| p.id != id);
    }

    /// Every background process, oldest first (foreground ones are not listed).
    pub fn list(&self) -> Vec<Arc<Proc>> {
        self.procs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|p| p.kind != Kind::Foreground)
            .cloned()
            .collect()
    }

    /// Background processes that are still running.
    pub fn running(&self) -> usize {
        self.list().iter().filter(|p| p.status() == Status::Running).count()
    }

    /// The configuration the supervisor was created with.
    pub fn config(&self) -> &ExecConfig {
        &self.config
    }

    /// Stop every process, newest first, then sweep for anything else carrying the session's
    /// marker.
    pub async fn stop_all(&self, reason: &str) {
        let procs: Vec<Arc<Proc>> = self
            .procs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .rev()
            .cloned()
            .collect();
        let grace = Duration::from_millis(self.config.processes.stop_grace_ms);
        // SIGTERM reaches the process groups strictly newest first (a dev server before the
        // database it uses); then the full stops run together, sharing one grace period.
        for p in &procs {
            p.terminate_group(reason);
        }
        let stops: Vec<_> = procs
            .into_iter()
            .map(|p| {
                let reason = reason.to_owned();
                tokio::spawn(async move { p.stop(&reason, grace).await })
            })
            .collect();
        for stop in stops {
            let _ = stop.await;
        }
        let first = self.first_tick.load(Ordering::SeqCst);
        let target = Target {
            owner: procfs::owner_marker(),
            session: Some(self.session.clone()),
            process: None,
            group: None,
            orphans_since: (first != u64::MAX).then_some(first),
        };
        let _ = tokio::task::spawn_blocking(move || kill::stop(&target, grace, false)).await;
    }

    /// Pids of every live process that carries this session's marker.
    pub fn session_pids(&self) -> Vec<u32> {
        let target = Target {
            owner: procfs::owner_marker(),
            session: Some(self.session.clone()),
            process: None,
            group: None,
            orphans_since: None,
        };
        procfs::find(&target).into_iter().map(|p| p.pid.unsigned_abs()).collect()
    }
}

/// A session dropped without `close()` (a front end that forgot, a panic that unwound) must not
/// leave its processes running: kill the groups that are still ours. Only groups whose leader is
/// not reaped yet are signalled — until it is reaped, the group id cannot name anyone else.
/// Descendants that escaped their group are left to the records (the next hands stops them).
impl Drop for Supervisor {
    fn drop(&mut self) {
        let procs = std::mem::take(&mut *self.procs.lock().unwrap_or_else(PoisonError::into_inner));
        for proc in procs {
            let life = proc.shared.life();
            if life.exit.is_none()
                && !life.reaped
                && let Some(pid) = rustix::process::Pid::from_raw(proc.pid as i32)
            {
                let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
            }
        }
    }
}
