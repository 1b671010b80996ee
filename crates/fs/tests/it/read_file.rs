#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Black-box tests of read_file through the registry.

use crate::common;

use std::time::{Duration, Instant};

use common::Project;
use hands_core::Content;
use serde_json::json;

const PNG: &[u8] =
    b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89";
const JPEG: &[u8] = b"\xff\xd8\xff\xe0\0\x10JFIF\0\x01\x01\0\0\x01\0\x01\0\0\xff\xd9";

fn numbered(lines: &[(u64, &str)]) -> String {
    lines.iter().map(|(n, l)| format!("{n:>6}\t{l}")).collect::<Vec<_>>().join("\n")
}

#[tokio::test]
async fn lines_are_numbered_like_cat_n() {
    let p = Project::new();
    p.put("a.txt", "alpha\n\tbeta\n\ngamma\n");
    let text = p.ok("read_file", json!({"path": "a.txt"})).await;
    assert_eq!(text, numbered(&[(1, "alpha"), (2, "\tbeta"), (3, ""), (4, "gamma")]));
}

#[tokio::test]
async fn no_trailing_newline_and_crlf() {
    let p = Project::new();
    p.put("a.txt", "one\r\ntwo");
    let text = p.ok("read_file", json!({"path": "a.txt"})).await;
    assert_eq!(text, numbered(&[(1, "one"), (2, "two")]));
}

#[tokio::test]
async fn offset_and_limit_page_with_a_note() {
    let p = Project::new();
    let content: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    p.put("a.txt", &content);
    let text = p.ok("read_file", json!({"path": "a.txt", "offset": 3, "limit": 2})).await;
    assert_eq!(
        text,
        format!(
            "{}\n\n… 6 more lines; call again with offset=5",
            numbered(&[(3, "line 3"), (4, "line 4")])
        )
    );
    let text = p.ok("read_file", json!({"path": "a.txt", "offset": 9})).await;
    assert_eq!(text, numbered(&[(9, "line 9"), (10, "line 10")]));
    // The default limit comes from the configuration.
    let p2 = Project::with_config(hands_fs::FsConfig { read_limit: 3, ..Default::default() });
    p2.put("a.txt", &content);
    let text = p2.ok("read_file", json!({"path": "a.txt"})).await;
    assert!(text.ends_with("… 7 more lines; call again with offset=4"), "{text}");
}

#[tokio::test]
async fn offset_past_the_end_says_how_many_lines() {
    let p = Project::new();
    p.put("a.txt", "a\nb\nc\n");
    let err = p.err("read_file", json!({"path": "a.txt", "offset": 4})).await;
    assert!(err.contains("has 3 lines"), "{err}");
    let err = p.err("read_file", json!({"path": "a.txt", "limit": 0})).await;
    assert!(err.contains("`limit`"), "{err}");
}

#[tokio::test]
async fn long_lines_are_cut_with_a_marker() {
    let p = Project::new();
    p.put("a.txt", format!("{}\nshort\n", "x".repeat(2500)));
    let text = p.ok("read_file", json!({"path": "a.txt"})).await;
    let first = text.lines().next().unwrap();
    assert_eq!(first, format!("     1\t{} … [line truncated, 500 more chars]", "x".repeat(2000)));
    assert!(text.ends_with("     2\tshort"));
}

#[tokio::test]
async fn empty_file_is_a_note_not_an_error() {
    let p = Project::new();
    p.put("empty.txt", "");
    let text = p.ok("read_file", json!({"path": "empty.txt"})).await;
    assert!(text.contains("empty"), "{text}");
}

#[tokio::test]
async fn big_files_need_offset_and_limit() {
    let p = Project::new();
    let line = format!("{}\n", "y".repeat(99));
    let content = line.repeat(12_000); // 1.2 MB
    p.put("big.txt", &content);
    let err = p.err("read_file", json!({"path": "big.txt"})).await;
    assert!(
        err.contains("1200000 bytes") && err.contains("offset") && err.contains("limit"),
        "{err}"
    );
    let text = p.ok("read_file", json!({"path": "big.txt", "offset": 11_999, "limit": 5})).await;
    assert!(text.starts_with(&format!(" 11999\t{}", "y".repeat(99))), "{text}");
    assert!(text.contains(" 12000\t"));
    let text = p.ok("read_file", json!({"path": "big.txt", "offset": 1, "limit": 2})).await;
    assert!(text.contains("more lines follow") && text.contains("offset=3"), "{text}");
}

#[tokio::test]
async fn a_sparse_gigabyte_is_refused_without_loading_it() {
    let p = Project::new();
    // A text head longer than the 8 KiB that are sniffed, then a gigabyte of holes.
    p.put("huge.log", "header line\n".repeat(1000));
    let file = std::fs::OpenOptions::new().write(true).open(p.path("huge.log")).unwrap();
    file.set_len(1 << 30).unwrap();
    let started = Instant::now();
    let err = p.err("read_file", json!({"path": "huge.log"})).await;
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
    assert!(err.contains("1.0 GiB") && err.contains("offset"), "{err}");
    // All holes: refused as binary, also without reading it.
    let file = std::fs::File::create(p.path("zeros.img")).unwrap();
    file.set_len(1 << 30).unwrap();
    let started = Instant::now();
    let err = p.err("read_file", json!({"path": "zeros.img", "offset": 1, "limit": 10})).await;
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
    assert!(err.contains("binary") && err.contains("1073741824 bytes"), "{err}");
}

#[tokio::test]
async fn invalid_utf8_is_lossy_with_a_note() {
    let p = Project::new();
    p.put("latin1.txt", b"caf\xe9\nok\n");
    let text = p.ok("read_file", json!({"path": "latin1.txt"})).await;
    assert!(text.starts_with("     1\tcaf\u{FFFD}\n     2\tok"), "{text}");
    assert!(text.contains("not valid UTF-8"), "{text}");
}

#[tokio::test]
async fn images_are_detected_by_magic_bytes() {
    let p = Project::new();
    p.put("pic.png", PNG);
    p.put("really-jpeg.png", JPEG);
    let out = p.call("read_file", json!({"path": "pic.png"})).await;
    assert!(!out.is_error);
    assert_eq!(
        out.content,
        vec![Content::Image { data: PNG.to_vec(), mime_type: "image/png".into() }]
    );
    let out = p.call("read_file", json!({"path": "really-jpeg.png"})).await;
    assert_eq!(
        out.content,
        vec![Content::Image { data: JPEG.to_vec(), mime_type: "image/jpeg".into() }]
    );
}

#[tokio::test]
async fn a_text_file_named_png_is_an_error() {
    let p = Project::new();
    p.put("fake.png", "just text\n");
    let err = p.err("read_file", json!({"path": "fake.png"})).await;
    assert!(err.contains("not a PNG, JPEG, GIF or WebP image"), "{err}");
}

/// Review finding 9: the error for a non-image named `.png` says what to do next.
#[tokio::test]
async fn review_finding_9_a_fake_png_error_says_what_to_do() {
    let p = Project::new();
    p.put("img/fake.png", "just text\n");
    let err = p.err("read_file", json!({"path": "img/fake.png"})).await;
    assert!(err.contains("recreate or download it again"), "{err}");
    assert!(err.contains("`file img/fake.png`"), "{err}");
}

#[tokio::test]
async fn images_over_the_cap_are_refused() {
    let p = Project::with_config(hands_fs::FsConfig { image_max_bytes: 10, ..Default::default() });
    p.put("pic.png", PNG);
    let err = p.err("read_file", json!({"path": "pic.png"})).await;
    assert!(err.contains("image/png") && err.contains(&format!("{} bytes", PNG.len())), "{err}");
}

#[tokio::test]
async fn binaries_are_refused_with_size_and_type() {
    let p = Project::new();
    p.put("doc.pdf", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n");
    let err = p.err("read_file", json!({"path": "doc.pdf"})).await;
    assert!(err.contains("PDF document") && err.contains("pdftotext"), "{err}");
    // Without a document tool registered, read_file names none.
    assert!(!err.contains("parse_document"), "no parse_document registered: {err}");
    let mut blob = vec![0u8; 3000];
    blob[..4].copy_from_slice(b"\x7fELF");
    p.put("prog", &blob);
    let err = p.err("read_file", json!({"path": "prog"})).await;
    assert!(err.contains("ELF executable") && err.contains("3000 bytes"), "{err}");
    p.put("data.bin", b"abc\0def");
    let err = p.err("read_file", json!({"path": "data.bin"})).await;
    assert!(err.contains("binary") && err.contains("7 bytes"), "{err}");
}

/// Issue 15, item 4: with the document tool registered (the binary's hint), read_file's message
/// and description point to it for PDFs and office files, and not for other binaries.
#[tokio::test]
async fn documents_point_to_the_document_tool_when_it_is_registered() {
    let hints = hands_fs::Hints { documents: Some("parse_document") };
    let p = Project::with_hints(Default::default(), Default::default(), hints);
    p.put("doc.pdf", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n");
    let err = p.err("read_file", json!({"path": "doc.pdf"})).await;
    assert!(err.contains("Get its text with parse_document (path: doc.pdf)"), "{err}");
    assert!(!err.contains("pdftotext"), "{err}");
    p.put("sheet.xlsx", b"PK\x03\x04\x14\0\0\0rest");
    let err = p.err("read_file", json!({"path": "sheet.xlsx"})).await;
    assert!(err.contains("ZIP archive") && err.contains("parse_document"), "{err}");
    p.put("bundle.zip", b"PK\x03\x04\x14\0\0\0rest");
    let err = p.err("read_file", json!({"path": "bundle.zip"})).await;
    assert!(!err.contains("parse_document"), "a plain zip is not a document: {err}");
    let tool = p.registry.get("read_file").unwrap();
    let spec = tool.spec();
    assert!(
        spec.description.contains("with parse_document") && !spec.description.contains("pdftotext")
    );
}

#[tokio::test]
async fn a_directory_points_to_list_files() {
    let p = Project::new();
    std::fs::create_dir_all(p.path("src/sub")).unwrap();
    let err = p.err("read_file", json!({"path": "src"})).await;
    assert!(
        err.contains("directory") && err.contains("list_files") && err.contains("glob"),
        "{err}"
    );
    let err = p.err("read_file", json!({"path": "."})).await;
    assert!(err.contains("list_files"), "{err}");
}

#[tokio::test]
async fn missing_and_outside_paths_are_model_errors() {
    let p = Project::new();
    let err = p.err("read_file", json!({"path": "nope.txt"})).await;
    assert!(err.contains("does not exist"), "{err}");
    let err = p.err("read_file", json!({"path": "../etc/passwd"})).await;
    assert!(err.contains("outside the project root"), "{err}");
    std::os::unix::fs::symlink("/etc/passwd", p.path("link")).unwrap();
    let err = p.err("read_file", json!({"path": "link"})).await;
    assert!(!err.contains("root:"), "{err}");
}
