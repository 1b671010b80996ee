//! The writer thread: it owns the one connection that writes, takes calls from a channel in
//! arrival order, and runs the calls that queued up meanwhile in one transaction — each under its
//! own savepoint, so a call that fails is undone alone — then answers each caller once the
//! commit's outcome is known (group commit). One caller alone gets a transaction of its own; a
//! hundred concurrent appends share a few commits instead of queueing for a hundred.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc;
use std::thread::JoinHandle;

use rusqlite::Connection;
use tokio::sync::oneshot;

use super::Fail;
use crate::{StoreError, StoreResult};

/// Calls per transaction, at most: bounds how long the first of them waits for its answer.
const BATCH: usize = 64;

/// The writer thread's handle.
pub(super) struct Writer {
    /// `None` only while dropping (closing the channel is how the thread is told to stop).
    calls: Option<mpsc::Sender<Box<dyn Job>>>,
    thread: Option<JoinHandle<()>>,
}

impl Writer {
    /// Start the thread on `conn`; `what` names the database in errors.
    pub(super) fn start(conn: Connection, what: &str) -> StoreResult<Self> {
        let (calls, queue) = mpsc::channel::<Box<dyn Job>>();
        let thread = std::thread::Builder::new()
            .name("hands-store-writer".into())
            .spawn(move || run(conn, queue))
            .map_err(|e| StoreError::Backend(format!("{what}: starting the writer thread: {e}")))?;
        Ok(Self { calls: Some(calls), thread: Some(thread) })
    }

    /// Run `f` in a write transaction: kept when it returns `Ok` and the transaction commits,
    /// undone when it returns `Err` or panics. `op` names the call in errors. Once sent, the call
    /// runs to its end even if the caller stops waiting.
    pub(super) async fn call<T, F>(&self, op: &'static str, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, Fail> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let stopped = || StoreError::Backend(format!("{op}: the writer thread has stopped"));
        let call = Box::new(Call { op, f: Some(f), result: None, reply });
        self.calls.as_ref().ok_or_else(stopped)?.send(call).map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }
}

impl Drop for Writer {
    /// Let the thread finish what is queued and close the connection (checkpointing the WAL), so
    /// that the file is tidy and free once the store is gone.
    fn drop(&mut self) {
        drop(self.calls.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A call as the thread sees it, whatever it returns.
trait Job: Send {
    /// Run inside the batch's transaction; `true` when its changes are to be kept.
    fn run(&mut self, conn: &Connection) -> bool;
    /// Answer the caller; `batch_error` when the transaction did not commit.
    fn answer(self: Box<Self>, batch_error: Option<&str>);
}

struct Call<T, F> {
    op: &'static str,
    /// Taken when run.
    f: Option<F>,
    /// Set when run (and it did not panic).
    result: Option<Result<T, Fail>>,
    reply: oneshot::Sender<StoreResult<T>>,
}

impl<T, F> Job for Call<T, F>
where
    T: Send,
    F: FnOnce(&Connection) -> Result<T, Fail> + Send,
{
    fn run(&mut self, conn: &Connection) -> bool {
        let Some(f) = self.f.take() else { return false };
        let result = f(conn);
        let keep = result.is_ok();
        self.result = Some(result);
        keep
    }

    fn answer(self: Box<Self>, batch_error: Option<&str>) {
        let op = self.op;
        let result = match (self.result, batch_error) {
            // Its own failure says more than the batch's.
            (Some(Err(fail)), _) => Err(fail.into_store(op)),
            (Some(Ok(value)), None) => Ok(value),
            (_, Some(e)) => Err(StoreError::Backend(format!("{op}: {e}"))),
            (None, None) => Err(StoreError::Backend(format!("{op}: panicked; undone"))),
        };
        // The caller may have stopped waiting; the work is done (or undone) all the same.
        let _ = self.reply.send(result);
    }
}

fn run(conn: Connection, queue: mpsc::Receiver<Box<dyn Job>>) {
    while let Ok(first) = queue.recv() {
        let mut batch = vec![first];
        batch.extend(queue.try_iter().take(BATCH - 1));
        let error = run_batch(&conn, &mut batch).err();
        for job in batch {
            job.answer(error.as_deref());
        }
    }
}

/// One transaction for the whole batch; `Err` (and nothing kept) when it could not commit.
fn run_batch(conn: &Connection, batch: &mut [Box<dyn Job>]) -> Result<(), String> {
    exec(conn, "BEGIN IMMEDIATE")?;
    let ran = batch.iter_mut().try_for_each(|job| under_savepoint(conn, job.as_mut()));
    match ran.and_then(|()| exec(conn, "COMMIT")) {
        Ok(()) => Ok(()),
        Err(e) => {
            // SQLite may have rolled back already (a full disk, an I/O error): then this fails.
            if !conn.is_autocommit() {
                let _ = exec(conn, "ROLLBACK");
            }
            Err(e)
        }
    }
}

fn under_savepoint(conn: &Connection, job: &mut dyn Job) -> Result<(), String> {
    exec(conn, "SAVEPOINT call")?;
    // A panic is a failure of that call only: its changes are undone like an `Err`'s.
    let keep = catch_unwind(AssertUnwindSafe(|| job.run(conn))).unwrap_or(false);
    if conn.is_autocommit() {
        return Err("SQLite rolled the transaction back".into());
    }
    if !keep {
        exec(conn, "ROLLBACK TO call")?;
    }
    exec(conn, "RELEASE call")
}

fn exec(conn: &Connection, sql: &str) -> Result<(), String> {
    conn.prepare_cached(sql)
        .and_then(|mut statement| statement.execute([]))
        .map(drop)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writer() -> Writer {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (n INTEGER NOT NULL UNIQUE)").unwrap();
        Writer::start(conn, "test").unwrap()
    }

    fn insert(n: i64) -> impl FnOnce(&Connection) -> Result<(), Fail> + Send + 'static {
        move |conn| {
            conn.execute("INSERT INTO t (n) VALUES (?1)", [n])?;
            Ok(())
        }
    }

    async fn all(writer: &Writer) -> Vec<i64> {
        writer
            .call("all", |conn| {
                let mut statement = conn.prepare("SELECT n FROM t ORDER BY n")?;
                let rows = statement.query_map([], |row| row.get(0))?;
                Ok(rows.collect::<Result<Vec<i64>, _>>()?)
            })
            .await
            .unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_failing_or_panicking_call_is_undone_alone_in_a_shared_batch() {
        let writer = std::sync::Arc::new(writer());
        // Calls that fail half-way (the second insert breaks UNIQUE) and calls that panic after
        // writing, interleaved with good ones, all at once so that they share transactions.
        let tasks: Vec<_> = (0..300i64)
            .map(|i| {
                let writer = writer.clone();
                tokio::spawn(async move {
                    match i % 3 {
                        0 => writer.call("good", insert(i)).await,
                        1 => {
                            writer
                                .call("fails", move |conn| {
                                    insert(10_000 + i)(conn)?;
                                    insert(10_000 + i)(conn)
                                })
                                .await
                        }
                        _ => {
                            writer
                                .call("panics", move |conn| {
                                    insert(20_000 + i)(conn)?;
                                    panic!("call {i} panics")
                                })
                                .await
                        }
                    }
                })
            })
            .collect();
        for (i, task) in tasks.into_iter().enumerate() {
            let result = task.await.unwrap();
            match i % 3 {
                0 => assert!(result.is_ok(), "{i}: {result:?}"),
                1 => assert!(result.unwrap_err().to_string().contains("UNIQUE"), "{i}"),
                _ => assert!(result.unwrap_err().to_string().contains("panicked"), "{i}"),
            }
        }
        assert_eq!(all(&writer).await, (0..300).step_by(3).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn a_call_whose_caller_stopped_waiting_still_runs() {
        let writer = writer();
        {
            // Poll once, so that the call is sent, then drop it.
            let mut call = std::pin::pin!(writer.call("dropped", insert(7)));
            std::future::poll_fn(|cx| {
                let _ = call.as_mut().poll(cx);
                std::task::Poll::Ready(())
            })
            .await;
        }
        assert_eq!(all(&writer).await, [7]);
    }
}
