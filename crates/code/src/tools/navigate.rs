//! code_navigation: definition, references, hover, document symbols and workspace symbols, in
//! one read-only tool with an `action` — one clear tool rather than five near-identical ones
//! (models pick among few tools better), each action answering with root-relative paths, line
//! numbers and the line there, capped like grep.
//!
//! Flow: resolve the path inside the root, find its language's server (starting it if need be),
//! open the file on it (the text on disk), turn a `symbol` into a position when no line and
//! column were given, ask, and cut the answer to `limit`.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use hands_core::{Annotations, Context, Family, Label, Policy, Tool, ToolError, ToolOutput};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::code::{Code, Settings};
use crate::language::Language;
use crate::query::{Hit, Query, shown};
use crate::server::Server;

/// What to look up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Where the symbol at the position (or named `symbol`) is defined.
    Definition,
    /// Every use of it, the declaration included.
    References,
    /// Its type and documentation.
    Hover,
    /// The outline of the file at `path`.
    DocumentSymbols,
    /// The symbols of the project whose name matches `symbol`.
    WorkspaceSymbols,
}

/// Arguments of code_navigation.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NavigateArgs {
    /// What to look up.
    pub action: Action,
    /// A file, relative to the project root. Needed by every action but workspace_symbols,
    /// where it picks the language (default: every running language server).
    #[serde(default)]
    pub path: Option<String>,
    /// 1-based line of the symbol (with `column`).
    #[serde(default)]
    pub line: Option<u32>,
    /// 1-based column of the symbol, in characters (any character of its name).
    #[serde(default)]
    pub column: Option<u32>,
    /// A symbol's name: instead of line and column (the first symbol of that name in the file's
    /// outline), or workspace_symbols' query.
    #[serde(default)]
    pub symbol: Option<String>,
    /// At most this many results (default 50, at most 500).
    #[serde(default)]
    pub limit: Option<usize>,
}

/// The structured result of code_navigation: everything its text says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct NavigateResult {
    /// The action answered.
    pub action: Action,
    /// The places found (not for hover), at most `limit`.
    pub results: Vec<Hit>,
    /// How many the server found.
    pub total: usize,
    /// True when results were left out.
    pub truncated: bool,
    /// Hover's text (type and docs), cut at 4,000 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hover: Option<String>,
    /// Where the position was, when it came from `symbol`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved: Option<Hit>,
}

const DEFAULT_LIMIT: usize = 50;
const MAX_LIMIT: usize = 500;
const MAX_HOVER_CHARS: usize = 4_000;

/// The code_navigation tool.
#[derive(Debug, Clone)]
pub struct CodeNavigation {
    settings: Arc<Settings>,
}

impl CodeNavigation {
    /// With `settings`.
    pub fn new(settings: Arc<Settings>) -> Self {
        Self { settings }
    }
}

impl Tool for CodeNavigation {
    type Args = NavigateArgs;

    fn name(&self) -> &'static str {
        "code_navigation"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("code_navigation.md"))
    }

    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY
    }

    fn policy(&self) -> Policy {
        Policy::from_annotations(self.annotations())
            .label(Label::Key { key: "path" })
            .family(Family::Search)
            .timeout_ms(120_000)
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        Some(hands_core::output_schema_for::<NavigateResult>())
    }

    async fn call(&self, ctx: Context, args: Self::Args) -> Result<ToolOutput, ToolError> {
        if !self.settings.code.enabled {
            return Err(ToolError::model("code intelligence is off ([code] enabled = false)."));
        }
        let code = crate::watch::code_of(ctx.session(), &self.settings);
        let limit = args.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
        let timeout = Duration::from_millis(self.settings.code.request_timeout_ms);
        let mut result = NavigateResult {
            action: args.action,
            results: Vec::new(),
            total: 0,
            truncated: false,
            hover: None,
            resolved: None,
        };
        let mut news = Vec::new();
        if args.action == Action::WorkspaceSymbols && args.path.is_none() {
            let Some(query) = args.symbol.as_deref() else {
                return Err(ToolError::model(
                    "workspace_symbols needs `symbol`, the name to look for.",
                ));
            };
            let servers = code.running().await;
            if servers.is_empty() {
                return Err(ToolError::model(
                    "no language server runs yet: give `path` (any file of the language) to start one.",
                ));
            }
            for server in &servers {
                let q = Query { server, root: &code.root, timeout };
                result.results.extend(q.workspace_symbols(query).await.map_err(model)?);
            }
        } else {
            let Some(path) = args.path.as_deref() else {
                return Err(ToolError::model(
                    "`path` is needed: the file to look in, relative to the project root.",
                ));
            };
            let path = resolve(&ctx, path)?;
            let (server, said) = open(&code, &path).await?;
            news = said;
            let q = Query { server: &server, root: &code.root, timeout };
            let at = || position(&q, &path, &args);
            match args.action {
                Action::DocumentSymbols => {
                    result.results = q.document_symbols(&path).await.map_err(model)?
                }
                Action::WorkspaceSymbols => {
                    let query = args.symbol.as_deref().unwrap_or_default();
                    result.results = q.workspace_symbols(query).await.map_err(model)?;
                }
                Action::Definition | Action::References | Action::Hover => {
                    let (line, column, resolved) = at().await?;
                    result.resolved = resolved;
                    match args.action {
                        Action::Definition => {
                            result.results =
                                q.definition(&path, line, column).await.map_err(model)?
                        }
                        Action::References => {
                            result.results =
                                q.references(&path, line, column).await.map_err(model)?
                        }
                        _ => {
                            result.hover =
                                q.hover(&path, line, column).await.map_err(model)?.map(|h| {
                                    // Redacted whole before the cut: a stored secret cut in two
                                    // is no longer found by the registry's redaction; and
                                    // where the server cut a long type at `...` itself.
                                    let h = hands_core::redact::text_cut(&h).into_owned();
                                    if h.chars().count() > MAX_HOVER_CHARS {
                                        let cut: String = h.chars().take(MAX_HOVER_CHARS).collect();
                                        format!("{cut}\n… [cut]")
                                    } else {
                                        h
                                    }
                                });
                        }
                    }
                }
            }
        }
        result.total = result.results.len();
        result.truncated = result.total > limit;
        result.results.truncate(limit);
        let mut output = ToolOutput::text(text_of(&result)).with_structured(
            serde_json::to_value(&result)
                .map_err(|e| ToolError::Fatal(format!("code_navigation result: {e}")))?,
        );
        output.notices.extend(
            news.into_iter()
                .map(|n| hands_core::Notice::new(hands_core::NoticeKind::Diagnostics, n)),
        );
        Ok(output)
    }
}

fn model(err: impl std::fmt::Display) -> ToolError {
    ToolError::model(format!("{err}. Try again; if it persists, the server may be overloaded."))
}

/// `path` inside the root, as an absolute path. A path that leads out of the root through a
/// symlink is refused as read_file refuses it: a server would read the file it leads to.
pub(crate) fn resolve(ctx: &Context, path: &str) -> Result<PathBuf, ToolError> {
    let ws = hands_fs::Workspace::of(ctx)?;
    let rel = ws.resolve("path", path)?;
    let full = ws.root().join(rel.as_path());
    let root = std::fs::canonicalize(ws.root()).unwrap_or_else(|_| ws.root().to_path_buf());
    match std::fs::canonicalize(&full) {
        Ok(real) if !real.starts_with(&root) => Err(ToolError::model(format!(
            "`path` {} resolves outside the project root (a symlink); give a path inside it.",
            rel.display()
        ))),
        _ => Ok(full),
    }
}

/// The file's server, with the file opened on it as it is on disk.
pub(crate) async fn open(
    code: &Code,
    path: &Path,
) -> Result<(Arc<Server>, Vec<String>), ToolError> {
    let Some(language) = Language::of(path) else {
        return Err(ToolError::model(format!(
            "{} is not a file of a language with a server here (TypeScript/JavaScript, Python, Rust, Go).",
            shown(&code.root, path)
        )));
    };
    let acquired = code.server(language).await;
    let server = acquired.server.map_err(|reason| ToolError::model(format!("{reason}.")))?;
    let text = tokio::fs::read_to_string(path).await.map_err(|err| {
        ToolError::model(format!("{} could not be read: {err}", shown(&code.root, path)))
    })?;
    let synced = server.sync(path, text).await.map_err(model)?;
    // A file just opened is answered once the server analysed it (its first diagnostics):
    // before that, typescript-language-server answers from its syntax-only server (a
    // definition lands on the import, not the function).
    if let Some(generation) = synced.filter(|&g| g == 0) {
        let deadline = tokio::time::Instant::now()
            + Duration::from_millis(code.settings.code.request_timeout_ms);
        server.diagnostics.wait_settled(path, generation, deadline, &server.proc).await;
    }
    Ok((server, acquired.news))
}

/// The 1-based position the call means: its line and column, or where `symbol` is in the file.
async fn position(
    q: &Query<'_>,
    path: &Path,
    args: &NavigateArgs,
) -> Result<(u32, u32, Option<Hit>), ToolError> {
    if let (Some(line), Some(column)) = (args.line, args.column) {
        return Ok((line.max(1), column.max(1), None));
    }
    let Some(symbol) = args.symbol.as_deref() else {
        return Err(ToolError::model(
            "give `line` and `column` (1-based), or `symbol` (a name in the file).",
        ));
    };
    let symbols = q.document_symbols(path).await.map_err(model)?;
    let found = symbols.into_iter().find(|h| h.name.as_deref() == Some(symbol)).ok_or_else(|| {
        ToolError::model(format!(
            "no symbol named `{symbol}` in {}'s outline: give `line` and `column`, or look it up with action workspace_symbols.",
            shown(q.root, path)
        ))
    })?;
    // The selection range starts at the name; the outline's column is 1-based already.
    Ok((found.line, found.column, Some(found)))
}

fn text_of(result: &NavigateResult) -> String {
    let mut lines = Vec::new();
    if let Some(at) = &result.resolved {
        lines.push(format!(
            "{} is at {}:{}:{}",
            at.name.as_deref().unwrap_or("symbol"),
            at.path,
            at.line,
            at.column
        ));
    }
    if result.action == Action::Hover {
        lines
            .push(result.hover.clone().unwrap_or_else(|| "No hover information there.".to_owned()));
        return lines.join("\n");
    }
    if result.results.is_empty() {
        lines.push("No results.".to_owned());
    }
    for hit in &result.results {
        let symbol = match (&hit.kind, &hit.name) {
            (Some(kind), Some(name)) => {
                let indent = "  ".repeat(hit.depth.unwrap_or(0) as usize);
                let container =
                    hit.container.as_deref().map(|c| format!(" (in {c})")).unwrap_or_default();
                format!("{indent}{kind} {name}{container} — ")
            }
            _ => String::new(),
        };
        lines.push(format!(
            "{}:{}:{}: {symbol}{}",
            hit.path,
            hit.line,
            hit.column,
            hit.text.trim()
        ));
    }
    if result.truncated {
        lines.push(format!(
            "[{} of {} shown; raise `limit` for more]",
            result.results.len(),
            result.total
        ));
    }
    lines.join("\n")
}
