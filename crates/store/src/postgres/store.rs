//! [`PostgresStore`] itself: its options, its pool and the schema check of its first call, and
//! the [`Store`] methods, each over one of the queries of `ops`.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::OnceCell;

use super::pool::{Pool, Pooled};
use super::schema;
use super::tls::Tls;
use crate::{
    BoxFuture, EventRecord, MessageRecord, ProjectRecord, SessionRecord, Store, StoreError,
    StoreResult, ToolCallRecord, TurnRecord,
};

/// How to reach the database.
#[derive(Debug, Clone)]
pub struct PostgresOptions {
    /// `postgresql://user:password@host:port/db?sslmode=…` (or a `key=value` string).
    pub url: String,
    /// Connections open at once, at most.
    pub pool_size: usize,
    /// Extra CA certificates (PEM) for `sslmode=verify-ca`/`verify-full`.
    pub ca_file: Option<PathBuf>,
    /// How long connecting may take.
    pub connect_timeout: Duration,
    /// Apply missing migrations at first use (else refuse a database that is not current).
    pub migrate: bool,
    /// Who this is, in `application_name` and the migrations' `applied_by`.
    pub node: String,
}

/// The session store in PostgreSQL.
pub struct PostgresStore {
    pool: Pool,
    node: String,
    migrate: bool,
    /// Set once the schema was found (or made) current.
    ready: OnceCell<()>,
}

impl PostgresStore {
    /// A store over the database `options.url` names. Nothing is connected yet: the first call
    /// connects (and migrates, with `options.migrate`). A URL that does not parse is a `Backend`
    /// error that does not repeat it.
    pub fn new(options: &PostgresOptions) -> StoreResult<Self> {
        let (config, verify) = parse(&options.url)?;
        let mut config = config;
        config.connect_timeout(options.connect_timeout);
        config.keepalives_idle(Duration::from_secs(30));
        if config.get_application_name().is_none() {
            config.application_name(format!("hands {}", options.node));
        }
        let tls = Tls::for_config(&config, verify, options.ca_file.as_deref())?;
        Ok(Self {
            pool: Pool::new(config, tls, options.pool_size),
            node: options.node.clone(),
            migrate: options.migrate,
            ready: OnceCell::new(),
        })
    }

    /// Apply the missing migrations (under the advisory lock) and return what was done.
    pub async fn migrate(&self) -> StoreResult<schema::Migrated> {
        let mut conn = self.pool.get("migrating the session store").await?;
        let migrated = schema::migrate(&mut conn.client, &self.node).await?;
        let _ = self.ready.set(());
        Ok(migrated)
    }

    /// The schema version of the database (0: empty), and the one this build knows.
    pub async fn schema_version(&self) -> StoreResult<(i32, i32)> {
        let conn = self.pool.get("reading the schema version").await?;
        Ok((schema::version(&conn.client).await?, schema::latest()))
    }

    /// A connection, once the schema is current.
    pub(crate) async fn conn(&self, op: &str) -> StoreResult<Pooled<'_>> {
        self.ready
            .get_or_try_init(|| async {
                if self.migrate {
                    self.migrate().await.map(drop)
                } else {
                    match self.schema_version().await? {
                        (have, want) if have == want => Ok(()),
                        (have, want) => Err(StoreError::Backend(format!(
                            "the session database is at schema version {have}, this hands \
                             needs {want}: run `hands store migrate` (or set [store] migrate = \
                             true)"
                        ))),
                    }
                }
            })
            .await?;
        self.pool.get(op).await
    }

    /// The pool (the listener and the leases use it).
    pub(crate) fn pool(&self) -> &Pool {
        &self.pool
    }
}

/// The driver's configuration from a URL, and whether it asked for a verified certificate
/// (`verify-ca`/`verify-full`, which the driver itself does not know: they become `require`
/// with verification on).
fn parse(url: &str) -> StoreResult<(tokio_postgres::Config, bool)> {
    let mut verify = false;
    let mut text = url.trim().to_owned();
    for mode in ["sslmode=verify-full", "sslmode=verify-ca"] {
        if text.contains(mode) {
            verify = true;
            text = text.replace(mode, "sslmode=require");
        }
    }
    let config = tokio_postgres::Config::from_str(&text).map_err(|e| {
        StoreError::Backend(format!(
            "[store] url is not a PostgreSQL connection URL ({e}); it looks like \
             postgresql://USER:PASSWORD@HOST:5432/DATABASE?sslmode=verify-full"
        ))
    })?;
    if config.get_hosts().is_empty() {
        return Err(StoreError::Backend("[store] url names no host".into()));
    }
    if config.get_user().is_none() {
        return Err(StoreError::Backend("[store] url names no user".into()));
    }
    Ok((config, verify))
}

impl Store for PostgresStore {
    fn create_session(&self, session: SessionRecord) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(self.op_create_session(session))
    }

    fn get_session<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<SessionRecord>> {
        Box::pin(self.op_get_session(id))
    }

    fn list_sessions(&self) -> BoxFuture<'_, StoreResult<Vec<SessionRecord>>> {
        Box::pin(self.op_list_sessions())
    }

    fn update_session<'a>(
        &'a self,
        id: &'a str,
        mode: Option<&'a str>,
        title: Option<&'a str>,
    ) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(self.op_update_session(id, mode, title, None))
    }

    fn delete_session<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(self.op_delete_session(id))
    }

    fn list_projects(&self) -> BoxFuture<'_, StoreResult<Vec<ProjectRecord>>> {
        Box::pin(self.op_list_projects())
    }

    fn start_turn(&self, turn: TurnRecord) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(self.op_start_turn(turn, None))
    }

    fn end_turn<'a>(
        &'a self,
        id: &'a str,
        status: &'a str,
        ended_at_ms: i64,
    ) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(self.op_end_turn(id, status, ended_at_ms, None))
    }

    fn turns<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, StoreResult<Vec<TurnRecord>>> {
        Box::pin(self.op_turns(session_id))
    }

    fn abandon_running_turns(
        &self,
        ended_at_ms: i64,
    ) -> BoxFuture<'_, StoreResult<Vec<TurnRecord>>> {
        Box::pin(self.op_abandon_running_turns(ended_at_ms))
    }

    fn append_message<'a>(
        &'a self,
        session_id: &'a str,
        turn_id: Option<&'a str>,
        message: Value,
    ) -> BoxFuture<'a, StoreResult<u64>> {
        Box::pin(async move { self.op_append_message(session_id, turn_id, &message, None).await })
    }

    fn messages<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<MessageRecord>>> {
        Box::pin(self.op_messages(session_id))
    }

    fn truncate_messages<'a>(
        &'a self,
        session_id: &'a str,
        after_seq: u64,
    ) -> BoxFuture<'a, StoreResult<u64>> {
        Box::pin(self.op_truncate_messages(session_id, after_seq, None))
    }

    fn start_tool_call(&self, call: ToolCallRecord) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(self.op_start_tool_call(call, None))
    }

    fn finish_tool_call<'a>(
        &'a self,
        id: &'a str,
        result: Value,
        is_error: bool,
        duration_ms: u64,
    ) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(
            async move { self.op_finish_tool_call(id, &result, is_error, duration_ms, None).await },
        )
    }

    fn tool_calls<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<ToolCallRecord>>> {
        Box::pin(self.op_tool_calls(session_id))
    }

    fn set_todos<'a>(
        &'a self,
        session_id: &'a str,
        todos: Value,
    ) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move { self.op_set_todos(session_id, &todos, None).await })
    }

    fn todos<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, StoreResult<Value>> {
        Box::pin(self.op_todos(session_id))
    }

    fn append_event<'a>(
        &'a self,
        session_id: &'a str,
        at_ms: i64,
        data: Value,
    ) -> BoxFuture<'a, StoreResult<u64>> {
        Box::pin(async move { self.op_append_event(session_id, at_ms, &data, None).await })
    }

    fn events_after<'a>(
        &'a self,
        session_id: &'a str,
        after: u64,
        limit: usize,
    ) -> BoxFuture<'a, StoreResult<Vec<EventRecord>>> {
        Box::pin(self.op_events_after(session_id, after, limit))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_parsed_without_being_echoed() {
        let (config, verify) =
            parse("postgresql://hands:s3cret-pw@db.internal:6432/hands?sslmode=verify-full")
                .unwrap();
        assert!(verify);
        assert_eq!(config.get_ssl_mode(), tokio_postgres::config::SslMode::Require);
        assert_eq!(config.get_ports(), [6432]);
        let (_, verify) = parse("postgres://u:p@127.0.0.1/db?sslmode=disable").unwrap();
        assert!(!verify);
        for bad in ["postgresql://u:s3cret-pw@h/db?sslmode=sometimes", "not a url s3cret-pw"] {
            let err = parse(bad).unwrap_err().to_string();
            assert!(!err.contains("s3cret-pw"), "{err}");
            assert!(err.contains("[store] url"), "{err}");
        }
        let err = parse("postgresql:///db").unwrap_err().to_string();
        assert!(err.contains("no host") || err.contains("no user"), "{err}");
    }
}
