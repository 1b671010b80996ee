//! list_files: TODO module header.

use std::borrow::Cow;

use hands_core::{Annotations, Context, Tool, ToolError, ToolOutput};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::FsConfig;

/// Arguments of list_files.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListFilesArgs {
    /// Folder to list, relative to the project root (default: the root).
    #[serde(default)]
    pub path: Option<String>,
    /// How many levels deep to list (default 2).
    #[serde(default)]
    pub depth: Option<usize>,
}

/// The list_files tool.
#[derive(Debug, Clone)]
pub struct ListFiles {
    config: FsConfig,
}

impl ListFiles {
    /// With `config`.
    pub fn new(config: FsConfig) -> Self {
        Self { config }
    }
}

impl Tool for ListFiles {
    type Args = ListFilesArgs;

    fn name(&self) -> &'static str {
        "list_files"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("list_files.md"))
    }

    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY
    }

    async fn call(&self, _ctx: Context, _args: Self::Args) -> Result<ToolOutput, ToolError> {
        let _ = &self.config;
        Err(ToolError::model("list_files is not implemented yet"))
    }
}
