#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The `.env` round trip: read_file of `.env` shows `[secret:NAME]` (the redaction step), and
//! write_file / edit_file turn the placeholders back into the values granted to the project in
//! `.env*` files only; a secret not granted, or a placeholder in new text of any other file, is
//! refused with nothing written. Values go only into env files git ignores (issue 26, item 5):
//! never into a template (`.env.example`), a script (`.envrc`), a served folder (`public/`), a
//! file git tracks, or one no ignore rule covers.

use crate::common;

use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Once};

use common::Project;
use hands_core::env::{ChildEnv, SecretEnv};
use hands_core::redact::{self, Literals};
use serde_json::json;

const STRIPE: &str = "sk_test_canary_6b2e91f0";
const DB: &str = "postgres://u:canary-pw-77@db/x";

/// Grants both secrets to every project (the store's scoping is tested in hands-secrets).
struct Granted;

impl SecretEnv for Granted {
    fn names(&self) -> Vec<String> {
        vec!["STRIPE_SECRET_KEY".into(), "DATABASE_URL".into()]
    }

    fn granted(&self, _root: &Path) -> Vec<(String, String)> {
        vec![("STRIPE_SECRET_KEY".into(), STRIPE.into()), ("DATABASE_URL".into(), DB.into())]
    }
}

fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        ChildEnv::set_secrets(Arc::new(Granted));
        redact::install(Arc::new(Literals(vec![
            ("STRIPE_SECRET_KEY".into(), STRIPE.into()),
            ("DATABASE_URL".into(), DB.into()),
        ])));
    });
}

fn project() -> Project {
    install();
    let p = Project::new();
    p.put(".env", format!("STRIPE_SECRET_KEY={STRIPE}\nDATABASE_URL={DB}\nPORT=3000\n"));
    p
}

fn file(p: &Project, rel: &str) -> String {
    String::from_utf8(p.get(rel)).unwrap()
}

#[tokio::test]
async fn an_edit_of_env_keeps_the_keys_it_was_shown_as_placeholders() {
    let p = project();
    let shown = p.ok("read_file", json!({"path": ".env"})).await;
    assert!(!shown.contains(STRIPE) && !shown.contains("canary-pw"), "{shown}");
    assert!(shown.contains("STRIPE_SECRET_KEY=[secret:STRIPE_SECRET_KEY]"), "{shown}");
    let out = p
        .ok(
            "edit_file",
            json!({"path": ".env",
                   "old_string": "DATABASE_URL=[secret:DATABASE_URL]\nPORT=3000",
                   "new_string": "DATABASE_URL=[secret:DATABASE_URL]\nPORT=4000"}),
        )
        .await;
    assert!(!out.contains("canary"), "the diff is redacted: {out}");
    assert_eq!(
        file(&p, ".env"),
        format!("STRIPE_SECRET_KEY={STRIPE}\nDATABASE_URL={DB}\nPORT=4000\n")
    );
    // The whole file written back as it was shown keeps the values too.
    let content =
        "STRIPE_SECRET_KEY=[secret:STRIPE_SECRET_KEY]\nDATABASE_URL=[secret:DATABASE_URL]\n";
    p.ok("write_file", json!({"path": ".env.local", "content": content})).await;
    assert_eq!(file(&p, ".env.local"), format!("STRIPE_SECRET_KEY={STRIPE}\nDATABASE_URL={DB}\n"));
}

#[tokio::test]
async fn a_secret_not_granted_is_a_clear_error_and_nothing_is_written() {
    let p = project();
    let err = p
        .err(
            "write_file",
            json!({"path": ".env.production.local", "content": "X=[secret:OPENAI_API_KEY]\n"}),
        )
        .await;
    assert!(err.contains("no secret OPENAI_API_KEY is granted to this project"), "{err}");
    assert!(err.contains("hands secrets set OPENAI_API_KEY"), "{err}");
    assert!(err.contains("STRIPE_SECRET_KEY, DATABASE_URL"), "lists the granted ones: {err}");
    assert!(!p.path(".env.production.local").exists());
}

#[tokio::test]
async fn a_placeholder_in_source_code_is_refused_with_the_environment_read_to_use() {
    let p = project();
    let err = p
        .err(
            "write_file",
            json!({"path": "src/pay.js", "content": "const key = '[secret:STRIPE_SECRET_KEY]';\n"}),
        )
        .await;
    assert!(err.contains("process.env.STRIPE_SECRET_KEY"), "{err}");
    assert!(err.contains("os.environ[\"STRIPE_SECRET_KEY\"]"), "{err}");
    assert!(err.contains("Nothing was written"), "{err}");
    assert!(!p.path("src/pay.js").exists());
    // A key hard-coded in source: the placeholder finds it (old_string) but may not be written
    // back (new_string); replacing it with an environment read works.
    p.put("pay.js", format!("const key = '{STRIPE}';\n"));
    p.ok("read_file", json!({"path": "pay.js"})).await;
    let err = p
        .err(
            "edit_file",
            json!({"path": "pay.js", "old_string": "const key = '[secret:STRIPE_SECRET_KEY]';",
                   "new_string": "const key = \"[secret:STRIPE_SECRET_KEY]\";"}),
        )
        .await;
    assert!(err.contains("process.env.STRIPE_SECRET_KEY"), "{err}");
    assert_eq!(file(&p, "pay.js"), format!("const key = '{STRIPE}';\n"));
    p.ok(
        "edit_file",
        json!({"path": "pay.js", "old_string": "'[secret:STRIPE_SECRET_KEY]'",
               "new_string": "process.env.STRIPE_SECRET_KEY"}),
    )
    .await;
    assert_eq!(file(&p, "pay.js"), "const key = process.env.STRIPE_SECRET_KEY;\n");
}

const LINE: &str = "STRIPE_SECRET_KEY=[secret:STRIPE_SECRET_KEY]\n";

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Writes `LINE` to `rel` with write_file and with edit_file; true when the value went in, false
/// when both were refused (and then nothing was written, and the error says why).
async fn expands(p: &Project, rel: &str) -> bool {
    let before = std::fs::read(p.path(rel)).ok();
    let out = p.call("write_file", json!({"path": rel, "content": LINE})).await;
    if out.is_error {
        let err = out.joined_text();
        assert!(err.contains("Nothing was written"), "{rel}: {err}");
        assert!(err.contains("process.env.STRIPE_SECRET_KEY"), "{rel}: {err}");
        assert_eq!(std::fs::read(p.path(rel)).ok(), before, "{rel} unchanged");
        // edit_file of an existing file is refused too, and leaves it as it was.
        p.put(rel, "STRIPE_SECRET_KEY=old\n");
        let out = p
            .call(
                "edit_file",
                json!({"path": rel, "old_string": "=old", "new_string": "=[secret:STRIPE_SECRET_KEY]"}),
            )
            .await;
        assert!(out.is_error, "{rel}: edit_file expanded where write_file did not");
        assert_eq!(file(p, rel), "STRIPE_SECRET_KEY=old\n");
        return false;
    }
    assert_eq!(file(p, rel), format!("STRIPE_SECRET_KEY={STRIPE}\n"), "{rel}");
    true
}

#[tokio::test]
async fn outside_a_git_repository_only_local_env_names_get_values() {
    let p = project().one_shot();
    for rel in [".env", ".env.local", ".env.development.local", "app/.env.test.local"] {
        assert!(expands(&p, rel).await, "{rel}");
    }
    for rel in [
        ".env.example",
        ".env.sample",
        ".env.template",
        ".envrc",
        ".env.js",
        ".env.production",
        ".env.development",
        "public/.env",
        "public/.env.js",
        "static/.env.local",
        "dist/.env",
        "env.local",
    ] {
        assert!(!expands(&p, rel).await, "{rel}");
    }
}

#[tokio::test]
async fn in_a_git_repository_only_ignored_untracked_env_files_get_values() {
    let p = project().one_shot();
    let root = p.tmp.path();
    git(root, &["init", "-q"]);
    p.put(".gitignore", ".env*\n!.env.example\npublic/\nconfig/\n!config/.env.staging\n");
    p.put(".git/info/exclude", ".envfiles/\n");
    p.put("sub/.gitignore", "!.env.qa\n");
    // Committed on purpose, though the rules ignore it: a tracked file is committed whatever
    // .gitignore says.
    p.put(".env.production", "STRIPE_SECRET_KEY=old\n");
    git(root, &["add", "-f", ".env.production"]);
    // config/ is ignored, so its files are, whatever `!config/.env.staging` says: git cannot
    // re-include a file whose folder is excluded.
    for rel in [
        ".env",
        ".env.local",
        ".env.development",
        ".env.test",
        "sub/.env.staging",
        "config/.env.staging",
    ] {
        assert!(expands(&p, rel).await, "{rel}");
    }
    for rel in [
        // Named by a re-including rule.
        ".env.example",
        "sub/.env.qa",
        // Tracked.
        ".env.production",
        // Templates and scripts, even when ignored.
        ".env.sample",
        ".env.template",
        ".envrc",
        ".env.js",
        // In a served folder, even when ignored.
        "public/.env",
        "public/.env.js",
    ] {
        assert!(!expands(&p, rel).await, "{rel}");
    }
    // Ignored through .git/info/exclude only.
    p.put(".gitignore", "");
    assert!(!expands(&p, ".env.ci").await, "no rule ignores it now");
    p.put(".git/info/exclude", ".env.ci\n");
    assert!(expands(&p, ".env.ci").await, "ignored by .git/info/exclude");
}

#[tokio::test]
async fn a_project_inside_a_repository_follows_the_rules_above_it() {
    install();
    let top = tempfile::tempdir().unwrap();
    git(top.path(), &["init", "-q"]);
    std::fs::write(top.path().join(".gitignore"), ".env.development\n").unwrap();
    let app = top.path().join("app");
    std::fs::create_dir(&app).unwrap();
    let registry = hands_fs::register_with(
        hands_core::Registry::builder(Default::default()),
        &Default::default(),
        Default::default(),
    )
    .build();
    let session = hands_core::Session::new("nested", &app);
    let write = |rel: &str| {
        let call = hands_core::ToolCall::new(
            session.next_call_id(),
            "write_file",
            json!({"path": rel, "content": LINE}),
        );
        registry.dispatch(&session, call)
    };
    assert!(!write(".env.development").await.unwrap().is_error);
    assert_eq!(
        std::fs::read_to_string(app.join(".env.development")).unwrap(),
        format!("STRIPE_SECRET_KEY={STRIPE}\n")
    );
    // Not ignored: refused, although the project itself has no .git of its own.
    assert!(write(".env.production").await.unwrap().is_error);
    assert!(!app.join(".env.production").exists());
}
