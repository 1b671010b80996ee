//! What supabase_setup says: each migration's state, the warnings of a plan, and the text of a
//! result (which says what its structured form holds).

use super::local::{self, Local};
use super::migrate::{Plan, Remote};
use super::types::{MigrationState, SetupResult};

pub(super) fn states(
    local: &[Local],
    remote: &[Remote],
    plan: &Plan<'_>,
    applied: &[String],
) -> Vec<MigrationState> {
    let mut out: Vec<MigrationState> = local
        .iter()
        .map(|m| {
            let done = remote.iter().any(|r| r.version == m.version) || applied.contains(&m.file);
            MigrationState {
                version: m.version.clone(),
                name: m.name.clone(),
                file: Some(m.file.clone()),
                state: if done { "applied" } else { "pending" }.to_owned(),
                edited: plan.edited.iter().any(|e| e.version == m.version),
            }
        })
        .collect();
    out.extend(remote.iter().filter(|r| plan.missing.contains(&r.version)).map(|r| {
        MigrationState {
            version: r.version.clone(),
            name: r.name.clone().unwrap_or_default(),
            file: None,
            state: "only_in_database".to_owned(),
            edited: false,
        }
    }));
    out.sort_by(|a, b| a.version.cmp(&b.version));
    out
}

pub(super) fn warnings(plan: &Plan<'_>) -> Vec<String> {
    let mut out = Vec::new();
    for m in &plan.edited {
        out.push(format!(
            "{} was edited after it was applied: the database ran its earlier text, and editing \
             an applied file changes nothing there. Put the change in a new migration (action \
             new).",
            m.file
        ));
    }
    for m in &plan.out_of_order {
        out.push(format!(
            "{} is older than the newest applied migration; it is applied now, after newer ones",
            m.file
        ));
    }
    out
}

/// The text of a result: what the structured result says.
pub(super) fn render(r: &SetupResult) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let db = r.database.as_deref().unwrap_or("the database");
    match r.action.as_str() {
        "link" => {
            let _ = write!(
                out,
                "Linked {db} ({}), its URL kept in the secret {}; recorded in {}.",
                r.postgres_version.as_deref().unwrap_or_default(),
                r.secret.as_deref().unwrap_or_default(),
                r.file.as_deref().unwrap_or_default()
            );
            if let Some(reference) = &r.project_ref {
                let _ = write!(out, " Supabase project {reference}.");
            }
        }
        "new" => {
            let _ = write!(
                out,
                "Wrote {} (version {}). Apply it with action migrate.",
                r.file.as_deref().unwrap_or_default(),
                r.version.as_deref().unwrap_or_default()
            );
        }
        "restart" => {
            let _ = write!(
                out,
                "Sent NOTIFY pgrst '{}' to {db} and reconnected ({}).",
                r.notified.join("' and '"),
                r.postgres_version.as_deref().unwrap_or_default()
            );
        }
        _ => {
            if let Some(refused) = &r.refused {
                let _ = writeln!(out, "Refused: {refused}");
            } else if r.action == "migrate" {
                if r.applied.is_empty() && r.failed.is_none() {
                    let _ = writeln!(out, "Nothing to apply to {db}.");
                } else if !r.applied.is_empty() {
                    let _ = writeln!(out, "Applied to {db}: {}.", r.applied.join(", "));
                }
                if let Some(failed) = &r.failed {
                    let undone = if failed.rolled_back {
                        "it was rolled back"
                    } else {
                        "it ran without a transaction: its statements before the failing one \
                         stayed applied, and it is not recorded"
                    };
                    let _ = writeln!(
                        out,
                        "{}\n{} failed at statement {}; {undone}; nothing after it ran. Fix it and \
                         call migrate again.",
                        failed.render(),
                        failed.file,
                        failed.statement
                    );
                }
                if !r.notified.is_empty() {
                    let _ = writeln!(out, "Sent NOTIFY pgrst '{}'.", r.notified.join("', '"));
                }
            } else {
                let _ = writeln!(out, "Migrations of {db}:");
            }
            for m in &r.migrations {
                let edited = if m.edited { " (edited since applied)" } else { "" };
                let what = m.file.as_deref().unwrap_or("(no file)");
                let _ = writeln!(out, "  {} {} {what}{edited}", m.state, m.version);
            }
            if r.migrations.is_empty() {
                let _ = writeln!(out, "  (no migrations in {})", local::DIR);
            }
        }
    }
    for w in &r.warnings {
        let _ = write!(out, "\nwarning: {w}");
    }
    for s in &r.skipped {
        let _ = write!(out, "\nskipped: {s}");
    }
    out.trim_end().to_owned()
}
