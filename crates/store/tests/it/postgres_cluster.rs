//! The `postgres` backend's coordination between nodes, on a throwaway PostgreSQL server: two
//! nodes migrating an empty database at once apply each migration once; leases are granted,
//! held, renewed, taken over after expiry with a new fencing token, and a write under the old
//! token is refused; orphaned turns are found; appends are announced to listeners.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use hands_store::{
    Acquired, Cluster, Fence, Note, PgCluster, PostgresOptions, PostgresStore, SessionRecord,
    Store, StoreError, TurnRecord,
};
use serde_json::json;

use crate::pg;

fn store(server: &pg::Postgres, node: &str) -> Arc<PostgresStore> {
    Arc::new(
        PostgresStore::new(&PostgresOptions {
            url: server.url(pg::PASSWORD),
            pool_size: 4,
            ca_file: None,
            connect_timeout: Duration::from_secs(10),
            migrate: true,
            node: node.into(),
        })
        .unwrap(),
    )
}

fn session(id: &str) -> SessionRecord {
    SessionRecord {
        id: id.into(),
        project_id: "p".into(),
        root: "/work/p".into(),
        mode: "build".into(),
        title: None,
        created_at_ms: 1,
        updated_at_ms: 1,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn nodes_migrating_at_once_apply_each_migration_once() {
    let Some(server) = pg::postgres_or_skip() else { return };
    let stores: Vec<_> = (0..4).map(|i| store(&server, &format!("node-{i}"))).collect();
    let runs: Vec<_> = stores
        .iter()
        .map(|s| {
            let s = Arc::clone(s);
            tokio::spawn(async move { s.migrate().await.unwrap() })
        })
        .collect();
    let mut from_empty = 0;
    for run in runs {
        let migrated = run.await.unwrap();
        assert_eq!(migrated.to, hands_store::postgres::schema::latest());
        if migrated.from == 0 {
            from_empty += 1;
        }
    }
    assert_eq!(from_empty, 1, "exactly one node found the database empty");
    let (have, want) = stores[0].schema_version().await.unwrap();
    assert_eq!(have, want);
    // One row per version, each applied by one node.
    let (client, connection) =
        tokio_postgres::connect(&server.url(pg::PASSWORD), tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let rows = client
        .query("SELECT version, applied_by FROM hands_schema ORDER BY version", &[])
        .await
        .unwrap();
    let versions: Vec<i32> = rows.iter().map(|r| r.get(0)).collect();
    assert_eq!(versions, (1..=want).collect::<Vec<_>>());
    // A database from a newer hands is refused by a store that did not migrate it.
    client
        .execute("INSERT INTO hands_schema VALUES (999, 'future', now(), 'x')", &[])
        .await
        .unwrap();
    let fresh = store(&server, "late");
    let err = fresh.list_sessions().await.unwrap_err().to_string();
    assert!(err.contains("999") && err.contains("newer"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_lease_taken_over_fences_the_old_holder_out() {
    let Some(server) = pg::postgres_or_skip() else { return };
    let (a_store, b_store) = (store(&server, "a"), store(&server, "b"));
    let (a, b) = (PgCluster::new(Arc::clone(&a_store)), PgCluster::new(Arc::clone(&b_store)));
    a_store.create_session(session("s")).await.unwrap();
    a.join("a", "http://127.0.0.1:1").await.unwrap();
    b.join("b", "http://127.0.0.1:2").await.unwrap();
    let ttl = Duration::from_millis(600);

    let Acquired::Granted { token: first, took_over: None } =
        a.acquire("s", "a", None, ttl).await.unwrap()
    else {
        panic!("a did not get the free lease")
    };
    match b.acquire("s", "b", None, ttl).await.unwrap() {
        Acquired::Held(owner) => {
            assert_eq!(owner.node_id, "a");
            assert_eq!(owner.url.as_deref(), Some("http://127.0.0.1:1"));
            assert!(owner.expires_in_ms > 0 && owner.expires_in_ms <= 600, "{owner:?}");
        }
        other => panic!("b got {other:?}"),
    }
    assert_eq!(b.owner("s").await.unwrap().unwrap().node_id, "a");
    // Re-acquiring one's own lease renews it under the same token.
    assert_eq!(
        a.acquire("s", "a", Some(first), ttl).await.unwrap(),
        Acquired::Granted { token: first, took_over: None }
    );
    // A process with the same node id that does not hold the token (a restarted pod) takes the
    // lease over at once, unexpired: a new token, and the old one's writes are refused.
    let stale = a.fenced(Fence { session_id: "s".into(), token: first });
    let Acquired::Granted { token: first, took_over: Some(previous) } =
        a.acquire("s", "a", None, ttl).await.unwrap()
    else {
        panic!("a restarted process did not take its predecessor's lease over")
    };
    assert_eq!(previous, "a");
    assert!(matches!(stale.append_event("s", 1, json!({})).await, Err(StoreError::Fenced(_))));
    let a_view = a.fenced(Fence { session_id: "s".into(), token: first });
    assert_eq!(a_view.append_event("s", 1, json!({"by": "a"})).await.unwrap(), 1);
    a_view
        .start_turn(TurnRecord {
            id: "t".into(),
            session_id: "s".into(),
            status: "running".into(),
            user_message: "go".into(),
            started_at_ms: 1,
            ended_at_ms: None,
        })
        .await
        .unwrap();
    assert!(b.orphans(10).await.unwrap().is_empty(), "the turn's node holds its lease");

    // a stops renewing: after the expiry b takes over with a new token.
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(b.orphans(10).await.unwrap(), ["s"], "a running turn whose lease expired");
    assert!(b.owner("s").await.unwrap().is_none());
    let Acquired::Granted { token: second, took_over: Some(previous) } =
        b.acquire("s", "b", None, ttl).await.unwrap()
    else {
        panic!("b did not take the expired lease over")
    };
    assert_eq!(previous, "a");
    assert!(second > first);

    // Everything a writes under its old token is refused; nothing of it lands.
    let refused = a_view.append_event("s", 2, json!({"by": "a, late"})).await.unwrap_err();
    assert!(matches!(refused, StoreError::Fenced(_)), "{refused:?}");
    assert!(matches!(a_view.append_message("s", None, json!(1)).await, Err(StoreError::Fenced(_))));
    assert!(matches!(a_view.end_turn("t", "completed", 3).await, Err(StoreError::Fenced(_))));
    assert!(matches!(a_view.set_todos("s", json!([])).await, Err(StoreError::Fenced(_))));
    assert!(matches!(
        a_view.update_session("s", Some("plan"), None).await,
        Err(StoreError::Fenced(_))
    ));
    assert!(a.renew("a", vec![("s".into(), first)], ttl).await.unwrap().is_empty());
    let b_view = b.fenced(Fence { session_id: "s".into(), token: second });
    assert_eq!(b_view.append_event("s", 3, json!({"by": "b"})).await.unwrap(), 2);
    b_view.end_turn("t", "aborted", 4).await.unwrap();
    let events = b_store.events_after("s", 0, 10).await.unwrap();
    assert_eq!(events.iter().map(|e| e.data["by"].clone()).collect::<Vec<_>>(), ["a", "b"]);
    assert_eq!(b_store.turns("s").await.unwrap()[0].status, "aborted");
    assert_eq!(b.renew("b", vec![("s".into(), second)], ttl).await.unwrap(), ["s"]);

    // Released, the lease is free for anyone; a fence without a lease refuses.
    b.release("s", second).await.unwrap();
    assert!(matches!(b_view.append_event("s", 5, json!({})).await, Err(StoreError::Fenced(_))));
    assert!(matches!(
        a.acquire("s", "a", None, ttl).await.unwrap(),
        Acquired::Granted { took_over: None, .. }
    ));
    assert!(matches!(a.acquire("nope", "a", None, ttl).await, Err(StoreError::NotFound(_))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn appends_are_announced_to_every_listener() {
    let Some(server) = pg::postgres_or_skip() else { return };
    let writer = store(&server, "w");
    writer.create_session(session("s:1")).await.unwrap();
    let listener = PgCluster::new(store(&server, "l"));
    let mut notes = listener.notes();
    let first = tokio::time::timeout(Duration::from_secs(20), notes.recv()).await.unwrap().unwrap();
    assert_eq!(first, Note::Resync, "listening starts with a resync");
    for n in 1..=3u64 {
        assert_eq!(writer.append_event("s:1", 1, json!({"n": n})).await.unwrap(), n);
    }
    for n in 1..=3u64 {
        let note =
            tokio::time::timeout(Duration::from_secs(10), notes.recv()).await.unwrap().unwrap();
        assert_eq!(note, Note::Event { session_id: "s:1".into(), id: n });
    }
    writer.delete_session("s:1").await.unwrap();
    let note = tokio::time::timeout(Duration::from_secs(10), notes.recv()).await.unwrap().unwrap();
    assert_eq!(note, Note::Event { session_id: "s:1".into(), id: 0 }, "a deletion is announced");
}
