//! parse_document and the parser behind it: the text of PDF, DOCX, PPTX, XLSX/XLSB/XLS/ODS/CSV
//! and HTML documents, with page and sheet markers, for the model to read.
//!
//! Untrusted bytes are parsed only in a child process ([`child_main`]), which limits its own
//! address space (1 GiB) and CPU time before reading them; the parent ([`ChildParser`]) kills its
//! process group after 60 s. Zip-based formats are read through a reader that counts entries and
//! inflated bytes as they come out ([`Limits`]), so a zip bomb stops at 200 MB whatever its
//! headers declare. The child is the `hands` binary itself, run with the hidden subcommand
//! [`CHILD_SUBCOMMAND`]: one program to install, of the same version as its parent, found by
//! its own path and not through `PATH`.
//!
//! ```no_run
//! use hands_core::{CoreConfig, Registry};
//! let command = hands_document::ChildCommand {
//!     program: std::env::current_exe().unwrap(),
//!     args: vec![hands_document::CHILD_SUBCOMMAND.into()],
//!     env: Vec::new(),
//! };
//! let parser = hands_document::parser(command, hands_document::Limits::default());
//! let registry =
//!     hands_document::register(Registry::builder(CoreConfig::default()), parser).build();
//! assert!(registry.get("parse_document").is_some());
//! ```
#![deny(missing_docs)]

mod archive;
mod child;
mod detect;
mod docx;
mod limits;
mod markdown;
mod pages;
mod parse;
mod pdf;
mod pptx;
mod sandboxed;
mod sheet;
mod tool;
mod xml;

use std::sync::Arc;

use hands_core::RegistryBuilder;
use hands_core::document::DocumentParser;

pub use child::child_main;
pub use limits::Limits;
pub use pages::{Pages, PagesError};
pub use parse::{Selection, parse};
pub use sandboxed::{ChildCommand, ChildParser};
pub use tool::{NAME, ParseDocument, ParseDocumentArgs};

/// The hidden subcommand of `hands` that runs [`child_main`].
pub const CHILD_SUBCOMMAND: &str = "__parse-document";

/// The parser other crates get (web tools meeting a PDF): children started by `command`, under
/// `limits`.
pub fn parser(command: ChildCommand, limits: Limits) -> Arc<dyn DocumentParser> {
    Arc::new(ChildParser::new(command, limits))
}

/// Register parse_document, parsing with `parser`.
pub fn register(builder: RegistryBuilder, parser: Arc<dyn DocumentParser>) -> RegistryBuilder {
    // Where the project holds documents (at its root or one folder down; looked at again after
    // every change), not in every request of a project that has none.
    builder.tool_if(
        |c| c.project(|p| p.documents),
        ParseDocument::new(parser, Limits::default().max_file_bytes),
    )
}
