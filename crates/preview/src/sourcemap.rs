//! Stack frames mapped back to the sources, when the server provides source maps.
//!
//! Flow: for a frame's script URL on the preview's server, fetch the script, take its last
//! `//# sourceMappingURL=` (a `data:` URL, as Vite's dev server inlines them, or a URL relative to
//! the script), parse the map's `mappings` (base64 VLQ, version 3) into per-line segments, and look
//! the generated line and column up. Scripts and maps are cached per URL for the page load; a
//! script without a map is remembered as such.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use base64::Engine as _;
use url::Url;

/// Scripts larger than this are not fetched for mapping.
const MAX_SCRIPT_BYTES: usize = 16 << 20;

/// A parsed version-3 source map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceMap {
    sources: Vec<String>,
    /// Per generated line (0-based), segments sorted by generated column.
    lines: Vec<Vec<Segment>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Segment {
    column: u32,
    source: u32,
    line: u32,
    source_column: u32,
}

impl SourceMap {
    /// Parse the map's JSON; `base` resolves the source names (the map's URL, or the script's for
    /// an inline map).
    pub fn parse(json: &str, base: &Url) -> Option<Self> {
        let value: serde_json::Value = serde_json::from_str(json).ok()?;
        if value["version"].as_u64() != Some(3) {
            return None;
        }
        let root = value["sourceRoot"].as_str().unwrap_or("");
        let sources = value["sources"]
            .as_array()?
            .iter()
            .map(|s| {
                let name = format!("{root}{}", s.as_str().unwrap_or(""));
                base.join(&name).map_or(name, |u| u.to_string())
            })
            .collect();
        let lines = decode_mappings(value["mappings"].as_str()?)?;
        Some(Self { sources, lines })
    }

    /// The original (source URL, line, column) of a generated 0-based line and column.
    pub fn lookup(&self, line: u32, column: u32) -> Option<(&str, u32, u32)> {
        let segments = self.lines.get(line as usize)?;
        let i = segments.partition_point(|s| s.column <= column);
        let segment = if i == 0 { segments.first()? } else { &segments[i - 1] };
        let source = self.sources.get(segment.source as usize)?;
        Some((source, segment.line, segment.source_column))
    }
}

/// Decode `mappings` into per-line segments (only 4- and 5-field segments map to a source).
fn decode_mappings(mappings: &str) -> Option<Vec<Vec<Segment>>> {
    let mut lines = Vec::new();
    let (mut source, mut line, mut source_column) = (0i64, 0i64, 0i64);
    for text in mappings.split(';') {
        let mut segments = Vec::new();
        let mut column = 0i64;
        for field in text.split(',').filter(|f| !f.is_empty()) {
            let values = vlq(field)?;
            column += values.first()?;
            if values.len() >= 4 {
                source += values[1];
                line += values[2];
                source_column += values[3];
                if column >= 0 && source >= 0 && line >= 0 && source_column >= 0 {
                    segments.push(Segment {
                        column: column as u32,
                        source: source as u32,
                        line: line as u32,
                        source_column: source_column as u32,
                    });
                }
            }
        }
        segments.sort_by_key(|s| s.column);
        lines.push(segments);
    }
    Some(lines)
}

/// The values of one base64 VLQ field.
fn vlq(field: &str) -> Option<Vec<i64>> {
    let mut values = Vec::new();
    let (mut value, mut shift) = (0i64, 0u32);
    for byte in field.bytes() {
        let digit = match byte {
            b'A'..=b'Z' => byte - b'A',
            b'a'..=b'z' => byte - b'a' + 26,
            b'0'..=b'9' => byte - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as i64;
        if shift > 60 {
            return None;
        }
        value += (digit & 31) << shift;
        if digit & 32 != 0 {
            shift += 5;
        } else {
            let negative = value & 1 == 1;
            let magnitude = value >> 1;
            values.push(if negative { -magnitude } else { magnitude });
            value = 0;
            shift = 0;
        }
    }
    Some(values)
}

/// The last `sourceMappingURL` comment of a script.
pub fn mapping_url(script: &str) -> Option<&str> {
    let at = script.rfind("sourceMappingURL=")?;
    let before = script[..at].trim_end_matches([' ', '#', '@']);
    if !before.ends_with("//") && !before.ends_with("/*") {
        return None;
    }
    let rest = &script[at + "sourceMappingURL=".len()..];
    let end = rest.find(|c: char| c.is_whitespace() || c == '*').unwrap_or(rest.len());
    Some(&rest[..end]).filter(|u| !u.is_empty())
}

/// The content of a `data:` URL (base64 or percent-free plain text).
pub fn data_url(url: &str) -> Option<String> {
    let rest = url.strip_prefix("data:")?;
    let (meta, data) = rest.split_once(',')?;
    if meta.ends_with(";base64") {
        let bytes = base64::engine::general_purpose::STANDARD.decode(data.trim()).ok()?;
        String::from_utf8(bytes).ok()
    } else {
        Some(data.to_owned())
    }
}

/// Maps frames of scripts served by the preview, with a cache per script URL.
#[derive(Debug)]
pub struct Mapper {
    http: reqwest::Client,
    cache: Mutex<HashMap<String, Option<Arc<SourceMap>>>>,
}

impl Default for Mapper {
    fn default() -> Self {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .no_proxy()
            .build()
            .unwrap_or_default();
        Self { http, cache: Mutex::default() }
    }
}

impl Mapper {
    /// Forget cached maps (a rebuild or reload may have changed them).
    pub fn clear(&self) {
        self.cache.lock().unwrap_or_else(PoisonError::into_inner).clear();
    }

    /// The map of the script at `url`, fetched once; only http(s) URLs on a loopback host are
    /// fetched.
    pub async fn map_of(&self, url: &str) -> Option<Arc<SourceMap>> {
        if let Some(cached) = self.cache.lock().unwrap_or_else(PoisonError::into_inner).get(url) {
            return cached.clone();
        }
        let map = self.fetch(url).await.map(Arc::new);
        self.cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(url.to_owned(), map.clone());
        map
    }

    async fn fetch(&self, url: &str) -> Option<SourceMap> {
        let script_url = Url::parse(url).ok()?;
        if !is_loopback(&script_url) {
            return None;
        }
        let script = self.get(&script_url).await?;
        let map_ref = mapping_url(&script)?;
        if map_ref.starts_with("data:") {
            return SourceMap::parse(&data_url(map_ref)?, &script_url);
        }
        let map_url = script_url.join(map_ref).ok()?;
        if !is_loopback(&map_url) {
            return None;
        }
        SourceMap::parse(&self.get(&map_url).await?, &map_url)
    }

    async fn get(&self, url: &Url) -> Option<String> {
        let response = self.http.get(url.clone()).send().await.ok()?;
        if !response.status().is_success() {
            return None;
        }
        let bytes = response.bytes().await.ok()?;
        if bytes.len() > MAX_SCRIPT_BYTES {
            return None;
        }
        String::from_utf8(bytes.to_vec()).ok()
    }
}

fn is_loopback(url: &Url) -> bool {
    matches!(url.scheme(), "http" | "https")
        && match url.host() {
            Some(url::Host::Domain(d)) => d == "localhost",
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            None => false,
        }
}

/// A source URL as people read it: a path relative to the project root when the source is a file
/// in it or a path on the preview's server, the URL otherwise.
pub fn display_source(source: &str, origin: Option<&Url>, root: &Path) -> String {
    let Ok(url) = Url::parse(source) else { return source.to_owned() };
    if url.scheme() == "file"
        && let Ok(path) = url.to_file_path()
    {
        return path
            .strip_prefix(root)
            .map_or_else(|_| path.display().to_string(), |rel| rel.display().to_string());
    }
    if let Some(origin) = origin
        && url.origin() == origin.origin()
    {
        let path = url.path();
        // Vite serves files outside its root as /@fs/<absolute path>.
        if let Some(abs) = path.strip_prefix("/@fs")
            && let Ok(rel) = Path::new(abs).strip_prefix(root)
        {
            return rel.display().to_string();
        }
        return path.trim_start_matches('/').to_owned();
    }
    source.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vlq_decodes_known_values() {
        assert_eq!(vlq("AAAA"), Some(vec![0, 0, 0, 0]));
        assert_eq!(vlq("AACA"), Some(vec![0, 0, 1, 0]));
        assert_eq!(vlq("D"), Some(vec![-1]));
        assert_eq!(vlq("gB"), Some(vec![16]));
        assert_eq!(vlq("2H"), Some(vec![123]));
        assert_eq!(vlq("!"), None);
    }

    #[test]
    fn lookup_finds_the_segment_at_or_before_the_column() {
        // Line 0: col 0 → a.ts 0:0; line 1: col 2 → a.ts 9:2, col 10 → a.ts 9:8.
        let json = r#"{"version":3,"sources":["a.ts"],"names":[],"mappings":"AAAA;EASE,QAAM"}"#;
        let base = Url::parse("http://127.0.0.1:5173/src/a.ts").unwrap();
        let map = SourceMap::parse(json, &base).unwrap();
        assert_eq!(map.lookup(0, 5), Some(("http://127.0.0.1:5173/src/a.ts", 0, 0)));
        assert_eq!(map.lookup(1, 4), Some(("http://127.0.0.1:5173/src/a.ts", 9, 2)));
        assert_eq!(map.lookup(1, 12), Some(("http://127.0.0.1:5173/src/a.ts", 9, 8)));
        assert_eq!(map.lookup(7, 0), None);
    }

    #[test]
    fn the_mapping_comment_and_data_urls_are_read() {
        let script = "x();\n//# sourceMappingURL=data:application/json;base64,eyJhIjoxfQ==\n";
        let url = mapping_url(script).unwrap();
        assert_eq!(data_url(url).as_deref(), Some(r#"{"a":1}"#));
        assert_eq!(mapping_url("x();\n//# sourceMappingURL=app.js.map"), Some("app.js.map"));
        assert_eq!(mapping_url("const s = 'sourceMappingURL=nope';"), None);
    }

    #[test]
    fn sources_are_shown_relative_to_the_root_or_the_server() {
        let origin = Url::parse("http://127.0.0.1:5173/").unwrap();
        let root = Path::new("/work/app");
        assert_eq!(
            display_source("http://127.0.0.1:5173/src/a.ts", Some(&origin), root),
            "src/a.ts"
        );
        assert_eq!(display_source("file:///work/app/src/b.ts", Some(&origin), root), "src/b.ts");
        assert_eq!(
            display_source("http://127.0.0.1:5173/@fs/work/app/lib/c.ts", Some(&origin), root),
            "lib/c.ts"
        );
        assert_eq!(
            display_source("https://cdn.example/x.js", Some(&origin), root),
            "https://cdn.example/x.js"
        );
    }
}
