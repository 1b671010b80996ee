//! supabase_setup's arguments, results and the tool's own state: what the tool, `link` and the
//! report share.

use std::sync::Arc;

use hands_core::config::Approval;
use hands_core::secret::SecretStore;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::migrate::Failure;
use crate::config::DatabaseConfig;

/// The tool's name.
pub(super) const TOOL: &str = "supabase_setup";

/// What supabase_setup does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Link the project to its database: verify the URL and record which secret holds it.
    Link,
    /// Write a new migration file from `name` and `sql`.
    New,
    /// Apply the pending migrations in order.
    Migrate,
    /// Show which migrations are applied and which are pending.
    Status,
    /// Make PostgREST reload its schema cache and configuration, and reconnect.
    Restart,
}

/// Arguments of supabase_setup.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SupabaseSetupArgs {
    /// What to do: `link`, `new`, `migrate`, `status` or `restart`.
    pub action: Action,
    /// For `new`: the migration's name, 1 to 100 letters, digits, `_` or `-` (like create_todos).
    #[serde(default)]
    pub name: Option<String>,
    /// For `new`: the migration's SQL (at most 1 MiB).
    #[serde(default)]
    pub sql: Option<String>,
    /// For `link`: the Supabase project's ref (20 lowercase letters and digits); read from the
    /// database URL when left out.
    #[serde(default)]
    pub project_ref: Option<String>,
    /// For `link`: the name of the secret holding the database URL (default SUPABASE_DB_URL);
    /// the user is asked for it when it is not stored.
    #[serde(default)]
    pub secret: Option<String>,
}

/// One migration, as the folder and the database know it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct MigrationState {
    /// Its version (the file name's leading digits).
    pub version: String,
    /// Its name.
    pub name: String,
    /// Its file, when the folder has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// `applied`, `pending`, or `only_in_database` (a version no file has).
    pub state: String,
    /// True when the file was edited after it was applied.
    pub edited: bool,
}

/// The structured result of supabase_setup: everything its text says.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SetupResult {
    /// The action.
    pub action: String,
    /// The database, as `user@host:port/database` (never the password).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub database: Option<String>,
    /// The name of the secret holding the database URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    /// The Supabase project's ref, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_ref: Option<String>,
    /// The database's `select version()`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub postgres_version: Option<String>,
    /// The file written (`new`) or the file the link is recorded in (`link`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The new migration's version (`new`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Every migration and its state (`migrate`, `status`).
    pub migrations: Vec<MigrationState>,
    /// The files this call applied, in order.
    pub applied: Vec<String>,
    /// The file that failed, where and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<Failure>,
    /// Why `migrate` applied nothing at all, when it refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// The `NOTIFY pgrst` payloads sent.
    pub notified: Vec<String>,
    /// What needs a look: edited files, versions only in the database, files out of order.
    pub warnings: Vec<String>,
    /// Files of the migrations folder that are not migrations.
    pub skipped: Vec<String>,
}

/// The supabase_setup tool.
#[derive(Clone)]
pub struct SupabaseSetup {
    pub(super) net: hands_net::NetConfig,
    pub(super) database: DatabaseConfig,
    pub(super) approval: Approval,
    pub(super) store: Arc<dyn SecretStore>,
}

impl SupabaseSetup {
    /// With the `[net]` rule for the database's address, the `[database]` settings, the
    /// approval policy and the user's secret store.
    pub fn new(
        net: hands_net::NetConfig,
        database: DatabaseConfig,
        approval: Approval,
        store: Arc<dyn SecretStore>,
    ) -> Self {
        Self { net, database, approval, store }
    }
}
