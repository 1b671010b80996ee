//! db_schema against a REAL PostgreSQL 15 started for the test, with the Supabase-like fixture
//! (common/supabase.rs: an `auth` schema stub, the roles anon/authenticated/service_role, tables
//! with and without row-level security and policies, an enum, a view, a trigger, functions), and
//! against real SQLite files; the linked database from each of its sources.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use crate::common::postgres;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::supabase::{FIXTURE, exec};
use common::{MemoryStore, call, registry, session, shown};
use hands_connect::ConnectConfig;
use hands_core::secret::{SecretStore as _, SecretValue};
use postgres::{PASSWORD, postgres_or_skip};
use serde_json::json;

fn allowed() -> ConnectConfig {
    let mut config = ConnectConfig::default();
    config.net.allow_hosts = vec!["127.0.0.1".into()];
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_live_schema_is_read_with_rls_policies_and_bind_parameters() {
    let Some(pg) = postgres_or_skip() else { return };
    let url = pg.url(PASSWORD);
    exec(&url, FIXTURE).await;
    let tmp = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::default());
    let reg = registry(&allowed(), Arc::clone(&store));
    let sess = session(tmp.path(), None, None);

    // No database linked: how to link one.
    let out = call(&reg, &sess, "db_schema", json!({})).await;
    assert!(out.is_error);
    assert!(out.joined_text().contains("connect_supabase"), "{}", out.joined_text());

    store.put(tmp.path(), "SUPABASE_DB_URL", &SecretValue::new(url.clone())).unwrap();
    let out = call(&reg, &sess, "db_schema", json!({"include": ["views", "triggers"]})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    let text = out.joined_text();
    let s = out.structured.clone().unwrap();
    let names: Vec<&str> =
        s["tables"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["profiles", "todos", "weird'; drop table public.todos; --"]);
    let profiles = &s["tables"][0];
    assert_eq!(profiles["rls_enabled"], true);
    assert_eq!(s["tables"][1]["rls_enabled"], false);
    let cols = profiles["columns"].as_array().unwrap();
    assert_eq!(cols[2]["type"], "timestamp with time zone");
    assert_eq!(cols[2]["nullable"], false);
    assert_eq!(cols[2]["default"], "now()");
    let kinds: Vec<&str> = profiles["constraints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kind"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"primary_key")
            && kinds.contains(&"foreign_key")
            && kinds.contains(&"check")
            && kinds.contains(&"unique"),
        "{kinds:?}"
    );
    let policies = profiles["policies"].as_array().unwrap();
    assert_eq!(policies.len(), 2);
    assert_eq!(policies[0]["name"], "own profile");
    assert_eq!(policies[0]["command"], "UPDATE");
    assert_eq!(policies[0]["roles"], json!(["authenticated"]));
    assert_eq!(policies[0]["using"], "(auth.uid() = id)");
    assert_eq!(policies[0]["with_check"], "(auth.uid() = id)");
    assert_eq!(policies[1]["roles"], json!(["anon", "authenticated"]));
    assert_eq!(s["enums"][0]["labels"], json!(["todo", "doing", "done"]));
    assert_eq!(s["views"][0]["name"], "open_todos");
    assert!(s["tables"][1]["triggers"][0].as_str().unwrap().contains("todos_touch"));
    assert!(s["tables"][1]["indexes"][0].as_str().unwrap().contains("todos_owner_idx"));
    assert!(text.contains("create table public.profiles ("), "{text}");
    assert!(text.contains("-- row level security: on"), "{text}");
    assert!(text.contains("create policy \"own profile\" on public.profiles for UPDATE to authenticated using ((auth.uid() = id)) with check ((auth.uid() = id));"), "{text}");
    assert!(text.contains("create view public.open_todos"), "{text}");
    assert!(!shown(&out).contains(PASSWORD), "no secret in the result");

    // One table; a hostile name is a bind parameter: found, and nothing dropped.
    let out =
        call(&reg, &sess, "db_schema", json!({"table": "weird'; drop table public.todos; --"}))
            .await;
    assert!(!out.is_error, "{}", out.joined_text());
    assert_eq!(out.structured.unwrap()["tables"].as_array().unwrap().len(), 1);
    let out = call(&reg, &sess, "db_schema", json!({"table": "todos"})).await;
    assert_eq!(out.structured.unwrap()["tables"][0]["name"], "todos");

    // All schemas: auth.users shows up; an unknown table says what to do.
    let out = call(&reg, &sess, "db_schema", json!({"schema": "*"})).await;
    assert!(out.joined_text().contains("create table auth.users"), "{}", out.joined_text());
    let out = call(&reg, &sess, "db_schema", json!({"table": "nope"})).await;
    assert!(out.is_error && out.joined_text().contains("without `table`"), "{}", out.joined_text());

    // Wrong types, missing/unknown fields, huge and binary names.
    for args in [
        json!({"table": 5}),
        json!({"include": ["everything"]}),
        json!({"tables": "x"}),
        json!({"table": "x".repeat(100_000)}),
        json!({"schema": "a\u{0}b"}),
        json!({"schema": ""}),
    ] {
        let out = call(&reg, &sess, "db_schema", args.clone()).await;
        assert!(out.is_error, "{args}: {}", out.joined_text());
    }

    // The transaction is read-only: the tool never writes (a bad password errs without echoing it).
    store
        .put(tmp.path(), "SUPABASE_DB_URL", &SecretValue::new(pg.url("CANARYwrong-pass")))
        .unwrap();
    let out = call(&reg, &sess, "db_schema", json!({})).await;
    assert!(out.is_error && !out.joined_text().contains("CANARY"), "{}", out.joined_text());
}

/// 500 tables with 5,000 columns come back whole (their timing is `bench/db_schema.sh`'s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_hundred_tables_are_read_whole() {
    let Some(pg) = postgres_or_skip() else { return };
    let url = pg.url(PASSWORD);
    let mut sql = String::new();
    for t in 0..500 {
        let cols: Vec<String> =
            (0..10).map(|c| format!("c{c} text not null default 'x'")).collect();
        sql.push_str(&format!("create table t{t} (id int primary key, {});", cols[..9].join(", ")));
    }
    exec(&url, &sql).await;
    let tmp = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::default());
    store.put(tmp.path(), "SUPABASE_DB_URL", &SecretValue::new(url)).unwrap();
    let reg = registry(&allowed(), Arc::clone(&store));
    let sess = session(tmp.path(), None, None);
    let out = call(&reg, &sess, "db_schema", json!({})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    let s = out.structured.unwrap();
    assert!(s["tables"][0]["columns"][0].get("default").is_none(), "no default: left out");
    // The registry caps the shown result (and spills the whole); the last table is there too.
    assert_eq!(s["tables"][0]["columns"].as_array().unwrap().len(), 10);
    let out = call(&reg, &sess, "db_schema", json!({"table": "t499"})).await;
    assert_eq!(out.structured.unwrap()["tables"][0]["columns"].as_array().unwrap().len(), 10);
}

/// `include: ["functions"]`: the project's functions and procedures with their arguments,
/// result, language, security and volatility; an extension's functions are left out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn functions_are_listed_with_their_signature_and_security() {
    let Some(pg) = postgres_or_skip() else { return };
    let url = pg.url(PASSWORD);
    exec(&url, FIXTURE).await;
    // An extension's functions (citext: dozens in public) are not the project's.
    exec(&url, "create extension citext schema public").await;
    let tmp = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::default());
    store.put(tmp.path(), "SUPABASE_DB_URL", &SecretValue::new(url.clone())).unwrap();
    let reg = registry(&allowed(), Arc::clone(&store));
    let sess = session(tmp.path(), None, None);
    let out = call(&reg, &sess, "db_schema", json!({"include": ["functions"]})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    let s = out.structured.clone().unwrap();
    let functions = s["functions"].as_array().unwrap();
    let names: Vec<&str> = functions.iter().map(|f| f["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["cleanup", "is_admin", "touch"], "no extension function: {names:?}");
    assert_eq!(functions[0]["kind"], "procedure");
    assert!(functions[0].get("returns").is_none());
    assert_eq!(functions[1]["arguments"], "uid uuid, strict_check boolean DEFAULT true");
    assert_eq!(functions[1]["returns"], "boolean");
    assert_eq!(functions[1]["language"], "sql");
    assert_eq!(functions[1]["security_definer"], true);
    assert_eq!(functions[1]["volatility"], "stable");
    assert_eq!(functions[2]["returns"], "trigger");
    assert_eq!(functions[2]["language"], "plpgsql");
    assert_eq!(functions[2]["security_definer"], false);
    assert_eq!(functions[2]["volatility"], "volatile");
    let text = out.joined_text();
    assert!(
        text.contains("create function public.is_admin(uid uuid, strict_check boolean DEFAULT true) returns boolean language sql stable security definer;"),
        "{text}"
    );
    assert!(!text.contains("select false"), "bodies are left out: {text}");
    // Every schema: auth.uid() too. One table: the functions its triggers call.
    let out =
        call(&reg, &sess, "db_schema", json!({"schema": "*", "include": ["functions"]})).await;
    assert!(
        out.joined_text().contains("create function auth.uid() returns uuid language sql stable;")
    );
    let out =
        call(&reg, &sess, "db_schema", json!({"table": "todos", "include": ["functions"]})).await;
    let names: Vec<String> = out.structured.unwrap()["functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["touch"]);
    // Without `include`, none.
    let out = call(&reg, &sess, "db_schema", json!({})).await;
    assert_eq!(out.structured.unwrap()["functions"], json!([]));
}

/// With `table`, the enums are those the table in the asked schema uses, not those of a table of
/// the same name elsewhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tables_enums_are_those_of_the_table_in_its_schema() {
    let Some(pg) = postgres_or_skip() else { return };
    let url = pg.url(PASSWORD);
    exec(&url, FIXTURE).await;
    exec(
        &url,
        "create type public.mood as enum ('calm', 'busy'); create schema other;
         create table other.todos (id int, mood public.mood[]);
         create table public.moods (m public.mood, w int, area int generated always as (w * w) stored);",
    )
    .await;
    let tmp = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::default());
    store.put(tmp.path(), "SUPABASE_DB_URL", &SecretValue::new(url)).unwrap();
    let reg = registry(&allowed(), Arc::clone(&store));
    let sess = session(tmp.path(), None, None);
    let enums = |out: &hands_core::ToolOutput| -> Vec<String> {
        out.structured.as_ref().unwrap()["enums"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| format!("{}.{}", e["schema"].as_str().unwrap(), e["name"].as_str().unwrap()))
            .collect()
    };
    let out = call(&reg, &sess, "db_schema", json!({"table": "todos"})).await;
    assert_eq!(enums(&out), ["public.status"], "public.todos uses status only");
    let out = call(&reg, &sess, "db_schema", json!({"table": "todos", "schema": "other"})).await;
    assert_eq!(enums(&out), ["public.mood"], "other.todos uses mood (as an array)");
    let out = call(&reg, &sess, "db_schema", json!({"table": "moods"})).await;
    assert_eq!(enums(&out), ["public.mood"]);
    // A generated column's expression names its table's columns: deparsed with its table.
    assert_eq!(out.structured.unwrap()["tables"][0]["columns"][2]["default"], "(w * w)");
    let out = call(&reg, &sess, "db_schema", json!({})).await;
    assert_eq!(enums(&out), ["public.mood", "public.status"]);
    // A view by name is found too.
    let out = call(&reg, &sess, "db_schema", json!({"table": "open_todos"})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    assert_eq!(out.structured.unwrap()["views"][0]["name"], "open_todos");
}

/// `[database] url_secret` names the stored secret that holds the URL; it wins over
/// connect_supabase's, and a missing one is a clear error. Both sources set: refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_url_secret_setting_names_the_database() {
    let Some(pg) = postgres_or_skip() else { return };
    let url = pg.url(PASSWORD);
    exec(&url, "create database app").await;
    exec(&url, "create table in_postgres (x int)").await;
    let app = url.replace("/postgres?", "/app?");
    exec(&app, "create table in_app (x int)").await;
    let tmp = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::default());
    store.put(tmp.path(), "SUPABASE_DB_URL", &SecretValue::new(url.clone())).unwrap();
    let mut config = allowed();
    config.database.url_secret = Some("APP_DATABASE_URL".into());
    let reg = registry(&config, Arc::clone(&store));
    let sess = session(tmp.path(), None, None);
    let out = call(&reg, &sess, "db_schema", json!({})).await;
    assert!(out.is_error);
    let text = out.joined_text();
    assert!(
        text.contains("APP_DATABASE_URL") && text.contains("hands secrets set APP_DATABASE_URL"),
        "{text}"
    );
    store.put(tmp.path(), "APP_DATABASE_URL", &SecretValue::new(app)).unwrap();
    let out = call(&reg, &sess, "db_schema", json!({})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    let s = out.structured.clone().unwrap();
    assert_eq!(s["tables"][0]["name"], "in_app");
    assert_eq!(s["engine"], "postgresql");
    assert!(s["database"].as_str().unwrap().ends_with("/app"), "{s}");
    assert!(!shown(&out).contains(PASSWORD));
    config.database.sqlite = Some("app.db".into());
    let reg = registry(&config, Arc::clone(&store));
    let out = call(&reg, &sess, "db_schema", json!({})).await;
    assert!(out.is_error && out.joined_text().contains("two databases"), "{}", out.joined_text());
    // Nothing linked at all: the three ways to link one.
    let tmp = tempfile::tempdir().unwrap();
    let reg = registry(&allowed(), Arc::new(MemoryStore::default()));
    let sess = session(tmp.path(), None, None);
    let out = call(&reg, &sess, "db_schema", json!({})).await;
    let text = out.joined_text();
    assert!(
        out.is_error
            && text.contains("connect_supabase")
            && text.contains("url_secret")
            && text.contains("sqlite"),
        "{text}"
    );
}

fn sqlite_fixture(path: &Path) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(
        "pragma journal_mode = wal;
         create table authors (id integer primary key, name text not null unique, born int check (born > 1000));
         create table books (
           id integer primary key,
           author_id integer not null references authors (id) on delete cascade,
           title text not null default 'untitled',
           isbn text,
           constraint isbn_len check (length(isbn) = 13)
         );
         create index books_title on books (title);
         create view long_books as select id, title from books where length(title) > 20;
         create trigger books_touch after update on books begin select 1; end;
         insert into authors (name, born) values ('Ursula', 1929);",
    )
    .unwrap();
}

/// `[database] sqlite`: a SQLite file of the project, read read-only through the confined
/// workspace; a path out of the project, a symlink out of it, or a file that is not SQLite is
/// refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_file_of_the_project_is_read_read_only() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("data")).unwrap();
    let db = tmp.path().join("data/app.db");
    sqlite_fixture(&db);
    let before = std::fs::read(&db).unwrap();
    let mut config = allowed();
    config.database.sqlite = Some("data/app.db".into());
    let reg = registry(&config, Arc::new(MemoryStore::default()));
    let sess = session(tmp.path(), None, None);
    let out =
        call(&reg, &sess, "db_schema", json!({"include": ["views", "triggers", "functions"]}))
            .await;
    assert!(!out.is_error, "{}", out.joined_text());
    let s = out.structured.clone().unwrap();
    assert_eq!(s["engine"], "sqlite");
    assert_eq!(s["database"], "data/app.db");
    let names: Vec<&str> =
        s["tables"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["authors", "books"]);
    let books = &s["tables"][1];
    assert_eq!(
        books["columns"][2],
        json!({"name": "title", "type": "TEXT", "nullable": false, "default": "'untitled'"})
    );
    let defs: Vec<&str> = books["constraints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["definition"].as_str().unwrap())
        .collect();
    assert_eq!(
        defs,
        [
            "PRIMARY KEY (id)",
            "FOREIGN KEY (author_id) REFERENCES authors(id) ON DELETE CASCADE",
            "CHECK (length(isbn) = 13)"
        ]
    );
    let authors = &s["tables"][0];
    let kinds: Vec<&str> = authors["constraints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["primary_key", "unique", "check"]);
    assert_eq!(books["indexes"], json!(["CREATE INDEX books_title on books (title)"]));
    assert!(books["triggers"][0].as_str().unwrap().contains("books_touch"));
    assert_eq!(s["views"][0]["name"], "long_books");
    assert_eq!(s["notes"], json!(["SQLite has no stored functions"]));
    let text = out.joined_text();
    assert!(text.starts_with("-- sqlite data/app.db"), "{text}");
    assert!(text.contains("create table main.books (\n  id INTEGER,"), "{text}");
    assert!(!text.contains("row level security"), "{text}");
    let out = call(&reg, &sess, "db_schema", json!({"table": "authors"})).await;
    assert_eq!(out.structured.unwrap()["tables"].as_array().unwrap().len(), 1);
    let out = call(&reg, &sess, "db_schema", json!({"schema": "auth"})).await;
    assert!(out.is_error && out.joined_text().contains("one schema"), "{}", out.joined_text());
    assert_eq!(std::fs::read(&db).unwrap(), before, "the file is unchanged");

    let outside = tempfile::tempdir().unwrap();
    sqlite_fixture(&outside.path().join("secret.db"));
    std::os::unix::fs::symlink(outside.path().join("secret.db"), tmp.path().join("link.db"))
        .unwrap();
    std::fs::write(tmp.path().join("notes.db"), "just text, not a database").unwrap();
    for (path, expect) in [
        ("../secret.db", "outside the project root"),
        ("link.db", "outside the project root"),
        ("notes.db", "not a SQLite database"),
        ("missing.db", "does not exist"),
        ("data", "a folder"),
    ] {
        let mut config = allowed();
        config.database.sqlite = Some(path.into());
        let reg = registry(&config, Arc::new(MemoryStore::default()));
        let out = call(&reg, &sess, "db_schema", json!({})).await;
        assert!(out.is_error, "{path}");
        assert!(out.joined_text().contains(expect), "{path}: {}", out.joined_text());
        assert!(!out.joined_text().contains("authors"), "{path}: nothing of it read");
    }
}

/// db_schema's transaction is READ ONLY: every write in it fails with 25006, and nothing is
/// changed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn db_schemas_transaction_cannot_write() {
    let Some(pg) = postgres_or_skip() else { return };
    let url = pg.url(PASSWORD);
    exec(&url, "create table kept (x int); insert into kept values (1)").await;
    let net = allowed().net;
    for write in [
        "insert into kept values (2)",
        "update kept set x = 3",
        "delete from kept",
        "create table made (x int)",
        "drop table kept",
        "alter table kept add column y int",
    ] {
        let mut client =
            hands_connect::postgres::connect(&url, hands_connect::postgres::UrlFrom::User, &net)
                .await
                .unwrap();
        let tx =
            hands_connect::postgres::read_only(&mut client, Duration::from_secs(10)).await.unwrap();
        let err = tx.batch_execute(write).await.unwrap_err();
        assert_eq!(err.as_db_error().unwrap().code().code(), "25006", "{write}: {err}");
    }
    let rows = common::supabase::rows(&url, "select x::text from kept").await;
    assert_eq!(rows, [["1"]]);
}

/// The statement timeout of db_schema's transaction (10 s by default, `[database]
/// statement_timeout_ms` here) cancels a statement that runs past it: SQLSTATE 57014.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn db_schemas_statement_timeout_cancels_a_slow_statement() {
    let Some(pg) = postgres_or_skip() else { return };
    let url = pg.url(PASSWORD);
    assert_eq!(ConnectConfig::default().database.statement_timeout_ms, 10_000);
    let mut config = allowed();
    config.database.statement_timeout_ms = 300;
    let timeout = Duration::from_millis(config.database.statement_timeout_ms);
    let mut client =
        hands_connect::postgres::connect(&url, hands_connect::postgres::UrlFrom::User, &config.net)
            .await
            .unwrap();
    let tx = hands_connect::postgres::read_only(&mut client, timeout).await.unwrap();
    let shown: String = tx.query_one("show statement_timeout", &[]).await.unwrap().get(0);
    assert_eq!(shown, "300ms");
    let started = Instant::now();
    let err = tx.batch_execute("select pg_sleep(5)").await.unwrap_err();
    assert_eq!(err.as_db_error().unwrap().code().code(), "57014", "{err}");
    assert!(started.elapsed() < Duration::from_secs(4), "cancelled, not waited out");
    drop(tx);
    // The default transaction has 10 s, and the tool runs with the setting.
    let tx =
        hands_connect::postgres::read_only(&mut client, Duration::from_secs(10)).await.unwrap();
    let shown: String = tx.query_one("show statement_timeout", &[]).await.unwrap().get(0);
    assert_eq!(shown, "10s");
    drop(tx);
    let tmp = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::default());
    store.put(tmp.path(), "SUPABASE_DB_URL", &SecretValue::new(url)).unwrap();
    let reg = registry(&config, Arc::clone(&store));
    let out = call(&reg, &session(tmp.path(), None, None), "db_schema", json!({})).await;
    assert!(!out.is_error, "{}", out.joined_text());
}
