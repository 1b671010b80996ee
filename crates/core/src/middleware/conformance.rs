//! Output-schema conformance, in debug builds only: every final result (after truncation, as the
//! client gets it) is checked against its tool's declared output schema with the `jsonschema`
//! crate, so that every test of every suite that runs a debug build also tests conformance.
//!
//! The rule (docs/tools.md, "Results: text and structured content"): a tool without an output
//! schema returns no structured content; a tool with one returns structured content on every
//! success, valid against the schema; an error result carries none, or content the schema
//! describes (bash's timeout).
//!
//! A violation is logged with `tracing::error!` and turns the result into an error result naming
//! the tool, the place in the result and the schema's complaint. An error result rather than a
//! panic: the black-box suites (Python MCP SDK, HTTP API, end-to-end) read it as a failed call
//! with the reason in its text, where a panic would only drop the connection; the Rust tests see
//! a failed call too. Each schema is compiled once per tool and kept (keyed by the tool's name,
//! recompiled when the tool under that name declares a different schema).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use jsonschema::Validator;
use serde_json::Value;

use super::{Middleware, Next, Request};
use crate::{ChainError, ToolOutput, ToolSpec};

/// The conformance middleware (outermost, debug builds).
#[derive(Default)]
pub struct Conformance {
    validators: Mutex<HashMap<String, (Value, Arc<Validator>)>>,
}

impl Conformance {
    /// The compiled validator of `spec`'s output schema, compiled on first use.
    fn validator(&self, name: &str, schema: &Value) -> Result<Arc<Validator>, String> {
        let mut cache = self.validators.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((known, validator)) = cache.get(name)
            && known == schema
        {
            return Ok(Arc::clone(validator));
        }
        let validator = Arc::new(
            jsonschema::validator_for(schema)
                .map_err(|err| format!("its output schema does not compile: {err}"))?,
        );
        cache.insert(name.to_owned(), (schema.clone(), Arc::clone(&validator)));
        Ok(validator)
    }

    /// Why `output` breaks `spec`'s contract, if it does.
    pub fn violation(&self, spec: &ToolSpec, output: &ToolOutput) -> Option<String> {
        let (schema, structured) = match (&spec.output_schema, &output.structured) {
            (None, None) | (Some(_), None) if output.is_error => return None,
            (None, None) => return None,
            (None, Some(_)) => {
                return Some("it returned structured content but declares no output schema".into());
            }
            (Some(_), None) => {
                return Some(
                    "it declares an output schema but returned no structured content on success"
                        .into(),
                );
            }
            (Some(schema), Some(structured)) => (schema, structured),
        };
        let validator = match self.validator(&spec.name, schema) {
            Ok(validator) => validator,
            Err(err) => return Some(err),
        };
        let errors: Vec<String> = validator
            .iter_errors(structured)
            .map(|err| {
                let at = err.instance_path().to_string();
                let at = if at.is_empty() { "/".to_owned() } else { at };
                format!("at {at}: {err}")
            })
            .collect();
        (!errors.is_empty()).then(|| {
            format!("its structured content fails its output schema: {}", errors.join("; "))
        })
    }
}

impl Middleware for Conformance {
    async fn handle<'a>(
        &'a self,
        req: Request<'a>,
        next: Next<'a>,
    ) -> Result<ToolOutput, ChainError> {
        let spec = req.tool.spec();
        let output = next.run(req).await?;
        let Some(violation) = self.violation(spec, &output) else {
            return Ok(output);
        };
        tracing::error!(
            event = "output_schema_violation",
            tool = %spec.name,
            violation = %violation,
            "a result breaks its tool's output contract"
        );
        let shown = output.structured.as_ref().map_or_else(String::new, |s| {
            let text = s.to_string();
            let cut: String = text.chars().take(2000).collect();
            format!("\nThe structured content was: {cut}")
        });
        Ok(ToolOutput::error(format!(
            "[conformance] {} broke its output contract (a bug in hands or in the MCP server \
             behind it, checked in debug builds only): {violation}.{shown}",
            spec.name
        )))
    }
}
