//! parse_document: a document in the project as text, with page and sheet markers.
//!
//! Flow: resolve the path through the confined workspace, refuse a directory or a file over the
//! size limit before reading it, read it, hand the bytes to the [`DocumentParser`] (a child
//! process under memory and time limits), and answer with a header line (format, pages or sheets,
//! what was selected), the text, and the parser's notes.

use std::borrow::Cow;
use std::io::Read;
use std::sync::Arc;

use hands_core::document::{DocumentError, DocumentParser, DocumentRequest};
use hands_core::{Annotations, Context, Family, Label, Policy, Tool, ToolError, ToolOutput};
use hands_fs::Workspace;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::limits::human;
use crate::pages::Pages;

/// The tool's name.
pub const NAME: &str = "parse_document";

/// Arguments of parse_document.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ParseDocumentArgs {
    /// The document's path, relative to the project root (or absolute inside it).
    pub path: String,
    /// Pages of a PDF or slides of a PPTX to read, like "1-3,7" or "5-" (default: all).
    #[serde(default)]
    pub pages: Option<String>,
    /// One sheet of a spreadsheet to read, by name (default: every sheet).
    #[serde(default)]
    pub sheet: Option<String>,
}

/// The parse_document tool.
#[derive(Clone)]
pub struct ParseDocument {
    parser: Arc<dyn DocumentParser>,
    max_bytes: u64,
}

impl ParseDocument {
    /// Parsing with `parser`, refusing files over `max_bytes` before reading them.
    pub fn new(parser: Arc<dyn DocumentParser>, max_bytes: u64) -> Self {
        Self { parser, max_bytes }
    }
}

impl Tool for ParseDocument {
    type Args = ParseDocumentArgs;

    fn name(&self) -> &'static str {
        NAME
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("parse_document.md"))
    }

    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY
    }

    fn policy(&self) -> Policy {
        Policy::from_annotations(self.annotations())
            .label(Label::Key { key: "path" })
            .family(Family::Data)
            // The child's own limit is 60 s; this leaves it time to say so.
            .timeout_ms(90_000)
    }

    async fn call(&self, ctx: Context, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let pages = match args.pages.as_deref() {
            Some(spec) => {
                Some(Pages::parse(spec).map_err(|err| ToolError::model(err.to_string()))?)
            }
            None => None,
        };
        if args.sheet.as_deref().is_some_and(|s| s.trim().is_empty()) {
            return Err(ToolError::model(
                "`sheet` is empty: give a sheet's name, or leave it out to read every sheet",
            ));
        }
        let ws = Workspace::of(&ctx)?;
        let path = ws.resolve("path", &args.path)?;
        let shown = path.display().to_string();
        let (file, meta) =
            ws.open_read_with_metadata(&path).map_err(|err| ws.io_error("read", &path, &err))?;
        if meta.is_dir() {
            return Err(ToolError::model(format!(
                "{shown} is a directory, not a document: give the path of a file in it"
            )));
        }
        if !meta.is_file() {
            return Err(ToolError::model(format!("{shown} is not a regular file")));
        }
        if meta.len() > self.max_bytes {
            return Err(ToolError::model(format!(
                "{shown} is {}, over the {} parse_document reads. Ask the user for a smaller \
                 file or the part that matters (a page range exported on its own)",
                human(meta.len()),
                human(self.max_bytes)
            )));
        }
        let max = self.max_bytes;
        let bytes = tokio::task::spawn_blocking(move || {
            let mut bytes = Vec::new();
            file.take(max + 1).read_to_end(&mut bytes).map(|_| bytes)
        })
        .await
        .map_err(|err| ToolError::Fatal(format!("parse_document's read failed: {err}")))?
        .map_err(|err| ws.io_error("read", &path, &err))?;
        let request = DocumentRequest { pages: args.pages.clone(), sheet: args.sheet.clone() };
        let cancel = ctx.cancel_token().clone();
        let doc =
            self.parser.parse(bytes, &shown, request, cancel).await.map_err(|err| match err {
                DocumentError::Cancelled => {
                    ToolError::model("parse_document was stopped (timeout or abort)")
                }
                DocumentError::Internal(why) => {
                    ToolError::model(format!("parse_document could not parse {shown}: {why}"))
                }
                other => ToolError::model(format!("{shown}: {other}")),
            })?;
        let mut text =
            header(&shown, &doc.format, doc.parts, pages.as_ref(), args.sheet.as_deref());
        text.push_str(&doc.text);
        if !text.ends_with('\n') {
            text.push('\n');
        }
        for note in &doc.notes {
            text.push_str(&format!("[note] {note}\n"));
        }
        Ok(ToolOutput::text(text))
    }
}

/// `report.pdf: PDF, 12 pages (pages 1-3 shown)`.
fn header(
    path: &str,
    format: &str,
    parts: Option<u32>,
    pages: Option<&Pages>,
    sheet: Option<&str>,
) -> String {
    let unit = match format {
        "pdf" => Some("page"),
        "pptx" => Some("slide"),
        "xlsx" | "xlsb" | "xls" | "ods" | "csv" => Some("sheet"),
        _ => None,
    };
    let mut line = format!("{path}: {}", format.to_ascii_uppercase());
    if let (Some(n), Some(unit)) = (parts, unit) {
        line.push_str(&format!(", {n} {unit}{}", if n == 1 { "" } else { "s" }));
    }
    match (unit, pages, sheet) {
        (Some(unit @ ("page" | "slide")), Some(pages), _) => {
            line.push_str(&format!(" ({unit}s {pages} shown)"))
        }
        (Some("sheet"), _, Some(sheet)) => line.push_str(&format!(" (sheet {sheet} shown)")),
        _ => {}
    }
    line.push('\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_says_what_is_shown() {
        let p = Pages::parse("1-3").unwrap();
        assert_eq!(
            header("a.pdf", "pdf", Some(12), Some(&p), None),
            "a.pdf: PDF, 12 pages (pages 1-3 shown)\n"
        );
        assert_eq!(
            header("b.xlsx", "xlsx", Some(1), None, Some("Q1")),
            "b.xlsx: XLSX, 1 sheet (sheet Q1 shown)\n"
        );
        assert_eq!(header("c.docx", "docx", None, None, None), "c.docx: DOCX\n");
    }
}
