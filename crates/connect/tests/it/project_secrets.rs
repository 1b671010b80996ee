//! Issue 26, finding 2: a repository chose which of the user's databases was linked. Its
//! `.hands/config.toml` (`[database] url_secret`) or `.hands/project.toml` (`[supabase]
//! db_url_secret`) named a secret, looked up among every secret granted to the project — the
//! global ones too — and its `supabase/migrations/…_init.sql` ran on that database after an
//! approval that said `{"action":"migrate"}`. Against a REAL PostgreSQL and the REAL secret
//! store (`hands-secrets`, global and project scopes in a temp folder): a name from a project
//! file resolves only among the project's own secrets, the user's own setting may still name a
//! global one, and the approval shows the target and every file it will run.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use crate::common::postgres;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::supabase::{ScriptedApprover, exec, rows};
use common::{ScriptedSecrets, call, session, shown, tree_text};
use hands_connect::ConnectConfig;
use hands_core::approval::ApproverHandle;
use hands_core::config::Approval;
use hands_core::secret::{SecretScope, SecretValue};
use hands_core::{CoreConfig, Registry};
use postgres::{PASSWORD, postgres_or_skip};
use serde_json::json;

const INIT: &str = "supabase/migrations/20240101000000_init.sql";
const DROP: &str = "drop table public.keep_me;\n";

struct Setup {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    store: Arc<hands_secrets::Store>,
}

impl Setup {
    /// A project whose repository ships a migration that drops `public.keep_me`, and the
    /// user's store (in a temp folder) holding `global` as global secrets.
    fn new(global: &[(&str, &str)]) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("project");
        std::fs::create_dir_all(root.join("supabase/migrations")).unwrap();
        std::fs::create_dir_all(root.join(".hands")).unwrap();
        let root = root.canonicalize().unwrap();
        std::fs::write(root.join(INIT), DROP).unwrap();
        let store = Arc::new(hands_secrets::Store::at(tmp.path().join("secrets")));
        for (name, value) in global {
            store.put_in(&SecretScope::Global, name, &SecretValue::new(*value)).unwrap();
        }
        Self { _tmp: tmp, root, store }
    }

    fn own(&self, name: &str, value: &str) {
        store_for(&self.store, &self.root, name, value);
    }

    fn registry(&self, config: &ConnectConfig) -> Registry {
        let guard = hands_net::Guard::new(&config.net).unwrap();
        let store: Arc<dyn hands_core::secret::SecretStore> = self.store.clone();
        // The approval step (the registry's) and the tools ask under the same setting, as in the binary.
        let core = CoreConfig { approval: config.approval, ..CoreConfig::default() };
        hands_connect::register(Registry::builder(core), config, &guard, store).build()
    }
}

fn store_for(store: &hands_secrets::Store, root: &Path, name: &str, value: &str) {
    store.put_in(&hands_secrets::project_scope(root), name, &SecretValue::new(value)).unwrap();
}

fn config(url_secret: Option<&str>, by_user: bool) -> ConnectConfig {
    let mut config = ConnectConfig::default();
    config.net.allow_hosts = vec!["127.0.0.1".into()];
    config.database.url_secret = url_secret.map(str::to_owned);
    config.database.url_secret_by_user = by_user;
    // Auto: nothing but the rule under test stands between the repository and the database.
    config.approval = Approval::Auto;
    config
}

async fn keep_me_exists(url: &str) -> bool {
    !rows(url, "select 1 from pg_class where relname = 'keep_me'").await.is_empty()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_file_naming_a_global_secret_is_refused_and_nothing_runs() {
    let Some(pg) = postgres_or_skip() else { return };
    let url = pg.url(PASSWORD);
    exec(&url, "create table public.keep_me (id int)").await;
    let s = Setup::new(&[("DATABASE_URL", &url)]);

    // `[database] url_secret` from the project's .hands/config.toml.
    let reg = s.registry(&config(Some("DATABASE_URL"), false));
    let sess = session(&s.root, None, None);
    for (tool, args) in [
        ("supabase_setup", json!({"action": "migrate"})),
        ("supabase_setup", json!({"action": "restart"})),
        ("supabase_setup", json!({"action": "status"})),
        ("db_schema", json!({})),
    ] {
        let out = call(&reg, &sess, tool, args.clone()).await;
        let text = shown(&out);
        assert!(out.is_error, "{tool} {args}: {text}");
        assert!(text.contains("stored only as a global secret"), "{tool} {args}: {text}");
        assert!(text.contains("`hands secrets set DATABASE_URL`"), "{text}");
        assert!(text.contains("~/.config/hands/config.toml"), "{text}");
        assert!(!text.contains(PASSWORD), "{text}");
    }
    assert!(keep_me_exists(&url).await, "the repository's migration ran");

    // `[supabase] db_url_secret` from the project's .hands/project.toml.
    std::fs::write(
        s.root.join(".hands/project.toml"),
        "[supabase]\ndb_url_secret = \"DATABASE_URL\"\n",
    )
    .unwrap();
    let reg = s.registry(&config(None, false));
    let out = call(&reg, &sess, "supabase_setup", json!({"action": "migrate"})).await;
    assert!(out.is_error, "{}", shown(&out));
    assert!(shown(&out).contains("`db_url_secret` in .hands/project.toml"), "{}", shown(&out));
    assert!(keep_me_exists(&url).await, "the repository's migration ran");

    // `link` with a name the model chose: the global value is not taken silently. With nobody
    // to ask it is refused; with an asker the user is asked (and answers for this project).
    std::fs::remove_file(s.root.join(".hands/project.toml")).unwrap();
    let out =
        call(&reg, &sess, "supabase_setup", json!({"action": "link", "secret": "DATABASE_URL"}))
            .await;
    assert!(out.is_error && shown(&out).contains("only a global secret"), "{}", shown(&out));
    assert!(!s.root.join(".hands/project.toml").exists(), "nothing recorded");
    let asker = ScriptedSecrets::new(&[]);
    let asking = session(&s.root, Some(Arc::clone(&asker)), None);
    let out =
        call(&reg, &asking, "supabase_setup", json!({"action": "link", "secret": "DATABASE_URL"}))
            .await;
    assert!(out.is_error, "{}", shown(&out));
    assert_eq!(asker.asked(), ["DATABASE_URL"], "the user is asked instead");
    assert!(keep_me_exists(&url).await);
    assert!(!tree_text(&s.root).contains(PASSWORD));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_stored_for_the_project_or_named_by_the_user_is_used() {
    let Some(pg) = postgres_or_skip() else { return };
    let url = pg.url(PASSWORD);
    exec(&url, "create table public.keep_me (id int)").await;
    // The project's own secret of the same name wins over the global one (a wrong URL here).
    let s = Setup::new(&[("APP_DB_URL", "postgresql://nobody:wrong-pass@127.0.0.9:1/x")]);
    s.own("APP_DB_URL", &url);
    std::fs::write(s.root.join(INIT), "create table public.from_project (id int);\n").unwrap();
    let reg = s.registry(&config(Some("APP_DB_URL"), false));
    let sess = session(&s.root, None, None);
    let out = call(&reg, &sess, "supabase_setup", json!({"action": "migrate"})).await;
    assert!(!out.is_error, "{}", shown(&out));
    assert_eq!(out.structured.clone().unwrap()["applied"], json!([INIT]));
    assert!(!rows(&url, "select 1 from pg_class where relname = 'from_project'").await.is_empty());

    // The user's own setting (their file, HANDS_*, -c) may name a global secret.
    let g = Setup::new(&[("MY_GLOBAL_DB", &url)]);
    // (The same database: the first project's file is applied already, the user's is new.)
    std::fs::write(g.root.join(INIT), "create table public.from_project (id int);\n").unwrap();
    std::fs::write(
        g.root.join("supabase/migrations/20240103000000_user.sql"),
        "create table public.from_user (id int);\n",
    )
    .unwrap();
    let reg = g.registry(&config(Some("MY_GLOBAL_DB"), true));
    let out =
        call(&reg, &session(&g.root, None, None), "supabase_setup", json!({"action": "migrate"}))
            .await;
    assert!(!out.is_error, "{}", shown(&out));
    assert!(!rows(&url, "select 1 from pg_class where relname = 'from_user'").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_migrate_approval_shows_the_target_and_every_file_it_runs() {
    let Some(pg) = postgres_or_skip() else { return };
    let url = pg.url(PASSWORD);
    exec(&url, "create table public.keep_me (id int)").await;
    // A value the user stored shows in a file's first lines: the approval hides it.
    let canary = "CANARYrolepass-71d0a9";
    hands_core::redact::install(Arc::new(hands_core::redact::Literals(vec![(
        "ROLE_PASS".into(),
        canary.into(),
    )])));
    let s = Setup::new(&[]);
    s.own("APP_DB_URL", &url);
    let second = "supabase/migrations/20240102000000_more.sql";
    let long: String = (1..=20).map(|n| format!("select {n};\n")).collect();
    std::fs::write(
        s.root.join(second),
        format!("-- hands:no-transaction\ncreate role r password '{canary}';\n{long}"),
    )
    .unwrap();
    let mut config = config(Some("APP_DB_URL"), false);
    config.approval = Approval::Ask;
    let reg = s.registry(&config);
    let no = ScriptedApprover::new(false);
    let sess = session(&s.root, None, None);
    sess.insert_extension(ApproverHandle(no.clone()));
    let out = call(&reg, &sess, "supabase_setup", json!({"action": "migrate"})).await;
    assert!(out.is_error && shown(&out).contains("declined"), "{}", shown(&out));
    assert!(keep_me_exists(&url).await, "declined, yet it ran");
    let asked = no.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    let request = &asked[0];
    let target = format!(
        "hands_test@127.0.0.1:{}/postgres",
        url.split(':').nth(3).unwrap().split('/').next().unwrap()
    );
    assert!(request.summary.contains(&target), "{}", request.summary);
    assert!(request.summary.contains("(2 files)"), "{}", request.summary);
    let details = request.details.clone().expect("details");
    assert!(details.contains(&format!("database: {target}")), "{details}");
    assert!(
        details.contains(&format!("1. {INIT} ({} bytes, 1 line, in one transaction)", DROP.len())),
        "{details}"
    );
    assert!(details.contains("   | drop table public.keep_me;"), "{details}");
    assert!(details.contains(&format!("2. {second} (")), "{details}");
    assert!(details.contains("outside a transaction"), "{details}");
    assert!(details.contains("   | create role r password '[secret:ROLE_PASS]';"), "{details}");
    assert!(
        details.contains(&format!("first {} lines", hands_connect::supabase_setup::FIRST_LINES))
    );
    assert!(details.contains("(14 more lines)"), "{details}");
    let everything = format!("{asked:?}");
    assert!(!everything.contains(PASSWORD) && !everything.contains(canary), "{everything}");

    // Restart and link show the target too.
    for args in [json!({"action": "restart"}), json!({"action": "link", "secret": "APP_DB_URL"})] {
        let _ = call(&reg, &sess, "supabase_setup", args.clone()).await;
        let last = no.asked.lock().unwrap().last().cloned().unwrap();
        assert!(last.summary.contains(&target), "{args}: {}", last.summary);
        assert!(last.details.unwrap_or_default().contains(&target), "{args}");
    }

    // Approved: exactly the files shown run.
    let yes = ScriptedApprover::new(true);
    let sess = session(&s.root, None, None);
    sess.insert_extension(ApproverHandle(yes.clone()));
    let out = call(&reg, &sess, "supabase_setup", json!({"action": "migrate"})).await;
    assert!(shown(&out).contains(INIT), "{}", shown(&out));
    assert!(!keep_me_exists(&url).await, "approved, and it ran");
    // Nothing pending: nothing changes, nobody is asked.
    let before = yes.asked.lock().unwrap().len();
    let _ = call(&reg, &sess, "supabase_setup", json!({"action": "migrate"})).await;
    assert_eq!(yes.asked.lock().unwrap().len(), before);
}
