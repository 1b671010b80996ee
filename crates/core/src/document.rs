//! Documents as text: the seam between the crate that parses documents (PDF, office files, sheets)
//! and the tools that meet one elsewhere (web_scrape fetching a PDF, read_file refusing a binary).
//!
//! The parsing crate implements [`DocumentParser`]; the binary hands an `Arc<dyn DocumentParser>`
//! to the crates that want one when it registers their tools, so no crate names another's tool.

use std::fmt;

use crate::{BoxFuture, CancellationToken};

/// A document's text, as a model reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedDocument {
    /// The text, with page and sheet markers (`--- page 3 ---`, `## Sheet: Q1`).
    pub text: String,
    /// The format found (`pdf`, `docx`, `xlsx`, …), by content, not by name.
    pub format: String,
    /// Pages (PDF, slides) or sheets in the document, when it has them.
    pub parts: Option<u32>,
    /// What the model should know beside the text: pages without a text layer, rows left out.
    pub notes: Vec<String>,
}

/// Why a document could not be read. The message says what to do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DocumentError {
    /// Not a format the parser reads.
    Unsupported(String),
    /// Damaged, encrypted, or not what its name says.
    Invalid(String),
    /// Over a limit (size, entries, inflated size, memory, time).
    Limit(String),
    /// The call was cancelled.
    Cancelled,
    /// The parser itself failed (its child process could not start, …).
    Internal(String),
}

impl fmt::Display for DocumentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unsupported(m) | Self::Invalid(m) | Self::Limit(m) | Self::Internal(m) => {
                f.write_str(m)
            }
            Self::Cancelled => f.write_str("cancelled"),
        }
    }
}

impl std::error::Error for DocumentError {}

/// What to read of a document.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DocumentRequest {
    /// Pages to read (`1-3,7`); all when `None`.
    pub pages: Option<String>,
    /// The sheet to read (by name); all when `None`.
    pub sheet: Option<String>,
}

/// Turns a document's bytes into text.
pub trait DocumentParser: Send + Sync {
    /// Parse `bytes`; `name` is a file name or URL path that hints the format (the content
    /// decides). Cancelling `cancel` stops the parse.
    fn parse<'a>(
        &'a self,
        bytes: Vec<u8>,
        name: &'a str,
        request: DocumentRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<ParsedDocument, DocumentError>>;
}
