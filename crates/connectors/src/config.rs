//! A connector: `.hands/connectors/<name>.toml`, with no secret in it.
//!
//! ```toml
//! base_url = "https://api.example.com/v1"
//! allowed_methods = ["GET", "POST"]      # default: GET only
//! allowed_paths = ["/pets", "/pets/*"]   # globs over the path after base_url; `*` stays in
//!                                        # one segment, `**` crosses them
//! openapi = "petstore.openapi.json"      # optional: the document it was imported from
//! [auth]
//! kind = "bearer"                        # bearer | header | query | basic | none
//! secret = "PETSTORE_API_KEY"            # the stored secret's name (not its value)
//! # name = "X-Api-Key"                   # header: the header; query: the parameter
//! # username = "me"                      # basic: the user (else the secret is `user:password`)
//!
//! [[operations]]
//! name = "listPets"
//! method = "GET"
//! path = "/pets"
//! description = "List all pets"
//! ```

use std::collections::BTreeSet;
use std::path::Path;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};

/// The folder of the connector files, relative to the project root.
pub const DIR: &str = ".hands/connectors";

/// A connector file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConnectorFile {
    /// The service's base URL (http or https); calls' paths are appended to it.
    pub base_url: String,
    /// How the stored secret is sent (none: no secret).
    #[serde(default)]
    pub auth: Auth,
    /// Methods the model may use (upper case; default GET).
    #[serde(default = "default_methods")]
    pub allowed_methods: Vec<String>,
    /// Globs of the paths the model may call (relative to base_url, starting with `/`).
    #[serde(default)]
    pub allowed_paths: Vec<String>,
    /// Named operations, for people, the model and connector_scaffold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub operations: Vec<Operation>,
    /// The OpenAPI document the connector was imported from, a file beside it in
    /// `.hands/connectors/` (`hands connectors add --from-openapi` writes it): connector_scaffold
    /// takes the client's types from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub openapi: Option<String>,
}

/// The name of the OpenAPI document kept beside connector `name`.
pub fn openapi_file(name: &str) -> String {
    format!("{name}.openapi.json")
}

fn default_methods() -> Vec<String> {
    vec!["GET".to_owned()]
}

/// How the secret travels.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Auth {
    /// bearer | header | query | basic | none.
    #[serde(default)]
    pub kind: AuthKind,
    /// The stored secret's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    /// The header (kind header) or query parameter (kind query) that carries the secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The user name of basic auth (the secret is then the password).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
}

/// The kinds of auth.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AuthKind {
    /// No secret.
    #[default]
    None,
    /// `Authorization: Bearer <secret>`.
    Bearer,
    /// `<name>: <secret>`.
    Header,
    /// `?<name>=<secret>`.
    Query,
    /// `Authorization: Basic base64(user:secret)`.
    Basic,
}

/// One named operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Operation {
    /// Its name (an identifier).
    pub name: String,
    /// Its method.
    pub method: String,
    /// Its path, relative to base_url, with `{param}` placeholders.
    pub path: String,
    /// What it does.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
}

/// The methods a connector may allow.
pub const METHODS: [&str; 6] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"];

/// A checked connector.
#[derive(Debug, Clone)]
pub struct Connector {
    /// Its name.
    pub name: String,
    /// The file as read.
    pub file: ConnectorFile,
    /// base_url, parsed.
    pub base: url::Url,
    /// allowed_methods.
    pub methods: BTreeSet<String>,
    /// allowed_paths, compiled.
    pub paths: GlobSet,
}

/// Refuse a connector name that is not `^[a-z0-9][a-z0-9_-]{0,63}$`.
pub fn check_name(name: &str) -> Result<(), String> {
    let b = name.as_bytes();
    let ok = (1..=64).contains(&b.len())
        && (b[0].is_ascii_lowercase() || b[0].is_ascii_digit())
        && b.iter()
            .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_' || c == b'-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`{name}` is not a connector name: use 1 to 64 of a-z, 0-9, _ and -, starting with a \
             letter or digit (the file is {DIR}/<name>.toml)"
        ))
    }
}

impl Connector {
    /// Parse and check the text of `<name>.toml`.
    pub fn parse(name: &str, text: &str) -> Result<Self, String> {
        check_name(name)?;
        let file: ConnectorFile = toml::from_str(text)
            .map_err(|err| format!("{DIR}/{name}.toml is not a valid connector file: {err}"))?;
        Self::check(name, file)
    }

    /// Check a parsed file.
    pub fn check(name: &str, file: ConnectorFile) -> Result<Self, String> {
        let at = format!("{DIR}/{name}.toml");
        let base = url::Url::parse(&file.base_url)
            .map_err(|err| format!("{at}: base_url {:?} is not a URL: {err}", file.base_url))?;
        if !matches!(base.scheme(), "http" | "https") || base.host_str().is_none() {
            return Err(format!("{at}: base_url must be an http:// or https:// URL with a host"));
        }
        if !base.username().is_empty() || base.password().is_some() {
            return Err(format!("{at}: base_url must not hold credentials; use [auth]"));
        }
        if base.query().is_some() || base.fragment().is_some() {
            return Err(format!("{at}: base_url must have no query or fragment"));
        }
        let mut methods = BTreeSet::new();
        for method in &file.allowed_methods {
            let upper = method.to_ascii_uppercase();
            if !METHODS.contains(&upper.as_str()) {
                return Err(format!(
                    "{at}: allowed_methods holds {method:?}; use {}",
                    METHODS.join(", ")
                ));
            }
            methods.insert(upper);
        }
        let mut set = GlobSetBuilder::new();
        for glob in &file.allowed_paths {
            if !glob.starts_with('/') {
                return Err(format!("{at}: allowed_paths {glob:?} must start with /"));
            }
            let compiled = GlobBuilder::new(glob)
                .literal_separator(true)
                .build()
                .map_err(|err| format!("{at}: allowed_paths {glob:?}: {err}"))?;
            set.add(compiled);
        }
        let paths = set.build().map_err(|err| format!("{at}: allowed_paths: {err}"))?;
        if let Some(doc) = &file.openapi {
            let plain = !doc.is_empty()
                && doc.len() <= 128
                && doc.ends_with(".json")
                && !doc.starts_with('.')
                && doc.bytes().all(|c| c.is_ascii_alphanumeric() || b"._-".contains(&c));
            if !plain {
                return Err(format!(
                    "{at}: openapi {doc:?} must be the name of a .json file beside the connector \
                     file (like {}), not a path",
                    openapi_file(name)
                ));
            }
        }
        let auth = &file.auth;
        match auth.kind {
            AuthKind::None => {
                if auth.secret.is_some() {
                    return Err(format!("{at}: [auth] names a secret but kind is none"));
                }
            }
            kind => {
                if auth.secret.as_deref().is_none_or(str::is_empty) {
                    return Err(format!("{at}: [auth] kind {kind:?} needs `secret` (its name)"));
                }
                if matches!(kind, AuthKind::Header | AuthKind::Query)
                    && auth.name.as_deref().is_none_or(|n| !is_token(n))
                {
                    return Err(format!(
                        "{at}: [auth] kind {} needs `name`: the header or parameter that carries it",
                        if kind == AuthKind::Header { "header" } else { "query" }
                    ));
                }
            }
        }
        Ok(Self { name: name.to_owned(), file, base, methods, paths })
    }

    /// The host the connector sends to (lower case).
    pub fn host(&self) -> String {
        self.base.host_str().unwrap_or_default().to_ascii_lowercase()
    }

    /// The origin the connector sends to: scheme, host and port.
    pub fn origin(&self) -> crate::origin::Origin {
        // `check` admitted only http and https URLs with a host, which always have an origin.
        crate::origin::Origin::of_url(&self.base).unwrap_or(crate::origin::Origin {
            http: false,
            host: self.host(),
            port: 443,
        })
    }

    /// What the user records with the secret to allow this connector's origin (`hands secrets
    /// set NAME --host …`).
    pub fn record(&self) -> String {
        self.origin().record()
    }
}

/// An HTTP token (a header or parameter name).
pub fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name.bytes().all(|c| c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c))
}

/// The names of the connectors of the project at `root` (sorted).
pub fn list(root: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(root.join(DIR)) else { return Vec::new() };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok())
        .filter_map(|n| n.strip_suffix(".toml").map(str::to_owned))
        .filter(|n| check_name(n).is_ok())
        .collect();
    names.sort();
    names
}
