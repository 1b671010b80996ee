//! The secrets tool through the registry and through the session host: a request reaches the
//! session's secret asker, the value goes to the store and never to the result, an event or the
//! stored session; bad input, a short value, a decline, the time limit and a host with nobody to
//! ask each end the call with an error that tells the model what to do next.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use crate::loop_support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hands_agent::event::EventKind;
use hands_agent::host::{Host, HostError, HostParts, NewSession};
use hands_agent::{AgentConfig, AskUserConfig};
use hands_core::ask::AskError;
use hands_core::secret::{
    SecretAsker, SecretAskerHandle, SecretError, SecretRequest, SecretScope, SecretStore,
    SecretValue, StoredSecret,
};
use hands_core::{
    BoxFuture, CancellationToken, CoreConfig, Mode, Registry, Session, ToolCall, ToolOutput,
};
use hands_store::{MemoryStore, Store};
use loop_support::*;
use serde_json::{Value, json};

const CANARY: &str = "sk_test_CANARY_51HxQ9v2Lr8p4f2a";

/// The store as the tool sees it, in memory: project secrets by root, global ones by name.
#[derive(Default)]
struct Mem(Mutex<BTreeMap<(Option<PathBuf>, String), String>>);

impl Mem {
    fn global(&self, name: &str, value: &str) {
        self.0.lock().unwrap().insert((None, name.into()), value.into());
    }
}

fn hint(value: &str) -> String {
    hands_agent::secret_hint(&SecretValue::new(value))
}

impl SecretStore for Mem {
    fn put(
        &self,
        root: &Path,
        name: &str,
        value: &SecretValue,
    ) -> Result<StoredSecret, SecretError> {
        if !hands_agent::valid_secret_name(name) {
            return Err(SecretError::BadName(name.into()));
        }
        if value.expose().chars().count() < 8 {
            return Err(SecretError::TooShort);
        }
        self.0.lock().unwrap().insert((Some(root.into()), name.into()), value.expose().into());
        Ok(StoredSecret {
            name: name.into(),
            scope: SecretScope::Project(root.display().to_string()),
            hint: hint(value.expose()),
        })
    }

    fn get(&self, root: &Path, name: &str) -> Option<SecretValue> {
        let map = self.0.lock().unwrap();
        map.get(&(Some(root.into()), name.into()))
            .or_else(|| map.get(&(None, name.into())))
            .map(SecretValue::new)
    }

    fn list(&self, root: &Path) -> Vec<StoredSecret> {
        let map = self.0.lock().unwrap();
        map.iter()
            .filter(|((r, _), _)| r.as_deref().is_none_or(|r| r == root))
            .map(|((r, name), value)| StoredSecret {
                name: name.clone(),
                scope: match r {
                    Some(r) => SecretScope::Project(r.display().to_string()),
                    None => SecretScope::Global,
                },
                hint: hint(value),
            })
            .collect()
    }

    fn delete(&self, root: &Path, name: &str) -> Result<bool, SecretError> {
        Ok(self.0.lock().unwrap().remove(&(Some(root.into()), name.into())).is_some())
    }
}

/// Gives a fixed value (or error) and records what it was asked.
struct Scripted {
    reply: Result<SecretValue, AskError>,
    asked: Mutex<Vec<SecretRequest>>,
}

impl Scripted {
    fn install(session: &Session, reply: Result<&str, AskError>) -> Arc<Self> {
        let asker =
            Arc::new(Self { reply: reply.map(SecretValue::new), asked: Mutex::new(Vec::new()) });
        session.insert_extension(SecretAskerHandle(asker.clone()));
        asker
    }
}

impl SecretAsker for Scripted {
    fn request<'a>(
        &'a self,
        request: &'a SecretRequest,
        _cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<SecretValue, AskError>> {
        self.asked.lock().unwrap().push(request.clone());
        Box::pin(std::future::ready(self.reply.clone()))
    }
}

/// Never answers, and ignores its token.
struct Silent;

impl SecretAsker for Silent {
    fn request<'a>(
        &'a self,
        _request: &'a SecretRequest,
        _cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<SecretValue, AskError>> {
        Box::pin(std::future::pending())
    }
}

fn registry(store: Arc<Mem>, ask_user: AskUserConfig) -> Registry {
    let mut core = CoreConfig::default();
    core.timeouts.tools.insert("secrets".into(), 3_600_000);
    let config = AgentConfig { ask_user };
    hands_agent::register_secrets(Registry::builder(core), store, &config).build()
}

async fn run(registry: &Registry, session: &Session, args: Value) -> ToolOutput {
    let id = session.next_call_id();
    registry.dispatch(session, ToolCall::new(id, "secrets", args)).await.unwrap()
}

fn everything(out: &ToolOutput) -> String {
    format!("{} {}", out.joined_text(), out.structured.clone().unwrap_or(Value::Null))
}

const STRIPE: &str = "Stripe secret key: Dashboard → Developers → API keys";

#[tokio::test]
async fn a_request_stores_the_value_and_returns_only_its_name_and_hint() {
    let root = tempfile::tempdir().unwrap();
    let store = Arc::new(Mem::default());
    let registry = registry(store.clone(), AskUserConfig::default());
    let session = Session::new("s", root.path());
    let asker = Scripted::install(&session, Ok(CANARY));
    let out = run(
        &registry,
        &session,
        json!({"action": "request", "name": "STRIPE_SECRET_KEY", "description": STRIPE}),
    )
    .await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(
        out.joined_text(),
        "STRIPE_SECRET_KEY stored (sk_t…4f2a); available to this project's processes as \
         $STRIPE_SECRET_KEY"
    );
    assert_eq!(
        out.structured.clone().unwrap(),
        json!({"action": "request", "secrets": [
            {"name": "STRIPE_SECRET_KEY", "scope": "project", "hint": "sk_t…4f2a"}
        ]})
    );
    assert!(!everything(&out).contains(CANARY) && !format!("{out:?}").contains(CANARY));
    let asked = asker.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert_eq!(
        (asked[0].name.as_str(), asked[0].description.as_str()),
        ("STRIPE_SECRET_KEY", STRIPE)
    );
    assert_eq!(asked[0].session, "s");
    assert_eq!(
        store.get(root.path(), "STRIPE_SECRET_KEY").map(|v| v.expose().to_owned()).as_deref(),
        Some(CANARY)
    );
}

#[tokio::test]
async fn bad_input_is_refused_before_anyone_is_asked() {
    let root = tempfile::tempdir().unwrap();
    let store = Arc::new(Mem::default());
    let registry = registry(store.clone(), AskUserConfig::default());
    let session = Session::new("s", root.path());
    let asker = Scripted::install(&session, Ok(CANARY));
    for (args, expected) in [
        (
            json!({"action": "request", "name": "stripe_key", "description": STRIPE}),
            "is not a secret name",
        ),
        (json!({"action": "request", "name": "A", "description": STRIPE}), "is not a secret name"),
        (
            json!({"action": "request", "name": "API-KEY", "description": STRIPE}),
            "STRIPE_SECRET_KEY",
        ),
        (json!({"action": "request", "description": STRIPE}), "`name` is missing"),
        (json!({"action": "request", "name": "API_KEY"}), "`description` is missing"),
        (
            json!({"action": "request", "name": "API_KEY", "description": "  "}),
            "`description` is missing",
        ),
        (
            json!({"action": "request", "name": "API_KEY", "description": "x".repeat(1001)}),
            "keep it to 1000",
        ),
        (json!({"action": "delete"}), "`name` is missing"),
        (json!({"action": "steal", "name": "API_KEY"}), "action"),
    ] {
        let out = run(&registry, &session, args.clone()).await;
        assert!(out.is_error, "{args}");
        assert!(out.joined_text().contains(expected), "{args}: {}", out.joined_text());
    }
    assert!(asker.asked.lock().unwrap().is_empty());
    assert!(store.list(root.path()).is_empty());
}

#[tokio::test]
async fn a_value_the_store_refuses_is_a_clear_error() {
    let root = tempfile::tempdir().unwrap();
    let store = Arc::new(Mem::default());
    let registry = registry(store.clone(), AskUserConfig::default());
    let session = Session::new("s", root.path());
    Scripted::install(&session, Ok("short"));
    let out = run(
        &registry,
        &session,
        json!({"action": "request", "name": "API_KEY", "description": "the key"}),
    )
    .await;
    assert!(out.is_error);
    let text = out.joined_text();
    assert!(text.contains("too short") && text.contains("call secrets again"), "{text}");
    assert!(!text.contains("short\""), "{text}");
    assert!(store.list(root.path()).is_empty());
}

#[tokio::test]
async fn without_anyone_to_ask_the_user_is_told_to_run_hands_secrets_set() {
    let root = tempfile::tempdir().unwrap();
    let registry = registry(Arc::new(Mem::default()), AskUserConfig::default());
    let args = json!({"action": "request", "name": "OPENAI_API_KEY", "description": "the key"});
    // No asker at all, and an asker that says nobody is there.
    let bare = Session::new("s", root.path());
    let nobody = Session::new("t", root.path());
    Scripted::install(&nobody, Err(AskError::NoOneToAsk));
    for session in [bare, nobody] {
        let out = run(&registry, &session, args.clone()).await;
        assert!(out.is_error);
        let text = out.joined_text();
        assert!(text.contains("`hands secrets set OPENAI_API_KEY`"), "{text}");
        assert!(text.contains("call secrets with action \"list\""), "{text}");
    }
}

#[tokio::test]
async fn a_decline_stores_nothing_and_says_not_to_ask_in_the_chat() {
    let root = tempfile::tempdir().unwrap();
    let store = Arc::new(Mem::default());
    let registry = registry(store.clone(), AskUserConfig::default());
    let session = Session::new("s", root.path());
    Scripted::install(&session, Err(AskError::Declined(None)));
    let out = run(
        &registry,
        &session,
        json!({"action": "request", "name": "API_KEY", "description": "the key"}),
    )
    .await;
    assert!(out.is_error);
    assert!(out.joined_text().contains("declined to give API_KEY"), "{}", out.joined_text());
    assert!(out.joined_text().contains("do not ask for it in the chat"));
    assert!(store.list(root.path()).is_empty());
}

#[tokio::test(start_paused = true)]
async fn an_unanswered_request_ends_at_ask_users_time_limit() {
    let root = tempfile::tempdir().unwrap();
    let registry = registry(Arc::new(Mem::default()), AskUserConfig { timeout_ms: 90_000 });
    let session = Session::new("s", root.path());
    session.insert_extension(SecretAskerHandle(Arc::new(Silent)));
    let start = tokio::time::Instant::now();
    let out = run(
        &registry,
        &session,
        json!({"action": "request", "name": "API_KEY", "description": "the key"}),
    )
    .await;
    let waited = start.elapsed();
    assert!(out.is_error);
    assert!(out.joined_text().contains("did not give API_KEY within 90 s"), "{out:?}");
    assert!(waited >= Duration::from_secs(90) && waited < Duration::from_secs(91), "{waited:?}");
}

#[tokio::test]
async fn list_shows_names_scopes_and_hints_and_delete_forgets_the_projects_own() {
    let root = tempfile::tempdir().unwrap();
    let store = Arc::new(Mem::default());
    store.global("GITHUB_TOKEN", "ghp_globalvalue1234567890");
    let registry = registry(store.clone(), AskUserConfig::default());
    let session = Session::new("s", root.path());
    let empty_root = tempfile::tempdir().unwrap();
    let other = Session::new("o", empty_root.path());
    Scripted::install(&session, Ok(CANARY));
    run(
        &registry,
        &session,
        json!({"action": "request", "name": "STRIPE_SECRET_KEY", "description": STRIPE}),
    )
    .await;

    let out = run(&registry, &session, json!({"action": "list"})).await;
    assert!(!out.is_error);
    let text = out.joined_text();
    assert!(text.starts_with("2 secrets available"), "{text}");
    assert!(text.contains("STRIPE_SECRET_KEY (project, sk_t…4f2a)"), "{text}");
    assert!(text.contains("GITHUB_TOKEN (global, ghp_…7890)"), "{text}");
    assert!(!everything(&out).contains(CANARY) && !everything(&out).contains("globalvalue"));
    assert_eq!(out.structured.clone().unwrap()["secrets"].as_array().unwrap().len(), 2);

    // Another project sees only the global one.
    let out = run(&registry, &other, json!({"action": "list"})).await;
    assert_eq!(out.structured.clone().unwrap()["secrets"][0]["name"], "GITHUB_TOKEN");

    let out = run(&registry, &session, json!({"action": "delete", "name": "GITHUB_TOKEN"})).await;
    assert!(out.joined_text().contains("global secret"), "{}", out.joined_text());
    assert!(out.joined_text().contains("`hands secrets rm GITHUB_TOKEN`"));
    assert_eq!(out.structured.clone().unwrap()["deleted"], false);

    let out =
        run(&registry, &session, json!({"action": "delete", "name": "STRIPE_SECRET_KEY"})).await;
    assert_eq!(out.joined_text(), "STRIPE_SECRET_KEY deleted from this project's secrets.");
    assert_eq!(
        out.structured.clone().unwrap(),
        json!({"action": "delete", "secrets": [], "deleted": true})
    );
    assert!(store.get(root.path(), "STRIPE_SECRET_KEY").is_none());

    let out = run(&registry, &session, json!({"action": "delete", "name": "NOPE_KEY"})).await;
    assert!(out.joined_text().contains("no secret NOPE_KEY"), "{}", out.joined_text());
}

/// A host whose registry has the secrets tool over `secrets`, and the store it writes sessions to.
async fn host(script: Script, secrets: Arc<Mem>) -> (Arc<Host>, Arc<MemoryStore>, Arc<Script>) {
    let probe = Probe::default();
    let builder = registry_builder(CoreConfig::default(), &probe);
    let registry: Arc<Registry> =
        hands_agent::register_secrets(builder, secrets, &AgentConfig::default()).build().into();
    let store = Arc::new(MemoryStore::new());
    let script = Arc::new(script);
    let host = Host::open(HostParts {
        store: store.clone(),
        registry,
        provider: Some(script.clone()),
        config: hands_agent::host::AgentConfig::default(),
        checkpoints: hands_checkpoint::Settings { enabled: false, ..Default::default() },
    })
    .await
    .unwrap();
    (host, store, script)
}

#[tokio::test]
async fn the_host_announces_a_request_and_hands_the_answer_to_the_tool_alone() {
    let root = tempfile::tempdir().unwrap();
    let secrets = Arc::new(Mem::default());
    let (host, store, script) =
        host(Script::new(vec![call_step("STRIPE_SECRET_KEY"), say("Stored.")]), secrets.clone())
            .await;
    let id = host
        .create_session(NewSession {
            id: None,
            project_id: None,
            root: root.path().to_owned(),
            mode: Mode::Build,
            title: None,
        })
        .await
        .unwrap()
        .id;
    let mut sub = host.subscribe(&id, 0).await.unwrap();
    host.post_message(&id, "set up stripe".into()).await.unwrap();
    let seen = until(&mut sub, |k| matches!(k, EventKind::SecretRequested { .. })).await;
    let EventKind::SecretRequested { request_id, name, description } = &seen.last().unwrap().kind
    else {
        panic!()
    };
    assert_eq!((name.as_str(), description.as_str()), ("STRIPE_SECRET_KEY", STRIPE));

    // Unknown requests are 404s, short values 400s that leave the request waiting.
    assert!(matches!(
        host.give_secret(&id, "secret-nope", SecretValue::new(CANARY)),
        Err(HostError::NotFound(_))
    ));
    assert!(matches!(
        host.give_secret("other-session", request_id, SecretValue::new(CANARY)),
        Err(HostError::NotFound(_))
    ));
    match host.give_secret(&id, request_id, SecretValue::new("short")) {
        Err(HostError::BadRequest(why)) => assert!(why.contains("too short"), "{why}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        host.give_secret(&id, request_id, SecretValue::new(format!("  {CANARY}\n"))).unwrap(),
        "STRIPE_SECRET_KEY"
    );
    // Answered once: a second answer finds nothing waiting.
    assert!(matches!(
        host.give_secret(&id, request_id, SecretValue::new(CANARY)),
        Err(HostError::NotFound(_))
    ));
    let rest = until(&mut sub, |k| matches!(k, EventKind::TurnEnded { .. })).await;
    assert!(rest.iter().any(
        |e| matches!(&e.kind, EventKind::SecretAnswered { request_id: r } if r == request_id)
    ));
    assert_eq!(host.wait_turn(&id).await.unwrap().as_deref(), Some("completed"));
    assert_eq!(
        secrets.get(root.path(), "STRIPE_SECRET_KEY").map(|v| v.expose().to_owned()).as_deref(),
        Some(CANARY),
        "trimmed"
    );

    // Nowhere else: not in the model's requests, the events or the stored transcript.
    let requests = format!("{:?}", script.requests());
    assert!(requests.contains("STRIPE_SECRET_KEY stored (sk_t…4f2a)"), "{requests}");
    assert!(!requests.contains(CANARY));
    let events = serde_json::to_string(&host.subscribe(&id, 0).await.unwrap().replay).unwrap();
    assert!(events.contains("secret_requested") && !events.contains(CANARY), "{events}");
    let transcript = format!("{:?}", store.messages(&id).await.unwrap());
    assert!(transcript.contains("sk_t…4f2a") && !transcript.contains(CANARY));
}

#[tokio::test]
async fn a_declined_request_ends_with_secret_declined() {
    let root = tempfile::tempdir().unwrap();
    let secrets = Arc::new(Mem::default());
    let (host, _store, script) =
        host(Script::new(vec![call_step("API_KEY"), say("ok")]), secrets.clone()).await;
    let id = host
        .create_session(NewSession {
            id: None,
            project_id: None,
            root: root.path().to_owned(),
            mode: Mode::Build,
            title: None,
        })
        .await
        .unwrap()
        .id;
    let mut sub = host.subscribe(&id, 0).await.unwrap();
    host.post_message(&id, "go".into()).await.unwrap();
    let seen = until(&mut sub, |k| matches!(k, EventKind::SecretRequested { .. })).await;
    let EventKind::SecretRequested { request_id, .. } = &seen.last().unwrap().kind else {
        panic!()
    };
    assert_eq!(host.decline_secret(&id, request_id).unwrap(), "API_KEY");
    let rest = until(&mut sub, |k| matches!(k, EventKind::TurnEnded { .. })).await;
    assert!(rest.iter().any(
        |e| matches!(&e.kind, EventKind::SecretDeclined { request_id: r } if r == request_id)
    ));
    host.wait_turn(&id).await.unwrap();
    assert!(format!("{:?}", script.requests()).contains("declined to give API_KEY"));
    assert!(secrets.list(root.path()).is_empty());
}

fn call_step(name: &str) -> Step {
    let description = if name == "STRIPE_SECRET_KEY" { STRIPE } else { "the key" };
    loop_support::call(
        "secrets",
        json!({"action": "request", "name": name, "description": description}),
    )
}
