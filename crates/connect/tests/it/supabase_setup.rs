//! supabase_setup against a REAL PostgreSQL 15 started for the test, with the Supabase-like
//! fixture and a `LISTEN pgrst` session standing in for PostgREST; the pinned Supabase CLI
//! (tests/supabase) is the oracle of the history it writes. Without PostgreSQL (or the CLI) the
//! tests fail under CI and are skipped loudly elsewhere.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use crate::common::postgres;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::supabase::{FIXTURE, Listener, ScriptedApprover, exec, rows, run_cli, supabase_cli};
use common::{MemoryStore, ScriptedSecrets, call, registry, session, shown, tree_text};
use hands_connect::ConnectConfig;
use hands_core::approval::ApproverHandle;
use hands_core::secret::{SecretStore as _, SecretValue};
use postgres::{PASSWORD, postgres_or_skip};
use serde_json::{Value, json};

const DIR: &str = "supabase/migrations";

fn allowed() -> ConnectConfig {
    let mut config = ConnectConfig::default();
    config.net.allow_hosts = vec!["127.0.0.1".into()];
    config
}

fn write(root: &Path, file: &str, sql: &str) {
    std::fs::create_dir_all(root.join(DIR)).unwrap();
    std::fs::write(root.join(DIR).join(file), sql).unwrap();
}

/// A project linked (by connect_supabase's stored secret) to the database at `url`.
struct Project {
    tmp: tempfile::TempDir,
    reg: hands_core::Registry,
}

impl Project {
    fn new(url: &str) -> Self {
        Self::with(url, allowed())
    }

    fn with(url: &str, config: ConnectConfig) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let store = Arc::new(MemoryStore::default());
        store.put(tmp.path(), "SUPABASE_DB_URL", &SecretValue::new(url)).unwrap();
        let reg = registry(&config, Arc::clone(&store));
        Self { tmp, reg }
    }

    fn root(&self) -> &Path {
        self.tmp.path()
    }

    async fn call(&self, args: Value) -> hands_core::ToolOutput {
        let sess = session(self.root(), None, None);
        let out = call(&self.reg, &sess, "supabase_setup", args).await;
        assert!(!shown(&out).contains(PASSWORD), "a secret in the result: {}", shown(&out));
        out
    }
}

fn applied(out: &hands_core::ToolOutput) -> Vec<String> {
    out.structured.as_ref().unwrap()["applied"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrations_apply_in_order_are_recorded_and_reload_postgrest() {
    let Some(pg) = postgres_or_skip() else { return };
    let url = pg.url(PASSWORD);
    exec(&url, FIXTURE).await;
    exec(&url, "create table public.applied_log (n serial primary key, file text)").await;
    let mut listener = Listener::start(&url).await;
    let p = Project::new(&url);
    write(
        p.root(),
        "20240101000000_todo_done.sql",
        "alter table public.todos add column done boolean not null default false;\n\
         insert into public.applied_log (file) values ('one');\n",
    );
    write(
        p.root(),
        "20240102000000_tags.sql",
        "-- tags on todos\ncreate table public.tags (id bigint primary key, label text);\n\
         create function public.tag_count() returns bigint language sql as $$ select count(*) from public.tags; $$;\n\
         insert into public.applied_log (file) values ('two');",
    );
    write(p.root(), "README.md", "not a migration\n");
    // `new` writes the third, after the others.
    let out = p
        .call(json!({"action": "new", "name": "tag_index",
                     "sql": "create index tags_label_idx on public.tags (label);\ninsert into public.applied_log (file) values ('three');"}))
        .await;
    assert!(!out.is_error, "{}", out.joined_text());
    let third = out.structured.clone().unwrap()["file"].as_str().unwrap().to_owned();
    assert!(
        third.starts_with("supabase/migrations/") && third.ends_with("_tag_index.sql"),
        "{third}"
    );
    assert!(p.root().join(&third).exists());

    let out = p.call(json!({"action": "status"})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    let states: Vec<String> = out.structured.clone().unwrap()["migrations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["state"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(states, ["pending", "pending", "pending"]);
    assert!(
        out.joined_text().contains("skipped: supabase/migrations/README.md"),
        "{}",
        out.joined_text()
    );
    assert!(
        listener.received(Duration::from_millis(200)).await.is_empty(),
        "status notifies nothing"
    );

    let out = p.call(json!({"action": "migrate"})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    assert_eq!(
        applied(&out),
        [
            "supabase/migrations/20240101000000_todo_done.sql".to_owned(),
            "supabase/migrations/20240102000000_tags.sql".to_owned(),
            third.clone()
        ]
    );
    assert_eq!(out.structured.clone().unwrap()["notified"], json!(["reload schema"]));
    assert_eq!(listener.received(Duration::from_secs(2)).await, ["reload schema"]);
    let log = rows(&url, "select file from public.applied_log order by n").await;
    assert_eq!(log, [["one"], ["two"], ["three"]]);
    // The history as the Supabase CLI writes it: version, name, and the statements as it cuts them.
    let history = rows(
        &url,
        "select version, name, array_length(statements, 1)::text, statements[1] \
         from supabase_migrations.schema_migrations order by version",
    )
    .await;
    assert_eq!(history[0][..3], ["20240101000000", "todo_done", "2"]);
    assert_eq!(
        history[0][3],
        "alter table public.todos add column done boolean not null default false"
    );
    assert_eq!(history[1][..3], ["20240102000000", "tags", "3"]);
    assert_eq!(
        history[1][3],
        "-- tags on todos\ncreate table public.tags (id bigint primary key, label text)"
    );
    assert_eq!(history[2][1], "tag_index");
    // Again: nothing pending, nothing sent.
    let out = p.call(json!({"action": "migrate"})).await;
    assert!(!out.is_error && applied(&out).is_empty(), "{}", out.joined_text());
    assert!(out.joined_text().contains("Nothing to apply"), "{}", out.joined_text());
    let out = p.call(json!({"action": "status"})).await;
    assert!(out.joined_text().matches("applied 2024").count() == 2, "{}", out.joined_text());

    // restart: both reloads, then a fresh connection.
    let out = p.call(json!({"action": "restart"})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    assert!(
        out.structured.clone().unwrap()["postgres_version"]
            .as_str()
            .unwrap()
            .starts_with("PostgreSQL")
    );
    assert_eq!(listener.received(Duration::from_secs(2)).await, ["reload schema", "reload config"]);
    assert!(!tree_text(p.root()).contains(PASSWORD), "no secret in the project");
}

/// The Supabase CLI reads the history hands wrote (`migration list`), and applying the same
/// folder with the CLI (`migration up`) writes exactly the same rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_supabase_cli_agrees_with_the_history() {
    let Some(pg) = postgres_or_skip() else { return };
    let Some(cli) = supabase_cli() else { return };
    let url = pg.url(PASSWORD);
    exec(&url, "create database by_cli").await;
    exec(&url, "create database by_both").await;
    let p = Project::new(&url);
    write(p.root(), "20240101000000_first.sql", "create table a (id int);\n");
    write(
        p.root(),
        "20240102000000_second.sql",
        "-- comment\ncreate table b (id int); insert into b values (1);\n\n\
         create function f() returns int language sql as $$ select 1; $$;\n\
         /* block; comment */ select 'semi;colon', \"quoted;ident\" from (select 1 as \"quoted;ident\") q;\n\
         create function g() returns int language sql begin atomic select 1; select 2; end;\n\
         do $body$ begin perform 1; end $body$",
    );
    // (Not `concurrently`: the CLI runs every file in one implicit transaction.)
    write(
        p.root(),
        "20240103000000_third.sql",
        "-- hands:no-transaction\ncreate index a_id on a (id);\n",
    );
    let out = p.call(json!({"action": "migrate"})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    assert_eq!(applied(&out).len(), 3);

    let (code, stdout, stderr) = run_cli(&cli, p.root(), &["migration", "list", "--db-url", &url]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let listed: Vec<(String, String)> = stdout
        .lines()
        .filter(|l| l.contains('|') && l.contains("2024"))
        .map(|l| {
            let cells: Vec<String> =
                l.split('|').map(|c| c.trim().trim_matches('`').trim().to_owned()).collect();
            (cells[0].clone(), cells[1].clone())
        })
        .collect();
    assert_eq!(
        listed,
        [
            ("20240101000000".to_owned(), "20240101000000".to_owned()),
            ("20240102000000".to_owned(), "20240102000000".to_owned()),
            ("20240103000000".to_owned(), "20240103000000".to_owned())
        ],
        "{stdout}"
    );

    let cli_url = url.replace("/postgres?", "/by_cli?");
    let (code, stdout, stderr) =
        run_cli(&cli, p.root(), &["migration", "up", "--db-url", &cli_url]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let history = "select version, name, statements::text from supabase_migrations.schema_migrations order by version";
    let ours = rows(&url, history).await;
    assert_eq!(ours.len(), 3);
    assert_eq!(rows(&cli_url, history).await, ours, "the CLI records what hands records");
    let columns = "select column_name, data_type, is_nullable from information_schema.columns \
                   where table_schema = 'supabase_migrations' order by ordinal_position";
    assert_eq!(rows(&cli_url, columns).await, rows(&url, columns).await, "the same table");

    // The CLI applies the first file, hands the rest: each once, and the CLI sees them all.
    let both = url.replace("/postgres?", "/by_both?");
    let partial = tempfile::tempdir().unwrap();
    write(partial.path(), "20240101000000_first.sql", "create table a (id int);\n");
    let (code, stdout, stderr) =
        run_cli(&cli, partial.path(), &["migration", "up", "--db-url", &both]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let p2 = Project::new(&both);
    for file in
        ["20240101000000_first.sql", "20240102000000_second.sql", "20240103000000_third.sql"]
    {
        std::fs::create_dir_all(p2.root().join(DIR)).unwrap();
        std::fs::copy(p.root().join(DIR).join(file), p2.root().join(DIR).join(file)).unwrap();
    }
    let out = p2.call(json!({"action": "migrate"})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    assert_eq!(applied(&out).len(), 2, "{}", out.joined_text());
    assert_eq!(rows(&both, history).await, ours);
    let (code, stdout, _) = run_cli(&cli, p2.root(), &["migration", "list", "--db-url", &both]);
    assert_eq!(code, 0);
    assert_eq!(stdout.lines().filter(|l| l.matches("2024010").count() >= 2).count(), 3, "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_migration_reports_file_line_col_and_is_rolled_back() {
    let Some(pg) = postgres_or_skip() else { return };
    let url = pg.url(PASSWORD);
    let mut listener = Listener::start(&url).await;
    let p = Project::new(&url);
    write(p.root(), "20240101000000_ok.sql", "create table kept (id int);\n");
    write(
        p.root(),
        "20240102000000_broken.sql",
        "create table half (id int);\n-- the next line fails\n  select 'é', * from nope;\ncreate table never (id int);\n",
    );
    write(p.root(), "20240103000000_after.sql", "create table after_it (id int);\n");
    let out = p.call(json!({"action": "migrate"})).await;
    assert!(out.is_error, "{}", out.joined_text());
    let text = out.joined_text();
    // Line 3, column 22: `nope` after two spaces and a two-byte `é` (columns count characters).
    assert!(
        text.contains("supabase/migrations/20240102000000_broken.sql:3:22: ERROR 42P01: relation \"nope\" does not exist"),
        "{text}"
    );
    assert!(text.contains("rolled back") && text.contains("nothing after it ran"), "{text}");
    let s = out.structured.clone().unwrap();
    assert_eq!(s["failed"]["line"], 3);
    assert_eq!(s["failed"]["column"], 22);
    assert_eq!(s["failed"]["sqlstate"], "42P01");
    assert_eq!(s["failed"]["statement"], 2);
    assert_eq!(s["failed"]["rolled_back"], true);
    assert_eq!(applied(&out), ["supabase/migrations/20240101000000_ok.sql"]);
    let tables = rows(&url, "select relname::text from pg_class where relname in ('kept', 'half', 'never', 'after_it') order by 1").await;
    assert_eq!(
        tables,
        [["kept"]],
        "the earlier file kept, the failing one rolled back, none after"
    );
    let versions = rows(&url, "select version from supabase_migrations.schema_migrations").await;
    assert_eq!(versions, [["20240101000000"]]);
    // The file that was applied still makes PostgREST reload.
    assert_eq!(listener.received(Duration::from_secs(2)).await, ["reload schema"]);

    // Fixed: the rest goes in.
    write(p.root(), "20240102000000_broken.sql", "create table half (id int);\n");
    let out = p.call(json!({"action": "migrate"})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    assert_eq!(applied(&out).len(), 2);

    // A syntax error inside a function body: the position the server gives points into the file.
    write(
        p.root(),
        "20240104000000_body.sql",
        "create function bad() returns int language plpgsql as $$\nbegin\n  retrun 1;\nend $$;\n",
    );
    let out = p.call(json!({"action": "migrate"})).await;
    assert!(out.is_error);
    let text = out.joined_text();
    assert!(text.contains("20240104000000_body.sql:3:3: ERROR 42601"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_no_transaction_file_runs_outside_a_transaction() {
    let Some(pg) = postgres_or_skip() else { return };
    let url = pg.url(PASSWORD);
    exec(&url, "create table items (id int)").await;
    let p = Project::new(&url);
    // Without the marker: CREATE INDEX CONCURRENTLY refuses a transaction block (25001).
    write(
        p.root(),
        "20240101000000_index.sql",
        "create index concurrently items_id on items (id);\n",
    );
    let out = p.call(json!({"action": "migrate"})).await;
    assert!(out.is_error);
    assert!(out.joined_text().contains("ERROR 25001"), "{}", out.joined_text());
    write(
        p.root(),
        "20240101000000_index.sql",
        "-- hands:no-transaction\ncreate index concurrently items_id on items (id);\n",
    );
    let out = p.call(json!({"action": "migrate"})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    let valid =
        rows(&url, "select indisvalid::text from pg_index where indexrelid = 'items_id'::regclass")
            .await;
    assert_eq!(valid, [["true"]]);
    assert_eq!(
        rows(&url, "select count(*)::text from supabase_migrations.schema_migrations").await,
        [["1"]]
    );
    // A failure in such a file keeps what ran before it and says so.
    write(
        p.root(),
        "20240102000000_half.sql",
        "-- hands:no-transaction\ncreate table stays (id int);\nselect * from missing_table;\n",
    );
    let out = p.call(json!({"action": "migrate"})).await;
    assert!(out.is_error);
    assert!(out.joined_text().contains("without a transaction"), "{}", out.joined_text());
    assert_eq!(out.structured.unwrap()["failed"]["rolled_back"], false);
    assert_eq!(
        rows(&url, "select count(*)::text from pg_class where relname = 'stays'").await,
        [["1"]]
    );
    assert_eq!(
        rows(&url, "select count(*)::text from supabase_migrations.schema_migrations").await,
        [["1"]]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_migrates_at_once_apply_each_file_once() {
    let Some(pg) = postgres_or_skip() else { return };
    let url = pg.url(PASSWORD);
    exec(&url, "create table log (file text)").await;
    let p = Project::new(&url);
    write(
        p.root(),
        "20240101000000_slow.sql",
        "select pg_sleep(1);\ninsert into log values ('slow');\n",
    );
    write(p.root(), "20240102000000_next.sql", "insert into log values ('next');\n");
    let sess_a = session(p.root(), None, None);
    let sess_b = session(p.root(), None, None);
    let (a, b) = tokio::join!(
        call(&p.reg, &sess_a, "supabase_setup", json!({"action": "migrate"})),
        async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            call(&p.reg, &sess_b, "supabase_setup", json!({"action": "migrate"})).await
        }
    );
    assert!(!a.is_error && !b.is_error, "{}\n{}", a.joined_text(), b.joined_text());
    assert_eq!(
        applied(&a).len() + applied(&b).len(),
        2,
        "{}\n{}",
        a.joined_text(),
        b.joined_text()
    );
    assert_eq!(rows(&url, "select file from log order by file").await, [["next"], ["slow"]]);
    assert_eq!(
        rows(&url, "select count(*)::text from supabase_migrations.schema_migrations").await,
        [["2"]]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_versions_are_refused_and_edited_files_warned() {
    let Some(pg) = postgres_or_skip() else { return };
    let url = pg.url(PASSWORD);
    let p = Project::new(&url);
    write(p.root(), "20240101000000_a.sql", "create table a (id int);\n");
    write(p.root(), "20240102000000_b.sql", "create table b (id int);\n");
    assert!(!p.call(json!({"action": "migrate"})).await.is_error);
    // b's file is gone (another branch): refused, and nothing of c applied.
    std::fs::remove_file(p.root().join(DIR).join("20240102000000_b.sql")).unwrap();
    write(p.root(), "20240103000000_c.sql", "create table c (id int);\n");
    let out = p.call(json!({"action": "migrate"})).await;
    assert!(out.is_error);
    let s = out.structured.clone().unwrap();
    assert!(s["refused"].as_str().unwrap().contains("20240102000000"), "{s}");
    assert!(out.joined_text().contains("migration repair"), "{}", out.joined_text());
    assert!(applied(&out).is_empty());
    assert!(s["migrations"].as_array().unwrap().iter().any(|m| m["state"] == "only_in_database"));
    assert!(rows(&url, "select 1 from pg_class where relname = 'c'").await.is_empty());
    // b back, a edited: c goes in, with a warning about a.
    write(p.root(), "20240102000000_b.sql", "create table b (id int);\n");
    write(p.root(), "20240101000000_a.sql", "create table a (id int, extra text);\n");
    let out = p.call(json!({"action": "migrate"})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    assert_eq!(applied(&out), ["supabase/migrations/20240103000000_c.sql"]);
    let text = out.joined_text();
    assert!(
        text.contains("warning: supabase/migrations/20240101000000_a.sql was edited"),
        "{text}"
    );
    let out = p.call(json!({"action": "status"})).await;
    let edited: Vec<bool> = out.structured.unwrap()["migrations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["edited"].as_bool().unwrap())
        .collect();
    assert_eq!(edited, [true, false, false]);
    // A file older than the newest applied one is applied, with a warning.
    write(p.root(), "20231231000000_early.sql", "create table early (id int);\n");
    let out = p.call(json!({"action": "migrate"})).await;
    assert_eq!(applied(&out), ["supabase/migrations/20231231000000_early.sql"]);
    assert!(out.joined_text().contains("older than the newest applied"), "{}", out.joined_text());
}

#[tokio::test]
async fn bad_inputs_are_refused_and_nothing_is_written() {
    let p = Project::new("postgresql://u:CANARYpw123@127.0.0.1:1/db?sslmode=disable");
    let huge = "select 1;\n".repeat(110_000);
    for (args, expect) in [
        (json!({"action": "new", "name": "../evil", "sql": "select 1"}), "`name` must be"),
        (json!({"action": "new", "name": "a/b", "sql": "select 1"}), "`name` must be"),
        (json!({"action": "new", "name": "x.sql", "sql": "select 1"}), "`name` must be"),
        (json!({"action": "new", "name": "", "sql": "select 1"}), "`name` must be"),
        (json!({"action": "new", "name": "x".repeat(101), "sql": "select 1"}), "`name` must be"),
        (json!({"action": "new", "name": "ok", "sql": huge}), "over the 1048576-byte limit"),
        (json!({"action": "new", "name": "ok", "sql": "  \n "}), "`sql` is empty"),
        (json!({"action": "new", "name": "ok", "sql": "select 1\u{0}"}), "NUL"),
        (json!({"action": "new", "sql": "select 1"}), "needs `name`"),
        (json!({"action": "new", "name": "ok"}), "needs `sql`"),
        (json!({"action": "status", "name": "x"}), "only for action new"),
        (json!({"action": "migrate", "sql": "drop table x"}), "only for action new"),
        (json!({"action": "status", "secret": "X_URL"}), "only for action link"),
        (json!({"action": "link", "secret": "lower"}), "`secret` must be"),
        (json!({"action": "link", "project_ref": "short"}), "`project_ref` must be"),
        (json!({"action": "drop"}), "action"),
        (json!({"action": 5}), "action"),
        (json!({}), "action"),
        (json!({"action": "new", "name": 5, "sql": "x"}), "name"),
        (json!({"action": "status", "force": true}), "force"),
    ] {
        let out = p.call(args.clone()).await;
        assert!(out.is_error, "{args}");
        assert!(out.joined_text().contains(expect), "{args}: {}", out.joined_text());
        assert!(!out.joined_text().contains("CANARY"), "{}", out.joined_text());
    }
    assert!(!p.root().join("supabase").exists(), "nothing written");
    assert!(!p.root().parent().unwrap().join("evil.sql").exists());
    // A migrations folder that is a symlink out of the project is refused.
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(p.root().join("supabase")).unwrap();
    std::os::unix::fs::symlink(outside.path(), p.root().join(DIR)).unwrap();
    let out = p.call(json!({"action": "new", "name": "ok", "sql": "select 1"})).await;
    assert!(out.is_error, "{}", out.joined_text());
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0, "nothing written outside");
    // A binary file in the folder: named, not applied.
    std::fs::remove_file(p.root().join(DIR)).unwrap();
    std::fs::create_dir_all(p.root().join(DIR)).unwrap();
    std::fs::write(p.root().join(DIR).join("20240101000000_bin.sql"), b"\xff\xfe\x00binary")
        .unwrap();
    let out = p.call(json!({"action": "migrate"})).await;
    assert!(
        out.is_error && out.joined_text().contains("20240101000000_bin.sql"),
        "{}",
        out.joined_text()
    );
    // Two files with one version.
    std::fs::write(p.root().join(DIR).join("20240101000000_bin.sql"), "select 1").unwrap();
    std::fs::write(p.root().join(DIR).join("20240101000000_twin.sql"), "select 2").unwrap();
    let out = p.call(json!({"action": "migrate"})).await;
    assert!(out.joined_text().contains("same version"), "{}", out.joined_text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_action_but_status_waits_for_approval_under_ask() {
    let Some(pg) = postgres_or_skip() else { return };
    let url = pg.url(PASSWORD);
    let mut config = allowed();
    config.approval = hands_core::config::Approval::Ask;
    let p = Project::with(&url, config);
    write(p.root(), "20240101000000_a.sql", "create table a (id int);\n");
    let no = ScriptedApprover::new(false);
    let sess = session(p.root(), None, None);
    sess.insert_extension(ApproverHandle(no.clone()));
    let out = call(&p.reg, &sess, "supabase_setup", json!({"action": "status"})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    assert!(no.summaries().is_empty(), "status asks nobody");
    for args in [
        json!({"action": "migrate"}),
        json!({"action": "new", "name": "b", "sql": "create table b (id int)"}),
        json!({"action": "restart"}),
        json!({"action": "link"}),
    ] {
        let out = call(&p.reg, &sess, "supabase_setup", args.clone()).await;
        assert!(
            out.is_error && out.joined_text().contains("declined"),
            "{args}: {}",
            out.joined_text()
        );
    }
    assert_eq!(no.summaries().len(), 4, "{:?}", no.summaries());
    assert!(no.summaries()[0].contains("apply the pending migrations"), "{:?}", no.summaries());
    let asked = format!("{:?}", no.asked.lock().unwrap());
    assert!(!asked.contains(PASSWORD), "{asked}");
    assert!(rows(&url, "select 1 from pg_class where relname = 'a'").await.is_empty());
    assert_eq!(std::fs::read_dir(p.root().join(DIR)).unwrap().count(), 1, "no file written");
    // Approved: it runs. Nobody to ask: refused, with what to do.
    let yes = ScriptedApprover::new(true);
    let sess = session(p.root(), None, None);
    sess.insert_extension(ApproverHandle(yes.clone()));
    let out = call(&p.reg, &sess, "supabase_setup", json!({"action": "migrate"})).await;
    assert!(!out.is_error && applied(&out).len() == 1, "{}", out.joined_text());
    let nobody = session(p.root(), None, None);
    let out = call(&p.reg, &nobody, "supabase_setup", json!({"action": "restart"})).await;
    assert!(out.is_error && out.joined_text().contains("nobody to ask"), "{}", out.joined_text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn link_verifies_the_database_and_records_its_secret() {
    let Some(pg) = postgres_or_skip() else { return };
    let url = pg.url(PASSWORD);
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join(".hands")).unwrap();
    std::fs::write(tmp.path().join(".hands/project.toml"), "# mine\n[supabase]\nurl = \"x\"\n")
        .unwrap();
    let store = Arc::new(MemoryStore::default());
    let reg = registry(&allowed(), Arc::clone(&store));
    // A wrong password: nothing stored, nothing recorded.
    let asker = ScriptedSecrets::new(&[("APP_DB_URL", &pg.url("CANARYwrong-pass"))]);
    let sess = session(tmp.path(), Some(asker), None);
    let out =
        call(&reg, &sess, "supabase_setup", json!({"action": "link", "secret": "APP_DB_URL"}))
            .await;
    assert!(
        out.is_error && out.joined_text().contains("Nothing was stored"),
        "{}",
        out.joined_text()
    );
    assert!(!shown(&out).contains("CANARY"), "{}", shown(&out));
    assert!(store.names().is_empty());
    assert!(
        !std::fs::read_to_string(tmp.path().join(".hands/project.toml"))
            .unwrap()
            .contains("APP_DB_URL")
    );
    // The right one: asked, verified, stored, recorded.
    let asker = ScriptedSecrets::new(&[("APP_DB_URL", &url)]);
    let sess = session(tmp.path(), Some(Arc::clone(&asker)), None);
    let out = call(
        &reg,
        &sess,
        "supabase_setup",
        json!({"action": "link", "secret": "APP_DB_URL", "project_ref": "abcdefghijklmnopqrst"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.joined_text());
    assert_eq!(asker.asked(), ["APP_DB_URL"]);
    let s = out.structured.clone().unwrap();
    assert_eq!(s["secret"], "APP_DB_URL");
    assert_eq!(s["project_ref"], "abcdefghijklmnopqrst");
    assert!(s["database"].as_str().unwrap().starts_with("hands_test@127.0.0.1:"), "{s}");
    assert!(!shown(&out).contains(PASSWORD), "{}", shown(&out));
    assert_eq!(store.get(tmp.path(), "APP_DB_URL").unwrap().expose(), url);
    let recorded = std::fs::read_to_string(tmp.path().join(".hands/project.toml")).unwrap();
    assert!(recorded.starts_with("# mine\n"), "{recorded}");
    let parsed: toml::Table = toml::from_str(&recorded).unwrap();
    assert_eq!(parsed["supabase"]["db_url_secret"].as_str(), Some("APP_DB_URL"));
    assert_eq!(parsed["supabase"]["url"].as_str(), Some("x"), "other keys kept");
    // The linked database is the one db_schema and migrate use (no SUPABASE_DB_URL anywhere).
    let out = call(
        &reg,
        &sess,
        "db_schema",
        json!({"schema": "information_schema", "table": "sql_features"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.joined_text());
    write(tmp.path(), "20240101000000_a.sql", "create table linked_a (id int);\n");
    let out = call(&reg, &sess, "supabase_setup", json!({"action": "migrate"})).await;
    assert!(!out.is_error && applied(&out).len() == 1, "{}", out.joined_text());
    // Linked again: the stored value is used, nobody is asked.
    let asker = ScriptedSecrets::new(&[]);
    let sess = session(tmp.path(), Some(Arc::clone(&asker)), None);
    let out = call(&reg, &sess, "supabase_setup", json!({"action": "link"})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    assert!(asker.asked().is_empty());
    assert!(!tree_text(tmp.path()).contains(PASSWORD));
}
