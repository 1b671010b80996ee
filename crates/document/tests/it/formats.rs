//! Issue 15, item 4: each format parse_document reads, from files real writers made, parsed by
//! the library in this process (the child process and its limits are tested through the binary
//! in crates/cli/tests/it/parse_document.rs, and here in child.rs).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use hands_core::document::{DocumentError, ParsedDocument};
use hands_document::{Limits, Pages, Selection, parse};

fn read(
    name: &str,
    pages: Option<&str>,
    sheet: Option<&str>,
) -> Option<Result<ParsedDocument, DocumentError>> {
    let dir = common::fixtures()?;
    let bytes = std::fs::read(dir.join(name)).unwrap();
    let selection = Selection {
        pages: pages.map(|p| Pages::parse(p).unwrap()),
        sheet: sheet.map(String::from),
    };
    Some(parse(&bytes, name, &selection, &Limits::default()))
}

#[test]
fn docx_headings_lists_and_tables() {
    let Some(doc) = read("report.docx", None, None) else { return };
    let doc = doc.unwrap();
    assert_eq!(doc.format, "docx");
    let t = &doc.text;
    assert!(
        t.starts_with("# Quarterly report\n\nRevenue grew in every region. Margins held.\n"),
        "{t}"
    );
    assert!(t.contains("## Regions\n"), "{t}");
    assert!(
        t.contains(
            "| Region | Q1 | Q2 |\n|---|---|---|\n| North | 120 | 135 |\n| South | 98 | 101 |\n"
        ),
        "{t}"
    );
    assert!(t.contains("- First point\n- Second point\n"), "{t}");
    assert!(t.contains("Closing words with a pipe | inside."), "{t}");
}

#[test]
fn pptx_slides_in_order_and_by_number() {
    let Some(doc) = read("deck.pptx", None, None) else { return };
    let doc = doc.unwrap();
    assert_eq!((doc.format.as_str(), doc.parts), ("pptx", Some(3)));
    let t = &doc.text;
    assert!(
        t.starts_with(
            "--- slide 1 ---\n# Launch plan\nShip in March\nslide footer 1\n--- slide 2 ---\n"
        ),
        "{t}"
    );
    assert!(t.contains("--- slide 3 ---\n# Next steps\nHire two engineers"), "{t}");
    let two = read("deck.pptx", Some("2"), None).unwrap().unwrap();
    assert_eq!(two.text, "--- slide 2 ---\n# Risks\nSupply of chips\nslide footer 2\n");
    let err = read("deck.pptx", Some("4-"), None).unwrap().unwrap_err().to_string();
    assert!(err.contains("has 3 slides"), "{err}");
}

#[test]
fn workbooks_as_markdown_tables() {
    let Some(doc) = read("book.xlsx", None, None) else { return };
    let doc = doc.unwrap();
    assert_eq!((doc.format.as_str(), doc.parts), ("xlsx", Some(2)));
    let t = &doc.text;
    assert!(
        t.starts_with(
            "## Sheet: Q1\n\n| Product | Units | Price |\n|---|---|---|\n| Widget | 10 | 2.5 |\n"
        ),
        "{t}"
    );
    assert!(t.contains("| Pipe \\| name | 1 | 0.5 |"), "{t}");
    assert!(t.contains("## Sheet: Q2\n\n| Product | Units |\n|---|---|\n| Widget | 12 |\n"), "{t}");
    let q2 = read("book.xlsx", None, Some("Q2")).unwrap().unwrap();
    assert!(q2.text.starts_with("## Sheet: Q2") && !q2.text.contains("Q1"), "{}", q2.text);
    let err = read("book.xlsx", None, Some("Q3")).unwrap().unwrap_err().to_string();
    assert!(err.contains("no sheet `Q3`") && err.contains("Q1, Q2"), "{err}");
    let xls = read("legacy.xls", None, None).unwrap().unwrap();
    assert_eq!(xls.format, "xls");
    assert!(
        xls.text.contains(
            "## Sheet: Legacy\n\n| Name | Score |\n|---|---|\n| Ada | 36 |\n| Alan | 41 |\n"
        ),
        "{}",
        xls.text
    );
    let ods = read("budget.ods", None, None).unwrap().unwrap();
    assert_eq!(ods.format, "ods");
    assert!(
        ods.text.contains(
            "## Sheet: Budget\n\n| Item | Cost |\n|---|---|\n| Rent | 900 |\n| Food | 300 |\n"
        ),
        "{}",
        ods.text
    );
}

#[test]
fn a_huge_sheet_shows_200_rows_and_counts_the_rest() {
    let Some(doc) = read("rows.xlsx", None, None) else { return };
    let doc = doc.unwrap();
    let rows = doc.text.lines().filter(|l| l.starts_with("| ")).count();
    assert_eq!(rows, 200, "header plus 199 data rows");
    assert!(doc.text.contains("| 199 | item 199 | 298.5 |"), "{}", &doc.text[..500]);
    assert!(!doc.text.contains("item 200 "), "row 200 is past the limit");
    assert!(
        doc.text.contains("… 9801 more rows (10001 in all; the first 200 are shown)"),
        "{}",
        &doc.text[doc.text.len() - 200..]
    );
    assert_eq!(doc.notes, ["sheet Data: 9801 of its 10001 rows are not shown"]);
}

#[test]
fn pdf_pages_markers_and_selections() {
    let Some(doc) = read("hundred.pdf", None, None) else { return };
    let doc = doc.unwrap();
    assert_eq!((doc.format.as_str(), doc.parts), ("pdf", Some(100)));
    for n in [1, 50, 100] {
        assert!(
            doc.text
                .contains(&format!("--- page {n} ---\nPage {n} heading: the quick brown fox\n")),
            "page {n}"
        );
    }
    assert!(
        doc.text.contains("Line 44 of page 100: lorem ipsum dolor sit amet, consectetur 4400.")
    );
    let some = read("hundred.pdf", Some("1-3,7"), None).unwrap().unwrap();
    let markers: Vec<&str> = some.text.lines().filter(|l| l.starts_with("--- page ")).collect();
    assert_eq!(markers, ["--- page 1 ---", "--- page 2 ---", "--- page 3 ---", "--- page 7 ---"]);
    assert!(some.text.contains("Line 44 of page 7"));
    let err = read("hundred.pdf", Some("101-"), None).unwrap().unwrap_err().to_string();
    assert!(err.contains("this PDF has 100 pages"), "{err}");
}

#[test]
fn a_page_without_a_text_layer_is_reported() {
    let Some(doc) = read("scanned.pdf", None, None) else { return };
    let doc = doc.unwrap();
    assert!(doc.text.contains("--- page 1 ---\nText on the first page\n--- page 2 ---\n(no text layer on this page)\n--- page 3 ---\nText on the third page"), "{}", doc.text);
    assert_eq!(
        doc.notes,
        ["page 2 has no text layer (a scan or a drawing); parse_document does no OCR"]
    );
}

#[test]
fn an_encrypted_pdf_is_refused_with_what_to_do() {
    let Some(doc) = read("locked.pdf", None, None) else { return };
    let err = doc.unwrap_err();
    assert!(matches!(err, DocumentError::Invalid(_)), "{err:?}");
    assert!(
        err.to_string().contains("encrypted with a password")
            && err.to_string().contains("ask the user"),
        "{err}"
    );
}

#[test]
fn zip_bombs_stop_at_the_limits() {
    let Some(err) = read("inflates.docx", None, None) else { return };
    let err = err.unwrap_err();
    assert!(matches!(err, DocumentError::Limit(_)), "{err:?}");
    assert!(err.to_string().contains("inflates past 200 MB"), "{err}");
    // The entry declares 1,000 bytes: the count is of what comes out.
    let err = read("liar.docx", None, None).unwrap().unwrap_err().to_string();
    assert!(err.contains("inflates past 200 MB") || err.contains("damaged"), "{err}");
    let err = read("entries.docx", None, None).unwrap().unwrap_err().to_string();
    assert!(err.contains("10001 archive entries") && err.contains("zip bomb"), "{err}");
}

#[test]
fn other_bytes_are_refused_by_content() {
    let selection = Selection::default();
    let l = Limits::default();
    let mut garbage = b"%PDF-1.7\n".to_vec();
    garbage.extend((0..50_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8));
    let err = parse(&garbage, "fake.pdf", &selection, &l).unwrap_err();
    assert!(
        matches!(err, DocumentError::Invalid(_)) && err.to_string().contains("not really a PDF"),
        "{err}"
    );
    let err = parse(b"\x7fELF\x02\x01\x01\0\0\0", "report.pdf", &selection, &l).unwrap_err();
    assert!(matches!(err, DocumentError::Unsupported(_)), "{err}");
    let err = parse(b"PK\x03\x04garbage that is no zip", "x.docx", &selection, &l).unwrap_err();
    assert!(matches!(err, DocumentError::Invalid(_)), "{err}");
}
