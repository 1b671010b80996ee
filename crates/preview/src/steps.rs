//! The typecheck and build steps: one command each, run to its end as a supervised process of the
//! session, with its output kept; a failure becomes `lastError` (the command, its exit and its last
//! lines) and one collector entry per compiler error found in the output (TypeScript's
//! `file(line,col): error TS…`, esbuild's and Vite's `file:line:col: ERROR: …`), or one entry with
//! the output's end when none is recognised.

use std::time::Duration;

use hands_exec::{Kind, SpawnSpec, Status};

use crate::collector::{Collector, ErrorKind, Occurrence};
use crate::launch::{Launch, last_lines};

/// Output kept of one step (head and tail).
const STEP_OUTPUT: usize = 256 * 1024;
/// Lines of output shown in `lastError`.
const LAST_LINES: usize = 30;

/// How a failed step ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepError {
    /// The command failed; the message says how and shows its last lines.
    Failed(String),
    /// The preview was closed or the call cancelled.
    Cancelled,
}

/// Run `command` (already wrapped with its environment) in `root`; `what` is `typecheck` or
/// `build`. Errors found in a failed step's output are recorded in `errors`.
pub async fn run(
    launch: Launch<'_>,
    what: ErrorKind,
    shown: &str,
    command: String,
    limit: Duration,
    errors: &Collector,
) -> Result<(), StepError> {
    let Launch { supervisor, root, grace, cancel } = launch;
    let name = if what == ErrorKind::Typecheck { "typecheck" } else { "build" };
    let spec = SpawnSpec {
        command,
        kind: Kind::Foreground,
        name: Some(format!("preview {name}")),
        cwd: root.to_path_buf(),
        head: STEP_OUTPUT / 4,
        tail: STEP_OUTPUT - STEP_OUTPUT / 4,
        log: false,
    };
    let proc = supervisor.spawn(spec).map_err(|err| {
        StepError::Failed(format!("The {name} command `{shown}` could not be started: {err}."))
    })?;
    let outcome = tokio::select! {
        status = proc.wait_exit() => Some(status),
        () = tokio::time::sleep(limit) => None,
        () = cancel.cancelled() => {
            proc.stop("aborted", grace).await;
            supervisor.forget(&proc.id);
            return Err(StepError::Cancelled);
        }
    };
    let Some(status) = outcome else {
        proc.stop("timeout", grace).await;
        supervisor.forget(&proc.id);
        let text = proc.snapshot().text();
        return Err(StepError::Failed(format!(
            "The {name} command `{shown}` did not finish within {} s (preview.build_timeout_ms) \
             and was stopped. Last output:\n{}",
            limit.as_secs(),
            last_lines(&text, LAST_LINES)
        )));
    };
    // Its descendants may still hold the pipe for a moment; the output so far is what counts.
    let _ = tokio::time::timeout(Duration::from_secs(2), proc.wait_drained()).await;
    if proc.has_leftovers() {
        proc.stop("finished", grace).await;
    }
    supervisor.forget(&proc.id);
    let text = proc.snapshot().text();
    match status {
        Status::Exited { code: Some(0), .. } => Ok(()),
        other => {
            let how = match other {
                Status::Exited { code: Some(code), .. } => format!("exited with code {code}"),
                Status::Exited { signal: Some(signal), .. } => {
                    format!("was killed by signal {signal}")
                }
                _ => "failed".to_owned(),
            };
            let found = compiler_errors(&text);
            if found.is_empty() {
                errors.record_build(
                    what,
                    Occurrence {
                        message: format!("`{shown}` {how}:\n{}", last_lines(&text, 12)),
                        location: None,
                        stack: Vec::new(),
                    },
                );
            }
            for (location, message) in &found {
                errors.record_build(
                    what,
                    Occurrence {
                        message: message.clone(),
                        location: Some(location.clone()),
                        stack: Vec::new(),
                    },
                );
            }
            Err(StepError::Failed(format!(
                "The {name} failed: `{shown}` {how}.{}\n{}",
                match found.len() {
                    0 => String::new(),
                    1 => " 1 error.".to_owned(),
                    n => format!(" {n} errors."),
                },
                last_lines(&text, LAST_LINES)
            )))
        }
    }
}

/// Compiler errors in a step's output, as (`file:line:col`, message).
pub fn compiler_errors(text: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(hit) = typescript_error(line).or_else(|| esbuild_error(line)) {
            found.push(hit);
        }
        if found.len() >= 50 {
            break;
        }
    }
    found
}

/// `src/a.ts(3,7): error TS2322: Type …`
fn typescript_error(line: &str) -> Option<(String, String)> {
    let (place, message) = line.split_once("): error ")?;
    let (file, position) = place.rsplit_once('(')?;
    let (row, col) = position.split_once(',')?;
    row.parse::<u32>().ok()?;
    col.parse::<u32>().ok()?;
    Some((format!("{file}:{row}:{col}"), format!("error {message}")))
}

/// `src/a.ts:3:7: ERROR: Expected ";" but found "x"` (esbuild, Vite, Bun).
fn esbuild_error(line: &str) -> Option<(String, String)> {
    let line = line.strip_prefix("✘ [ERROR] ").unwrap_or(line);
    let (place, message) = line.split_once(": ERROR: ").or_else(|| line.split_once(": error: "))?;
    let mut parts = place.rsplitn(3, ':');
    let col = parts.next()?;
    let row = parts.next()?;
    let file = parts.next()?;
    row.parse::<u32>().ok()?;
    col.parse::<u32>().ok()?;
    Some((format!("{file}:{row}:{col}"), message.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typescript_and_esbuild_errors_are_found() {
        let out = "\
src/explode.ts(9,9): error TS2322: Type 'number' is not assignable to type 'string'.
noise
src/main.ts:3:7: ERROR: Expected \";\" but found \"x\"
Found 2 errors.";
        assert_eq!(
            compiler_errors(out),
            vec![
                (
                    "src/explode.ts:9:9".to_owned(),
                    "error TS2322: Type 'number' is not assignable to type 'string'.".to_owned()
                ),
                ("src/main.ts:3:7".to_owned(), "Expected \";\" but found \"x\"".to_owned()),
            ]
        );
        assert!(compiler_errors("all good\n").is_empty());
    }
}
