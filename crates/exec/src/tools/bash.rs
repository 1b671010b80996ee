//! bash: run one shell command in the project root and answer with its output and exit code.
//!
//! Flow: validate the arguments, short-circuit a foreground dev server into a managed daemon,
//! spawn `<shell> -c <command>` through the session's [`Supervisor`], wait for the shell to exit
//! (or the timeout, or the call's cancel token), stop whatever the command left behind (background
//! jobs, setsid'd or double-forked children), wait for the output to drain, and render it.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hands_core::{Annotations, Context, Tool, ToolError, ToolOutput};
use hands_core::{Family, Label, Policy};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::config::ExecConfig;
use crate::launch::SpawnResult;
use crate::progress::report_progress;
use crate::supervisor::{Kind, Proc, SpawnSpec, Supervisor};
use crate::{daemon, devserver};

/// Arguments of bash.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BashArgs {
    /// The command line.
    pub command: String,
    /// Milliseconds (default 60000, at most 600000).
    #[serde(default)]
    pub timeout: Option<u64>,
}

/// The structured result of bash: everything its text says.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct BashResult {
    /// What the command printed (stdout and stderr together, in order): all of it, or its head and
    /// tail around a `… [N bytes dropped] …` line. Empty when it printed nothing. For a dev
    /// server started as a daemon, the daemon's report (as spawn_process gives it).
    pub output: String,
    /// Exit code of the shell, when it exited normally.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The signal that ended the shell, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// Wall time of the call in milliseconds.
    pub duration_ms: u64,
    /// Bytes of output produced (stdout and stderr together).
    pub output_bytes: u64,
    /// Bytes of output not kept (between the head and the tail shown).
    pub dropped_bytes: u64,
    /// True when the time limit stopped the command (and everything it started).
    pub timed_out: bool,
    /// True when the call was aborted (and the command, with everything it started, stopped).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub aborted: bool,
    /// Processes the command left running that were stopped after it (bash waits for the command
    /// only: start servers and other long-running work with spawn_process).
    pub stopped_leftovers: usize,
    /// Set when the command was a dev server, started (or reused) as a background daemon instead
    /// of run in the foreground: the daemon, as spawn_process reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daemon: Option<SpawnResult>,
}

/// The bash tool.
#[derive(Debug, Clone)]
pub struct Bash {
    config: ExecConfig,
}

impl Bash {
    /// With `config`.
    pub fn new(config: ExecConfig) -> Self {
        Self { config }
    }
}

impl Tool for Bash {
    type Args = BashArgs;

    /// A time limit past a client's usual minute.
    fn outlasts(&self, args: &Self::Args) -> bool {
        args.timeout.is_some_and(|ms| ms > 60_000)
    }

    fn name(&self) -> &'static str {
        "bash"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("bash.md"))
    }

    fn annotations(&self) -> Annotations {
        Annotations { read_only: false, destructive: true, idempotent: false, open_world: true }
    }

    fn policy(&self) -> Policy {
        Policy::from_annotations(self.annotations())
            .label(Label::Key { key: "command" })
            .family(Family::Processes)
            .guideline(
                "Check your work: run the project's build, tests or linters with bash when there \
                 are any.",
            )
            // bash enforces its own `timeout` (at most 600 s); this is only the backstop.
            .timeout_ms(610_000)
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        Some(hands_core::output_schema_for::<BashResult>())
    }

    async fn call(&self, ctx: Context, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let timeout = validate(&self.config, &args)?;
        // Daemons are background processes: with those disabled the command runs in the
        // foreground like any other (until it exits or times out).
        let shortcut = self.config.bash.dev_server_shortcut && self.config.background_processes;
        if shortcut && devserver::is_dev_server(&args.command) {
            let started = Instant::now();
            let output = daemon::start_or_reuse(&ctx, &self.config, &args.command).await?;
            return as_bash_result(output, started);
        }
        run(&ctx, &self.config, &args.command, timeout).await
    }
}

/// Check the arguments; the time limit to use.
fn validate(config: &ExecConfig, args: &BashArgs) -> Result<Duration, ToolError> {
    if args.command.trim().is_empty() {
        return Err(ToolError::model("`command` is empty: give the shell command line to run."));
    }
    if args.command.contains('\0') {
        return Err(ToolError::model(
            "`command` contains a NUL byte, which no command line can carry. Remove it; to \
             produce one, write it with printf (`printf 'a\\0b'`).",
        ));
    }
    let max = config.bash.max_timeout_ms;
    let ms = args.timeout.unwrap_or(config.bash.default_timeout_ms);
    if ms == 0 {
        return Err(ToolError::model("`timeout` must be at least 1 (milliseconds)."));
    }
    if ms > max {
        return Err(ToolError::model(format!(
            "`timeout` is {ms} ms, over the maximum of {max} ms. Ask for at most {max}, or start \
             long-running work with spawn_process (type `long-run`) and check on it with \
             process_output."
        )));
    }
    Ok(Duration::from_millis(ms))
}

/// How the wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Exited,
    TimedOut,
    Aborted,
}

/// Stops the call's process if the call is dropped before it finished (the caller gave up on it).
struct StopOnDrop {
    proc: Option<Arc<Proc>>,
    grace: Duration,
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        if let Some(proc) = self.proc.take()
            && let Ok(handle) = tokio::runtime::Handle::try_current()
        {
            let grace = self.grace;
            handle.spawn(async move { proc.stop("aborted", grace).await });
        }
    }
}

async fn run(
    ctx: &Context,
    config: &ExecConfig,
    command: &str,
    timeout: Duration,
) -> Result<ToolOutput, ToolError> {
    let started = Instant::now();
    let supervisor = Supervisor::of(ctx.session(), config);
    let max = config.bash.max_output_bytes;
    let spec = SpawnSpec {
        command: command.to_owned(),
        kind: Kind::Foreground,
        name: None,
        cwd: ctx.root().to_path_buf(),
        head: max / 2,
        tail: max - max / 2,
        log: false,
    };
    let proc = supervisor.spawn(spec).map_err(|err| {
        ToolError::model(format!(
            "bash could not start `{}`: {err}. Check the `bash.shell` setting and that the project \
             root exists.",
            config.bash.shell
        ))
    })?;
    let grace = Duration::from_millis(config.processes.stop_grace_ms);
    let mut guard = StopOnDrop { proc: Some(Arc::clone(&proc)), grace };
    let end = tokio::select! {
        _ = proc.wait_exit() => End::Exited,
        () = tokio::time::sleep(timeout) => End::TimedOut,
        () = ctx.cancel_token().cancelled() => End::Aborted,
        () = report_progress(ctx, &proc, "running") => End::Exited,
    };
    let mut leftovers = 0;
    let drain_wait = match end {
        End::Exited => {
            if proc.has_leftovers() {
                leftovers = proc.stop("left running", grace).await.terminated;
            }
            Duration::from_secs(1)
        }
        End::TimedOut => {
            proc.stop("timeout", grace).await;
            Duration::from_millis(500)
        }
        End::Aborted => {
            proc.stop("aborted", grace).await;
            Duration::from_millis(300)
        }
    };
    // Everything that could write is gone, unless a process escaped both group and marker.
    let _ = tokio::time::timeout(drain_wait, proc.wait_drained()).await;
    let _ = tokio::time::timeout(Duration::from_millis(500), proc.wait_exit()).await;
    guard.proc = None;
    supervisor.forget(&proc.id);

    let snapshot = proc.snapshot();
    let exit = proc.exit();
    let output = snapshot.text();
    let result = BashResult {
        output: output.clone(),
        exit_code: exit.and_then(|e| e.code),
        signal: exit.and_then(|e| e.signal),
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        output_bytes: snapshot.total,
        dropped_bytes: snapshot.dropped,
        timed_out: end == End::TimedOut,
        aborted: end == End::Aborted,
        stopped_leftovers: leftovers,
        daemon: None,
    };
    let mut text = String::new();
    match end {
        End::Exited => {}
        End::TimedOut => text.push_str(&format!(
            "bash timed out after {} and the command was stopped, with everything it started. \
             Raise `timeout` (at most {} ms), or start long-running work with spawn_process.\n",
            human(timeout),
            config.bash.max_timeout_ms
        )),
        End::Aborted => {
            text.push_str("bash was aborted; the command and everything it started were stopped.\n")
        }
    }
    if output.is_empty() {
        text.push_str("(no output)\n");
    } else {
        text.push_str(&output);
        if !output.ends_with('\n') {
            text.push('\n');
        }
    }
    if leftovers > 0 {
        text.push_str(&format!(
            "[stopped {leftovers} background process{} the command left running: bash waits for \
             the command only. Start servers and other long-running work with spawn_process.]\n",
            if leftovers == 1 { "" } else { "es" }
        ));
    }
    text.push_str(&status_line(result.exit_code, result.signal));
    let structured = serde_json::to_value(&result)
        .map_err(|err| ToolError::Fatal(format!("bash result did not serialize: {err}")))?;
    let output = if end == End::Exited { ToolOutput::text(text) } else { ToolOutput::error(text) };
    Ok(output.with_structured(structured))
}

/// The daemon shortcut's result in bash's shape: its text as `output`, its spawn result as `daemon`.
fn as_bash_result(output: ToolOutput, started: Instant) -> Result<ToolOutput, ToolError> {
    let daemon: Option<SpawnResult> = match &output.structured {
        Some(value) => Some(serde_json::from_value(value.clone()).map_err(|err| {
            ToolError::Fatal(format!("the daemon's result did not parse: {err}"))
        })?),
        None => None,
    };
    let text = output.joined_text();
    let result = BashResult {
        output_bytes: text.len() as u64,
        output: text,
        exit_code: daemon.as_ref().and_then(|d| d.exit_code),
        signal: None,
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        dropped_bytes: 0,
        timed_out: false,
        aborted: false,
        stopped_leftovers: 0,
        daemon,
    };
    let structured = serde_json::to_value(&result)
        .map_err(|err| ToolError::Fatal(format!("bash result did not serialize: {err}")))?;
    Ok(output.with_structured(structured))
}

/// `[exit code N]`, or the signal that ended the shell.
fn status_line(code: Option<i32>, signal: Option<i32>) -> String {
    match (code, signal) {
        (Some(code), _) => format!("[exit code {code}]"),
        (None, Some(sig)) => match signal_name(sig) {
            Some(name) => format!("[killed by signal {sig} ({name})]"),
            None => format!("[killed by signal {sig}]"),
        },
        (None, None) => "[exit status unknown]".to_owned(),
    }
}

fn signal_name(sig: i32) -> Option<&'static str> {
    Some(match sig {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        _ => return None,
    })
}

fn human(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(1000) { format!("{} s", ms / 1000) } else { format!("{ms} ms") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(command: &str, timeout: Option<u64>) -> BashArgs {
        BashArgs { command: command.into(), timeout }
    }

    #[test]
    fn arguments_are_checked_before_anything_runs() {
        let config = ExecConfig::default();
        assert!(validate(&config, &args("  \n", None)).is_err());
        assert!(validate(&config, &args("echo a\0b", None)).is_err());
        assert!(validate(&config, &args("true", Some(0))).is_err());
        let over = validate(&config, &args("true", Some(600_001))).unwrap_err().to_string();
        assert!(over.contains("600000"), "{over}");
        assert_eq!(validate(&config, &args("true", None)).unwrap(), Duration::from_secs(60));
        assert_eq!(
            validate(&config, &args("true", Some(600_000))).unwrap(),
            Duration::from_secs(600)
        );
    }

    #[test]
    fn the_status_line_names_code_or_signal() {
        assert_eq!(status_line(Some(3), None), "[exit code 3]");
        assert_eq!(status_line(None, Some(9)), "[killed by signal 9 (SIGKILL)]");
        assert_eq!(status_line(None, Some(64)), "[killed by signal 64]");
    }
}
