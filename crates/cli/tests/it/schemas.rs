//! Every schema hands publishes (`hands tools --json`: every tool's input and output schema, with
//! the preview, MCP and subagent tools offered) stays in the subset all major clients accept:
//! - JSON Schema: `format` only with values the standard defines, no type arrays, no `$ref`;
//! - Anthropic (`input_schema`) and MCP: an object schema at the root;
//! - OpenAI function calling (`parameters`): an object root with `properties`;
//! - Gemini function declarations (`parameters`): the documented fields of its OpenAPI 3.0 subset
//!   Schema object only (no `oneOf`, `const`, `additionalProperties`, `$ref`, type arrays), `enum`
//!   on strings only, and only the formats it documents for a type.
//!
//! A snapshot of all the schemas makes any change to them visible in review.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use assert_cmd::Command;
use serde_json::{Map, Value, json};

/// `format` values defined by JSON Schema 2020-12 (7.3 "Defined Formats").
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// The fields of Gemini's `Schema` object (function declarations' `parameters`), as documented for
/// the Gemini API: "a select subset of an OpenAPI 3.0 schema object".
const GEMINI_FIELDS: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "propertyOrdering",
    "default",
    "items",
    "minimum",
    "maximum",
];

/// Gemini's `Type` values.
const GEMINI_TYPES: &[&str] = &["string", "number", "integer", "boolean", "array", "object"];

/// The tools list of a project that offers every tool: a static site (preview tools), an MCP
/// server (mcp_list, mcp_call and the proxied tools) and a model (spawn_subagent).
fn tools_list() -> Vec<Value> {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("proj");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(home.join(".config/hands")).unwrap();
    std::fs::write(root.join("index.html"), "<h1>hi</h1>\n").unwrap();
    std::fs::create_dir_all(root.join(".hands/connectors")).unwrap();
    std::fs::write(root.join(".hands/connectors/example.toml"), "base_url = \"https://x.test\"\n")
        .unwrap();
    std::fs::create_dir_all(tmp.path().join("inner-home")).unwrap();
    let bin = assert_cmd::cargo::cargo_bin("hands");
    std::fs::write(
        home.join(".config/hands/config.toml"),
        format!(
            "[model]\nmodel = \"test-model\"\n\n[web_scrape]\nbuiltin = true\n\n[mcp_servers.inner]\ncommand = {:?}\nargs = [\"mcp\", \"--root\", {:?}]\nenv = {{ HOME = {:?} }}\n",
            bin.display().to_string(),
            root.display().to_string(),
            // The inner hands must not read this configuration (it would start itself again).
            tmp.path().join("inner-home").display().to_string()
        ),
    )
    .unwrap();
    let out = Command::cargo_bin("hands")
        .unwrap()
        .env("HOME", &home)
        .env_remove("XDG_CONFIG_HOME")
        // image_gen is offered while its key exists.
        .env("FAL_KEY", "fal-readme-placeholder-key")
        .current_dir(&root)
        .timeout(std::time::Duration::from_secs(60))
        .args(["tools", "--json", "--root"])
        .arg(&root)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    let tools = list["tools"].as_array().unwrap().clone();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    for name in [
        "read_file",
        "bash",
        "preview_open",
        "mcp_list",
        "mcp_call",
        "spawn_subagent",
        "mcp__inner__grep",
        "web_scrape",
        "image_gen",
        "connector_call",
        "connector_scaffold",
    ] {
        assert!(names.contains(&name), "{name} is not offered: {names:?}");
    }
    tools
}

/// Every (path, schema node) of `schema`, the root included.
fn nodes<'a>(schema: &'a Value, path: String, out: &mut Vec<(String, &'a Map<String, Value>)>) {
    let Value::Object(map) = schema else { return };
    out.push((path.clone(), map));
    for (key, value) in map {
        match key.as_str() {
            "properties" | "$defs" | "definitions" | "patternProperties" => {
                for (name, sub) in value.as_object().into_iter().flatten() {
                    nodes(sub, format!("{path}/{key}/{name}"), out);
                }
            }
            "items"
            | "additionalProperties"
            | "not"
            | "contains"
            | "propertyNames"
            | "unevaluatedProperties"
            | "if"
            | "then"
            | "else" => {
                nodes(value, format!("{path}/{key}"), out);
            }
            "anyOf" | "oneOf" | "allOf" | "prefixItems" => {
                for (i, sub) in value.as_array().into_iter().flatten().enumerate() {
                    nodes(sub, format!("{path}/{key}/{i}"), out);
                }
            }
            _ => {}
        }
    }
}

/// Problems of one schema for every client (JSON Schema level).
fn standard_problems(schema: &Value) -> Vec<String> {
    let mut all = Vec::new();
    nodes(schema, String::new(), &mut all);
    let mut problems = Vec::new();
    for (path, node) in all {
        if let Some(format) = node.get("format")
            && !format.as_str().is_some_and(|f| STANDARD_FORMATS.contains(&f))
        {
            problems.push(format!("{path}: non-standard format {format}"));
        }
        if node.get("type").is_some_and(Value::is_array) {
            problems.push(format!("{path}: type array {}", node["type"]));
        }
        for key in ["$ref", "$defs", "definitions", "$schema"] {
            if node.contains_key(key) {
                problems.push(format!("{path}: has {key}"));
            }
        }
    }
    problems
}

/// Problems of an input schema as Gemini's function-declaration `parameters`.
fn gemini_problems(schema: &Value) -> Vec<String> {
    let mut all = Vec::new();
    nodes(schema, String::new(), &mut all);
    let mut problems = Vec::new();
    for (path, node) in all {
        for key in node.keys() {
            if !GEMINI_FIELDS.contains(&key.as_str()) {
                problems.push(format!("{path}: `{key}` is not a field of Gemini's Schema"));
            }
        }
        let ty = node.get("type").and_then(Value::as_str);
        match node.get("type") {
            None if !node.contains_key("anyOf") => {
                problems.push(format!("{path}: no type"));
            }
            None => {}
            Some(Value::String(t)) if GEMINI_TYPES.contains(&t.as_str()) => {}
            Some(other) => problems.push(format!("{path}: type {other} is not a Gemini Type")),
        }
        if let Some(values) = node.get("enum")
            && (ty != Some("string")
                || !values.as_array().is_some_and(|v| v.iter().all(Value::is_string)))
        {
            problems.push(format!("{path}: enum on a non-string ({values})"));
        }
        if let Some(format) = node.get("format").and_then(Value::as_str) {
            let allowed: &[&str] = match ty {
                Some("number") => &["float", "double"],
                Some("integer") => &["int32", "int64"],
                Some("string") => &["enum", "date-time"],
                _ => &[],
            };
            if !allowed.contains(&format) {
                problems.push(format!("{path}: format {format:?} is not documented for {ty:?}"));
            }
        }
        if let Some(required) = node.get("required").and_then(Value::as_array) {
            let props = node.get("properties").and_then(Value::as_object);
            for name in required.iter().filter_map(Value::as_str) {
                if !props.is_some_and(|p| p.contains_key(name)) {
                    problems.push(format!("{path}: required `{name}` is not a property"));
                }
            }
        }
    }
    problems
}

/// Problems of an input schema as Anthropic's `input_schema` and OpenAI's `parameters`.
fn anthropic_openai_problems(schema: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    if schema["type"] != "object" {
        problems.push(format!("root type is {} (both want an object)", schema["type"]));
    }
    if !schema["properties"].is_object() {
        problems.push("root has no `properties` object (OpenAI wants one)".to_owned());
    }
    problems
}

#[test]
fn every_schema_is_in_the_subset_every_client_accepts() {
    let tools = tools_list();
    let mut problems = Vec::new();
    for tool in &tools {
        let name = tool["name"].as_str().unwrap();
        let input = &tool["inputSchema"];
        for p in standard_problems(input) {
            problems.push(format!("{name} input{p}"));
        }
        for p in anthropic_openai_problems(input) {
            problems.push(format!("{name} input: {p}"));
        }
        for p in gemini_problems(input) {
            problems.push(format!("{name} input (Gemini){p}"));
        }
        if let Some(output) = tool.get("outputSchema") {
            for p in standard_problems(output) {
                problems.push(format!("{name} output{p}"));
            }
            if output["type"] != "object" {
                problems.push(format!("{name} output: MCP wants an object schema"));
            }
        }
    }
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
}

#[test]
fn the_checkers_catch_what_clients_reject() {
    // What schemars emits without hands' settings: each is caught.
    let bad = json!({
        "type": "object",
        "properties": {
            "offset": {"type": ["integer", "null"], "format": "uint64", "minimum": 0},
            "mode": {"oneOf": [{"type": "string", "const": "a"}]},
            "sub": {"$ref": "#/$defs/Sub"}
        },
        "additionalProperties": false,
        "$defs": {"Sub": {"type": "object"}}
    });
    let standard = standard_problems(&bad).join("\n");
    for needle in ["non-standard format \"uint64\"", "type array", "has $ref", "has $defs"] {
        assert!(standard.contains(needle), "{needle}: {standard}");
    }
    let gemini = gemini_problems(&bad).join("\n");
    for needle in
        ["`additionalProperties`", "`oneOf`", "`const`", "`$ref`", "type [\"integer\",\"null\"]"]
    {
        assert!(gemini.contains(needle), "{needle}: {gemini}");
    }
    assert!(!anthropic_openai_problems(&json!({"type": "object"})).is_empty());
}

#[test]
fn every_tools_schemas_snapshot() {
    let tools = tools_list();
    let schemas: Vec<Value> = tools
        .iter()
        // The proxied copies of hands' own tools repeat the schemas above.
        .filter(|t| !t["name"].as_str().unwrap().starts_with("mcp__"))
        .map(|t| json!({"name": t["name"], "input": t["inputSchema"], "output": t.get("outputSchema")}))
        .collect();
    insta::assert_json_snapshot!("all_tool_schemas", schemas);
}
