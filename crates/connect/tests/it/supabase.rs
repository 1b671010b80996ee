//! connect_supabase against a REAL PostgreSQL 15 started for the test (initdb + pg_ctl as the
//! `postgres` user, on 127.0.0.1 and a free port, password authentication for a test role).
//! Without the PostgreSQL binaries the database tests fail under CI (env CI set) and are skipped
//! loudly elsewhere; the argument and URL checks run everywhere.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use crate::common::postgres;

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use common::{
    MemoryStore, ScriptedQuestions, ScriptedSecrets, call, registry, session, shown, tree_text,
};
use hands_connect::ConnectConfig;
use hands_core::secret::SecretStore as _;
use postgres::{PASSWORD, postgres_or_skip, postgres_or_skip_with};
use serde_json::json;

const REF: &str = "abcdefghijklmnopqrst";
const URL: &str = "https://abcdefghijklmnopqrst.supabase.co";

fn jwt(role: &str, reference: &str) -> String {
    let b64 = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
    format!(
        "{}.{}.CANARYsig{role}",
        b64(r#"{"alg":"HS256","typ":"JWT"}"#),
        b64(&format!(r#"{{"iss":"supabase","ref":"{reference}","role":"{role}"}}"#))
    )
}

/// Loopback is this machine: the user allows 127.0.0.1 for these tests, as `[net] allow_hosts`.
fn allowed() -> ConnectConfig {
    let mut config = ConnectConfig::default();
    config.net.allow_hosts = vec!["127.0.0.1".into()];
    config
}

fn secrets(db_url: &str) -> Arc<ScriptedSecrets> {
    ScriptedSecrets::new(&[
        ("SUPABASE_SERVICE_ROLE_KEY", &jwt("service_role", REF)),
        ("SUPABASE_DB_URL", db_url),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_database_is_verified_and_the_link_recorded() {
    let Some(pg) = postgres_or_skip() else { return };
    let started = std::time::Instant::now();

    // 1. The whole flow: URL and anon key asked through ask_user's asker, secrets out of band.
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join(".hands")).unwrap();
    std::fs::write(tmp.path().join(".hands/project.toml"), "# mine\nname = \"app\"\n").unwrap();
    let store = Arc::new(MemoryStore::default());
    let reg = registry(&allowed(), Arc::clone(&store));
    let questions = Arc::new(ScriptedQuestions::default());
    *questions.answers.lock().unwrap() = vec![format!("{URL}/"), jwt("anon", REF)];
    let asker = secrets(&pg.url(PASSWORD));
    let sess = session(tmp.path(), Some(Arc::clone(&asker)), Some(Arc::clone(&questions)));
    let out = call(&reg, &sess, "connect_supabase", json!({})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    let s = out.structured.clone().unwrap();
    assert_eq!((s["project_ref"].as_str(), s["url"].as_str()), (Some(REF), Some(URL)));
    assert!(s["postgres_version"].as_str().unwrap().starts_with("PostgreSQL "), "{s}");
    assert!(out.joined_text().contains("PostgreSQL"), "{}", out.joined_text());
    assert!(!shown(&out).contains("CANARY"), "{}", shown(&out));
    assert_eq!(questions.asked.lock().unwrap().len(), 2);
    assert_eq!(asker.asked(), ["SUPABASE_SERVICE_ROLE_KEY", "SUPABASE_DB_URL"]);
    assert_eq!(store.get(tmp.path(), "SUPABASE_DB_URL").unwrap().expose(), pg.url(PASSWORD));
    assert!(store.get(tmp.path(), "SUPABASE_SERVICE_ROLE_KEY").is_some());
    let recorded = std::fs::read_to_string(tmp.path().join(".hands/project.toml")).unwrap();
    assert!(recorded.starts_with("# mine\nname = \"app\"\n"), "{recorded}");
    let parsed: toml::Table = toml::from_str(&recorded).unwrap();
    assert_eq!(parsed["supabase"]["url"].as_str(), Some(URL));
    assert_eq!(parsed["supabase"]["ref"].as_str(), Some(REF));
    assert!(!tree_text(tmp.path()).contains(PASSWORD), "no secret in the project");
    assert!(!tree_text(tmp.path()).contains("CANARYsigservice_role"));

    // 2. A wrong password: a clear error, nothing stored, nothing recorded.
    let tmp = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::default());
    let reg = registry(&allowed(), Arc::clone(&store));
    let sess = session(tmp.path(), Some(secrets(&pg.url("CANARYwrong-password"))), None);
    let args = json!({"project_url": URL, "anon_key": jwt("anon", REF)});
    let out = call(&reg, &sess, "connect_supabase", args.clone()).await;
    assert!(out.is_error);
    let text = out.joined_text();
    assert!(text.contains("refused the login") && text.contains("Nothing was stored"), "{text}");
    assert!(!text.contains("CANARY"), "{text}");
    assert!(store.names().is_empty());
    assert!(!tmp.path().join(".hands").exists());

    // 3. The URL the user typed may name this machine (Supabase's local stack is 127.0.0.1:54322)
    // with no `[net]` entry; one naming a private network is refused before connecting (no
    // traffic leaves: the address is checked first), with the way to allow it.
    let reg = registry(&ConnectConfig::default(), Arc::clone(&store));
    let private = format!("postgresql://hands_test:{PASSWORD}@10.255.0.1:5432/postgres");
    let sess = session(tmp.path(), Some(secrets(&private)), None);
    let out = call(&reg, &sess, "connect_supabase", args.clone()).await;
    assert!(out.is_error);
    let text = out.joined_text();
    assert!(text.contains("refused") && text.contains("allow_hosts"), "{text}");
    assert!(!text.contains(PASSWORD), "{text}");
    assert!(store.names().is_empty());
    let sess = session(tmp.path(), Some(secrets(&pg.url(PASSWORD))), None);
    let out = call(&reg, &sess, "connect_supabase", args.clone()).await;
    assert!(!out.is_error, "{}", out.joined_text());
    assert!(out.joined_text().contains("PostgreSQL"), "{}", out.joined_text());
    let store = Arc::new(MemoryStore::default());

    // 4. Nothing listening: a clear error within the time limit.
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let reg = registry(&allowed(), Arc::clone(&store));
    let url =
        format!("postgresql://hands_test:{PASSWORD}@127.0.0.1:{free}/postgres?sslmode=disable");
    let sess = session(tmp.path(), Some(secrets(&url)), None);
    let out = call(&reg, &sess, "connect_supabase", args.clone()).await;
    assert!(out.is_error);
    let text = out.joined_text();
    assert!(text.contains("cannot connect") && !text.contains("CANARY"), "{text}");
    assert!(store.names().is_empty());

    // 5. A database that does not exist.
    let url = pg.url(PASSWORD).replace("/postgres?", "/nosuchdb?");
    let sess = session(tmp.path(), Some(secrets(&url)), None);
    let out = call(&reg, &sess, "connect_supabase", args.clone()).await;
    assert!(out.is_error && out.joined_text().contains("nosuchdb"), "{}", out.joined_text());
    assert!(store.names().is_empty());

    assert!(started.elapsed() < Duration::from_secs(60), "{:?}", started.elapsed());
}

#[tokio::test]
async fn bad_project_urls_and_keys_are_refused_before_any_secret_is_asked() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::default());
    let reg = registry(&allowed(), Arc::clone(&store));
    let anon = jwt("anon", REF);
    for (args, expect) in [
        (
            json!({"project_url": "https://abcdefghijklmnopqrst.supabase.co/../../etc/passwd", "anon_key": anon}),
            "no path",
        ),
        (
            json!({"project_url": "https://evil.example.com", "anon_key": anon}),
            "not on supabase.co",
        ),
        (
            json!({"project_url": "https://abcdefghijklmnopqrst.supabase.co.evil.com", "anon_key": anon}),
            "not on supabase.co",
        ),
        (json!({"project_url": "http://127.0.0.1:5432", "anon_key": anon}), "not on supabase.co"),
        (
            json!({"project_url": "http://abcdefghijklmnopqrst.supabase.co", "anon_key": anon}),
            "https://",
        ),
        (json!({"project_url": "file:///etc/passwd", "anon_key": anon}), "https://"),
        (json!({"project_url": URL, "anon_key": jwt("service_role", REF)}), "service-role key"),
        (
            json!({"project_url": URL, "anon_key": jwt("anon", "zzzzzzzzzzzzzzzzzzzz")}),
            "belongs to the project",
        ),
        (json!({"project_url": 5}), "project_url"),
        (json!({"project_url": URL, "anon_key": ["x"]}), "anon_key"),
        (json!({"project_url": URL, "database_url": "x"}), "database_url"),
    ] {
        let asker = secrets("postgresql://u:CANARY@127.0.0.1/db");
        let sess = session(tmp.path(), Some(Arc::clone(&asker)), None);
        let out = call(&reg, &sess, "connect_supabase", args.clone()).await;
        assert!(out.is_error, "{args}");
        let text = out.joined_text();
        assert!(text.contains(expect), "{args}: {text}");
        assert!(asker.asked().is_empty(), "{args}: no secret asked");
    }
    // A service-role key the user gives as SUPABASE_SERVICE_ROLE_KEY that is the anon key.
    let asker = ScriptedSecrets::new(&[("SUPABASE_SERVICE_ROLE_KEY", &anon)]);
    let sess = session(tmp.path(), Some(asker), None);
    let out =
        call(&reg, &sess, "connect_supabase", json!({"project_url": URL, "anon_key": anon})).await;
    assert!(out.joined_text().contains("not the service_role key"), "{}", out.joined_text());
    // Without a way to ask, a missing URL is the model's to get.
    let sess = session(tmp.path(), None, None);
    let out = call(&reg, &sess, "connect_supabase", json!({})).await;
    assert!(out.joined_text().contains("`project_url` is missing"), "{}", out.joined_text());
    assert!(store.names().is_empty());
}

#[tokio::test]
async fn a_custom_host_needs_the_users_setting() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::default());
    let mut config = allowed();
    let reg_default = registry(&config, Arc::clone(&store));
    let anon = jwt("anon", "supa");
    let args = json!({"project_url": "http://supa.example.dev:8000", "anon_key": anon});
    let sess = session(tmp.path(), Some(ScriptedSecrets::new(&[])), None);
    let out = call(&reg_default, &sess, "connect_supabase", args.clone()).await;
    assert!(out.joined_text().contains("allow_custom_url"), "{}", out.joined_text());
    // Allowed: the URL passes and the next step (the secrets, declined here) is reached.
    config.supabase.allow_custom_url = vec!["supa.example.dev".into()];
    let reg = registry(&config, Arc::clone(&store));
    let asker = ScriptedSecrets::new(&[]);
    let sess = session(tmp.path(), Some(Arc::clone(&asker)), None);
    let out = call(&reg, &sess, "connect_supabase", args).await;
    assert!(out.joined_text().contains("declined"), "{}", out.joined_text());
    assert_eq!(asker.asked(), ["SUPABASE_SERVICE_ROLE_KEY"]);
}

/// sslmode as libpq reads it: `require` encrypts without checking the certificate (the server's
/// log says the session is encrypted); `verify-full` checks it, so a self-signed one is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sslmode_require_encrypts_and_verify_full_checks_the_certificate() {
    let Some(pg) = postgres_or_skip_with(true) else { return };
    let tmp = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::default());
    let reg = registry(&allowed(), Arc::clone(&store));
    let args = json!({"project_url": URL, "anon_key": jwt("anon", REF)});
    let require = pg.url(PASSWORD).replace("sslmode=disable", "sslmode=require");
    let sess = session(tmp.path(), Some(secrets(&require)), None);
    let out = call(&reg, &sess, "connect_supabase", args.clone()).await;
    assert!(!out.is_error, "{}", out.joined_text());
    let log = pg.log();
    assert!(log.contains("SSL enabled"), "the session was encrypted: {log}");

    let store = Arc::new(MemoryStore::default());
    let reg = registry(&allowed(), Arc::clone(&store));
    let verify = pg.url(PASSWORD).replace("sslmode=disable", "sslmode=verify-full");
    let sess = session(tmp.path(), Some(secrets(&verify)), None);
    let out = call(&reg, &sess, "connect_supabase", args).await;
    assert!(out.is_error);
    let text = out.joined_text();
    assert!(
        text.contains("invalid peer certificate") && text.contains("sslmode=require"),
        "{text}"
    );
    assert!(store.names().is_empty() && !text.contains("CANARY"), "{text}");
}
