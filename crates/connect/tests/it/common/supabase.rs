//! The Supabase-like side of the database tests: the fixture schema (an `auth` stub, the roles
//! anon/authenticated/service_role, tables with and without row-level security and policies), a
//! `LISTEN pgrst` listener standing in for PostgREST, a scripted approver, and the pinned Supabase
//! CLI (tests/supabase, `npm ci`) as an oracle.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hands_core::approval::{ApprovalRequest, Approver, Decision};
use hands_core::{BoxFuture, CancellationToken};

pub const FIXTURE: &str = r#"
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
create function public.is_admin(uid uuid, strict_check boolean default true) returns boolean
  language sql stable security definer as $$ select false $$;
create procedure public.cleanup(days int) language sql as $$ select 1 $$;
create table "weird'; drop table public.todos; --" (x int);
"#;

/// Run `sql` on the database at `url` (the test's own connection, not hands').
pub async fn exec(url: &str, sql: &str) {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(conn);
    client.batch_execute(sql).await.unwrap();
}

/// The rows of `sql` as strings (NULL as "NULL"), on the test's own connection.
pub async fn rows(url: &str, sql: &str) -> Vec<Vec<String>> {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(conn);
    client
        .simple_query(sql)
        .await
        .unwrap()
        .into_iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(row) => {
                Some((0..row.len()).map(|i| row.get(i).unwrap_or("NULL").to_owned()).collect())
            }
            _ => None,
        })
        .collect()
}

/// What PostgREST would hear: a session that ran `LISTEN pgrst`, its notifications' payloads
/// forwarded as they come.
pub struct Listener {
    _client: tokio_postgres::Client,
    rx: tokio::sync::mpsc::UnboundedReceiver<String>,
}

impl Listener {
    pub async fn start(url: &str) -> Self {
        let (client, mut conn) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Some(message) = std::future::poll_fn(|cx| conn.poll_message(cx)).await {
                match message {
                    Ok(tokio_postgres::AsyncMessage::Notification(n)) if n.channel() == "pgrst" => {
                        let _ = tx.send(n.payload().to_owned());
                    }
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
        });
        client.batch_execute("listen pgrst").await.unwrap();
        Self { _client: client, rx }
    }

    /// The payloads received within `wait` (bounded: at most 100).
    pub async fn received(&mut self, wait: Duration) -> Vec<String> {
        let mut out = Vec::new();
        let deadline = tokio::time::Instant::now() + wait;
        while out.len() < 100 {
            match tokio::time::timeout_at(deadline, self.rx.recv()).await {
                Ok(Some(payload)) => out.push(payload),
                _ => break,
            }
        }
        out
    }
}

/// Answers every approval with `approve`, recording the requests.
pub struct ScriptedApprover {
    pub approve: bool,
    pub asked: Mutex<Vec<ApprovalRequest>>,
}

impl ScriptedApprover {
    pub fn new(approve: bool) -> Arc<Self> {
        Arc::new(Self { approve, asked: Mutex::default() })
    }

    pub fn summaries(&self) -> Vec<String> {
        self.asked.lock().unwrap().iter().map(|r| r.summary.clone()).collect()
    }
}

impl Approver for ScriptedApprover {
    fn approve<'a>(
        &'a self,
        request: &'a ApprovalRequest,
        _cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Decision> {
        self.asked.lock().unwrap().push(request.clone());
        let decision = if self.approve { Decision::Approve } else { Decision::Deny(None) };
        Box::pin(async move { decision })
    }
}

/// The pinned Supabase CLI (tests/supabase/node_modules), or `None` (and a loud note) when it
/// is not installed; under CI its absence fails the test.
pub fn supabase_cli() -> Option<PathBuf> {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/supabase/node_modules/.bin/supabase");
    if bin.exists() {
        return Some(bin);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "the Supabase CLI is not installed: CI must run `npm ci` in tests/supabase (.ci/run does)"
    );
    eprintln!("SKIPPED: the Supabase CLI is not installed (run `npm ci` in tests/supabase)");
    None
}

/// Run the Supabase CLI in `project` with `args`; (exit code, stdout, stderr). Bounded to 120 s;
/// no telemetry, and a HOME of its own so that nothing of this machine's is read.
pub fn run_cli(bin: &Path, project: &Path, args: &[&str]) -> (i32, String, String) {
    let home = tempfile::tempdir().unwrap();
    let (out, err) = (home.path().join("stdout"), home.path().join("stderr"));
    let mut child = std::process::Command::new(bin)
        .args(args)
        .arg("--workdir")
        .arg(project)
        .current_dir(project)
        .env("HOME", home.path())
        .env("SUPABASE_TELEMETRY_DISABLED", "1")
        .env("DO_NOT_TRACK", "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the Supabase CLI took over 120 s: {args:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let read = |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned();
    (status.code().unwrap_or(-1), read(&out), read(&err))
}
