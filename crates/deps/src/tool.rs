//! The add_dependency tool.
//!
//! Flow: check the specs' count, find the (sub-)project through the confined workspace, detect
//! its manager, check each spec against the manager's ecosystem, read the manifest and lock file,
//! run the manager as an argv (no shell) under the session's supervisor with `CI=1` and the
//! child environment every process of the project gets, until it exits, the time limit passes
//! or the call is aborted (then it is stopped with its whole tree), read the files again, write
//! pip's pins, judge a running dev server, and answer with what changed or why it failed.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use hands_core::approval::Review;
use hands_core::process::ProcessService;
use hands_core::{Annotations, Context, Family, Label, Policy, Tool, ToolError, ToolOutput};
use hands_exec::{Argv, ExecConfig, Kind, SpawnSpec, Supervisor};
use hands_fs::{RelPath, Workspace};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::cause::{self, Cause};
use crate::config::DepsConfig;
use crate::manager::{self, Detected, Manager};
use crate::manifest::read_state;
use crate::plan::{self, Plan};
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
    /// The plans the user was asked about, by session and call (the newest last): a call runs a
    /// repository's program only when the user approved exactly what it runs.
    asked: Arc<Mutex<VecDeque<(String, String, Plan)>>>,
}

/// Plans kept for calls being asked about (a denied call's stays until pushed out).
const ASKED_KEPT: usize = 64;

/// A call's checked arguments and what it will run.
struct Prepared {
    ws: Workspace,
    dir: RelPath,
    detected: Detected,
    names: Vec<String>,
    plan: Plan,
}

/// The approval's text: a warning first when a program of the repository runs, then the plan.
fn asking(plan: &Plan) -> String {
    let mut text = String::new();
    if let Some(program) = plan.repository_program() {
        text.push_str(&format!(
            "WARNING: this runs a program from the repository, {} ({}), with your rights. \
             Approve only if you trust this repository.\n",
            program.path.display(),
            program.how
        ));
    }
    text.push_str(&plan.details());
    text
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
        Self { config, exec, processes, asked: Arc::default() }
    }

    /// The call's checked arguments and its plan; nothing runs and nothing is written.
    fn prepare(&self, ctx: &Context, args: &AddDependencyArgs) -> Result<Prepared, ToolError> {
        if args.packages.is_empty() || args.packages.len() > MAX_PACKAGES {
            return Err(ToolError::model(format!(
                "`packages` holds {} specs; give 1 to {MAX_PACKAGES} (split a longer list over \
                 several calls).",
                args.packages.len()
            )));
        }
        let ws = Workspace::of(ctx)?;
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
        let plan = plan::build(&plan::Inputs {
            ws: &ws,
            dir: &dir,
            manager,
            specs: &raw,
            dev: args.dev,
            allow_scripts: self.config.allow_scripts,
            report: self.report(ctx),
            path: std::env::var_os("PATH"),
            because: &detected.because,
        })?;
        Ok(Prepared { ws, dir, detected, names, plan })
    }

    /// pip's report file for this call.
    fn report(&self, ctx: &Context) -> std::path::PathBuf {
        std::env::temp_dir().join(format!(
            "hands-pip-{}-{}.json",
            std::process::id(),
            ctx.call_id()
        ))
    }

    fn remember(&self, ctx: &Context, plan: Plan) {
        let mut asked = self.asked.lock().unwrap_or_else(PoisonError::into_inner);
        let (session, call) = (ctx.session().id(), ctx.call_id());
        asked.retain(|(s, c, _)| !(s == session && c == call));
        asked.push_back((session.to_owned(), call.to_owned(), plan));
        while asked.len() > ASKED_KEPT {
            asked.pop_front();
        }
    }

    /// The plan the user approved for this call, taken: the approval middleware runs a call only
    /// after the user's yes, and asks only after the plan was computed.
    fn approved(&self, ctx: &Context) -> Option<Plan> {
        let mut asked = self.asked.lock().unwrap_or_else(PoisonError::into_inner);
        let (session, call) = (ctx.session().id(), ctx.call_id());
        let at = asked.iter().position(|(s, c, _)| s == session && c == call)?;
        asked.remove(at).map(|(_, _, plan)| plan)
    }
}

impl Tool for AddDependency {
    type Args = AddDependencyArgs;

    /// It waits for work that can take minutes.
    fn outlasts(&self, _args: &Self::Args) -> bool {
        true
    }

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

    /// The exact argv, each program's path and origin; a plan that cannot be made (no manager,
    /// a bad name) is refused before anybody is asked.
    async fn review(&self, ctx: &Context, args: &Self::Args) -> Result<Review, ToolError> {
        let prepared = self.prepare(ctx, args)?;
        let text = asking(&prepared.plan);
        self.remember(ctx, prepared.plan);
        Ok(Review::details(text))
    }

    async fn call(&self, ctx: Context, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let Prepared { ws, dir, detected, names, plan } = self.prepare(&ctx, &args)?;
        let manager = detected.manager;
        // The plan the user approved (approval = "ask"), if they were asked about this call.
        let approved = self.approved(&ctx);
        if let Some(seen) = &approved
            && *seen != plan
        {
            return Err(ToolError::model(format!(
                "add_dependency did not run: what it would run changed after the user approved \
                 it, so the approval does not cover it. Call it again to ask about this:\n{}",
                plan.details()
            )));
        }
        if let Some(program) = plan.repository_program()
            && approved.is_none()
            && !self.config.allow_project_programs
        {
            return Err(ToolError::model(format!(
                "add_dependency did not run: it would run {}, the repository's program ({}), and \
                 a program from the repository runs only when the user allows it. Ask the user \
                 to approve the call with approval = \"ask\" (the approval names the program), \
                 or to set `allow_project_programs = true` under [deps] in their own \
                 configuration (~/.config/hands/config.toml, or -c \
                 deps.allow_project_programs=true; a project's .hands/config.toml cannot set \
                 it). What would have run:\n{}",
                program.path.display(),
                program.how,
                plan.details()
            )));
        }
        let report = (manager == Manager::Pip).then(|| self.report(&ctx));
        // pip keeps no manifest: its pins go to the requirements file (the dev one for `dev`).
        let manifest = match manager {
            Manager::Pip if args.dev => dir.join("requirements-dev.txt"),
            _ => detected.manifest.clone(),
        };
        let before = read_state(&ws, manager, &manifest, &names);
        let run = self.run(&ctx, &ws, &plan, manager).await?;
        let mut pinned_in = None;
        let mut installed = std::collections::BTreeMap::new();
        if let Some(report_file) = &report {
            let report = std::fs::read_to_string(report_file).unwrap_or_default();
            let _ = std::fs::remove_file(report_file);
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
            command: plan.argv.clone(),
            program: plan.program().path.display().to_string(),
            program_origin: plan.program().origin.key().to_owned(),
            repository_program: plan.repository_program().map(|p| p.path.display().to_string()),
            scripts: plan.scripts,
            ok: run.ok,
            exit_code: run.exit_code,
            cause: (!run.ok).then(|| run.stopped.unwrap_or_else(|| cause::classify(&run.output))),
            changes: changes(&before, &after, &names),
            lock_file: after.lock.as_ref().map(RelPath::display),
            pinned_in: pinned_in.as_ref().map(RelPath::display),
            warnings: if run.ok {
                cause::peer_warnings(&run.output)
            } else if manager == Manager::Pip && !plan.scripts {
                vec![
                    "pip ran with --only-binary :all: (no source builds, so no setup.py runs): a \
                     package or version published only as a source distribution is not found \
                     this way. The user can allow builds with allow_scripts = true under [deps] \
                     in their own configuration."
                        .to_owned(),
                ]
            } else {
                Vec::new()
            },
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
        plan: &Plan,
        manager: Manager,
    ) -> Result<Run, ToolError> {
        let argv = &plan.argv;
        let started = Instant::now();
        let supervisor = Supervisor::of(ctx.session(), &self.exec);
        let spec = SpawnSpec {
            command: argv.join(" "),
            kind: Kind::Foreground,
            name: Some(format!("add_dependency: {}", manager.name())),
            cwd: plan.cwd.clone(),
            head: KEPT_OUTPUT / 4,
            tail: KEPT_OUTPUT - KEPT_OUTPUT / 4,
            log: false,
        };
        let program =
            Argv { argv: argv.clone(), env: plan.env.clone(), project: ws.root().to_path_buf() };
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
