//! spawn_process: start a supervised background process, a `daemon` (runs until stopped) or a
//! `long-run` (finishes by itself, and its end is announced to the session). The arguments are
//! checked here; launch.rs starts the process and waits.

use std::borrow::Cow;
use std::time::Duration;

use hands_core::{Annotations, Context, Tool, ToolError, ToolOutput};
use hands_core::{Family, Label, Policy};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::config::ExecConfig;
use crate::launch::{Request, SpawnResult, launch};
use crate::ready;
use crate::supervisor::Kind;

/// `daemon` or `long-run`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ProcessType {
    /// Runs until stopped.
    Daemon,
    /// Finishes by itself.
    LongRun,
}

/// Arguments of spawn_process.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SpawnArgs {
    /// The command line.
    pub command: String,
    /// What kind of process.
    #[serde(rename = "type")]
    pub kind: ProcessType,
    /// Short name (default: the command).
    #[serde(default)]
    pub name: Option<String>,
    /// Regex over the output that means ready, e.g. `ready in \d+ ms`.
    #[serde(default)]
    pub ready_pattern: Option<String>,
    /// long-run: stop after this many ms (default 30 minutes, 0 = never).
    #[serde(default)]
    pub timeout: Option<u64>,
}

/// The spawn_process tool.
#[derive(Debug, Clone)]
pub struct SpawnProcess {
    config: ExecConfig,
}

impl SpawnProcess {
    /// With `config`.
    pub fn new(config: ExecConfig) -> Self {
        Self { config }
    }
}

impl Tool for SpawnProcess {
    type Args = SpawnArgs;

    /// A daemon's call waits until it is ready.
    fn outlasts(&self, args: &Self::Args) -> bool {
        args.kind == ProcessType::Daemon
    }

    fn name(&self) -> &'static str {
        "spawn_process"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("spawn_process.md"))
    }

    fn annotations(&self) -> Annotations {
        Annotations { read_only: false, destructive: false, idempotent: false, open_world: true }
    }

    fn policy(&self) -> Policy {
        Policy::from_annotations(self.annotations())
            .label(Label::Key { key: "command" })
            .family(Family::Processes)
            .timeout_ms(60_000)
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        Some(hands_core::output_schema_for::<SpawnResult>())
    }

    async fn call(&self, ctx: Context, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let request = request(args, &self.config)?;
        launch(&ctx, &self.config, request).await
    }
}

/// Check the arguments and turn them into a spawn request.
fn request(args: SpawnArgs, config: &ExecConfig) -> Result<Request, ToolError> {
    let command = args.command.trim().to_owned();
    if command.is_empty() {
        return Err(ToolError::model(
            "`command` is empty: give the shell command to run, e.g. \"npm run dev\".",
        ));
    }
    let pattern =
        match args.ready_pattern.as_deref() {
            Some(p) => Some(ready::pattern(p).map_err(|e| {
                ToolError::model(format!("`ready_pattern` is not a valid regex: {e}"))
            })?),
            None => None,
        };
    let kind = match args.kind {
        ProcessType::Daemon => Kind::Daemon,
        ProcessType::LongRun => Kind::LongRun,
    };
    if kind == Kind::Daemon && args.timeout.is_some() {
        return Err(ToolError::model(
            "`timeout` applies to `long-run` processes only: a daemon runs until stop_process \
             stops it (or the session ends). Drop `timeout`, or use type `long-run`.",
        ));
    }
    let limit_ms = args.timeout.unwrap_or(config.processes.long_run_timeout_ms);
    let limit = (kind == Kind::LongRun && limit_ms > 0).then(|| Duration::from_millis(limit_ms));
    let name = args.name.map(|n| n.trim().to_owned()).filter(|n| !n.is_empty());
    Ok(Request { command, kind, name, pattern, limit })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(json: serde_json::Value) -> Result<Request, ToolError> {
        let args: SpawnArgs = hands_core::args::parse("spawn_process", json)?;
        request(args, &ExecConfig::default())
    }

    fn message(result: Result<Request, ToolError>) -> String {
        match result {
            Err(ToolError::RespondToModel(m)) => m,
            other => panic!("expected an error for the model, got {other:?}"),
        }
    }

    #[test]
    fn arguments_are_checked() {
        let m = message(args(serde_json::json!({"command": "x", "type": "deamon"})));
        assert!(m.contains("field `type`") && m.contains("daemon"), "{m}");
        let m = message(args(serde_json::json!({"command": "  ", "type": "daemon"})));
        assert!(m.contains("`command` is empty"), "{m}");
        let m = message(args(
            serde_json::json!({"command": "x", "type": "daemon", "ready_pattern": "(("}),
        ));
        assert!(m.contains("`ready_pattern` is not a valid regex"), "{m}");
        let m = message(args(serde_json::json!({"command": "x", "type": "daemon", "timeout": 5})));
        assert!(m.contains("long-run"), "{m}");
    }

    #[test]
    fn long_runs_get_a_limit() {
        let r = args(serde_json::json!({"command": "make", "type": "long-run"})).unwrap();
        assert_eq!(r.kind, Kind::LongRun);
        assert_eq!(
            r.limit,
            Some(Duration::from_millis(ExecConfig::default().processes.long_run_timeout_ms))
        );
        let r = args(serde_json::json!({"command": "make", "type": "long-run", "timeout": 1500, "name": " build "})).unwrap();
        assert_eq!(r.limit, Some(Duration::from_millis(1500)));
        assert_eq!(r.name.as_deref(), Some("build"));
        let r =
            args(serde_json::json!({"command": "make", "type": "long-run", "timeout": 0})).unwrap();
        assert_eq!(r.limit, None, "0 means no limit");
        let r = args(serde_json::json!({"command": "vite", "type": "daemon"})).unwrap();
        assert_eq!(r.limit, None);
    }

    #[test]
    fn the_description_example_parses() {
        let md = include_str!("spawn_process.md");
        let json = md.split("```json").nth(1).and_then(|s| s.split("```").next()).unwrap();
        let value: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
        assert!(args(value).is_ok());
    }
}
