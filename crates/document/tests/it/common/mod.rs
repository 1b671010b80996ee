//! The documents the tests read, written by real writers (python-docx, python-pptx, openpyxl,
//! reportlab, xlwt, odfpy) through `tests/documents/make_fixtures.py`, once per version of the
//! script into the target folder. The Python comes from `HANDS_DOC_PYTHON`, else the venv
//! `.ci/run` makes (`$HOME/.cache/hands-docs-venv`). Without it a test fails under CI and is
//! skipped loudly elsewhere.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

pub const SCRIPT: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/documents/make_fixtures.py");

fn python() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("HANDS_DOC_PYTHON") {
        return Some(PathBuf::from(p));
    }
    let venv = PathBuf::from(std::env::var_os("HOME")?).join(".cache/hands-docs-venv/bin/python");
    venv.exists().then_some(venv)
}

/// The folder of fixtures, made if needed; `None` (skip) without the writers outside CI.
pub fn fixtures() -> Option<PathBuf> {
    let Some(python) = python() else {
        if std::env::var_os("CI").is_some() {
            panic!(
                "the document writers are not installed: .ci/run makes $HOME/.cache/hands-docs-venv from tests/documents/requirements.txt (or set HANDS_DOC_PYTHON)"
            );
        }
        eprintln!(
            "SKIPPED: no Python with the document writers (python -m venv ~/.cache/hands-docs-venv && ~/.cache/hands-docs-venv/bin/pip install -r tests/documents/requirements.txt)"
        );
        return None;
    };
    let script = std::fs::read(SCRIPT).unwrap();
    let hash = script
        .iter()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
    let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let dir = base.join(format!("doc-fixtures-{hash:016x}"));
    if dir.join("done").exists() {
        return Some(dir);
    }
    let tmp = tempfile::Builder::new().prefix("doc-fixtures-").tempdir_in(base).unwrap();
    let out = std::process::Command::new(&python).arg(SCRIPT).arg(tmp.path()).output().unwrap();
    assert!(out.status.success(), "make_fixtures.py: {}", String::from_utf8_lossy(&out.stderr));
    std::fs::write(tmp.path().join("done"), "").unwrap();
    let made = tmp.keep();
    // Another test process may have won the race: its folder is as good.
    if std::fs::rename(&made, &dir).is_err() {
        let _ = std::fs::remove_dir_all(&made);
    }
    Some(dir)
}
