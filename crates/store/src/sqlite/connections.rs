//! The connections of one [`SqliteStore`](super::SqliteStore): one writer, owned by a dedicated
//! thread (`writer`), and — for a file — a small pool of readers used on tokio's blocking pool.
//!
//! Why a writer thread: SQLite runs one write transaction at a time whatever we do, so a queue in
//! front of one connection loses nothing; it is FIFO-fair (a mutex is not), keeps no blocking-pool
//! thread parked on a lock while 100 tasks append at once, lets those appends share commits, and
//! a call whose caller stopped waiting still runs to its commit or rollback, never half-way. Why
//! readers: in WAL mode a reader works on its own snapshot beside the writer, so replaying a long
//! event log or loading a big transcript does not hold up appends. An in-memory database is one
//! connection (a second would be a second database), so there reads queue on the writer too.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};
use tokio::sync::Semaphore;

use super::writer::Writer;
use super::{Fail, schema};
use crate::{StoreError, StoreResult};

/// Readers in use at once, at most (reads are short; the machine may have two cores).
const READERS: usize = 4;
/// Bytes of WAL kept after a checkpoint.
const WAL_SIZE_LIMIT: i64 = 16 * 1024 * 1024;
/// How long a statement waits for a lock held by another connection or process before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The writer and the readers.
pub(super) struct Connections {
    writer: Writer,
    readers: Option<Readers>,
}

/// Idle reader connections of a file database, and permits bounding how many are in use.
struct Readers {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
    permits: Semaphore,
}

impl Connections {
    /// Open (creating and migrating) the database at `path`, or an in-memory one for `None`.
    pub(super) fn open(path: Option<&Path>) -> StoreResult<Self> {
        let what = path.map_or_else(|| ":memory:".to_owned(), |p| p.display().to_string());
        let conn = open_writer(path, &what).map_err(|fail| fail.into_store(&what))?;
        let writer = Writer::start(conn, &what)?;
        let readers = path.map(|path| Readers {
            path: path.to_owned(),
            idle: Mutex::new(Vec::new()),
            permits: Semaphore::new(READERS),
        });
        Ok(Self { writer, readers })
    }

    /// Run `f` in a write transaction (see [`Writer::call`]). `op` names the call in errors.
    pub(super) async fn write<T: Send + 'static>(
        &self,
        op: &'static str,
        f: impl FnOnce(&Connection) -> Result<T, Fail> + Send + 'static,
    ) -> StoreResult<T> {
        self.writer.call(op, f).await
    }

    /// Run `f` in a read transaction (one snapshot for all its statements) on a reader, or on the
    /// writer thread for an in-memory database.
    pub(super) async fn read<T: Send + 'static>(
        &self,
        op: &'static str,
        f: impl FnOnce(&Connection) -> Result<T, Fail> + Send + 'static,
    ) -> StoreResult<T> {
        let Some(readers) = &self.readers else {
            return self.writer.call(op, f).await;
        };
        // The semaphore is never closed, so acquiring only waits.
        let _permit = readers.permits.acquire().await.map_err(|e| backend(op, e))?;
        let idle = readers.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let mut conn = match idle {
            Some(conn) => conn,
            None => open_reader(&readers.path).map_err(|fail| fail.into_store(op))?,
        };
        let (conn, result) = tokio::task::spawn_blocking(move || {
            let result = in_transaction(&mut conn, f);
            (conn, result)
        })
        .await
        .map_err(|e| backend(op, e))?;
        readers.idle.lock().unwrap_or_else(|p| p.into_inner()).push(conn);
        result.map_err(|fail| fail.into_store(op))
    }
}

fn in_transaction<T>(
    conn: &mut Connection,
    f: impl FnOnce(&Connection) -> Result<T, Fail>,
) -> Result<T, Fail> {
    let tx = conn.transaction()?;
    let value = f(&tx)?;
    tx.commit()?;
    Ok(value)
}

fn open_writer(path: Option<&Path>, what: &str) -> Result<Connection, Fail> {
    let mut conn = match path {
        Some(path) => {
            super::private::prepare(path)?;
            // No SQLITE_OPEN_URI: a path is a path, even one that starts with `file:`.
            let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX;
            Connection::open_with_flags(path, flags)?
        }
        None => Connection::open_in_memory()?,
    };
    configure(&conn)?;
    if path.is_some() {
        // The first statement that reads the file: a non-database fails here.
        let mode: String =
            conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            tracing::warn!(
                "{what}: journal_mode is {mode}, not WAL (a file system without shared memory?): \
                 readers and the writer will take turns"
            );
        }
        // After a checkpoint, cut a WAL that a burst (a 10 MB message) grew past this back down,
        // rather than keep the file at its largest size for as long as hands runs.
        conn.pragma_update(None, "journal_size_limit", WAL_SIZE_LIMIT)?;
    }
    schema::migrate(&mut conn, what)?;
    Ok(conn)
}

fn open_reader(path: &Path) -> Result<Connection, Fail> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    configure(&conn)?;
    conn.pragma_update(None, "query_only", true)?;
    Ok(conn)
}

/// Per-connection settings (none of these is stored in the file, except WAL set in `open_writer`).
fn configure(conn: &Connection) -> Result<(), Fail> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", true)?;
    Ok(())
}

fn backend(op: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(format!("{op}: {e}"))
}
