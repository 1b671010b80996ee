//! The navigation requests: a position from 1-based line and column (or a symbol's name), the
//! request to the file's server, and its answer as root-relative hits with a line of context.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use lsp_types::request::{
    DocumentSymbolRequest, GotoDefinition, HoverRequest, References, WorkspaceSymbolRequest,
};
use lsp_types::{
    DocumentSymbolResponse, GotoDefinitionResponse, HoverContents, Location, MarkedString, OneOf,
    Position, SymbolKind, TextDocumentIdentifier, TextDocumentPositionParams,
    WorkspaceSymbolResponse,
};
use schemars::JsonSchema;
use serde::Serialize;

use crate::rpc::RpcError;
use crate::server::Server;
use crate::uri;

/// Characters of a context line kept (like grep's cut).
pub const MAX_LINE_CHARS: usize = 500;

/// One place in the code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Hit {
    /// Path relative to the project root (absolute when outside it: a library's types).
    pub path: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column, in characters.
    pub column: u32,
    /// A symbol's name (symbols only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A symbol's kind: `function`, `class`, `variable`… (symbols only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// What contains the symbol (a class, a module), when the server says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// How deep the symbol is nested in its file (document symbols: 0 at the top).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth: Option<u32>,
    /// The line there, cut at 500 characters.
    pub text: String,
}

/// What a request failed on, for the model.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// The server failed or went away.
    #[error(transparent)]
    Rpc(#[from] RpcError),
    /// The server did not answer in time.
    #[error("the language server did not answer within {0} ms")]
    Timeout(u64),
}

/// The requests against one server.
pub struct Query<'a> {
    /// The server.
    pub server: &'a Arc<Server>,
    /// The project root.
    pub root: &'a Path,
    /// The limit of one request.
    pub timeout: Duration,
}

impl Query<'_> {
    async fn bounded<T>(
        &self,
        f: impl Future<Output = Result<T, RpcError>>,
    ) -> Result<T, QueryError> {
        match tokio::time::timeout(self.timeout, f).await {
            Ok(r) => Ok(r?),
            Err(_) => Err(QueryError::Timeout(self.timeout.as_millis() as u64)),
        }
    }

    fn position(path: &Path, line: u32, column: u32) -> Option<TextDocumentPositionParams> {
        let text = line_of(path, line).unwrap_or_default();
        let character = utf16_of(&text, column.saturating_sub(1));
        Some(TextDocumentPositionParams {
            text_document: TextDocumentIdentifier { uri: uri::from_path(path)? },
            position: Position { line: line.saturating_sub(1), character },
        })
    }

    /// Where what is at `line`:`column` of `path` is defined.
    pub async fn definition(
        &self,
        path: &Path,
        line: u32,
        column: u32,
    ) -> Result<Vec<Hit>, QueryError> {
        let Some(at) = Self::position(path, line, column) else { return Ok(Vec::new()) };
        let params = lsp_types::GotoDefinitionParams {
            text_document_position_params: at,
            work_done_progress_params: Default::default(),
            partial_result_params: Default::default(),
        };
        let answer = self.bounded(self.server.rpc.request::<GotoDefinition>(params)).await?;
        let locations = match answer {
            None => Vec::new(),
            Some(GotoDefinitionResponse::Scalar(l)) => vec![l],
            Some(GotoDefinitionResponse::Array(ls)) => ls,
            Some(GotoDefinitionResponse::Link(links)) => links
                .into_iter()
                .map(|l| Location { uri: l.target_uri, range: l.target_selection_range })
                .collect(),
        };
        Ok(locations.iter().filter_map(|l| self.hit(l, None)).collect())
    }

    /// Every reference to what is at `line`:`column` of `path`, its declaration included.
    pub async fn references(
        &self,
        path: &Path,
        line: u32,
        column: u32,
    ) -> Result<Vec<Hit>, QueryError> {
        let Some(at) = Self::position(path, line, column) else { return Ok(Vec::new()) };
        let params = lsp_types::ReferenceParams {
            text_document_position: at,
            context: lsp_types::ReferenceContext { include_declaration: true },
            work_done_progress_params: Default::default(),
            partial_result_params: Default::default(),
        };
        let answer = self.bounded(self.server.rpc.request::<References>(params)).await?;
        Ok(answer.unwrap_or_default().iter().filter_map(|l| self.hit(l, None)).collect())
    }

    /// The type and docs of what is at `line`:`column` of `path`, as text.
    pub async fn hover(
        &self,
        path: &Path,
        line: u32,
        column: u32,
    ) -> Result<Option<String>, QueryError> {
        let Some(at) = Self::position(path, line, column) else { return Ok(None) };
        let params = lsp_types::HoverParams {
            text_document_position_params: at,
            work_done_progress_params: Default::default(),
        };
        let answer = self.bounded(self.server.rpc.request::<HoverRequest>(params)).await?;
        let marked = |m: MarkedString| match m {
            MarkedString::String(s) => s,
            MarkedString::LanguageString(l) => format!("```{}\n{}\n```", l.language, l.value),
        };
        Ok(answer
            .map(|h| match h.contents {
                HoverContents::Scalar(m) => marked(m),
                HoverContents::Array(ms) => {
                    ms.into_iter().map(marked).collect::<Vec<_>>().join("\n\n")
                }
                HoverContents::Markup(m) => m.value,
            })
            .filter(|t| !t.trim().is_empty()))
    }

    /// The symbols of `path`, outline order, nested ones after their parent.
    pub async fn document_symbols(&self, path: &Path) -> Result<Vec<Hit>, QueryError> {
        let Some(uri) = uri::from_path(path) else { return Ok(Vec::new()) };
        let params = lsp_types::DocumentSymbolParams {
            text_document: TextDocumentIdentifier { uri: uri.clone() },
            work_done_progress_params: Default::default(),
            partial_result_params: Default::default(),
        };
        let answer = self.bounded(self.server.rpc.request::<DocumentSymbolRequest>(params)).await?;
        let mut hits = Vec::new();
        match answer {
            None => {}
            Some(DocumentSymbolResponse::Flat(list)) => {
                for s in list {
                    let mut hit = self.hit(&s.location, Some((s.name, s.kind)));
                    if let Some(h) = &mut hit {
                        h.container = s.container_name;
                        h.depth = Some(0);
                    }
                    hits.extend(hit);
                }
            }
            Some(DocumentSymbolResponse::Nested(tree)) => {
                let mut stack: Vec<(lsp_types::DocumentSymbol, u32, Option<String>)> =
                    tree.into_iter().rev().map(|s| (s, 0, None)).collect();
                while let Some((s, depth, parent)) = stack.pop() {
                    let location = Location { uri: uri.clone(), range: s.selection_range };
                    if let Some(mut hit) = self.hit(&location, Some((s.name.clone(), s.kind))) {
                        hit.container = parent;
                        hit.depth = Some(depth);
                        hits.push(hit);
                    }
                    for child in s.children.unwrap_or_default().into_iter().rev() {
                        stack.push((child, depth + 1, Some(s.name.clone())));
                    }
                }
            }
        }
        Ok(hits)
    }

    /// The symbols of the workspace whose name matches `query` (as the server matches: usually
    /// fuzzy, by prefix or substring).
    pub async fn workspace_symbols(&self, query: &str) -> Result<Vec<Hit>, QueryError> {
        let params = lsp_types::WorkspaceSymbolParams {
            query: query.to_owned(),
            work_done_progress_params: Default::default(),
            partial_result_params: Default::default(),
        };
        let answer =
            self.bounded(self.server.rpc.request::<WorkspaceSymbolRequest>(params)).await?;
        let mut hits = Vec::new();
        match answer {
            None => {}
            Some(WorkspaceSymbolResponse::Flat(list)) => {
                for s in list {
                    let mut hit = self.hit(&s.location, Some((s.name, s.kind)));
                    if let Some(h) = &mut hit {
                        h.container = s.container_name;
                    }
                    hits.extend(hit);
                }
            }
            Some(WorkspaceSymbolResponse::Nested(list)) => {
                for s in list {
                    let OneOf::Left(location) = s.location else { continue };
                    let mut hit = self.hit(&location, Some((s.name, s.kind)));
                    if let Some(h) = &mut hit {
                        h.container = s.container_name;
                    }
                    hits.extend(hit);
                }
            }
        }
        Ok(hits)
    }

    fn hit(&self, location: &Location, symbol: Option<(String, SymbolKind)>) -> Option<Hit> {
        let path = uri::to_path(&location.uri)?;
        let start = location.range.start;
        // A place outside the root (a library, or a file an import reaches out to) is named, but
        // its line is not read: nothing outside the project is shown.
        let inside = std::fs::canonicalize(&path).is_ok_and(|real| {
            real.starts_with(std::fs::canonicalize(self.root).unwrap_or_else(|_| self.root.into()))
        });
        let text =
            if inside { line_of(&path, start.line + 1).unwrap_or_default() } else { String::new() };
        // Redacted whole before the cut (a secret cut in two is no longer found).
        let text = hands_core::redact::text(&text).into_owned();
        let column = chars_of(&text, start.character) + 1;
        let (name, kind) = match symbol {
            Some((name, kind)) => (Some(name), Some(kind_name(kind).to_owned())),
            None => (None, None),
        };
        Some(Hit {
            path: shown(self.root, &path),
            line: start.line + 1,
            column,
            name,
            kind,
            container: None,
            depth: None,
            text: text.trim_end().chars().take(MAX_LINE_CHARS).collect(),
        })
    }
}

/// A path as results show it: relative to the root when under it.
pub fn shown(root: &Path, path: &Path) -> String {
    match path.strip_prefix(root) {
        Ok(rel) => rel.to_string_lossy().into_owned(),
        Err(_) => path.to_string_lossy().into_owned(),
    }
}

/// Line `n` (1-based) of the file at `path`.
fn line_of(path: &Path, n: u32) -> Option<String> {
    let text = std::fs::read_to_string(PathBuf::from(path)).ok()?;
    text.lines().nth(n.checked_sub(1)? as usize).map(str::to_owned)
}

/// The UTF-16 offset of the `chars`th character of `line`.
fn utf16_of(line: &str, chars: u32) -> u32 {
    line.chars().take(chars as usize).map(|c| c.len_utf16() as u32).sum::<u32>()
        + chars.saturating_sub(line.chars().count() as u32)
}

/// How many characters of `line` the UTF-16 offset `units` covers.
fn chars_of(line: &str, units: u32) -> u32 {
    let mut seen = 0;
    let mut chars = 0;
    for c in line.chars() {
        if seen >= units {
            break;
        }
        seen += c.len_utf16() as u32;
        chars += 1;
    }
    chars
}

fn kind_name(kind: SymbolKind) -> &'static str {
    match kind {
        SymbolKind::FILE => "file",
        SymbolKind::MODULE => "module",
        SymbolKind::NAMESPACE => "namespace",
        SymbolKind::PACKAGE => "package",
        SymbolKind::CLASS => "class",
        SymbolKind::METHOD => "method",
        SymbolKind::PROPERTY => "property",
        SymbolKind::FIELD => "field",
        SymbolKind::CONSTRUCTOR => "constructor",
        SymbolKind::ENUM => "enum",
        SymbolKind::INTERFACE => "interface",
        SymbolKind::FUNCTION => "function",
        SymbolKind::VARIABLE => "variable",
        SymbolKind::CONSTANT => "constant",
        SymbolKind::STRING => "string",
        SymbolKind::NUMBER => "number",
        SymbolKind::BOOLEAN => "boolean",
        SymbolKind::ARRAY => "array",
        SymbolKind::OBJECT => "object",
        SymbolKind::KEY => "key",
        SymbolKind::NULL => "null",
        SymbolKind::ENUM_MEMBER => "enum_member",
        SymbolKind::STRUCT => "struct",
        SymbolKind::EVENT => "event",
        SymbolKind::OPERATOR => "operator",
        SymbolKind::TYPE_PARAMETER => "type_parameter",
        _ => "symbol",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_convert_between_characters_and_utf16() {
        let line = "const é = '😀'; x";
        assert_eq!(utf16_of(line, 6), 6);
        assert_eq!(utf16_of(line, 13), 14, "the emoji is two units");
        assert_eq!(chars_of(line, 14), 13);
        assert_eq!(chars_of("ab", 0), 0);
    }
}
