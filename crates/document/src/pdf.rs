//! PDF: each page's text with pdf_oxide (pure Rust, errors instead of panics on damaged files;
//! a panic is caught anyway); when it cannot read the file, poppler's `pdftotext` if installed
//! (run from the child, so under the same limits). A page without text is reported as having no
//! text layer: a scan or a drawing, and no OCR is done. An encrypted PDF is read only when its
//! user password is empty.

use std::io::{Read, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::{Command, Stdio};

use hands_core::document::DocumentError;

use crate::pages::Pages;

/// One page of text, or none when it has no text layer.
pub struct Page {
    /// Its number, from 1.
    pub number: u32,
    /// Its text (`None`: no text layer).
    pub text: Option<String>,
}

/// A PDF's pages, as read.
pub struct Pdf {
    /// Pages in the document.
    pub count: u32,
    /// The pages selected, in order.
    pub pages: Vec<Page>,
    /// How it was read, when not by the built-in parser.
    pub via: Option<&'static str>,
}

/// Read the pages of `bytes` that `pages` selects (all when `None`).
pub fn read(bytes: &[u8], pages: Option<&Pages>) -> Result<Pdf, DocumentError> {
    let own = catch_unwind(AssertUnwindSafe(|| oxide(bytes, pages)))
        .unwrap_or_else(|_| Err(Failure::Unreadable("its parser failed on it".into())));
    match own {
        Ok(pdf) => Ok(pdf),
        Err(Failure::Final(err)) => Err(err),
        Err(Failure::Unreadable(why)) => match pdftotext(bytes, pages) {
            Some(Ok(pdf)) => Ok(pdf),
            Some(Err(poppler)) => Err(DocumentError::Invalid(format!(
                "this PDF is damaged or not really a PDF: {why}; pdftotext could not read it \
                 either ({poppler})"
            ))),
            None => Err(DocumentError::Invalid(format!(
                "this PDF is damaged or not really a PDF: {why} (pdftotext, which might read \
                 some damaged files, is not installed)"
            ))),
        },
    }
}

enum Failure {
    /// Worth trying another reader.
    Unreadable(String),
    /// The answer (encrypted; a selection past the end).
    Final(DocumentError),
}

fn oxide(bytes: &[u8], pages: Option<&Pages>) -> Result<Pdf, Failure> {
    let doc = pdf_oxide::PdfDocument::from_bytes(bytes.to_vec())
        .map_err(|err| Failure::Unreadable(err.to_string()))?;
    if doc.is_encrypted() && !matches!(doc.authenticate(b""), Ok(true)) {
        return Err(Failure::Final(DocumentError::Invalid(
            "this PDF is encrypted with a password, and parse_document does not take \
             passwords: ask the user for a copy without one (or its text)"
                .into(),
        )));
    }
    let count = doc.page_count().map_err(|err| Failure::Unreadable(err.to_string()))?;
    let count = u32::try_from(count).unwrap_or(u32::MAX);
    let wanted = selected(count, pages).map_err(Failure::Final)?;
    let mut out = Vec::with_capacity(wanted.len());
    for number in wanted {
        let text = doc
            .extract_text(number as usize - 1)
            .map_err(|err| Failure::Unreadable(format!("page {number} does not read ({err})")))?;
        out.push(Page { number, text: some_text(text) });
    }
    Ok(Pdf { count, pages: out, via: None })
}

/// The pages of a `count`-page document that `pages` selects; an error when it selects none.
fn selected(count: u32, pages: Option<&Pages>) -> Result<Vec<u32>, DocumentError> {
    let Some(pages) = pages else { return Ok((1..=count).collect()) };
    let wanted = pages.of(count);
    if wanted.is_empty() {
        return Err(DocumentError::Invalid(format!(
            "`pages` {pages} selects no page: this PDF has {count} page{}",
            if count == 1 { "" } else { "s" }
        )));
    }
    Ok(wanted)
}

fn some_text(text: String) -> Option<String> {
    let trimmed = text.trim_end();
    (!trimmed.trim().is_empty()).then(|| trimmed.to_owned())
}

/// Poppler's pdftotext over `bytes` on stdin; `None` when it is not installed.
fn pdftotext(bytes: &[u8], pages: Option<&Pages>) -> Option<Result<Pdf, String>> {
    let mut command = Command::new("pdftotext");
    command.args(["-enc", "UTF-8", "-layout"]);
    if let Some(pages) = pages {
        command.args(["-f", &pages.first().to_string()]);
        if let Some(last) = pages.last() {
            command.args(["-l", &last.to_string()]);
        }
    }
    let mut child = command
        .args(["-", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    let input = child.stdin.take();
    let bytes = bytes.to_vec();
    let writer = std::thread::spawn(move || {
        if let Some(mut stdin) = input {
            let _ = stdin.write_all(&bytes);
        }
    });
    let mut text = String::new();
    let mut errors = String::new();
    let read_ok = child.stdout.take().map(|mut out| out.read_to_string(&mut text).is_ok());
    if let Some(mut err) = child.stderr.take() {
        let _ = err.by_ref().take(4096).read_to_string(&mut errors);
    }
    let _ = writer.join();
    let status = child.wait().ok()?;
    if !status.success() || read_ok != Some(true) {
        let first = errors.lines().next().unwrap_or("it failed").trim().to_owned();
        return Some(Err(first));
    }
    // Pages end with a form feed.
    let first = pages.map_or(1, Pages::first);
    let mut out = Vec::new();
    let parts: Vec<&str> = text.split('\x0c').collect();
    let read = parts.len().saturating_sub(1);
    for (i, part) in parts.into_iter().take(read).enumerate() {
        let number = first + i as u32;
        if pages.is_none_or(|p| p.contains(number)) {
            out.push(Page { number, text: some_text(part.to_owned()) });
        }
    }
    if out.is_empty() {
        return Some(Err("it found no page".into()));
    }
    let count = if pages.is_none() { read as u32 } else { 0 };
    Some(Ok(Pdf { count, pages: out, via: Some("pdftotext") }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_with_a_pdf_header_is_an_error_not_a_panic() {
        let mut bytes = b"%PDF-1.7\n".to_vec();
        bytes.extend((0..20_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
        let err = read(&bytes, None).err().unwrap().to_string();
        assert!(err.contains("damaged or not really a PDF"), "{err}");
    }

    #[test]
    fn a_selection_past_the_end_says_how_many_pages_there_are() {
        let err = selected(3, Some(&Pages::parse("5-9").unwrap())).unwrap_err().to_string();
        assert!(err.contains("5-9") && err.contains("3 pages"), "{err}");
        assert_eq!(selected(3, Some(&Pages::parse("2-").unwrap())).unwrap(), [2, 3]);
    }
}
