//! The tool specs the model sees are data derived from the code: their schemas and descriptions are
//! snapshot-tested, and every example call in a description parses against its own schema and runs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hands_core::{CoreConfig, Mode, Registry, Session, ToolCall};
use serde_json::{Value, json};

fn registry() -> Registry {
    hands_fs::register(Registry::builder(CoreConfig::default()), &Default::default()).build()
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
    let mut ran = 0;
    for spec in registry.list(Mode::Build) {
        let blocks = examples(&spec.description);
        assert!(!blocks.is_empty(), "{} has no ```json example", spec.name);
        for block in blocks {
            let args: Value = serde_json::from_str(&block)
                .unwrap_or_else(|e| panic!("{}: example is not JSON ({e}):\n{block}", spec.name));
            let out = registry
                .dispatch(&session, ToolCall::new("ex", &spec.name, args.clone()))
                .await
                .unwrap();
            let text = out.joined_text();
            assert!(
                !text.contains("Invalid arguments"),
                "{}: example {args} does not fit the schema: {text}",
                spec.name
            );
            ran += 1;
        }
    }
    assert!(ran >= 6);
}
