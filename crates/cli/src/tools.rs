//! `hands tools`: the tool list, as text for people or as JSON in MCP's `tools/list` shape.

use anyhow::Result;
use hands_core::{Family, Mode, Registry, ToolSpec};
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

/// The families in the order the README shows them, with their marker keys
/// (`<!-- tools:files -->`).
const FAMILIES: &[(Family, &str)] = &[
    (Family::Files, "files"),
    (Family::Search, "search"),
    (Family::Processes, "processes"),
    (Family::Session, "session"),
    (Family::Delegation, "delegation"),
    (Family::Mcp, "mcp"),
    (Family::Preview, "preview"),
    (Family::Web, "web"),
    (Family::Connectors, "connectors"),
    (Family::Data, "data"),
    (Family::Project, "project"),
    (Family::Other, "other"),
];

/// Every tool `registry` holds (build mode's, then the tools only plan mode offers), in
/// registration order, without the remote proxies (`mcp__SERVER__TOOL`): those belong to the
/// user's configuration, not to hands.
fn all_specs(registry: &Registry) -> Vec<ToolSpec> {
    let mut specs = registry.list(Mode::Build);
    for spec in registry.list(Mode::Plan) {
        if !specs.iter().any(|s| s.name == spec.name) {
            specs.push(spec);
        }
    }
    specs.retain(|spec| !spec.name.starts_with("mcp__"));
    specs
}

/// Print the README's tool tables: one per family (the tool's [`Policy`](hands_core::Policy)
/// says which), each between `<!-- tools:KEY -->` and `<!-- /tools:KEY -->` so that a test can
/// find it in the README.
pub fn print_markdown(registry: &Registry) -> Result<()> {
    term::data(&markdown(registry))?;
    Ok(())
}

/// [`print_markdown`]'s text.
pub fn markdown(registry: &Registry) -> String {
    let specs = all_specs(registry);
    let mut out = String::new();
    for (family, key) in FAMILIES {
        let members: Vec<&ToolSpec> =
            specs.iter().filter(|spec| spec.policy.family == *family).collect();
        if members.is_empty() {
            continue;
        }
        out.push_str(&format!("<!-- tools:{key} -->\n"));
        out.push_str("| tool | arguments | modes | sub-agent | what it does |\n");
        out.push_str("|---|---|---|---|---|\n");
        for spec in members {
            let policy = &spec.policy;
            let title = if policy.aliases.is_empty() {
                format!("`{}`", spec.name)
            } else {
                let aliases: Vec<String> =
                    policy.aliases.iter().map(|a| format!("`{a}`")).collect();
                format!("`{}` ({})", spec.name, aliases.join(", "))
            };
            let modes = match (policy.offered(Mode::Plan), policy.offered(Mode::Build)) {
                (true, true) => "plan, build",
                (true, false) => "plan",
                (false, _) => "build",
            };
            let sub = if policy.subagent { "yes" } else { "—" };
            out.push_str(&format!(
                "| {title} | {} | {modes} | {sub} | {} |\n",
                arguments(&spec.input_schema),
                cell(&summary(&spec.description)),
            ));
        }
        out.push_str(&format!("<!-- /tools:{key} -->\n"));
    }
    out
}

/// The arguments of an input schema: `name` when required, `name?` when optional, `—` for none.
fn arguments(schema: &Value) -> String {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let args: Vec<String> = schema["properties"]
        .as_object()
        .map(|props| {
            props
                .keys()
                .map(|k| {
                    if required.contains(&k.as_str()) {
                        format!("`{k}`")
                    } else {
                        format!("`{k}?`")
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    if args.is_empty() { "—".to_owned() } else { args.join(", ") }
}

/// A table's summary of a description: its [`first_sentence`], and when that is long, only what
/// comes before the first `: ` (the list after it is the description's to give).
fn summary(description: &str) -> String {
    const LONG: usize = 100;
    let sentence = first_sentence(description);
    if sentence.chars().count() <= LONG {
        return sentence;
    }
    let (mut in_code, mut depth) = (false, 0usize);
    for (i, c) in sentence.char_indices() {
        match c {
            '`' => in_code = !in_code,
            '(' if !in_code => depth += 1,
            ')' if !in_code => depth = depth.saturating_sub(1),
            ':' if !in_code && depth == 0 && sentence[i + 1..].starts_with(' ') => {
                return format!("{}.", &sentence[..i]);
            }
            _ => {}
        }
    }
    sentence
}

/// The first sentence of a description's first paragraph, lines joined: it ends at `. ` or a
/// paragraph's end outside backticks (`vite.config.*` is no end).
fn first_sentence(description: &str) -> String {
    let paragraph: Vec<&str> =
        description.trim().lines().take_while(|l| !l.trim().is_empty()).map(str::trim).collect();
    let text = paragraph.join(" ");
    let mut in_code = false;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '`' => in_code = !in_code,
            '.' if !in_code && chars.peek().is_some_and(|(_, next)| *next == ' ') => {
                return text[..=i].to_owned();
            }
            _ => {}
        }
    }
    text
}

/// `text` made safe for a Markdown table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sentence_ends_outside_code_and_joins_lines() {
        assert_eq!(
            first_sentence("Ask the user\na question. Then wait."),
            "Ask the user a question."
        );
        assert_eq!(first_sentence("Reads `a. b` files. More."), "Reads `a. b` files.");
        assert_eq!(first_sentence("One line\n\nSecond paragraph."), "One line");
    }

    #[test]
    fn long_summaries_stop_before_their_list() {
        let long = format!("List the things (a: b): {}. More.", "x, ".repeat(40));
        assert_eq!(summary(&long), "List the things (a: b).");
        assert_eq!(summary("Short: kept whole. More."), "Short: kept whole.");
    }

    #[test]
    fn arguments_mark_optional_ones() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": { "path": {}, "limit": {} },
            "required": ["path"],
        });
        assert_eq!(arguments(&schema), "`path`, `limit?`");
        assert_eq!(arguments(&serde_json::json!({ "type": "object", "properties": {} })), "—");
    }

    #[test]
    fn cells_escape_pipes() {
        assert_eq!(cell("a | b"), "a \\| b");
    }
}
