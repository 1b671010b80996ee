//! The language-neutral model of a connector's API that connector_scaffold writes clients from:
//! its operations (parameters, body, response) and its named types. Built from the OpenAPI
//! document a connector was imported from (typed), or from the connector file's `operations`
//! alone (path parameters typed as strings, bodies and responses `unknown`).

use serde_json::Value;

use crate::config::Connector;

/// A type, as the emitters need it.
#[derive(Debug, Clone, PartialEq)]
pub enum Ty {
    /// Anything (no schema, or one the model does not express).
    Unknown,
    /// No content (a 204).
    Void,
    /// A string.
    String,
    /// A number (integer or not).
    Number,
    /// true or false.
    Boolean,
    /// null.
    Null,
    /// One JSON value (an enum member or a const).
    Literal(Value),
    /// A list.
    Array(Box<Ty>),
    /// An object: its properties, and the type of the others when they are allowed.
    Object {
        /// Declared properties.
        props: Vec<Prop>,
        /// The type of undeclared properties (`additionalProperties`), when given.
        rest: Option<Box<Ty>>,
    },
    /// A named type of [`Api::types`].
    Named(String),
    /// One of these.
    Union(Vec<Ty>),
    /// All of these.
    All(Vec<Ty>),
}

/// One property of an object type.
#[derive(Debug, Clone, PartialEq)]
pub struct Prop {
    /// Its name as it travels.
    pub name: String,
    /// Its type.
    pub ty: Ty,
    /// Whether it must be present.
    pub required: bool,
    /// Its description (one line).
    pub description: String,
}

/// A named type.
#[derive(Debug, Clone, PartialEq)]
pub struct NamedType {
    /// Its identifier (PascalCase, unique).
    pub name: String,
    /// What it is.
    pub ty: Ty,
    /// Its description (one line).
    pub description: String,
}

/// A path or query parameter.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    /// Its name as it travels.
    pub name: String,
    /// Its type.
    pub ty: Ty,
    /// Whether it must be given (path parameters always are).
    pub required: bool,
    /// Its description (one line).
    pub description: String,
}

/// One operation.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiOperation {
    /// Its identifier (camelCase, unique).
    pub name: String,
    /// Upper-case method.
    pub method: String,
    /// Its path with `{param}` placeholders.
    pub path: String,
    /// What it does (one line).
    pub description: String,
    /// The placeholders of `path`, in order.
    pub path_params: Vec<Param>,
    /// Its query parameters; `None`: not described, any are accepted.
    pub query: Option<Vec<Param>>,
    /// Its JSON body and whether it is required; `None`: it takes none.
    pub body: Option<(Ty, bool)>,
    /// What a success answers.
    pub response: Ty,
}

/// A connector's API.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Api {
    /// Its operations.
    pub operations: Vec<ApiOperation>,
    /// Its named types, in declaration order.
    pub types: Vec<NamedType>,
}

impl Api {
    /// The untyped API of a connector file's `operations`.
    pub fn from_connector(connector: &Connector) -> Self {
        let mut names = Names::for_operations();
        let operations = connector
            .file
            .operations
            .iter()
            .map(|op| {
                let method = op.method.to_ascii_uppercase();
                let body = matches!(method.as_str(), "POST" | "PUT" | "PATCH")
                    .then_some((Ty::Unknown, false));
                ApiOperation {
                    name: names.unique(&camel_ident(&op.name)),
                    path_params: placeholders(&op.path)
                        .into_iter()
                        .map(|name| Param {
                            name,
                            ty: Ty::String,
                            required: true,
                            description: String::new(),
                        })
                        .collect(),
                    method,
                    path: if op.path.starts_with('/') {
                        op.path.clone()
                    } else {
                        format!("/{}", op.path)
                    },
                    description: one_line(&op.description),
                    query: None,
                    body,
                    response: Ty::Unknown,
                }
            })
            .collect();
        Self { operations, types: Vec::new() }
    }
}

/// The `{name}` placeholders of a path template, in order.
pub fn placeholders(path: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = path;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else { break };
        found.push(rest[open + 1..open + close].to_owned());
        rest = &rest[open + close + 1..];
    }
    found
}

/// The first line of `text`, trimmed and cut at 200 characters.
pub fn one_line(text: &str) -> String {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or_default();
    if line.chars().count() > 200 {
        let cut: String = line.chars().take(199).collect();
        format!("{cut}…")
    } else {
        line.to_owned()
    }
}

/// Words of an arbitrary name (`list-pets`, `listPets`, `GET /pets/{id}` → list, pets, …).
fn words(raw: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut prev_lower = false;
    for c in raw.chars() {
        if c.is_ascii_alphanumeric() {
            if c.is_ascii_uppercase() && prev_lower && !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
            word.push(c);
        } else {
            prev_lower = false;
            if !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => {
            first.to_ascii_uppercase().to_string() + &chars.as_str().to_ascii_lowercase()
        }
        None => String::new(),
    }
}

/// A camelCase identifier for `raw` (`op` when it has no letters or digits).
pub fn camel_ident(raw: &str) -> String {
    let words = words(raw);
    let mut out = String::new();
    for (i, word) in words.iter().enumerate() {
        if i == 0 {
            out.push_str(&word.to_ascii_lowercase());
        } else {
            out.push_str(&capitalized(word));
        }
    }
    fix_start(out, "op")
}

/// A PascalCase identifier for `raw` (`Type` when it has no letters or digits).
pub fn pascal_ident(raw: &str) -> String {
    let out: String = words(raw)
        .iter()
        .map(|w| {
            // Keep an all-caps or mixed word's inner capitals (`HTTPError`, `PetID`).
            if w.chars().any(|c| c.is_ascii_lowercase()) {
                let mut chars = w.chars();
                chars.next().map(|f| f.to_ascii_uppercase().to_string()).unwrap_or_default()
                    + chars.as_str()
            } else {
                capitalized(w)
            }
        })
        .collect();
    fix_start(out, "Type")
}

fn fix_start(out: String, empty: &str) -> String {
    if out.is_empty() {
        empty.to_owned()
    } else if out.starts_with(|c: char| c.is_ascii_digit()) {
        format!("_{out}")
    } else {
        out
    }
}

/// Hands out unique identifiers: a taken one gets `2`, `3`, … appended.
#[derive(Debug, Default)]
pub struct Names(std::collections::BTreeSet<String>);

impl Names {
    /// Names for operations: `request` is the clients' own method for any call.
    pub fn for_operations() -> Self {
        let mut names = Self::default();
        names.unique("request");
        names
    }

    /// `wanted`, or the first free variant of it.
    pub fn unique(&mut self, wanted: &str) -> String {
        let mut name = wanted.to_owned();
        let mut n = 2;
        while !self.0.insert(name.clone()) {
            name = format!("{wanted}{n}");
            n += 1;
        }
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers() {
        assert_eq!(camel_ident("list-pets"), "listPets");
        assert_eq!(camel_ident("showPetById"), "showPetById");
        assert_eq!(camel_ident("GET /pets/{petId}"), "getPetsPetId");
        assert_eq!(camel_ident("2fa"), "_2fa");
        assert_eq!(camel_ident("—"), "op");
        assert_eq!(pascal_ident("pet_details"), "PetDetails");
        assert_eq!(pascal_ident("HTTPError"), "HTTPError");
        assert_eq!(pascal_ident("Pet.ID"), "PetId");
        let mut names = Names::default();
        assert_eq!(names.unique("a"), "a");
        assert_eq!(names.unique("a"), "a2");
        assert_eq!(placeholders("/a/{x}/b/{y}"), ["x", "y"]);
    }
}
