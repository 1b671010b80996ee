//! repo_map: collect the folder's tags (collect.rs), rank them (rank.rs), render them within the
//! budget (render.rs). Runs on a blocking thread: parsing is CPU work.

use std::borrow::Cow;

use hands_core::{Annotations, Context, Family, Label, Policy, Tool, ToolError, ToolOutput};
use hands_fs::FsConfig;
use schemars::JsonSchema;
use serde::Deserialize;

use std::sync::Arc;

use crate::memo;
use crate::render::{RepoMapResult, render};

/// The default budget, in tokens.
pub const DEFAULT_MAX_TOKENS: usize = 2000;
/// The largest budget a caller may ask for.
pub const MAX_MAX_TOKENS: usize = 32_000;

/// Arguments of repo_map.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RepoMapArgs {
    /// Folder or file (default: the project root).
    #[serde(default)]
    pub path: Option<String>,
    /// Budget (default 2000, 100 to 32000).
    #[serde(default)]
    pub max_tokens: Option<usize>,
    /// Files you are working on: what they use ranks first.
    #[serde(default)]
    pub focus: Vec<String>,
}

/// The repo_map tool.
#[derive(Debug, Clone)]
pub struct RepoMap {
    config: FsConfig,
}

impl RepoMap {
    /// With the walk settings of `config` (excluded folders, threads).
    pub fn new(config: FsConfig) -> Self {
        Self { config }
    }
}

impl Tool for RepoMap {
    type Args = RepoMapArgs;

    fn name(&self) -> &'static str {
        "repo_map"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("repo_map.md"))
    }

    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY
    }

    fn policy(&self) -> Policy {
        Policy::from_annotations(self.annotations())
            .label(Label::FirstOf { keys: &["path"] })
            .family(Family::Search)
            .timeout_ms(120_000)
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        Some(hands_core::output_schema_for::<RepoMapResult>())
    }

    async fn call(&self, ctx: Context, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let config = self.config.clone();
        let task = tokio::task::spawn_blocking(move || run(&ctx, &config, &args));
        task.await.map_err(|e| ToolError::Fatal(format!("repo_map task failed: {e}")))?
    }
}

fn run(ctx: &Context, config: &FsConfig, args: &RepoMapArgs) -> Result<ToolOutput, ToolError> {
    let max_tokens = args.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
    if !(100..=MAX_MAX_TOKENS).contains(&max_tokens) {
        return Err(ToolError::model(format!(
            "`max_tokens` must be between 100 and {MAX_MAX_TOKENS} (got {max_tokens}); the \
             default is {DEFAULT_MAX_TOKENS}."
        )));
    }
    let collected = crate::collect::collect(ctx, config, args.path.as_deref())?;
    let ws = hands_fs::Workspace::of(ctx)?;
    let mut focus = Vec::new();
    for path in &args.focus {
        let rel = ws.resolve("focus", path)?.display();
        match collected.sources.iter().position(|s| s.rel == rel) {
            Some(index) => focus.push(index),
            None => {
                return Err(ToolError::model(format!(
                    "`focus` {rel} is not a source file under the mapped folder {}; name files \
                     the map reads (Rust, Python, JavaScript, TypeScript, Go) inside `path`.",
                    collected.start
                )));
            }
        }
    }
    // An unchanged folder asked the same way gives the same map: ranking is the costly part.
    let key = memo::map_key(ws.root(), &collected, max_tokens, &focus);
    let made = match memo::map(&key) {
        Some(made) => made,
        None => {
            let tags: Vec<&crate::tags::FileTags> =
                collected.sources.iter().map(|s| &*s.tags).collect();
            let ranked = crate::rank::rank(&tags, &focus);
            let made = Arc::new(render(&collected, &ranked, max_tokens));
            memo::store_map(key, Arc::clone(&made));
            made
        }
    };
    let (text, result) = &*made;
    let result = RepoMapResult { parsed: collected.parsed, ..result.clone() };
    let text = text.clone();
    let structured = serde_json::to_value(&result).unwrap_or(serde_json::Value::Null);
    Ok(hands_fs::note_skipped(ToolOutput::text(text), &collected.walk_skipped)
        .with_structured(structured))
}
