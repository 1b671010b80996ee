//! Issue 15, item 4: parse_document through the real binary (`hands call`), so every document is
//! parsed in the real child (`hands __parse-document`) under its limits: a PDF page range, a
//! sheet that makes the parser allocate gigabytes (the child dies of its 1 GiB limit, hands
//! answers), an encrypted PDF, a file over 50 MB, paths that escape, a directory, bad arguments,
//! and read_file pointing to parse_document.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../../document/tests/it/common/mod.rs"]
mod documents;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use assert_cmd::Command;

struct Project {
    tmp: tempfile::TempDir,
}

impl Project {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("home")).unwrap();
        std::fs::create_dir_all(tmp.path().join("root")).unwrap();
        Self { tmp }
    }

    fn root(&self) -> PathBuf {
        self.tmp.path().join("root")
    }

    fn copy(&self, fixtures: &Path, name: &str, to: &str) {
        let dest = self.root().join(to);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::copy(fixtures.join(name), dest).unwrap();
    }

    /// `hands call TOOL ARGS`: (exit code, stdout).
    fn call(&self, tool: &str, args: &str) -> (i32, String) {
        let out = Command::cargo_bin("hands")
            .unwrap()
            .env("HOME", self.tmp.path().join("home"))
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_STATE_HOME")
            .timeout(Duration::from_secs(120))
            .args(["call", tool, args, "--root"])
            .arg(self.root())
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr),
        )
    }
}

#[test]
fn a_pdf_page_range_through_the_child() {
    let Some(fixtures) = documents::fixtures() else { return };
    let p = Project::new();
    p.copy(&fixtures, "hundred.pdf", "docs/hundred.pdf");
    let (code, out) = p.call("parse_document", r#"{"path": "docs/hundred.pdf", "pages": "2-3"}"#);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.starts_with(
            "docs/hundred.pdf: PDF, 100 pages (pages 2-3 shown)\n--- page 2 ---\nPage 2 heading"
        ),
        "{out}"
    );
    assert!(
        out.contains("--- page 3 ---")
            && !out.contains("--- page 4 ---")
            && !out.contains("--- page 1 ---"),
        "{out}"
    );
    p.copy(&fixtures, "book.xlsx", "book.xlsx");
    let (code, out) = p.call("parse_document", r#"{"path": "book.xlsx", "sheet": "Q2"}"#);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.starts_with(
            "book.xlsx: XLSX, 2 sheets (sheet Q2 shown)\n## Sheet: Q2\n\n| Product | Units |"
        ),
        "{out}"
    );
}

#[test]
fn a_file_that_needs_gigabytes_is_stopped_by_the_childs_memory_limit() {
    let Some(fixtures) = documents::fixtures() else { return };
    let p = Project::new();
    p.copy(&fixtures, "wide.xlsx", "wide.xlsx");
    let started = Instant::now();
    let (code, out) = p.call("parse_document", r#"{"path": "wide.xlsx"}"#);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("needed more than 1024 MB of memory"), "{out}");
    assert!(started.elapsed() < Duration::from_secs(30), "{:?}", started.elapsed());
    // hands itself is fine: the next call works.
    p.copy(&fixtures, "report.docx", "report.docx");
    let (code, out) = p.call("parse_document", r#"{"path": "report.docx"}"#);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("# Quarterly report"), "{out}");
}

#[test]
fn encrypted_bombs_and_large_files_get_clear_errors() {
    let Some(fixtures) = documents::fixtures() else { return };
    let p = Project::new();
    p.copy(&fixtures, "locked.pdf", "locked.pdf");
    p.copy(&fixtures, "inflates.docx", "inflates.docx");
    let (code, out) = p.call("parse_document", r#"{"path": "locked.pdf"}"#);
    assert!(
        code == 1 && out.contains("locked.pdf: this PDF is encrypted with a password"),
        "{out}"
    );
    let (code, out) = p.call("parse_document", r#"{"path": "inflates.docx"}"#);
    assert!(code == 1 && out.contains("inflates past 200 MB"), "{out}");
    // 51 MB (sparse): refused before it is read.
    let big = std::fs::File::create(p.root().join("big.pdf")).unwrap();
    big.set_len(51 * 1024 * 1024).unwrap();
    let started = Instant::now();
    let (code, out) = p.call("parse_document", r#"{"path": "big.pdf"}"#);
    assert!(
        code == 1 && out.contains("big.pdf is 51 MB, over the 50 MB parse_document reads"),
        "{out}"
    );
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[test]
fn paths_that_escape_directories_and_bad_arguments() {
    let p = Project::new();
    std::fs::write(p.tmp.path().join("outside.pdf"), b"%PDF-1.4\n").unwrap();
    std::os::unix::fs::symlink(p.tmp.path().join("outside.pdf"), p.root().join("link.pdf"))
        .unwrap();
    std::fs::create_dir_all(p.root().join("docs")).unwrap();
    for path in ["../outside.pdf", "link.pdf", "/etc/passwd"] {
        let (code, out) = p.call("parse_document", &format!(r#"{{"path": "{path}"}}"#));
        assert_eq!(code, 1, "{path}: {out}");
        assert!(
            out.contains("outside the project root") || out.contains("outside"),
            "{path}: {out}"
        );
    }
    let (code, out) = p.call("parse_document", r#"{"path": "docs"}"#);
    assert!(code == 1 && out.contains("docs is a directory, not a document"), "{out}");
    let (code, out) = p.call("parse_document", r#"{"path": "missing.pdf"}"#);
    assert!(code == 1 && out.contains("missing.pdf"), "{out}");
    std::fs::write(p.root().join("a.pdf"), b"%PDF-1.4\n").unwrap();
    let (code, out) = p.call("parse_document", r#"{"path": "a.pdf", "pages": "0-2"}"#);
    assert!(code == 1 && out.contains("`pages` counts pages from 1"), "{out}");
    let (code, out) = p.call("parse_document", r#"{"path": 3}"#);
    assert!(code == 1 && out.contains("path"), "{out}");
    let (code, out) = p.call("parse_document", r#"{"path": "a.pdf", "page": "1"}"#);
    assert!(code == 1 && out.contains("page"), "{out}");
}

#[test]
fn read_file_points_to_parse_document() {
    let p = Project::new();
    std::fs::write(p.root().join("spec.pdf"), b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n").unwrap();
    let (code, out) = p.call("read_file", r#"{"path": "spec.pdf"}"#);
    assert!(
        code == 1 && out.contains("Get its text with parse_document (path: spec.pdf)"),
        "{out}"
    );
    let out = Command::cargo_bin("hands")
        .unwrap()
        .env("HOME", p.tmp.path().join("home"))
        .args(["tools", "--json", "--root"])
        .arg(p.root())
        .output()
        .unwrap();
    let tools = String::from_utf8_lossy(&out.stdout);
    assert!(
        tools.contains("with parse_document") && tools.contains("\"parse_document\""),
        "{tools}"
    );
}
