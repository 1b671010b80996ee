//! What the user approves before supabase_setup changes anything: the one-line summary names the
//! action and the target database (`user@host:port/db`, never the password); the details list
//! what will actually run, computed before asking — for `migrate` every pending SQL file in
//! order, with its size and its first lines (redacted), for `link` which secret and database,
//! for `new` the file and its first lines. The arguments alone (`{"action":"migrate"}`) say none
//! of it.

use hands_core::config::Approval;
use hands_core::{Context, ToolError};

use super::local::{self, Local};
use super::types::{Action, SupabaseSetup, SupabaseSetupArgs, TOOL};

/// How many lines of each SQL file the approval shows.
pub const FIRST_LINES: usize = 8;
/// The longest line shown, in characters.
const LINE_CHARS: usize = 160;
/// How many files the approval shows the first lines of (the rest: name and size).
const FILES_WITH_LINES: usize = 20;

impl SupabaseSetup {
    /// True when an action must be approved first.
    pub(super) fn asks(&self) -> bool {
        self.approval != Approval::Auto
    }

    /// The call runs what the user approved: `details`, computed again now, must be what they
    /// were shown. Nothing to compare when nobody was asked (`approval = "auto"`).
    pub(super) fn check_approved(
        &self,
        ctx: &Context,
        args: &SupabaseSetupArgs,
        details: &str,
    ) -> Result<(), ToolError> {
        match ctx.approved() {
            None => Ok(()),
            Some(approved)
                if approved.details.as_deref()
                    == Some(hands_core::redact::text(details).as_ref()) =>
            {
                Ok(())
            }
            Some(_) => {
                let action = format!("{:?}", args.action).to_ascii_lowercase();
                Err(ToolError::model(format!(
                    "what {TOOL} {action} would do changed after the user approved it (the \
                     database or the files changed meanwhile); nothing was done. Call again to be \
                     asked about what it would do now."
                )))
            }
        }
    }
}

/// The summary's end for `migrate`.
pub(super) fn migrate_what(pending: &[&Local], target: &str) -> String {
    format!(
        "apply the pending migrations of {} ({} file{}) to the database {target}",
        local::DIR,
        pending.len(),
        if pending.len() == 1 { "" } else { "s" }
    )
}

/// The details of `migrate`: the target, then each file it will run, in order.
pub(super) fn migrate_details(target: &str, secret: &str, pending: &[&Local]) -> String {
    let mut out = format!(
        "database: {target} (the URL in the secret {secret})\nruns {} file{} of {}, in this \
         order (first {FIRST_LINES} lines of each shown):\n",
        pending.len(),
        if pending.len() == 1 { "" } else { "s" },
        local::DIR
    );
    for (i, m) in pending.iter().enumerate() {
        let lines = m.text.lines().count();
        out.push_str(&format!(
            "{}. {} ({} bytes, {lines} line{}, {})\n",
            i + 1,
            m.file,
            m.text.len(),
            if lines == 1 { "" } else { "s" },
            if m.transaction { "in one transaction" } else { "outside a transaction" }
        ));
        if i < FILES_WITH_LINES {
            out.push_str(&first_lines(&m.text));
        }
    }
    if pending.len() > FILES_WITH_LINES {
        out.push_str(&format!(
            "(the first lines of the files after the {FILES_WITH_LINES}th are not shown)\n"
        ));
    }
    out
}

/// The details of `new`: the file it writes and its first lines; no database is touched.
pub(super) fn new_details(args: &SupabaseSetupArgs) -> String {
    let sql = args.sql.as_deref().unwrap_or_default();
    format!(
        "writes {}/<timestamp>_{}.sql ({} bytes; no database is touched), first {FIRST_LINES} \
         lines:\n{}",
        local::DIR,
        args.name.as_deref().unwrap_or_default(),
        sql.len(),
        first_lines(sql)
    )
}

/// `text`'s first lines, indented and cut, with how many more there are.
fn first_lines(text: &str) -> String {
    let mut out = String::new();
    let total = text.lines().count();
    for line in text.lines().take(FIRST_LINES) {
        let cut: String = line.chars().take(LINE_CHARS).collect();
        let more = if line.chars().count() > LINE_CHARS { "…" } else { "" };
        out.push_str(&format!("   | {cut}{more}\n"));
    }
    if total > FIRST_LINES {
        out.push_str(&format!("   | … ({} more lines)\n", total - FIRST_LINES));
    }
    out
}

/// The summary's end for the other actions.
pub(super) fn what(action: Action, args: &SupabaseSetupArgs, target: Option<&str>) -> String {
    let to = target.map(|t| format!(" of the database {t}")).unwrap_or_default();
    match action {
        Action::New => format!(
            "write {}/<timestamp>_{}.sql",
            local::DIR,
            args.name.as_deref().unwrap_or_default()
        ),
        Action::Link => match target {
            Some(t) => format!("link the project's database {t}"),
            None => "link the project's database (the user is asked for its URL)".to_owned(),
        },
        Action::Restart => format!("make PostgREST{to} reload its schema and configuration"),
        Action::Migrate | Action::Status => format!("show the migrations{to}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local(file: &str, text: &str) -> Local {
        Local {
            version: "1".into(),
            name: "x".into(),
            file: file.into(),
            text: text.into(),
            statements: Vec::new(),
            transaction: true,
        }
    }

    #[test]
    fn details_list_each_file_with_its_size_and_first_lines() {
        let long: String = (1..=12).map(|n| format!("select {n};\n")).collect();
        let a = local("supabase/migrations/1_a.sql", "drop table public.keep;\n");
        let b = local("supabase/migrations/2_b.sql", &long);
        let text = migrate_details("u@h:5432/db", "DB_URL", &[&a, &b]);
        assert!(text.starts_with("database: u@h:5432/db"), "{text}");
        assert!(text.contains("1. supabase/migrations/1_a.sql (24 bytes, 1 line,"), "{text}");
        assert!(text.contains("   | drop table public.keep;\n"), "{text}");
        assert!(text.contains("   | select 8;\n") && !text.contains("select 9;"), "{text}");
        assert!(text.contains("(4 more lines)"), "{text}");
        assert!(first_lines(&"x".repeat(500)).contains('…'));
    }
}
