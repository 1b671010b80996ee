//! Connector files on disk, for `hands connectors add|rm|list`: render a [`ConnectorFile`] as
//! commented TOML, write it (and the OpenAPI document it came from) through the confined
//! workspace, remove it, describe the project's connectors.
//!
//! A connector file never holds a secret: [`render`] writes the secret's name only, and
//! [`write`] refuses text that the redaction engine would change (a stored secret's value or a
//! well-known key shape, say in an operation's description) before anything is written.

use std::path::Path;

use hands_core::CancellationToken;
use hands_fs::{FsConfig, Workspace, atomic};
use serde_json::Value;

use crate::config::{AuthKind, Connector, ConnectorFile, DIR, check_name};

/// Why a connector file could not be written or removed.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// A bad name or a file that does not check.
    #[error("{0}")]
    Invalid(String),
    /// The connector exists and `force` was not given.
    #[error("{DIR}/{0}.toml exists; remove it first (hands connectors rm {0}) or pass --force")]
    Exists(String),
    /// There is no such connector.
    #[error("there is no connector {0} ({DIR}/{0}.toml does not exist)")]
    Missing(String),
    /// The text would carry a secret.
    #[error(
        "refused: the connector file would contain a secret value or something shaped like a key \
         ({0}); nothing was written. A connector file names its secret, it never holds one"
    )]
    Secret(String),
    /// The file system said no.
    #[error("{0}")]
    Io(String),
}

fn quote(text: &str) -> String {
    toml::Value::String(text.to_owned()).to_string()
}

fn list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|i| quote(i)).collect();
    format!("[{}]", quoted.join(", "))
}

/// The TOML text of connector `name`.
pub fn render(name: &str, file: &ConnectorFile) -> String {
    // What the user records with the key: the base URL's origin (a bare host is https on 443).
    let host = url::Url::parse(&file.base_url)
        .ok()
        .and_then(|u| crate::origin::Origin::of_url(&u))
        .map(|o| o.record())
        .unwrap_or_default();
    let mut out =
        format!("# The connector {name}: no secret in this file, only the secret's name.\n");
    if let Some(secret) = file.auth.secret.as_deref().filter(|_| file.auth.kind != AuthKind::None) {
        out.push_str(&format!(
            "# Store the key for {host} only: hands secrets set {secret} --host {host}\n"
        ));
    }
    out.push_str(&format!("base_url = {}\n", quote(&file.base_url)));
    out.push_str(&format!("allowed_methods = {}\n", list(&file.allowed_methods)));
    out.push_str(&format!("allowed_paths = {}\n", list(&file.allowed_paths)));
    if let Some(doc) = &file.openapi {
        out.push_str(&format!("openapi = {}\n", quote(doc)));
    }
    let auth = &file.auth;
    out.push_str("\n[auth]\n");
    let kind = match auth.kind {
        AuthKind::None => "none",
        AuthKind::Bearer => "bearer",
        AuthKind::Header => "header",
        AuthKind::Query => "query",
        AuthKind::Basic => "basic",
    };
    out.push_str(&format!("kind = {}\n", quote(kind)));
    for (key, value) in
        [("secret", &auth.secret), ("name", &auth.name), ("username", &auth.username)]
    {
        if let Some(value) = value {
            out.push_str(&format!("{key} = {}\n", quote(value)));
        }
    }
    for op in &file.operations {
        out.push_str("\n[[operations]]\n");
        out.push_str(&format!("name = {}\n", quote(&op.name)));
        out.push_str(&format!("method = {}\n", quote(&op.method)));
        out.push_str(&format!("path = {}\n", quote(&op.path)));
        if !op.description.is_empty() {
            out.push_str(&format!("description = {}\n", quote(&op.description)));
        }
    }
    out
}

/// Write connector `name` (and `document`, the OpenAPI document it names) into the project at
/// `root`. Refuses an existing connector unless `force`, a file that does not check, and text
/// that carries a secret. Returns the paths written, relative to the root.
pub fn write(
    root: &Path,
    name: &str,
    file: &ConnectorFile,
    document: Option<&Value>,
    force: bool,
) -> Result<Vec<String>, FileError> {
    check_name(name).map_err(FileError::Invalid)?;
    let text = render(name, file);
    // What is written is what connector_call will read: it must check.
    Connector::parse(name, &text).map_err(FileError::Invalid)?;
    if let std::borrow::Cow::Owned(_) = hands_core::redact::text(&text) {
        return Err(FileError::Secret(format!("{DIR}/{name}.toml")));
    }
    let ws =
        Workspace::open(root).map_err(|err| FileError::Io(format!("{}: {err}", root.display())))?;
    let rel = format!("{DIR}/{name}.toml");
    if !force && ws.dir().exists(&rel) {
        return Err(FileError::Exists(name.to_owned()));
    }
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    if let (Some(doc_name), Some(document)) = (&file.openapi, document) {
        let mut document = document.clone();
        // Examples in a document may hold real-looking keys: kept scrubbed, like every surface.
        hands_core::redact::json(&mut document);
        let bytes = serde_json::to_vec_pretty(&document)
            .map_err(|err| FileError::Io(format!("the document did not serialize: {err}")))?;
        files.push((format!("{DIR}/{doc_name}"), bytes));
    }
    files.push((rel, text.into_bytes()));
    let mut written = Vec::new();
    for (path, bytes) in files {
        put(&ws, &path, &bytes)?;
        written.push(path);
    }
    Ok(written)
}

fn put(ws: &Workspace, path: &str, bytes: &[u8]) -> Result<(), FileError> {
    let rel = ws.resolve("path", path).map_err(|err| FileError::Io(err.to_string()))?;
    atomic::check_writable(ws, &rel, &FsConfig::default(), "write")
        .map_err(|err| FileError::Io(err.to_string()))?;
    atomic::write(ws, &rel, bytes, &CancellationToken::new())
        .map_err(|err| FileError::Io(format!("{path} could not be written: {err}")))?;
    Ok(())
}

/// Remove connector `name` and the OpenAPI document it names. Returns the paths removed.
pub fn remove(root: &Path, name: &str) -> Result<Vec<String>, FileError> {
    check_name(name).map_err(FileError::Invalid)?;
    let ws =
        Workspace::open(root).map_err(|err| FileError::Io(format!("{}: {err}", root.display())))?;
    let rel = format!("{DIR}/{name}.toml");
    let text = match ws.dir().read_to_string(&rel) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return Err(FileError::Missing(name.to_owned()));
        }
        Err(err) => return Err(FileError::Io(format!("{rel}: {err}"))),
    };
    let mut removed = Vec::new();
    // The document it names goes too, when the file still parses and names a plain file.
    if let Ok(connector) = Connector::parse(name, &text)
        && let Some(doc) = connector.file.openapi
    {
        let doc = format!("{DIR}/{doc}");
        if ws.dir().remove_file(&doc).is_ok() {
            removed.push(doc);
        }
    }
    ws.dir().remove_file(&rel).map_err(|err| FileError::Io(format!("{rel}: {err}")))?;
    removed.push(rel);
    Ok(removed)
}

/// Read and check connector `name` of the project at `root`.
pub fn read(root: &Path, name: &str) -> Result<Connector, FileError> {
    check_name(name).map_err(FileError::Invalid)?;
    let ws =
        Workspace::open(root).map_err(|err| FileError::Io(format!("{}: {err}", root.display())))?;
    let rel = format!("{DIR}/{name}.toml");
    match ws.dir().read_to_string(&rel) {
        Ok(text) => Connector::parse(name, &text).map_err(FileError::Invalid),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            Err(FileError::Missing(name.to_owned()))
        }
        Err(err) => Err(FileError::Io(format!("{rel}: {err}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Auth, Operation};

    fn sample() -> ConnectorFile {
        ConnectorFile {
            base_url: "https://api.example.com/v1".into(),
            auth: Auth {
                kind: AuthKind::Header,
                secret: Some("EX_API_KEY".into()),
                name: Some("X-Api-Key".into()),
                username: None,
            },
            allowed_methods: vec!["GET".into(), "POST".into()],
            allowed_paths: vec!["/pets".into(), "/pets/*".into()],
            operations: vec![Operation {
                name: "listPets".into(),
                method: "GET".into(),
                path: "/pets".into(),
                description: "List \"all\" pets".into(),
            }],
            openapi: Some("ex.openapi.json".into()),
        }
    }

    #[test]
    fn rendered_text_parses_back_to_the_same_file() {
        let text = render("ex", &sample());
        assert!(text.contains("hands secrets set EX_API_KEY --host api.example.com"), "{text}");
        let back = Connector::parse("ex", &text).unwrap();
        assert_eq!(back.file, sample());
    }

    #[test]
    fn write_refuses_to_replace_and_rm_removes_the_document_too() {
        let dir = tempfile::tempdir().unwrap();
        let doc = serde_json::json!({"openapi": "3.1.0"});
        let written = write(dir.path(), "ex", &sample(), Some(&doc), false).unwrap();
        assert_eq!(written, [".hands/connectors/ex.openapi.json", ".hands/connectors/ex.toml"]);
        assert!(matches!(
            write(dir.path(), "ex", &sample(), None, false),
            Err(FileError::Exists(_))
        ));
        assert!(read(dir.path(), "ex").is_ok());
        let removed = remove(dir.path(), "ex").unwrap();
        assert_eq!(removed.len(), 2);
        assert!(!dir.path().join(".hands/connectors/ex.openapi.json").exists());
        assert!(matches!(remove(dir.path(), "ex"), Err(FileError::Missing(_))));
        assert!(matches!(remove(dir.path(), "../x"), Err(FileError::Invalid(_))));
    }
}
