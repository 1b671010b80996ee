//! write_file: TODO module header.

use std::borrow::Cow;

use hands_core::{Annotations, Context, Tool, ToolError, ToolOutput};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::FsConfig;

/// Arguments of write_file.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteFileArgs {
    /// Path of the file, relative to the project root; missing parent folders are created.
    pub path: String,
    /// The complete new content of the file.
    pub content: String,
}

/// The write_file tool.
#[derive(Debug, Clone)]
pub struct WriteFile {
    config: FsConfig,
}

impl WriteFile {
    /// With `config`.
    pub fn new(config: FsConfig) -> Self {
        Self { config }
    }
}

impl Tool for WriteFile {
    type Args = WriteFileArgs;

    fn name(&self) -> &'static str {
        "write_file"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("write_file.md"))
    }

    fn annotations(&self) -> Annotations {
        Annotations { read_only: false, destructive: true, idempotent: true, open_world: false }
    }

    async fn call(&self, _ctx: Context, _args: Self::Args) -> Result<ToolOutput, ToolError> {
        let _ = &self.config;
        Err(ToolError::model("write_file is not implemented yet"))
    }
}
