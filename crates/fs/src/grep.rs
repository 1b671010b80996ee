//! grep: TODO module header.

use std::borrow::Cow;

use hands_core::{Annotations, Context, Tool, ToolError, ToolOutput};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::FsConfig;

/// What grep returns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OutputMode {
    /// Matching lines as `path:line:text`.
    #[default]
    Content,
    /// Paths of files with a match.
    Files,
    /// Number of matching lines per file, as `path:count`.
    Count,
}

/// Arguments of grep.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrepArgs {
    /// Regular expression (Rust regex syntax), e.g. `fn\s+main` or `TODO`.
    pub pattern: String,
    /// Only search files whose name (or path, if it has `/`) matches this glob, e.g. `*.ts` or
    /// `*.{ts,tsx}`.
    #[serde(default)]
    pub include: Option<String>,
    /// File or folder to search, relative to the project root (default: the root).
    #[serde(default)]
    pub path: Option<String>,
    /// Match without regard to case (default false).
    #[serde(default)]
    pub case_insensitive: bool,
    /// Lines of context to show before and after each match (default 0).
    #[serde(default)]
    pub context: Option<usize>,
    /// `content` (default), `files` or `count`.
    #[serde(default)]
    pub output_mode: OutputMode,
    /// Results returned at most (default 50).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Results to skip first, for paging (default 0).
    #[serde(default)]
    pub offset: Option<usize>,
}

/// The grep tool.
#[derive(Debug, Clone)]
pub struct Grep {
    config: FsConfig,
}

impl Grep {
    /// With `config`.
    pub fn new(config: FsConfig) -> Self {
        Self { config }
    }
}

impl Tool for Grep {
    type Args = GrepArgs;

    fn name(&self) -> &'static str {
        "grep"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("grep.md"))
    }

    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY
    }

    async fn call(&self, _ctx: Context, _args: Self::Args) -> Result<ToolOutput, ToolError> {
        let _ = &self.config;
        Err(ToolError::model("grep is not implemented yet"))
    }
}
