//! The parser the tools use: each document goes to a fresh child process ([`crate::child`]) in its
//! own process group, with an empty environment (no secret reaches it), and comes back as text.
//! The parent bounds what it reads back, and on the wall-clock limit, a cancellation or its own
//! drop kills the whole group. A child that died of its memory limit is told apart from one
//! killed for time.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Stdio;

use hands_core::document::{DocumentError, DocumentParser, DocumentRequest, ParsedDocument};
use hands_core::{BoxFuture, CancellationToken};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::child::{Reply, Request};
use crate::limits::{Limits, human};

/// How to start the child: a program and the arguments before the request (for the `hands`
/// binary, itself and its hidden subcommand).
#[derive(Debug, Clone)]
pub struct ChildCommand {
    /// The program.
    pub program: PathBuf,
    /// Its first arguments.
    pub args: Vec<OsString>,
    /// Variables to set in its otherwise empty environment (besides `PATH` and `LC_ALL`).
    pub env: Vec<(OsString, OsString)>,
}

/// A [`DocumentParser`] that parses in a child process under [`Limits`].
#[derive(Debug, Clone)]
pub struct ChildParser {
    command: ChildCommand,
    limits: Limits,
}

impl ChildParser {
    /// Parse with `command` under `limits`.
    pub fn new(command: ChildCommand, limits: Limits) -> Self {
        Self { command, limits }
    }

    /// The limits it parses under.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    async fn run(
        &self,
        bytes: Vec<u8>,
        name: &str,
        request: DocumentRequest,
        cancel: CancellationToken,
    ) -> Result<ParsedDocument, DocumentError> {
        let limits = &self.limits;
        if bytes.len() as u64 > limits.max_file_bytes {
            return Err(DocumentError::Limit(format!(
                "the document is {}, over the {} parse_document reads",
                human(bytes.len() as u64),
                human(limits.max_file_bytes)
            )));
        }
        let request = Request {
            name: name.to_owned(),
            pages: request.pages,
            sheet: request.sheet,
            max_file_bytes: limits.max_file_bytes,
            max_entries: limits.max_entries,
            max_inflated_bytes: limits.max_inflated_bytes,
            max_memory_bytes: limits.max_memory_bytes,
            max_rows: limits.max_rows,
            max_text_bytes: limits.max_text_bytes,
            timeout_secs: limits.timeout.as_secs(),
        };
        let request = serde_json::to_string(&request).map_err(|err| {
            DocumentError::Internal(format!("the request did not serialize: {err}"))
        })?;
        let mut command = tokio::process::Command::new(&self.command.program);
        command
            .args(&self.command.args)
            .arg(request)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()))
            .env("LC_ALL", "C.UTF-8")
            .envs(self.command.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(|err| {
            DocumentError::Internal(format!(
                "the document parser could not start ({}): {err}",
                self.command.program.display()
            ))
        })?;
        let group = child.id().and_then(|id| rustix::process::Pid::from_raw(id as i32));
        let kill = move || {
            if let Some(group) = group {
                let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
            }
        };
        let (mut stdin, mut stdout, mut stderr) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take());
        let max_out = (limits.max_text_bytes as u64) * 2 + (1 << 20);
        let work = async {
            let write = async {
                if let Some(mut stdin) = stdin.take() {
                    // A child that stops reading (it failed early) closes the pipe: not an error.
                    let _ = stdin.write_all(&bytes).await;
                }
            };
            let mut out = Vec::new();
            let mut err = Vec::new();
            let read = async {
                if let Some(stdout) = stdout.as_mut() {
                    let _ = stdout.take(max_out).read_to_end(&mut out).await;
                }
            };
            let read_err = async {
                if let Some(stderr) = stderr.as_mut() {
                    let _ = stderr.take(64 * 1024).read_to_end(&mut err).await;
                }
            };
            tokio::join!(write, read, read_err);
            let status = child.wait().await;
            (status, out, err)
        };
        let outcome = tokio::select! {
            outcome = tokio::time::timeout(limits.timeout, work) => outcome,
            () = cancel.cancelled() => {
                kill();
                return Err(DocumentError::Cancelled);
            }
        };
        let Ok((status, out, err)) = outcome else {
            kill();
            return Err(DocumentError::Limit(format!(
                "parsing the document took longer than {} s and was stopped: it may be built to \
                 stall parsers; if it is a real document, ask for a smaller one or part of it",
                limits.timeout.as_secs()
            )));
        };
        kill();
        let status =
            status.map_err(|e| DocumentError::Internal(format!("the parser was lost: {e}")))?;
        if let Ok(reply) = serde_json::from_slice::<Reply>(&out) {
            return reply.into_result();
        }
        let stderr = String::from_utf8_lossy(&err);
        if stderr.contains("memory allocation") || status.signal() == Some(6) {
            return Err(DocumentError::Limit(format!(
                "parsing the document needed more than {} of memory and was stopped: it may be \
                 built to exhaust parsers; if it is a real document, ask for a smaller one",
                human(limits.max_memory_bytes)
            )));
        }
        if matches!(status.signal(), Some(9 | 24)) {
            return Err(DocumentError::Limit(
                "parsing the document used up its CPU time and was stopped".into(),
            ));
        }
        if out.len() as u64 >= max_out {
            return Err(DocumentError::Limit("the document's text is too long to return".into()));
        }
        Err(DocumentError::Internal(format!(
            "the document parser failed ({status}){}",
            stderr.lines().next().map(|l| format!(": {l}")).unwrap_or_default()
        )))
    }
}

impl DocumentParser for ChildParser {
    fn parse<'a>(
        &'a self,
        bytes: Vec<u8>,
        name: &'a str,
        request: DocumentRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<ParsedDocument, DocumentError>> {
        Box::pin(self.run(bytes, name, request, cancel))
    }
}
