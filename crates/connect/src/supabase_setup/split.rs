//! A migration file cut into statements the way the Supabase CLI cuts it, so that the
//! `statements` hands records in `supabase_migrations.schema_migrations` are the CLI's own and an
//! edit is detected the same way by both tools.
//!
//! The CLI's rule: a statement ends at a `;` that is outside quotes (`'…'`, `"…"`), dollar quotes
//! (`$tag$…$tag$`), comments (`-- …` to the end of the line, nested `/* … */`), parentheses and a
//! `BEGIN ATOMIC … END` body, a backslash skipping the character after it; each piece has its
//! trailing `;` and surrounding white space trimmed, and empty pieces are dropped (a piece holding
//! only a comment is kept). The scanner below is a state machine with the same states and
//! transitions, quirks included (one `)` closes every open parenthesis; `$$$` ends a `$$` quote).

/// One statement: its text as sent and recorded, and where that text starts in the file (a
/// byte offset), to place an error position in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    /// The trimmed text.
    pub text: String,
    /// Its byte offset in the file.
    pub offset: usize,
}

#[derive(Debug, Clone)]
enum State {
    Ready,
    /// After one `-`.
    Dash,
    /// After `/`; `depth` open `/*`.
    Block {
        depth: usize,
    },
    /// In `'…'` or `"…"`; `closed` after a quote that may be the first of a doubled one.
    Quote {
        delimiter: u8,
        closed: bool,
    },
    /// Until `end` (a dollar tag, or `\n` for a line comment).
    Until {
        end: Vec<u8>,
    },
    /// After `$` at `start`, reading a tag.
    Tag {
        start: usize,
    },
    /// After `\`.
    Escape,
    /// In parentheses (`end` = `)`) or a `BEGIN ATOMIC` body (`end` = `END`), with the state
    /// inside.
    Nested {
        inner: Box<State>,
        end: &'static [u8],
    },
}

/// What one step gives: the next state, or the end of a statement.
enum Step {
    Next(State),
    Emit,
}

fn ident(c: char) -> bool {
    c.is_alphabetic() || c.is_numeric() || c == '_' || c == '$'
}

/// True when `data` ends with `BEGIN <space> ATOMIC` as whole words (any case).
fn begin_atomic(data: &str) -> bool {
    let Some(before) = strip_suffix_ci(data, "ATOMIC") else { return false };
    if before.chars().next_back().is_some_and(ident) {
        return false;
    }
    let before = before.trim_end();
    let Some(rest) = strip_suffix_ci(before, "BEGIN") else { return false };
    !rest.chars().next_back().is_some_and(ident)
}

fn strip_suffix_ci<'a>(text: &'a str, suffix: &str) -> Option<&'a str> {
    let at = text.len().checked_sub(suffix.len())?;
    (text.is_char_boundary(at) && text[at..].eq_ignore_ascii_case(suffix)).then(|| &text[..at])
}

fn ends_with_ci(data: &[u8], end: &[u8]) -> bool {
    data.len() >= end.len() && data[data.len() - end.len()..].eq_ignore_ascii_case(end)
}

impl State {
    /// Take the character `c`; `data` is the statement so far, `c` included.
    fn next(self, c: char, data: &str) -> Step {
        let bytes = data.as_bytes();
        match self {
            State::Ready => match c {
                '$' => Step::Next(State::Tag { start: data.len() - 1 }),
                '\'' | '"' => Step::Next(State::Quote { delimiter: c as u8, closed: false }),
                '-' => Step::Next(State::Dash),
                '/' => Step::Next(State::Block { depth: 0 }),
                '\\' => Step::Next(State::Escape),
                ';' => Step::Emit,
                '(' => Step::Next(State::Nested { inner: Box::new(State::Ready), end: b")" }),
                'c' | 'C' if begin_atomic(data) => {
                    Step::Next(State::Nested { inner: Box::new(State::Ready), end: b"END" })
                }
                _ => Step::Next(State::Ready),
            },
            State::Dash if c == '-' => Step::Next(State::Until { end: b"\n".to_vec() }),
            State::Dash => State::Ready.next(c, data),
            State::Block { depth } => {
                let window = &bytes[bytes.len().saturating_sub(2)..];
                if window == b"/*" {
                    Step::Next(State::Block { depth: depth + 1 })
                } else if depth == 0 {
                    State::Ready.next(c, data)
                } else if window == b"*/" {
                    if depth == 1 {
                        Step::Next(State::Ready)
                    } else {
                        Step::Next(State::Block { depth: depth - 1 })
                    }
                } else {
                    Step::Next(State::Block { depth })
                }
            }
            State::Quote { delimiter, closed: true } => {
                if c as u32 == u32::from(delimiter) {
                    Step::Next(State::Quote { delimiter, closed: false })
                } else {
                    State::Ready.next(c, data)
                }
            }
            State::Quote { delimiter, closed: false } => {
                Step::Next(State::Quote { delimiter, closed: c as u32 == u32::from(delimiter) })
            }
            State::Until { end } => {
                if bytes.ends_with(&end) {
                    Step::Next(State::Ready)
                } else {
                    Step::Next(State::Until { end })
                }
            }
            State::Tag { start } => {
                if c == '$' {
                    Step::Next(State::Until { end: bytes[start..].to_vec() })
                } else if c.is_alphabetic() || c.is_numeric() || c == '_' {
                    Step::Next(State::Tag { start })
                } else {
                    State::Ready.next(c, data)
                }
            }
            State::Escape => Step::Next(State::Ready),
            State::Nested { inner, end } => {
                // A `;` inside does not end the statement: the inner state stays as it was.
                let inner = match inner.next(c, data) {
                    Step::Next(state) => Box::new(state),
                    Step::Emit => Box::new(State::Ready),
                };
                if matches!(*inner, State::Ready) && ends_with_ci(bytes, end) {
                    Step::Next(State::Ready)
                } else {
                    Step::Next(State::Nested { inner, end })
                }
            }
        }
    }
}

/// The statements of `sql`, as the Supabase CLI records them.
pub fn statements(sql: &str) -> Vec<Statement> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut state = State::Ready;
    for (i, c) in sql.char_indices() {
        let end = i + c.len_utf8();
        match state.next(c, &sql[start..end]) {
            Step::Next(next) => state = next,
            Step::Emit => {
                push(&mut out, sql, start, end);
                start = end;
                state = State::Ready;
            }
        }
    }
    if start < sql.len() {
        push(&mut out, sql, start, sql.len());
    }
    out
}

fn push(out: &mut Vec<Statement>, sql: &str, start: usize, end: usize) {
    let piece = sql[start..end].trim_end_matches(';');
    let text = piece.trim();
    if !text.is_empty() {
        let offset = start + (piece.len() - piece.trim_start().len());
        out.push(Statement { text: text.to_owned(), offset });
    }
}

/// The 1-based line and column (in characters) of byte `offset` in `text`.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..text.floor_char_boundary(offset)];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(sql: &str) -> Vec<String> {
        statements(sql).into_iter().map(|s| s.text).collect()
    }

    #[test]
    fn statements_end_at_semicolons_outside_quotes_comments_and_bodies() {
        assert_eq!(
            texts(
                "-- comment\ncreate table b (id int); insert into b values (1);\n\ncreate function f() returns int language sql as $$ select 1; $$;\n"
            ),
            [
                "-- comment\ncreate table b (id int)",
                "insert into b values (1)",
                "create function f() returns int language sql as $$ select 1; $$"
            ]
        );
        assert_eq!(texts("select ';' , \"a;b\"; select 2"), ["select ';' , \"a;b\"", "select 2"]);
        assert_eq!(texts("select 'it''s; here'; x"), ["select 'it''s; here'", "x"]);
        assert_eq!(
            texts("/* a; /* b; */ c; */ select 1; y"),
            ["/* a; /* b; */ c; */ select 1", "y"]
        );
        assert_eq!(
            texts("do $body$ begin perform 1; end $body$; z"),
            ["do $body$ begin perform 1; end $body$", "z"]
        );
        assert_eq!(texts("select (1; 2); w"), ["select (1; 2)", "w"]);
        assert_eq!(
            texts("create function g() returns int begin atomic select 1; select 2; end; v"),
            ["create function g() returns int begin atomic select 1; select 2; end", "v"]
        );
        assert_eq!(texts("select 1;;  ;\n-- trailing"), ["select 1", "-- trailing"]);
        assert_eq!(texts("select $1; q"), ["select $1", "q"]);
        // The CLI does not know backslash escapes inside quotes: it cuts here, and so do we.
        assert_eq!(texts("select E'\\';'; r"), ["select E'\\'", "'; r"]);
        assert!(texts("  \n ;; ").is_empty());
    }

    #[test]
    fn offsets_point_into_the_file() {
        let sql = "-- a\n\n  select 1;\n   select nope;\n";
        let found = statements(sql);
        assert_eq!(&sql[found[1].offset..found[1].offset + 11], "select nope");
        assert_eq!(line_col(sql, found[1].offset), (4, 4));
        assert_eq!(line_col(sql, 0), (1, 1));
        assert_eq!(line_col("é\nab", 4), (2, 2));
    }
}
