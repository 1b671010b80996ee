//! `hands connectors list|add|rm`: the user's side of the project's connector files
//! (`.hands/connectors/<name>.toml`). `add --from-openapi FILE_OR_URL` builds the file from an
//! OpenAPI 3 document (a URL fetched through the egress guard of the user's `[net]` settings);
//! otherwise the flags say what it holds. A connector file names its secret and never holds one;
//! `list` says whether that secret is stored for the connector's host.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context as _, Result, bail};
use clap::Subcommand;
use hands_connectors::openapi::{ImportOptions, MAX_DOCUMENT_BYTES};
use hands_connectors::{Auth, AuthKind, ConnectorFile, files};
use hands_core::secret::SecretStore;

use crate::term;

/// What `hands connectors` does.
#[derive(Debug, Subcommand)]
pub enum Action {
    /// List the project's connectors: base URL, auth, and whether the secret is stored for the
    /// connector's host (connector_call refuses otherwise).
    List {
        /// Print JSON: `[{"name", "base_url", "host", "auth", "secret"?, "secret_state", "error"?}]`.
        #[arg(long)]
        json: bool,
    },
    /// Add a connector: from an OpenAPI 3 document (JSON or YAML, a file or an http(s) URL), or
    /// from --base-url, --auth, --secret, --method and --path.
    Add {
        /// The connector's name: 1 to 64 of a-z, 0-9, _ and -.
        name: String,
        /// The OpenAPI 3.0 or 3.1 document: base_url from its servers, auth from its
        /// securitySchemes, operations, methods and paths from its paths.
        #[arg(long, value_name = "FILE_OR_URL")]
        from_openapi: Option<String>,
        /// The service's base URL (with --from-openapi: instead of the document's first server).
        #[arg(long, value_name = "URL")]
        base_url: Option<String>,
        /// How the secret is sent: bearer, header:NAME, query:NAME, basic, basic:USER or none.
        #[arg(long, value_name = "KIND", conflicts_with = "from_openapi")]
        auth: Option<String>,
        /// The stored secret's name (default NAME_API_KEY).
        #[arg(long, value_name = "NAME")]
        secret: Option<String>,
        /// An allowed method (repeatable; default GET).
        #[arg(long = "method", value_name = "METHOD", conflicts_with = "from_openapi")]
        methods: Vec<String>,
        /// An allowed path glob, like `/v1/items/*` (repeatable; at least one).
        #[arg(long = "path", value_name = "GLOB", conflicts_with = "from_openapi")]
        paths: Vec<String>,
        /// Replace a connector of that name.
        #[arg(long)]
        force: bool,
    },
    /// Remove a connector and the OpenAPI document kept beside it.
    Rm {
        /// The connector's name.
        name: String,
    },
}

/// Run `action` on the project at `root`; `store` answers whether secrets are stored.
pub fn run(
    root: &Path,
    store: Option<&dyn SecretStore>,
    net: &hands_net::NetConfig,
    action: Action,
) -> Result<ExitCode> {
    match action {
        Action::List { json } => list(root, store, json),
        Action::Add { name, from_openapi, base_url, auth, secret, methods, paths, force } => {
            let (file, document, notes) = match from_openapi {
                Some(source) => {
                    let (text, url) = read_source(&source, net)?;
                    let options =
                        ImportOptions { name: name.clone(), source_url: url, base_url, secret };
                    let imported = hands_connectors::openapi::import(&text, &options)
                        .with_context(|| format!("the OpenAPI document {source}"))?;
                    (imported.file, Some(imported.document), imported.notes)
                }
                None => {
                    (by_flags(&name, base_url, auth, secret, methods, paths)?, None, Vec::new())
                }
            };
            let written = files::write(root, &name, &file, document.as_ref(), force)?;
            for path in &written {
                term::out(&format!("wrote {path}\n"));
            }
            for note in notes {
                term::out(&format!("note: {note}\n"));
            }
            term::out(&format!(
                "{name}: {} {} → {}\n",
                file.allowed_methods.join(","),
                file.allowed_paths.join(" "),
                file.base_url
            ));
            if let Some(secret) = file.auth.secret.as_deref() {
                let host = host_of(&file.base_url);
                let state = secret_state(store, root, secret, &host);
                if state != "stored for this host" {
                    term::out(&format!(
                        "its key {secret} is {state}: store it with `hands secrets set {secret} \
                         --host {host}`\n"
                    ));
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Action::Rm { name } => {
            for path in files::remove(root, &name)? {
                term::out(&format!("removed {path}\n"));
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The document's text, and its URL when it was fetched.
fn read_source(source: &str, net: &hands_net::NetConfig) -> Result<(String, Option<url::Url>)> {
    let cap = MAX_DOCUMENT_BYTES as u64;
    if source.starts_with("http://") || source.starts_with("https://") {
        let url = url::Url::parse(source).with_context(|| format!("{source} is not a URL"))?;
        let guard = hands_net::Guard::new(net).context("the [net] settings")?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("a runtime for the fetch")?;
        let request = hands_net::Request::get(url.as_str())
            .header("accept", "application/json, application/yaml;q=0.9, */*;q=0.5")
            .max_bytes(cap);
        let fetched = runtime
            .block_on(guard.send(request, &hands_core::CancellationToken::new()))
            .map_err(|err| anyhow::anyhow!("{source} could not be fetched: {err}"))?;
        if !(200..300).contains(&fetched.status) {
            bail!("{source} answered HTTP {}", fetched.status);
        }
        let text = String::from_utf8(fetched.body)
            .map_err(|_| anyhow::anyhow!("{source} is not UTF-8 text"))?;
        return Ok((text, Some(url)));
    }
    let path = Path::new(source);
    let meta = std::fs::metadata(path).with_context(|| format!("cannot read {source}"))?;
    if meta.len() > cap {
        bail!("{source} is {} bytes; at most {MAX_DOCUMENT_BYTES} are read", meta.len());
    }
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {source}"))?;
    let text =
        String::from_utf8(bytes).map_err(|_| anyhow::anyhow!("{source} is not UTF-8 text"))?;
    Ok((text, None))
}

fn by_flags(
    name: &str,
    base_url: Option<String>,
    auth: Option<String>,
    secret: Option<String>,
    methods: Vec<String>,
    paths: Vec<String>,
) -> Result<ConnectorFile> {
    let Some(base_url) = base_url else {
        bail!("give --from-openapi FILE_OR_URL, or --base-url URL with --path GLOB");
    };
    if paths.is_empty() {
        bail!(
            "give at least one --path GLOB: the paths the agent may call through the connector, like --path '/v1/**'"
        );
    }
    let (kind, param) = match auth.as_deref().unwrap_or(if secret.is_some() {
        "bearer"
    } else {
        "none"
    }) {
        "none" => (AuthKind::None, None),
        "bearer" => (AuthKind::Bearer, None),
        "basic" => (AuthKind::Basic, None),
        other => match other.split_once(':') {
            Some(("header", n)) => (AuthKind::Header, Some(n.to_owned())),
            Some(("query", n)) => (AuthKind::Query, Some(n.to_owned())),
            Some(("basic", user)) => (AuthKind::Basic, Some(user.to_owned())),
            _ => bail!(
                "--auth {other:?}: use bearer, header:NAME, query:NAME, basic, basic:USER or none"
            ),
        },
    };
    let secret = match kind {
        AuthKind::None => None,
        _ => Some(secret.unwrap_or_else(|| hands_connectors::openapi::secret_name(name))),
    };
    let (name_field, username) = match kind {
        AuthKind::Basic => (None, param),
        _ => (param, None),
    };
    Ok(ConnectorFile {
        base_url,
        auth: Auth { kind, secret, name: name_field, username },
        allowed_methods: if methods.is_empty() {
            vec!["GET".to_owned()]
        } else {
            methods.iter().map(|m| m.to_ascii_uppercase()).collect()
        },
        allowed_paths: paths,
        operations: Vec::new(),
        openapi: None,
    })
}

/// What the user records with the key for `base_url` (`hands secrets set NAME --host …`): its
/// origin, a bare host for https on 443 (issue 26: the scheme and port are bound too).
fn host_of(base_url: &str) -> String {
    url::Url::parse(base_url)
        .ok()
        .and_then(|u| hands_connectors::origin::Origin::of_url(&u))
        .map(|o| o.record())
        .unwrap_or_default()
}

/// Whether `secret` may go to `host`, in words.
fn secret_state(store: Option<&dyn SecretStore>, root: &Path, secret: &str, host: &str) -> String {
    let Some(store) = store else { return "unknown (no secret store)".into() };
    match hands_core::secret::project_secret(store, root, secret) {
        hands_core::secret::ProjectSecret::Stored(_) => {}
        hands_core::secret::ProjectSecret::GlobalOnly => {
            return "stored only globally, so hands refuses to send it (store it for this project)"
                .into();
        }
        hands_core::secret::ProjectSecret::Missing => return "not stored".into(),
    }
    match store.host(root, secret) {
        Some(recorded) if recorded.eq_ignore_ascii_case(host) => "stored for this host".into(),
        Some(recorded) => {
            format!("stored for {recorded} only, so hands refuses to send it")
        }
        None => "stored without a host, so hands refuses to send it".into(),
    }
}

fn list(root: &Path, store: Option<&dyn SecretStore>, json: bool) -> Result<ExitCode> {
    let mut rows = Vec::new();
    for name in hands_connectors::list(root) {
        let row = match files::read(root, &name) {
            Ok(c) => {
                let host = c.record();
                let auth = &c.file.auth;
                let secret = auth.secret.clone().filter(|_| auth.kind != AuthKind::None);
                let state = secret.as_deref().map(|s| secret_state(store, root, s, &host));
                serde_json::json!({
                    "name": name, "base_url": c.file.base_url, "host": host,
                    "auth": serde_json::to_value(auth.kind).unwrap_or_default(),
                    "secret": secret, "secret_state": state.unwrap_or_else(|| "no secret".into()),
                    "methods": c.file.allowed_methods, "paths": c.file.allowed_paths,
                    "operations": c.file.operations.len(),
                })
            }
            Err(err) => serde_json::json!({"name": name, "error": err.to_string()}),
        };
        rows.push(row);
    }
    if json {
        let text = serde_json::to_string_pretty(&rows).context("the list as JSON")?;
        term::data(&format!("{text}\n"))?;
        return Ok(ExitCode::SUCCESS);
    }
    if rows.is_empty() {
        term::out(
            "no connectors; add one with `hands connectors add NAME --from-openapi FILE_OR_URL`\n",
        );
    }
    for row in rows {
        let name = row["name"].as_str().unwrap_or_default();
        match row["error"].as_str() {
            Some(error) => {
                let error = error.split_whitespace().collect::<Vec<_>>().join(" ");
                term::out(&format!("{name}  (broken: {error})\n"));
            }
            None => term::out(&format!(
                "{name}  {}  auth {}{}  ({} operations)\n",
                row["base_url"].as_str().unwrap_or_default(),
                row["auth"].as_str().unwrap_or_default(),
                match row["secret"].as_str() {
                    Some(s) =>
                        format!(" {s}: {}", row["secret_state"].as_str().unwrap_or_default()),
                    None => String::new(),
                },
                row["operations"],
            )),
        }
    }
    Ok(ExitCode::SUCCESS)
}
