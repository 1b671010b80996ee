//! The dependencies check: the project's lock files (up to four folders deep, dependencies'
//! own folders left out), every locked package matched against the OSV database, then the
//! audit commands beside the root's lock files, all at once. A package flagged by both is
//! reported once.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use hands_core::CancellationToken;

use crate::config::SecurityConfig;
use crate::finding::{Check, CheckRun, Finding};
use crate::lockfiles::{self, Locked};
use crate::osv::Database;
use crate::{audit, files};

/// Run the dependencies check on `root`.
pub async fn check(
    root: &Path,
    config: &SecurityConfig,
    cancel: &CancellationToken,
) -> (Vec<CheckRun>, Vec<Finding>) {
    let mut runs = Vec::new();
    let mut findings = Vec::new();
    let root_owned = root.to_path_buf();
    let osv_path = config.osv_db.clone();
    let offline =
        tokio::task::spawn_blocking(move || offline(&root_owned, osv_path.as_deref())).await;
    match offline {
        Ok((r, f)) => {
            runs.extend(r);
            findings.extend(f);
        }
        Err(err) => runs.push(CheckRun::failed("lock files", format!("the check failed: {err}"))),
    }
    if !config.audit_commands {
        runs.push(CheckRun::skipped(
            "audit commands",
            "turned off by the user's [security] audit_commands = false",
        ));
    } else {
        let planned = audit::planned(root);
        if planned.is_empty() {
            runs.push(CheckRun::skipped(
                "audit commands",
                "no package-lock.json, requirements.txt or Cargo.lock at the root",
            ));
        }
        let limit = Duration::from_millis(config.audit_timeout_ms);
        let results =
            futures_join(planned.iter().map(|a| audit::run(a, limit, cancel)).collect()).await;
        let seen: BTreeSet<(String, String)> =
            findings.iter().map(|f| (f.location.clone(), f.rule.clone())).collect();
        for (run, found) in results {
            runs.push(run);
            findings.extend(
                found.into_iter().filter(|f| !seen.contains(&(f.location.clone(), f.rule.clone()))),
            );
        }
    }
    (runs, findings)
}

async fn futures_join<F: std::future::Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut out = Vec::with_capacity(futures.len());
    // At most three, known: joined by hand without another dependency.
    let mut iter = futures.into_iter();
    match (iter.next(), iter.next(), iter.next()) {
        (Some(a), Some(b), Some(c)) => {
            let (a, b, c) = tokio::join!(a, b, c);
            out.extend([a, b, c]);
        }
        (Some(a), Some(b), None) => {
            let (a, b) = tokio::join!(a, b);
            out.extend([a, b]);
        }
        (Some(a), None, None) => out.push(a.await),
        _ => {}
    }
    for rest in iter {
        out.push(rest.await);
    }
    out
}

/// The lock files and the OSV database: no network.
fn offline(root: &Path, osv: Option<&Path>) -> (Vec<CheckRun>, Vec<Finding>) {
    let mut runs = Vec::new();
    let mut packages: Vec<Locked> = Vec::new();
    let mut read = Vec::new();
    let mut unpinned = 0;
    let walk = ignore::WalkBuilder::new(root)
        .max_depth(Some(4))
        .hidden(false)
        .require_git(false)
        .filter_entry(|e| {
            let name = e.file_name().to_string_lossy();
            !(e.file_type().is_some_and(|t| t.is_dir())
                && (matches!(name.as_ref(), "node_modules" | ".git" | "target" | ".venv" | "venv")
                    || files::BUILD_DIRS.contains(&name.as_ref())))
        })
        .build();
    let mut lock_paths: Vec<_> = walk
        .flatten()
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .filter(|e| lockfiles::is_lock_file(&e.file_name().to_string_lossy()))
        .map(|e| e.into_path())
        .collect();
    lock_paths.sort();
    for path in &lock_paths {
        let rel = path.strip_prefix(root).unwrap_or(path).to_string_lossy().into_owned();
        match lockfiles::read(path, &rel) {
            Ok((found, n)) => {
                read.push(format!("{rel} ({})", found.len()));
                unpinned += n;
                packages.extend(found);
            }
            Err(err) => runs.push(CheckRun::failed("lock files", err)),
        }
    }
    if lock_paths.is_empty() {
        runs.push(CheckRun::skipped("lock files", "the project has no lock file (package-lock.json, pnpm-lock.yaml, yarn.lock, Cargo.lock, poetry.lock, uv.lock, requirements.txt)"));
        return (runs, Vec::new());
    }
    let mut detail = format!("{} packages from {}", packages.len(), read.join(", "));
    if unpinned > 0 {
        detail.push_str(&format!(
            "; {unpinned} requirement{} not pinned with == and not checked",
            if unpinned == 1 { "" } else { "s" }
        ));
    }
    runs.push(CheckRun::ran("lock files", detail));
    let Some(osv) = osv else {
        runs.push(CheckRun::skipped(
            "osv",
            "no advisory database: the user's configuration can name one with [security] osv_db (a folder or file of OSV JSON, or OSV's all.zip)",
        ));
        return (runs, Vec::new());
    };
    let db = match Database::load(osv) {
        Ok(db) => db,
        Err(err) => {
            runs.push(CheckRun::failed("osv", err));
            return (runs, Vec::new());
        }
    };
    let mut findings = Vec::new();
    for package in &packages {
        for hit in db.matches(package) {
            let a = hit.advisory;
            let aliases = if a.aliases.is_empty() {
                String::new()
            } else {
                format!(" ({})", a.aliases.join(", "))
            };
            let fix = hit
                .fixed
                .as_ref()
                .map(|f| format!("; fixed in {f}: update to it or later"))
                .unwrap_or_default();
            findings.push(Finding {
                severity: a.severity(),
                check: Check::Dependencies,
                rule: a.id.clone(),
                location: format!("{}: {}@{}", package.file, package.name, package.version),
                message: format!(
                    "{}{aliases}{fix}",
                    a.summary.clone().unwrap_or_else(|| a.id.clone())
                ),
            });
        }
    }
    runs.push(CheckRun::ran(
        "osv",
        format!("{} advisories in {}; {} match", db.advisories, osv.display(), findings.len()),
    ));
    (runs, findings)
}
