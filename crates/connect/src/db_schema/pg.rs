//! db_schema's PostgreSQL read: a handful of catalog queries in one READ ONLY transaction with a
//! statement timeout, whose only inputs are two bind parameters ($1 the schema or `*`, $2 the
//! table or NULL), grouped by table. [`catalog_queries`] gives the same queries with the
//! parameters written out, so that a benchmark can run them through psql.

use crate::postgres::UrlFrom;
use std::collections::BTreeMap;

use super::types::{
    Column, Constraint, EnumType, Function, Include, Request, RlsPolicy, SchemaResult, Table, View,
};
use crate::postgres::{self, DbError};
use hands_core::ToolError;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

/// The schemas `*` leaves out: PostgreSQL's own.
fn system(ns: &str) -> String {
    format!(
        "{ns}.nspname not in ('pg_catalog', 'information_schema', 'pg_toast') \
         and {ns}.nspname not like 'pg_temp_%' and {ns}.nspname not like 'pg_toast_temp_%'"
    )
}

/// The schema condition on the namespace alias `ns`.
fn in_schema(ns: &str) -> String {
    format!("(($1::text = '*' and {}) or {ns}.nspname = $1::text)", system(ns))
}

/// The schema and table condition on relation `rel` in namespace `ns`.
fn scope(rel: &str, ns: &str) -> String {
    format!("{} and ($2::text is null or {rel}.relname = $2::text)", in_schema(ns))
}

fn tables_sql() -> String {
    format!(
        "select n.nspname::text, c.relname::text, c.relrowsecurity, c.relforcerowsecurity
         from pg_class c join pg_namespace n on n.oid = c.relnamespace
         where c.relkind in ('r', 'p') and {}",
        scope("c", "n")
    )
}

// A default cannot name a column, so it is deparsed without its table (relid 0), which spares
// the server opening the table once per column: half this query's time on 5,000 columns. A
// generated column's expression names columns and gets its table.
fn columns_sql() -> String {
    format!(
        "select n.nspname::text, c.relname::text, a.attname::text,
                format_type(a.atttypid, a.atttypmod), not a.attnotnull,
                pg_get_expr(d.adbin, case when a.attgenerated = '' then 0 else d.adrelid end)
         from pg_attribute a
         join pg_class c on c.oid = a.attrelid
         join pg_namespace n on n.oid = c.relnamespace
         left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
         where c.relkind in ('r', 'p') and a.attnum > 0 and not a.attisdropped and {}
         order by n.nspname, c.relname, a.attnum",
        scope("c", "n")
    )
}

fn constraints_sql() -> String {
    format!(
        "select n.nspname::text, c.relname::text, k.conname::text, k.contype::text,
                pg_get_constraintdef(k.oid)
         from pg_constraint k
         join pg_class c on c.oid = k.conrelid
         join pg_namespace n on n.oid = c.relnamespace
         where k.contype in ('p', 'f', 'u', 'c', 'x') and {}
         order by n.nspname, c.relname, k.contype <> 'p', k.conname",
        scope("c", "n")
    )
}

// Indexes that back a constraint are already shown as the constraint.
fn indexes_sql() -> String {
    format!(
        "select n.nspname::text, c.relname::text, pg_get_indexdef(i.indexrelid)
         from pg_index i
         join pg_class c on c.oid = i.indrelid
         join pg_namespace n on n.oid = c.relnamespace
         where not exists (select 1 from pg_constraint k where k.conindid = i.indexrelid)
           and {}
         order by n.nspname, c.relname, 3",
        scope("c", "n")
    )
}

fn policies_sql() -> String {
    format!(
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
         where {}
         order by n.nspname, c.relname, p.polname",
        scope("c", "n")
    )
}

fn triggers_sql() -> String {
    format!(
        "select n.nspname::text, c.relname::text, pg_get_triggerdef(g.oid)
         from pg_trigger g
         join pg_class c on c.oid = g.tgrelid
         join pg_namespace n on n.oid = c.relnamespace
         where not g.tgisinternal and {}
         order by n.nspname, c.relname, g.tgname",
        scope("c", "n")
    )
}

// With a table: the enums its columns use (wherever they live), the table found in the schema
// asked for; without: the schema's enums.
fn enums_sql() -> String {
    format!(
        "select n.nspname::text, t.typname::text,
                array(select enumlabel::text from pg_enum e
                      where e.enumtypid = t.oid order by e.enumsortorder)
         from pg_type t join pg_namespace n on n.oid = t.typnamespace
         where t.typtype = 'e' and (
           ($2::text is null and {})
           or exists (
             select 1 from pg_attribute a
             join pg_class c on c.oid = a.attrelid
             join pg_namespace cn on cn.oid = c.relnamespace
             where (a.atttypid = t.oid or a.atttypid = t.typarray)
               and a.attnum > 0 and not a.attisdropped
               and c.relkind in ('r', 'p') and c.relname = $2::text and {}))
         order by 1, 2",
        in_schema("n"),
        in_schema("cn")
    )
}

fn views_sql() -> String {
    format!(
        "select n.nspname::text, c.relname::text, c.relkind = 'm', pg_get_viewdef(c.oid, true)
         from pg_class c join pg_namespace n on n.oid = c.relnamespace
         where c.relkind in ('v', 'm') and {}
         order by 1, 2",
        scope("c", "n")
    )
}

// Functions that belong to an extension are the extension's, not the project's. With a table:
// the functions its triggers call.
fn functions_sql() -> String {
    format!(
        "select n.nspname::text, p.proname::text,
                case p.prokind when 'p' then 'procedure' else 'function' end,
                pg_get_function_arguments(p.oid), pg_get_function_result(p.oid),
                l.lanname::text, p.prosecdef,
                case p.provolatile when 'i' then 'immutable' when 's' then 'stable'
                     else 'volatile' end
         from pg_proc p
         join pg_namespace n on n.oid = p.pronamespace
         join pg_language l on l.oid = p.prolang
         where p.prokind in ('f', 'p')
           and not exists (select 1 from pg_depend d where d.classid = 'pg_proc'::regclass
                           and d.objid = p.oid and d.deptype = 'e')
           and (($2::text is null and {})
                or ($2::text is not null and exists (
                      select 1 from pg_trigger g
                      join pg_class c on c.oid = g.tgrelid
                      join pg_namespace cn on cn.oid = c.relnamespace
                      where g.tgfoid = p.oid and not g.tgisinternal and {})))
         order by 1, 2, 4",
        in_schema("n"),
        scope("c", "cn")
    )
}

/// Every catalog query db_schema runs for `include`, with `schema` and `table` written out as
/// literals in place of the bind parameters (for psql in `bench/db_schema.sh`; db_schema itself
/// never splices a name into SQL).
pub fn catalog_queries(schema: &str, table: Option<&str>, include: &[Include]) -> Vec<String> {
    let quote = |s: &str| format!("'{}'", s.replace('\'', "''"));
    let table = table.map_or_else(|| "NULL".to_owned(), quote);
    let mut queries = vec![
        tables_sql(),
        columns_sql(),
        constraints_sql(),
        indexes_sql(),
        policies_sql(),
        enums_sql(),
    ];
    if include.contains(&Include::Triggers) {
        queries.push(triggers_sql());
    }
    if include.contains(&Include::Views) {
        queries.push(views_sql());
    }
    if include.contains(&Include::Functions) {
        queries.push(functions_sql());
    }
    queries
        .into_iter()
        .map(|q| {
            q.replace("$1::text", &format!("{}::text", quote(schema)))
                .replace("$2::text", &format!("{table}::text"))
        })
        .collect()
}

fn query_error(err: &tokio_postgres::Error, timeout: std::time::Duration) -> ToolError {
    match err.as_db_error() {
        Some(db) if db.code().code() == "57014" => ToolError::model(format!(
            "the schema query took longer than the statement timeout ({} ms) and was cancelled \
             (57014). Ask for less: one `table`, one `schema`, or without `include`.",
            timeout.as_millis()
        )),
        Some(db) => ToolError::model(format!(
            "the database refused the schema query: {} ({})",
            db.message(),
            db.code().code()
        )),
        None => ToolError::model(format!("the schema query failed: {err}")),
    }
}

fn db_error(err: &DbError) -> ToolError {
    ToolError::model(format!("db_schema could not read the database: {err}"))
}

pub(super) async fn read(
    url: &str,
    net: &hands_net::NetConfig,
    req: &Request<'_>,
) -> Result<SchemaResult, ToolError> {
    let mut client =
        postgres::connect(url, UrlFrom::User, net).await.map_err(|err| db_error(&err))?;
    let tx = postgres::read_only(&mut client, req.timeout)
        .await
        .map_err(|e| query_error(&e, req.timeout))?;
    let params: [&(dyn ToSql + Sync); 2] = [&req.schema, &req.table];
    let run = async |sql: String| -> Result<Vec<Row>, ToolError> {
        tx.query(&sql, &params).await.map_err(|e| query_error(&e, req.timeout))
    };

    let mut tables: BTreeMap<(String, String), Table> = BTreeMap::new();
    for row in run(tables_sql()).await? {
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
    for row in run(columns_sql()).await? {
        if let Some(t) = tables.get_mut(&(row.get(0), row.get(1))) {
            t.columns.push(Column {
                name: row.get(2),
                data_type: row.get(3),
                nullable: row.get(4),
                default: row.get(5),
            });
        }
    }
    for row in run(constraints_sql()).await? {
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
    for row in run(indexes_sql()).await? {
        if let Some(t) = tables.get_mut(&(row.get(0), row.get(1))) {
            t.indexes.push(row.get(2));
        }
    }
    for row in run(policies_sql()).await? {
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
    if req.wants(Include::Triggers) {
        for row in run(triggers_sql()).await? {
            if let Some(t) = tables.get_mut(&(row.get(0), row.get(1))) {
                t.triggers.push(row.get(2));
            }
        }
    }
    let enums = run(enums_sql())
        .await?
        .into_iter()
        .map(|row| EnumType { schema: row.get(0), name: row.get(1), labels: row.get(2) })
        .collect();
    let mut views = Vec::new();
    if req.wants(Include::Views) || req.table.is_some() {
        for row in run(views_sql()).await? {
            views.push(View {
                schema: row.get(0),
                name: row.get(1),
                materialized: row.get(2),
                definition: row.get(3),
            });
        }
    }
    let mut functions = Vec::new();
    if req.wants(Include::Functions) {
        for row in run(functions_sql()).await? {
            functions.push(Function {
                schema: row.get(0),
                name: row.get(1),
                kind: row.get(2),
                arguments: row.get(3),
                returns: row.get(4),
                language: row.get(5),
                security_definer: row.get(6),
                volatility: row.get(7),
            });
        }
    }
    tx.rollback().await.map_err(|e| query_error(&e, req.timeout))?;
    Ok(SchemaResult {
        engine: "postgresql".to_owned(),
        database: crate::database::redacted(url),
        schema: req.schema.to_owned(),
        tables: tables.into_values().collect(),
        enums,
        views,
        functions,
        notes: Vec::new(),
    })
}
