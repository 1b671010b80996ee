//! The tool specs the model sees are data derived from the code: their schemas and descriptions are
//! snapshot-tested, and every example call in a description parses against its own schema and runs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hands_core::{CoreConfig, Mode, Registry, Session, ToolCall};
use serde_json::{Value, json};

fn registry() -> Registry {
    let builder = hands_fs::register(Registry::builder(CoreConfig::default()), &Default::default());
    let builder = hands_repomap::register(builder, &Default::default());
    let builder = hands_exec::register(builder, &Default::default());
    // No skill folders, so that use_skill's description does not depend on this machine's.
    let skills = hands_agent::UseSkill::discover(None, None);
    let builder = hands_agent::register_with(builder, &Default::default(), skills);
    project_tools(builder).build()
}

/// add_dependency, and reference_project over one reference project (its description lists it).
fn project_tools(builder: hands_core::RegistryBuilder) -> hands_core::RegistryBuilder {
    let builder = hands_deps::register(builder, &Default::default(), &Default::default(), None);
    let mut projects = std::collections::BTreeMap::new();
    projects.insert("shop".to_owned(), std::path::PathBuf::from("/nonexistent/shop"));
    hands_reference::register(builder, &projects, &Default::default())
}

/// The JSON type names a value satisfies.
fn json_type(value: &Value) -> &'static [&'static str] {
    match value {
        Value::Null => &["null"],
        Value::Bool(_) => &["boolean"],
        Value::Number(n) if n.is_u64() || n.is_i64() => &["integer", "number"],
        Value::Number(_) => &["number"],
        Value::String(_) => &["string"],
        Value::Array(_) => &["array"],
        Value::Object(_) => &["object"],
    }
}

/// Check `args` against a tool's top-level input schema: required fields present, no unknown
/// field, each value of a type (or enum value) the schema allows.
fn fits(schema: &Value, args: &Value) -> Result<(), String> {
    let props = schema["properties"].as_object().cloned().unwrap_or_default();
    let given = args.as_object().ok_or("not an object")?;
    for required in schema["required"].as_array().into_iter().flatten() {
        let name = required.as_str().unwrap_or_default();
        if !given.contains_key(name) {
            return Err(format!("missing required `{name}`"));
        }
    }
    for (name, value) in given {
        let prop = props.get(name).ok_or(format!("unknown field `{name}`"))?;
        if let Some(values) = prop.get("enum").and_then(Value::as_array) {
            if !values.contains(value) {
                return Err(format!("`{name}` = {value} is not one of {values:?}"));
            }
            continue;
        }
        let allowed: Vec<&str> = match &prop["type"] {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
            _ => continue,
        };
        if !json_type(value).iter().any(|t| allowed.contains(t)) {
            return Err(format!("`{name}` = {value} is not {allowed:?}"));
        }
    }
    Ok(())
}

#[test]
fn input_schemas_snapshot() {
    let registry = registry();
    let schemas: Vec<Value> = registry
        .list(Mode::Build)
        .into_iter()
        .map(|s| json!({"name": s.name, "input": s.input_schema, "output": s.output_schema, "annotations": s.annotations}))
        .collect();
    insta::assert_json_snapshot!("schemas", schemas);
}

#[test]
fn descriptions_snapshot() {
    let registry = registry();
    for spec in registry.list(Mode::Build) {
        insta::assert_snapshot!(format!("description_{}", spec.name), spec.description);
    }
}

/// The ```json blocks of a description.
fn examples(description: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for line in description.lines() {
        match (&mut current, line.trim_start()) {
            (None, l) if l.starts_with("```json") => current = Some(String::new()),
            (Some(block), l) if l.starts_with("```") => {
                out.push(std::mem::take(block));
                current = None;
            }
            (Some(block), _) => {
                block.push_str(line);
                block.push('\n');
            }
            _ => {}
        }
    }
    out
}

#[tokio::test]
async fn every_description_example_is_a_valid_call() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::create_dir_all(root.join("src")).unwrap();
    let registry = registry();
    let session = Session::one_shot(root);
    let mut checked = 0;
    for spec in registry.list(Mode::Build) {
        let blocks = examples(&spec.description);
        assert!(!blocks.is_empty(), "{} has no ```json example", spec.name);
        for block in blocks {
            let args: Value = serde_json::from_str(&block)
                .unwrap_or_else(|e| panic!("{}: example is not JSON ({e}):\n{block}", spec.name));
            if let Err(why) = fits(&spec.input_schema, &args) {
                panic!("{}: example {args} does not fit the schema: {why}", spec.name);
            }
            // The file tools' examples also run (in an empty project); process tools' examples
            // would start real programs, so they are only checked against the schema.
            if !spec.annotations.open_world {
                // enter_plan_mode's example switches modes; every example runs in build mode.
                session.set_mode(Mode::Build);
                let call = ToolCall::new("ex", &spec.name, args.clone());
                let out = registry.dispatch(&session, call).await.unwrap();
                let text = out.joined_text();
                assert!(!text.contains("Invalid arguments"), "{}: {args}: {text}", spec.name);
            }
            checked += 1;
        }
    }
    session.close().await;
    assert!(checked >= 15, "{checked}");
}

/// Every tool this build can offer without a network: the above, plus the preview tools (for a
/// static site) and spawn_subagent.
fn full_registry(root: &std::path::Path) -> Registry {
    std::fs::write(root.join("index.html"), "<h1>hi</h1>\n").unwrap();
    std::fs::create_dir_all(root.join(".hands/connectors")).unwrap();
    std::fs::write(root.join(".hands/connectors/example.toml"), "base_url = \"https://x.test\"\n")
        .unwrap();
    // read_file pointing to parse_document, as the binary registers them.
    let hints = hands_fs::Hints { documents: Some(hands_document::NAME) };
    let builder = hands_fs::register_with(
        Registry::builder(CoreConfig::default()),
        &Default::default(),
        hints,
    );
    let command =
        hands_document::ChildCommand { program: "hands".into(), args: Vec::new(), env: Vec::new() };
    let parser = hands_document::parser(command, hands_document::Limits::default());
    let builder = hands_document::register(builder, parser);
    let builder = hands_exec::register(builder, &Default::default());
    let skills = hands_agent::UseSkill::discover(None, None);
    let builder = hands_agent::register_with(builder, &Default::default(), skills);
    let builder = hands_agent::subagent::register(builder, true);
    let builder = project_tools(builder);
    let builder = hands_preview::register(builder, &Default::default(), &Default::default(), root);
    // The web tools as their keys and settings offer them: web_search with a SearXNG, web_scrape
    // with its built-in backend, image_gen with FAL_KEY.
    let guard = hands_net::Guard::new(&Default::default()).unwrap();
    let builder = hands_web::register(builder, &guard, &Default::default());
    let searxng = hands_web::SearchConfig {
        provider: Some(hands_web::Provider::Searxng),
        base_url: Some("http://127.0.0.1:9".into()),
    };
    let builder = hands_web::register_search(builder, &guard, &searxng, None);
    let scrape = hands_web::ScrapeConfig { builtin: true, base_url: None };
    let builder = hands_web::register_scrape(builder, &guard, &scrape, None, None);
    let builder = hands_web::register_image(builder, &guard, &Default::default(), None);
    let store = std::sync::Arc::new(hands_secrets::Store::at(root.join(".state/secrets")));
    let builder = hands_connectors::register(builder, &Default::default(), store, root).unwrap();
    builder
        .conditions(hands_core::Conditions {
            secrets: [hands_web::FAL_KEY.to_owned()].into_iter().collect(),
            ..Default::default()
        })
        .build()
}

/// Property names anywhere in `schema`.
fn property_names(schema: &Value, out: &mut std::collections::BTreeSet<String>) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Object(props)) = map.get("properties") {
                out.extend(props.keys().cloned());
            }
            map.values().for_each(|v| property_names(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| property_names(v, out)),
        _ => {}
    }
}

/// A description may name a tool only if hands offers it: every `snake_case` word in one is a tool
/// name, a field of some tool's schemas, or one of a few words that are neither.
#[test]
fn descriptions_name_only_tools_hands_offers() {
    let tmp = tempfile::tempdir().unwrap();
    let registry = full_registry(tmp.path());
    let specs = registry.list(Mode::Build);
    let mut known: std::collections::BTreeSet<String> =
        specs.iter().map(|s| s.name.clone()).collect();
    known.extend(registry.list(Mode::Plan).iter().map(|s| s.name.clone()));
    known.extend(["mcp_list", "mcp_call"].map(String::from));
    for spec in &specs {
        property_names(&spec.input_schema, &mut known);
        if let Some(output) = &spec.output_schema {
            property_names(output, &mut known);
        }
    }
    // Words that are neither tools nor fields: folder names, status and stage values, settings.
    known.extend(
        [
            "node_modules",
            "in_progress",
            "starting_server",
            "launching_browser",
            "window_size",
            "allowed_methods",
            "allowed_paths",
            "base_url",
            // An SSH key's file name (reference_project hides them).
            "id_rsa",
        ]
        .map(String::from),
    );
    let mut unknown = Vec::new();
    for spec in &specs {
        for word in spec.description.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            let snake = word.contains('_')
                && word.starts_with(|c: char| c.is_ascii_lowercase())
                && word.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
            if snake && !word.starts_with("mcp__") && !known.contains(word) {
                unknown.push(format!("{}: {word}", spec.name));
            }
        }
    }
    assert!(unknown.is_empty(), "descriptions name what hands does not offer: {unknown:?}");
    // A name that was there before: hands offers no such tool.
    for spec in &specs {
        assert!(!spec.description.contains("web_fetch"), "{} names web_fetch", spec.name);
    }
}

/// Issue 12, item 1: every registered tool has its description (a `.md` file beside it), not an
/// empty or placeholder text.
#[test]
fn every_tool_has_a_real_description() {
    let tmp = tempfile::tempdir().unwrap();
    let registry = full_registry(tmp.path());
    for spec in registry.list(Mode::Build).iter().chain(&registry.list(Mode::Plan)) {
        let text = spec.description.trim();
        assert!(text.len() >= 80, "{}: description too short: {text:?}", spec.name);
        let lower = text.to_ascii_lowercase();
        for placeholder in ["tbd", "fixme", "lorem", "placeholder", "xxx"] {
            assert!(
                !lower.split(|c: char| !c.is_ascii_alphanumeric()).any(|w| w == placeholder),
                "{}: description has `{placeholder}`",
                spec.name
            );
        }
    }
}

/// Issue 12, item 1: modes, aliases and sub-agent use come from each tool's policy; these are the
/// lists hands had as string constants, so the policies keep the behaviour.
#[test]
fn policies_give_the_plan_mode_and_sub_agent_lists() {
    let tmp = tempfile::tempdir().unwrap();
    let registry = full_registry(tmp.path());
    let plan: Vec<String> = registry.list(Mode::Plan).into_iter().map(|s| s.name).collect();
    assert_eq!(
        plan,
        [
            "read_file",
            "list_files",
            "glob",
            "grep",
            // Issue 15: reading a document is research too.
            "parse_document",
            "exit_plan_mode",
            "ask_user",
            "use_skill",
            "spawn_subagent",
            "reference_project",
            "web_search",
            "web_scrape",
            "read_runtime_errors"
        ]
    );
    let build: Vec<String> = registry.list(Mode::Build).into_iter().map(|s| s.name).collect();
    assert!(!build.contains(&"exit_plan_mode".to_owned()), "{build:?}");
    assert!(build.contains(&"enter_plan_mode".to_owned()), "{build:?}");
    assert_eq!(
        hands_agent::subagent::tools(&registry),
        [
            "read_file",
            "list_files",
            "glob",
            "grep",
            "parse_document",
            "use_skill",
            "reference_project",
            "web_search",
            "web_scrape",
            "read_runtime_errors"
        ]
    );
    for (alias, name) in [("read", "read_file"), ("write", "write_file"), ("edit", "edit_file")] {
        assert_eq!(registry.get(alias).unwrap().spec().name, name);
        assert!(!build.contains(&alias.to_owned()), "{alias} is listed");
    }
    let ask = registry.get("ask_user").unwrap();
    assert!(ask.spec().policy.needs_user && !ask.spec().policy.subagent);
}
