//! enable_stripe against a fake Stripe on loopback: it accepts one key and answers 401 to any
//! other, and records every request so that the tests can check the key went only where it
//! should (the Authorization header of GET /v1/account) and nowhere else.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::{Arc, Mutex};

use common::{MemoryStore, ScriptedSecrets, call, registry, session, shown, tree_text};
use hands_connect::ConnectConfig;
use hands_core::secret::SecretStore as _;
use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

const GOOD: &str = "sk_test_CANARYgood0123456789abcdef";
const WRONG: &str = "sk_test_CANARYwrong0123456789abcd";
const LIVE: &str = "sk_live_CANARYlive0123456789abcdef";

/// One request as the fake saw it.
#[derive(Debug, Clone)]
struct Seen {
    head: String,
    authorization: Option<String>,
}

/// A fake Stripe: `GET /v1/account` with `Bearer GOOD` → the account; anything else → 401.
struct FakeStripe {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl FakeStripe {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let log = Arc::clone(&log);
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 65536 {
                        match stream.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&buf).into_owned();
                    let authorization = head
                        .lines()
                        .find_map(|l| {
                            l.split_once(':')
                                .filter(|(k, _)| k.eq_ignore_ascii_case("authorization"))
                        })
                        .map(|(_, v)| v.trim().to_owned());
                    let ok = head.starts_with("GET /v1/account ")
                        && authorization.as_deref() == Some(&format!("Bearer {GOOD}"));
                    log.lock().unwrap().push(Seen { head, authorization });
                    let (status, body) = if ok {
                        ("200 OK", r#"{"id":"acct_1Canary","object":"account","settings":{"dashboard":{"display_name":"Canary Shop"}}}"#.to_owned())
                    } else {
                        ("401 Unauthorized", r#"{"error":{"message":"Invalid API Key provided","type":"invalid_request_error"}}"#.to_owned())
                    };
                    let response = format!(
                        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = stream.write_all(response.as_bytes()).await;
                    let _ = stream.shutdown().await;
                });
            }
        });
        Self { url, seen }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// The tool may reach the fake: the user allowed loopback's 127.0.0.1 in `[net]`.
    fn config(&self) -> ConnectConfig {
        let mut config = ConnectConfig::default();
        config.stripe.base_url = self.url.clone();
        config.net.allow_hosts = vec!["127.0.0.1".into()];
        config
    }
}

#[tokio::test]
async fn a_good_key_is_verified_stored_and_never_shown() {
    let fake = FakeStripe::start().await;
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join(".env.example"), "# app\nDATABASE_URL=\n").unwrap();
    let store = Arc::new(MemoryStore::default());
    let registry = registry(&fake.config(), Arc::clone(&store));
    let asker = ScriptedSecrets::new(&[("STRIPE_SECRET_KEY", GOOD)]);
    let session = session(tmp.path(), Some(Arc::clone(&asker)), None);

    let out = call(&registry, &session, "enable_stripe", json!({})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    let text = out.joined_text();
    assert!(text.contains("acct_1Canary") && text.contains("test mode"), "{text}");
    assert!(text.contains("Canary Shop"), "{text}");
    let s = out.structured.clone().unwrap();
    assert_eq!(s["account_id"], "acct_1Canary");
    assert_eq!((s["mode"].as_str(), s["livemode"].as_bool()), (Some("test"), Some(false)));
    assert_eq!(s["stored_as"], "STRIPE_SECRET_KEY");
    assert_eq!(s["hint"], "sk_t…cdef");
    assert_eq!(s["env_example_added"], json!(["STRIPE_SECRET_KEY", "STRIPE_PUBLISHABLE_KEY"]));
    assert!(!shown(&out).contains("CANARY"), "{}", shown(&out));

    // Asked once, with where to find it; stored for this project.
    let asked = asker.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert!(asked[0].description.contains("Developers → API keys"), "{:?}", asked[0]);
    assert_eq!(store.get(tmp.path(), "STRIPE_SECRET_KEY").unwrap().expose(), GOOD);

    // The key went out once, as the Authorization header of GET /v1/account, and nowhere else.
    let seen = fake.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(seen[0].head.starts_with("GET /v1/account HTTP/1.1\r\n"), "{}", seen[0].head);
    assert_eq!(seen[0].authorization.as_deref(), Some(format!("Bearer {GOOD}").as_str()));
    let without_auth: String = seen[0]
        .head
        .lines()
        .filter(|l| !l.to_ascii_lowercase().starts_with("authorization:"))
        .collect();
    assert!(!without_auth.contains("CANARY"), "{without_auth}");

    // .env.example: the names, never a value, and the other lines kept; no other file written.
    let env = std::fs::read_to_string(tmp.path().join(".env.example")).unwrap();
    assert_eq!(env, "# app\nDATABASE_URL=\nSTRIPE_SECRET_KEY=\nSTRIPE_PUBLISHABLE_KEY=\n");
    assert!(!tree_text(tmp.path()).contains("CANARY"));

    // Again: already there, nothing added.
    let out = call(&registry, &session, "enable_stripe", json!({"mode": "test"})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    assert_eq!(out.structured.unwrap()["env_example_added"], json!([]));
    assert_eq!(std::fs::read_to_string(tmp.path().join(".env.example")).unwrap(), env);
}

#[tokio::test]
async fn a_key_stripe_refuses_is_not_stored() {
    let fake = FakeStripe::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::default());
    let registry = registry(&fake.config(), Arc::clone(&store));
    let session =
        session(tmp.path(), Some(ScriptedSecrets::new(&[("STRIPE_SECRET_KEY", WRONG)])), None);
    let out = call(&registry, &session, "enable_stripe", json!({})).await;
    assert!(out.is_error);
    let text = out.joined_text();
    assert!(
        text.contains("Stripe refused the key") && text.contains("Nothing was stored"),
        "{text}"
    );
    assert!(!text.contains("CANARY"), "{text}");
    // One verification, with the key; a connection from elsewhere on this machine (another
    // suite's process probing loopback ports) is no request of the tool's.
    let verifications: Vec<Seen> =
        fake.seen().into_iter().filter(|s| s.authorization.is_some()).collect();
    let lines: Vec<&str> = verifications.iter().filter_map(|s| s.head.lines().next()).collect();
    assert_eq!(verifications.len(), 1, "{lines:?}");
    assert!(store.names().is_empty());
    assert!(!tmp.path().join(".env.example").exists());
}

#[tokio::test]
async fn the_wrong_mode_or_shape_is_refused_before_anything_is_sent() {
    let fake = FakeStripe::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::default());
    let registry = registry(&fake.config(), Arc::clone(&store));
    for (mode, key, expect) in [
        ("test", LIVE, "a live key but `mode` is test"),
        ("live", GOOD, "a test key but `mode` is live"),
        ("test", "pk_test_CANARY0123456789abcdef", "publishable key"),
        ("test", "sk_test_CANARY", "not a Stripe secret key"),
        ("test", "CANARY-not-a-key-at-all", "not a Stripe secret key"),
    ] {
        let session =
            session(tmp.path(), Some(ScriptedSecrets::new(&[("STRIPE_SECRET_KEY", key)])), None);
        let out = call(&registry, &session, "enable_stripe", json!({"mode": mode})).await;
        assert!(out.is_error, "{mode} {key}");
        let text = out.joined_text();
        assert!(text.contains(expect) && text.contains("Nothing was stored"), "{key}: {text}");
        assert!(!text.contains("CANARY"), "{text}");
    }
    assert!(fake.seen().is_empty(), "nothing sent: {:?}", fake.seen());
    assert!(store.names().is_empty());
    assert!(!tmp.path().join(".env.example").exists());
}

#[tokio::test]
async fn bad_arguments_are_refused_with_the_field_named() {
    let fake = FakeStripe::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::default());
    let registry = registry(&fake.config(), Arc::clone(&store));
    let asker = ScriptedSecrets::new(&[("STRIPE_SECRET_KEY", GOOD)]);
    let session = session(tmp.path(), Some(Arc::clone(&asker)), None);
    for args in [json!({"mode": "prod"}), json!({"mode": 1}), json!({"mode": "test", "key": "x"})] {
        let out = call(&registry, &session, "enable_stripe", args.clone()).await;
        assert!(out.is_error, "{args}");
        let text = out.joined_text();
        assert!(text.contains("mode") || text.contains("key"), "{args}: {text}");
    }
    assert!(asker.asked().is_empty(), "the user is not asked for a call with bad arguments");
    assert!(fake.seen().is_empty());
}

#[tokio::test]
async fn a_base_url_on_this_machine_is_refused_unless_the_user_allows_it() {
    let fake = FakeStripe::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::default());
    let mut config = fake.config();
    config.net.allow_hosts.clear();
    let registry = registry(&config, Arc::clone(&store));
    let session =
        session(tmp.path(), Some(ScriptedSecrets::new(&[("STRIPE_SECRET_KEY", GOOD)])), None);
    let out = call(&registry, &session, "enable_stripe", json!({})).await;
    assert!(out.is_error);
    let text = out.joined_text();
    assert!(
        text.contains("Could not reach Stripe") && text.contains("Nothing was stored"),
        "{text}"
    );
    assert!(fake.seen().is_empty(), "no traffic to a refused address");
    assert!(store.names().is_empty());
}

#[tokio::test]
async fn without_an_asker_the_stored_key_is_used_or_the_user_is_told_how_to_store_one() {
    let fake = FakeStripe::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::default());
    let registry = registry(&fake.config(), Arc::clone(&store));
    let session = session(tmp.path(), None, None);
    let out = call(&registry, &session, "enable_stripe", json!({})).await;
    assert!(out.is_error);
    let text = out.joined_text();
    assert!(text.contains("hands secrets set STRIPE_SECRET_KEY"), "{text}");
    assert!(fake.seen().is_empty());

    // The user stored it with `hands secrets set`: the call verifies that one.
    use hands_core::secret::SecretValue;
    store.put(tmp.path(), "STRIPE_SECRET_KEY", &SecretValue::new(GOOD)).unwrap();
    let out = call(&registry, &session, "enable_stripe", json!({})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    assert_eq!(out.structured.unwrap()["account_id"], "acct_1Canary");
}

#[tokio::test]
async fn a_declined_request_stores_nothing() {
    let fake = FakeStripe::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::default());
    let registry = registry(&fake.config(), Arc::clone(&store));
    let session = session(tmp.path(), Some(ScriptedSecrets::new(&[])), None);
    let out = call(&registry, &session, "enable_stripe", json!({})).await;
    assert!(out.is_error);
    assert!(out.joined_text().contains("declined"), "{}", out.joined_text());
    assert!(fake.seen().is_empty() && store.names().is_empty());
}

#[test]
fn the_spec_needs_a_user_and_declares_its_output() {
    let registry = registry(&ConnectConfig::default(), Arc::new(MemoryStore::default()));
    for name in ["enable_stripe", "connect_supabase"] {
        let tool = registry.get(name).unwrap();
        let spec = tool.spec();
        assert!(spec.policy.needs_user && !spec.policy.subagent, "{name}");
        assert_eq!(spec.policy.family, hands_core::Family::Project);
        assert!(spec.output_schema.is_some() && spec.annotations.open_world, "{name}");
        assert!(!spec.offered(hands_core::Mode::Plan), "{name} changes the project");
    }
}
