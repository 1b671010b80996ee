//! Applying migrations to PostgreSQL so that the Supabase CLI agrees with the result.
//!
//! The history is the CLI's table, created with the CLI's own DDL when missing:
//! `supabase_migrations.schema_migrations (version text primary key, statements text[], name
//! text)`, one row per applied file holding its version, its name and its statements as the CLI
//! cuts them (split.rs). `migrate` holds a session advisory lock (so two migrates never apply a
//! file twice), compares the folder with the history (versions only in the database: refused;
//! applied files whose statements changed: warned), and applies each pending file in order:
//! `RESET ALL`, then each statement as its own simple query inside one transaction (or none, for
//! a file that opts out) together with its history row. A failure gives the file, line and column
//! of the server's error position, the SQLSTATE and the server's message.

use crate::postgres::UrlFrom;
use std::time::Duration;

use hands_core::CancellationToken;
use schemars::JsonSchema;
use serde::Serialize;
use tokio_postgres::Client;
use tokio_postgres::error::ErrorPosition;

use super::local::Local;
use super::split::line_col;

/// The history table, as the Supabase CLI names it.
pub const TABLE: &str = "supabase_migrations.schema_migrations";
/// The key of the advisory lock every migrate holds ("hands_mg" as a number).
pub const LOCK_KEY: i64 = 0x6861_6e64_735f_6d67;
/// How long a migrate waits for another one to finish.
pub const LOCK_WAIT: Duration = Duration::from_secs(120);

/// One row of the history.
#[derive(Debug, Clone)]
pub struct Remote {
    /// Its version.
    pub version: String,
    /// Its name, when recorded.
    pub name: Option<String>,
    /// Its statements, when recorded.
    pub statements: Option<Vec<Option<String>>>,
}

/// Why a migration file failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Failure {
    /// The file.
    pub file: String,
    /// The line of the error in the file (1-based).
    pub line: usize,
    /// The column of the error in the file (1-based, in characters).
    pub column: usize,
    /// The SQLSTATE, when the server answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sqlstate: Option<String>,
    /// The server's message (or why there was none).
    pub message: String,
    /// The server's detail, hint and context lines.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<String>,
    /// Which statement of the file failed (1-based; 0: the history row or the commit).
    pub statement: usize,
    /// True when the file ran in a transaction, so none of it stayed.
    pub rolled_back: bool,
}

impl Failure {
    /// `file:line:col: SQLSTATE message`, then the details.
    pub fn render(&self) -> String {
        let code = self.sqlstate.as_deref().map(|c| format!("ERROR {c}: ")).unwrap_or_default();
        let mut out =
            format!("{}:{}:{}: {code}{}", self.file, self.line, self.column, self.message);
        for line in &self.details {
            out.push_str("\n  ");
            out.push_str(line);
        }
        out
    }
}

/// What a SQL error on the history means, for the caller's message.
pub fn sql_error(err: &tokio_postgres::Error) -> String {
    match err.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => err.to_string(),
    }
}

/// The history; none when its table does not exist yet.
pub async fn history(client: &Client) -> Result<Vec<Remote>, tokio_postgres::Error> {
    let rows = match client
        .query(&format!("select version, name, statements from {TABLE} order by version"), &[])
        .await
    {
        Ok(rows) => rows,
        // 42P01 undefined_table, 3F000 invalid_schema_name: nothing was ever applied.
        Err(err)
            if err
                .as_db_error()
                .is_some_and(|db| matches!(db.code().code(), "42P01" | "3F000")) =>
        {
            return Ok(Vec::new());
        }
        Err(err) => return Err(err),
    };
    rows.iter()
        .map(|row| {
            Ok(Remote {
                version: row.try_get(0)?,
                name: row.try_get(1)?,
                statements: row.try_get(2)?,
            })
        })
        .collect()
}

/// Create the history table when it is missing: the Supabase CLI's statements, with its 4 s lock
/// timeout, in one implicit transaction.
pub async fn create_history(client: &Client) -> Result<(), tokio_postgres::Error> {
    client
        .batch_execute(&format!(
            "set lock_timeout = '4s';
             create schema if not exists supabase_migrations;
             create table if not exists {TABLE} (version text not null primary key);
             alter table {TABLE} add column if not exists statements text[];
             alter table {TABLE} add column if not exists name text;"
        ))
        .await
}

/// Why the lock was not taken.
pub enum LockError {
    /// Another migrate held it past [`LOCK_WAIT`].
    Busy,
    /// The call was stopped.
    Cancelled,
    /// The database failed.
    Sql(tokio_postgres::Error),
}

/// Take the advisory lock, waiting up to [`LOCK_WAIT`] for another migrate to finish.
pub async fn lock(client: &Client, cancel: &CancellationToken) -> Result<(), LockError> {
    let deadline = tokio::time::Instant::now() + LOCK_WAIT;
    loop {
        let row = client
            .query_one("select pg_try_advisory_lock($1)", &[&LOCK_KEY])
            .await
            .map_err(LockError::Sql)?;
        if row.try_get::<_, bool>(0).map_err(LockError::Sql)? {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(LockError::Busy);
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(200)) => {}
            () = cancel.cancelled() => return Err(LockError::Cancelled),
        }
    }
}

/// Release the advisory lock (it also goes with the session).
pub async fn unlock(client: &Client) {
    let _ = client.query_one("select pg_advisory_unlock($1)", &[&LOCK_KEY]).await;
}

/// The folder compared with the history.
#[derive(Debug, Default)]
pub struct Plan<'a> {
    /// Files not applied yet, in order.
    pub pending: Vec<&'a Local>,
    /// Versions in the history that no file has.
    pub missing: Vec<String>,
    /// Applied files whose statements are not the recorded ones.
    pub edited: Vec<&'a Local>,
    /// Pending files older than the newest applied version.
    pub out_of_order: Vec<&'a Local>,
}

/// Compare `local` with `remote`.
pub fn plan<'a>(local: &'a [Local], remote: &[Remote]) -> Plan<'a> {
    let newest = remote.iter().map(|r| r.version.as_str()).max();
    let mut plan = Plan::default();
    for m in local {
        match remote.iter().find(|r| r.version == m.version) {
            Some(r) => {
                if let Some(recorded) = &r.statements {
                    let same = recorded.len() == m.statements.len()
                        && recorded
                            .iter()
                            .zip(&m.statements)
                            .all(|(a, b)| a.as_deref() == Some(b.text.as_str()));
                    if !same {
                        plan.edited.push(m);
                    }
                }
            }
            None => {
                if newest.is_some_and(|n| m.version.as_str() < n) {
                    plan.out_of_order.push(m);
                }
                plan.pending.push(m);
            }
        }
    }
    plan.missing = remote
        .iter()
        .filter(|r| !local.iter().any(|m| m.version == r.version))
        .map(|r| r.version.clone())
        .collect();
    plan
}

/// How one statement is run, so that a stopped call also stops the server's work.
pub struct Runner<'a> {
    /// The session.
    pub client: &'a Client,
    /// The call's token.
    pub cancel: &'a CancellationToken,
    /// The URL and address rule to send a cancel request with.
    pub url: &'a str,
    /// The `[net]` rule.
    pub net: &'a hands_net::NetConfig,
}

impl Runner<'_> {
    async fn run(&self, sql: &str) -> Result<(), Stop> {
        tokio::select! {
            result = self.client.batch_execute(sql) => result.map_err(Stop::Sql),
            () = self.cancel.cancelled() => {
                let _ = crate::postgres::cancel(&self.client.cancel_token(), self.url, UrlFrom::User, self.net)
                    .await;
                Err(Stop::Cancelled)
            }
        }
    }
}

enum Stop {
    Sql(tokio_postgres::Error),
    Cancelled,
}

/// Apply `m` and record it. On failure a transaction is rolled back.
pub async fn apply(runner: &Runner<'_>, m: &Local) -> Result<(), Failure> {
    let fail = |statement: usize, stop: Stop| failure(m, statement, &stop);
    runner.run("reset all").await.map_err(|s| fail(0, s))?;
    if m.transaction {
        runner.run("begin").await.map_err(|s| fail(0, s))?;
    }
    for (i, statement) in m.statements.iter().enumerate() {
        if let Err(stop) = runner.run(&statement.text).await {
            if m.transaction {
                let _ = runner.client.batch_execute("rollback").await;
            }
            return Err(fail(i + 1, stop));
        }
    }
    let texts: Vec<&str> = m.statements.iter().map(|s| s.text.as_str()).collect();
    let recorded = runner
        .client
        .execute(
            &format!("insert into {TABLE} (version, name, statements) values ($1, $2, $3)"),
            &[&m.version, &m.name, &texts],
        )
        .await;
    if let Err(err) = recorded {
        if m.transaction {
            let _ = runner.client.batch_execute("rollback").await;
        }
        return Err(fail(0, Stop::Sql(err)));
    }
    if m.transaction {
        runner.run("commit").await.map_err(|s| fail(0, s))?;
    }
    Ok(())
}

/// Where in the file statement `statement` (1-based; 0: none) failed, and why.
fn failure(m: &Local, statement: usize, stop: &Stop) -> Failure {
    let at = statement.checked_sub(1).and_then(|i| m.statements.get(i));
    let start = at.map_or(0, |s| s.offset);
    let mut offset = start;
    let mut details = Vec::new();
    let (sqlstate, message) = match stop {
        Stop::Cancelled => (None, "the call was stopped (timeout or abort)".to_owned()),
        Stop::Sql(err) => match err.as_db_error() {
            Some(db) => {
                match (db.position(), at) {
                    (Some(ErrorPosition::Original(p)), Some(s)) => {
                        // The server counts characters from 1 in the statement it was sent.
                        let chars = (*p as usize).saturating_sub(1);
                        let byte =
                            s.text.char_indices().nth(chars).map_or(s.text.len(), |(b, _)| b);
                        offset = s.offset + byte;
                    }
                    (Some(ErrorPosition::Internal { position, query }), _) => {
                        details.push(format!("in the query `{query}` at character {position}"));
                    }
                    _ => {}
                }
                details.extend(db.detail().map(|d| format!("detail: {d}")));
                details.extend(db.hint().map(|h| format!("hint: {h}")));
                details.extend(db.where_().map(|w| format!("context: {w}")));
                (Some(db.code().code().to_owned()), db.message().to_owned())
            }
            None => (None, format!("the database connection failed: {err}")),
        },
    };
    let (line, column) = line_col(&m.text, offset);
    Failure {
        file: m.file.clone(),
        line,
        column,
        sqlstate,
        message,
        details,
        statement,
        rolled_back: m.transaction,
    }
}

/// Tell PostgREST to reload: `NOTIFY pgrst, '<payload>'` for each payload.
pub async fn notify(client: &Client, payloads: &[&str]) -> Result<(), tokio_postgres::Error> {
    for payload in payloads {
        client.execute("select pg_notify('pgrst', $1)", &[payload]).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_key_is_the_one_the_docs_give() {
        assert_eq!(LOCK_KEY, 7_521_414_230_396_857_703);
        assert_eq!(&LOCK_KEY.to_be_bytes(), b"hands_mg");
    }
}
