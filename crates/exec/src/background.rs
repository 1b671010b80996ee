//! The session's background processes as front ends and the process tools see them: the rows of
//! [`hands_core::process::ProcessList`], stopping one with a report in words, and
//! [`ExecProcesses`], the [`ProcessService`] exec installs on the registry so that a host lists,
//! reads and stops processes without calling a tool.

use std::sync::Arc;
use std::time::Duration;

use hands_core::process::{ProcessError, ProcessList, ProcessRow, ProcessStopped, ProcessTools};
use hands_core::{BoxFuture, ProcessService, Session};

use crate::config::ExecConfig;
use crate::notes::{
    LAST_LINES, Notes, block, describe, exit_code, human, label, last_lines, process_kind,
    run_time, state,
};
use crate::supervisor::{Proc, Status, Supervisor};

/// The error for an id the session does not know; it lists the ids it does.
pub(crate) fn unknown(supervisor: &Supervisor, id: &str) -> ProcessError {
    let ids: Vec<String> = supervisor.list().iter().map(|p| p.id.clone()).collect();
    ProcessError::NotFound(if ids.is_empty() {
        format!(
            "No background process `{id}`: this session has none. Start one with spawn_process."
        )
    } else {
        format!("No background process `{id}`. Known ids: {}. See list_processes.", ids.join(", "))
    })
}

/// The row of a background process (`None` for a foreground command of bash).
fn row(proc: &Proc, notes: &Notes) -> Option<ProcessRow> {
    let kind = process_kind(proc.kind)?;
    let note = notes.get(&proc.id);
    let status = proc.status();
    let total = proc.snapshot().total;
    Some(ProcessRow {
        id: proc.id.clone(),
        kind,
        name: proc.name.clone(),
        command: proc.command.clone(),
        pid: proc.pid,
        status: state(&status),
        detail: describe(&status),
        exit_code: exit_code(&status),
        duration_ms: u64::try_from(run_time(proc, &note).as_millis()).unwrap_or(u64::MAX),
        url: note.url,
        port: note.port,
        unread_bytes: total.saturating_sub(note.cursor),
        log: proc.log_path(),
    })
}

/// The session's background processes, oldest first.
pub(crate) fn list(supervisor: &Supervisor, notes: &Notes) -> ProcessList {
    ProcessList { processes: supervisor.list().iter().filter_map(|p| row(p, notes)).collect() }
}

/// Stop `proc` (SIGTERM to its group, SIGKILL after `grace`) and say what happened; a process that
/// already ended is reported as such.
pub(crate) async fn stop(proc: &Proc, notes: &Notes, grace: Duration) -> String {
    let before = proc.status();
    if before != Status::Running {
        notes.ended(&proc.id);
        let ran = human(run_time(proc, &notes.get(&proc.id)));
        return format!(
            "{} was not running: it {} after {ran}. Nothing to stop. Last lines:\n{}",
            label(proc),
            describe(&before),
            block(&last_lines(proc, LAST_LINES))
        );
    }
    let report = proc.stop("stopped", grace).await;
    notes.ended(&proc.id);
    let _ = tokio::time::timeout(Duration::from_secs(1), proc.wait_drained()).await;
    let note = notes.get(&proc.id);
    let mut text = format!(
        "Stopped {} after {}: SIGTERM to {} process(es)",
        label(proc),
        human(run_time(proc, &note)),
        report.terminated
    );
    if report.killed > 0 {
        text.push_str(&format!(
            ", {} still alive after the {} grace got SIGKILL",
            report.killed,
            human(grace)
        ));
    }
    text.push_str(&format!(". Status: {}.", describe(&proc.status())));
    if report.survivors > 0 {
        text.push_str(&format!(
            "\nWarning: {} of its processes could not be stopped.",
            report.survivors
        ));
    }
    text.push_str(&format!("\nLast lines:\n{}", block(&last_lines(proc, LAST_LINES))));
    text
}

/// exec's [`ProcessService`]: the session's [`Supervisor`] and [`Notes`], as the process tools
/// see them.
#[derive(Debug, Clone)]
pub struct ExecProcesses {
    config: ExecConfig,
}

impl ExecProcesses {
    /// Over the supervisors made with `config`, ready to install
    /// (`builder.service::<Arc<dyn ProcessService>>(…)`).
    pub fn service(config: ExecConfig) -> Arc<dyn ProcessService> {
        Arc::new(Self { config })
    }

    fn grace(&self) -> Duration {
        Duration::from_millis(self.config.processes.stop_grace_ms)
    }
}

impl ProcessService for ExecProcesses {
    fn tools(&self) -> ProcessTools {
        ProcessTools { list: "list_processes", output: "process_output", stop: "stop_process" }
    }

    fn list<'a>(&'a self, session: &'a Session) -> BoxFuture<'a, ProcessList> {
        Box::pin(async move {
            list(&Supervisor::of(session, &self.config), &Notes::of_session(session))
        })
    }

    fn output<'a>(
        &'a self,
        session: &'a Session,
        id: &'a str,
        lines: usize,
    ) -> BoxFuture<'a, Result<String, ProcessError>> {
        Box::pin(async move {
            let supervisor = Supervisor::of(session, &self.config);
            let proc = supervisor.get(id).ok_or_else(|| unknown(&supervisor, id))?;
            Ok(last_lines(&proc, lines))
        })
    }

    fn stop<'a>(
        &'a self,
        session: &'a Session,
        id: &'a str,
    ) -> BoxFuture<'a, Result<ProcessStopped, ProcessError>> {
        Box::pin(async move {
            let supervisor = Supervisor::of(session, &self.config);
            let proc = supervisor.get(id).ok_or_else(|| unknown(&supervisor, id))?;
            let text = stop(&proc, &Notes::of_session(session), self.grace()).await;
            Ok(ProcessStopped { id: id.to_owned(), text })
        })
    }

    fn stop_running<'a>(&'a self, session: &'a Session) -> BoxFuture<'a, usize> {
        Box::pin(async move {
            let supervisor = Supervisor::of(session, &self.config);
            let notes = Notes::of_session(session);
            let running: Vec<Arc<Proc>> = supervisor
                .list()
                .into_iter()
                .filter(|p| process_kind(p.kind).is_some() && p.status() == Status::Running)
                .collect();
            let (count, grace) = (running.len(), self.grace());
            // Stopped side by side: each may wait its grace.
            let mut stopping = tokio::task::JoinSet::new();
            for proc in running {
                let notes = Arc::clone(&notes);
                stopping.spawn(async move { stop(&proc, &notes, grace).await });
            }
            while stopping.join_next().await.is_some() {}
            count
        })
    }
}
