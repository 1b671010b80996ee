//! `hands checkpoints list|diff|restore|gc`: the project's checkpoints from the command line.
//!
//! The store is the project's shadow store under the state folder (see hands-checkpoint); a diff
//! compares a checkpoint with the one before it (or `--against`), a restore prints its undo.

use std::path::Path;
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context;
use clap::Subcommand;
use hands_checkpoint::{Retention, Store, Summary};

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
    /// Make the working tree equal to checkpoint N (itself checkpointed, so it can be undone).
    Restore {
        /// The checkpoint.
        n: u64,
    },
    /// Remove checkpoints beyond the last 100 per session or older than 30 days, and the objects
    /// no checkpoint refers to.
    Gc,
}

/// Runs `action` on the checkpoints of `root`.
pub fn run(root: &Path, action: Action) -> anyhow::Result<ExitCode> {
    let store = Store::open_for(root).context("cannot open the checkpoint store")?;
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
                        serde_json::json!({"id": c.id, "session": c.session, "turn": c.turn,
                            "label": c.label, "created": c.created, "files": c.entries.len()})
                    })
                    .collect();
                println!("{}", serde_json::to_string_pretty(&rows)?);
            } else {
                for c in list {
                    println!(
                        "{:>5}  {}  turn {:<4} {:<28} {} files",
                        c.id,
                        c.session,
                        c.turn,
                        c.label,
                        c.entries.len()
                    );
                }
            }
        }
        Action::Diff { n, against, stat } => {
            let new = store.load(n)?;
            let old = match against {
                Some(a) => store.load(a)?,
                None => match store.ids()?.into_iter().rfind(|i| *i < n) {
                    Some(p) => store.load(p)?,
                    None => anyhow::bail!("checkpoint {n} is the first one; pass --against N"),
                },
            };
            let changes = hands_checkpoint::diff(&store, &old, &new)?;
            for c in &changes {
                let kind = serde_json::to_value(c.kind)?;
                println!(
                    "{:<9} {:>+6} {:>6}  {}",
                    kind.as_str().unwrap_or(""),
                    c.added,
                    format!("-{}", c.removed),
                    c.path
                );
            }
            if !stat {
                for c in &changes {
                    if let Some(u) = &c.unified {
                        print!("{u}");
                    }
                }
            }
            println!("{}", Summary::of(&changes));
        }
        Action::Restore { n } => {
            let r = store.restore(n)?;
            println!(
                "restored checkpoint {n}: {} written, {} deleted; undo with hands checkpoints restore {}",
                r.written.len(),
                r.deleted.len(),
                r.undo
            );
            for s in &r.skipped {
                println!("left as is (above the size cap): {s}");
            }
        }
        Action::Gc => {
            let now =
                SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
            let gc = store.gc(Retention::default(), now)?;
            println!(
                "removed {} checkpoints and {} objects ({} bytes)",
                gc.checkpoints, gc.objects, gc.bytes
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
