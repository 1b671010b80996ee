//! repo_map through a real registry (the standard middleware) over real folders: a generated
//! 2,000-file repository fits a 2,000-token budget with its most-used definitions first and is
//! answered from the cache the second time; hands' own core crate maps with its central types on
//! top; focus, budgets, bad arguments, escapes, symlinks, huge and binary files.

use std::path::Path;

use hands_core::{CoreConfig, Registry, Session, ToolCall, ToolOutput};
use serde_json::{Value, json};

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn registry() -> Registry {
    hands_repomap::register(Registry::builder(CoreConfig::default()), &Default::default()).build()
}

async fn call(registry: &Registry, session: &Session, args: Value) -> ToolOutput {
    registry.dispatch(session, ToolCall::new("c1", "repo_map", args)).await.unwrap()
}

fn shown_names(out: &ToolOutput) -> Vec<String> {
    let s = out.structured.as_ref().expect("a structured result");
    let mut ranked = Vec::new();
    for file in s["files"].as_array().unwrap() {
        for def in file["definitions"].as_array().unwrap() {
            ranked.push(def["name"].as_str().unwrap().to_owned());
        }
    }
    ranked
}

/// A TypeScript repository of `files` modules: `src/core/store.ts` defines `createStore`, used by
/// every module; `src/core/log.ts` defines `logEvent`, used by every tenth; each module defines
/// `handler<N>` and `Model<N>`, used by nobody else.
fn generated_repo(root: &Path, files: usize) {
    write(
        &root.join("src/core/store.ts"),
        "export interface StoreOptions { name: string }\nexport function createStore(o: StoreOptions) { return o; }\n",
    );
    write(
        &root.join("src/core/log.ts"),
        "export function logEvent(e: string) { console.log(e); }\n",
    );
    for i in 0..files {
        let log = if i % 10 == 0 { "logEvent('x');\n" } else { "" };
        write(
            &root.join(format!("src/features/f{}/mod{i}.ts", i / 100)),
            &format!(
                "import {{ createStore }} from '../../core/store';\nexport class Model{i} {{ id = {i}; }}\nexport function handler{i}() {{\n  const s = createStore({{ name: 'm{i}' }});\n  {log}  return new Model{i}();\n}}\n"
            ),
        );
    }
    write(&root.join("README.md"), "# generated\n");
}

#[tokio::test]
async fn a_2000_file_repository_fits_its_budget_most_used_first_and_is_cached() {
    let tmp = tempfile::tempdir().unwrap();
    generated_repo(tmp.path(), 2000);
    let registry = registry();
    let session = Session::new("s1", tmp.path());
    let out = call(&registry, &session, json!({"max_tokens": 2000})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    let text = out.joined_text();
    let s = out.structured.clone().unwrap();
    assert_eq!(s["source_files"], 2002, "{s}");
    assert_eq!(s["other_files"], 1);
    assert_eq!(s["definitions"], 2 * 2000 + 3);
    assert_eq!(s["truncated"], true);
    assert!(text.len() <= 2000 * 27 / 10, "the text is {} bytes, over the budget", text.len());
    assert!(s["tokens"].as_u64().unwrap() <= 2000);
    let names = shown_names(&out);
    // Files come in the order of their best definition, definitions by line within a file.
    let first = &s["files"][0];
    assert_eq!(first["path"], "src/core/store.ts", "the most-used definition's file comes first");
    assert_eq!(first["definitions"][1]["name"], "createStore");
    assert_eq!(first["definitions"][1]["referenced_by"], 2000);
    assert_eq!(s["files"][1]["path"], "src/core/log.ts", "{s}");
    assert_eq!(s["files"][1]["definitions"][0]["referenced_by"], 200);
    assert!(text.contains("\n  2│export function createStore("), "{text}");
    // Parsed once: the second call reads everything from the cache.
    assert_eq!(s["parsed"], 2002);
    let again = call(&registry, &session, json!({"max_tokens": 2000})).await;
    assert_eq!(again.structured.as_ref().unwrap()["parsed"], 0);
    assert_eq!(shown_names(&again), names);
    // A changed file is parsed again, and only it.
    write(
        &tmp.path().join("src/core/log.ts"),
        "export function logEvent(e: string, n: number) {}\n",
    );
    let changed = call(&registry, &session, json!({"max_tokens": 2000})).await;
    assert_eq!(changed.structured.as_ref().unwrap()["parsed"], 1);
    assert!(changed.joined_text().contains("logEvent(e: string, n: number)"));
}

#[tokio::test]
async fn the_budget_bounds_the_answer_and_a_bigger_one_shows_more() {
    let tmp = tempfile::tempdir().unwrap();
    generated_repo(tmp.path(), 300);
    let registry = registry();
    let session = Session::new("s1", tmp.path());
    let small = call(&registry, &session, json!({"max_tokens": 200})).await;
    let big = call(&registry, &session, json!({"max_tokens": 8000})).await;
    let (small_n, big_n) = (shown_names(&small).len(), shown_names(&big).len());
    assert!(small.joined_text().len() <= 540, "{}", small.joined_text().len());
    assert!(big.joined_text().len() <= 21_600);
    assert!(small_n >= 1 && small_n < big_n, "{small_n} vs {big_n}");
    assert!(small.joined_text().contains("Raise max_tokens"));
    for bad in [json!({"max_tokens": 5}), json!({"max_tokens": 1_000_000})] {
        let out = call(&registry, &session, bad).await;
        assert!(out.is_error);
        assert!(out.joined_text().contains("`max_tokens` must be between 100 and 32000"));
    }
    let out = call(&registry, &session, json!({"max_tokens": "many"})).await;
    assert!(out.is_error, "{}", out.joined_text());
}

#[tokio::test]
async fn focus_ranks_what_the_focused_file_uses_first() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    write(&root.join("lib/popular.py"), "def popular_helper():\n    pass\n");
    write(&root.join("lib/niche.py"), "def niche_helper():\n    pass\n");
    for i in 0..5 {
        write(
            &root.join(format!("app/u{i}.py")),
            "from lib.popular import popular_helper\npopular_helper()\n",
        );
    }
    write(&root.join("app/focus.py"), "from lib.niche import niche_helper\nniche_helper()\n");
    let registry = registry();
    let session = Session::new("s1", root);
    let plain = call(&registry, &session, json!({})).await;
    assert_eq!(plain.structured.as_ref().unwrap()["files"][0]["path"], "lib/popular.py");
    let focused = call(&registry, &session, json!({"focus": ["app/focus.py"]})).await;
    let s = focused.structured.as_ref().unwrap();
    assert_eq!(s["files"][0]["path"], "lib/niche.py", "{}", focused.joined_text());
    let out = call(&registry, &session, json!({"focus": ["README.md"]})).await;
    assert!(out.is_error);
    assert!(out.joined_text().contains("is not a source file under the mapped folder"));
}

#[tokio::test]
async fn hands_own_core_crate_maps_with_its_central_types_on_top() {
    let core = Path::new(env!("CARGO_MANIFEST_DIR")).join("../core");
    let registry = registry();
    let session = Session::new("s1", &core);
    let out = call(&registry, &session, json!({"path": "src", "max_tokens": 2000})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    let names = shown_names(&out);
    let top: Vec<&str> = names.iter().take(40).map(String::as_str).collect();
    for central in ["ToolOutput", "Session", "ToolError"] {
        assert!(top.contains(&central), "{central} is not among the top definitions: {top:?}");
    }
    let s = out.structured.unwrap();
    assert!(s["source_files"].as_u64().unwrap() > 30, "{s}");
    assert_eq!(s["languages"]["rust"], s["source_files"]);
}

#[tokio::test]
async fn escapes_symlinks_huge_and_binary_files() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("project");
    write(&root.join("src/ok.rs"), "pub fn ok_function() {}\n");
    write(&tmp.path().join("outside/secret.rs"), "pub fn outside_secret() {}\n");
    std::os::unix::fs::symlink(tmp.path().join("outside/secret.rs"), root.join("src/link.rs"))
        .unwrap();
    std::os::unix::fs::symlink(tmp.path().join("outside"), root.join("outdir")).unwrap();
    write(&root.join("src/huge.rs"), &"// filler line of a generated file\n".repeat(40_000));
    std::fs::write(root.join("src/blob.py"), [0u8, 159, 146, 150, 0xff, 0xfe, 0, 0]).unwrap();
    write(&root.join("node_modules/dep/index.js"), "export function from_dependency() {}\n");
    write(&root.join(".gitignore"), "ignored/\n");
    write(&root.join("ignored/gen.rs"), "pub fn ignored_function() {}\n");
    let registry = registry();
    let session = Session::new("s1", &root);
    let out = call(&registry, &session, json!({})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    let text = out.joined_text();
    for absent in ["outside_secret", "from_dependency", "ignored_function"] {
        assert!(!text.contains(absent), "{absent} leaked into the map: {text}");
    }
    assert!(text.contains("ok_function"));
    assert!(text.contains("src/huge.rs (larger than 1024 KiB)"), "{text}");
    let s = out.structured.unwrap();
    assert_eq!(s["skipped"][0]["path"], "src/huge.rs");
    for path in ["../outside", "/etc", "outdir"] {
        let out = call(&registry, &session, json!({"path": path})).await;
        assert!(out.is_error, "{path}: {}", out.joined_text());
    }
    let out = call(&registry, &session, json!({"path": "src/ok.rs"})).await;
    assert_eq!(shown_names(&out), ["ok_function"]);
    let empty = tmp.path().join("empty");
    write(&empty.join("notes.txt"), "nothing to map\n");
    let out = call(&registry, &Session::new("s2", &empty), json!({})).await;
    assert!(!out.is_error);
    assert!(
        out.joined_text()
            .starts_with("No source files to map under the project root (1 other files).")
    );
}

/// Red-team round 3: a signature was cut to 160 characters before the registry redacted the
/// result, so a stored secret straddling the cut came back but for its tail.
#[tokio::test]
async fn a_secret_at_the_cut_of_a_signature_is_redacted_whole() {
    const SECRET: &str = "CANARY_77aa11bb_VAL";
    // The slot is process-wide; nextest runs each test in its own process.
    hands_core::redact::install(std::sync::Arc::new(hands_core::redact::Literals(vec![(
        "MY_KEY".into(),
        SECRET.into(),
    )])));
    let tmp = tempfile::tempdir().unwrap();
    // The secret starts at character 144 of the line: the cut at 160 would keep 15 of its 19.
    let pad = "x".repeat(115);
    write(
        &tmp.path().join("src/lib.py"),
        &format!("def connect(padding='{pad}', key='{SECRET}'):\n    pass\n"),
    );
    let out = call(&registry(), &Session::new("s1", tmp.path()), json!({})).await;
    let text = out.joined_text();
    assert!(text.contains("def connect("), "{text}");
    for cut in 8..=SECRET.len() {
        assert!(!text.contains(&SECRET[..cut]), "{} characters of the secret: {text}", cut);
        let s = out.structured.as_ref().unwrap().to_string();
        assert!(!s.contains(&SECRET[..cut]), "{cut}: {s}");
    }
}
