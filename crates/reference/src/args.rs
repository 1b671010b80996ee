//! reference_project's arguments, and the file tool's own arguments built from them: each op
//! takes the fields of the tool it runs (a field that does not apply is refused, naming the
//! fields that do), so the model learns one set of names for both workspaces.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};

use hands_core::ToolError;

/// What to do in the reference project.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// Read a file (like read_file): `path`, `offset?`, `limit?`.
    Read,
    /// List a folder as a tree (like list_files): `path?`, `depth?`.
    List,
    /// Find files by glob (like glob): `pattern`, `path?`, `include_ignored?`, `limit?`.
    Glob,
    /// Search file contents by regex (like grep): `pattern`, `path?`, `include?`,
    /// `include_ignored?`, `case_insensitive?`, `context?`, `output_mode?`, `limit?`, `offset?`.
    Grep,
}

impl Op {
    /// The op's name, as the model writes it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::List => "list",
            Self::Glob => "glob",
            Self::Grep => "grep",
        }
    }

    /// The fields the op takes (the first ones listed in `required` are required).
    fn fields(self) -> (&'static [&'static str], &'static [&'static str]) {
        match self {
            Self::Read => (&["path"], &["path", "offset", "limit"]),
            Self::List => (&[], &["path", "depth"]),
            Self::Glob => (&["pattern"], &["pattern", "path", "include_ignored", "limit"]),
            Self::Grep => (
                &["pattern"],
                &[
                    "pattern",
                    "path",
                    "include",
                    "include_ignored",
                    "case_insensitive",
                    "context",
                    "output_mode",
                    "limit",
                    "offset",
                ],
            ),
        }
    }
}

/// grep's output modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum GrepMode {
    /// Matching lines as `path:line:text` (the default).
    Content,
    /// Paths of files with a match.
    Files,
    /// Matching lines per file, as `path:count`.
    Count,
}

/// Arguments of reference_project.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReferenceProjectArgs {
    /// The reference project, by its name in the user's `[reference_projects]` (the tool's
    /// description lists them).
    pub project: String,
    /// `read`, `list`, `glob` or `grep`.
    pub op: Op,
    /// read: the file; list, glob, grep: the folder (default: the project's root); grep: also a
    /// single file. Relative to the reference project's root.
    #[serde(default)]
    pub path: Option<String>,
    /// glob: the glob (`**/*.ts`); grep: the regular expression (Rust regex syntax).
    #[serde(default)]
    pub pattern: Option<String>,
    /// read: the first line, 1-based; grep: results to skip, for paging.
    #[serde(default)]
    pub offset: Option<u64>,
    /// read: lines to return (default 2000); glob, grep: results at most.
    #[serde(default)]
    pub limit: Option<u64>,
    /// list: levels to show (default 2).
    #[serde(default)]
    pub depth: Option<u64>,
    /// grep: only files whose name (or path, with `/`) matches this glob, e.g. `*.ts`.
    #[serde(default)]
    pub include: Option<String>,
    /// glob, grep: also files that .gitignore excludes (default false).
    #[serde(default)]
    pub include_ignored: Option<bool>,
    /// grep: match without regard to case (default false).
    #[serde(default)]
    pub case_insensitive: Option<bool>,
    /// grep: lines of context before and after each match (default 0).
    #[serde(default)]
    pub context: Option<u64>,
    /// grep: `content` (default), `files` or `count`.
    #[serde(default)]
    pub output_mode: Option<GrepMode>,
}

impl ReferenceProjectArgs {
    /// The given fields other than `project` and `op`, by name.
    fn given(&self) -> Map<String, Value> {
        let mut map = Map::new();
        let mut put = |name: &str, value: Option<Value>| {
            if let Some(value) = value {
                map.insert(name.to_owned(), value);
            }
        };
        put("path", self.path.clone().map(Value::from));
        put("pattern", self.pattern.clone().map(Value::from));
        put("offset", self.offset.map(Value::from));
        put("limit", self.limit.map(Value::from));
        put("depth", self.depth.map(Value::from));
        put("include", self.include.clone().map(Value::from));
        put("include_ignored", self.include_ignored.map(Value::from));
        put("case_insensitive", self.case_insensitive.map(Value::from));
        put("context", self.context.map(Value::from));
        let mode = self.output_mode.map(|m| match m {
            GrepMode::Content => "content",
            GrepMode::Files => "files",
            GrepMode::Count => "count",
        });
        put("output_mode", mode.map(Value::from));
        map
    }

    /// The op's own tool arguments (`T`: read_file's, list_files', glob's or grep's), refusing a
    /// field the op does not take and a missing required one.
    pub fn for_op<T: serde::de::DeserializeOwned>(&self) -> Result<T, ToolError> {
        let (required, takes) = self.op.fields();
        let given = self.given();
        let op = self.op.name();
        let list = |names: &[&str]| {
            if names.is_empty() {
                "no other field".to_owned()
            } else {
                names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
            }
        };
        if let Some(extra) = given.keys().find(|k| !takes.contains(&k.as_str())) {
            return Err(ToolError::model(format!(
                "`{extra}` does not apply to op `{op}`, which takes {}.",
                list(takes)
            )));
        }
        if let Some(missing) = required.iter().find(|r| !given.contains_key(**r)) {
            return Err(ToolError::model(format!(
                "op `{op}` needs `{missing}` (it takes {}).",
                list(takes)
            )));
        }
        serde_json::from_value(Value::Object(given)).map_err(|err| {
            ToolError::model(format!("The arguments of op `{op}` do not fit: {err}."))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(json: Value) -> ReferenceProjectArgs {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn each_op_takes_its_tools_fields() {
        let read = args(serde_json::json!({"project": "p", "op": "read", "path": "a", "limit": 3}));
        let parsed: hands_fs::ReadFileArgs = read.for_op().unwrap();
        assert_eq!((parsed.path.as_str(), parsed.limit), ("a", Some(3)));
        let grep = args(serde_json::json!({
            "project": "p", "op": "grep", "pattern": "x", "output_mode": "files", "context": 1
        }));
        let parsed: hands_fs::GrepArgs = grep.for_op().unwrap();
        assert_eq!(parsed.output_mode, hands_fs::OutputMode::Files);
        let list = args(serde_json::json!({"project": "p", "op": "list", "depth": 1}));
        let parsed: hands_fs::ListFilesArgs = list.for_op().unwrap();
        assert_eq!(parsed.depth, Some(1));
    }

    #[test]
    fn fields_of_another_op_and_missing_ones_are_named() {
        let bad = args(serde_json::json!({"project": "p", "op": "read", "path": "a", "depth": 2}));
        let err = bad.for_op::<hands_fs::ReadFileArgs>().unwrap_err().to_string();
        assert!(err.contains("`depth` does not apply to op `read`"), "{err}");
        assert!(err.contains("`path`, `offset`, `limit`"), "{err}");
        let missing = args(serde_json::json!({"project": "p", "op": "glob"}));
        let err = missing.for_op::<hands_fs::GlobArgs>().unwrap_err().to_string();
        assert!(err.contains("op `glob` needs `pattern`"), "{err}");
    }
}
