//! edit_file: TODO module header.

use std::borrow::Cow;

use hands_core::{Annotations, Context, Tool, ToolError, ToolOutput};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::FsConfig;

/// Arguments of edit_file.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditFileArgs {
    /// Path of the file to edit, relative to the project root.
    pub path: String,
    /// The exact text to replace; it must occur exactly once unless `replace_all` is true.
    pub old_string: String,
    /// The text to put in its place (must differ from `old_string`).
    pub new_string: String,
    /// Replace every occurrence instead of requiring exactly one (default false).
    #[serde(default)]
    pub replace_all: bool,
}

/// The edit_file tool.
#[derive(Debug, Clone)]
pub struct EditFile {
    config: FsConfig,
}

impl EditFile {
    /// With `config`.
    pub fn new(config: FsConfig) -> Self {
        Self { config }
    }
}

impl Tool for EditFile {
    type Args = EditFileArgs;

    fn name(&self) -> &'static str {
        "edit_file"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("edit_file.md"))
    }

    fn annotations(&self) -> Annotations {
        Annotations { read_only: false, destructive: true, idempotent: false, open_world: false }
    }

    async fn call(&self, _ctx: Context, _args: Self::Args) -> Result<ToolOutput, ToolError> {
        let _ = &self.config;
        Err(ToolError::model("edit_file is not implemented yet"))
    }
}
