//! The V4A patch format that apply_patch takes (the one OpenAI's Codex models write):
//!
//! ```text
//! *** Begin Patch
//! *** Add File: path            then every line `+text`
//! *** Delete File: path
//! *** Update File: path
//! *** Move to: new/path         optional, right after Update File
//! @@ anchor line                optional anchors (several in a row narrow down step by step)
//!  context line                 ` ` context, `-` removed, `+` added; an empty line is empty context
//! *** End of File               optional: the hunk ends at the end of the file
//! *** End Patch
//! ```
//!
//! Parsing is lenient where models are sloppy and nothing can go wrong: markers may be padded
//! with spaces, a heredoc wrapper (`<<'EOF'` … `EOF`) is dropped, the first hunk of a file may
//! leave out its `@@`, a git-style `@@ -1,3 +1,4 @@` header counts as a bare `@@`, and CRLF line
//! breaks in the patch are read as LF.

/// A parsed patch: its file sections in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Patch {
    pub(crate) ops: Vec<Op>,
}

/// One file section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Op {
    /// Create `path` with `lines`.
    Add { path: String, lines: Vec<String> },
    /// Remove `path`.
    Delete { path: String },
    /// Change `path` by `hunks`, then move it to `move_to` if given.
    Update { path: String, move_to: Option<String>, hunks: Vec<Hunk> },
}

/// One hunk of an Update section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hunk {
    /// The `@@ <line>` anchors, outermost first.
    pub(crate) anchors: Vec<String>,
    pub(crate) lines: Vec<Line>,
    /// Marked `*** End of File`: the hunk's old lines end the file.
    pub(crate) eof: bool,
    /// 1-based line of the patch where the hunk starts (for messages).
    pub(crate) at: usize,
}

impl Hunk {
    /// The lines the file must have: context and removed, in order.
    pub(crate) fn old_lines(&self) -> Vec<&str> {
        self.lines
            .iter()
            .filter_map(|l| match l {
                Line::Context(t) | Line::Remove(t) => Some(t.as_str()),
                Line::Add(_) => None,
            })
            .collect()
    }
}

/// A line of a hunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Line {
    Context(String),
    Remove(String),
    Add(String),
}

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File: ";
const DELETE: &str = "*** Delete File: ";
const UPDATE: &str = "*** Update File: ";
const MOVE: &str = "*** Move to: ";
const EOF_MARK: &str = "*** End of File";

/// A parse error: the 1-based patch line and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParseError {
    pub(crate) line: usize,
    pub(crate) message: String,
}

/// Parse `input` (the whole patch text).
pub(crate) fn parse(input: &str) -> Result<Patch, ParseError> {
    let all: Vec<&str> = input.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).collect();
    let (first, lines) = envelope(&all)?;
    let mut parser = Parser { lines, first, pos: 0 };
    let mut ops = Vec::new();
    while parser.pos < parser.lines.len() {
        ops.push(parser.section()?);
    }
    if ops.is_empty() {
        return Err(ParseError {
            line: first,
            message: "the patch has no file sections: put `*** Add File:`, `*** Delete File:` or \
                      `*** Update File:` sections between the Begin and End markers"
                .into(),
        });
    }
    Ok(Patch { ops })
}

/// The lines between `*** Begin Patch` and `*** End Patch` (a heredoc wrapper and blank lines
/// around dropped), with the 1-based patch line of the first.
fn envelope<'a>(all: &'a [&'a str]) -> Result<(usize, &'a [&'a str]), ParseError> {
    let mut start = 0;
    let mut end = all.len();
    while start < end && all[start].trim().is_empty() {
        start += 1;
    }
    while end > start && all[end - 1].trim().is_empty() {
        end -= 1;
    }
    if start < end && all[start].trim_start().starts_with("<<") {
        let tag = all[start].trim().trim_start_matches('<').trim_matches(['\'', '"']);
        if end - start >= 2 && all[end - 1].trim() == tag {
            start += 1;
            end -= 1;
        }
    }
    if start >= end || all[start].trim() != BEGIN {
        return Err(ParseError {
            line: start + 1,
            message: format!("the patch must start with `{BEGIN}`"),
        });
    }
    if end - start < 2 || all[end - 1].trim() != END {
        return Err(ParseError { line: end, message: format!("the patch must end with `{END}`") });
    }
    Ok((start + 2, &all[start + 1..end - 1]))
}

struct Parser<'a> {
    lines: &'a [&'a str],
    /// The patch line number of `lines[0]`.
    first: usize,
    pos: usize,
}

impl Parser<'_> {
    fn line_no(&self) -> usize {
        self.first + self.pos
    }

    fn err(&self, message: impl Into<String>) -> ParseError {
        ParseError { line: self.line_no(), message: message.into() }
    }

    /// The current line (trimmed) if it starts a file section or is an unknown `*** ` marker
    /// at the start of a line; a context line ` *** x` is content, not a marker.
    fn marker(&self) -> Option<&str> {
        let raw = self.lines.get(self.pos)?;
        let line = raw.trim();
        let known = [ADD, DELETE, UPDATE, MOVE].iter().any(|m| line.starts_with(m));
        (known || raw.starts_with("*** ")).then_some(line)
    }

    fn section(&mut self) -> Result<Op, ParseError> {
        let Some(header) = self.marker() else {
            let line = self.lines[self.pos];
            return Err(self.err(format!(
                "expected a file section (`*** Add File: path`, `*** Delete File: path` or \
                 `*** Update File: path`), found `{line}`"
            )));
        };
        let header = header.to_owned();
        if let Some(path) = header.strip_prefix(ADD) {
            let path = self.path(path)?;
            self.pos += 1;
            return Ok(Op::Add { path, lines: self.added_lines()? });
        }
        if let Some(path) = header.strip_prefix(DELETE) {
            let path = self.path(path)?;
            self.pos += 1;
            return Ok(Op::Delete { path });
        }
        if let Some(path) = header.strip_prefix(UPDATE) {
            let path = self.path(path)?;
            self.pos += 1;
            let move_to = match self.marker().and_then(|m| m.strip_prefix(MOVE)) {
                Some(to) => {
                    let to = self.path(to)?;
                    self.pos += 1;
                    Some(to)
                }
                None => None,
            };
            let hunks = self.hunks()?;
            if hunks.is_empty() && move_to.is_none() {
                return Err(ParseError {
                    line: self.line_no().saturating_sub(1).max(self.first),
                    message: format!(
                        "`*** Update File: {path}` has no hunks: add `@@` and the lines to \
                         change, or a `*** Move to:` line to only rename it"
                    ),
                });
            }
            return Ok(Op::Update { path, move_to, hunks });
        }
        Err(self.err(format!(
            "unknown marker `{header}`: a section starts with `*** Add File: `, \
             `*** Delete File: ` or `*** Update File: `"
        )))
    }

    fn path(&self, raw: &str) -> Result<String, ParseError> {
        let path = raw.trim();
        if path.is_empty() {
            return Err(self.err("the section header names no path"));
        }
        Ok(path.to_owned())
    }

    fn added_lines(&mut self) -> Result<Vec<String>, ParseError> {
        let mut out = Vec::new();
        while let Some(line) = self.lines.get(self.pos) {
            if let Some(text) = line.strip_prefix('+') {
                out.push(text.to_owned());
                self.pos += 1;
            } else if self.marker().is_some() {
                break;
            } else {
                return Err(self.err(format!(
                    "in an `*** Add File:` section every line starts with `+` (the file's \
                     content), found `{line}`"
                )));
            }
        }
        Ok(out)
    }

    fn hunks(&mut self) -> Result<Vec<Hunk>, ParseError> {
        let mut hunks = Vec::new();
        while let Some(line) = self.lines.get(self.pos) {
            let trimmed = line.trim();
            if trimmed.starts_with("@@") {
                hunks.push(self.hunk()?);
            } else if self.marker().is_some() {
                break;
            } else if hunks.is_empty() {
                // The first hunk may leave out its `@@`.
                hunks.push(self.hunk()?);
            } else {
                return Err(self.err(format!("expected `@@` or a section marker, found `{line}`")));
            }
        }
        Ok(hunks)
    }

    fn hunk(&mut self) -> Result<Hunk, ParseError> {
        let at = self.line_no();
        let mut anchors = Vec::new();
        while let Some(line) = self.lines.get(self.pos) {
            let trimmed = line.trim_start();
            let Some(rest) = trimmed.strip_prefix("@@") else { break };
            if let Some(anchor) = anchor(rest) {
                anchors.push(anchor);
            }
            self.pos += 1;
        }
        let mut lines = Vec::new();
        let mut eof = false;
        while let Some(&line) = self.lines.get(self.pos) {
            if line.trim() == EOF_MARK {
                eof = true;
                self.pos += 1;
                break;
            }
            if line.starts_with("@@") || self.marker().is_some() {
                break;
            }
            let parsed = match line.chars().next() {
                None => Line::Context(String::new()),
                Some(' ') => Line::Context(line[1..].to_owned()),
                Some('-') => Line::Remove(line[1..].to_owned()),
                Some('+') => Line::Add(line[1..].to_owned()),
                Some(_) => {
                    return Err(self.err(format!(
                        "a hunk line starts with ` ` (context), `-` (removed) or `+` (added), \
                         found `{line}`; prefix unchanged lines with a space"
                    )));
                }
            };
            lines.push(parsed);
            self.pos += 1;
        }
        if lines.is_empty() {
            return Err(ParseError {
                line: at,
                message: "this hunk has no lines: after `@@` come the context, `-` and `+` lines"
                    .into(),
            });
        }
        Ok(Hunk { anchors, lines, eof, at })
    }
}

/// The anchor of an `@@` line (the text after `@@`), or none for a bare `@@` or a git-style
/// `@@ -1,3 +1,4 @@` header (whose function context after the second `@@` is the anchor).
fn anchor(rest: &str) -> Option<String> {
    let text = rest.trim();
    if text.is_empty() {
        return None;
    }
    if let Some(after) = git_header(text) {
        let after = after.trim();
        return (!after.is_empty()).then(|| after.to_owned());
    }
    // The anchor keeps its inner text; leading and trailing spaces never matter for an anchor.
    Some(text.to_owned())
}

/// What follows a git-style `-a,b +c,d @@` range, if `text` starts with one.
fn git_header(text: &str) -> Option<&str> {
    let (range, after) = text.split_once("@@")?;
    let mut parts = range.split_whitespace();
    let ok = |p: Option<&str>, sign: char| {
        p.and_then(|p| p.strip_prefix(sign)).is_some_and(|n| {
            !n.is_empty()
                && n.split(',').all(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        })
    };
    (ok(parts.next(), '-') && ok(parts.next(), '+') && parts.next().is_none()).then_some(after)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_that_looks_like_a_marker_stays_content() {
        let patch = parse(
            "*** Begin Patch\n*** Update File: a.md\n@@\n *** x\n  @@ y\n-a\n+b\n*** End Patch",
        )
        .unwrap();
        let Op::Update { hunks, .. } = &patch.ops[0] else { panic!() };
        assert_eq!(hunks.len(), 1);
        assert_eq!(hunks[0].old_lines(), vec!["*** x", " @@ y", "a"]);
    }

    #[test]
    fn every_section_kind_parses() {
        let patch = parse(
            "*** Begin Patch\n*** Add File: a.txt\n+one\n+\n*** Delete File: b.txt\n\
             *** Update File: c.txt\n*** Move to: d.txt\n@@ fn main\n@@   let x\n ctx\n-old\n+new\n\
             \n*** End of File\n*** End Patch\n",
        )
        .unwrap();
        assert_eq!(patch.ops.len(), 3);
        assert_eq!(
            patch.ops[0],
            Op::Add { path: "a.txt".into(), lines: vec!["one".into(), "".into()] }
        );
        assert_eq!(patch.ops[1], Op::Delete { path: "b.txt".into() });
        let Op::Update { path, move_to, hunks } = &patch.ops[2] else { panic!() };
        assert_eq!((path.as_str(), move_to.as_deref()), ("c.txt", Some("d.txt")));
        assert_eq!(hunks[0].anchors, vec!["fn main".to_owned(), "let x".to_owned()]);
        assert_eq!(hunks[0].old_lines(), vec!["ctx", "old", ""]);
        assert!(hunks[0].eof);
        assert_eq!(hunks[0].at, 8);
    }

    #[test]
    fn leniencies() {
        // Padded markers, CRLF, a heredoc, a first hunk without @@, a git-style header.
        let patch = parse(
            "<<'EOF'\r\n  *** Begin Patch \r\n*** Update File: a\r\n-x\r\n+y\r\n@@ -3,2 +3,2 @@\r\n-z\r\n+w\r\n*** End Patch  \r\nEOF\r\n",
        )
        .unwrap();
        let Op::Update { hunks, .. } = &patch.ops[0] else { panic!() };
        assert_eq!(hunks.len(), 2);
        assert!(hunks[1].anchors.is_empty());
        assert_eq!(hunks[1].lines, vec![Line::Remove("z".into()), Line::Add("w".into())]);
        assert_eq!(anchor(" -1 +1 @@ def f():"), Some("def f():".into()));
        assert_eq!(anchor(" class A"), Some("class A".into()));
    }

    #[test]
    fn errors_name_the_line() {
        let err = parse("*** Update File: a\n*** End Patch").unwrap_err();
        assert!(err.message.contains("must start with"), "{err:?}");
        let err = parse("*** Begin Patch\n*** Update File: a\n@@\n-x\n*** End").unwrap_err();
        assert!(err.message.contains("must end with"), "{err:?}");
        let err = parse("*** Begin Patch\n*** Update File: a\n@@\nx\n*** End Patch").unwrap_err();
        assert_eq!(err.line, 4);
        assert!(err.message.contains("prefix unchanged lines with a space"), "{err:?}");
        let err = parse("*** Begin Patch\n*** Add File: a\nx\n*** End Patch").unwrap_err();
        assert_eq!(err.line, 3);
        let err = parse("*** Begin Patch\n*** Update File: a\n*** End Patch").unwrap_err();
        assert!(err.message.contains("no hunks"), "{err:?}");
        let err = parse("*** Begin Patch\n*** Update File: a\n@@ x\n*** End Patch").unwrap_err();
        assert!(err.message.contains("no lines"), "{err:?}");
        let err = parse("*** Begin Patch\n*** End Patch").unwrap_err();
        assert!(err.message.contains("no file sections"), "{err:?}");
        let err = parse("*** Begin Patch\n*** Rename File: a\n*** End Patch").unwrap_err();
        assert!(err.message.contains("unknown marker"), "{err:?}");
    }
}
