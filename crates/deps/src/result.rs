//! add_dependency's result: the structured form (its output schema is derived from these types)
//! and the text the model reads, which says the same.

use std::collections::BTreeSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::cause::Cause;
use crate::devserver::DevServer;
use crate::manifest::State;

/// What happened to one package.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Newly declared.
    Added,
    /// Declared before; its requirement or resolved version changed.
    Updated,
    /// Asked for, but nothing changed (already there, or the run failed).
    Unchanged,
    /// No longer declared (a manager replaced it).
    Removed,
}

/// One package in the result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Change {
    /// The package's name (Python names normalised).
    pub name: String,
    /// Added, updated, unchanged or removed.
    pub status: Status,
    /// A dev dependency.
    pub dev: bool,
    /// The requirement the manifest records now (`^1.2.0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requirement: Option<String>,
    /// The resolved version before, from the lock file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
    /// The resolved version now, from the lock file (or what was installed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// add_dependency's structured result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AddResult {
    /// The package manager: npm, pnpm, yarn, bun, cargo, uv, poetry or pip.
    pub manager: String,
    /// Why that one (`pnpm-lock.yaml`, `"packageManager": "pnpm@9.1.0"`).
    pub detected_by: String,
    /// The (sub-)project it ran in, relative to the root (`.` for the root).
    pub path: String,
    /// The command it ran (no shell), exactly: its first word is the program's absolute path.
    pub command: Vec<String>,
    /// The program that ran (`command`'s first word).
    pub program: String,
    /// Whose it is: `system` (found on PATH outside the project) or `repository` (beneath the
    /// project root, such as its `.venv/bin/python`).
    pub program_origin: String,
    /// A program of the repository's the run used (the program itself, its interpreter, a
    /// `yarnPath` release), which the user allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository_program: Option<String>,
    /// Install-time code could run (lifecycle scripts, `.pnpmfile.cjs`, source builds): only when
    /// the user set `[deps] allow_scripts`, or for uv and poetry, which cannot switch it off.
    pub scripts: bool,
    /// True when the manager succeeded.
    pub ok: bool,
    /// Its exit code, when it exited by itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<Cause>,
    /// The packages asked for, and any other dependency that changed.
    pub changes: Vec<Change>,
    /// The lock file read, relative to the root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock_file: Option<String>,
    /// pip: the requirements file the pins were written to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinned_in: Option<String>,
    /// Warnings of a run that succeeded (unmet peer dependencies), or, when pip failed with
    /// source builds off, that it installs wheels only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Running dev servers, and whether each picked the packages up.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dev_servers: Vec<DevServer>,
    /// How long the manager ran, in milliseconds.
    pub duration_ms: u64,
    /// The manager's last lines (at most 40): on failure, what it said.
    pub output_tail: String,
}

/// The changes between `before` and `after` for the packages asked (`asked`, by name) and any
/// other declared dependency whose requirement or version moved.
pub(crate) fn changes(before: &State, after: &State, asked: &[String]) -> Vec<Change> {
    let mut names: BTreeSet<&String> = asked.iter().collect();
    for (name, declared) in &after.declared {
        let moved = before.declared.get(name) != Some(declared)
            || before.locked.get(name) != after.locked.get(name);
        if moved {
            names.insert(name);
        }
    }
    names.extend(before.declared.keys().filter(|n| !after.declared.contains_key(*n)));
    let mut out: Vec<Change> = names
        .into_iter()
        .map(|name| {
            let was = before.declared.get(name);
            let now = after.declared.get(name);
            let (old, new) = (before.locked.get(name), after.locked.get(name));
            let status = match (was, now) {
                (None, Some(_)) => Status::Added,
                (Some(_), None) => Status::Removed,
                (Some(w), Some(n)) if w != n || old != new => Status::Updated,
                _ => Status::Unchanged,
            };
            Change {
                name: name.clone(),
                status,
                dev: now.or(was).is_some_and(|d| d.dev),
                requirement: now.map(|d| d.requirement.clone()).filter(|r| !r.is_empty()),
                before: old.cloned(),
                version: new.cloned(),
            }
        })
        .collect();
    // Asked-for packages first, in the order asked.
    out.sort_by_key(|c| asked.iter().position(|a| *a == c.name).unwrap_or(usize::MAX));
    out
}

/// The last `n` lines of `text`.
pub(crate) fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

impl AddResult {
    /// The text the model reads: the same facts as the fields.
    pub(crate) fn text(&self) -> String {
        let mut text = String::new();
        let place = if self.path == "." { String::new() } else { format!(" in {}", self.path) };
        if self.ok {
            text.push_str(&format!(
                "{} added the packages{place} (detected by {}).\n",
                self.manager, self.detected_by
            ));
        } else {
            let cause = self.cause.unwrap_or(Cause::Failed);
            let code = self.exit_code.map_or_else(String::new, |c| format!(", exit code {c}"));
            text.push_str(&format!(
                "{} could not add the packages{place}: {}{code}. {}\n",
                self.manager,
                cause.label(),
                cause.advice()
            ));
        }
        text.push_str(&format!("Ran: {}\n", self.command.join(" ")));
        if let Some(program) = &self.repository_program {
            text.push_str(&format!(
                "The repository's program ran (the user allowed it): {program}\n"
            ));
        }
        let scripts = if self.scripts { "could run" } else { "off" };
        text.push_str(&format!(
            "Install-time code (lifecycle scripts, source builds): {scripts}.\n"
        ));
        for change in &self.changes {
            let mark = match change.status {
                Status::Added => "+",
                Status::Updated => "~",
                Status::Unchanged => "=",
                Status::Removed => "-",
            };
            let version = match (&change.before, &change.version) {
                (Some(b), Some(v)) if b != v => format!(" {b} -> {v}"),
                (_, Some(v)) => format!(" {v}"),
                _ => String::new(),
            };
            let requirement = change
                .requirement
                .as_ref()
                .map_or_else(String::new, |r| format!(" (declared {r})"));
            let dev = if change.dev { " [dev]" } else { "" };
            let status = match change.status {
                Status::Added => "added",
                Status::Updated => "updated",
                Status::Unchanged => "unchanged",
                Status::Removed => "removed",
            };
            text.push_str(&format!(
                "  {mark} {}{version}{requirement}{dev}: {status}\n",
                change.name
            ));
        }
        if let Some(lock) = &self.lock_file {
            text.push_str(&format!("Lock file: {lock}\n"));
        }
        if let Some(file) = &self.pinned_in {
            text.push_str(&format!("Pinned in {file}.\n"));
        }
        for warning in &self.warnings {
            text.push_str(&format!("Warning: {warning}\n"));
        }
        for server in &self.dev_servers {
            text.push_str(&format!(
                "Dev server {} ({}): {}\n",
                server.id, server.name, server.note
            ));
        }
        if !self.ok && !self.output_tail.is_empty() {
            text.push_str("--- the manager's last lines ---\n");
            text.push_str(&self.output_tail);
            text.push('\n');
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::Declared;

    fn state(declared: &[(&str, &str)], locked: &[(&str, &str)]) -> State {
        State {
            declared: declared
                .iter()
                .map(|(n, r)| {
                    ((*n).to_owned(), Declared { requirement: (*r).to_owned(), dev: false })
                })
                .collect(),
            locked: locked.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())).collect(),
            lock: None,
        }
    }

    #[test]
    fn changes_are_read_from_before_and_after() {
        let before = state(&[("a", "^1.0.0"), ("b", "1.0.0")], &[("a", "1.0.0"), ("b", "1.0.0")]);
        let after = state(
            &[("a", "^1.2.0"), ("b", "1.0.0"), ("c", "^2.0.0")],
            &[("a", "1.2.0"), ("b", "1.0.0"), ("c", "2.0.1")],
        );
        let got = changes(&before, &after, &["c".into(), "b".into()]);
        let summary: Vec<(&str, Status)> =
            got.iter().map(|c| (c.name.as_str(), c.status)).collect();
        assert_eq!(
            summary,
            [("c", Status::Added), ("b", Status::Unchanged), ("a", Status::Updated)]
        );
        assert_eq!(got[2].before.as_deref(), Some("1.0.0"));
        assert_eq!(got[2].version.as_deref(), Some("1.2.0"));
        assert_eq!(last_lines("1\n2\n3", 2), "2\n3");
    }
}
