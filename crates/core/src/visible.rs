//! Text made safe to show where a terminal (or a client that prints to one) may obey it: a
//! model's text, a command, a file name may carry bytes that a terminal acts on (ESC sequences
//! that move the cursor, erase a line, set the title or write the clipboard; a bare CR that
//! returns to the start of the line; C1 controls; bidi overrides that reorder what is shown).
//! [`text`] makes them visible instead: `\e`, `\r`, `\x07`, `\x7f`, `\u{9b}`, `\u{202e}` (a
//! backslash stays as it is: what was typed is shown). [`line`] also flattens a line break and
//! marks long runs of blanks (`⟨300 spaces⟩`), so that a one-line summary cannot hide its tail
//! after a screenful of spaces. hands' terminal front end and the approvals it sends to MCP and
//! ACP clients use them.

use std::fmt::Write as _;

/// Runs of this many blanks or more are shown as `⟨N spaces⟩` in a [`line`].
const BLANK_RUN: usize = 8;

/// `text` safe for a terminal, line breaks and tabs kept: every other control character (C0,
/// ESC, DEL, C1) and every invisible reordering character is shown as an escape.
pub fn text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' | '\t' => out.push(c),
            c => push_escaped(&mut out, c),
        }
    }
    out
}

/// `text` as one line safe for a terminal: like [`text`], and line breaks and tabs are escaped
/// too (`\n`, `\t`), and runs of [`BLANK_RUN`] or more blanks are marked with their length.
pub fn line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ' ' || (c.is_whitespace() && !c.is_control()) {
            let mut run = 1;
            let mut all_spaces = c == ' ';
            while let Some(&next) = chars.peek() {
                if next == ' ' || (next.is_whitespace() && !next.is_control()) {
                    all_spaces &= next == ' ';
                    run += 1;
                    chars.next();
                } else {
                    break;
                }
            }
            if run >= BLANK_RUN {
                let what = if all_spaces { "spaces" } else { "blanks" };
                let _ = write!(out, "⟨{run} {what}⟩");
            } else {
                out.push_str(&" ".repeat(run));
            }
            continue;
        }
        push_escaped(&mut out, c);
    }
    out
}

/// `text` as lines safe for a terminal: each line as a [`line`], and runs of more than two
/// empty lines shown as `⟨N empty lines⟩`, so that a message cannot push its tail off the
/// screen.
pub fn block(text: &str) -> String {
    let mut out = Vec::new();
    let mut empty = 0;
    let flush = |out: &mut Vec<String>, empty: usize| match empty {
        0 => {}
        1 | 2 => out.extend(std::iter::repeat_n(String::new(), empty)),
        n => out.push(format!("⟨{n} empty lines⟩")),
    };
    for raw in text.split('\n') {
        let shown = line(raw.strip_suffix('\r').unwrap_or(raw));
        if shown.trim().is_empty() {
            empty += 1;
            continue;
        }
        flush(&mut out, empty);
        empty = 0;
        out.push(shown);
    }
    flush(&mut out, empty);
    out.join("\n")
}

/// Push `c`, or its visible escape when a terminal would act on it.
fn push_escaped(out: &mut String, c: char) {
    match c {
        '\u{1b}' => out.push_str("\\e"),
        '\r' => out.push_str("\\r"),
        '\n' => out.push_str("\\n"),
        '\t' => out.push_str("\\t"),
        '\0'..='\u{1f}' | '\u{7f}' => {
            let _ = write!(out, "\\x{:02x}", u32::from(c));
        }
        c if is_hidden(c) => {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        }
        c => out.push(c),
    }
}

/// C1 controls and the characters that reorder or hide text without being seen (bidi
/// embeddings, overrides and isolates, zero-width characters, the BOM).
fn is_hidden(c: char) -> bool {
    matches!(
        c,
        '\u{80}'..='\u{9f}'
            | '\u{61c}'
            | '\u{200b}'..='\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}'
            | '\u{feff}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_keeps_its_lines_and_folds_what_would_hide_the_rest() {
        assert_eq!(block("echo safe\r\u{1b}[2Ktouch HIDDEN"), "echo safe\\r\\e[2Ktouch HIDDEN");
        assert_eq!(block("a\n\nb"), "a\n\nb");
        let tall = format!("a{}b", "\n".repeat(61));
        assert_eq!(block(&tall), "a\n⟨60 empty lines⟩\nb");
        assert_eq!(block(&format!("x{}y", " ".repeat(300))), "x⟨300 spaces⟩y");
        assert_eq!(block("rm \u{202e}fdp.exe"), "rm \\u{202e}fdp.exe");
    }
}
