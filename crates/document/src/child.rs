//! The child process that parses: the document's bytes on stdin, the request as its last
//! argument (JSON), the result as one JSON object on stdout. Before it reads anything it limits
//! itself: address space (RLIMIT_AS), CPU time, no files written, no core dumps, and death with
//! its parent. A file that needs more memory makes an allocation fail, which aborts the child and
//! nothing else; the parent ([`crate::ChildParser`]) tells the model what happened.

use std::io::{Read, Write};
use std::process::ExitCode;

use hands_core::document::{DocumentError, ParsedDocument};
use rustix::process::{Resource, Rlimit, Signal, setrlimit};
use serde::{Deserialize, Serialize};

use crate::limits::Limits;
use crate::pages::Pages;
use crate::parse::{Selection, parse};

/// The request the parent passes as the child's last argument.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Request {
    pub name: String,
    pub pages: Option<String>,
    pub sheet: Option<String>,
    pub max_file_bytes: u64,
    pub max_entries: usize,
    pub max_inflated_bytes: u64,
    pub max_memory_bytes: u64,
    pub max_rows: usize,
    pub max_text_bytes: usize,
    pub timeout_secs: u64,
}

impl Request {
    pub(crate) fn limits(&self) -> Limits {
        Limits {
            max_file_bytes: self.max_file_bytes,
            max_entries: self.max_entries,
            max_inflated_bytes: self.max_inflated_bytes,
            max_memory_bytes: self.max_memory_bytes,
            timeout: std::time::Duration::from_secs(self.timeout_secs),
            max_rows: self.max_rows,
            max_text_bytes: self.max_text_bytes,
        }
    }
}

/// What the child prints.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Reply {
    Ok { text: String, format: String, parts: Option<u32>, notes: Vec<String> },
    Error { kind: ErrorKind, message: String },
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ErrorKind {
    Unsupported,
    Invalid,
    Limit,
    Internal,
}

impl Reply {
    pub(crate) fn of(result: Result<ParsedDocument, DocumentError>) -> Self {
        match result {
            Ok(doc) => {
                Self::Ok { text: doc.text, format: doc.format, parts: doc.parts, notes: doc.notes }
            }
            Err(err) => {
                let kind = match &err {
                    DocumentError::Unsupported(_) => ErrorKind::Unsupported,
                    DocumentError::Invalid(_) => ErrorKind::Invalid,
                    DocumentError::Limit(_) => ErrorKind::Limit,
                    DocumentError::Cancelled | DocumentError::Internal(_) => ErrorKind::Internal,
                };
                Self::Error { kind, message: err.to_string() }
            }
        }
    }

    pub(crate) fn into_result(self) -> Result<ParsedDocument, DocumentError> {
        match self {
            Self::Ok { text, format, parts, notes } => {
                Ok(ParsedDocument { text, format, parts, notes })
            }
            Self::Error { kind, message } => Err(match kind {
                ErrorKind::Unsupported => DocumentError::Unsupported(message),
                ErrorKind::Invalid => DocumentError::Invalid(message),
                ErrorKind::Limit => DocumentError::Limit(message),
                ErrorKind::Internal => DocumentError::Internal(message),
            }),
        }
    }
}

/// The child's `main`: `args` are its arguments after the program (and after the hidden
/// subcommand's name, when it is one); the last is the request.
pub fn child_main(args: impl IntoIterator<Item = String>) -> ExitCode {
    let Some(request) = args.into_iter().last() else {
        eprintln!("the document child needs its request as its last argument");
        return ExitCode::from(2);
    };
    let request: Request = match serde_json::from_str(&request) {
        Ok(request) => request,
        Err(err) => {
            eprintln!("the document child's request does not parse: {err}");
            return ExitCode::from(2);
        }
    };
    let limits = request.limits();
    confine(&limits);
    // A panic is an answer, not a message on stderr: the hook stays quiet.
    std::panic::set_hook(Box::new(|_| {}));
    let reply =
        std::panic::catch_unwind(|| Reply::of(run(&request, &limits))).unwrap_or_else(|_| {
            Reply::Error {
                kind: ErrorKind::Invalid,
                message: "this file made the parser fail: it is damaged or built to break parsers"
                    .into(),
            }
        });
    let mut out = std::io::stdout().lock();
    let written = serde_json::to_writer(&mut out, &reply).is_ok() && out.flush().is_ok();
    if written { ExitCode::SUCCESS } else { ExitCode::from(1) }
}

fn run(request: &Request, limits: &Limits) -> Result<ParsedDocument, DocumentError> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .take(limits.max_file_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|err| DocumentError::Internal(format!("the document did not arrive: {err}")))?;
    let pages = match request.pages.as_deref() {
        Some(spec) => {
            Some(Pages::parse(spec).map_err(|err| DocumentError::Invalid(err.to_string()))?)
        }
        None => None,
    };
    parse(&bytes, &request.name, &Selection { pages, sheet: request.sheet.clone() }, limits)
}

/// Limit this process before it touches the document. Failures are ignored: the parent's wall
/// clock still bounds the child, and a limit that cannot be set here could not be set either way.
fn confine(limits: &Limits) {
    let _ = rustix::process::set_parent_process_death_signal(Some(Signal::KILL));
    let cap = |limit: u64| Rlimit { current: Some(limit), maximum: Some(limit) };
    let _ = setrlimit(Resource::As, cap(limits.max_memory_bytes));
    let _ = setrlimit(Resource::Cpu, cap(limits.timeout.as_secs() + 5));
    let _ = setrlimit(Resource::Fsize, cap(0));
    let _ = setrlimit(Resource::Core, cap(0));
}
