//! A small pool of PostgreSQL connections: at most `size` open at once (a semaphore), idle ones
//! kept for the next caller, a closed one (the server restarted, the network dropped) dropped on
//! return so that the next checkout opens a fresh one. Each connection keeps the statements it
//! prepared, so a hot query is parsed once per connection, not once per call.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::{Semaphore, SemaphorePermit};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Row, Statement};

use super::tls::Tls;
use crate::StoreError;

/// One open connection and the statements prepared on it.
pub(crate) struct Conn {
    pub(crate) client: Client,
    statements: HashMap<&'static str, Statement>,
}

impl Conn {
    /// `sql` prepared on this connection (once).
    pub(crate) async fn statement(
        &mut self,
        sql: &'static str,
    ) -> Result<Statement, tokio_postgres::Error> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(sql).await?;
        self.statements.insert(sql, statement.clone());
        Ok(statement)
    }

    /// Run `sql` (prepared once) and return its rows.
    pub(crate) async fn query(
        &mut self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, tokio_postgres::Error> {
        let statement = self.statement(sql).await?;
        self.client.query(&statement, params).await
    }
}

/// The pool.
pub(crate) struct Pool {
    config: tokio_postgres::Config,
    tls: Tls,
    idle: Mutex<Vec<Conn>>,
    permits: Semaphore,
    /// How long a checkout may wait for a free connection.
    wait: Duration,
}

/// A connection checked out of the pool; back in it when dropped (unless it closed).
pub(crate) struct Pooled<'a> {
    pool: &'a Pool,
    conn: Option<Conn>,
    _permit: SemaphorePermit<'a>,
}

impl std::ops::Deref for Pooled<'_> {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        // Invariant: `conn` is `Some` until drop.
        self.conn.as_ref().unwrap_or_else(|| unreachable!("a pooled connection is taken on drop"))
    }
}

impl std::ops::DerefMut for Pooled<'_> {
    fn deref_mut(&mut self) -> &mut Conn {
        self.conn.as_mut().unwrap_or_else(|| unreachable!("a pooled connection is taken on drop"))
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take()
            && !conn.client.is_closed()
        {
            lock(&self.pool.idle).push(conn);
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Pool {
    /// A pool of at most `size` connections to `config`; none is opened yet.
    pub(crate) fn new(config: tokio_postgres::Config, tls: Tls, size: usize) -> Self {
        let wait = config.get_connect_timeout().copied().unwrap_or(Duration::from_secs(10));
        Self {
            config,
            tls,
            idle: Mutex::new(Vec::new()),
            permits: Semaphore::new(size.max(1)),
            wait: wait.max(Duration::from_secs(1)) * 3,
        }
    }

    /// A connection: an idle one, else a new one. `op` names the call in errors.
    pub(crate) async fn get(&self, op: &str) -> Result<Pooled<'_>, StoreError> {
        let permit = tokio::time::timeout(self.wait, self.permits.acquire())
            .await
            .map_err(|_| {
                StoreError::Backend(format!(
                    "{op}: no database connection was free within {} s (raise [store] pool_size)",
                    self.wait.as_secs()
                ))
            })?
            .map_err(|_| StoreError::Backend(format!("{op}: the connection pool is closed")))?;
        let idle = loop {
            let Some(conn) = lock(&self.idle).pop() else { break None };
            if !conn.client.is_closed() {
                break Some(conn);
            }
        };
        let conn = match idle {
            Some(conn) => conn,
            None => self.connect().await.map_err(|e| super::error::backend(op, &e))?,
        };
        Ok(Pooled { pool: self, conn: Some(conn), _permit: permit })
    }

    /// A new connection outside the pool (the listener's), its task spawned.
    pub(crate) async fn connect(&self) -> Result<Conn, tokio_postgres::Error> {
        let client = self.tls.connect(&self.config).await?;
        Ok(Conn { client, statements: HashMap::new() })
    }

    /// The connection settings (the listener opens its own connection with them).
    pub(crate) fn config(&self) -> &tokio_postgres::Config {
        &self.config
    }

    /// How to wrap connections in TLS.
    pub(crate) fn tls(&self) -> &Tls {
        &self.tls
    }
}
