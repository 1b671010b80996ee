//! glob: files whose name or path matches a pattern, newest first.
//!
//! Flow: check the pattern and the folder, walk in parallel (walk.rs), keep per thread only the
//! `limit` newest matches in a bounded heap (ties by path), merge the heaps, and report the rest as a
//! count, so that memory stays bounded whatever the tree.

use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::SystemTime;

use hands_core::{Annotations, Context, Tool, ToolError, ToolOutput};
use hands_core::{Family, Label, Policy};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::FsConfig;
use crate::walk::{self, FileGlob, Start, WalkSpec};

/// Arguments of glob.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GlobArgs {
    /// Glob pattern.
    pub pattern: String,
    /// Folder to search (default: the project root).
    #[serde(default)]
    pub path: Option<String>,
    /// Include gitignored files too.
    #[serde(default)]
    pub include_ignored: bool,
    /// Paths returned at most (default 1000).
    #[serde(default)]
    pub limit: Option<usize>,
}

/// The structured result of glob.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct GlobResult {
    /// Matching paths relative to the project root, newest first.
    pub paths: Vec<String>,
    /// How many files matched in all.
    pub total: usize,
    /// True when `total` is more than the paths returned.
    pub truncated: bool,
}

/// The glob tool.
#[derive(Debug, Clone)]
pub struct Glob {
    config: FsConfig,
}

impl Glob {
    /// With `config`.
    pub fn new(config: FsConfig) -> Self {
        Self { config }
    }
}

impl Tool for Glob {
    type Args = GlobArgs;

    fn name(&self) -> &'static str {
        "glob"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("glob.md"))
    }

    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY
    }

    fn policy(&self) -> Policy {
        Policy::from_annotations(self.annotations())
            .label(Label::In { what: "pattern", place: "path" })
            .family(Family::Search)
            .timeout_ms(60_000)
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        Some(hands_core::output_schema_for::<GlobResult>())
    }

    async fn call(&self, ctx: Context, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let config = self.config.clone();
        let task = tokio::task::spawn_blocking(move || run(&ctx, &config, &args));
        task.await.map_err(|e| ToolError::Fatal(format!("glob task failed: {e}")))?
    }
}

/// One match: newer first, then by path.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Hit {
    newest: Reverse<SystemTime>,
    path: String,
}

#[derive(Default)]
struct ThreadHits {
    /// The `limit` best hits so far; the top is the worst of them.
    best: BinaryHeap<Hit>,
    total: usize,
}

fn run(ctx: &Context, config: &FsConfig, args: &GlobArgs) -> Result<ToolOutput, ToolError> {
    let ws = crate::Workspace::of(ctx)?;
    let glob = FileGlob::new("pattern", &args.pattern)?;
    let start = match walk::start(&ws, "path", args.path.as_deref())? {
        Start::Dir(rel) => rel,
        Start::File(rel) => {
            return Err(ToolError::model(format!(
                "`path` {} is a file; glob searches a folder. Use read_file to read it, or give \
                 its folder as `path`.",
                rel.display()
            )));
        }
    };
    let limit = args.limit.unwrap_or(config.glob_limit).max(1);
    let root = ws.root().to_path_buf();
    let base = root.join(start.as_path());
    let spec = WalkSpec {
        start: start.clone(),
        include_ignored: args.include_ignored,
        hidden: ws.hidden().cloned(),
    };
    let (states, skipped) = walk::run_spec(
        &root,
        &spec,
        config,
        ctx.cancel_token(),
        ThreadHits::default,
        |hits, entry| {
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return ignore::WalkState::Continue;
            }
            let path = entry.path();
            let Ok(under_base) = path.strip_prefix(&base) else {
                return ignore::WalkState::Continue;
            };
            if !glob.is_match(under_base) {
                return ignore::WalkState::Continue;
            }
            hits.total += 1;
            let mtime = entry
                .metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            let newest = Reverse(mtime);
            // Only build the path string when the hit can enter the heap.
            if hits.best.len() >= limit
                && hits.best.peek().is_some_and(|worst| worst.newest < newest)
            {
                return ignore::WalkState::Continue;
            }
            hits.best.push(Hit { newest, path: walk::relative(path, &root) });
            if hits.best.len() > limit {
                hits.best.pop();
            }
            ignore::WalkState::Continue
        },
    );
    if ctx.is_cancelled() {
        return Err(walk::cancelled("glob"));
    }
    let total: usize = states.iter().map(|s| s.total).sum();
    let mut all: Vec<Hit> = states.into_iter().flat_map(|s| s.best.into_vec()).collect();
    all.sort_unstable();
    all.truncate(limit);
    let paths: Vec<String> = all.into_iter().map(|h| h.path).collect();
    Ok(walk::note_skipped(render(&args.pattern, &start, paths, total), &skipped))
}

fn render(pattern: &str, start: &crate::RelPath, paths: Vec<String>, total: usize) -> ToolOutput {
    let truncated = total > paths.len();
    let text = if paths.is_empty() {
        let place = if start.is_root() { "the project root".to_owned() } else { start.display() };
        format!(
            "No files match {pattern:?} under {place}. (node_modules, .git and dist are never \
             searched; set include_ignored=true to search gitignored files too.)"
        )
    } else {
        // A name with a newline must not forge lines of the listing.
        let shown: Vec<_> = paths.iter().map(|p| crate::escape::escape_name(p)).collect();
        let mut text = shown.join("\n");
        if truncated {
            text.push_str(&format!(
                "\n… and {} more; narrow the pattern (or set `path`).",
                total - paths.len()
            ));
        }
        text
    };
    let result = GlobResult { paths, total, truncated };
    let structured = serde_json::to_value(&result).unwrap_or(serde_json::Value::Null);
    ToolOutput::text(text).with_structured(structured)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn hit(secs: u64, path: &str) -> Hit {
        Hit {
            newest: Reverse(SystemTime::UNIX_EPOCH + Duration::from_secs(secs)),
            path: path.into(),
        }
    }

    #[test]
    fn hits_sort_newest_first_then_by_path() {
        let mut v = [hit(1, "a"), hit(3, "z"), hit(3, "b"), hit(2, "c")];
        v.sort();
        let order: Vec<&str> = v.iter().map(|h| h.path.as_str()).collect();
        assert_eq!(order, ["b", "z", "c", "a"]);
    }

    #[test]
    fn render_reports_the_rest_and_no_match() {
        let root = crate::Workspace::open(std::path::Path::new("."))
            .unwrap()
            .resolve("path", ".")
            .unwrap();
        let out = render("*.rs", &root, vec!["a.rs".into()], 5);
        assert!(out.joined_text().contains("… and 4 more; narrow the pattern"));
        assert_eq!(out.structured.unwrap()["truncated"], true);
        let out = render("*.zz", &root, vec![], 0);
        assert!(!out.is_error);
        assert!(out.joined_text().starts_with("No files match"));
    }

    /// Review finding 9: the no-match message named the root `.`; it says "the project root", and
    /// a subfolder by its path.
    #[test]
    fn review_finding_9_no_match_names_the_project_root() {
        let ws = crate::Workspace::open(std::path::Path::new(".")).unwrap();
        let out = render("*.zz", &ws.resolve("path", ".").unwrap(), vec![], 0);
        assert!(out.joined_text().starts_with("No files match \"*.zz\" under the project root."));
        let out = render("*.zz", &ws.resolve("path", "src").unwrap(), vec![], 0);
        assert!(out.joined_text().starts_with("No files match \"*.zz\" under src."));
    }
}
