//! `hands checkpoints list|diff|restore|gc`: the project's checkpoints from the command line.
//!
//! The store is the project's shadow store under the state folder (see hands-checkpoint); a diff
//! compares a checkpoint with the one before it (or `--against`), a restore puts the project's
//! files back (refused while a hands process runs a turn on the project) and prints its undo; a
//! session's conversation is rewound where the session lives (`/rewind` in `hands chat`, the
//! session API).

use std::path::Path;
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context;
use clap::Subcommand;
use hands_checkpoint::{Kind, Meta, Settings, Store, Summary};

/// What to do with the checkpoints.
#[derive(Debug, Subcommand)]
pub enum Action {
    /// List the checkpoints, oldest first.
    List {
        /// Only this session's.
        #[arg(long)]
        session: Option<String>,
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// The changes of checkpoint N against the one before it.
    Diff {
        /// The checkpoint.
        n: u64,
        /// Compare with this checkpoint instead of the one before.
        #[arg(long)]
        against: Option<u64>,
        /// Only the list of files, no unified diff.
        #[arg(long)]
        stat: bool,
    },
    /// Make the project's files equal to checkpoint N (itself checkpointed, so it can be undone).
    Restore {
        /// The checkpoint.
        n: u64,
    },
    /// Remove checkpoints beyond `[checkpoints] keep` per session (100) or older than
    /// `max_age_days` (30), and the objects no checkpoint refers to.
    Gc,
}

/// What the turn just run changed in the project, from its two checkpoints (before its first
/// change, at its end): "3 files changed, +42 −7; see them with hands checkpoints diff M --against
/// N; undo with hands checkpoints restore N". `None` when the turn changed nothing or there are
/// no checkpoints.
pub fn turn_changes(root: &Path, settings: &Settings, session: &str) -> Option<String> {
    let store = Store::open_with(root, settings).ok()?;
    let list = store.list().ok()?;
    let mut mine = list.iter().rev().filter(|c| c.session == session);
    let after = mine.next().filter(|c| c.kind == Kind::TurnEnd)?;
    let before = mine.find(|c| c.kind == Kind::TurnStart && c.turn == after.turn)?;
    let changes = hands_checkpoint::diff(&store, Some(before), after).ok()?;
    if changes.is_empty() {
        return None;
    }
    let summary = Summary::of(&changes);
    Some(format!(
        "{summary}; see them with hands checkpoints diff {} --against {}; undo with hands \
         checkpoints restore {}",
        after.id, before.id, before.id
    ))
}

/// One line per path `what` could not capture, with why and its escaped name when it differs.
fn not_captured(paths: &[hands_checkpoint::Uncaptured], what: &str) {
    for u in paths {
        let line = format!("not captured by the {what}: {u}");
        println!("{}", crate::term::line(&hands_core::redact::text(&line)));
    }
}

/// Runs `action` on the checkpoints of `root`.
pub fn run(root: &Path, settings: &Settings, action: Action) -> anyhow::Result<ExitCode> {
    let store = Store::open_with(root, settings).context("cannot open the checkpoint store")?;
    match action {
        Action::List { session, json } => {
            let list: Vec<_> = store
                .list()?
                .into_iter()
                .filter(|c| session.as_ref().is_none_or(|s| *s == c.session))
                .collect();
            if json {
                let rows: Vec<_> = list
                    .iter()
                    .map(|c| {
                        serde_json::json!({"n": c.id, "session": c.session, "turn": c.turn,
                            "kind": c.kind, "created_at": c.created_at(),
                            "files_changed": c.changes.files, "additions": c.changes.added,
                            "deletions": c.changes.removed, "tree": c.tree,
                            "uncaptured": c.uncaptured})
                    })
                    .collect();
                println!("{}", serde_json::to_string_pretty(&rows)?);
            } else {
                for c in list {
                    let missed = match c.uncaptured.len() {
                        0 => String::new(),
                        n => format!("; {n} not captured (see diff {})", c.id),
                    };
                    println!(
                        "{:>5}  {:<10}  {}  {}  {}  {}{missed}",
                        c.id,
                        c.kind.as_str(),
                        c.created_at(),
                        crate::term::line(&c.session),
                        crate::term::line(c.turn.as_deref().unwrap_or("-")),
                        c.changes
                    );
                }
            }
        }
        Action::Diff { n, against, stat } => {
            let new = store.load(n)?;
            let old = match against {
                Some(a) => store.load(a)?,
                None => match store.previous(n)? {
                    Some(p) => p,
                    None => anyhow::bail!("checkpoint {n} is the first one; pass --against N"),
                },
            };
            let changes = hands_checkpoint::diff(&store, Some(&old), &new)?;
            // A changed line may hold a stored value (a key pasted into a file): shown redacted,
            // like every other surface. Names and lines are escaped: a file a turn made may be
            // named with a line break and terminal sequences, to forge or hide a line of what the
            // user reviews before a restore.
            let name = |text: &str| crate::term::line(&hands_core::redact::text(text));
            let shown = |text: &str| crate::term::text(&hands_core::redact::text(text));
            for c in &changes {
                println!(
                    "{:<9} {:>+6} {:>6}  {}",
                    serde_json::to_value(c.kind)?.as_str().unwrap_or(""),
                    c.added,
                    format!("-{}", c.removed),
                    name(&c.path)
                );
            }
            if !stat {
                for c in &changes {
                    if let Some(u) = &c.unified {
                        print!("{}", shown(u));
                    }
                }
            }
            println!("{}", Summary::of(&changes));
            not_captured(&new.uncaptured, "checkpoint");
        }
        Action::Restore { n } => {
            let target = store.load(n)?;
            let r = store.restore(n, &Meta::new(&target.session, Kind::Restore))?;
            println!(
                "restored checkpoint {n}: {} written, {} deleted; undo with hands checkpoints \
                 restore {}",
                r.written.len(),
                r.deleted.len(),
                r.undo.id
            );
            for s in &r.skipped {
                println!("left as is (above the size cap): {}", crate::term::line(s));
            }
            not_captured(&r.uncaptured, "undo checkpoint");
        }
        Action::Gc => {
            let now =
                SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
            let gc = store.gc(settings.retention(), now)?;
            println!(
                "removed {} checkpoints and {} objects ({} bytes)",
                gc.checkpoints, gc.objects, gc.bytes
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
