//! Parsing raw JSON arguments into a tool's typed `Args`, with errors that name the field and the
//! expected type so that the model can fix its call.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::ToolError;

/// Parse `args` for tool `tool`. `null` counts as `{}` (clients send it for argument-less tools).
pub fn parse<T: DeserializeOwned>(tool: &str, args: Value) -> Result<T, ToolError> {
    parse_with_schema(tool, args, &Value::Null)
}

/// [`parse`], with the tool's input `schema` so that a missing field's error says its type too.
pub fn parse_with_schema<T: DeserializeOwned>(
    tool: &str,
    args: Value,
    schema: &Value,
) -> Result<T, ToolError> {
    let args = if args.is_null() { Value::Object(Default::default()) } else { args };
    if !args.is_object() {
        return Err(ToolError::model(format!(
            "Invalid arguments for {tool}: expected a JSON object of named arguments, got {}. \
             Call it again with an object such as {{\"path\": \"src/main.rs\"}}.",
            kind(&args)
        )));
    }
    // The common case, well-formed arguments, without the path tracking (a third of a small
    // call's argument parsing); only a failure parses again to name the field.
    if let Ok(typed) = T::deserialize(&args) {
        return Ok(typed);
    }
    serde_path_to_error::deserialize::<_, T>(&args).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner().to_string();
        let at = if path == "." || path.is_empty() {
            String::new()
        } else {
            format!(" field `{path}`:")
        };
        ToolError::model(format!(
            "Invalid arguments for {tool}:{at} {}{}. Fix the arguments (see the tool's schema) and \
             call it again.",
            explain(&inner),
            missing_type(&inner, schema)
        ))
    })
}

/// For "missing field `x`": ` (x is a string: <its description>)` from the schema.
fn missing_type(message: &str, schema: &Value) -> String {
    let Some(name) = message.strip_prefix("missing field `").and_then(|r| r.split('`').next())
    else {
        return String::new();
    };
    let Some(property) = schema.get("properties").and_then(|p| p.get(name)) else {
        return String::new();
    };
    let ty = match property.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .filter(|t| *t != "null")
            .collect::<Vec<_>>()
            .join(" or "),
        _ => return String::new(),
    };
    let article = if ty.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" };
    match property.get("description").and_then(Value::as_str) {
        Some(description) => format!(" (`{name}` is {article} {ty}: {description})"),
        None => format!(" (`{name}` is {article} {ty})"),
    }
}

/// serde's messages name Rust types (`u64`, `usize`); say it in JSON terms too.
fn explain(message: &str) -> String {
    let message = message
        .replace("expected usize", "expected a non-negative integer")
        .replace("expected u64", "expected a non-negative integer")
        .replace("expected u32", "expected a non-negative integer")
        .replace("expected i64", "expected an integer")
        .replace("expected a boolean", "expected a boolean (true or false)");
    message.trim_end_matches('.').to_owned()
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Args {
        path: String,
        offset: Option<u64>,
    }

    fn message(args: Value) -> String {
        match parse::<Args>("read_file", args) {
            Err(ToolError::RespondToModel(m)) => m,
            other => panic!("expected an argument error, got {other:?}"),
        }
    }

    #[test]
    fn wrong_type_names_field_and_type() {
        let m = message(json!({"path": "a", "offset": "ten"}));
        assert!(m.contains("field `offset`"), "{m}");
        assert!(m.contains("non-negative integer"), "{m}");
    }

    #[test]
    fn missing_field_is_named() {
        let m = message(json!({"offset": 3}));
        assert!(m.contains("missing field `path`"), "{m}");
    }

    #[test]
    fn missing_field_says_its_type_from_the_schema() {
        let schema = serde_json::json!({"properties": {"path": {"type": "string", "description": "Where."}}});
        let err =
            parse_with_schema::<Args>("read_file", json!({}), &schema).unwrap_err().to_string();
        assert!(err.contains("missing field `path` (`path` is a string: Where.)"), "{err}");
    }

    #[test]
    fn unknown_field_is_named() {
        let m = message(json!({"path": "a", "ofset": 3}));
        assert!(m.contains("unknown field `ofset`"), "{m}");
    }

    #[test]
    fn non_object_is_refused() {
        let m = message(json!(["a"]));
        assert!(m.contains("got an array"), "{m}");
    }

    #[test]
    fn explicit_null_for_an_optional_argument_is_not_given() {
        // Schemas no longer say `type: [T, "null"]`, but older clients still send `null`.
        let args: Args = parse("read_file", json!({"path": "a", "offset": null})).unwrap();
        assert_eq!(args.offset, None);
    }

    #[test]
    fn null_is_empty_object() {
        let m = message(Value::Null);
        assert!(m.contains("missing field `path`"), "{m}");
    }
}
