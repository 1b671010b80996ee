//! Which format a document is, by its content (the name only breaks ties between text formats):
//! `%PDF-`, a zip archive whose entries say Word, PowerPoint, Excel or OpenDocument, an OLE2
//! compound file (old Excel), or text (HTML, CSV, Markdown, plain).

use hands_core::document::DocumentError;

use crate::archive::Archive;
use crate::limits::Limits;

/// A format parse_document reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// PDF.
    Pdf,
    /// Word (Office Open XML).
    Docx,
    /// PowerPoint (Office Open XML).
    Pptx,
    /// Excel (Office Open XML).
    Xlsx,
    /// Excel binary workbook.
    Xlsb,
    /// Excel 97–2003.
    Xls,
    /// OpenDocument spreadsheet.
    Ods,
    /// Comma- or tab-separated values.
    Csv,
    /// HTML.
    Html,
    /// Markdown or plain text, shown as it is.
    Text,
}

impl Format {
    /// Its short name, as results show it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Pdf => "pdf",
            Self::Docx => "docx",
            Self::Pptx => "pptx",
            Self::Xlsx => "xlsx",
            Self::Xlsb => "xlsb",
            Self::Xls => "xls",
            Self::Ods => "ods",
            Self::Csv => "csv",
            Self::Html => "html",
            Self::Text => "text",
        }
    }

    /// Its name in messages (`PDF`, `DOCX`).
    pub fn label(self) -> &'static str {
        match self {
            Self::Pdf => "PDF",
            Self::Docx => "DOCX",
            Self::Pptx => "PPTX",
            Self::Xlsx => "XLSX",
            Self::Xlsb => "XLSB",
            Self::Xls => "XLS",
            Self::Ods => "ODS",
            Self::Csv => "CSV",
            Self::Html => "HTML",
            Self::Text => "text",
        }
    }
}

const OLE2: &[u8] = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1";

/// The format of `bytes`, named `name`.
pub fn format(bytes: &[u8], name: &str, limits: &Limits) -> Result<Format, DocumentError> {
    let lower = name.to_ascii_lowercase();
    let ext = lower.rsplit_once('.').map_or("", |(_, ext)| ext);
    let head = &bytes[..bytes.len().min(1024)];
    if memfind(head, b"%PDF-") {
        return Ok(Format::Pdf);
    }
    if bytes.starts_with(b"PK\x03\x04") || bytes.starts_with(b"PK\x05\x06") {
        return zipped(bytes, limits);
    }
    if bytes.starts_with(OLE2) {
        return match ext {
            "doc" | "ppt" => Err(DocumentError::Unsupported(format!(
                "this is an old binary Office file (.{ext}, Office 97–2003), which \
                 parse_document does not read: ask for it saved as {} or PDF",
                if ext == "doc" { "DOCX" } else { "PPTX" }
            ))),
            _ => Ok(Format::Xls),
        };
    }
    let sniff = &bytes[..bytes.len().min(8192)];
    if sniff.contains(&0) || std::str::from_utf8(trim_partial(sniff)).is_err() {
        return Err(DocumentError::Unsupported(
            "this is not a document parse_document reads (PDF, DOCX, PPTX, XLSX, XLS, ODS, CSV, \
             HTML or text): it is some other binary file"
                .into(),
        ));
    }
    let start = String::from_utf8_lossy(&sniff[..sniff.len().min(512)]).to_ascii_lowercase();
    let start = start.trim_start_matches('\u{feff}').trim_start();
    Ok(match ext {
        "csv" | "tsv" => Format::Csv,
        "html" | "htm" | "xhtml" => Format::Html,
        _ if start.starts_with("<!doctype html") || start.starts_with("<html") => Format::Html,
        _ => Format::Text,
    })
}

fn zipped(bytes: &[u8], limits: &Limits) -> Result<Format, DocumentError> {
    let mut archive = Archive::open(bytes, limits, "archive")?;
    if archive.has("word/document.xml") {
        return Ok(Format::Docx);
    }
    if archive.has("ppt/presentation.xml") {
        return Ok(Format::Pptx);
    }
    if archive.has("xl/workbook.xml") {
        return Ok(Format::Xlsx);
    }
    if archive.has("xl/workbook.bin") {
        return Ok(Format::Xlsb);
    }
    let mimetype = archive.read("mimetype")?.unwrap_or_default();
    match String::from_utf8_lossy(&mimetype).trim() {
        "application/vnd.oasis.opendocument.spreadsheet" => Ok(Format::Ods),
        m if m.starts_with("application/vnd.oasis.opendocument.") => {
            Err(DocumentError::Unsupported(format!(
                "this OpenDocument file ({m}) is not one parse_document reads (it reads ODS \
                 spreadsheets): ask for it as PDF or DOCX"
            )))
        }
        _ => Err(DocumentError::Unsupported(
            "this is a zip archive, not an Office document (no Word, PowerPoint, Excel or \
             OpenDocument part in it): unpack it with a command to see what it holds"
                .into(),
        )),
    }
}

fn memfind(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// `bytes` without a UTF-8 sequence cut at its end (a sniffed prefix may split one).
fn trim_partial(bytes: &[u8]) -> &[u8] {
    match std::str::from_utf8(bytes) {
        Err(err) if err.error_len().is_none() => &bytes[..err.valid_up_to()],
        _ => bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_formats_by_name_and_content() {
        let l = Limits::default();
        assert_eq!(format(b"a,b\n1,2\n", "x.csv", &l).unwrap(), Format::Csv);
        assert_eq!(format(b"<!DOCTYPE html><p>x", "page", &l).unwrap(), Format::Html);
        assert_eq!(format(b"# Title\n", "notes.md", &l).unwrap(), Format::Text);
        assert_eq!(format(b"junk\n%PDF-1.4\n", "x.bin", &l).unwrap(), Format::Pdf);
        let err = format(b"\x7fELF\0\0\0", "prog", &l).unwrap_err();
        assert!(matches!(err, DocumentError::Unsupported(_)), "{err}");
        let err = format(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1rest", "old.doc", &l).unwrap_err();
        assert!(err.to_string().contains("DOCX"), "{err}");
        // A multibyte character cut by the sniff window is still text.
        let mut long = "é".repeat(5000).into_bytes();
        long.truncate(8191);
        assert_eq!(format(&long, "a.txt", &l).unwrap(), Format::Text);
    }
}
