//! The registry: aliases, modes, conditional tools, argument errors, unknown tools.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeMap;

use common::Echo;
use hands_core::{Conditions, CoreConfig, Mode, Modes, Policy, Registry, Session, ToolCall};
use serde_json::json;

fn registry() -> Registry {
    Registry::builder(CoreConfig::default())
        .tool(Echo::new("read_file", true).0.with(|p| p.alias("read")))
        .tool(Echo::new("write_file", false).0.with(|p| p.alias("write")))
        .tool(Echo::new("edit_file", false).0.with(|p| p.alias("edit")))
        .tool(Echo::new("grep", true).0)
        .tool(Echo::new("bash", false).0)
        .tool(Echo::new("exit_plan_mode", false).0.with(|p| p.modes(Modes::PLAN)))
        .tool(Echo::new("enter_plan_mode", true).0.with(|p| p.modes(Modes::BUILD)))
        .tool(Echo::new("ask_user", true).0.with(Policy::needs_user))
        .build()
}

fn names(registry: &Registry, mode: Mode) -> Vec<String> {
    registry.list(mode).into_iter().map(|s| s.name.clone()).collect()
}

#[test]
fn build_mode_lists_everything_but_exit_plan_mode_in_order() {
    let r = registry();
    assert_eq!(
        names(&r, Mode::Build),
        ["read_file", "write_file", "edit_file", "grep", "bash", "enter_plan_mode", "ask_user"]
    );
}

#[test]
fn plan_mode_offers_what_the_policies_say() {
    let r = registry();
    assert_eq!(names(&r, Mode::Plan), ["read_file", "grep", "exit_plan_mode", "ask_user"]);
}

#[tokio::test]
async fn aliases_are_accepted_but_not_listed() {
    let r = registry();
    let s = Session::new("s", "/tmp");
    for alias in ["read", "write", "edit"] {
        let out = r.dispatch(&s, ToolCall::new("1", alias, json!({"text": "hi"}))).await.unwrap();
        assert!(!out.is_error, "{alias}: {out:?}");
        assert!(out.joined_text().starts_with("hi#"));
    }
    assert!(!names(&r, Mode::Build).iter().any(|n| n == "read" || n == "write" || n == "edit"));
}

#[tokio::test]
async fn plan_mode_refuses_build_tools_and_build_mode_refuses_exit_plan_mode() {
    let r = registry();
    let s = Session::new("s", "/tmp");
    let out =
        r.dispatch(&s, ToolCall::new("1", "exit_plan_mode", json!({"text": "x"}))).await.unwrap();
    assert!(out.is_error);
    assert!(out.joined_text().contains("only available in plan mode"), "{}", out.joined_text());
    s.set_mode(Mode::Plan);
    let out = r.dispatch(&s, ToolCall::new("2", "write", json!({"text": "x"}))).await.unwrap();
    assert!(out.is_error);
    assert!(out.joined_text().contains("not available in plan mode"), "{}", out.joined_text());
    let out = r.dispatch(&s, ToolCall::new("3", "read", json!({"text": "x"}))).await.unwrap();
    assert!(!out.is_error);
}

#[tokio::test]
async fn malformed_arguments_name_the_field_and_type() {
    let r = registry();
    let s = Session::new("s", "/tmp");
    let cases = [
        (json!({"text": 5}), "field `text`", "expected a string"),
        (json!({"text": "a", "count": "many"}), "field `count`", "non-negative integer"),
        (json!({}), "missing field `text`", ""),
        (json!({"text": "a", "colour": 1}), "unknown field `colour`", ""),
        (json!("text"), "expected a JSON object", ""),
    ];
    for (args, want, want2) in cases {
        let out = r.dispatch(&s, ToolCall::new("1", "grep", args.clone())).await.unwrap();
        assert!(out.is_error, "{args}");
        let text = out.joined_text();
        assert!(text.contains(want) && text.contains(want2), "{args}: {text}");
    }
}

#[tokio::test]
async fn huge_arguments_are_handled() {
    let r = registry();
    let s = Session::new("s", "/tmp");
    let big = "x".repeat(10 * 1024 * 1024);
    let out = r.dispatch(&s, ToolCall::new("1", "write_file", json!({"text": big}))).await.unwrap();
    assert!(!out.is_error);
}

#[tokio::test]
async fn unknown_tool_lists_close_names() {
    let r = registry();
    let s = Session::new("s", "/tmp");
    let out = r.dispatch(&s, ToolCall::new("1", "reed_file", json!({}))).await.unwrap();
    assert!(out.is_error);
    let text = out.joined_text();
    assert!(text.contains("Did you mean `read_file`"), "{text}");
    let out = r.dispatch(&s, ToolCall::new("1", "zzzz", json!({}))).await.unwrap();
    assert!(out.joined_text().contains("Available tools: read_file"), "{}", out.joined_text());
}

#[test]
fn conditional_registration_follows_env_and_config() {
    let conditions = Conditions {
        config: json!({"web": {"enabled": true}}),
        env: BTreeMap::from([("TAVILY_API_KEY".to_owned(), "k".to_owned())]),
        secrets: ["FAL_KEY".to_owned()].into(),
        ..Conditions::default()
    };
    let r = Registry::builder(CoreConfig::default())
        .conditions(conditions)
        .tool_if(|c| c.has_env("TAVILY_API_KEY"), Echo::new("web_search", true).0)
        .tool_if(|c| c.has_env("FIRECRAWL_API_KEY"), Echo::new("web_scrape", true).0)
        .tool_if(|c| c.config["web"]["enabled"] == json!(true), Echo::new("db_schema", true).0)
        .tool_if(|c| c.has_key("FAL_KEY"), Echo::new("image_gen", true).0)
        .tool_if(|c| c.has_env("FAL_KEY"), Echo::new("env_only", true).0)
        .build();
    assert_eq!(names(&r, Mode::Build), ["web_search", "db_schema", "image_gen"]);
}

/// Integration tools are offered where the project has their context: the root's kind is
/// probed at build and again after a call that may change the project; without a root every
/// kind holds, and a front end's profile narrows every source.
#[tokio::test]
async fn the_project_kind_gates_tools_and_is_looked_at_again_after_a_change() {
    let tmp = tempfile::tempdir().unwrap();
    let r = Registry::builder(CoreConfig::default())
        .project_root(tmp.path())
        .tool(Echo::new("bash", false).0)
        .tool_if(|c| c.project(|p| p.web), Echo::new("clone_site", true).0)
        .tool_if(|c| c.project(|p| p.database), Echo::new("db_schema", true).0)
        .build();
    assert_eq!(names(&r, Mode::Build), ["bash"]);
    let s = Session::new("s", tmp.path());
    let out = r.dispatch(&s, ToolCall::new("1", "clone_site", json!({"text": "x"}))).await.unwrap();
    assert!(out.is_error, "a tool the project does not offer cannot be called: {out:?}");
    std::fs::write(tmp.path().join("package.json"), "{}").unwrap();
    let version = r.version();
    let out =
        r.dispatch(&s, ToolCall::new("2", "bash", json!({"text": "npm init"}))).await.unwrap();
    assert!(!out.is_error);
    assert_eq!(names(&r, Mode::Build), ["bash", "clone_site"]);
    assert_eq!(r.version(), version + 1, "subscribers hear of the change");
    std::fs::create_dir_all(tmp.path().join("supabase")).unwrap();
    std::fs::write(tmp.path().join("supabase/config.toml"), "").unwrap();
    assert!(r.refresh());
    assert_eq!(names(&r, Mode::Build), ["bash", "clone_site", "db_schema"]);

    let unknown = Registry::builder(CoreConfig::default())
        .tool_if(|c| c.project(|p| p.web), Echo::new("clone_site", true).0)
        .build();
    assert_eq!(names(&unknown, Mode::Build), ["clone_site"]);

    let profiled = Registry::builder(CoreConfig::default())
        .tool(Echo::new("read_file", true).0)
        .tool(Echo::new("bash", false).0)
        .offer_only(|spec| spec.name != "bash")
        .build();
    assert_eq!(names(&profiled, Mode::Build), ["read_file"]);
    assert!(!profiled.contains("bash"));
}

#[test]
fn schemas_are_derived_objects() {
    let r = registry();
    let spec = &r.list(Mode::Build)[0];
    assert_eq!(spec.input_schema["type"], "object");
    assert_eq!(spec.input_schema["properties"]["text"]["type"], "string");
    assert_eq!(spec.input_schema["required"], json!(["text"]));
    // No `additionalProperties` (Gemini refuses it); unknown fields are refused by the parser.
    assert!(spec.input_schema.get("additionalProperties").is_none());
    assert!(spec.input_schema.get("$schema").is_none());
}
