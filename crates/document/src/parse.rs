//! One document, in this process: detect the format, read what the request selects, and put the
//! text together with its markers (`--- page 3 ---`, `--- slide 2 ---`, `## Sheet: Q1`) and its
//! notes. The child process runs this; nothing else should on untrusted bytes, since only the
//! child has the memory and time limits.

use hands_core::document::{DocumentError, ParsedDocument};

use crate::archive::Archive;
use crate::detect::{self, Format};
use crate::limits::{Limits, human};
use crate::pages::Pages;
use crate::{docx, pdf, pptx, sheet};

/// What to read of a document, parsed.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Pages (PDF) or slides (PPTX).
    pub pages: Option<Pages>,
    /// One sheet of a workbook, by name.
    pub sheet: Option<String>,
}

/// Parse `bytes` (named `name`) under `limits`.
pub fn parse(
    bytes: &[u8],
    name: &str,
    selection: &Selection,
    limits: &Limits,
) -> Result<ParsedDocument, DocumentError> {
    if bytes.len() as u64 > limits.max_file_bytes {
        return Err(DocumentError::Limit(format!(
            "the document is {}, over the {} parse_document reads",
            human(bytes.len() as u64),
            human(limits.max_file_bytes)
        )));
    }
    let format = detect::format(bytes, name, limits)?;
    let mut doc = ParsedDocument {
        text: String::new(),
        format: format.name().to_owned(),
        parts: None,
        notes: Vec::new(),
    };
    let paged = matches!(format, Format::Pdf | Format::Pptx);
    let sheets =
        matches!(format, Format::Xlsx | Format::Xlsb | Format::Xls | Format::Ods | Format::Csv);
    if selection.pages.is_some() && !paged {
        doc.notes.push(format!(
            "`pages` applies to PDF pages and PPTX slides; a {} has none, so all of it is shown",
            format.label()
        ));
    }
    if selection.sheet.is_some() && !sheets {
        doc.notes.push(format!(
            "`sheet` applies to spreadsheets; this is a {}, so it was ignored",
            format.label()
        ));
    }
    let pages = selection.pages.as_ref().filter(|_| paged);
    let sheet = selection.sheet.as_deref().filter(|_| sheets);
    match format {
        Format::Pdf => pdf_text(&mut doc, bytes, pages)?,
        Format::Docx => doc.text = docx::text(&mut checked(bytes, limits, "DOCX")?)?,
        Format::Pptx => pptx_text(&mut doc, bytes, pages, limits)?,
        Format::Xlsx | Format::Xlsb | Format::Xls | Format::Ods => {
            let zipped = format != Format::Xls;
            let book = sheet::workbook(bytes, format.label(), zipped, sheet, limits)?;
            doc.text = book.text;
            doc.parts = Some(book.sheets);
            doc.notes.extend(book.notes);
        }
        Format::Csv => {
            let file = name.rsplit('/').next().unwrap_or(name);
            let book = sheet::csv(bytes, file, limits);
            doc.text = book.text;
            doc.parts = Some(1);
            doc.notes.extend(book.notes);
        }
        Format::Html => {
            let html = String::from_utf8_lossy(bytes);
            doc.text = htmd::convert(&html).map_err(|err| {
                DocumentError::Invalid(format!("this HTML does not convert to text ({err})"))
            })?;
        }
        Format::Text => doc.text = String::from_utf8_lossy(bytes).into_owned(),
    }
    cut(&mut doc, limits.max_text_bytes);
    Ok(doc)
}

fn pdf_text(
    doc: &mut ParsedDocument,
    bytes: &[u8],
    pages: Option<&Pages>,
) -> Result<(), DocumentError> {
    let read = pdf::read(bytes, pages)?;
    if read.count > 0 {
        doc.parts = Some(read.count);
    }
    let mut blank = Vec::new();
    for page in read.pages {
        doc.text.push_str(&format!("--- page {} ---\n", page.number));
        match page.text {
            Some(text) => {
                doc.text.push_str(&text);
                doc.text.push('\n');
            }
            None => {
                doc.text.push_str("(no text layer on this page)\n");
                blank.push(page.number.to_string());
            }
        }
    }
    if !blank.is_empty() {
        doc.notes.push(format!(
            "page{} {} ha{} no text layer (a scan or a drawing); parse_document does no OCR",
            if blank.len() == 1 { "" } else { "s" },
            blank.join(", "),
            if blank.len() == 1 { "s" } else { "ve" }
        ));
    }
    if let Some(via) = read.via {
        doc.notes
            .push(format!("read with {via}: the built-in PDF parser could not read this file"));
    }
    Ok(())
}

fn pptx_text(
    doc: &mut ParsedDocument,
    bytes: &[u8],
    pages: Option<&Pages>,
    limits: &Limits,
) -> Result<(), DocumentError> {
    let mut archive = checked(bytes, limits, "PPTX")?;
    let slides = pptx::slides(&mut archive)?;
    let count = u32::try_from(slides.len()).unwrap_or(u32::MAX);
    doc.parts = Some(count);
    let wanted: Vec<u32> = pages.map_or_else(|| (1..=count).collect(), |p| p.of(count));
    if wanted.is_empty() && count > 0 {
        let p = pages.map(ToString::to_string).unwrap_or_default();
        return Err(DocumentError::Invalid(format!(
            "`pages` {p} selects no slide: this PPTX has {count} slide{}",
            if count == 1 { "" } else { "s" }
        )));
    }
    for number in wanted {
        let text = pptx::slide_text(&mut archive, &slides[number as usize - 1])?;
        doc.text.push_str(&format!("--- slide {number} ---\n"));
        if text.is_empty() {
            doc.text.push_str("(no text on this slide)\n");
        } else {
            doc.text.push_str(&text);
            doc.text.push('\n');
        }
    }
    Ok(())
}

/// An archive whose every entry was inflated once under the limits: what is read of it after
/// cannot pass them, whichever entries the format needs.
fn checked<'a>(
    bytes: &'a [u8],
    limits: &Limits,
    what: &'static str,
) -> Result<Archive<'a>, DocumentError> {
    Archive::open(bytes, limits, what)?.check_all()?;
    Archive::open(bytes, limits, what)
}

/// Cut the text at `max` bytes (on a character boundary), with a note.
fn cut(doc: &mut ParsedDocument, max: usize) {
    if doc.text.len() <= max {
        return;
    }
    let mut end = max;
    while !doc.text.is_char_boundary(end) {
        end -= 1;
    }
    let total = doc.text.len();
    doc.text.truncate(end);
    doc.notes.push(format!(
        "the text is cut at {} of {}: read the rest with `pages`",
        human(end as u64),
        human(total as u64)
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_and_html() {
        let l = Limits::default();
        let s = Selection::default();
        let doc = parse(
            b"<html><body><h1>Title</h1><p>Some <b>bold</b> text.</p></body></html>",
            "a.html",
            &s,
            &l,
        )
        .unwrap();
        assert_eq!(doc.format, "html");
        assert!(
            doc.text.contains("# Title") && doc.text.contains("Some **bold** text."),
            "{}",
            doc.text
        );
        let doc = parse("# Notes\nplain\n".as_bytes(), "n.md", &s, &l).unwrap();
        assert_eq!((doc.format.as_str(), doc.text.as_str()), ("text", "# Notes\nplain\n"));
    }

    #[test]
    fn options_that_do_not_apply_are_noted_and_long_text_is_cut() {
        let s = Selection { pages: Some(Pages::parse("2").unwrap()), sheet: Some("Q1".into()) };
        let l = Limits { max_text_bytes: 10, ..Limits::default() };
        let doc = parse("ééééééééé".as_bytes(), "x.txt", &s, &l).unwrap();
        assert_eq!(doc.text, "ééééé");
        assert!(doc.notes[0].contains("`pages` applies to PDF"), "{:?}", doc.notes);
        assert!(doc.notes[1].contains("`sheet` applies to spreadsheets"), "{:?}", doc.notes);
        assert!(doc.notes[2].contains("cut at 10 bytes of 18 bytes"), "{:?}", doc.notes);
        let big = Limits { max_file_bytes: 3, ..Limits::default() };
        let err = parse(b"abcd", "x.txt", &Selection::default(), &big).unwrap_err();
        assert!(matches!(err, DocumentError::Limit(_)), "{err}");
    }
}
