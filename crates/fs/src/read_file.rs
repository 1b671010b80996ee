//! read_file: TODO module header.

use std::borrow::Cow;

use hands_core::{Annotations, Context, Tool, ToolError, ToolOutput};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::FsConfig;

/// Arguments of read_file.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFileArgs {
    /// Path of the file, relative to the project root (or absolute inside it).
    pub path: String,
    /// First line to return, 1-based (default 1).
    #[serde(default)]
    pub offset: Option<u64>,
    /// How many lines to return (default 2000).
    #[serde(default)]
    pub limit: Option<u64>,
}

/// The read_file tool.
#[derive(Debug, Clone)]
pub struct ReadFile {
    config: FsConfig,
}

impl ReadFile {
    /// With `config`.
    pub fn new(config: FsConfig) -> Self {
        Self { config }
    }
}

impl Tool for ReadFile {
    type Args = ReadFileArgs;

    fn name(&self) -> &'static str {
        "read_file"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("read_file.md"))
    }

    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY
    }

    async fn call(&self, _ctx: Context, _args: Self::Args) -> Result<ToolOutput, ToolError> {
        let _ = &self.config;
        Err(ToolError::model("read_file is not implemented yet"))
    }
}
