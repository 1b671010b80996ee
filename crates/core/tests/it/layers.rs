//! `RegistryBuilder::layer`: a middleware added at a place runs at that place in the chain, and
//! (debug builds) the conformance check turns a result that breaks its output schema into an error.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::borrow::Cow;
use std::sync::{Arc, Mutex};

use common::{Echo, TextArgs};
use hands_core::config::{Approval, OutputConfig};
use hands_core::middleware::{Middleware, Next, Place, Request, Step};
use hands_core::{
    Annotations, ChainError, Context, CoreConfig, Registry, Session, Tool, ToolCall, ToolError,
    ToolOutput,
};
use serde_json::{Value, json};

/// What each layer saw: (its label, the length of the text it got back, or "entered").
type Seen = Arc<Mutex<Vec<(&'static str, Option<usize>)>>>;

/// Records its label on the way in and the result's text length on the way out.
struct Mark {
    label: &'static str,
    seen: Seen,
}

impl Middleware for Mark {
    async fn handle<'a>(
        &'a self,
        req: Request<'a>,
        next: Next<'a>,
    ) -> Result<ToolOutput, ChainError> {
        self.seen.lock().unwrap().push((self.label, None));
        let output = next.run(req).await?;
        self.seen.lock().unwrap().push((self.label, Some(output.joined_text().len())));
        Ok(output)
    }
}

fn marks(seen: &Seen, place: Place, label: &'static str) -> (Place, Mark) {
    (place, Mark { label, seen: Arc::clone(seen) })
}

fn small_output() -> CoreConfig {
    CoreConfig { output: OutputConfig { max_bytes: 100 }, ..CoreConfig::default() }
}

#[tokio::test]
async fn layers_around_truncate_see_the_result_before_and_after_it() {
    let seen = Seen::default();
    let (echo, _) = Echo::new("read_file", true);
    let mut builder = Registry::builder(small_output()).tool(echo);
    // Added out of order: the place decides, not the order of the calls.
    for (place, mark) in [
        marks(&seen, Place::Innermost, "innermost"),
        marks(&seen, Place::After(Step::Truncate), "after truncate"),
        marks(&seen, Place::Before(Step::Truncate), "before truncate"),
        marks(&seen, Place::Outermost, "outermost"),
    ] {
        builder = builder.layer(place, mark);
    }
    let registry = builder.build();
    let session = Session::new("s", std::env::temp_dir());
    let call = ToolCall::new("1", "read_file", json!({"text": "x", "count": 1000}));
    let output = registry.dispatch(&session, call).await.unwrap();
    assert!(!output.is_error, "{}", output.joined_text());
    let seen = seen.lock().unwrap().clone();
    let entered: Vec<_> = seen.iter().filter(|(_, len)| len.is_none()).map(|(l, _)| *l).collect();
    assert_eq!(entered, ["outermost", "before truncate", "after truncate", "innermost"]);
    let len = |label| seen.iter().find(|(l, len)| *l == label && len.is_some()).unwrap().1.unwrap();
    // Inside the truncation: the tool's whole text (1000 x and "#1").
    assert_eq!(len("innermost"), 1002);
    assert_eq!(len("after truncate"), 1002);
    // Outside it: cut (head, tail and where the full text went).
    assert!(len("before truncate") < 300, "{seen:?}");
    assert_eq!(len("outermost"), len("before truncate"));
}

#[tokio::test]
async fn layers_around_approve_run_only_on_their_side_of_a_refusal() {
    let seen = Seen::default();
    let (write, runs) = Echo::new("write_file", false);
    let config = CoreConfig { approval: Approval::Ask, ..CoreConfig::default() };
    let (before, before_mark) = marks(&seen, Place::Before(Step::Approve), "before approve");
    let (after, after_mark) = marks(&seen, Place::After(Step::Approve), "after approve");
    let registry = Registry::builder(config)
        .tool(write)
        .layer(after, after_mark)
        .layer(before, before_mark)
        .build();
    // No approver in this session: approve refuses, so nothing inside it runs.
    let session = Session::new("s", std::env::temp_dir());
    let output =
        registry.dispatch(&session, ToolCall::new("1", "write_file", json!({"text": "x"}))).await;
    let output = output.unwrap();
    assert!(output.is_error);
    assert!(output.joined_text().contains("needs the user's approval"), "{}", output.joined_text());
    assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 0);
    let labels: Vec<_> = seen.lock().unwrap().iter().map(|(l, _)| *l).collect();
    assert_eq!(labels, ["before approve", "before approve"]);
}

/// A tool whose structured result does not match the schema it declares.
struct Liar;

impl Tool for Liar {
    type Args = TextArgs;

    fn name(&self) -> &'static str {
        "liar"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed("Says `count` is a number, returns a string.")
    }

    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY
    }

    fn output_schema(&self) -> Option<Value> {
        Some(json!({
            "type": "object",
            "properties": {"count": {"type": "integer"}},
            "required": ["count"]
        }))
    }

    async fn call(&self, _ctx: Context, args: TextArgs) -> Result<ToolOutput, ToolError> {
        let structured = match args.text.as_str() {
            "good" => json!({"count": 1}),
            "missing" => json!({}),
            _ => json!({"count": "one"}),
        };
        Ok(ToolOutput::text(args.text).with_structured(structured))
    }
}

#[cfg(debug_assertions)]
#[tokio::test]
async fn a_result_that_breaks_its_schema_becomes_an_error_naming_tool_and_place() {
    let registry = Registry::builder(CoreConfig::default()).tool(Liar).build();
    let session = Session::new("s", std::env::temp_dir());
    let call = |text: &str| ToolCall::new("1", "liar", json!({"text": text}));
    let good = registry.dispatch(&session, call("good")).await.unwrap();
    assert!(!good.is_error, "{}", good.joined_text());
    let bad = registry.dispatch(&session, call("bad")).await.unwrap();
    assert!(bad.is_error);
    assert!(bad.structured.is_none());
    let text = bad.joined_text();
    assert!(text.contains("liar broke its output contract"), "{text}");
    assert!(text.contains("at /count"), "{text}");
    assert!(text.contains("is not of type \"integer\""), "{text}");
    let missing = registry.dispatch(&session, call("missing")).await.unwrap();
    assert!(
        missing.joined_text().contains("\"count\" is a required property"),
        "{}",
        missing.joined_text()
    );
}

#[cfg(debug_assertions)]
#[tokio::test]
async fn structured_content_without_a_schema_and_a_schema_without_content_are_errors() {
    struct Plain;
    impl Tool for Plain {
        type Args = TextArgs;
        fn name(&self) -> &'static str {
            "plain"
        }
        fn description(&self) -> Cow<'static, str> {
            Cow::Borrowed("No schema.")
        }
        fn annotations(&self) -> Annotations {
            Annotations::READ_ONLY
        }
        async fn call(&self, _ctx: Context, args: TextArgs) -> Result<ToolOutput, ToolError> {
            Ok(ToolOutput::text("x").with_structured(json!({"text": args.text})))
        }
    }
    struct Silent;
    impl Tool for Silent {
        type Args = TextArgs;
        fn name(&self) -> &'static str {
            "silent"
        }
        fn description(&self) -> Cow<'static, str> {
            Cow::Borrowed("A schema, no content.")
        }
        fn annotations(&self) -> Annotations {
            Annotations::READ_ONLY
        }
        fn output_schema(&self) -> Option<Value> {
            Some(json!({"type": "object"}))
        }
        async fn call(&self, _ctx: Context, args: TextArgs) -> Result<ToolOutput, ToolError> {
            if args.text == "fail" {
                return Err(ToolError::RespondToModel("failed as asked".into()));
            }
            Ok(ToolOutput::text("x"))
        }
    }
    let registry = Registry::builder(CoreConfig::default()).tool(Plain).tool(Silent).build();
    let session = Session::new("s", std::env::temp_dir());
    let call = |tool: &str, text: &str| ToolCall::new("1", tool, json!({"text": text}));
    let out = registry.dispatch(&session, call("plain", "a")).await.unwrap();
    assert!(out.joined_text().contains("declares no output schema"), "{}", out.joined_text());
    let out = registry.dispatch(&session, call("silent", "a")).await.unwrap();
    assert!(out.joined_text().contains("returned no structured content"), "{}", out.joined_text());
    // An error result without structured content is fine.
    let out = registry.dispatch(&session, call("silent", "fail")).await.unwrap();
    assert_eq!(out.joined_text(), "failed as asked");
}
