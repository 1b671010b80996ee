//! The YAML front matter of a SKILL.md: the block between a first line `---` and the next `---`.
//! Only top-level `key: value` pairs are read — plain, single- or double-quoted, folded over
//! indented lines, or block scalars (`|`, `>`) — which is all a skill's name and description use;
//! nested maps and lists are skipped. Not a YAML parser, on purpose: two string fields do not need
//! one.

use std::collections::BTreeMap;

/// Why a text has no usable front matter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FrontMatterError {
    /// The text does not start with a `---` line.
    Missing,
    /// The opening `---` has no closing `---`.
    Unclosed,
}

/// The front matter's top-level keys, and the body after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Parsed<'a> {
    /// Top-level keys and their string values.
    pub fields: BTreeMap<String, String>,
    /// The text after the closing `---`, without leading blank lines.
    pub body: &'a str,
}

/// Split `text` into front matter and body.
pub(crate) fn parse(text: &str) -> Result<Parsed<'_>, FrontMatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    if lines.next().map(str::trim_end) != Some("---") {
        return Err(FrontMatterError::Missing);
    }
    let mut offset = text.split_inclusive('\n').next().map_or(0, str::len);
    let mut header = Vec::new();
    let mut closed = false;
    for line in lines {
        offset += line.len();
        let bare = line.trim_end();
        if bare == "---" || bare == "..." {
            closed = true;
            break;
        }
        header.push(bare);
    }
    if !closed {
        return Err(FrontMatterError::Unclosed);
    }
    let body = text[offset..].trim_start_matches(['\n', '\r']);
    Ok(Parsed { fields: fields(&header), body })
}

/// The top-level `key: value` pairs of the header lines.
fn fields(lines: &[&str]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        let top_level = !line.starts_with([' ', '\t']);
        let Some((key, raw)) = line.split_once(':').filter(|_| top_level) else { continue };
        let key = key.trim();
        if key.is_empty() || key.starts_with('#') || key.starts_with('-') {
            continue;
        }
        // The value's continuation: the indented (or blank) lines up to the next top-level line.
        let start = i;
        while i < lines.len() && (lines[i].trim().is_empty() || lines[i].starts_with([' ', '\t'])) {
            i += 1;
        }
        let more = &lines[start..i];
        let raw = raw.trim();
        let value = if raw.starts_with(['|', '>']) {
            block(raw.starts_with('>'), more)
        } else {
            let mut joined = fold(std::iter::once(raw).chain(more.iter().copied()));
            if joined.starts_with('"') {
                joined = double_quoted(&joined[1..]);
            } else if joined.starts_with('\'') {
                joined = single_quoted(&joined[1..]);
            } else if let Some(at) = joined.find(" #") {
                joined.truncate(at);
            }
            joined.trim().to_owned()
        };
        out.insert(key.to_owned(), value);
    }
    out
}

/// Plain multi-line folding: lines joined by spaces, a blank line becomes a newline.
fn fold<'a>(lines: impl Iterator<Item = &'a str>) -> String {
    let mut out = String::new();
    for line in lines {
        let line = line.trim();
        if line.is_empty() {
            out.push('\n');
        } else {
            if !out.is_empty() && !out.ends_with('\n') {
                out.push(' ');
            }
            out.push_str(line);
        }
    }
    out.trim().to_owned()
}

/// A block scalar: literal (`|`) keeps line breaks, folded (`>`) joins lines with spaces.
fn block(folded: bool, lines: &[&str]) -> String {
    let indent = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let lines: Vec<&str> = lines.iter().map(|l| l.get(indent..).unwrap_or("")).collect();
    if folded { fold(lines.into_iter()) } else { lines.join("\n").trim().to_owned() }
}

/// The rest of a `"…"` scalar after its opening quote, with escapes resolved.
fn double_quoted(rest: &str) -> String {
    let mut out = String::new();
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => break,
            '\\' => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(other) => out.push(other),
                None => break,
            },
            c => out.push(c),
        }
    }
    out
}

/// The rest of a `'…'` scalar after its opening quote (`''` is a quote).
fn single_quoted(rest: &str) -> String {
    let mut out = String::new();
    let mut chars = rest.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\'' {
            if chars.peek() == Some(&'\'') {
                chars.next();
                out.push('\'');
            } else {
                break;
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(text: &str, key: &str) -> Option<String> {
        parse(text).unwrap().fields.get(key).cloned()
    }

    #[test]
    fn plain_values_and_body() {
        let text = "---\nname: pdf\ndescription: Read PDFs # a comment\n---\n\n# PDF\nUse it.\n";
        let parsed = parse(text).unwrap();
        assert_eq!(parsed.fields["name"], "pdf");
        assert_eq!(parsed.fields["description"], "Read PDFs");
        assert_eq!(parsed.body, "# PDF\nUse it.\n");
    }

    #[test]
    fn quoted_values() {
        assert_eq!(
            field("---\ndescription: \"Say \\\"hi\\\": to # all\"\n---\n", "description").unwrap(),
            "Say \"hi\": to # all"
        );
        assert_eq!(field("---\nname: 'it''s: x'\n---\n", "name").unwrap(), "it's: x");
        assert_eq!(
            field("---\ndescription: \"two\n  lines\"\n---\n", "description").unwrap(),
            "two lines"
        );
    }

    #[test]
    fn block_and_folded_values() {
        let text =
            "---\nname: x\ndescription: >-\n  Folded\n  text.\nmeta: |\n  a\n    b\n---\nbody";
        assert_eq!(field(text, "description").unwrap(), "Folded text.");
        assert_eq!(field(text, "meta").unwrap(), "a\n  b");
        let text = "---\ndescription: plain\n  continued\n---\n";
        assert_eq!(field(text, "description").unwrap(), "plain continued");
    }

    #[test]
    fn nested_maps_and_lists_are_skipped() {
        let text = "---\nname: x\nmetadata:\n  author: me\nallowed-tools:\n  - bash\ndescription: d\n---\n";
        let parsed = parse(text).unwrap();
        assert_eq!(parsed.fields["name"], "x");
        assert_eq!(parsed.fields["description"], "d");
        assert!(!parsed.fields.contains_key("author"));
    }

    #[test]
    fn crlf_and_bom() {
        let parsed = parse("\u{feff}---\r\nname: x\r\n---\r\nbody\r\n").unwrap();
        assert_eq!(parsed.fields["name"], "x");
        assert_eq!(parsed.body, "body\r\n");
    }

    #[test]
    fn missing_and_unclosed() {
        assert_eq!(parse("# Title\nname: x\n"), Err(FrontMatterError::Missing));
        assert_eq!(parse(""), Err(FrontMatterError::Missing));
        assert_eq!(parse("---\nname: x\n"), Err(FrontMatterError::Unclosed));
    }
}
