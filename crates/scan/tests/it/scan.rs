//! Issue 15, item 5: run_security_scan on a fixture project with the real secret store, a real
//! OSV-format database on disk and a REAL PostgreSQL (started by the test, as in hands-connect):
//! a fake key in the source and in dist/, a stored canary secret in the build output (critical,
//! its value in no result), a public variable holding a key, an advisory matching a locked
//! version, a table without row-level security and a SECURITY DEFINER function.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../../connect/tests/it/common/postgres.rs"]
mod postgres;

use std::path::Path;
use std::sync::Arc;

use hands_core::secret::{SecretStore, SecretValue};
use hands_core::{CoreConfig, Registry, Session, ToolCall};
use hands_scan::SecurityConfig;
use serde_json::{Value, json};

/// The stored secret's value: no result may hold it.
const CANARY: &str = "CANARYscan-7f3a9e1d55";

fn fake_key() -> String {
    // Assembled, so that this file holds no key-shaped literal.
    format!("sk_{}_{}", "live", "4eC39HqLyjWDarjtT1zdp7dc")
}

fn put(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

struct Fixture {
    project: tempfile::TempDir,
    _state: tempfile::TempDir,
    store: Arc<hands_secrets::Store>,
    osv: tempfile::TempDir,
}

fn fixture() -> Fixture {
    let project = tempfile::tempdir().unwrap();
    let root = project.path();
    let key = fake_key();
    put(root, ".gitignore", "dist/\nsecret.log\n");
    put(root, "src/config.js", &format!("// settings\nexport const stripe = \"{key}\";\n"));
    put(root, "src/app.js", "export const hello = 'world';\n");
    put(root, "secret.log", &format!("{key}\n"));
    put(root, "node_modules/dep/index.js", &format!("{key}\n"));
    put(root, "dist/assets/index-3f2a.js", &format!("var a=1;\nvar t=\"{CANARY}\",k=\"{key}\";\n"));
    put(
        root,
        ".env.local",
        &format!("VITE_STRIPE_KEY={key}\nVITE_API_URL=https://api.example.com\n"),
    );
    put(
        root,
        "package-lock.json",
        r#"{"name":"app","lockfileVersion":3,"packages":{"":{"name":"app"},"node_modules/lodash":{"version":"4.17.20"},"node_modules/left-pad":{"version":"1.3.0"}}}"#,
    );
    let osv = tempfile::tempdir().unwrap();
    put(
        osv.path(),
        "npm/GHSA-35jh-r3h4-6jhm.json",
        r#"{"id":"GHSA-35jh-r3h4-6jhm","summary":"Command Injection in lodash","aliases":["CVE-2021-23337"],
            "affected":[{"package":{"ecosystem":"npm","name":"lodash"},"ranges":[{"type":"SEMVER","events":[{"introduced":"0"},{"fixed":"4.17.21"}]}]}],
            "database_specific":{"severity":"HIGH"}}"#,
    );
    put(
        osv.path(),
        "npm/not-affected.json",
        r#"{"id":"GHSA-xxxx","affected":[{"package":{"ecosystem":"npm","name":"left-pad"},"versions":["1.0.0"]}]}"#,
    );
    let state = tempfile::tempdir().unwrap();
    let store = Arc::new(hands_secrets::Store::at(state.path()));
    store.put(root, "PAYMENTS_TOKEN", &SecretValue::new(CANARY)).unwrap();
    Fixture { project, _state: state, store, osv }
}

async fn scan(
    f: &Fixture,
    config: SecurityConfig,
    net: hands_net::NetConfig,
    args: Value,
) -> (String, Value) {
    let store: Arc<dyn SecretStore> = f.store.clone();
    let registry =
        hands_scan::register(Registry::builder(CoreConfig::default()), &config, &net, store)
            .build();
    let session = Session::one_shot(f.project.path());
    let out =
        registry.dispatch(&session, ToolCall::new("c1", "run_security_scan", args)).await.unwrap();
    session.close().await;
    let text = out.joined_text();
    assert!(!out.is_error, "{text}");
    (text, out.structured.clone().unwrap())
}

fn config(f: &Fixture) -> SecurityConfig {
    SecurityConfig {
        osv_db: Some(f.osv.path().to_path_buf()),
        audit_commands: false,
        ..SecurityConfig::default()
    }
}

fn finding<'a>(s: &'a Value, rule: &str, location: &str) -> &'a Value {
    s["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == rule && f["location"] == location)
        .unwrap_or_else(|| panic!("no {rule} at {location}: {s:#}"))
}

#[tokio::test]
async fn secrets_bundle_and_dependencies_are_found_and_sorted() {
    let f = fixture();
    let (text, s) = scan(&f, config(&f), hands_net::NetConfig::default(), json!({})).await;
    let key = fake_key();
    for surface in [&text, &s.to_string()] {
        assert!(!surface.contains(CANARY), "the stored value leaked: {surface}");
        assert!(!surface.contains(&key), "the key leaked: {surface}");
    }
    let stored = finding(&s, "stored_secret", "dist/assets/index-3f2a.js:2");
    assert_eq!(
        (stored["severity"].as_str(), stored["check"].as_str()),
        (Some("critical"), Some("bundle"))
    );
    assert!(stored["message"].as_str().unwrap().contains("PAYMENTS_TOKEN"));
    assert_eq!(finding(&s, "stripe_key", "dist/assets/index-3f2a.js:2")["severity"], "critical");
    assert_eq!(finding(&s, "stripe_key", "src/config.js:2")["severity"], "high");
    let public = finding(&s, "public_env_secret", ".env.local:1");
    assert_eq!(public["severity"], "critical");
    assert!(public["message"].as_str().unwrap().contains("VITE_STRIPE_KEY"));
    let advisory = finding(&s, "GHSA-35jh-r3h4-6jhm", "package-lock.json: lodash@4.17.20");
    assert_eq!(advisory["severity"], "high");
    assert!(advisory["message"].as_str().unwrap().contains("fixed in 4.17.21"), "{advisory}");
    // Ignored files, dependencies' folders and the build output (in the secrets check) are not
    // reported as sources; left-pad 1.3.0 is not affected.
    let all = s["findings"].as_array().unwrap();
    for f in all {
        let loc = f["location"].as_str().unwrap();
        assert!(
            !loc.starts_with("secret.log")
                && !loc.starts_with("node_modules")
                && !loc.contains("left-pad"),
            "{f}"
        );
        assert!(!(loc.starts_with("dist/") && f["check"] == "secrets"), "{f}");
    }
    // Worst first.
    let rank = |v: &Value| {
        ["critical", "high", "medium", "low"].iter().position(|s| v["severity"] == *s).unwrap()
    };
    assert!(all.windows(2).all(|w| rank(&w[0]) <= rank(&w[1])), "{s:#}");
    assert_eq!(s["counts"]["critical"], 3, "{s:#}");
    // .env.local is not ignored here, so its key is also a source finding.
    assert_eq!(finding(&s, "stripe_key", ".env.local:1")["severity"], "high");
    assert!(text.starts_with("run_security_scan: 3 critical, 3 high, 0 medium"), "{text}");
    // What was skipped, and why.
    let checks = s["checks"].as_array().unwrap();
    let status = |part: &str| {
        checks.iter().find(|c| c["part"] == part).unwrap_or_else(|| panic!("{part}: {checks:?}"))
    };
    assert_eq!(status("audit commands")["status"], "skipped");
    assert!(
        status("audit commands")["detail"].as_str().unwrap().contains("audit_commands = false")
    );
    assert_eq!(status("database")["status"], "skipped");
    assert!(status("database")["detail"].as_str().unwrap().contains("no database is linked"));
    assert_eq!(status("osv")["status"], "ran");
    assert!(text.contains("- database skipped: no database is linked"), "{text}");
}

#[tokio::test]
async fn checks_can_be_chosen_and_missing_inputs_are_said_plainly() {
    let f = fixture();
    let (_, s) = scan(
        &f,
        SecurityConfig { audit_commands: false, ..SecurityConfig::default() },
        Default::default(),
        json!({"checks": ["dependencies"]}),
    )
    .await;
    let checks = s["checks"].as_array().unwrap();
    assert!(checks.iter().all(|c| c["part"] != "secrets" && c["part"] != "bundle"), "{checks:?}");
    let osv = checks.iter().find(|c| c["part"] == "osv").unwrap();
    assert_eq!(osv["status"], "skipped");
    assert!(osv["detail"].as_str().unwrap().contains("[security] osv_db"), "{osv}");
    std::fs::remove_dir_all(f.project.path().join("dist")).unwrap();
    let (_, s) = scan(&f, config(&f), Default::default(), json!({"checks": ["bundle"]})).await;
    let bundle =
        s["checks"].as_array().unwrap().iter().find(|c| c["part"] == "bundle").unwrap().clone();
    assert_eq!(bundle["status"], "skipped");
    assert!(bundle["detail"].as_str().unwrap().contains("build the app first"), "{bundle}");
    // Bad arguments name the field.
    let store: Arc<dyn SecretStore> = f.store.clone();
    let registry = hands_scan::register(
        Registry::builder(CoreConfig::default()),
        &config(&f),
        &Default::default(),
        store,
    )
    .build();
    let session = Session::one_shot(f.project.path());
    // An empty list is every check, as the description says.
    let out = registry
        .dispatch(&session, ToolCall::new("c", "run_security_scan", json!({"checks": []})))
        .await
        .unwrap();
    assert!(!out.is_error && out.joined_text().contains("- secrets ran"), "{}", out.joined_text());
    for (args, want) in
        [(json!({"checks": ["everything"]}), "checks"), (json!({"check": ["secrets"]}), "check")]
    {
        let out = registry
            .dispatch(&session, ToolCall::new("c", "run_security_scan", args.clone()))
            .await
            .unwrap();
        assert!(out.is_error && out.joined_text().contains(want), "{args}: {}", out.joined_text());
    }
    session.close().await;
}

const DATABASE: &str = r#"
create role anon nologin; create role authenticated nologin;
create table public.todos (id int primary key, title text);
create table public.notes (id int primary key, body text);
alter table public.notes enable row level security;
create policy "own notes" on public.notes for select to authenticated using (true);
create table public.orphans (id int);
create policy "does nothing" on public.orphans for select using (true);
create view public.open_todos as select id, title from public.todos;
create view public.safe_todos with (security_invoker = on) as select id from public.todos;
create function public.elevate() returns int language sql security definer as $$ select 1 $$;
create function public.plain() returns int language sql as $$ select 1 $$;
grant execute on function public.elevate() to anon;
create schema private;
create table private.hidden (id int);
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_linked_database_without_row_level_security_is_reported() {
    let Some(pg) = postgres::postgres_or_skip() else { return };
    let url = pg.url(postgres::PASSWORD);
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(conn);
    client.batch_execute(DATABASE).await.unwrap();
    let f = fixture();
    f.store
        .put(f.project.path(), hands_connect::DB_URL_NAME, &SecretValue::new(url.clone()))
        .unwrap();
    let net = hands_net::NetConfig { allow_hosts: vec!["127.0.0.1".into()], ..Default::default() };
    let (text, s) = scan(&f, config(&f), net, json!({"checks": ["database"]})).await;
    assert!(
        !text.contains(postgres::PASSWORD) && !s.to_string().contains(postgres::PASSWORD),
        "{text}"
    );
    assert_eq!(finding(&s, "rls_disabled", "table public.todos")["severity"], "high");
    assert_eq!(finding(&s, "rls_disabled", "table public.orphans")["severity"], "high");
    assert!(
        finding(&s, "policy_exists_rls_disabled", "table public.orphans")["message"]
            .as_str()
            .unwrap()
            .contains("do nothing")
    );
    assert_eq!(finding(&s, "security_definer_view", "view public.open_todos")["severity"], "high");
    let function = finding(&s, "security_definer_function", "function public.elevate()");
    assert!(function["message"].as_str().unwrap().contains("anon role may call it"), "{function}");
    let locations: Vec<&str> =
        s["findings"].as_array().unwrap().iter().map(|f| f["location"].as_str().unwrap()).collect();
    for absent in [
        "table public.notes",
        "view public.safe_todos",
        "function public.plain()",
        "table private.hidden",
    ] {
        assert!(!locations.contains(&absent), "{absent} is fine: {locations:?}");
    }
    // The stored URL is the user's own: it may name this machine with no `[net]` entry (other
    // private addresses keep the guard's rule: hands-connect's postgres tests).
    let (_, s) = scan(&f, config(&f), Default::default(), json!({"checks": ["database"]})).await;
    let db = &s["checks"][0];
    assert_ne!(db["status"], "failed", "{db}");
    assert!(!db["detail"].as_str().unwrap_or("").contains("refused"), "{db}");
}
