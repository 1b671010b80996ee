//! glob: TODO module header.

use std::borrow::Cow;

use hands_core::{Annotations, Context, Tool, ToolError, ToolOutput};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::FsConfig;

/// Arguments of glob.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GlobArgs {
    /// Glob pattern, e.g. `**/*.rs` or `src/**/*.{ts,tsx}`. A pattern without `/` matches file
    /// names at any depth.
    pub pattern: String,
    /// Folder to search in, relative to the project root (default: the root).
    #[serde(default)]
    pub path: Option<String>,
    /// Also return files that .gitignore/.ignore exclude (default false). node_modules, .git and
    /// dist are always excluded.
    #[serde(default)]
    pub include_ignored: bool,
    /// Paths returned at most (default 1000).
    #[serde(default)]
    pub limit: Option<usize>,
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

    async fn call(&self, _ctx: Context, _args: Self::Args) -> Result<ToolOutput, ToolError> {
        let _ = &self.config;
        Err(ToolError::model("glob is not implemented yet"))
    }
}
