//! db_schema's compact DDL-like text: enums, then each table with its constraints, indexes,
//! row-level security and policies and triggers, then views and functions (bodies left out).

use std::fmt::Write as _;

use super::types::SchemaResult;

/// The text of `result`.
pub(super) fn render(result: &SchemaResult) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "-- {} {}", result.engine, result.database);
    if result.tables.is_empty() && result.views.is_empty() && result.enums.is_empty() {
        let _ = writeln!(out, "-- no tables in schema `{}`", result.schema);
    }
    for e in &result.enums {
        let labels: Vec<String> = e.labels.iter().map(|l| format!("'{l}'")).collect();
        let _ =
            writeln!(out, "create type {}.{} as enum ({});", e.schema, e.name, labels.join(", "));
    }
    let rls = result.engine == "postgresql";
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
        if rls {
            let forced = if t.rls_forced { " (forced)" } else { "" };
            let state = if t.rls_enabled { "on" } else { "off" };
            let _ = writeln!(out, "-- row level security: {state}{forced}");
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
    for f in &result.functions {
        let returns = f.returns.as_ref().map(|r| format!(" returns {r}")).unwrap_or_default();
        let definer = if f.security_definer { " security definer" } else { "" };
        let _ = writeln!(
            out,
            "create {} {}.{}({}){returns} language {} {}{definer};",
            f.kind, f.schema, f.name, f.arguments, f.language, f.volatility
        );
    }
    for note in &result.notes {
        let _ = writeln!(out, "-- note: {note}");
    }
    out.trim_end().to_owned()
}
