//! Each call is prepared once, at dispatch: its arguments parsed once into the tool's `Args`,
//! what the tool says of this call (approval, mutation, caching) decided from them, a call with
//! bad arguments answered before anybody is asked, and what the user approved handed to the
//! tool as it was shown.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::borrow::Cow;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use hands_core::approval::{ApprovalRequest, Approved, Approver, ApproverHandle, Decision, Review};
use hands_core::config::Approval;
use hands_core::redact::{self, Literals};
use hands_core::{
    Annotations, BoxFuture, CallPolicy, CancellationToken, Context, CoreConfig, Registry, Session,
    Tool, ToolCall, ToolError, ToolOutput,
};
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};
use serde_json::json;

/// How many times any [`Counted`] was deserialized.
static PARSES: AtomicUsize = AtomicUsize::new(0);

/// Arguments that count their parses.
#[derive(Debug, JsonSchema)]
struct Counted {
    /// `read` or `write`.
    verb: String,
}

impl<'de> Deserialize<'de> for Counted {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Raw {
            verb: String,
        }
        PARSES.fetch_add(1, Ordering::SeqCst);
        Raw::deserialize(d).map(|raw| Counted { verb: raw.verb })
    }
}

/// A tool whose `read` calls ask nobody, change nothing and may be cached, and whose `write`
/// calls ask with a summary and details of their own; it answers with what was approved.
struct Verb {
    runs: Arc<AtomicUsize>,
}

impl Tool for Verb {
    type Args = Counted;

    fn name(&self) -> &'static str {
        "verb"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed("Read or write.")
    }

    fn annotations(&self) -> Annotations {
        Annotations::default()
    }

    fn call_policy(&self, args: &Counted) -> CallPolicy {
        let read = args.verb == "read";
        CallPolicy { needs_approval: !read, mutates: !read, cacheable: read, outlasts: false }
    }

    async fn review(&self, _ctx: &Context, args: &Counted) -> Result<Review, ToolError> {
        if args.verb == "refuse" {
            return Err(ToolError::model("refused before asking"));
        }
        if let Some(quoted) = args.verb.strip_prefix("quote ") {
            return Err(ToolError::model(format!("cannot reach {quoted}")));
        }
        Ok(Review::summary(format!("verb: {} the thing", args.verb)).with_details("line one"))
    }

    async fn call(&self, ctx: Context, args: Counted) -> Result<ToolOutput, ToolError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        let approved = ctx.approved().map(|a| format!("{} / {:?}", a.summary, a.details));
        Ok(ToolOutput::text(format!("{} ran; approved: {approved:?}", args.verb)))
    }
}

#[derive(Default)]
struct Asked(Mutex<Vec<ApprovalRequest>>);

impl Approver for Asked {
    fn approve<'a>(
        &'a self,
        request: &'a ApprovalRequest,
        _cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Decision> {
        self.0.lock().unwrap().push(request.clone());
        Box::pin(async { Decision::Approve })
    }
}

fn world() -> (Registry, Session, Arc<Asked>, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let config = CoreConfig { approval: Approval::Ask, ..CoreConfig::default() };
    let registry = Registry::builder(config).tool(Verb { runs: Arc::clone(&runs) }).build();
    let session = Session::one_shot(std::env::temp_dir());
    let asked = Arc::new(Asked::default());
    session.insert_extension(ApproverHandle(asked.clone()));
    (registry, session, asked, runs)
}

// One test touches the parse counter, so that no other test's parses are counted.
#[tokio::test]
async fn arguments_are_parsed_once_per_call_through_approval_and_run() {
    let (registry, session, asked, runs) = world();
    let before = PARSES.load(Ordering::SeqCst);
    let call = ToolCall::new("1", "verb", json!({"verb": "write"}));
    let out = registry.dispatch(&session, call).await.unwrap();
    assert!(!out.is_error, "{}", out.joined_text());
    assert_eq!(asked.0.lock().unwrap().len(), 1, "the write was asked about");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(
        PARSES.load(Ordering::SeqCst) - before,
        1,
        "prepared once: the review and the call read the same parsed arguments"
    );
}

#[tokio::test]
async fn the_policy_is_per_call_and_the_review_is_what_the_user_sees_and_the_tool_gets() {
    let (registry, session, asked, runs) = world();
    // A read asks nobody.
    let read = ToolCall::new("r", "verb", json!({"verb": "read"})).in_turn("t1");
    let out = registry.dispatch(&session, read.clone()).await.unwrap();
    assert!(out.joined_text().contains("read ran; approved: None"), "{}", out.joined_text());
    assert!(asked.0.lock().unwrap().is_empty(), "a read is not asked about");
    // A cacheable read within the turn is answered from the cache.
    registry.dispatch(&session, ToolCall { id: "r2".into(), ..read.clone() }).await.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the second identical read came from the cache");
    // A write asks with the tool's summary and details, and the tool gets what was approved.
    let write = ToolCall::new("w", "verb", json!({"verb": "write"})).in_turn("t1");
    let out = registry.dispatch(&session, write).await.unwrap();
    let request = asked.0.lock().unwrap()[0].clone();
    assert_eq!(request.summary, "verb: write the thing");
    assert_eq!(request.details.as_deref(), Some("line one"));
    let approved = Approved { summary: request.summary, details: request.details };
    let shown =
        format!("approved: {:?}", Some(format!("{} / {:?}", approved.summary, approved.details)));
    assert!(out.joined_text().ends_with(&shown), "{}", out.joined_text());
    // The write changed things: the cache is gone, the read runs again.
    registry.dispatch(&session, ToolCall { id: "r3".into(), ..read }).await.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn bad_arguments_and_a_failed_review_are_answered_before_anybody_is_asked() {
    let (registry, session, asked, runs) = world();
    for (args, expected) in [
        (json!({"verb": 7}), "verb"),
        (json!({"verb": "write", "extra": 1}), "extra"),
        (json!("write"), "object"),
        (json!({"verb": "refuse"}), "refused before asking"),
    ] {
        let out = registry.dispatch(&session, ToolCall::new("b", "verb", args.clone())).await;
        let out = out.unwrap();
        assert!(out.is_error, "{args}: {}", out.joined_text());
        assert!(out.joined_text().contains(expected), "{args}: {}", out.joined_text());
    }
    assert!(asked.0.lock().unwrap().is_empty(), "nobody was asked about a call that cannot run");
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_prepared_call_says_its_policy_before_it_runs() {
    let (registry, session, _asked, runs) = world();
    let read = registry.prepare(&session, ToolCall::new("1", "verb", json!({"verb": "read"})));
    assert!(!read.policy().mutates && read.policy().cacheable);
    let write = registry.prepare(&session, ToolCall::new("2", "verb", json!({"verb": "write"})));
    assert!(write.policy().mutates && write.policy().needs_approval);
    assert_eq!(write.tool_name(), Some("verb"));
    let unknown = registry.prepare(&session, ToolCall::new("3", "nope", json!({})));
    assert_eq!(unknown.policy(), CallPolicy::ANSWER);
    assert_eq!(unknown.tool_name(), None);
    assert_eq!(runs.load(Ordering::SeqCst), 0, "preparing runs nothing");
    let out = registry.run(&session, unknown, Default::default()).await.unwrap();
    assert!(out.is_error && out.joined_text().contains("Unknown tool `nope`"));
}

#[tokio::test]
async fn a_parse_error_that_quotes_a_secret_is_redacted() {
    // Answered at dispatch, outside the chain's redaction step: redacted there all the same.
    const CANARY: &str = "canary-41c7-prepared-value";
    redact::install(Arc::new(Literals(vec![("API_TOKEN".into(), CANARY.into())])));
    let (registry, session, _asked, _runs) = world();
    let out = registry
        .dispatch(&session, ToolCall::new("s", "verb", json!({"verb": "write", CANARY: 1})))
        .await
        .unwrap();
    assert!(out.is_error);
    let text = out.joined_text();
    assert!(!text.contains(CANARY) && text.contains("[secret:API_TOKEN]"), "{text}");
    // A review's refusal, made outside the chain's redaction step, is redacted too.
    let args = json!({"verb": format!("quote {CANARY}")});
    let out = registry.dispatch(&session, ToolCall::new("q", "verb", args)).await.unwrap();
    let text = out.joined_text();
    assert!(out.is_error && text.contains("cannot reach [secret:API_TOKEN]"), "{text}");
}

#[tokio::test]
async fn a_tools_only_registry_runs_the_tool_and_nothing_of_the_chain() {
    // The hands inside a sandbox: approval = "ask" and nobody to ask would refuse the write in a
    // full chain; here the host asked already, so the tool runs.
    let runs = Arc::new(AtomicUsize::new(0));
    let config = CoreConfig { approval: Approval::Ask, ..CoreConfig::default() };
    let full = Registry::builder(config.clone()).tool(Verb { runs: Arc::clone(&runs) }).build();
    let inner =
        Registry::builder(config).tool(Verb { runs: Arc::clone(&runs) }).tools_only().build();
    let session = Session::one_shot(std::env::temp_dir());
    let write = || ToolCall::new("w", "verb", json!({"verb": "write"}));
    let refused = full.dispatch(&session, write()).await.unwrap();
    assert!(refused.is_error && refused.joined_text().contains("nobody to ask"));
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let ran = inner.dispatch(&session, write()).await.unwrap();
    assert!(!ran.is_error, "{}", ran.joined_text());
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // Bad arguments are still answered before the tool runs.
    let bad = inner.dispatch(&session, ToolCall::new("b", "verb", json!({"verb": 1}))).await;
    assert!(bad.unwrap().is_error);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}
