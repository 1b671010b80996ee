//! `hands tools`: the tool list, as text for people or as JSON in MCP's `tools/list` shape.

use anyhow::Result;
use hands_core::{Mode, Registry, ToolSpec};
use serde_json::{Value, json};

use crate::term;

/// A spec in MCP's shape.
pub fn mcp_json(spec: &ToolSpec) -> Value {
    let a = spec.annotations;
    let mut tool = json!({
        "name": spec.name,
        "description": spec.description,
        "inputSchema": spec.input_schema,
        "annotations": {
            "readOnlyHint": a.read_only,
            "destructiveHint": a.destructive,
            "idempotentHint": a.idempotent,
            "openWorldHint": a.open_world,
        },
    });
    if let (Some(schema), Value::Object(map)) = (&spec.output_schema, &mut tool) {
        map.insert("outputSchema".into(), schema.clone());
    }
    tool
}

/// Print the tools of `mode`.
pub fn print(registry: &Registry, mode: Mode, json: bool) -> Result<()> {
    let specs = registry.list(mode);
    if json {
        let tools: Vec<Value> = specs.iter().map(mcp_json).collect();
        term::data(&format!("{}\n", serde_json::to_string_pretty(&json!({ "tools": tools }))?))?;
        return Ok(());
    }
    let width = specs.iter().map(|s| s.name.len()).max().unwrap_or(0);
    let mut out = String::new();
    for spec in specs {
        // An MCP server names and describes its own tools: one escaped line each.
        let summary = spec.description.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        let tag = if spec.annotations.read_only { "read-only" } else { "writes" };
        let name = term::line(&spec.name);
        out.push_str(&format!("{name:width$}  {tag:9}  {}\n", term::line(summary)));
    }
    term::data(&out)?;
    Ok(())
}
