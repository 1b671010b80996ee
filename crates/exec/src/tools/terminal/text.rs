//! Terminal output as text a model reads: what a line finally shows once escape codes, `\r`
//! redraws, backspaces and other control characters have done their work.

use std::sync::LazyLock;

use regex::Regex;

use crate::ready::strip_ansi;

static EXTRA_ESCAPES: LazyLock<Option<Regex>> = LazyLock::new(|| {
    // What strip_ansi leaves: charset selection (`ESC ( B`), keypad modes (`ESC =`, `ESC >`),
    // cursor save and restore (`ESC 7`, `ESC 8`).
    Regex::new(r"\x1b[()*+][0-9A-Za-z]|\x1b[=>78]").ok()
});

/// Terminal output as text a model reads: escape codes removed, `\r` redraws collapsed to what
/// the line finally shows, backspaces applied, other control characters dropped.
pub(crate) fn clean(bytes: &[u8]) -> String {
    let text = strip_ansi(&String::from_utf8_lossy(bytes));
    let text = match EXTRA_ESCAPES.as_ref() {
        Some(re) if text.contains('\x1b') => re.replace_all(&text, "").into_owned(),
        _ => text,
    };
    let mut out = String::with_capacity(text.len());
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let line = line.trim_end_matches('\r');
        // A progress bar redraws its line after `\r`: what a person sees is the last drawing.
        let shown = line.rsplit('\r').find(|part| !part.is_empty()).unwrap_or("");
        let mut kept = String::with_capacity(shown.len());
        for c in shown.chars() {
            match c {
                '\u{8}' => {
                    kept.pop();
                }
                '\t' => kept.push(c),
                c if c.is_control() => {}
                c => kept.push(c),
            }
        }
        out.push_str(&kept);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cleaning_removes_escapes_and_collapses_redraws() {
        assert_eq!(clean(b"\x1b[32mok\x1b[0m\r\n"), "ok\n");
        assert_eq!(clean(b"10%\r50%\r100%\r\ndone"), "100%\ndone");
        assert_eq!(clean(b"abc\x08\x08X\x07"), "aX");
        assert_eq!(clean(b"\x1b(B\x1b=prompt> "), "prompt> ");
    }
}
