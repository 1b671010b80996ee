//! `hands store migrate` and `hands store check`, and [`open`]: the configured session store
//! with errors that say which setting to change.

use std::process::ExitCode;

use anyhow::{Context as _, Result};
use clap::Subcommand;
use hands_store::{Opened, StoreBackend, StoreConfig};

use crate::settings::Settings;
use crate::term;

/// `hands store …`
#[derive(Debug, Subcommand)]
pub enum Action {
    /// Apply the migrations the database lacks (PostgreSQL: under an advisory lock, so that
    /// nodes starting at once, or a migration job beside them, apply each one once).
    Migrate,
    /// Connect, and say whether the schema is the one this hands needs (exit 1 when not).
    Check,
}

/// Open the store `[store]` describes for the node `node`.
pub fn open(config: &StoreConfig, node: &str) -> Result<Opened> {
    hands_store::open(config, node).with_context(|| match config.backend {
        StoreBackend::Postgres => "cannot use the PostgreSQL session store ([store] backend = \
             \"postgres\"): check its URL, pool_size and ca_file"
            .to_owned(),
        _ => format!(
            "cannot open the session store {}: set [store] path to a writable file, or backend = \
             \"memory\" to keep sessions only while hands runs",
            config.path.display()
        ),
    })
}

/// Run the action.
pub fn run(settings: &Settings, action: Action) -> Result<ExitCode> {
    let node = match settings.cluster.node_id.trim() {
        "" => hands_store::default_node_id(),
        id => id.to_owned(),
    };
    let opened = open(&settings.store, &node)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let Some(pg) = opened.postgres else {
            // SQLite migrates when opened (it just was); memory has no schema to keep.
            opened.store.list_projects().await.context("the session store does not answer")?;
            term::out(&format!(
                "session store ({:?}): ok, schema current\n",
                settings.store.backend
            ));
            return Ok(ExitCode::SUCCESS);
        };
        match action {
            Action::Migrate => {
                let done = pg.migrate().await.context("migrating the session store")?;
                let what = if done.from == done.to { "already current" } else { "migrated" };
                term::out(&format!(
                    "session store (postgres): {what}: schema version {} → {}\n",
                    done.from, done.to
                ));
                Ok(ExitCode::SUCCESS)
            }
            Action::Check => {
                let (have, want) =
                    pg.schema_version().await.context("the session store does not answer")?;
                term::out(&format!(
                    "session store (postgres): reachable, schema version {have}, this hands needs \
                     {want}\n"
                ));
                if have == want {
                    Ok(ExitCode::SUCCESS)
                } else {
                    term::out("run `hands store migrate` to bring it up to date\n");
                    Ok(ExitCode::from(1))
                }
            }
        }
    })
}
