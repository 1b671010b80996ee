//! File names as they appear in a text result: control characters escaped, so that a name such as
//! `a\nb.rs` (legal on Linux) cannot forge extra lines in a listing. Structured results keep the
//! real name.

use std::borrow::Cow;

/// `name` with every control character (C0, DEL, C1) written as an escape: `\n`, `\r`, `\t`, or
/// `\u{1b}` for the others. Names without one are returned as they are.
pub(crate) fn escape_name(name: &str) -> Cow<'_, str> {
    if !name.chars().any(char::is_control) {
        return Cow::Borrowed(name);
    }
    let mut out = String::with_capacity(name.len() + 8);
    for c in name.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_plain_names_kept() {
        assert_eq!(escape_name("src/main.rs"), "src/main.rs");
        assert_eq!(escape_name("a\nb.rs"), "a\\nb.rs");
        assert_eq!(
            escape_name("x\r\t\u{1b}]0;t\u{7}\u{7f}\u{85}"),
            "x\\r\\t\\u{1b}]0;t\\u{7}\\u{7f}\\u{85}"
        );
        assert!(!escape_name("é/日本.rs").contains('\\'));
    }
}
