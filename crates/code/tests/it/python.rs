//! Python through the real pyright: a write that breaks a type shows the error.

use serde_json::json;

use crate::common::{Project, config_with, lsp_bin, notices};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pyright_reports_a_new_error_on_the_write() {
    let Some(bin) = lsp_bin() else { return };
    let p = Project::new(
        &[("pyproject.toml", "[project]\nname = \"demo\"\nversion = \"0\"\n")],
        config_with(&bin),
    );
    let code = "def double(n: int) -> int:\n    return n * 2\n\n\nx: str = double(2)\n";
    let out = p.call("write_file", json!({"path": "app/main.py", "content": code})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    let said = notices(&out);
    assert!(said.contains("from the Python language server"), "{said}");
    assert!(said.contains("app/main.py:5:10:"), "{said}");
    assert!(said.contains("reportAssignmentType") || said.contains("is not assignable"), "{said}");
    p.close().await;
}
