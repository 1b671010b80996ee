//! The JSON schemas the model and the clients see, derived from Rust types — never written by hand.
//!
//! The schemas stay in the subset that every major client and model API accepts (Anthropic's and
//! OpenAI's JSON Schema, Gemini's OpenAPI 3.0 subset, the MCP Inspector's validator):
//! - no `$ref` (sub-schemas inlined), no `$schema` or `title` noise;
//! - `format` only with values the JSON Schema standard defines (schemars' `uint64`, `int32`, …
//!   are dropped; `minimum: 0` stays in output schemas);
//! - an optional field is optional (not in `required`) with one plain `type`, never
//!   `type: [T, "null"]` and no `default: null` (the argument parser still accepts an explicit
//!   `null` for it, as "not given");
//! - an enum of strings is `type: string` with `enum`, not `oneOf` of `const`s (the variants'
//!   descriptions are folded into the field's description);
//! - no `additionalProperties` (Gemini refuses it; unknown arguments are still refused by the
//!   parser, with an error naming them).
//!
//! An input schema is also compacted, since the model reads it with every request ([`Compact`]):
//! no description on the root (the tool's own description says it), no `minimum: 0` that only
//! restates an unsigned type (the parser refuses a negative number, naming the field), no
//! `default` that an optional field has anyway (`false`, `[]`), and doc comments' line breaks
//! joined into one line.

use schemars::generate::{Contract, SchemaSettings};
use schemars::transform::{RestrictFormats, Transform, transform_subschemas};
use schemars::{JsonSchema, Schema};
use serde_json::{Map, Value};

/// The input schema for `T` (how it deserializes).
pub fn schema_for<T: JsonSchema>() -> Value {
    generate::<T>(Contract::Deserialize)
}

/// The output schema for `T` (how it serializes: a field with `skip_serializing_if` is optional).
///
/// An output type's `Option` fields must be `#[serde(default, skip_serializing_if =
/// "Option::is_none")]`: a `null` would not validate against the schema, which has no null type.
pub fn output_schema_for<T: JsonSchema>() -> Value {
    generate::<T>(Contract::Serialize)
}

/// The field a cut structured result gets: where the full output was saved. Every output schema
/// declares it (see [`with_full_output`]).
pub const FULL_OUTPUT: &str = "full_output";

/// `schema` (an output schema) with the optional [`FULL_OUTPUT`] property that the truncation
/// adds to a structured result it had to cut.
pub fn with_full_output(mut schema: Value) -> Value {
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        props.entry(FULL_OUTPUT).or_insert_with(|| {
            serde_json::json!({
                "type": "string",
                "description": "Set when this result was cut to fit the size limit: the file \
                    (relative to the project root) with the full text result; read it in parts \
                    (offset and limit)."
            })
        });
    }
    schema
}

fn generate<T: JsonSchema>(contract: Contract) -> Value {
    let input = contract == Contract::Deserialize;
    let generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.contract = contract;
        })
        .with_transform(RestrictFormats::default())
        .with_transform(ClientSubset)
        .with_transform(Compact { input })
        .into_generator();
    let mut value = generator.into_root_schema_for::<T>().to_value();
    if let Value::Object(map) = &mut value {
        map.remove("$schema");
        map.remove("title");
        if input {
            map.remove("description");
        }
        // MCP requires an object schema even for tools without arguments, and OpenAI's function
        // calling wants `properties` on it.
        map.entry("type").or_insert_with(|| Value::String("object".into()));
        if map.get("type").is_some_and(|t| t == "object") {
            map.entry("properties").or_insert_with(|| Value::Object(Map::new()));
        }
    }
    value
}

/// Rewrites a schema into the subset every client accepts (see the module's documentation).
#[derive(Debug, Clone, Copy)]
struct ClientSubset;

impl Transform for ClientSubset {
    fn transform(&mut self, schema: &mut Schema) {
        // Nulls first, so that an optional enum's variants are folded with the field's own
        // description; the rest bottom-up.
        if let Some(map) = schema.as_object_mut() {
            drop_null_type(map);
        }
        transform_subschemas(self, schema);
        let Some(map) = schema.as_object_mut() else { return };
        fold_const_variants(map);
        if map.get("default").is_some_and(Value::is_null) {
            map.remove("default");
        }
        if map.get("additionalProperties").is_some_and(Value::is_boolean) {
            map.remove("additionalProperties");
        }
    }
}

/// Drops what an input schema says twice (see the module's documentation); an output schema only
/// gets its line breaks joined.
#[derive(Debug, Clone, Copy)]
struct Compact {
    /// An input schema (how arguments deserialize).
    input: bool,
}

impl Transform for Compact {
    fn transform(&mut self, schema: &mut Schema) {
        transform_subschemas(self, schema);
        let Some(map) = schema.as_object_mut() else { return };
        if let Some(Value::String(text)) = map.get_mut("description")
            && text.contains('\n')
        {
            *text = text.split('\n').map(str::trim).collect::<Vec<_>>().join(" ");
        }
        if !self.input {
            return;
        }
        let kind = map.get("type").and_then(Value::as_str).unwrap_or_default().to_owned();
        let is = |t: &str| kind == t;
        if is("integer") && map.get("minimum").is_some_and(|m| m == 0) {
            map.remove("minimum");
        }
        let empty_default = match map.get("default") {
            Some(Value::Bool(false)) => is("boolean"),
            Some(Value::Array(items)) => items.is_empty() && is("array"),
            _ => false,
        };
        if empty_default {
            map.remove("default");
        }
        // An array's own description says what its items are.
        if let Some(Value::Object(items)) = map.get_mut("items") {
            items.remove("description");
        }
    }
}

/// `type: [T, "null"]` → `type: T`; `anyOf: [S, {type: null}]` → `S` (keeping the description).
fn drop_null_type(map: &mut Map<String, Value>) {
    if let Some(Value::Array(types)) = map.get_mut("type") {
        types.retain(|t| t != "null");
        if let [only] = types.as_slice() {
            let only = only.clone();
            map.insert("type".into(), only);
        }
    }
    let Some(Value::Array(branches)) = map.get("anyOf") else { return };
    let is_null = |b: &Value| {
        b.get("type").is_some_and(|t| t == "null") && b.as_object().is_some_and(|o| o.len() == 1)
    };
    let rest: Vec<Value> = branches.iter().filter(|b| !is_null(b)).cloned().collect();
    if rest.len() == branches.len() {
        return;
    }
    map.remove("anyOf");
    if let [Value::Object(only)] = rest.as_slice() {
        for (key, value) in only {
            map.entry(key.clone()).or_insert_with(|| value.clone());
        }
    } else {
        map.insert("anyOf".into(), Value::Array(rest));
    }
}

/// `oneOf` of string `const`s (an enum whose variants have doc comments) → `type: string` with
/// `enum`; the variants' descriptions are appended to the field's description.
fn fold_const_variants(map: &mut Map<String, Value>) {
    let Some(Value::Array(branches)) = map.get("oneOf") else { return };
    let mut values = Vec::new();
    let mut notes = Vec::new();
    for branch in branches {
        let Some(Value::String(value)) = branch.get("const") else { return };
        if branch.get("type").is_some_and(|t| t != "string") {
            return;
        }
        if let Some(description) = branch.get("description").and_then(Value::as_str) {
            notes.push(format!("`{value}`: {description}"));
        }
        values.push(Value::String(value.clone()));
    }
    map.remove("oneOf");
    map.insert("type".into(), Value::String("string".into()));
    map.insert("enum".into(), Value::Array(values));
    if !notes.is_empty() {
        let notes = notes.join(" ");
        let description = match map.get("description").and_then(Value::as_str) {
            Some(own) => format!("{own} ({notes})"),
            None => notes,
        };
        map.insert("description".into(), Value::String(description));
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};
    use serde_json::json;

    use super::*;

    /// How the value is read.
    #[derive(Debug, Deserialize, Serialize, JsonSchema)]
    #[serde(rename_all = "lowercase")]
    enum Mode {
        /// First.
        One,
        /// Second.
        Two,
    }

    #[derive(Debug, Deserialize, Serialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Args {
        /// Where.
        path: String,
        /// From which line.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        offset: Option<u64>,
        /// Small.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        port: Option<u16>,
        /// Which mode.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mode: Option<Mode>,
        /// Signed.
        count: i32,
        /// Also this,
        /// on two lines.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        also: bool,
        /// More.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        more: Vec<String>,
    }

    #[test]
    fn optional_fields_are_plain_optional_without_nonstandard_formats() {
        for (schema, min) in [(schema_for::<Args>(), None), (output_schema_for::<Args>(), Some(0))]
        {
            let mut offset = json!({"type": "integer", "description": "From which line."});
            let mut port = json!({"type": "integer", "maximum": 65535, "description": "Small."});
            // `default: false` and `default: []` are dropped from the input schema; an output
            // schema has no defaults.
            let also = json!({"type": "boolean", "description": "Also this, on two lines."});
            let more =
                json!({"type": "array", "items": {"type": "string"}, "description": "More."});
            if let Some(min) = min {
                offset["minimum"] = json!(min);
                port["minimum"] = json!(min);
            }
            assert_eq!(
                schema,
                json!({
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "description": "Where."},
                        "offset": offset,
                        "port": port,
                        "mode": {
                            "type": "string",
                            "enum": ["one", "two"],
                            "description": "Which mode. (`one`: First. `two`: Second.)"
                        },
                        "count": {"type": "integer", "description": "Signed."},
                        "also": also,
                        "more": more
                    },
                    "required": ["path", "count"]
                }),
                "{schema:#}"
            );
        }
    }
}
