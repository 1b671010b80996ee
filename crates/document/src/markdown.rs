//! Markdown tables: the one shape every table of a document (sheets, DOCX and PPTX tables) is
//! shown in. The first row is the header; cells are escaped so that a `|` or a line break in a
//! cell cannot break the table.

/// Append `rows` to `out` as a Markdown table (nothing for no rows). Short rows are padded.
pub fn table(out: &mut String, rows: &[Vec<String>]) {
    let width = rows.iter().map(Vec::len).max().unwrap_or(0);
    if width == 0 {
        return;
    }
    for (i, row) in rows.iter().enumerate() {
        out.push('|');
        for col in 0..width {
            out.push(' ');
            out.push_str(&cell(row.get(col).map_or("", String::as_str)));
            out.push_str(" |");
        }
        out.push('\n');
        if i == 0 {
            out.push('|');
            out.push_str(&"---|".repeat(width));
            out.push('\n');
        }
    }
}

/// A cell's text, safe inside a table row.
pub fn cell(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last_space = false;
    for c in text.trim().chars() {
        match c {
            '|' => out.push_str("\\|"),
            '\n' | '\r' | '\t' => {
                if !last_space {
                    out.push(' ');
                }
                last_space = true;
                continue;
            }
            c => out.push(c),
        }
        last_space = c == ' ';
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(r: &[&[&str]]) -> Vec<Vec<String>> {
        r.iter().map(|row| row.iter().map(|s| (*s).to_owned()).collect()).collect()
    }

    #[test]
    fn tables_have_a_header_rule_and_escaped_cells() {
        let mut out = String::new();
        table(&mut out, &rows(&[&["a", "b"], &["x|y", "two\nlines"], &["short"]]));
        assert_eq!(out, "| a | b |\n|---|---|\n| x\\|y | two lines |\n| short |  |\n");
        let mut empty = String::new();
        table(&mut empty, &[]);
        assert!(empty.is_empty());
    }
}
