//! The add_dependency tool.
//!
//! Flow: check the specs' count, find the (sub-)project through the confined workspace, detect
//! its manager, check each spec against the manager's ecosystem, read the manifest and lock file,
//! run the manager as an argv (no shell) under the session's supervisor with `CI=1` and the
//! child environment every process of the project gets, until it exits, the time limit passes
//! or the call is aborted (then it is stopped with its whole tree), read the files again, write
//! pip's pins, judge a running dev server, and answer with what changed or why it failed.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hands_core::process::ProcessService;
use hands_core::{Annotations, Context, Family, Label, Policy, Tool, ToolError, ToolOutput};
use hands_exec::{Argv, ExecConfig, Kind, SpawnSpec, Supervisor};
use hands_fs::{RelPath, Workspace};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::cause::{self, Cause};
use crate::config::DepsConfig;
use crate::manager::{self, Manager, PipRun};
use crate::manifest::read_state;
use crate::result::{AddResult, changes, last_lines};
use crate::{devserver, pip, spec};

/// Packages one call adds at most.
pub const MAX_PACKAGES: usize = 20;

/// Output kept of a run (head and tail); the result shows the last 40 lines.
const KEPT_OUTPUT: usize = 512 * 1024;

/// Arguments of add_dependency.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddDependencyArgs {
    /// Packages to add (1 to 20), each a registry name with an optional version, range or tag in
    /// the ecosystem's own syntax: `left-pad`, `react@^18.3`, `@types/node@20`, `serde@1.0`,
    /// `requests>=2.31`.
    #[schemars(length(min = 1, max = 20))]
    pub packages: Vec<String>,
    /// Add them as development dependencies (default false).
    #[serde(default)]
    pub dev: bool,
    /// The sub-project to add them to, relative to the project root (default: the root).
    #[serde(default)]
    pub path: Option<String>,
}

/// The add_dependency tool.
#[derive(Clone)]
pub struct AddDependency {
    config: DepsConfig,
    exec: ExecConfig,
    processes: Option<Arc<dyn ProcessService>>,
}

impl std::fmt::Debug for AddDependency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AddDependency").field("config", &self.config).finish_non_exhaustive()
    }
}

impl AddDependency {
    /// With its limit, the exec settings its processes run under, and the process service that
    /// lists the session's dev servers (none: not judged).
    pub fn new(
        config: DepsConfig,
        exec: ExecConfig,
        processes: Option<Arc<dyn ProcessService>>,
    ) -> Self {
        Self { config, exec, processes }
    }
}

impl Tool for AddDependency {
    type Args = AddDependencyArgs;

    fn name(&self) -> &'static str {
        "add_dependency"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("add_dependency.md"))
    }

    fn annotations(&self) -> Annotations {
        Annotations { read_only: false, destructive: false, idempotent: true, open_world: true }
    }

    fn policy(&self) -> Policy {
        // The tool stops the manager at its own limit and says so; the registry's limit is a
        // margin above it.
        Policy::from_annotations(self.annotations())
            .label(Label::Count { key: "packages", noun: "package" })
            .family(Family::Project)
            .timeout_ms(self.config.timeout_ms.saturating_add(30_000))
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        Some(hands_core::output_schema_for::<AddResult>())
    }

    async fn call(&self, ctx: Context, args: Self::Args) -> Result<ToolOutput, ToolError> {
        if args.packages.is_empty() || args.packages.len() > MAX_PACKAGES {
            return Err(ToolError::model(format!(
                "`packages` holds {} specs; give 1 to {MAX_PACKAGES} (split a longer list over \
                 several calls).",
                args.packages.len()
            )));
        }
        let ws = Workspace::of(&ctx)?;
        let dir = ws.resolve("path", args.path.as_deref().unwrap_or("."))?;
        let dir = confined_dir(&ws, &dir)?;
        let detected = manager::detect(&ws, &dir)?;
        let manager = detected.manager;
        let mut specs = Vec::new();
        for raw in &args.packages {
            let checked = spec::check(manager.ecosystem(), raw.trim()).map_err(|why| {
                ToolError::model(format!("`packages`: {why} ({} project).", manager.name()))
            })?;
            specs.push(checked);
        }
        let names: Vec<String> = specs.iter().map(|s| s.name.clone()).collect();
        let raw: Vec<String> = specs.into_iter().map(|s| s.raw).collect();
        let cwd = ws.root().join(dir.as_path());
        let pip = match manager {
            Manager::Pip => Some(PipRun {
                python: manager::pip_python(&cwd)?,
                report: std::env::temp_dir().join(format!(
                    "hands-pip-{}-{}.json",
                    std::process::id(),
                    ctx.call_id()
                )),
            }),
            _ => None,
        };
        let argv = manager.argv(&raw, args.dev, pip.as_ref());
        if manager != Manager::Pip && manager::on_path(manager.name()).is_none() {
            return Err(ToolError::model(format!(
                "This is a {} project ({}), but `{}` is not installed (not on PATH). Ask the \
                 user to install it.",
                manager.name(),
                detected.because,
                manager.name()
            )));
        }
        // pip keeps no manifest: its pins go to the requirements file (the dev one for `dev`).
        let manifest = match manager {
            Manager::Pip if args.dev => dir.join("requirements-dev.txt"),
            _ => detected.manifest.clone(),
        };
        let before = read_state(&ws, manager, &manifest, &names);
        let run = self.run(&ctx, &ws, &cwd, &argv, manager).await?;
        let mut pinned_in = None;
        let mut installed = std::collections::BTreeMap::new();
        if let Some(pip) = &pip {
            let report = std::fs::read_to_string(&pip.report).unwrap_or_default();
            let _ = std::fs::remove_file(&pip.report);
            if run.ok {
                installed = pip::installed(&report);
                installed.retain(|name, _| names.contains(name));
                let pins: Vec<(String, String)> =
                    installed.iter().map(|(n, v)| (n.clone(), v.clone())).collect();
                if !pins.is_empty() {
                    pip::write_pins(&ws, &manifest, &pins, ctx.cancel_token())?;
                    pinned_in = Some(manifest.clone());
                }
            }
        }
        let mut after = read_state(&ws, manager, &manifest, &names);
        after.locked.extend(installed);
        if args.dev && pinned_in.is_some() {
            after.declared.values_mut().for_each(|d| d.dev = true);
        }
        let mut result = AddResult {
            manager: manager.name().to_owned(),
            detected_by: detected.because.clone(),
            path: dir.display(),
            command: argv,
            ok: run.ok,
            exit_code: run.exit_code,
            cause: (!run.ok).then(|| run.stopped.unwrap_or_else(|| cause::classify(&run.output))),
            changes: changes(&before, &after, &names),
            lock_file: after.lock.as_ref().map(RelPath::display),
            pinned_in: pinned_in.as_ref().map(RelPath::display),
            warnings: if run.ok { cause::peer_warnings(&run.output) } else { Vec::new() },
            dev_servers: Vec::new(),
            duration_ms: u64::try_from(run.took.as_millis()).unwrap_or(u64::MAX),
            output_tail: last_lines(&run.output, 40),
        };
        if run.ok
            && let Some(service) = &self.processes
        {
            result.dev_servers =
                devserver::check(service.as_ref(), ctx.session(), &ws, &dir, manager.ecosystem())
                    .await;
        }
        let text = result.text();
        let structured = serde_json::to_value(&result)
            .map_err(|err| ToolError::Fatal(format!("add_dependency's result: {err}")))?;
        let output = if result.ok { ToolOutput::text(text) } else { ToolOutput::error(text) };
        Ok(output.with_structured(structured))
    }
}

/// What one run of the manager gave.
struct Run {
    ok: bool,
    exit_code: Option<i32>,
    /// Set when hands stopped it (timeout, abort).
    stopped: Option<Cause>,
    output: String,
    took: Duration,
}

impl AddDependency {
    /// Run `argv` in `cwd` under the session's supervisor until it exits, the limit passes or
    /// the call is cancelled; whatever it leaves running is stopped.
    async fn run(
        &self,
        ctx: &Context,
        ws: &Workspace,
        cwd: &std::path::Path,
        argv: &[String],
        manager: Manager,
    ) -> Result<Run, ToolError> {
        let started = Instant::now();
        let supervisor = Supervisor::of(ctx.session(), &self.exec);
        let spec = SpawnSpec {
            command: argv.join(" "),
            kind: Kind::Foreground,
            name: Some(format!("add_dependency: {}", manager.name())),
            cwd: cwd.to_path_buf(),
            head: KEPT_OUTPUT / 4,
            tail: KEPT_OUTPUT - KEPT_OUTPUT / 4,
            log: false,
        };
        let program =
            Argv { argv: argv.to_vec(), env: manager.env(), project: ws.root().to_path_buf() };
        let proc = supervisor.spawn_argv(spec, &program).map_err(|err| {
            ToolError::model(format!("`{}` could not be started: {err}.", argv[0]))
        })?;
        let grace = Duration::from_millis(self.exec.processes.stop_grace_ms);
        let limit = Duration::from_millis(self.config.timeout_ms);
        let stopped = tokio::select! {
            _ = proc.wait_exit() => None,
            () = tokio::time::sleep(limit) => Some(Cause::Timeout),
            () = ctx.cancel_token().cancelled() => Some(Cause::Aborted),
        };
        match stopped {
            Some(cause) => {
                proc.stop(cause.label(), grace).await;
            }
            None if proc.has_leftovers() => {
                proc.stop("left running", grace).await;
            }
            None => {}
        }
        let _ = tokio::time::timeout(Duration::from_secs(1), proc.wait_drained()).await;
        supervisor.forget(&proc.id);
        let exit_code = if stopped.is_none() { proc.exit().and_then(|e| e.code) } else { None };
        let mut output = proc.snapshot().text();
        if stopped == Some(Cause::Timeout) {
            output.push_str(&format!(
                "\n[stopped by hands after {} s, with every process it started]",
                limit.as_secs()
            ));
        }
        Ok(Run { ok: exit_code == Some(0), exit_code, stopped, output, took: started.elapsed() })
    }
}

/// `dir` checked to be a folder inside the root (through the root handle, so a symlink out is
/// refused), as the path its symlinks resolve to.
fn confined_dir(ws: &Workspace, dir: &RelPath) -> Result<RelPath, ToolError> {
    let meta = ws.dir().metadata(dir.for_open()).map_err(|e| ws.io_error("used", dir, &e))?;
    if !meta.is_dir() {
        return Err(ToolError::model(format!(
            "`path` {} is a file; give the folder of the sub-project (where its package.json, \
             Cargo.toml, pyproject.toml or requirements.txt is).",
            dir.display()
        )));
    }
    let real = ws.dir().canonicalize(dir.for_open()).map_err(|e| ws.io_error("used", dir, &e))?;
    ws.resolve("path", &real.to_string_lossy())
}
