//! Spreadsheets (XLSX, XLSB, XLS, ODS through calamine; CSV and TSV through csv) as Markdown
//! tables under `## Sheet: NAME` headings: the first rows of each sheet (the limit's), then how
//! many more there are. A zip-based workbook is inflated once under the archive limits before
//! calamine opens it, so calamine never meets more than those allow.

use std::io::Cursor;

use calamine::{Data, Reader};
use hands_core::document::DocumentError;

use crate::archive::Archive;
use crate::limits::Limits;
use crate::markdown;

/// A workbook's text.
pub struct Book {
    /// The text: each sheet shown, with its heading.
    pub text: String,
    /// Sheets in the workbook.
    pub sheets: u32,
    /// What was left out (rows past the limit).
    pub notes: Vec<String>,
}

/// Read `bytes`, a workbook in a format calamine reads (`zipped`: a zip archive, checked first).
pub fn workbook(
    bytes: &[u8],
    what: &'static str,
    zipped: bool,
    sheet: Option<&str>,
    limits: &Limits,
) -> Result<Book, DocumentError> {
    if zipped {
        Archive::open(bytes, limits, what)?.check_all()?;
    }
    let mut book = calamine::open_workbook_auto_from_rs(Cursor::new(bytes)).map_err(|err| {
        DocumentError::Invalid(format!(
            "this {what} is damaged: the workbook does not read ({err})"
        ))
    })?;
    let names = book.sheet_names();
    let chosen = choose(&names, sheet)?;
    let mut out = Book { text: String::new(), sheets: names.len() as u32, notes: Vec::new() };
    for name in chosen {
        let range = book.worksheet_range(&name).map_err(|err| {
            DocumentError::Invalid(format!("sheet {name} of this {what} does not read ({err})"))
        })?;
        let total = range.height();
        let rows: Vec<Vec<String>> = range
            .rows()
            .take(limits.max_rows)
            .map(|row| row.iter().map(cell_text).collect())
            .collect();
        render(&mut out, &name, rows, total, limits.max_rows);
    }
    Ok(out)
}

/// A CSV or TSV file (its delimiter guessed from the first line).
pub fn csv(bytes: &[u8], name: &str, limits: &Limits) -> Book {
    let first = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
    let delimiter = [b',', b';', b'\t']
        .into_iter()
        .max_by_key(|d| first.iter().filter(|b| *b == d).count())
        .unwrap_or(b',');
    let mut reader = ::csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .delimiter(delimiter)
        .from_reader(bytes);
    let mut rows = Vec::new();
    let mut total = 0;
    let mut bad = None;
    for record in reader.byte_records() {
        match record {
            Ok(record) if rows.len() < limits.max_rows => {
                rows.push(record.iter().map(|f| String::from_utf8_lossy(f).into_owned()).collect());
            }
            Ok(_) => {}
            Err(err) => {
                bad = Some(err.to_string());
                break;
            }
        }
        total += 1;
    }
    let mut out = Book { text: String::new(), sheets: 1, notes: Vec::new() };
    render(&mut out, name, rows, total, limits.max_rows);
    if let Some(err) = bad {
        out.notes.push(format!("the file stops parsing as CSV after row {total}: {err}"));
    }
    out
}

fn choose(names: &[String], sheet: Option<&str>) -> Result<Vec<String>, DocumentError> {
    let Some(wanted) = sheet else { return Ok(names.to_vec()) };
    let found = names
        .iter()
        .find(|n| n.as_str() == wanted)
        .or_else(|| names.iter().find(|n| n.eq_ignore_ascii_case(wanted.trim())));
    match found {
        Some(name) => Ok(vec![name.clone()]),
        None => Err(DocumentError::Invalid(format!(
            "there is no sheet `{wanted}`; the sheets are: {}",
            names.join(", ")
        ))),
    }
}

fn render(out: &mut Book, name: &str, rows: Vec<Vec<String>>, total: usize, max: usize) {
    if !out.text.is_empty() {
        out.text.push('\n');
    }
    out.text.push_str(&format!("## Sheet: {name}\n\n"));
    if rows.is_empty() {
        out.text.push_str("(empty)\n");
        return;
    }
    markdown::table(&mut out.text, &rows);
    if total > rows.len() {
        let rest = total - rows.len();
        out.text.push_str(&format!(
            "\n… {rest} more rows ({total} in all; the first {max} are shown)\n"
        ));
        out.notes.push(format!("sheet {name}: {rest} of its {total} rows are not shown"));
    }
}

fn cell_text(data: &Data) -> String {
    match data {
        Data::Empty => String::new(),
        Data::Error(err) => format!("#{err:?}"),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_rows_past_the_limit_are_counted() {
        let mut text = String::from("id;name\n");
        for i in 0..500 {
            text.push_str(&format!("{i};n{i}\n"));
        }
        let limits = Limits { max_rows: 10, ..Limits::default() };
        let book = csv(text.as_bytes(), "data.csv", &limits);
        assert!(
            book.text.starts_with("## Sheet: data.csv\n\n| id | name |\n|---|---|\n| 0 | n0 |"),
            "{}",
            book.text
        );
        assert!(
            book.text.contains("… 491 more rows (501 in all; the first 10 are shown)"),
            "{}",
            book.text
        );
        assert_eq!(book.notes, ["sheet data.csv: 491 of its 501 rows are not shown"]);
    }

    #[test]
    fn an_unknown_sheet_lists_the_sheets() {
        let names = vec!["Q1".to_owned(), "Q2".to_owned()];
        assert_eq!(choose(&names, Some("q2")).unwrap(), ["Q2"]);
        let err = choose(&names, Some("Q3")).unwrap_err().to_string();
        assert!(err.contains("no sheet `Q3`") && err.contains("Q1, Q2"), "{err}");
    }
}
