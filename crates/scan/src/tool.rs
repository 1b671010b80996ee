//! run_security_scan: what would leak or let someone in, sorted worst first.
//!
//! Flow: build hands-secrets' engine from the project's stored secrets; then the checks asked
//! for (all by default): secrets (the non-ignored files, walked in parallel), bundle (the build
//! output and the bundler's public variables), dependencies (lock files against the OSV
//! database, and the audit commands), database (the linked PostgreSQL). Each check says what it
//! covered or why it was skipped; no result holds a secret's value.

use std::borrow::Cow;
use std::sync::Arc;

use hands_core::secret::SecretStore;
use hands_core::{Annotations, Context, Family, Label, Policy, Tool, ToolError, ToolOutput};
use hands_secrets::Engine;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::config::SecurityConfig;
use crate::files::{self, Place};
use crate::finding::{self, Check, CheckRun, Finding, Severity, Status};
use crate::{database, deps, env};

/// Arguments of run_security_scan.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScanArgs {
    /// The checks to run: any of `secrets`, `bundle`, `dependencies`, `database` (default, or
    /// an empty list: all).
    #[serde(default)]
    pub checks: Vec<Check>,
}

/// How many findings of each severity.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Counts {
    /// Critical findings.
    pub critical: usize,
    /// High findings.
    pub high: usize,
    /// Medium findings.
    pub medium: usize,
    /// Low findings.
    pub low: usize,
}

/// The structured result: everything the text says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ScanResult {
    /// The findings, worst first.
    pub findings: Vec<Finding>,
    /// Their counts by severity.
    pub counts: Counts,
    /// What each check covered, or why it was skipped.
    pub checks: Vec<CheckRun>,
}

/// The run_security_scan tool.
#[derive(Clone)]
pub struct RunSecurityScan {
    config: SecurityConfig,
    net: hands_net::NetConfig,
    store: Arc<dyn SecretStore>,
}

impl RunSecurityScan {
    /// With `[security]`, the `[net]` rule for the database's address, and the secret store.
    pub fn new(
        config: SecurityConfig,
        net: hands_net::NetConfig,
        store: Arc<dyn SecretStore>,
    ) -> Self {
        Self { config, net, store }
    }
}

/// The tool's name.
pub const NAME: &str = "run_security_scan";

impl Tool for RunSecurityScan {
    type Args = ScanArgs;

    fn name(&self) -> &'static str {
        NAME
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("run_security_scan.md"))
    }

    fn annotations(&self) -> Annotations {
        Annotations { read_only: true, destructive: false, idempotent: true, open_world: true }
    }

    fn policy(&self) -> Policy {
        Policy::from_annotations(self.annotations())
            .label(Label::Arguments)
            .family(Family::Project)
            // Three audit commands of 120 s each run at once, after the walk.
            .timeout_ms(300_000)
    }

    fn cacheable(&self) -> bool {
        false
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        Some(hands_core::output_schema_for::<ScanResult>())
    }

    async fn call(&self, ctx: Context, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let checks = if args.checks.is_empty() { Check::ALL.to_vec() } else { args.checks };
        let root = ctx.root().to_path_buf();
        let stored: Vec<(String, String)> = self
            .store
            .list(&root)
            .into_iter()
            .filter_map(|s| self.store.get(&root, &s.name).map(|v| (s.name, v.expose().to_owned())))
            .collect();
        let engine = Engine::new(stored.iter().map(|(n, v)| (n.as_str(), v.as_str())))
            .map_err(|err| ToolError::Fatal(format!("the secret engine did not build: {err}")))?;
        let engine = Arc::new(engine);
        let mut runs = Vec::new();
        let mut findings = Vec::new();
        let service_role = stored
            .iter()
            .any(|(n, _)| n == hands_connect::SERVICE_ROLE_NAME)
            .then_some(hands_connect::SERVICE_ROLE_NAME);
        for check in Check::ALL.into_iter().filter(|c| checks.contains(c)) {
            match check {
                Check::Secrets | Check::Bundle => {
                    let (r, f) = walk(&ctx, check, Arc::clone(&engine), service_role).await?;
                    runs.extend(r);
                    findings.extend(f);
                }
                Check::Dependencies => {
                    let (r, f) = deps::check(&root, &self.config, ctx.cancel_token()).await;
                    runs.extend(r);
                    findings.extend(f);
                }
                Check::Database => {
                    let (r, f) = self.database(&ctx).await;
                    runs.push(r);
                    findings.extend(f);
                }
            }
        }
        finding::sort(&mut findings);
        let counts = Counts {
            critical: findings.iter().filter(|f| f.severity == Severity::Critical).count(),
            high: findings.iter().filter(|f| f.severity == Severity::High).count(),
            medium: findings.iter().filter(|f| f.severity == Severity::Medium).count(),
            low: findings.iter().filter(|f| f.severity == Severity::Low).count(),
        };
        let result = ScanResult { findings, counts, checks: runs };
        let structured = serde_json::to_value(&result)
            .map_err(|err| ToolError::Fatal(format!("a result did not serialize: {err}")))?;
        Ok(ToolOutput::text(text(&result)).with_structured(structured))
    }
}

impl RunSecurityScan {
    async fn database(&self, ctx: &Context) -> (CheckRun, Vec<Finding>) {
        let name = hands_connect::DB_URL_NAME;
        let url = self
            .store
            .get(ctx.root(), name)
            .map(|v| v.expose().to_owned())
            .or_else(|| std::env::var(name).ok().filter(|v| !v.is_empty()));
        let Some(url) = url else {
            return (
                CheckRun::skipped(
                    "database",
                    format!("no database is linked (no secret {name} is stored)"),
                ),
                Vec::new(),
            );
        };
        let schemas = database::exposed_schemas(ctx.root());
        let work = async {
            // The URL is a secret the user stored, or their environment: the user's own.
            let from = hands_connect::postgres::UrlFrom::User;
            let mut client = hands_connect::postgres::connect(&url, from, &self.net)
                .await
                .map_err(|e| e.to_string())?;
            database::check(&mut client, &schemas).await
        };
        let outcome = tokio::select! {
            outcome = work => outcome,
            () = ctx.cancel_token().cancelled() => Err("the scan was stopped".to_owned()),
        };
        match outcome {
            Ok(found) => (
                CheckRun::ran(
                    "database",
                    format!(
                        "schemas {}: {} finding{}",
                        schemas.join(", "),
                        found.len(),
                        if found.len() == 1 { "" } else { "s" }
                    ),
                ),
                found,
            ),
            Err(err) => (CheckRun::failed("database", err), Vec::new()),
        }
    }
}

async fn walk(
    ctx: &Context,
    check: Check,
    engine: Arc<Engine>,
    service_role: Option<&'static str>,
) -> Result<(Vec<CheckRun>, Vec<Finding>), ToolError> {
    let root = ctx.root().to_path_buf();
    let cancel = ctx.cancel_token().clone();
    tokio::task::spawn_blocking(move || {
        let mut runs = Vec::new();
        let mut findings = Vec::new();
        if check == Check::Secrets {
            let walked = files::walk(&root, Place::Source, &[], &engine, service_role, &cancel);
            runs.push(CheckRun::ran(
                "secrets",
                format!("{} files ({} bytes) not ignored by the project; {} binary or over 32 MB left out", walked.files, walked.bytes, walked.skipped),
            ));
            findings.extend(walked.findings);
        } else {
            let dirs = files::build_dirs(&root);
            if dirs.is_empty() {
                runs.push(CheckRun::skipped("bundle", format!("no build output ({}): build the app first to check what it ships", files::BUILD_DIRS.join(", "))));
            } else {
                let walked = files::walk(&root, Place::Build, &dirs, &engine, service_role, &cancel);
                runs.push(CheckRun::ran("bundle", format!("{}: {} files ({} bytes)", dirs.join(", "), walked.files, walked.bytes)));
                findings.extend(walked.findings);
            }
            let (found, read) = env::scan(&root, &engine);
            if read.is_empty() {
                runs.push(CheckRun::skipped("public variables", "no .env files at the root"));
            } else {
                runs.push(CheckRun::ran("public variables", format!("{}: variables with the prefixes {}", read.join(", "), env::PUBLIC_PREFIXES.join(", "))));
            }
            findings.extend(found);
        }
        (runs, findings)
    })
    .await
    .map_err(|err| ToolError::Fatal(format!("the scan's walk failed: {err}")))
}

fn text(result: &ScanResult) -> String {
    let c = &result.counts;
    let mut out = format!(
        "run_security_scan: {} critical, {} high, {} medium, {} low\n",
        c.critical, c.high, c.medium, c.low
    );
    for f in &result.findings {
        out.push_str(&format!(
            "{} [{}] {} {}: {}\n",
            f.severity.name(),
            f.check.name(),
            f.location,
            f.rule,
            f.message
        ));
    }
    if result.findings.is_empty() {
        out.push_str("No findings.\n");
    }
    out.push_str("\nChecks:\n");
    for run in &result.checks {
        let status = match run.status {
            Status::Ran => "ran",
            Status::Skipped => "skipped",
            Status::Failed => "failed",
        };
        out.push_str(&format!("- {} {status}: {}\n", run.part, run.detail));
    }
    out
}
