//! The JSON schema the model sees, derived from a tool's `Args` type — never written by hand.

use schemars::{JsonSchema, generate::SchemaSettings};
use serde_json::Value;

/// The input schema for `T`: draft 2020-12, sub-schemas inlined (models handle `$ref` poorly), no
/// `$schema` or `title` noise.
pub fn schema_for<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
        })
        .into_generator();
    let mut value = generator.into_root_schema_for::<T>().to_value();
    if let Value::Object(map) = &mut value {
        map.remove("$schema");
        map.remove("title");
        // MCP requires an object schema even for tools without arguments.
        map.entry("type").or_insert_with(|| Value::String("object".into()));
    }
    value
}
