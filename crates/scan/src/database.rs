//! The database check: in the schemas the API exposes (`supabase/config.toml`'s `[api] schemas`,
//! else `public` and `graphql_public`), tables without row-level security, policies on tables
//! whose row-level security is off (they do nothing), views that run with their owner's rights
//! (no `security_invoker`), and `SECURITY DEFINER` functions. Read in a READ ONLY transaction
//! with a 10 s statement timeout; the schema list is a bind parameter, never spliced.

use std::path::Path;

use crate::finding::{Check, Finding, Severity};

/// The schemas PostgREST exposes when the project does not say.
const DEFAULT_EXPOSED: &[&str] = &["public", "graphql_public"];

/// The schemas `root`'s Supabase configuration exposes.
pub fn exposed_schemas(root: &Path) -> Vec<String> {
    let configured = std::fs::read_to_string(root.join("supabase/config.toml"))
        .ok()
        .and_then(|text| text.parse::<toml::Table>().ok())
        .and_then(|t| t.get("api")?.get("schemas")?.as_array().cloned())
        .map(|list| list.iter().filter_map(|s| s.as_str().map(str::to_owned)).collect::<Vec<_>>());
    match configured {
        Some(list) if !list.is_empty() => list,
        _ => DEFAULT_EXPOSED.iter().map(|s| (*s).to_owned()).collect(),
    }
}

/// Run the database check on `client`.
pub async fn check(
    client: &mut tokio_postgres::Client,
    schemas: &[String],
) -> Result<Vec<Finding>, String> {
    let failed = |err: tokio_postgres::Error| match err.as_db_error() {
        Some(db) => {
            format!("the database refused a query: {} ({})", db.message(), db.code().code())
        }
        None => format!("a query failed: {err}"),
    };
    let tx = client.build_transaction().read_only(true).start().await.map_err(failed)?;
    tx.batch_execute("set local statement_timeout = '10s'").await.map_err(failed)?;
    let mut out = Vec::new();
    let rows = tx
        .query(
            "select n.nspname::text, c.relname::text,
                    exists (select 1 from pg_policy p where p.polrelid = c.oid)
             from pg_class c join pg_namespace n on n.oid = c.relnamespace
             where c.relkind in ('r', 'p') and not c.relrowsecurity and n.nspname = any($1)
             order by 1, 2",
            &[&schemas],
        )
        .await
        .map_err(failed)?;
    for row in rows {
        let (schema, table, policies): (String, String, bool) =
            (row.get(0), row.get(1), row.get(2));
        let object = format!("{schema}.{table}");
        out.push(Finding {
            severity: Severity::High,
            check: Check::Database,
            rule: "rls_disabled".into(),
            location: format!("table {object}"),
            message: format!(
                "table {object} is in an exposed schema without row-level security: anyone with \
                 the anon key can read and change every row. Run `alter table {object} enable \
                 row level security;` and add policies"
            ),
        });
        if policies {
            out.push(Finding {
                severity: Severity::High,
                check: Check::Database,
                rule: "policy_exists_rls_disabled".into(),
                location: format!("table {object}"),
                message: format!(
                    "table {object} has policies but row-level security is off, so they do \
                     nothing: `alter table {object} enable row level security;`"
                ),
            });
        }
    }
    let rows = tx
        .query(
            "select n.nspname::text, c.relname::text
             from pg_class c join pg_namespace n on n.oid = c.relnamespace
             where c.relkind = 'v' and n.nspname = any($1)
               and not coalesce(c.reloptions::text[] && array['security_invoker=true',
                   'security_invoker=on', 'security_invoker=1', 'security_invoker=yes'], false)
             order by 1, 2",
            &[&schemas],
        )
        .await
        .map_err(failed)?;
    for row in rows {
        let object = format!("{}.{}", row.get::<_, String>(0), row.get::<_, String>(1));
        out.push(Finding {
            severity: Severity::High,
            check: Check::Database,
            rule: "security_definer_view".into(),
            location: format!("view {object}"),
            message: format!(
                "view {object} runs with its owner's rights (SECURITY DEFINER behaviour), \
                 bypassing the row-level security of the tables it reads: `alter view {object} \
                 set (security_invoker = on);`"
            ),
        });
    }
    let rows = tx
        .query(
            "select n.nspname::text, p.proname::text, pg_get_function_identity_arguments(p.oid),
                    exists (select 1 from pg_roles r where r.rolname = 'anon')
                      and has_function_privilege('anon', p.oid, 'execute')
             from pg_proc p join pg_namespace n on n.oid = p.pronamespace
             where p.prosecdef and n.nspname = any($1)
             order by 1, 2, 3",
            &[&schemas],
        )
        .await
        .map_err(failed)?;
    for row in rows {
        let object = format!(
            "{}.{}({})",
            row.get::<_, String>(0),
            row.get::<_, String>(1),
            row.get::<_, String>(2)
        );
        let anon: bool = row.get(3);
        out.push(Finding {
            severity: if anon { Severity::High } else { Severity::Medium },
            check: Check::Database,
            rule: "security_definer_function".into(),
            location: format!("function {object}"),
            message: format!(
                "function {object} is SECURITY DEFINER in an exposed schema{}: it runs with its \
                 owner's rights, around row-level security. Make it SECURITY INVOKER, or move it \
                 to a schema the API does not expose, and set its search_path",
                if anon { " and the anon role may call it" } else { "" }
            ),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposed_schemas_come_from_the_supabase_config() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(exposed_schemas(dir.path()), ["public", "graphql_public"]);
        std::fs::create_dir(dir.path().join("supabase")).unwrap();
        std::fs::write(
            dir.path().join("supabase/config.toml"),
            "[api]\nschemas = [\"public\", \"api\"]\n",
        )
        .unwrap();
        assert_eq!(exposed_schemas(dir.path()), ["public", "api"]);
    }
}
