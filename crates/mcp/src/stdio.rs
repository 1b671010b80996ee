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
    // Last saved, first put back: when stdin and stdout are one socket, the second save holds
    // the flags the first side's change made.
    for flags in streams.restore.into_iter().rev() {
        drop(flags);
    }
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
    /// Each of stdin and stdout is, on its own, driven by the runtime's reactor when it is a pipe
    /// or a stream socket (a client that spawned hands gives it one or the other: Rust's, Go's and
    /// Python's process APIs make pipes, Node's makes socket pairs — Claude Code, the Inspector);
    /// stdout only when stderr is not the same file. Otherwise tokio's stream in blocking mode.
    /// tokio's stdin/stdout go through the blocking thread pool, a thread hand-off per message
    /// each way; the reactor saves both on every round trip.
    ///
    /// O_NONBLOCK belongs to the open file description, which the client (or a shell) shares: it
    /// is set only on a side that is driven by the reactor, cleared on a side that is read or
    /// written by blocking calls (a blocking read of a non-blocking stdin fails with EAGAIN, which
    /// ended the connection), and both are put back as they were when the connection ends.
    fn open() -> Self {
        let mut restore = Vec::new();
        let (stdin, stdout) = (std::io::stdin(), std::io::stdout());
        let shared_with_stderr = same_file(stdout.as_fd(), std::io::stderr().as_fd());
        // One socket for both (`<&3 >&3`) shares its O_NONBLOCK: both sides by the reactor, or
        // neither.
        let stdin_reactor = !(shared_with_stderr && same_file(stdin.as_fd(), stdout.as_fd()));
        let reactor = match stdin_reactor {
            true => reactor_stream(stdin.as_fd(), Side::Read, &mut restore),
            false => None,
        };
        let input: Input = match reactor {
            Some(Reactor::Pipe(file)) => match tokio::net::unix::pipe::Receiver::from_file(file) {
                Ok(receiver) => Box::new(receiver),
                Err(_) => blocking_stdin(&mut restore),
            },
            Some(Reactor::Socket(socket)) => match tokio::net::UnixStream::from_std(socket) {
                Ok(stream) => Box::new(stream),
                Err(_) => blocking_stdin(&mut restore),
            },
            None => blocking_stdin(&mut restore),
        };
        let reactor = match shared_with_stderr {
            true => None,
            false => reactor_stream(stdout.as_fd(), Side::Write, &mut restore),
        };
        let output: Output = match reactor {
            Some(Reactor::Pipe(file)) => match tokio::net::unix::pipe::Sender::from_file(file) {
                Ok(sender) => Box::new(sender),
                Err(_) => blocking_stdout(&mut restore),
            },
            Some(Reactor::Socket(socket)) => match tokio::net::UnixStream::from_std(socket) {
                Ok(stream) => Box::new(stream),
                Err(_) => blocking_stdout(&mut restore),
            },
            None => blocking_stdout(&mut restore),
        };
        Self { input, output, restore }
    }
}

fn blocking_stdin(restore: &mut Vec<RestoreFlags>) -> Input {
    blocking(std::io::stdin().as_fd(), restore);
    Box::new(tokio::io::stdin())
}

fn blocking_stdout(restore: &mut Vec<RestoreFlags>) -> Output {
    blocking(std::io::stdout().as_fd(), restore);
    Box::new(tokio::io::stdout())
}

/// A standard stream the reactor can drive.
enum Reactor {
    /// A pipe (the reactor sets O_NONBLOCK).
    Pipe(File),
    /// A stream socket, already non-blocking.
    Socket(std::os::unix::net::UnixStream),
}

#[derive(Clone, Copy)]
enum Side {
    Read,
    Write,
}

/// A copy of `fd` for the reactor when it is a pipe open for `side` or a stream socket, its
/// flags saved in `restore` first (the reactor needs O_NONBLOCK).
fn reactor_stream(
    fd: BorrowedFd<'_>,
    side: Side,
    restore: &mut Vec<RestoreFlags>,
) -> Option<Reactor> {
    let file = File::from(fd.try_clone_to_owned().ok()?);
    let kind = file.metadata().ok()?.file_type();
    let flags = fcntl_getfl(&file).ok()?;
    if kind.is_socket() {
        // Any stream socket reads and writes as a Unix one does (a datagram socket would cut
        // messages at its packet boundaries).
        let stream =
            rustix::net::sockopt::socket_type(&file).ok()? == rustix::net::SocketType::STREAM;
        if !stream {
            return None;
        }
        restore.push(RestoreFlags { fd: file.try_clone().ok()?.into(), flags });
        let socket = std::os::unix::net::UnixStream::from(OwnedFd::from(file));
        socket.set_nonblocking(true).ok()?;
        return Some(Reactor::Socket(socket));
    }
    if !kind.is_fifo() {
        return None;
    }
    let mode = flags & OFlags::RWMODE;
    let usable = match side {
        Side::Read => mode == OFlags::RDONLY || mode == OFlags::RDWR,
        Side::Write => mode == OFlags::WRONLY || mode == OFlags::RDWR,
    };
    if !usable {
        return None;
    }
    restore.push(RestoreFlags { fd: file.try_clone().ok()?.into(), flags });
    Some(Reactor::Pipe(file))
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
