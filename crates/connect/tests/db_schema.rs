//! db_schema against a REAL PostgreSQL 15 started for the test, with a Supabase-like fixture: an
//! `auth` schema stub, the roles anon/authenticated/service_role, tables with and without
//! row-level security and policies, an enum, a view and a trigger.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "common/postgres.rs"]
mod postgres;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{MemoryStore, call, registry, session, shown};
use hands_connect::ConnectConfig;
use hands_core::secret::{SecretStore as _, SecretValue};
use postgres::{PASSWORD, postgres_or_skip};
use serde_json::json;

const FIXTURE: &str = r#"
create role anon nologin; create role authenticated nologin; create role service_role nologin bypassrls;
create schema auth;
create table auth.users (id uuid primary key, email text);
create function auth.uid() returns uuid language sql stable as $$ select null::uuid $$;
create type public.status as enum ('todo', 'doing', 'done');
create table public.profiles (
  id uuid primary key references auth.users (id) on delete cascade,
  username text unique not null check (char_length(username) >= 3),
  created_at timestamptz not null default now()
);
alter table public.profiles enable row level security;
create policy "own profile" on public.profiles for update to authenticated
  using (auth.uid() = id) with check (auth.uid() = id);
create policy "public read" on public.profiles for select to anon, authenticated using (true);
create table public.todos (
  id bigint generated always as identity primary key,
  owner uuid references public.profiles (id),
  title text,
  state public.status default 'todo'
);
create index todos_owner_idx on public.todos (owner);
create view public.open_todos as select id, title from public.todos where state <> 'done';
create function public.touch() returns trigger language plpgsql as $$ begin return new; end $$;
create trigger todos_touch before update on public.todos for each row execute function public.touch();
create table "weird'; drop table public.todos; --" (x int);
"#;

fn allowed() -> ConnectConfig {
    let mut config = ConnectConfig::default();
    config.net.allow_hosts = vec!["127.0.0.1".into()];
    config
}

async fn fixture(url: &str, sql: &str) {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(conn);
    client.batch_execute(sql).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_live_schema_is_read_with_rls_policies_and_bind_parameters() {
    let Some(pg) = postgres_or_skip() else { return };
    let url = pg.url(PASSWORD);
    fixture(&url, FIXTURE).await;
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

/// The benchmark: 500 tables with 5,000 columns in ≤ 300 ms (release: `bench/db_schema.sh`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_hundred_tables_are_read_quickly() {
    let Some(pg) = postgres_or_skip() else { return };
    let url = pg.url(PASSWORD);
    let mut sql = String::new();
    for t in 0..500 {
        let cols: Vec<String> =
            (0..10).map(|c| format!("c{c} text not null default 'x'")).collect();
        sql.push_str(&format!("create table t{t} (id int primary key, {});", cols[..9].join(", ")));
    }
    fixture(&url, &sql).await;
    let tmp = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::default());
    store.put(tmp.path(), "SUPABASE_DB_URL", &SecretValue::new(url)).unwrap();
    let reg = registry(&allowed(), Arc::clone(&store));
    let sess = session(tmp.path(), None, None);
    let started = Instant::now();
    let out = call(&reg, &sess, "db_schema", json!({})).await;
    let took = started.elapsed();
    assert!(!out.is_error, "{}", out.joined_text());
    let s = out.structured.unwrap();
    assert!(s["tables"][0]["columns"][0].get("default").is_none(), "no default: left out");
    // The registry caps the shown result (and spills the whole); the last table is there too.
    assert_eq!(s["tables"][0]["columns"].as_array().unwrap().len(), 10);
    let out = call(&reg, &sess, "db_schema", json!({"table": "t499"})).await;
    assert_eq!(out.structured.unwrap()["tables"][0]["columns"].as_array().unwrap().len(), 10);
    eprintln!("db_schema: 500 tables, 5000 columns in {took:?}");
    let limit =
        if cfg!(debug_assertions) { Duration::from_secs(3) } else { Duration::from_millis(300) };
    assert!(took < limit, "{took:?}");
}
