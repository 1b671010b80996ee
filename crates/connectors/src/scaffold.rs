//! connector_scaffold: write a connector's integration into the project — a typed client module,
//! the secret's variable name in `.env.example`, and, when a browser client needs a secret, the
//! server route that holds it.
//!
//! Flow: read the connector (and the OpenAPI document it names, for the types) through the
//! confined workspace; pick the language (the argument, else the project's: TypeScript for a
//! Node project or an empty one; other ecosystems are refused with what to do); render the files
//! (see [`crate::typescript`]); check every target file before writing any: a file hands wrote
//! carries a hash of its text (`hands-scaffold: sha256=…`), and a file that lacks it or no longer
//! matches it was changed by the user and is never overwritten; then write atomically and add
//! missing names to `.env.example` (never removing a line).

use std::borrow::Cow;

use hands_core::{Annotations, Context, Family, Label, Policy, Tool, ToolError, ToolOutput};
use hands_fs::{FsConfig, Workspace, atomic};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::api::Api;
use crate::config::{AuthKind, Connector, DIR, check_name};
use crate::openapi::{self, MAX_DOCUMENT_BYTES};
use crate::typescript::{self, Side};

/// Where the generated client runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Target {
    /// Server code (Node, Bun, Deno): the key from the environment.
    Server,
    /// An edge function or Worker: the key from the runtime's environment bindings.
    Edge,
    /// Browser code: it never holds a key; with a secret-bearing auth it calls the project's own
    /// server route, which is written too.
    Client,
}

/// Arguments of connector_scaffold.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScaffoldArgs {
    /// The connector's name: the file `.hands/connectors/<connector>.toml`.
    pub connector: String,
    /// Where the client runs: server, edge or client (browser).
    pub target: Target,
    /// The client's language (default: the project's). Only `typescript` so far.
    pub language: Option<String>,
}

/// One file connector_scaffold wrote or left.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ScaffoldFile {
    /// Relative to the project root.
    pub path: String,
    /// created, updated or unchanged.
    pub action: String,
}

/// The structured result of connector_scaffold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ScaffoldResult {
    /// The connector.
    pub connector: String,
    /// server, edge or client.
    pub target: Target,
    /// The language written.
    pub language: String,
    /// The files.
    pub files: Vec<ScaffoldFile>,
    /// Environment variables the code reads (listed in `.env.example`).
    pub env: Vec<String>,
    /// Whether the types came from an OpenAPI document (else from the connector's operations).
    pub typed_from_openapi: bool,
}

/// The connector_scaffold tool.
#[derive(Debug, Clone, Default)]
pub struct ConnectorScaffold;

/// The marker line's start; the hash after it covers the file without that line.
const MARKER: &str = "// hands-scaffold: sha256=";

impl Tool for ConnectorScaffold {
    type Args = ScaffoldArgs;

    fn name(&self) -> &'static str {
        "connector_scaffold"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("connector_scaffold.md"))
    }

    fn annotations(&self) -> Annotations {
        Annotations { read_only: false, destructive: false, idempotent: true, open_world: false }
    }

    fn policy(&self) -> Policy {
        Policy::from_annotations(self.annotations())
            .label(Label::Key { key: "connector" })
            .family(Family::Connectors)
            .timeout_ms(30_000)
    }

    fn output_schema(&self) -> Option<Value> {
        Some(hands_core::output_schema_for::<ScaffoldResult>())
    }

    async fn call(&self, ctx: Context, args: Self::Args) -> Result<ToolOutput, ToolError> {
        tokio::task::spawn_blocking(move || scaffold(&ctx, &args))
            .await
            .map_err(|err| ToolError::Fatal(format!("connector_scaffold task failed: {err}")))?
    }
}

fn scaffold(ctx: &Context, args: &ScaffoldArgs) -> Result<ToolOutput, ToolError> {
    check_name(&args.connector).map_err(ToolError::model)?;
    let connector = crate::call::load(ctx, &args.connector)?;
    let ws = Workspace::of(ctx)?;
    let language = language(&ws, args.language.as_deref())?;
    let (api, typed) = api(&ws, &connector)?;
    let auth = &connector.file.auth;
    let secret = auth.secret.clone().filter(|_| auth.kind != AuthKind::None);
    let dir = if ws.dir().is_dir("src") { "src/connectors" } else { "connectors" };
    let name = &connector.name;
    let prefix = format!("/api/connectors/{name}");
    let source = format!("{DIR}/{name}.toml");
    let mut files: Vec<(String, String)> = Vec::new();
    let side = match (args.target, &secret) {
        (Target::Server, _) => Side::Server,
        (Target::Edge, _) => Side::Edge,
        (Target::Client, None) => Side::Browser,
        (Target::Client, Some(_)) => Side::ViaRoute,
    };
    let target_word = serde_json::to_value(args.target)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    files.push((
        format!("{dir}/{name}.ts"),
        stamp(
            &format!(
                "// Generated by hands connector_scaffold from {source} (target: {target_word}).\n\
             // hands rewrites this file only while it is exactly as generated (the hash below);\n\
             // once you change it, it is yours and connector_scaffold leaves it alone.\n"
            ),
            &typescript::client(&connector, &api, side, &prefix),
        ),
    ));
    if side == Side::ViaRoute {
        files.push((
            format!("{dir}/{name}.route.ts"),
            stamp(&format!(
                "// Generated by hands connector_scaffold from {source}: server code only (it reads\n\
                 // the key); never import it into browser code. hands rewrites this file only while\n\
                 // it is exactly as generated (the hash below).\n"
            ), &typescript::route(&connector, &prefix)),
        ));
    }
    // Every file is checked before any is written: a refusal leaves the project as it was.
    let mut plan = Vec::new();
    let mut refused = Vec::new();
    for (path, text) in files {
        let rel = ws.resolve("path", &path)?;
        atomic::check_writable(&ws, &rel, &FsConfig::default(), "scaffold")?;
        match read_existing(&ws, &rel)? {
            None => plan.push((rel, text, "created")),
            Some(old) if old == text => plan.push((rel, text, "unchanged")),
            Some(old) => match stamped(&old) {
                Stamp::AsGenerated => plan.push((rel, text, "updated")),
                Stamp::Changed => refused.push(format!("{path} (changed since hands wrote it)")),
                Stamp::Foreign => {
                    refused.push(format!("{path} (not written by connector_scaffold)"))
                }
            },
        }
    }
    if !refused.is_empty() {
        return Err(ToolError::model(format!(
            "connector_scaffold refuses to overwrite {}; nothing was written. These files belong to \
             the user now: read them and merge the changes by hand, or ask the user whether to \
             move them aside and scaffold again.",
            refused.join(", ")
        )));
    }
    let env_file = match (&secret, side) {
        (Some(secret), side) if side != Side::Browser => {
            let host = connector.record();
            Some(env_example(
                &ws,
                secret,
                &format!(
                    "# {name} connector: the key for {host} (hands secrets set {secret} --host {host})"
                ),
            )?)
        }
        _ => None,
    };
    let mut written = Vec::new();
    for (rel, text, action) in plan {
        if action != "unchanged" {
            atomic::write(&ws, &rel, text.as_bytes(), ctx.cancel_token())
                .map_err(|err| atomic::write_error(&ws, "connector_scaffold", &rel, &err))?;
        }
        written.push(ScaffoldFile { path: rel.display(), action: action.to_owned() });
    }
    if let Some((rel, text, action)) = env_file {
        if let Some(text) = text {
            atomic::write(&ws, &rel, text.as_bytes(), ctx.cancel_token())
                .map_err(|err| atomic::write_error(&ws, "connector_scaffold", &rel, &err))?;
        }
        written.push(ScaffoldFile { path: rel.display(), action: action.to_owned() });
    }
    let result = ScaffoldResult {
        connector: name.clone(),
        target: args.target,
        language: language.to_owned(),
        files: written,
        env: secret.iter().filter(|_| side != Side::Browser).cloned().collect(),
        typed_from_openapi: typed,
    };
    Ok(output(&result, &connector, side, dir))
}

fn output(result: &ScaffoldResult, connector: &Connector, side: Side, dir: &str) -> ToolOutput {
    let stem = typescript::stem(&connector.name);
    let mut text = format!(
        "connector_scaffold {} ({:?}, {}):\n",
        result.connector, result.target, result.language
    )
    .to_lowercase();
    for f in &result.files {
        text.push_str(&format!("- {} ({})\n", f.path, f.action));
    }
    text.push_str(&format!(
        "Use it: `import {{ create{stem}Client }} from \"./connectors/{}\"` (from a module {}), \
         then `const api = create{stem}Client();` — one method per operation{}, plus \
         `request(method, path, {{ query, body }})`.\n",
        connector.name,
        if dir.starts_with("src/") { "in src/" } else { "at the project root" },
        if result.typed_from_openapi { ", typed from the OpenAPI document" } else { "" },
    ));
    if side == Side::ViaRoute {
        text.push_str(&format!(
            "The browser client calls /api/connectors/{0}; mount handle{stem} from {dir}/{0}.route.ts \
             there on the server (its comment shows Next.js, Hono and Worker examples). The key \
             never reaches browser code.\n",
            connector.name
        ));
    }
    if let Some(secret) = result.env.first() {
        text.push_str(&format!(
            "The code reads {secret} from the environment (.env.example names it). The user stores \
             it with `hands secrets set {secret} --host {}`; hands gives it to the project's \
             processes, and never to you.\n",
            connector.record()
        ));
    }
    let structured = serde_json::to_value(result).unwrap_or(Value::Null);
    ToolOutput::text(text).with_structured(structured)
}

/// The language to write: the argument, or the project's.
fn language(ws: &Workspace, arg: Option<&str>) -> Result<&'static str, ToolError> {
    if let Some(lang) = arg {
        return match lang.to_ascii_lowercase().as_str() {
            "typescript" | "ts" => Ok("typescript"),
            other => Err(ToolError::model(format!(
                "`language` {other:?} is not written yet: connector_scaffold writes TypeScript \
                 (`typescript`) only. Call the service with connector_call, or write the client \
                 yourself from the connector's operations."
            ))),
        };
    }
    if ws.dir().exists("package.json") || ws.dir().exists("tsconfig.json") {
        return Ok("typescript");
    }
    for (marker, what) in [
        ("pyproject.toml", "Python"),
        ("requirements.txt", "Python"),
        ("setup.py", "Python"),
        ("Cargo.toml", "Rust"),
        ("go.mod", "Go"),
        ("Gemfile", "Ruby"),
        ("composer.json", "PHP"),
        ("pom.xml", "Java"),
        ("build.gradle", "Java or Kotlin"),
    ] {
        if ws.dir().exists(marker) {
            return Err(ToolError::model(format!(
                "this looks like a {what} project ({marker}), and connector_scaffold writes \
                 TypeScript only so far. Pass language=\"typescript\" to write a TypeScript client \
                 anyway, or call the service with connector_call."
            )));
        }
    }
    Ok("typescript")
}

/// The connector's API: typed from its OpenAPI document when it names one.
fn api(ws: &Workspace, connector: &Connector) -> Result<(Api, bool), ToolError> {
    let Some(doc) = &connector.file.openapi else {
        return Ok((Api::from_connector(connector), false));
    };
    let rel = ws.resolve("openapi", &format!("{DIR}/{doc}"))?;
    let fix = format!(
        "Ask the user to import it again (hands connectors add {} --from-openapi FILE_OR_URL \
         --force), or to remove the `openapi` line from {DIR}/{}.toml for an untyped client.",
        connector.name, connector.name
    );
    let text = match read_existing(ws, &rel)? {
        Some(text) => text,
        None => {
            return Err(ToolError::model(format!(
                "the connector names the OpenAPI document {}, which does not exist. {fix}",
                rel.display()
            )));
        }
    };
    let document = openapi::read_document(&text)
        .map_err(|err| ToolError::model(format!("{}: {err}. {fix}", rel.display())))?;
    let api = openapi::api_of(&document)
        .map_err(|err| ToolError::model(format!("{}: {err}. {fix}", rel.display())))?;
    Ok((api, true))
}

/// The text of `rel`, or `None` when it does not exist. Over 2 × the document cap is refused.
fn read_existing(ws: &Workspace, rel: &hands_fs::RelPath) -> Result<Option<String>, ToolError> {
    use std::io::Read as _;
    let file = match ws.open_read(rel) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(ws.io_error("read", rel, &err)),
    };
    let limit = 2 * MAX_DOCUMENT_BYTES as u64;
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes).map_err(|err| ws.io_error("read", rel, &err))?;
    if bytes.len() as u64 > limit {
        return Err(ToolError::model(format!(
            "{} is over {limit} bytes; connector_scaffold reads no file that large.",
            rel.display()
        )));
    }
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}

/// `header`, the marker line with the hash of everything but that line, then `body`.
fn stamp(header: &str, body: &str) -> String {
    let unmarked = format!("{header}\n{body}");
    let hash = hex::encode(Sha256::digest(unmarked.as_bytes()));
    format!("{header}{MARKER}{hash}\n\n{body}")
}

enum Stamp {
    AsGenerated,
    Changed,
    Foreign,
}

fn stamped(text: &str) -> Stamp {
    let Some(at) = text.find(MARKER) else { return Stamp::Foreign };
    let line_end = text[at..].find('\n').map_or(text.len(), |n| at + n);
    let hash = &text[at + MARKER.len()..line_end];
    let unmarked = format!("{}{}", &text[..at], &text[(line_end + 1).min(text.len())..]);
    if hex::encode(Sha256::digest(unmarked.as_bytes())) == hash.trim() {
        Stamp::AsGenerated
    } else {
        Stamp::Changed
    }
}

/// `.env.example` with `secret` added (under `comment`) when no line sets it yet: its path, the
/// new text (`None`: nothing to add) and the action.
fn env_example(
    ws: &Workspace,
    secret: &str,
    comment: &str,
) -> Result<(hands_fs::RelPath, Option<String>, &'static str), ToolError> {
    let rel = ws.resolve("path", ".env.example")?;
    atomic::check_writable(ws, &rel, &FsConfig::default(), "scaffold")?;
    let old = read_existing(ws, &rel)?;
    let has = old.as_deref().is_some_and(|text| {
        text.lines().any(|line| {
            let line = line.trim_start();
            let line = line.strip_prefix("export ").unwrap_or(line).trim_start();
            line.strip_prefix(secret).is_some_and(|rest| rest.trim_start().starts_with('='))
        })
    });
    if has {
        return Ok((rel, None, "unchanged"));
    }
    let action = if old.is_some() { "updated" } else { "created" };
    let mut text = old.unwrap_or_default();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    if !text.is_empty() {
        text.push('\n');
    }
    text.push_str(&format!("{comment}\n{secret}=\n"));
    Ok((rel, Some(text), action))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamped_file_is_known_until_it_changes() {
        let text = stamp("// header\n", "export const a = 1;\n");
        assert!(matches!(stamped(&text), Stamp::AsGenerated));
        assert!(matches!(stamped(&text.replace("a = 1", "a = 2")), Stamp::Changed));
        assert!(matches!(stamped("export const a = 1;\n"), Stamp::Foreign));
        assert!(matches!(stamped(&format!("{text}// mine\n")), Stamp::Changed));
    }
}
