//! The OpenAPI 3.1 document of the session API, built from the operation list in
//! routes.rs: paths and methods from the list, body and response schemas derived with
//! schemars from the request types and the documentation twins (JSON Schema 2020-12, which
//! OpenAPI 3.1 uses as it is), and the error responses every operation shares.

use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use crate::docs;
use crate::error::ErrorBody;
use crate::operation::{Operation, Payload};

/// The largest event id the document promises to accept: 2^53 - 1.
const MAX_SAFE_ID: u64 = (1 << 53) - 1;

/// The document.
pub fn document(operations: &[Operation]) -> Value {
    let mut generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.definitions_path = "/components/schemas".into();
            s.meta_schema = None;
        })
        .into_generator();
    let error = generator.subschema_for::<ErrorBody>().to_value();
    let event = generator.subschema_for::<docs::Event>().to_value();

    let mut paths = Map::new();
    for op in operations {
        let mut parameters: Vec<Value> = path_params(op.path)
            .map(|name| {
                json!({
                    "name": name,
                    "in": "path",
                    "required": true,
                    "description": describe_param(name),
                    "schema": {"type": "string", "minLength": 1},
                })
            })
            .collect();
        for param in op.params {
            // Both are event ids (u64); kept to what every JSON reader holds exactly.
            let schema = if param.location == "query" {
                json!({"type": "integer", "minimum": 0, "maximum": MAX_SAFE_ID})
            } else {
                json!({"type": "string", "pattern": "^[0-9]{1,15}$"})
            };
            parameters.push(json!({
                "name": param.name,
                "in": param.location,
                "required": false,
                "description": param.description,
                "schema": schema,
            }));
        }

        let mut responses = Map::new();
        let success = match op.response {
            Payload::Json(schema) => json!({
                "description": status_text(op.status),
                "content": {"application/json": {"schema": schema(&mut generator).to_value()}},
            }),
            // Before OpenAPI 3.2's `itemSchema`, an event stream's `schema` describes one event.
            Payload::EventStream => json!({
                "description": "The event stream; each `data:` is an Event.",
                "content": {"text/event-stream": {"schema": {
                    "type": "object",
                    "required": ["id", "event", "data"],
                    "properties": {
                        "id": {"type": "string", "pattern": "^[0-9]+$"},
                        "event": {"type": "string"},
                        "data": {
                            "type": "string",
                            "contentMediaType": "application/json",
                            "contentSchema": event.clone(),
                        },
                    },
                }}},
            }),
            Payload::Png => json!({
                "description": "A PNG image.",
                "content": {"image/png": {"schema": {"type": "string", "contentMediaType": "image/png"}}},
            }),
            Payload::Empty => json!({"description": status_text(op.status)}),
        };
        responses.insert(op.status.to_string(), success);
        let mut errors = vec![401, 403];
        if op.body.is_some() {
            errors.extend([400, 413, 415]);
        }
        if op.path.starts_with("/v1/sessions/{id}") {
            errors.push(404);
        }
        errors.extend_from_slice(op.errors);
        errors.sort_unstable();
        errors.dedup();
        for status in errors {
            let description = match status {
                401 if op.open => "The code was refused: already used, expired or never made",
                _ => status_text(status),
            };
            responses.insert(
                status.to_string(),
                json!({
                    "description": description,
                    "content": {"application/json": {"schema": error.clone()}},
                }),
            );
        }

        let mut operation = json!({
            "operationId": op.id,
            "tags": [op.tag],
            "summary": op.summary,
            "parameters": parameters,
            "responses": responses,
        });
        if !op.description.is_empty() {
            operation["description"] = json!(op.description);
        }
        if op.open {
            // No token: this is how a browser gets it.
            operation["security"] = json!([]);
        }
        if let Some(body) = op.body {
            operation["requestBody"] = json!({
                "required": !op.body_optional,
                "content": {"application/json": {"schema": body(&mut generator).to_value()}},
            });
        }
        let item = paths.entry(op.path).or_insert_with(|| json!({}));
        item[op.verb.name()] = operation;
    }

    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "hands session API",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Sessions of the hands agent: create them, send messages (each starts a \
                turn), follow their events over SSE, answer questions and approvals, abort, call \
                tools directly. Served by `hands serve` beside MCP at /mcp. Every error is \
                `{\"error\": {\"code\", \"message\"}}`. A bearer token is required when the server \
                has one (always, off loopback), except at `POST /v1/signin`, which trades a \
                one-time sign-in code (`hands serve --open`) for it.",
        },
        "paths": paths,
        "components": {
            "schemas": generator.take_definitions(true),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        // A token is required only when the server was given one.
        "security": [{"bearer": []}, {}],
    })
}

/// The `{name}` parameters of a path, in order.
pub fn path_params(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
}

fn describe_param(name: &str) -> &'static str {
    match name {
        "id" => "The session id.",
        "name" => "The tool's name (`hands tools` lists them).",
        "approval_id" => "The approval, from the `approval_requested` event.",
        "process_id" => "The process, from the process list.",
        "projectId" => "The project whose sessions to abort.",
        _ => "",
    }
}

fn status_text(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        202 => "Accepted: the turn runs on; follow it on the event stream",
        204 => "Done",
        400 => "The request is malformed (JSON, types, values); the message says which part",
        401 => "A valid bearer token is required (`Authorization: Bearer …`)",
        403 => "The Host or Origin header is not allowed",
        404 => "No such session (or question, approval, process, tool)",
        409 => "The session's state does not allow this now (a turn runs, nothing is pending, …)",
        413 => "The body is larger than `[server] max_body_bytes`",
        415 => "The body must be JSON with `Content-Type: application/json`",
        503 => "No model is configured on the server",
        _ => "",
    }
}
