//! An OpenAPI 3 document → a connector file and the typed [`Api`] connector_scaffold writes
//! clients from.
//!
//! Flow: cap the size (10 MB); read JSON or YAML into a JSON value; check `openapi` is 3.0.x or
//! 3.1.x; bring a 3.0 document to 3.1's shape (`nullable`, boolean `exclusiveMinimum`); parse
//! it with `oas3`; then base_url from `servers` (variables at their defaults, a relative URL
//! joined to the document's own URL), `[auth]` from `securitySchemes` (the one the document's
//! `security` names first), operations from `paths`, and allowed_methods/allowed_paths from
//! those operations. `$ref`s are followed by hand with a hop limit, never by `oas3`'s resolver
//! (which recurses without end on a loop); a schema that is only a reference to itself (`A` →
//! `B` → `A`) is refused, a recursive type through a property or a list is fine.

mod error;
mod types;

use std::collections::BTreeSet;

use oas3::spec::SecurityScheme;
use serde_json::Value;

use crate::api::Api;
use crate::config::{Auth, AuthKind, ConnectorFile, METHODS, Operation as ConnectorOperation};
pub use error::{MAX_DOCUMENT_BYTES, OpenApiError};
use types::{build_api, follow};

/// What the caller may decide instead of the document.
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    /// The connector's name (secret names are made from it).
    pub name: String,
    /// Where the document came from, when it was fetched (a relative server URL is joined to it).
    pub source_url: Option<url::Url>,
    /// base_url instead of the document's first server.
    pub base_url: Option<String>,
    /// The stored secret's name instead of `<NAME>_API_KEY`.
    pub secret: Option<String>,
}

/// A document, imported.
#[derive(Debug, Clone)]
pub struct Imported {
    /// The connector file (no secret in it: the secret's name only).
    pub file: ConnectorFile,
    /// The document as parsed (JSON, 3.0 brought to 3.1's shape), to keep beside the file.
    pub document: Value,
    /// The typed API.
    pub api: Api,
    /// What the user should know (a scheme that could not be used, operations left out).
    pub notes: Vec<String>,
}

/// Parse `text` into a JSON value (JSON or YAML) and check it is OpenAPI 3.
pub fn read_document(text: &str) -> Result<Value, OpenApiError> {
    if text.len() > MAX_DOCUMENT_BYTES {
        return Err(OpenApiError::TooLarge(text.len()));
    }
    let trimmed = text.trim_start_matches('\u{feff}').trim_start();
    let mut value: Value = if trimmed.starts_with('{') {
        serde_json::from_str(trimmed).map_err(|err| {
            OpenApiError::Malformed(format!("the document is not valid JSON: {err}"))
        })?
    } else {
        // The YAML parser reads a whole flow collection before it checks its depth, slowly: a
        // few kilobytes of `[[[[` would hold it for minutes. Brackets are counted first.
        if flow_depth(trimmed) > MAX_FLOW_DEPTH {
            return Err(OpenApiError::Malformed(format!(
                "the document nests brackets deeper than {MAX_FLOW_DEPTH} levels; it is not a \
                 usable OpenAPI document"
            )));
        }
        yaml_serde::from_str(trimmed).map_err(|err| {
            OpenApiError::Malformed(format!("the document is not valid JSON or YAML: {err}"))
        })?
    };
    let version = match value.get("openapi") {
        Some(Value::String(v)) => v.clone(),
        _ if value.get("swagger").is_some() => {
            return Err(OpenApiError::Malformed(
                "this is a Swagger 2 document; convert it to OpenAPI 3 first (e.g. with \
                 swagger2openapi)"
                    .into(),
            ));
        }
        _ => {
            return Err(OpenApiError::Malformed(
                "the document has no `openapi` version field: it is not an OpenAPI 3 document"
                    .into(),
            ));
        }
    };
    if version.starts_with("3.0") {
        upgrade_30(&mut value);
    } else if !version.starts_with("3.1") {
        return Err(OpenApiError::Malformed(format!(
            "OpenAPI {version} is not supported; give a 3.0.x or 3.1.x document"
        )));
    }
    Ok(value)
}

/// The deepest `[`/`{` nesting a YAML document may have (quotes are not looked at: prose with
/// that many unclosed brackets is not an API description).
const MAX_FLOW_DEPTH: usize = 256;

fn flow_depth(text: &str) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    for b in text.bytes() {
        match b {
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// OpenAPI 3.0's `nullable: true` → a `null` in `type`; its boolean `exclusiveMinimum` and
/// `exclusiveMaximum` → 3.1's numbers (the parsers bound the depth).
fn upgrade_30(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.get("nullable") == Some(&Value::Bool(true)) {
                map.remove("nullable");
                match map.get_mut("type") {
                    Some(Value::String(t)) => {
                        let t = std::mem::take(t);
                        map.insert("type".into(), serde_json::json!([t, "null"]));
                    }
                    Some(_) => {}
                    None => {
                        // `nullable` beside a $ref or an allOf: a union with null.
                        let inner = Value::Object(std::mem::take(map));
                        map.insert("anyOf".into(), serde_json::json!([inner, {"type": "null"}]));
                    }
                }
            } else if map.get("nullable").is_some_and(Value::is_boolean) {
                map.remove("nullable");
            }
            for (flag, bound) in [("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")]
            {
                if let Some(Value::Bool(on)) = map.get(flag).cloned() {
                    map.remove(flag);
                    if on && let Some(n) = map.remove(bound) {
                        map.insert(flag.into(), n);
                    }
                }
            }
            for child in map.values_mut() {
                upgrade_30(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(upgrade_30),
        _ => {}
    }
}

/// Import an OpenAPI 3 document (JSON or YAML text).
pub fn import(text: &str, options: &ImportOptions) -> Result<Imported, OpenApiError> {
    let document = read_document(text)?;
    import_value(document, options)
}

/// Import a document already read by [`read_document`].
pub fn import_value(document: Value, options: &ImportOptions) -> Result<Imported, OpenApiError> {
    let spec = parse_spec(&document)?;
    let mut notes = Vec::new();
    let api = build_api(&spec, &mut notes)?;
    let base_url = match &options.base_url {
        Some(base) => base.clone(),
        None => base_url(&spec, options.source_url.as_ref())?,
    };
    let auth = auth(&spec, options, &mut notes);
    let mut methods = BTreeSet::new();
    let mut paths = Vec::new();
    let mut operations = Vec::new();
    for op in &api.operations {
        methods.insert(op.method.clone());
        let glob = path_glob(&op.path);
        if !paths.contains(&glob) {
            paths.push(glob);
        }
        operations.push(ConnectorOperation {
            name: op.name.clone(),
            method: op.method.clone(),
            path: op.path.clone(),
            description: op.description.clone(),
        });
    }
    let allowed_methods = METHODS
        .iter()
        .filter(|m| methods.contains(**m))
        .map(|m| (*m).to_owned())
        .collect::<Vec<_>>();
    let file = ConnectorFile {
        base_url,
        auth,
        allowed_methods: if allowed_methods.is_empty() {
            vec!["GET".to_owned()]
        } else {
            allowed_methods
        },
        allowed_paths: paths,
        operations,
        openapi: Some(crate::config::openapi_file(&options.name)),
    };
    Ok(Imported { file, document, api, notes })
}

/// The typed API of a document (what connector_scaffold needs; no connector file).
pub fn api_of(document: &Value) -> Result<Api, OpenApiError> {
    let spec = parse_spec(document)?;
    build_api(&spec, &mut Vec::new())
}

/// The deepest JSON nesting accepted (the JSON and YAML parsers stop at 128 too).
const MAX_JSON_DEPTH: usize = 128;

/// `document` as an [`oas3::Spec`]. oas3's untagged enums buffer and recurse deeply per level,
/// so the conversion runs on a thread of its own with a large stack, after the depth is checked
/// without recursion.
fn parse_spec(document: &Value) -> Result<oas3::Spec, OpenApiError> {
    let mut deepest = 0;
    let mut stack = vec![(document, 1usize)];
    while let Some((value, depth)) = stack.pop() {
        deepest = deepest.max(depth);
        if deepest > MAX_JSON_DEPTH {
            return Err(OpenApiError::Unsupported(format!(
                "the document nests deeper than {MAX_JSON_DEPTH} levels"
            )));
        }
        match value {
            Value::Array(items) => stack.extend(items.iter().map(|v| (v, depth + 1))),
            Value::Object(map) => stack.extend(map.values().map(|v| (v, depth + 1))),
            _ => {}
        }
    }
    let document = document.clone();
    let parsed = std::thread::Builder::new()
        .name("openapi".into())
        .stack_size(64 * 1024 * 1024)
        .spawn(move || {
            let spec = serde_json::from_value::<oas3::Spec>(document);
            spec.map_err(|err| err.to_string())
        })
        .map_err(|err| OpenApiError::Unsupported(format!("no thread to parse it on: {err}")))?
        .join()
        .map_err(|_| OpenApiError::Malformed("the document could not be parsed".into()))?;
    parsed.map_err(|err| {
        OpenApiError::Malformed(format!("the document is not valid OpenAPI 3: {err}"))
    })
}

/// `/pets/{petId}` → `/pets/*`, other glob characters escaped.
pub fn path_glob(path: &str) -> String {
    let mut out = String::new();
    let mut in_param = false;
    for c in path.chars() {
        match c {
            '{' if !in_param => in_param = true,
            '}' if in_param => {
                in_param = false;
                out.push('*');
            }
            _ if in_param => {}
            '*' | '?' | '[' | ']' | '{' | '}' | '\\' | '!' => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    if out.is_empty() { "/".to_owned() } else { out }
}

fn base_url(spec: &oas3::Spec, source: Option<&url::Url>) -> Result<String, OpenApiError> {
    let Some(server) = spec.servers.first() else {
        return match source {
            Some(src) => Ok(src.join("/").map(|u| u.to_string()).unwrap_or_default()),
            None => Err(OpenApiError::Unsupported(
                "the document names no server; give the base URL with --base-url".into(),
            )),
        };
    };
    let mut url = server.url.clone();
    for (name, var) in server.variables.iter() {
        url = url.replace(&format!("{{{name}}}"), &var.default);
    }
    if url.contains('{') {
        return Err(OpenApiError::Unsupported(format!(
            "the server URL {url:?} has a variable without a default; give --base-url"
        )));
    }
    match url::Url::parse(&url) {
        Ok(parsed) => Ok(parsed.to_string().trim_end_matches('/').to_owned()),
        Err(url::ParseError::RelativeUrlWithoutBase) => match source {
            Some(src) => src
                .join(&url)
                .map(|u| u.to_string().trim_end_matches('/').to_owned())
                .map_err(|err| OpenApiError::Malformed(format!("server URL {url:?}: {err}"))),
            None => Err(OpenApiError::Unsupported(format!(
                "the document's server URL {url:?} is relative; give the base URL with --base-url"
            ))),
        },
        Err(err) => Err(OpenApiError::Malformed(format!("server URL {url:?}: {err}"))),
    }
}

/// `[auth]` from the scheme the document's `security` names first (else its first scheme).
fn auth(spec: &oas3::Spec, options: &ImportOptions, notes: &mut Vec<String>) -> Auth {
    let schemes = spec.components.as_ref().map(|c| &c.security_schemes);
    let Some(schemes) = schemes.filter(|s| !s.is_empty()) else { return Auth::default() };
    let named = spec
        .security
        .iter()
        .chain(spec.operations().flat_map(|(_, _, op)| op.security.iter()))
        .flat_map(|req| req.0.keys())
        .find(|name| schemes.contains_key(*name))
        .or_else(|| schemes.keys().next());
    let Some(name) = named else { return Auth::default() };
    let scheme = match follow(schemes.get(name), |c| &c.security_schemes, spec, "securitySchemes") {
        Ok(Some(scheme)) => scheme,
        Ok(None) => return Auth::default(),
        Err(err) => {
            notes.push(format!("the security scheme {name} was not used: {err}"));
            return Auth::default();
        }
    };
    let secret = Some(options.secret.clone().unwrap_or_else(|| secret_name(&options.name)));
    let with = |kind, header: Option<String>| Auth {
        kind,
        secret: secret.clone(),
        name: header,
        username: None,
    };
    match scheme {
        SecurityScheme::ApiKey { name: param, location, .. } => match location.as_str() {
            "header" => with(AuthKind::Header, Some(param)),
            "query" => with(AuthKind::Query, Some(param)),
            other => {
                notes.push(format!(
                    "the security scheme {name} sends its key in a {other}, which connectors do \
                     not do; [auth] is none: edit it if the service takes the key another way"
                ));
                Auth::default()
            }
        },
        SecurityScheme::Http { scheme: http, .. } => match http.to_ascii_lowercase().as_str() {
            "bearer" => with(AuthKind::Bearer, None),
            "basic" => with(AuthKind::Basic, None),
            other => {
                notes.push(format!(
                    "the security scheme {name} is HTTP {other}, which connectors do not do; \
                     [auth] is none"
                ));
                Auth::default()
            }
        },
        SecurityScheme::OAuth2 { .. } | SecurityScheme::OpenIdConnect { .. } => {
            notes.push(format!(
                "the security scheme {name} is OAuth 2 / OpenID Connect: store an access token \
                 as the secret; it is sent as a bearer token (hands does not run the OAuth flow)"
            ));
            with(AuthKind::Bearer, None)
        }
        SecurityScheme::MutualTls { .. } => {
            notes.push(format!(
                "the security scheme {name} is mutual TLS, which connectors do not do; [auth] is \
                 none"
            ));
            Auth::default()
        }
    }
}

/// `petstore` → `PETSTORE_API_KEY` (a secret's name: A-Z, 0-9, _, a letter first).
pub fn secret_name(connector: &str) -> String {
    let base: String = connector
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' })
        .collect();
    let base = if base.starts_with(|c: char| c.is_ascii_alphabetic()) {
        base
    } else {
        format!("API_{base}")
    };
    format!("{base}_API_KEY")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_globs() {
        assert_eq!(path_glob("/pets/{petId}"), "/pets/*");
        assert_eq!(path_glob("/a*b/{x}/c"), "/a\\*b/*/c");
        assert_eq!(path_glob(""), "/");
    }

    #[test]
    fn secret_names() {
        assert_eq!(secret_name("petstore"), "PETSTORE_API_KEY");
        assert_eq!(secret_name("my-api"), "MY_API_API_KEY");
        assert_eq!(secret_name("1pass"), "API_1PASS_API_KEY");
    }

    #[test]
    fn a_30_document_is_brought_to_31() {
        let mut v = serde_json::json!({"type": "string", "nullable": true,
            "properties": {"n": {"type": "integer", "minimum": 1, "exclusiveMinimum": true}},
            "items": {"$ref": "#/components/schemas/A", "nullable": true}});
        upgrade_30(&mut v);
        assert_eq!(v["type"], serde_json::json!(["string", "null"]));
        assert_eq!(v["properties"]["n"]["exclusiveMinimum"], 1);
        assert!(v["properties"]["n"].get("minimum").is_none());
        assert_eq!(v["items"]["anyOf"][1]["type"], "null");
    }
}
