//! The live registry: conditions read again on refresh, sources that add and remove tools, the
//! version and its subscribers, and the rules for names that collide.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use common::Echo;
use hands_core::{
    Changes, Conditions, CoreConfig, DynTool, Mode, Refresh, Registry, RegistryError, Session,
    ToolCall, ToolSource, erase,
};
use serde_json::json;

fn names(registry: &Registry, mode: Mode) -> Vec<String> {
    registry.list(mode).into_iter().map(|s| s.name).collect()
}

#[tokio::test]
async fn a_tool_gated_on_a_variable_appears_after_refresh_and_goes_after_the_next() {
    let env = Arc::new(Mutex::new(Conditions::default()));
    let read = Arc::clone(&env);
    let r = Registry::builder(CoreConfig::default())
        .conditions_with(move || read.lock().unwrap().clone())
        .tool(Echo::new("grep", true).0)
        .tool_if(|c| c.has_env("TAVILY_API_KEY"), Echo::new("web_search", true).0)
        .build();
    let mut changes = r.subscribe();
    assert_eq!(names(&r, Mode::Build), ["grep"]);
    assert_eq!(r.version(), 0);

    env.lock().unwrap().env.insert("TAVILY_API_KEY".into(), "k".into());
    // Not seen until a refresh: conditions are not read per call.
    assert_eq!(names(&r, Mode::Build), ["grep"]);
    assert!(r.refresh());
    assert_eq!(names(&r, Mode::Build), ["grep", "web_search"]);
    assert_eq!(r.version(), 1);
    assert!(changes.has_changed().unwrap());
    assert_eq!(*changes.borrow_and_update(), 1);
    let s = Session::new("s", "/tmp");
    let out = r.dispatch(&s, ToolCall::new("1", "web_search", json!({"text": "q"}))).await.unwrap();
    assert!(!out.is_error, "{out:?}");

    // A refresh that changes nothing bumps nothing.
    assert!(!r.refresh());
    assert_eq!(r.version(), 1);

    env.lock().unwrap().env.clear();
    assert!(r.refresh());
    assert_eq!(names(&r, Mode::Build), ["grep"]);
    assert_eq!(*changes.borrow_and_update(), 2);
    let out = r.dispatch(&s, ToolCall::new("2", "web_search", json!({"text": "q"}))).await.unwrap();
    assert!(out.is_error && out.joined_text().contains("Unknown tool"), "{out:?}");
}

/// A source whose tools a test switches on and off, looked at again after mutating calls.
struct Switch {
    on: AtomicBool,
    seen: AtomicBool,
    tools: Vec<Arc<dyn DynTool>>,
    changes: Mutex<Option<Changes>>,
}

impl Switch {
    fn new(tools: Vec<Arc<dyn DynTool>>) -> Arc<Self> {
        Arc::new(Self {
            on: AtomicBool::new(false),
            seen: AtomicBool::new(false),
            tools,
            changes: Mutex::new(None),
        })
    }
}

impl ToolSource for Switch {
    fn name(&self) -> &str {
        "switch"
    }

    fn tools(&self) -> Vec<Arc<dyn DynTool>> {
        let on = self.on.load(Ordering::SeqCst);
        self.seen.store(on, Ordering::SeqCst);
        if on { self.tools.clone() } else { Vec::new() }
    }

    fn refresh(&self, why: Refresh) -> bool {
        why == Refresh::Mutation
            && self.on.load(Ordering::SeqCst) != self.seen.load(Ordering::SeqCst)
    }

    fn start(&self, changes: Changes) {
        *self.changes.lock().unwrap() = Some(changes);
    }
}

#[tokio::test]
async fn a_source_changes_the_list_after_a_mutating_call_or_when_it_says_so() {
    let switch = Switch::new(vec![erase(Echo::new("preview_open", false).0)]);
    let r = Registry::builder(CoreConfig::default())
        .tool(Echo::new("grep", true).0)
        .tool(Echo::new("write_file", false).0)
        .source(Arc::clone(&switch) as Arc<dyn ToolSource>)
        .build();
    let s = Session::new("s", "/tmp");
    switch.on.store(true, Ordering::SeqCst);
    // A read-only call does not make the sources look.
    r.dispatch(&s, ToolCall::new("1", "grep", json!({"text": "x"}))).await.unwrap();
    assert_eq!(r.version(), 0);
    // A mutating call does: the new tool is there for the next call.
    r.dispatch(&s, ToolCall::new("2", "write_file", json!({"text": "x"}))).await.unwrap();
    assert_eq!(r.version(), 1);
    assert_eq!(names(&r, Mode::Build), ["grep", "write_file", "preview_open"]);
    let out = r.dispatch(&s, ToolCall::new("3", "preview_open", json!({"text": "x"}))).await;
    assert!(!out.unwrap().is_error);

    // A source that learns of a change itself tells the registry.
    switch.on.store(false, Ordering::SeqCst);
    let changes = switch.changes.lock().unwrap().clone().unwrap();
    assert!(changes.changed());
    assert_eq!(r.version(), 2);
    assert_eq!(names(&r, Mode::Build), ["grep", "write_file"]);
    drop(r);
    assert!(!changes.changed(), "the registry is gone");
}

#[test]
fn built_ins_win_over_a_source_and_a_colliding_source_tool_is_dropped() {
    let switch = Switch::new(vec![
        erase(Echo::new("grep", false).0),
        erase(Echo::new("remote_read", true).0.with(|p| p.alias("read"))),
        erase(Echo::new("remote_other", true).0),
    ]);
    switch.on.store(true, Ordering::SeqCst);
    let r = Registry::builder(CoreConfig::default())
        .tool(Echo::new("read_file", true).0.with(|p| p.alias("read")))
        .tool(Echo::new("grep", true).0)
        .source(switch)
        .build();
    assert_eq!(names(&r, Mode::Build), ["read_file", "grep", "remote_other"]);
    // The built-in grep (read-only) kept its name.
    assert!(r.get("grep").unwrap().spec().annotations.read_only);
    assert_eq!(r.get("read").unwrap().spec().name, "read_file");
}

#[test]
fn colliding_built_in_aliases_are_refused_with_both_names() {
    let err = Registry::builder(CoreConfig::default())
        .tool(Echo::new("read_file", true).0.with(|p| p.alias("read")))
        .tool(Echo::new("read_docs", true).0.with(|p| p.alias("read")))
        .try_build()
        .err()
        .unwrap();
    assert_eq!(
        err,
        RegistryError::NameTaken {
            name: "read".into(),
            tool: "read_docs".into(),
            holder: "read_file".into()
        }
    );
    assert!(err.to_string().contains("give one of them another alias"), "{err}");
    // An alias that is another tool's name.
    let err = Registry::builder(CoreConfig::default())
        .tool(Echo::new("grep", true).0)
        .tool(Echo::new("search", true).0.with(|p| p.alias("grep")))
        .try_build()
        .err()
        .unwrap();
    assert!(matches!(err, RegistryError::NameTaken { ref holder, .. } if holder == "grep"));
    // A later built-in with the same name still replaces an earlier one.
    let r = Registry::builder(CoreConfig::default())
        .tool(Echo::new("grep", true).0)
        .tool(Echo::new("grep", false).0)
        .build();
    assert!(!r.get("grep").unwrap().spec().annotations.read_only);
}

#[test]
#[should_panic(expected = "the tool registry cannot be built: `read`")]
fn build_panics_on_colliding_built_ins() {
    let _ = Registry::builder(CoreConfig::default())
        .tool(Echo::new("read_file", true).0.with(|p| p.alias("read")))
        .tool(Echo::new("read", true).0)
        .build();
}
