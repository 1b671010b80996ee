//! What a scan finds: one finding per problem, with its severity, the check that found it, where
//! it is (`file:line` or a database object) and what to do. A finding never holds a secret's
//! value: only its name or its rule.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How bad a finding is; the order is the report's.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Exposed to anyone now (a secret in what the browser downloads).
    Critical,
    /// Exposed to whoever reads the repository or calls the API.
    High,
    /// A weakness that needs another mistake to hurt.
    Medium,
    /// Worth knowing.
    Low,
}

impl Severity {
    /// Its name as the report prints it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Critical => "critical",
            Self::High => "high",
            Self::Medium => "medium",
            Self::Low => "low",
        }
    }
}

/// A check run_security_scan runs.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Check {
    /// Secrets (stored values and key shapes) in the project's files.
    Secrets,
    /// The build output (`dist/`, `.next/static`, …) and the variables a bundler puts in it.
    Bundle,
    /// Locked dependencies against advisories.
    Dependencies,
    /// The linked database's row-level security and `SECURITY DEFINER` objects.
    Database,
}

impl Check {
    /// Every check, in the report's order.
    pub const ALL: [Check; 4] =
        [Check::Secrets, Check::Bundle, Check::Dependencies, Check::Database];

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Secrets => "secrets",
            Self::Bundle => "bundle",
            Self::Dependencies => "dependencies",
            Self::Database => "database",
        }
    }
}

/// One problem found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Finding {
    /// How bad it is.
    pub severity: Severity,
    /// The check that found it.
    pub check: Check,
    /// What kind of problem (`stripe_key`, `stored_secret`, `rls_disabled`, an advisory id).
    pub rule: String,
    /// Where: `path:line` relative to the project root, a lock file and package, or a database
    /// object (`public.todos`).
    pub location: String,
    /// What it is and what to do, without any secret's value.
    pub message: String,
}

/// What became of one check or part of one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct CheckRun {
    /// The part (`secrets`, `npm audit`, `osv`, …).
    pub part: String,
    /// `ran`, `skipped` or `failed`.
    pub status: Status,
    /// What it covered, or why it was skipped or failed.
    pub detail: String,
}

/// A part's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// It ran.
    Ran,
    /// It did not run, and `detail` says why.
    Skipped,
    /// It ran and could not finish.
    Failed,
}

impl CheckRun {
    /// A part that ran.
    pub fn ran(part: impl Into<String>, detail: impl Into<String>) -> Self {
        Self { part: part.into(), status: Status::Ran, detail: detail.into() }
    }

    /// A part that was skipped, and why.
    pub fn skipped(part: impl Into<String>, why: impl Into<String>) -> Self {
        Self { part: part.into(), status: Status::Skipped, detail: why.into() }
    }

    /// A part that failed, and how.
    pub fn failed(part: impl Into<String>, why: impl Into<String>) -> Self {
        Self { part: part.into(), status: Status::Failed, detail: why.into() }
    }
}

/// Sort `findings` for the report: worst first, then by check and place.
pub fn sort(findings: &mut [Finding]) {
    findings.sort_by(|a, b| {
        (a.severity, a.check, &a.location, &a.rule).cmp(&(
            b.severity,
            b.check,
            &b.location,
            &b.rule,
        ))
    });
}
