//! Load for `bench/scale.sh`: appends events to existing sessions as fast as the store takes
//! them, the way a node's hub does (one `append_event` per event), from `CONCURRENCY` tasks for
//! `SECONDS`, and prints `appended=N seconds=S`. Each event is a `process_notice` whose text is
//! the wall-clock send time in milliseconds, so that a subscriber can tell how long it took to
//! reach it. The store is `[store]`'s: `HANDS_STORE_URL` for postgres, a path for sqlite.
//!
//! `cargo run --release -p hands-store --example append_load -- postgres|sqlite:PATH SESSIONS_FILE SECONDS CONCURRENCY`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hands_store::{PostgresOptions, PostgresStore, SqliteStore, Store};
use serde_json::json;

fn now_ms() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs_f64() * 1000.0
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, backend, sessions, seconds, concurrency] = &args[..] else {
        panic!("usage: append_load postgres|sqlite:PATH SESSIONS_FILE SECONDS CONCURRENCY");
    };
    let store: Arc<dyn Store> = match backend.strip_prefix("sqlite:") {
        Some(path) => Arc::new(SqliteStore::open(path).unwrap()),
        None => Arc::new(
            PostgresStore::new(&PostgresOptions {
                url: std::env::var("HANDS_STORE_URL").expect("HANDS_STORE_URL"),
                pool_size: concurrency.parse().unwrap(),
                ca_file: None,
                connect_timeout: Duration::from_secs(10),
                migrate: true,
                node: "append-load".into(),
            })
            .unwrap(),
        ),
    };
    let sessions: Arc<Vec<String>> =
        Arc::new(std::fs::read_to_string(sessions).unwrap().lines().map(str::to_owned).collect());
    let seconds: f64 = seconds.parse().unwrap();
    let appended = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let until = started + Duration::from_secs_f64(seconds);
    let tasks: Vec<_> = (0..concurrency.parse::<usize>().unwrap())
        .map(|task| {
            let (store, sessions, appended) =
                (Arc::clone(&store), Arc::clone(&sessions), Arc::clone(&appended));
            tokio::spawn(async move {
                let mut n = task;
                while Instant::now() < until {
                    let session = &sessions[n % sessions.len()];
                    n += 7;
                    let data =
                        json!({"type": "process_notice", "text": format!("{:.3}", now_ms())});
                    store.append_event(session, now_ms() as i64, data).await.unwrap();
                    appended.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    println!(
        "appended={} seconds={:.3}",
        appended.load(Ordering::Relaxed),
        started.elapsed().as_secs_f64()
    );
}
