//! The page as an outline: Chromium's accessibility tree (`Accessibility.getFullAXTree`) turned
//! into indented lines, one per node a user would perceive — `role "name"`, a ref for what can be
//! acted on, the value and the states.
//!
//! The accessibility tree rather than a walk of the DOM: Chromium has already computed what a
//! DOM walk would have to redo in JavaScript — accessible names (labels, `aria-label`, content),
//! roles of native elements, checked/expanded/disabled states, and which nodes are ignored
//! (hidden, `aria-hidden`, layout-only `div`s) — in native code, in one call, without running a
//! script in the page. Nodes that carry nothing (ignored, `generic` without a name, inline text
//! boxes) are left out and their children lifted; text that repeats its parent's name is dropped.
//! A ref is `e` and the node's `backendDOMNodeId`, which stays the same for the same element
//! across snapshots of one document and is what the DOM domain acts on.

use std::collections::HashMap;

use serde_json::Value;

/// Roles that get a ref: what can be clicked, typed into or chosen, and the containers worth
/// narrowing a snapshot to.
const REF_ROLES: &[&str] = &[
    "button",
    "link",
    "textbox",
    "searchbox",
    "checkbox",
    "radio",
    "combobox",
    "listbox",
    "option",
    "menuitem",
    "menuitemcheckbox",
    "menuitemradio",
    "tab",
    "switch",
    "slider",
    "spinbutton",
    "treeitem",
    "textarea",
    "form",
    "list",
    "table",
    "dialog",
    "alertdialog",
    "main",
    "navigation",
];

/// Roles that are only structure: left out when they have no name (their children are lifted).
const LIFTED: &[&str] =
    &["generic", "none", "presentation", "LineBreak", "Section", "div", "LabelText"];

/// Longest name or value shown, in characters.
const MAX_NAME: usize = 120;

/// One line of the outline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// Nesting depth (two spaces each).
    pub depth: usize,
    /// The role (`button`, `text` for text).
    pub role: String,
    /// The line without its indentation.
    pub text: String,
    /// The node's `backendDOMNodeId`, when it has a ref.
    pub node: Option<u64>,
}

impl Line {
    /// `e12` for a line with a ref.
    pub fn ref_name(&self) -> Option<String> {
        self.node.map(|n| format!("e{n}"))
    }

    /// The line with its indentation.
    pub fn indented(&self) -> String {
        format!("{:width$}{}", "", self.text, width = self.depth * 2)
    }
}

/// The text of `s` cut to [`MAX_NAME`] characters, quoted, without secrets.
fn quoted(s: &str) -> String {
    let clean = hands_core::redact::text(s.trim());
    let mut out: String = clean.chars().take(MAX_NAME).collect();
    if clean.chars().count() > MAX_NAME {
        out.push('…');
    }
    format!("\"{}\"", out.replace('\n', " ").replace('"', "\\\""))
}

fn ax_value(node: &Value, field: &str) -> String {
    match &node[field]["value"] {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The states shown after a line, in a fixed order.
fn states(node: &Value, role: &str) -> Vec<String> {
    let mut out = Vec::new();
    let Some(properties) = node["properties"].as_array() else { return out };
    let prop = |name: &str| {
        properties.iter().find(|p| p["name"] == name).map(|p| p["value"]["value"].clone())
    };
    // A level says something of headings; of list items and tree items it repeats the nesting.
    if let Some(level) = prop("level").and_then(|v| v.as_u64()).filter(|_| role == "heading") {
        out.push(format!("level={level}"));
    }
    match prop("checked").as_ref().and_then(Value::as_str) {
        Some("true") => out.push("checked".into()),
        Some("mixed") => out.push("mixed".into()),
        _ => {}
    }
    match prop("pressed").as_ref().and_then(Value::as_str) {
        Some("true") => out.push("pressed".into()),
        Some("mixed") => out.push("mixed".into()),
        _ => {}
    }
    for flag in ["disabled", "focused", "selected", "required", "invalid", "readonly", "modal"] {
        let on = match prop(flag) {
            Some(Value::Bool(b)) => b,
            Some(Value::String(s)) => s != "false",
            _ => false,
        };
        if on {
            out.push(flag.to_owned());
        }
    }
    if let Some(expanded) = prop("expanded").and_then(|v| v.as_bool()) {
        out.push(if expanded { "expanded" } else { "collapsed" }.to_owned());
    }
    out
}

/// The names of a node's children, joined (what a label's own text would repeat).
fn children_names(node: &Value, by_id: &HashMap<&str, &Value>) -> String {
    let Some(children) = node["childIds"].as_array() else { return String::new() };
    children
        .iter()
        .filter_map(|c| by_id.get(c.as_str()?))
        .filter(|c| ax_value(c, "role") != "StaticText")
        .map(|c| ax_value(c, "name"))
        .collect::<Vec<_>>()
        .join("\u{1}")
}

/// The outline of a `getFullAXTree` result.
pub fn outline(tree: &Value) -> Vec<Line> {
    let Some(nodes) = tree["nodes"].as_array() else { return Vec::new() };
    let by_id: HashMap<&str, &Value> =
        nodes.iter().filter_map(|n| Some((n["nodeId"].as_str()?, n))).collect();
    let Some(root) = nodes.first() else { return Vec::new() };
    let mut lines = Vec::new();
    // An explicit stack: a deep page must not overflow the thread's stack.
    let mut stack: Vec<(&Value, usize, String)> = vec![(root, 0, String::new())];
    while let Some((node, depth, parent_name)) = stack.pop() {
        let role = ax_value(node, "role");
        let name = ax_value(node, "name");
        let ignored = node["ignored"].as_bool() == Some(true);
        let mut child_depth = depth;
        let mut inherited = parent_name.clone();
        if role == "LabelText" && name.trim().is_empty() {
            // A label's text repeats the name of the control inside it.
            inherited = children_names(node, &by_id);
        }
        let skip = ignored
            || role == "RootWebArea"
            || role == "InlineTextBox"
            || (LIFTED.contains(&role.as_str()) && name.trim().is_empty());
        if role == "InlineTextBox" || role == "ListMarker" {
            // Text boxes repeat their text; a list's bullets and numbers say nothing.
            continue;
        }
        if !skip {
            if role == "StaticText" {
                let text = name.trim();
                if !text.is_empty() && !parent_name.contains(text) {
                    lines.push(Line { depth, role: "text".into(), text: quoted(text), node: None });
                }
                continue;
            }
            let mut text = role.clone();
            if !name.trim().is_empty() {
                text.push(' ');
                text.push_str(&quoted(&name));
            }
            let node_id = node["backendDOMNodeId"].as_u64();
            let with_ref = REF_ROLES.contains(&role.as_str()) && node_id.is_some();
            if let (true, Some(id)) = (with_ref, node_id) {
                text.push_str(&format!(" [e{id}]"));
            }
            let value = ax_value(node, "value");
            if !value.is_empty() && value != name {
                text.push_str(&format!(" value={}", quoted(&value)));
            }
            for state in states(node, &role) {
                text.push(' ');
                text.push_str(&state);
            }
            lines.push(Line {
                depth,
                role: role.clone(),
                text,
                node: if with_ref { node_id } else { None },
            });
            child_depth = depth + 1;
            inherited = name;
        }
        if let Some(children) = node["childIds"].as_array() {
            for child in children.iter().rev() {
                if let Some(child) = child.as_str().and_then(|id| by_id.get(id)) {
                    stack.push((child, child_depth, inherited.clone()));
                }
            }
        }
    }
    merge_text(lines)
}

/// A nameless line's first text child joins it (`listitem "Milk"`, `paragraph "Hello"`): one line
/// instead of two, nothing lost.
fn merge_text(lines: Vec<Line>) -> Vec<Line> {
    let mut out: Vec<Line> = Vec::with_capacity(lines.len());
    for line in lines {
        let joins = line.role == "text"
            && out.last().is_some_and(|parent| {
                parent.depth + 1 == line.depth
                    && parent.role != "text"
                    && parent.text == parent.role
            });
        match out.last_mut() {
            Some(parent) if joins => {
                parent.text.push(' ');
                parent.text.push_str(&line.text);
            }
            _ => out.push(line),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(id: &str, role: &str, name: &str, children: &[&str], backend: u64) -> Value {
        json!({"nodeId": id, "ignored": false, "role": {"type": "role", "value": role},
               "name": {"type": "computedString", "value": name},
               "childIds": children, "backendDOMNodeId": backend})
    }

    #[test]
    fn the_tree_becomes_an_indented_outline_with_refs() {
        let mut checkbox = node("6", "checkbox", "Remember me", &[], 16);
        checkbox["properties"] = json!([{"name": "checked", "value": {"type": "tristate", "value": "true"}},
                                         {"name": "focused", "value": {"type": "booleanOrUndefined", "value": true}}]);
        let mut textbox = node("4", "textbox", "User", &[], 14);
        textbox["value"] = json!({"type": "string", "value": "alice"});
        let mut heading = node("2", "heading", "Log in", &["3"], 12);
        heading["properties"] =
            json!([{"name": "level", "value": {"type": "integer", "value": 1}}]);
        let tree = json!({"nodes": [
            node("1", "RootWebArea", "Fixture", &["2", "7"], 1),
            heading,
            node("3", "StaticText", "Log in", &[], 13),
            textbox,
            node("5", "button", "Go", &["8"], 15),
            checkbox,
            node("7", "generic", "", &["4", "5", "6", "9"], 17),
            node("8", "StaticText", "Go", &[], 18),
            node("9", "paragraph", "", &["10"], 19),
            node("10", "StaticText", "Hello \"you\"", &[], 20),
        ]});
        let text: Vec<String> = outline(&tree).iter().map(Line::indented).collect();
        assert_eq!(
            text,
            [
                "heading \"Log in\" level=1",
                "textbox \"User\" [e14] value=\"alice\"",
                "button \"Go\" [e15]",
                "checkbox \"Remember me\" [e16] checked focused",
                "paragraph \"Hello \\\"you\\\"\"",
            ]
        );
        assert_eq!(outline(&tree)[1].ref_name().as_deref(), Some("e14"));
    }
}
