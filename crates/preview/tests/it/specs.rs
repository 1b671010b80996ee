//! The preview tools as the model sees them: schemas and descriptions are snapshot-tested, and
//! every example call in a description is accepted by its own tool.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::Env;
use hands_core::Mode;
use serde_json::{Value, json};

fn preview_env() -> Env {
    // Chromium is not needed here: an example of preview_open stops at the missing browser.
    Env::with_files(&[("index.html", "<h1>hi</h1>")], |c| {
        c.chromium = "/nonexistent/chromium".into();
        c.evaluate = true;
    })
}

#[test]
fn schemas_snapshot() {
    let env = preview_env();
    let specs: Vec<Value> = env
        .registry
        .list(Mode::Build)
        .into_iter()
        .filter(|s| hands_preview::TOOLS.contains(&s.name.as_str()))
        .map(|s| {
            json!({
                "name": s.name,
                "input": s.input_schema,
                "output": s.output_schema,
                "annotations": s.annotations,
                "needs_approval": s.needs_approval,
                "cacheable": s.cacheable,
            })
        })
        .collect();
    assert_eq!(specs.len(), hands_preview::TOOLS.len());
    insta::assert_json_snapshot!("schemas", specs);
}

#[test]
fn descriptions_snapshot() {
    let env = preview_env();
    for name in hands_preview::TOOLS {
        let spec = env.registry.get(name).unwrap().spec().clone();
        insta::assert_snapshot!(format!("description_{name}"), spec.description);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_example_is_accepted_by_its_tool() {
    let env = preview_env();
    for name in hands_preview::TOOLS {
        let description = env.registry.get(name).unwrap().spec().description.clone();
        let examples: Vec<&str> = description
            .split("```json")
            .skip(1)
            .filter_map(|block| block.split("```").next())
            .collect();
        assert!(!examples.is_empty(), "{name} has no example");
        for example in examples {
            let args: Value = serde_json::from_str(example.trim()).unwrap();
            let out = env.call(name, args.clone()).await;
            let text = out.joined_text();
            assert!(!text.contains("Invalid arguments"), "{name} {args}: {text}");
        }
    }
    env.session.close().await;
}
