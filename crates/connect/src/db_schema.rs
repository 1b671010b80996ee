//! db_schema: the linked database's live schema as compact DDL-like text plus JSON.
//!
//! Flow: the database URL comes from the user's secret store (connect_supabase's
//! `SUPABASE_DB_URL`) or the environment; postgres.rs connects under the guard's address rule; a
//! READ ONLY transaction with a 10 s statement timeout runs a few catalog queries whose schema and
//! table names are bind parameters only (never spliced into SQL); the rows are grouped by table.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use hands_core::secret::SecretStore;
use hands_core::{Annotations, Context, Family, Label, Policy, Tool, ToolError, ToolOutput};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::DB_URL_NAME;
use crate::postgres::{self, DbError};

/// What db_schema may add to the tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Include {
    /// Views and their definitions.
    Views,
    /// Triggers on the tables.
    Triggers,
    /// Row-level security policies (always shown with their table).
    Policies,
    /// Functions (not supported yet: the result says so).
    Functions,
}

/// Arguments of db_schema.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DbSchemaArgs {
    /// One table's name; all tables of the schema when left out.
    #[serde(default)]
    pub table: Option<String>,
    /// The schema (`public` when left out); `*` for every schema but PostgreSQL's own.
    #[serde(default)]
    pub schema: Option<String>,
    /// Extra objects to show: views, triggers, policies, functions.
    #[serde(default)]
    pub include: Vec<Include>,
}

/// One column.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Column {
    /// Its name.
    pub name: String,
    /// Its type as PostgreSQL prints it (`format_type`).
    #[serde(rename = "type")]
    pub data_type: String,
    /// False when NOT NULL.
    pub nullable: bool,
    /// Its default expression, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

/// One constraint (primary key, foreign key, unique, check, exclusion).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Constraint {
    /// Its name.
    pub name: String,
    /// `primary_key`, `foreign_key`, `unique`, `check` or `exclude`.
    pub kind: String,
    /// Its definition (`pg_get_constraintdef`).
    pub definition: String,
}

/// One row-level security policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct RlsPolicy {
    /// Its name.
    pub name: String,
    /// `ALL`, `SELECT`, `INSERT`, `UPDATE` or `DELETE`.
    pub command: String,
    /// The roles it applies to.
    pub roles: Vec<String>,
    /// False for a RESTRICTIVE policy.
    pub permissive: bool,
    /// Its USING expression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub using: Option<String>,
    /// Its WITH CHECK expression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub with_check: Option<String>,
}

/// One table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Table {
    /// Its schema.
    pub schema: String,
    /// Its name.
    pub name: String,
    /// Its columns in order.
    pub columns: Vec<Column>,
    /// Its constraints.
    pub constraints: Vec<Constraint>,
    /// Its indexes (`pg_get_indexdef`).
    pub indexes: Vec<String>,
    /// Whether row-level security is enabled.
    pub rls_enabled: bool,
    /// Whether row-level security is forced on the owner too.
    pub rls_forced: bool,
    /// Its policies.
    pub policies: Vec<RlsPolicy>,
    /// Its triggers (`pg_get_triggerdef`), with `include: ["triggers"]`.
    pub triggers: Vec<String>,
}

/// One enum type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct EnumType {
    /// Its schema.
    pub schema: String,
    /// Its name.
    pub name: String,
    /// Its labels in order.
    pub labels: Vec<String>,
}

/// One view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct View {
    /// Its schema.
    pub schema: String,
    /// Its name.
    pub name: String,
    /// Whether it is a materialized view.
    pub materialized: bool,
    /// Its definition.
    pub definition: String,
}

/// The structured result of db_schema: everything its text says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SchemaResult {
    /// The schema asked for (`*` for all).
    pub schema: String,
    /// The tables.
    pub tables: Vec<Table>,
    /// The enum types.
    pub enums: Vec<EnumType>,
    /// The views, with `include: ["views"]`.
    pub views: Vec<View>,
    /// What was asked for and is not supported.
    pub notes: Vec<String>,
}

/// The db_schema tool.
#[derive(Clone)]
pub struct DbSchema {
    net: hands_net::NetConfig,
    store: Arc<dyn SecretStore>,
}

impl DbSchema {
    /// With the `[net]` rule for the database's address and the user's secret store.
    pub fn new(net: hands_net::NetConfig, store: Arc<dyn SecretStore>) -> Self {
        Self { net, store }
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
        let url = self
            .store
            .get(ctx.root(), DB_URL_NAME)
            .map(|v| v.expose().to_owned())
            .or_else(|| std::env::var(DB_URL_NAME).ok().filter(|v| !v.is_empty()))
            .ok_or_else(|| {
                ToolError::model(format!(
                    "no database is linked to this project. Link one with connect_supabase (it \
                     asks the user for the database URL and stores it as {DB_URL_NAME}), or have \
                     the user store it with the secrets tool under the name {DB_URL_NAME}"
                ))
            })?;
        let work = read(&url, &self.net, &schema, args.table.as_deref(), &args.include);
        let result = tokio::select! {
            result = work => result?,
            () = ctx.cancel_token().cancelled() => {
                return Err(ToolError::model("db_schema was stopped (timeout or abort)"));
            }
        };
        if let Some(table) = &args.table
            && result.tables.is_empty()
        {
            return Err(ToolError::model(format!(
                "no table `{table}` in schema `{schema}`; call {TOOL} without `table` to \
                 list them, or with `schema: \"*\"` to search every schema"
            )));
        }
        Ok(ToolOutput::text(text(&result)).with_structured(
            serde_json::to_value(&result)
                .map_err(|err| ToolError::Fatal(format!("a result did not serialize: {err}")))?,
        ))
    }
}

fn db_error(err: &DbError) -> ToolError {
    ToolError::model(format!("db_schema could not read the database: {err}"))
}

fn query_error(err: &tokio_postgres::Error) -> ToolError {
    match err.as_db_error() {
        Some(db) => ToolError::model(format!(
            "the database refused the schema query: {} ({})",
            db.message(),
            db.code().code()
        )),
        None => ToolError::model(format!("the schema query failed: {err}")),
    }
}

/// The schemas `*` leaves out: PostgreSQL's own.
const SYSTEM: &str = "n.nspname not in ('pg_catalog', 'information_schema', 'pg_toast') \
                      and n.nspname not like 'pg_temp_%' and n.nspname not like 'pg_toast_temp_%'";

fn scope(alias: &str) -> String {
    // $1 the schema ('*' for all), $2 the table or NULL: bind parameters, never spliced.
    format!(
        "(($1::text = '*' and {SYSTEM}) or n.nspname = $1::text) and ($2::text is null or {alias}.relname = $2::text)"
    )
}

async fn read(
    url: &str,
    net: &hands_net::NetConfig,
    schema: &str,
    table: Option<&str>,
    include: &[Include],
) -> Result<SchemaResult, ToolError> {
    let mut client = postgres::connect(url, net).await.map_err(|err| db_error(&err))?;
    let tx = client
        .build_transaction()
        .read_only(true)
        .start()
        .await
        .map_err(|err| query_error(&err))?;
    tx.batch_execute("set local statement_timeout = '10s'").await.map_err(|e| query_error(&e))?;
    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 2] = [&schema, &table];
    let rel = scope("c");

    let mut tables: BTreeMap<(String, String), Table> = BTreeMap::new();
    let rows = tx
        .query(
            &format!(
                "select n.nspname::text, c.relname::text, c.relrowsecurity, c.relforcerowsecurity
                 from pg_class c join pg_namespace n on n.oid = c.relnamespace
                 where c.relkind in ('r', 'p') and {rel}"
            ),
            &params,
        )
        .await
        .map_err(|e| query_error(&e))?;
    for row in rows {
        let key = (row.get::<_, String>(0), row.get::<_, String>(1));
        tables.insert(
            key.clone(),
            Table {
                schema: key.0,
                name: key.1,
                columns: Vec::new(),
                constraints: Vec::new(),
                indexes: Vec::new(),
                rls_enabled: row.get(2),
                rls_forced: row.get(3),
                policies: Vec::new(),
                triggers: Vec::new(),
            },
        );
    }
    let rows = tx
        .query(
            &format!(
                "select n.nspname::text, c.relname::text, a.attname::text,
                        format_type(a.atttypid, a.atttypmod), not a.attnotnull,
                        pg_get_expr(d.adbin, d.adrelid)
                 from pg_attribute a
                 join pg_class c on c.oid = a.attrelid
                 join pg_namespace n on n.oid = c.relnamespace
                 left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
                 where c.relkind in ('r', 'p') and a.attnum > 0 and not a.attisdropped and {rel}
                 order by n.nspname, c.relname, a.attnum"
            ),
            &params,
        )
        .await
        .map_err(|e| query_error(&e))?;
    for row in rows {
        if let Some(t) = tables.get_mut(&(row.get(0), row.get(1))) {
            t.columns.push(Column {
                name: row.get(2),
                data_type: row.get(3),
                nullable: row.get(4),
                default: row.get(5),
            });
        }
    }
    let rows = tx
        .query(
            &format!(
                "select n.nspname::text, c.relname::text, k.conname::text, k.contype::text,
                        pg_get_constraintdef(k.oid)
                 from pg_constraint k
                 join pg_class c on c.oid = k.conrelid
                 join pg_namespace n on n.oid = c.relnamespace
                 where k.contype in ('p', 'f', 'u', 'c', 'x') and {rel}
                 order by n.nspname, c.relname, k.contype <> 'p', k.conname"
            ),
            &params,
        )
        .await
        .map_err(|e| query_error(&e))?;
    for row in rows {
        if let Some(t) = tables.get_mut(&(row.get(0), row.get(1))) {
            let kind = match row.get::<_, String>(3).as_str() {
                "p" => "primary_key",
                "f" => "foreign_key",
                "u" => "unique",
                "c" => "check",
                _ => "exclude",
            };
            t.constraints.push(Constraint {
                name: row.get(2),
                kind: kind.to_owned(),
                definition: row.get(4),
            });
        }
    }
    // Indexes that back a constraint are already shown as the constraint.
    let rows = tx
        .query(
            &format!(
                "select n.nspname::text, c.relname::text, pg_get_indexdef(i.indexrelid)
                 from pg_index i
                 join pg_class c on c.oid = i.indrelid
                 join pg_namespace n on n.oid = c.relnamespace
                 where not exists (select 1 from pg_constraint k where k.conindid = i.indexrelid)
                   and {rel}
                 order by n.nspname, c.relname, 3"
            ),
            &params,
        )
        .await
        .map_err(|e| query_error(&e))?;
    for row in rows {
        if let Some(t) = tables.get_mut(&(row.get(0), row.get(1))) {
            t.indexes.push(row.get(2));
        }
    }
    let rows = tx
        .query(
            &format!(
                "select n.nspname::text, c.relname::text, p.polname::text,
                        case p.polcmd when 'r' then 'SELECT' when 'a' then 'INSERT'
                             when 'w' then 'UPDATE' when 'd' then 'DELETE' else 'ALL' end,
                        case when p.polroles = '{{0}}' then array['public']
                             else array(select rolname::text from pg_roles
                                        where oid = any(p.polroles) order by rolname) end,
                        p.polpermissive,
                        pg_get_expr(p.polqual, p.polrelid),
                        pg_get_expr(p.polwithcheck, p.polrelid)
                 from pg_policy p
                 join pg_class c on c.oid = p.polrelid
                 join pg_namespace n on n.oid = c.relnamespace
                 where {rel}
                 order by n.nspname, c.relname, p.polname"
            ),
            &params,
        )
        .await
        .map_err(|e| query_error(&e))?;
    for row in rows {
        if let Some(t) = tables.get_mut(&(row.get(0), row.get(1))) {
            t.policies.push(RlsPolicy {
                name: row.get(2),
                command: row.get(3),
                roles: row.get(4),
                permissive: row.get(5),
                using: row.get(6),
                with_check: row.get(7),
            });
        }
    }
    if include.contains(&Include::Triggers) {
        let rows = tx
            .query(
                &format!(
                    "select n.nspname::text, c.relname::text, pg_get_triggerdef(g.oid)
                     from pg_trigger g
                     join pg_class c on c.oid = g.tgrelid
                     join pg_namespace n on n.oid = c.relnamespace
                     where not g.tgisinternal and {rel}
                     order by n.nspname, c.relname, g.tgname"
                ),
                &params,
            )
            .await
            .map_err(|e| query_error(&e))?;
        for row in rows {
            if let Some(t) = tables.get_mut(&(row.get(0), row.get(1))) {
                t.triggers.push(row.get(2));
            }
        }
    }
    let mut enums = Vec::new();
    let rows = tx
        .query(
            &format!(
                "select n.nspname::text, t.typname::text,
                        array(select enumlabel::text from pg_enum e
                              where e.enumtypid = t.oid order by e.enumsortorder)
                 from pg_type t join pg_namespace n on n.oid = t.typnamespace
                 where t.typtype = 'e' and (($1::text = '*' and {SYSTEM}) or n.nspname = $1::text)
                   and ($2::text is null or exists (
                     select 1 from pg_attribute a join pg_class c on c.oid = a.attrelid
                     where a.atttypid = t.oid and c.relname = $2::text))
                 order by 1, 2"
            ),
            &params,
        )
        .await
        .map_err(|e| query_error(&e))?;
    for row in rows {
        enums.push(EnumType { schema: row.get(0), name: row.get(1), labels: row.get(2) });
    }
    let mut views = Vec::new();
    if include.contains(&Include::Views) {
        let rows = tx
            .query(
                &format!(
                    "select n.nspname::text, c.relname::text, c.relkind = 'm',
                            pg_get_viewdef(c.oid, true)
                     from pg_class c join pg_namespace n on n.oid = c.relnamespace
                     where c.relkind in ('v', 'm') and {rel}
                     order by 1, 2"
                ),
                &params,
            )
            .await
            .map_err(|e| query_error(&e))?;
        for row in rows {
            views.push(View {
                schema: row.get(0),
                name: row.get(1),
                materialized: row.get(2),
                definition: row.get(3),
            });
        }
    }
    tx.rollback().await.map_err(|e| query_error(&e))?;
    let mut notes = Vec::new();
    if include.contains(&Include::Functions) {
        notes.push("functions are not listed by db_schema yet".to_owned());
    }
    Ok(SchemaResult {
        schema: schema.to_owned(),
        tables: tables.into_values().collect(),
        enums,
        views,
        notes,
    })
}

/// The compact DDL-like text.
fn text(result: &SchemaResult) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    if result.tables.is_empty() && result.views.is_empty() && result.enums.is_empty() {
        let _ = writeln!(out, "-- no tables in schema `{}`", result.schema);
    }
    for e in &result.enums {
        let labels: Vec<String> = e.labels.iter().map(|l| format!("'{l}'")).collect();
        let _ =
            writeln!(out, "create type {}.{} as enum ({});", e.schema, e.name, labels.join(", "));
    }
    for t in &result.tables {
        let _ = writeln!(out, "create table {}.{} (", t.schema, t.name);
        let mut lines: Vec<String> = t
            .columns
            .iter()
            .map(|c| {
                let mut line = format!("  {} {}", c.name, c.data_type);
                if !c.nullable {
                    line.push_str(" not null");
                }
                if let Some(d) = &c.default {
                    let _ = write!(line, " default {d}");
                }
                line
            })
            .collect();
        lines.extend(
            t.constraints.iter().map(|k| format!("  constraint {} {}", k.name, k.definition)),
        );
        let _ = writeln!(out, "{}\n);", lines.join(",\n"));
        for index in &t.indexes {
            let _ = writeln!(out, "{index};");
        }
        if t.rls_enabled {
            let forced = if t.rls_forced { " (forced)" } else { "" };
            let _ = writeln!(out, "-- row level security: on{forced}");
        } else {
            let _ = writeln!(out, "-- row level security: off");
        }
        for p in &t.policies {
            let mut line = format!(
                "create policy \"{}\" on {}.{}{} for {} to {}",
                p.name,
                t.schema,
                t.name,
                if p.permissive { "" } else { " as restrictive" },
                p.command,
                p.roles.join(", ")
            );
            if let Some(using) = &p.using {
                let _ = write!(line, " using ({using})");
            }
            if let Some(check) = &p.with_check {
                let _ = write!(line, " with check ({check})");
            }
            let _ = writeln!(out, "{line};");
        }
        for trigger in &t.triggers {
            let _ = writeln!(out, "{trigger};");
        }
        out.push('\n');
    }
    for v in &result.views {
        let kind = if v.materialized { "materialized view" } else { "view" };
        let _ = writeln!(
            out,
            "create {kind} {}.{} as\n{}\n",
            v.schema,
            v.name,
            v.definition.trim_end()
        );
    }
    for note in &result.notes {
        let _ = writeln!(out, "-- note: {note}");
    }
    out.trim_end().to_owned()
}
