//! diagnostics: the current errors (and warnings, if asked) of a file, a folder or the project,
//! from the language servers. A folder's files of the languages with a server are opened on
//! their servers (at most [`MAX_OPENED`] per call, skipping dependency and build folders), and
//! the call waits, within `[code] request_timeout_ms`, for what the servers publish.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use hands_core::{Annotations, Context, Family, Label, Policy, Tool, ToolError, ToolOutput};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::code::Settings;
use crate::language::Language;
use crate::report::{self, Problem};

/// Files opened at most by one call on a folder.
pub const MAX_OPENED: usize = 200;

/// Folders never walked: dependencies, builds, virtual environments.
const SKIPPED: &[&str] =
    &["node_modules", "target", "dist", "build", "venv", "__pycache__", "vendor"];

/// Arguments of diagnostics.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiagnosticsArgs {
    /// A file or folder relative to the project root (default: the whole project).
    #[serde(default)]
    pub path: Option<String>,
    /// Include warnings, not only errors.
    #[serde(default)]
    pub warnings: bool,
    /// At most this many diagnostics listed (default 50, at most 500).
    #[serde(default)]
    pub limit: Option<usize>,
}

/// The structured result of diagnostics: everything its text says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct DiagnosticsResult {
    /// The problems, by file then line, at most `limit`.
    pub problems: Vec<Problem>,
    /// How many there are in all (including what a flooding server sent beyond the bound).
    pub total: usize,
    /// True when problems were left out.
    pub truncated: bool,
    /// Files checked.
    pub files: usize,
    /// The language servers asked, and for each one that could not be had, why.
    pub servers: Vec<ServerState>,
    /// Every language hands has a server for, and what was found for it here: the command, or
    /// that none is installed.
    pub found: Vec<ServerFound>,
}

/// What was found for one language.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ServerFound {
    /// The language.
    pub language: Language,
    /// `running`, `not started`, `exited`, `given up` or `not installed`.
    pub state: String,
    /// The server's command, when one is installed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
}

/// One language's server as this call found it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ServerState {
    /// The language.
    pub language: Language,
    /// `running`, or why not.
    pub state: String,
}

/// The diagnostics tool.
#[derive(Debug, Clone)]
pub struct Diagnostics {
    settings: Arc<Settings>,
}

impl Diagnostics {
    /// With `settings`.
    pub fn new(settings: Arc<Settings>) -> Self {
        Self { settings }
    }
}

impl Tool for Diagnostics {
    type Args = DiagnosticsArgs;

    fn name(&self) -> &'static str {
        "diagnostics"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("diagnostics.md"))
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
        Some(hands_core::output_schema_for::<DiagnosticsResult>())
    }

    async fn call(&self, ctx: Context, args: Self::Args) -> Result<ToolOutput, ToolError> {
        if !self.settings.code.enabled {
            return Err(ToolError::model("code intelligence is off ([code] enabled = false)."));
        }
        let code = crate::watch::code_of(ctx.session(), &self.settings);
        let target = crate::tools::navigate::resolve(&ctx, args.path.as_deref().unwrap_or("."))?;
        let files = if target.is_dir() { walk(&target) } else { vec![target.clone()] };
        if files.is_empty() || files.iter().all(|f| Language::of(f).is_none()) {
            return Err(ToolError::model(format!(
                "{} has no file of a language with a server here (TypeScript/JavaScript, Python, Rust, Go).",
                report::relative(&code.root, &target)
            )));
        }
        let mut by_language: BTreeMap<Language, Vec<PathBuf>> = BTreeMap::new();
        for file in &files {
            if let Some(language) = Language::of(file) {
                by_language.entry(language).or_default().push(file.clone());
            }
        }
        let deadline = tokio::time::Instant::now()
            + std::time::Duration::from_millis(self.settings.code.request_timeout_ms);
        let (mut problems, mut extra, mut servers, mut notices) =
            (Vec::new(), 0, Vec::new(), Vec::new());
        for (language, files) in by_language {
            let acquired = code.server(language).await;
            notices.extend(acquired.news);
            let server = match acquired.server {
                Ok(server) => server,
                Err(reason) => {
                    servers.push(ServerState { language, state: reason });
                    continue;
                }
            };
            servers.push(ServerState { language, state: "running".to_owned() });
            let mut waits = Vec::new();
            for file in &files {
                let Ok(text) = tokio::fs::read_to_string(file).await else { continue };
                let before = server.diagnostics.generation(file);
                // A file never published waits for its first publish; one already known does
                // not wait again.
                if server.sync(file, text).await.ok().flatten().is_some() || before == 0 {
                    waits.push((file.clone(), before));
                }
            }
            for (file, generation) in &waits {
                server.diagnostics.wait_settled(file, *generation, deadline, &server.proc).await;
            }
            for file in &files {
                let (now, dropped) = code.problems(&server, file, args.warnings);
                code.remember(
                    file,
                    now.iter()
                        .filter(|p| p.severity == "error" || self.settings.code.warnings)
                        .cloned()
                        .collect(),
                );
                problems.extend(now);
                extra += dropped;
            }
        }
        problems.sort_by(|a, b| (&a.path, a.line, a.column).cmp(&(&b.path, b.line, b.column)));
        let limit = args.limit.unwrap_or(50).clamp(1, 500);
        let total = problems.len() + extra;
        let truncated = total > limit;
        problems.truncate(limit);
        let found = code
            .status()
            .await
            .into_iter()
            .map(|(language, command, state)| ServerFound {
                language,
                state: state.to_owned(),
                command,
            })
            .collect();
        let result =
            DiagnosticsResult { problems, total, truncated, files: files.len(), servers, found };
        let mut output = ToolOutput::text(text_of(&result)).with_structured(
            serde_json::to_value(&result)
                .map_err(|e| ToolError::Fatal(format!("diagnostics result: {e}")))?,
        );
        output.notices.extend(
            notices
                .into_iter()
                .map(|n| hands_core::Notice::new(hands_core::NoticeKind::Diagnostics, n)),
        );
        Ok(output)
    }
}

fn text_of(result: &DiagnosticsResult) -> String {
    let mut lines = Vec::new();
    let kind = "problem";
    if !result.servers.iter().any(|s| s.state == "running") {
        lines.push("No language server could check these files:".to_owned());
    } else if result.total == 0 {
        lines.push(format!(
            "No errors in {} file{}.",
            result.files,
            if result.files == 1 { "" } else { "s" }
        ));
    } else {
        lines.push(format!(
            "{} {kind}{} in {} file{} checked:",
            result.total,
            if result.total == 1 { "" } else { "s" },
            result.files,
            if result.files == 1 { "" } else { "s" }
        ));
        lines.extend(result.problems.iter().map(Problem::line_text));
        if result.truncated {
            lines.push(format!(
                "[{} of {} shown; raise `limit` for more]",
                result.problems.len(),
                result.total
            ));
        }
    }
    for server in result.servers.iter().filter(|s| s.state != "running") {
        lines.push(format!("{}: {}", server.language.title(), server.state));
    }
    let found: Vec<String> =
        result.found.iter().map(|f| format!("{} {}", f.language.title(), f.state)).collect();
    lines.push(format!("Language servers: {}.", found.join(", ")));
    lines.join("\n")
}

/// The files under `dir` of a language with a server, at most [`MAX_OPENED`], skipping hidden,
/// dependency and build folders.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
        entries.sort_by_key(|e| std::cmp::Reverse(e.file_name()));
        for entry in entries {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let Ok(kind) = entry.file_type() else { continue };
            if name.starts_with('.') || kind.is_symlink() {
                continue;
            }
            if kind.is_dir() {
                if !SKIPPED.contains(&name.as_ref()) {
                    stack.push(entry.path());
                }
            } else if Language::of(&entry.path()).is_some() {
                files.push(entry.path());
                if files.len() >= MAX_OPENED {
                    return files;
                }
            }
        }
    }
    files.sort();
    files
}
