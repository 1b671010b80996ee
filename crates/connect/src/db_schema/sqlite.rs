//! db_schema's SQLite read: the file `[database] sqlite` names is opened through the project's
//! confined workspace (a path or symlink leading outside the root is refused), checked to be a
//! SQLite database by its header, and read with rusqlite opened READ ONLY with `query_only` on,
//! from `sqlite_master` and the table-valued pragmas, every name a bind parameter. The read runs
//! on a blocking thread and is interrupted past the statement timeout.

use std::os::fd::AsRawFd as _;
use std::path::{Path, PathBuf};

use hands_core::{Context, ToolError};
use rusqlite::{Connection, OpenFlags, params};

use super::types::{Column, Constraint, Include, Request, SchemaResult, Table, View};

/// The first 16 bytes of every SQLite database file.
const MAGIC: &[u8; 16] = b"SQLite format 3\0";

pub(super) async fn read(
    ctx: &Context,
    path: &str,
    req: &Request<'_>,
) -> Result<SchemaResult, ToolError> {
    if !matches!(req.schema, "public" | "main" | "*") {
        return Err(ToolError::model(format!(
            "the linked database is a SQLite file ({path}), which has one schema, `main`; call \
             db_schema without `schema`"
        )));
    }
    let (file, real) = locate(ctx, path)?;
    let table = req.table.map(str::to_owned);
    let views = req.include.contains(&Include::Views) || req.table.is_some();
    let opened = open(&real).map_err(|err| sqlite_error(path, &err))?;
    drop(file);
    let interrupt = opened.get_interrupt_handle();
    let work = tokio::task::spawn_blocking(move || read_all(&opened, table.as_deref(), views));
    let tables_and_views = match tokio::time::timeout(req.timeout, work).await {
        Ok(Ok(result)) => result.map_err(|err| sqlite_error(path, &err))?,
        Ok(Err(err)) => return Err(ToolError::Fatal(format!("the SQLite read failed: {err}"))),
        Err(_) => {
            interrupt.interrupt();
            return Err(ToolError::model(format!(
                "reading {path} took longer than the statement timeout ({} ms) and was stopped",
                req.timeout.as_millis()
            )));
        }
    };
    let mut notes = Vec::new();
    if req.include.contains(&Include::Functions) {
        notes.push("SQLite has no stored functions".to_owned());
    }
    if req.include.contains(&Include::Policies) {
        notes.push("SQLite has no row-level security policies".to_owned());
    }
    Ok(SchemaResult {
        engine: "sqlite".to_owned(),
        database: path.to_owned(),
        schema: "main".to_owned(),
        tables: tables_and_views.0,
        enums: Vec::new(),
        views: tables_and_views.1,
        functions: Vec::new(),
        notes,
    })
}

fn sqlite_error(path: &str, err: &rusqlite::Error) -> ToolError {
    ToolError::model(format!("db_schema could not read the SQLite database {path}: {err}"))
}

/// The file, opened through the confined workspace, and its real path (read back from the
/// descriptor, so it is the file that was checked).
fn locate(ctx: &Context, path: &str) -> Result<(cap_std::fs::File, PathBuf), ToolError> {
    use std::io::Read as _;
    let ws = hands_fs::Workspace::of(ctx)?;
    let rel = ws.resolve("[database] sqlite", path)?;
    let file = ws.open_read(&rel).map_err(|err| ws.io_error("read", &rel, &err))?;
    let meta = file.metadata().map_err(|err| ws.io_error("read", &rel, &err))?;
    if meta.is_dir() {
        return Err(ToolError::model(format!(
            "`[database] sqlite` names {path}, a folder; name the database file"
        )));
    }
    let mut head = [0u8; 16];
    let mut reader = &file;
    let got = reader.read(&mut head).map_err(|err| ws.io_error("read", &rel, &err))?;
    if got < head.len() || &head != MAGIC {
        return Err(ToolError::model(format!(
            "`[database] sqlite` names {path}, which is not a SQLite database (its first bytes \
             are not `SQLite format 3`). Ask the user to fix the path in .hands/config.toml."
        )));
    }
    let real =
        std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).map_err(|err| {
            ToolError::Fatal(format!("cannot find the opened file {path} again: {err}"))
        })?;
    Ok((file, real))
}

/// A read-only connection to `path`: writes fail (SQLITE_READONLY), and `query_only` refuses
/// even those SQLite would allow a read-only connection.
pub(crate) fn open(path: &Path) -> Result<Connection, rusqlite::Error> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.pragma_update(None, "query_only", true)?;
    conn.busy_timeout(std::time::Duration::from_secs(2))?;
    Ok(conn)
}

type Read = (Vec<Table>, Vec<View>);

fn read_all(conn: &Connection, table: Option<&str>, views: bool) -> Result<Read, rusqlite::Error> {
    let mut stmt = conn.prepare(
        "select name, coalesce(sql, '') from sqlite_master where type = 'table' \
         and name not like 'sqlite_%' and (?1 is null or name = ?1) order by name",
    )?;
    let found: Vec<(String, String)> = stmt
        .query_map(params![table], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect::<Result<_, _>>()?;
    let mut tables = Vec::new();
    for (name, sql) in found {
        tables.push(one_table(conn, &name, &sql)?);
    }
    let mut out_views = Vec::new();
    if views {
        let mut stmt = conn.prepare(
            "select name, coalesce(sql, '') from sqlite_master where type = 'view' \
             and (?1 is null or name = ?1) order by name",
        )?;
        out_views = stmt
            .query_map(params![table], |row| {
                Ok(View {
                    schema: "main".to_owned(),
                    name: row.get(0)?,
                    materialized: false,
                    definition: row.get(1)?,
                })
            })?
            .collect::<Result<_, _>>()?;
    }
    Ok((tables, out_views))
}

fn one_table(conn: &Connection, name: &str, sql: &str) -> Result<Table, rusqlite::Error> {
    let mut stmt = conn.prepare(
        "select name, type, \"notnull\", dflt_value, pk from pragma_table_info(?1) order by cid",
    )?;
    let mut pk: Vec<(i64, String)> = Vec::new();
    let columns = stmt
        .query_map(params![name], |row| {
            Ok((
                Column {
                    name: row.get(0)?,
                    data_type: row.get(1)?,
                    nullable: row.get::<_, i64>(2)? == 0,
                    default: row.get(3)?,
                },
                row.get::<_, i64>(4)?,
            ))
        })?
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .map(|(column, key)| {
            if key > 0 {
                pk.push((key, column.name.clone()));
            }
            column
        })
        .collect();
    let mut constraints = Vec::new();
    if !pk.is_empty() {
        pk.sort();
        let cols: Vec<String> = pk.into_iter().map(|(_, c)| c).collect();
        constraints.push(Constraint {
            name: format!("{name}_pkey"),
            kind: "primary_key".to_owned(),
            definition: format!("PRIMARY KEY ({})", cols.join(", ")),
        });
    }
    constraints.extend(foreign_keys(conn, name)?);
    let mut indexes = Vec::new();
    let mut stmt = conn.prepare("select name, origin from pragma_index_list(?1) order by name")?;
    let listed: Vec<(String, String)> = stmt
        .query_map(params![name], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect::<Result<_, _>>()?;
    for (index, origin) in listed {
        match origin.as_str() {
            "pk" => {}
            "u" => {
                let mut cols =
                    conn.prepare("select name from pragma_index_info(?1) order by seqno")?;
                let cols: Vec<String> = cols
                    .query_map(params![index], |row| row.get::<_, Option<String>>(0))?
                    .collect::<Result<Vec<_>, _>>()?
                    .into_iter()
                    .map(|c| c.unwrap_or_else(|| "(expression)".to_owned()))
                    .collect();
                constraints.push(Constraint {
                    name: index,
                    kind: "unique".to_owned(),
                    definition: format!("UNIQUE ({})", cols.join(", ")),
                });
            }
            _ => {
                let sql: Option<String> = conn.query_row(
                    "select sql from sqlite_master where type = 'index' and name = ?1",
                    params![index],
                    |row| row.get(0),
                )?;
                indexes.push(sql.unwrap_or(index));
            }
        }
    }
    for (n, check) in checks(sql).into_iter().enumerate() {
        constraints.push(Constraint {
            name: format!("{name}_check{}", n + 1),
            kind: "check".to_owned(),
            definition: check,
        });
    }
    let mut stmt = conn.prepare(
        "select coalesce(sql, '') from sqlite_master where type = 'trigger' and tbl_name = ?1 \
         order by name",
    )?;
    let triggers = stmt.query_map(params![name], |row| row.get(0))?.collect::<Result<_, _>>()?;
    Ok(Table {
        schema: "main".to_owned(),
        name: name.to_owned(),
        columns,
        constraints,
        indexes,
        rls_enabled: false,
        rls_forced: false,
        policies: Vec::new(),
        triggers,
    })
}

fn foreign_keys(conn: &Connection, table: &str) -> Result<Vec<Constraint>, rusqlite::Error> {
    let mut stmt = conn.prepare(
        "select id, \"table\", \"from\", \"to\", on_update, on_delete \
         from pragma_foreign_key_list(?1) order by id, seq",
    )?;
    type Fk = (i64, String, String, Option<String>, String, String);
    let rows: Vec<Fk> = stmt
        .query_map(params![table], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?, row.get(5)?))
        })?
        .collect::<Result<_, _>>()?;
    /// One foreign key: its id, columns, target table, target columns and actions.
    struct Key {
        id: i64,
        from: Vec<String>,
        target: String,
        to: Vec<String>,
        actions: String,
    }
    let mut out: Vec<Key> = Vec::new();
    for (id, target, from, to, on_update, on_delete) in rows {
        let mut actions = String::new();
        for (what, action) in [("DELETE", on_delete), ("UPDATE", on_update)] {
            if action != "NO ACTION" {
                actions.push_str(&format!(" ON {what} {action}"));
            }
        }
        match out.last_mut() {
            Some(last) if last.id == id => {
                last.from.push(from);
                last.to.extend(to);
            }
            _ => out.push(Key {
                id,
                from: vec![from],
                target,
                to: to.into_iter().collect(),
                actions,
            }),
        }
    }
    Ok(out
        .into_iter()
        .map(|Key { id, from, target, to, actions }| {
            let to = if to.is_empty() { String::new() } else { format!("({})", to.join(", ")) };
            Constraint {
                name: format!("{table}_fk{}", id + 1),
                kind: "foreign_key".to_owned(),
                definition: format!(
                    "FOREIGN KEY ({}) REFERENCES {target}{to}{actions}",
                    from.join(", ")
                ),
            }
        })
        .collect())
}

/// The `CHECK (…)` clauses of a CREATE TABLE statement (SQLite keeps no catalog of them):
/// quoted text and comments are skipped, parentheses balanced.
fn checks(sql: &str) -> Vec<String> {
    let bytes = sql.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            quote @ (b'\'' | b'"' | b'`') => i = skip_past(bytes, i + 1, quote),
            b'[' => i = skip_past(bytes, i + 1, b']'),
            b'-' if bytes.get(i + 1) == Some(&b'-') => i = skip_past(bytes, i, b'\n'),
            b'c' | b'C'
                if bytes.len() >= i + 5
                    && bytes[i..i + 5].eq_ignore_ascii_case(b"check")
                    && (i == 0 || !is_word(bytes[i - 1]))
                    && bytes.get(i + 5).is_none_or(|b| !is_word(*b)) =>
            {
                let mut j = i + 5;
                while j < bytes.len() && bytes[j].is_ascii_whitespace() {
                    j += 1;
                }
                if bytes.get(j) == Some(&b'(') {
                    let end = balanced(bytes, j);
                    out.push(format!("CHECK {}", &sql[j..end]));
                    i = end;
                } else {
                    i += 5;
                }
            }
            _ => i += 1,
        }
    }
    out
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The index just past the next `end` from `from` (or the end of the text).
fn skip_past(bytes: &[u8], from: usize, end: u8) -> usize {
    bytes[from.min(bytes.len())..]
        .iter()
        .position(|b| *b == end)
        .map_or(bytes.len(), |p| from + p + 1)
}

/// The index just past the parenthesis that closes the one at `open`.
fn balanced(bytes: &[u8], open: usize) -> usize {
    let mut depth = 0usize;
    let mut i = open;
    while i < bytes.len() {
        match bytes[i] {
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            quote @ (b'\'' | b'"' | b'`') => {
                i = skip_past(bytes, i + 1, quote);
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_clauses_are_found_past_quotes_and_comments() {
        let sql = "CREATE TABLE t (a int CHECK (a > 0), b text check(length(b) < 10 and b <> ')'), \
                   -- check (no)\n c text default 'check (x)', \"check\" int, CONSTRAINT k CHECK ((a) <> 2))";
        assert_eq!(
            checks(sql),
            ["CHECK (a > 0)", "CHECK (length(b) < 10 and b <> ')')", "CHECK ((a) <> 2)"]
        );
        assert!(checks("create table rechecked (x)").is_empty());
    }

    #[test]
    fn a_read_only_connection_cannot_write() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("app.db");
        let rw = Connection::open(&path).unwrap();
        rw.execute_batch("create table t (x int); insert into t values (1);").unwrap();
        drop(rw);
        let conn = open(&path).unwrap();
        for sql in ["insert into t values (2)", "create table u (y)", "drop table t"] {
            let err = conn.execute_batch(sql).unwrap_err().to_string();
            assert!(err.contains("readonly") || err.contains("read-only"), "{sql}: {err}");
        }
        let n: i64 = conn.query_row("select count(*) from t", [], |r| r.get(0)).unwrap();
        assert_eq!(n, 1);
    }
}
