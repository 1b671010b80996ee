//! db_schema: the linked database's live schema as compact DDL-like text plus JSON.
//!
//! Flow: database.rs says which database is linked (a PostgreSQL URL from a stored secret, or a
//! SQLite file in the project); pg.rs reads PostgreSQL's catalog in a READ ONLY transaction with
//! a statement timeout (`[database] statement_timeout_ms`, 10 s), every schema and table name a
//! bind parameter (never spliced into SQL); sqlite.rs reads a SQLite file opened read-only;
//! text.rs renders the result both read into.

mod pg;
mod sqlite;
mod text;
mod types;

pub use pg::catalog_queries;
use types::Request;
pub use types::{DbSchemaArgs, Include, SchemaResult};

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use hands_core::secret::SecretStore;
use hands_core::{Annotations, Context, Family, Label, Policy, Tool, ToolError, ToolOutput};

use crate::config::DatabaseConfig;
use crate::database::{self, Database};

/// The db_schema tool.
#[derive(Clone)]
pub struct DbSchema {
    net: hands_net::NetConfig,
    database: DatabaseConfig,
    store: Arc<dyn SecretStore>,
}

impl DbSchema {
    /// With the `[net]` rule for the database's address, the `[database]` settings and the
    /// user's secret store.
    pub fn new(
        net: hands_net::NetConfig,
        database: DatabaseConfig,
        store: Arc<dyn SecretStore>,
    ) -> Self {
        Self { net, database, store }
    }
}

const TOOL: &str = "db_schema";
/// The longest schema or table name PostgreSQL keeps (NAMEDATALEN - 1).
const MAX_NAME: usize = 63;

impl Tool for DbSchema {
    type Args = DbSchemaArgs;

    fn name(&self) -> &'static str {
        TOOL
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("db_schema.md"))
    }

    fn annotations(&self) -> Annotations {
        Annotations { read_only: true, destructive: false, idempotent: true, open_world: true }
    }

    fn policy(&self) -> Policy {
        Policy::from_annotations(self.annotations())
            .label(Label::FirstOf { keys: &["table", "schema"] })
            .family(Family::Project)
    }

    fn cacheable(&self) -> bool {
        false
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        Some(hands_core::output_schema_for::<SchemaResult>())
    }

    async fn call(&self, ctx: Context, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let schema = args.schema.unwrap_or_else(|| "public".to_owned());
        for (what, name) in [("schema", Some(&schema)), ("table", args.table.as_ref())] {
            if let Some(name) = name
                && (name.is_empty() || name.len() > MAX_NAME || name.contains('\0'))
            {
                return Err(ToolError::model(format!(
                    "`{what}` must be a name of 1 to {MAX_NAME} bytes without NUL; \
                     call {TOOL} without it to list every table"
                )));
            }
        }
        let request = Request {
            schema: &schema,
            table: args.table.as_deref(),
            include: &args.include,
            timeout: Duration::from_millis(self.database.statement_timeout_ms.max(1)),
        };
        let work = async {
            match database::linked(&ctx, &*self.store, &self.database)? {
                Database::Postgres { url, .. } => pg::read(url.expose(), &self.net, &request).await,
                Database::Sqlite { path } => sqlite::read(&ctx, &path, &request).await,
            }
        };
        let result = tokio::select! {
            result = work => result?,
            () = ctx.cancel_token().cancelled() => {
                return Err(ToolError::model("db_schema was stopped (timeout or abort)"));
            }
        };
        if let Some(table) = &args.table
            && result.tables.is_empty()
            && result.views.is_empty()
        {
            return Err(ToolError::model(format!(
                "no table `{table}` in schema `{schema}` of {}; call {TOOL} without `table` to \
                 list them, or with `schema: \"*\"` to search every schema",
                result.database
            )));
        }
        Ok(ToolOutput::text(text::render(&result)).with_structured(
            serde_json::to_value(&result)
                .map_err(|err| ToolError::Fatal(format!("a result did not serialize: {err}")))?,
        ))
    }
}
