//! TypeScript through the real typescript-language-server: an edit that breaks a type shows the
//! error in the edit's own result, fixing it says so (and repeats nothing), and navigation finds
//! definitions, references, hover types and symbols across files.

use serde_json::json;

use crate::common::{Project, config_with, lsp_bin, notices};

const TSCONFIG: &str = r#"{ "compilerOptions": { "strict": true, "target": "ES2020", "module": "ESNext", "moduleResolution": "Bundler", "noEmit": true }, "include": ["src"] }"#;
const UTIL: &str =
    "export function formatPrice(cents: number): string {\n  return (cents / 100).toFixed(2);\n}\n";
const APP: &str = "import { formatPrice } from \"./util\";\n\nexport const total: string = formatPrice(1250);\nconsole.log(total);\n";

fn project() -> Option<Project> {
    let bin = lsp_bin()?;
    Some(Project::new(
        &[("tsconfig.json", TSCONFIG), ("src/util.ts", UTIL), ("src/app.ts", APP)],
        config_with(&bin),
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_type_shows_in_the_edits_own_result_and_its_fix_clears_it() {
    let Some(p) = project() else { return };
    let edit =
        |old: &str, new: &str| json!({"path": "src/app.ts", "old_string": old, "new_string": new});
    let broken = p.call("edit_file", edit("formatPrice(1250)", "formatPrice(\"1250\")")).await;
    assert!(!broken.is_error, "{}", broken.joined_text());
    let said = notices(&broken);
    assert!(said.contains("1 new error from the TypeScript language server"), "{said}");
    assert!(
        said.contains("src/app.ts:3:42: Argument of type 'string' is not assignable"),
        "{said}"
    );
    assert!(said.contains("[2345]"), "{said}");
    assert!(broken.notices.iter().all(|n| n.kind == hands_core::NoticeKind::Diagnostics));

    // Another edit that leaves the old error alone does not repeat it.
    let other = p.call("edit_file", edit("console.log(total);", "console.log(total, 1);")).await;
    assert!(!notices(&other).contains("2345"), "repeated: {}", notices(&other));

    let fixed = p.call("edit_file", edit("formatPrice(\"1250\")", "formatPrice(1250)")).await;
    let said = notices(&fixed);
    assert!(said.contains("src/app.ts: 1 error fixed, no errors now"), "{said}");
    assert!(!said.contains("2345"), "{said}");

    let all = p.call("diagnostics", json!({})).await;
    assert!(!all.is_error, "{}", all.joined_text());
    assert_eq!(all.structured.as_ref().unwrap()["total"], 0, "{}", all.joined_text());
    // Which servers were found: TypeScript runs; Python's is configured but not started.
    let text = all.joined_text();
    assert!(
        text.contains("Language servers: TypeScript running, Python not started, Rust "),
        "{text}"
    );
    let found = &all.structured.as_ref().unwrap()["found"];
    assert_eq!(
        (found[0]["language"].as_str(), found[0]["state"].as_str()),
        (Some("typescript"), Some("running"))
    );
    p.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_that_breaks_another_file_reports_it_and_diagnostics_lists_it() {
    let Some(p) = project() else { return };
    // Open app.ts first, so that its errors have a baseline.
    let clean = p.call("diagnostics", json!({"path": "src"})).await;
    assert_eq!(clean.structured.as_ref().unwrap()["total"], 0, "{}", clean.joined_text());
    assert_eq!(clean.structured.as_ref().unwrap()["files"], 2);
    let util = UTIL.replace("cents: number", "cents: string");
    p.call("read_file", json!({"path": "src/util.ts"})).await;
    let out = p.call("write_file", json!({"path": "src/util.ts", "content": util})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    let said = notices(&out);
    assert!(said.contains("src/app.ts:3:42"), "the caller's new error: {said}");
    let listed = p.call("diagnostics", json!({"path": "src/app.ts"})).await;
    let text = listed.joined_text();
    assert!(text.contains("1 problem in 1 file checked:"), "{text}");
    assert!(
        text.contains("src/app.ts:3:42: Argument of type 'number' is not assignable"),
        "{text}"
    );
    let problem = &listed.structured.as_ref().unwrap()["problems"][0];
    assert_eq!((problem["line"].as_u64(), problem["code"].as_str()), (Some(3), Some("2345")));
    p.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn definition_references_hover_and_symbols_across_files() {
    let Some(p) = project() else { return };
    // `formatPrice` in app.ts line 3, column 30 (its first character).
    let at = json!({"action": "definition", "path": "src/app.ts", "line": 3, "column": 30});
    let def = p.call("code_navigation", at).await;
    assert!(!def.is_error, "{}", def.joined_text());
    let text = def.joined_text();
    assert!(text.starts_with("src/util.ts:1:17: export function formatPrice"), "{text}");
    let s = def.structured.as_ref().unwrap();
    assert_eq!(
        (s["results"][0]["path"].as_str(), s["results"][0]["line"].as_u64()),
        (Some("src/util.ts"), Some(1))
    );

    let by_name = json!({"action": "references", "path": "src/util.ts", "symbol": "formatPrice"});
    let refs = p.call("code_navigation", by_name).await;
    let text = refs.joined_text();
    assert!(text.contains("src/util.ts:1:17:"), "{text}");
    assert!(text.contains("src/app.ts:1:10: import { formatPrice }"), "{text}");
    assert!(text.contains("src/app.ts:3:30:"), "{text}");
    assert_eq!(refs.structured.as_ref().unwrap()["total"], 3, "{text}");

    let hover = json!({"action": "hover", "path": "src/app.ts", "line": 3, "column": 14});
    let hover = p.call("code_navigation", hover).await;
    assert!(hover.joined_text().contains("const total: string"), "{}", hover.joined_text());

    let outline = json!({"action": "document_symbols", "path": "src/util.ts"});
    let outline = p.call("code_navigation", outline).await;
    assert!(outline.joined_text().contains("function formatPrice"), "{}", outline.joined_text());

    let search = json!({"action": "workspace_symbols", "symbol": "formatPrice"});
    let search = p.call("code_navigation", search).await;
    assert!(
        search.joined_text().contains("src/util.ts:1:1: function formatPrice"),
        "{}",
        search.joined_text()
    );

    let capped =
        json!({"action": "references", "path": "src/util.ts", "symbol": "formatPrice", "limit": 1});
    let capped = p.call("code_navigation", capped).await;
    let s = capped.structured.as_ref().unwrap();
    assert_eq!((s["results"].as_array().unwrap().len(), s["truncated"].as_bool()), (1, Some(true)));
    assert!(capped.joined_text().contains("[1 of 3 shown"), "{}", capped.joined_text());
    p.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_a_clear_error() {
    let Some(p) = project() else { return };
    let outside = p
        .call(
            "code_navigation",
            json!({"action": "hover", "path": "../x.ts", "line": 1, "column": 1}),
        )
        .await;
    assert!(outside.is_error, "{}", outside.joined_text());
    let markdown = p
        .call("code_navigation", json!({"action": "document_symbols", "path": "tsconfig.json"}))
        .await;
    assert!(
        markdown.joined_text().contains("not a file of a language with a server"),
        "{}",
        markdown.joined_text()
    );
    let nowhere =
        p.call("code_navigation", json!({"action": "definition", "path": "src/app.ts"})).await;
    assert!(
        nowhere.joined_text().contains("give `line` and `column`"),
        "{}",
        nowhere.joined_text()
    );
    p.close().await;
}
