//! `hands mcp`: one MCP connection over stdin/stdout. The connection ends on stdin EOF, on
//! SIGINT or SIGTERM; either way the session is closed (every process it started is stopped)
//! before this returns. Nothing but protocol messages goes to stdout.

use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::FileTypeExt;
use std::sync::Arc;

use rmcp::service::serve_server_with_ct;
use rustix::fs::{OFlags, fcntl_getfl, fcntl_setfl, fstat};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;

use crate::server::ServerFactory;

/// Why the stdio server stopped early.
#[derive(Debug, thiserror::Error)]
pub enum StdioError {
    /// The handshake failed (the client closed stdin first, or sent no `initialize`).
    #[error("MCP handshake failed: {0}")]
    Handshake(String),
}

/// Serve one connection on stdin/stdout until it ends, then close its session.
pub async fn serve_stdio(factory: Arc<ServerFactory>) -> Result<(), StdioError> {
    let server = factory.connection();
    let session = server.session().clone();
    let ct = CancellationToken::new();
    let stop = ct.clone();
    let signals = tokio::spawn(async move {
        shutdown_signal().await;
        tracing::info!("signal received: stopping the MCP server");
        stop.cancel();
    });
    let streams = Streams::open();
    let served = serve_server_with_ct(server, (streams.input, streams.output), ct.clone()).await;
    let result = match served {
        Ok(running) => {
            let quit = running.waiting().await;
            tracing::debug!(?quit, "MCP connection ended");
            Ok(())
        }
        Err(err) if ct.is_cancelled() => {
            tracing::debug!(%err, "stopped before the handshake");
            Ok(())
        }
        Err(err) => Err(StdioError::Handshake(err.to_string())),
    };
    signals.abort();
    session.close().await;
    drop(streams.restore);
    result
}

type Input = Box<dyn AsyncRead + Send + Unpin>;
type Output = Box<dyn AsyncWrite + Send + Unpin>;

/// stdin and stdout as the connection reads and writes them, and the file status flags to put
/// back when it ends.
struct Streams {
    input: Input,
    output: Output,
    restore: Vec<RestoreFlags>,
}

impl Streams {
    /// Each of stdin and stdout is, on its own, a non-blocking pipe driven by the runtime's reactor
    /// when it is a pipe (as under a client that spawned hands; stdout only when stderr is not the
    /// same pipe), else tokio's stream in blocking mode. tokio's stdin/stdout go through the
    /// blocking thread pool, a thread hand-off per message each way; the pipes save both on every
    /// round trip.
    ///
    /// O_NONBLOCK belongs to the open file description, which the client (or a shell) shares: it
    /// is set only on a side that is driven by the reactor, cleared on a side that is read or
    /// written by blocking calls (a blocking read of a non-blocking stdin fails with EAGAIN, which
    /// ended the connection), and both are put back as they were when the connection ends.
    fn open() -> Self {
        let mut restore = Vec::new();
        let input: Input = match reactor_pipe(std::io::stdin().as_fd(), Side::Read, &mut restore)
            .map(tokio::net::unix::pipe::Receiver::from_file)
        {
            Some(Ok(receiver)) => Box::new(receiver),
            _ => {
                blocking(std::io::stdin().as_fd(), &mut restore);
                Box::new(tokio::io::stdin())
            }
        };
        let shared_with_stderr = same_file(std::io::stdout().as_fd(), std::io::stderr().as_fd());
        let pipe = match shared_with_stderr {
            true => None,
            false => reactor_pipe(std::io::stdout().as_fd(), Side::Write, &mut restore),
        };
        let output: Output = match pipe.map(tokio::net::unix::pipe::Sender::from_file) {
            Some(Ok(sender)) => Box::new(sender),
            _ => {
                blocking(std::io::stdout().as_fd(), &mut restore);
                Box::new(tokio::io::stdout())
            }
        };
        Self { input, output, restore }
    }
}

#[derive(Clone, Copy)]
enum Side {
    Read,
    Write,
}

/// A copy of `fd` for the reactor when it is a pipe open for `side`, its flags saved in `restore`
/// first (the reactor sets O_NONBLOCK).
fn reactor_pipe(fd: BorrowedFd<'_>, side: Side, restore: &mut Vec<RestoreFlags>) -> Option<File> {
    let file = File::from(fd.try_clone_to_owned().ok()?);
    if !file.metadata().ok()?.file_type().is_fifo() {
        return None;
    }
    let flags = fcntl_getfl(&file).ok()?;
    let mode = flags & OFlags::RWMODE;
    let usable = match side {
        Side::Read => mode == OFlags::RDONLY || mode == OFlags::RDWR,
        Side::Write => mode == OFlags::WRONLY || mode == OFlags::RDWR,
    };
    if !usable {
        return None;
    }
    restore.push(RestoreFlags { fd: file.try_clone().ok()?.into(), flags });
    Some(file)
}

/// Make `fd` blocking for tokio's stdio (saving its flags in `restore` when that changes them).
fn blocking(fd: BorrowedFd<'_>, restore: &mut Vec<RestoreFlags>) {
    let Ok(flags) = fcntl_getfl(fd) else { return };
    if !flags.contains(OFlags::NONBLOCK) {
        return;
    }
    let Ok(copy) = fd.try_clone_to_owned() else { return };
    match fcntl_setfl(fd, flags - OFlags::NONBLOCK) {
        Ok(()) => restore.push(RestoreFlags { fd: copy, flags }),
        Err(err) => tracing::debug!(%err, "could not make a standard stream blocking"),
    }
}

/// Whether two descriptors are the same file (e.g. `2>&1` into one pipe).
fn same_file(a: BorrowedFd<'_>, b: BorrowedFd<'_>) -> bool {
    match (fstat(a), fstat(b)) {
        (Ok(a), Ok(b)) => a.st_dev == b.st_dev && a.st_ino == b.st_ino,
        _ => false,
    }
}

/// Puts a standard stream's file status flags back as hands found them, when dropped.
struct RestoreFlags {
    fd: OwnedFd,
    flags: OFlags,
}

impl Drop for RestoreFlags {
    fn drop(&mut self) {
        if let Err(err) = fcntl_setfl(&self.fd, self.flags) {
            tracing::debug!(%err, "could not restore a standard stream's flags");
        }
    }
}

/// SIGINT or SIGTERM (never fires where the handlers cannot be installed).
pub async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) =
        (signal(SignalKind::interrupt()), signal(SignalKind::terminate()))
    else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = int.recv() => {}
        _ = term.recv() => {}
    }
}
