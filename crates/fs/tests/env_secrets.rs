#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The `.env` round trip: read_file of `.env` shows `[secret:NAME]` (the redaction step), and
//! write_file / edit_file turn the placeholders back into the values granted to the project in
//! `.env*` files only; a secret not granted, or a placeholder in new text of any other file, is
//! refused with nothing written.

mod common;

use std::path::Path;
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
            json!({"path": ".env.production", "content": "X=[secret:OPENAI_API_KEY]\n"}),
        )
        .await;
    assert!(err.contains("no secret OPENAI_API_KEY is granted to this project"), "{err}");
    assert!(err.contains("hands secrets set OPENAI_API_KEY"), "{err}");
    assert!(err.contains("STRIPE_SECRET_KEY, DATABASE_URL"), "lists the granted ones: {err}");
    assert!(!p.path(".env.production").exists());
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
