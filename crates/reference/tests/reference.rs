//! reference_project through a real registry (the fs tools and reference_project, the standard
//! middleware) over real folders: each op reads the other root, never the session's; secret files
//! are refused by name, through a symlink, and are absent from listings, globs and greps; escapes
//! by `..`, absolute paths and symlinks out are refused; an unknown name lists the known ones.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;

use hands_core::{CoreConfig, Registry, Session, ToolCall, ToolOutput};
use serde_json::{Value, json};

struct Fixture {
    _tmp: tempfile::TempDir,
    registry: Registry,
    session: Session,
    other: std::path::PathBuf,
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let own = tmp.path().join("own");
    let other = tmp.path().join("other");
    write(&own.join("src/main.ts"), "export const ownMarker = 1;\n");
    write(&other.join("src/client.ts"), "export function createClient() {\n  return 42;\n}\n");
    write(&other.join("README.md"), "# other\ncreateClient is documented here\n");
    write(&other.join(".env"), "API_TOKEN=createClient-env-value\n");
    write(&other.join(".env.local"), "LOCAL=createClient-local\n");
    write(&other.join("certs/server.pem"), "createClient pem\n");
    write(&other.join("deploy.key"), "createClient key\n");
    write(&other.join(".git/config"), "[core]\n# createClient git\n");
    write(&tmp.path().join("outside.txt"), "createClient outside\n");
    std::os::unix::fs::symlink(".env", other.join("notes.txt")).unwrap();
    std::os::unix::fs::symlink("certs", other.join("keys-link")).unwrap();
    std::os::unix::fs::symlink(tmp.path().join("outside.txt"), other.join("out.txt")).unwrap();
    std::os::unix::fs::symlink(tmp.path().join("own"), other.join("own-link")).unwrap();
    let mut projects = BTreeMap::new();
    projects.insert("other".to_owned(), other.clone());
    projects.insert("second".to_owned(), tmp.path().join("missing"));
    let builder = Registry::builder(CoreConfig::default());
    let builder = hands_fs::register(builder, &Default::default());
    let registry = hands_reference::register(builder, &projects, &Default::default()).build();
    let session = Session::new("s1", &own);
    Fixture { _tmp: tmp, registry, session, other }
}

async fn call(f: &Fixture, args: Value) -> ToolOutput {
    let call = ToolCall::new("c1", "reference_project", args);
    f.registry.dispatch(&f.session, call).await.unwrap()
}

#[tokio::test]
async fn every_op_reads_the_other_root() {
    let f = fixture();
    let out = call(&f, json!({"project": "other", "op": "read", "path": "src/client.ts"})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    let text = out.joined_text();
    assert!(text.starts_with("reference project `other` (read):"), "{text}");
    assert!(text.contains("1\texport function createClient()"), "{text}");
    assert!(out.structured.is_none());

    let out = call(&f, json!({"project": "other", "op": "list"})).await;
    let text = out.joined_text();
    assert!(text.contains("src/") && text.contains("README.md"), "{text}");

    let out = call(&f, json!({"project": "other", "op": "glob", "pattern": "**/*.ts"})).await;
    let text = out.joined_text();
    assert!(text.contains("src/client.ts") && !text.contains("main.ts"), "{text}");

    let out = call(&f, json!({"project": "other", "op": "grep", "pattern": "createClient"})).await;
    let text = out.joined_text();
    assert!(text.contains("src/client.ts:1:") && text.contains("README.md:2:"), "{text}");

    let out = call(&f, json!({"project": "other", "op": "grep", "pattern": "ownMarker"})).await;
    assert!(!out.joined_text().contains("main.ts"), "{}", out.joined_text());
}

#[tokio::test]
async fn secret_files_are_refused_and_never_listed_or_searched() {
    let f = fixture();
    for path in [
        ".env",
        ".env.local",
        "certs/server.pem",
        "deploy.key",
        ".git/config",
        "notes.txt",
        "keys-link/server.pem",
    ] {
        let out = call(&f, json!({"project": "other", "op": "read", "path": path})).await;
        let text = out.joined_text();
        assert!(out.is_error, "{path}: {text}");
        assert!(text.contains("is hidden here"), "{path}: {text}");
        assert!(!text.contains("createClient-"), "{path}: {text}");
    }
    let out = call(&f, json!({"project": "other", "op": "list", "depth": 5})).await;
    let text = out.joined_text();
    for name in [".env", "server.pem", "deploy.key", ".git"] {
        assert!(!text.contains(name), "{name} listed: {text}");
    }
    for pattern in ["*", ".env*", "**/*.pem", "*.key", "**/config"] {
        let out = call(
            &f,
            json!({"project": "other", "op": "glob", "pattern": pattern, "include_ignored": true}),
        )
        .await;
        let text = out.joined_text();
        for name in [".env.local", "certs/server.pem", "deploy.key", ".git/config"] {
            assert!(!text.contains(name), "{pattern}: {name} globbed: {text}");
        }
        assert!(!text.lines().any(|l| l.trim() == ".env"), "{pattern}: {text}");
    }
    let out = call(
        &f,
        json!({"project": "other", "op": "grep", "pattern": "createClient", "include_ignored": true}),
    )
    .await;
    let text = out.joined_text();
    for leak in ["env-value", "local", "pem", "key", "git", "outside"] {
        assert!(!text.contains(&format!("createClient {leak}")), "{leak}: {text}");
    }
    assert!(!text.contains("createClient-"), "{text}");
    for path in [".git", "certs/server.pem"] {
        let out =
            call(&f, json!({"project": "other", "op": "grep", "pattern": "x", "path": path})).await;
        assert!(out.is_error && out.joined_text().contains("is hidden here"), "{path}");
    }
}

#[tokio::test]
async fn escapes_are_refused() {
    let f = fixture();
    let outside = f.other.parent().unwrap().join("outside.txt");
    for path in ["../outside.txt", "../own/src/main.ts", outside.to_str().unwrap(), "out.txt"] {
        let out = call(&f, json!({"project": "other", "op": "read", "path": path})).await;
        let text = out.joined_text();
        assert!(out.is_error, "{path}: {text}");
        assert!(!text.contains("createClient outside"), "{path}: {text}");
        assert!(text.contains("outside"), "{path}: {text}");
    }
    let out = call(&f, json!({"project": "other", "op": "list", "path": "own-link"})).await;
    assert!(out.is_error, "{}", out.joined_text());
    let out = call(&f, json!({"project": "other", "op": "glob", "pattern": "../*"})).await;
    assert!(out.is_error, "{}", out.joined_text());
}

#[tokio::test]
async fn bad_names_and_fields_say_what_to_do() {
    let f = fixture();
    let out = call(&f, json!({"project": "nope", "op": "list"})).await;
    let text = out.joined_text();
    assert!(out.is_error && text.contains("no reference project named `nope`"), "{text}");
    assert!(text.contains("`other`, `second`"), "{text}");
    let out = call(&f, json!({"project": "second", "op": "list"})).await;
    assert!(out.is_error && out.joined_text().contains("not a folder"), "{}", out.joined_text());
    let out = call(&f, json!({"project": "other", "op": "read", "path": "a", "depth": 1})).await;
    assert!(out.joined_text().contains("`depth` does not apply to op `read`"));
    let out = call(&f, json!({"project": "other", "op": "write", "path": "a"})).await;
    assert!(out.is_error && out.joined_text().contains("op"), "{}", out.joined_text());
    let spec = f.registry.get("reference_project").unwrap().spec().clone();
    assert!(spec.description.contains("Reference projects: `other`, `second`."));
    assert!(spec.policy.offered(hands_core::Mode::Plan) && spec.policy.subagent);
}
