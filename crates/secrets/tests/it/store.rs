//! The store on disk: scopes and their precedence, validation, masked hints, private modes, atomic
//! files, and a change made by another process seen by the next read.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use hands_core::env::SecretEnv as _;
use hands_core::secret::{SecretError, SecretScope, SecretStore as _, SecretValue};
use hands_secrets::{Store, hint, project_scope};

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn scopes_grant_a_projects_own_and_the_global_secrets() {
    let tmp = tempfile::tempdir().unwrap();
    let (app, other) = (tmp.path().join("app"), tmp.path().join("other"));
    std::fs::create_dir_all(&app).unwrap();
    std::fs::create_dir_all(&other).unwrap();
    let store = Store::at(tmp.path().join("state/secrets"));
    let stored = store
        .put(&app, "STRIPE_SECRET_KEY", &SecretValue::new("sk_test_0123456789abcdef"))
        .unwrap();
    assert_eq!(stored.hint, "sk_t…cdef");
    assert_eq!(stored.scope, project_scope(&app));
    store
        .put_in(&SecretScope::Global, "SHARED_TOKEN", &SecretValue::new("global-value-1"))
        .unwrap();
    store
        .put_in(
            &SecretScope::Global,
            "STRIPE_SECRET_KEY",
            &SecretValue::new("sk_test_global_99999"),
        )
        .unwrap();

    // The project's value wins over the global one of the same name.
    assert_eq!(store.get(&app, "STRIPE_SECRET_KEY").unwrap().expose(), "sk_test_0123456789abcdef");
    assert_eq!(store.get(&other, "STRIPE_SECRET_KEY").unwrap().expose(), "sk_test_global_99999");
    assert_eq!(store.get(&other, "SHARED_TOKEN").unwrap().expose(), "global-value-1");
    let mut granted = store.granted(&app);
    granted.sort();
    assert_eq!(
        granted,
        vec![
            ("SHARED_TOKEN".into(), "global-value-1".into()),
            ("STRIPE_SECRET_KEY".into(), "sk_test_0123456789abcdef".into()),
        ]
    );
    assert_eq!(store.names(), vec!["SHARED_TOKEN".to_string(), "STRIPE_SECRET_KEY".to_string()]);
    assert_eq!(store.list(&app).len(), 2);
    assert_eq!(store.list_all().len(), 3);
    // The same root by another path is the same project.
    let dotted = app.join("..").join("app");
    assert!(store.get(&dotted, "STRIPE_SECRET_KEY").unwrap().expose().starts_with("sk_test_0123"));

    // Deleting the project's leaves the global one visible.
    assert!(store.delete(&app, "STRIPE_SECRET_KEY").unwrap());
    assert!(!store.delete(&app, "STRIPE_SECRET_KEY").unwrap());
    assert_eq!(store.get(&app, "STRIPE_SECRET_KEY").unwrap().expose(), "sk_test_global_99999");
}

#[test]
fn bad_names_and_values_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::at(tmp.path().join("secrets"));
    let value = SecretValue::new("long-enough-value");
    for name in ["lower", "A", "1ABC", "AB-C", "ÄBC", &"A".repeat(65)] {
        assert!(
            matches!(store.put(tmp.path(), name, &value), Err(SecretError::BadName(_))),
            "{name}"
        );
    }
    assert!(store.put(tmp.path(), &"A".repeat(64), &value).is_ok());
    assert_eq!(
        store.put(tmp.path(), "SHORT", &SecretValue::new("1234567")),
        Err(SecretError::TooShort)
    );
    let nul = store.put(tmp.path(), "NUL_VALUE", &SecretValue::new("abc\0defghij")).unwrap_err();
    assert!(nul.to_string().contains("NUL"), "{nul}");
    assert!(store.get(tmp.path(), "SHORT").is_none());
}

#[test]
fn hints_show_at_most_half_of_a_value() {
    assert_eq!(hint("sk_test_51Hx4f2a"), "sk_t…4f2a");
    assert_eq!(hint("12345678"), "12…78");
    assert_eq!(hint("123456789012"), "123…012");
    assert_eq!(hint("ééééçççç"), "éé…çç");
}

#[test]
fn files_are_private_and_written_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("state/hands/secrets");
    let store = Store::at(&dir);
    store.put_in(&SecretScope::Global, "API_TOKEN", &SecretValue::new("value-12345678")).unwrap();
    store.put(tmp.path(), "API_TOKEN", &SecretValue::new("value-87654321")).unwrap();
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&tmp.path().join("state/hands")), 0o700);
    let mut files = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        assert_eq!(mode(&path), 0o600, "{}", path.display());
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        assert!(!name.ends_with(".tmp"), "a temp file was left: {name}");
        if name.ends_with(".json") {
            files += 1;
            let json: serde_json::Value =
                serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            assert!(json["secrets"]["API_TOKEN"].is_string());
        }
    }
    assert_eq!(files, 2);
    // The last secret of a scope removes its file.
    store.delete_in(&SecretScope::Global, "API_TOKEN").unwrap();
    assert!(!dir.join("global.json").exists());
}

#[test]
fn a_change_by_another_process_is_seen_and_runs_the_hooks() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("secrets");
    let reader = Store::at(&dir);
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    reader.on_change(move |_| {
        seen.fetch_add(1, Ordering::SeqCst);
    });
    assert!(reader.names().is_empty());
    // Another process: another Store on the same folder.
    let writer = Store::at(&dir);
    for i in 0..3 {
        writer
            .put_in(
                &SecretScope::Global,
                &format!("TOKEN_{i}"),
                &SecretValue::new("another-value-1"),
            )
            .unwrap();
        assert_eq!(reader.names().len(), i + 1, "write {i} not seen");
    }
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    // Our own writes run the hooks too.
    reader.delete_in(&SecretScope::Global, "TOKEN_0").unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 4);
    assert!(!reader.refresh());
}

#[test]
fn install_redacts_every_scope_and_follows_changes() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::at(tmp.path().join("secrets")));
    store.put(tmp.path(), "PROJECT_TOKEN", &SecretValue::new("project-canary-1234")).unwrap();
    hands_secrets::install(store.clone());
    assert_eq!(hands_core::redact::text("x project-canary-1234 y"), "x [secret:PROJECT_TOKEN] y");
    store
        .put_in(&SecretScope::Global, "LATER_TOKEN", &SecretValue::new("later-canary-5678"))
        .unwrap();
    assert_eq!(hands_core::redact::text("later-canary-5678"), "[secret:LATER_TOKEN]");
    let env = hands_core::env::ChildEnv::vars_for(tmp.path());
    assert!(env.iter().any(|(k, v)| k == "PROJECT_TOKEN" && v == "project-canary-1234"));
    let bare = hands_core::env::ChildEnv::vars();
    assert!(!bare.iter().any(|(k, _)| k == "PROJECT_TOKEN" || k == "LATER_TOKEN"));
}
