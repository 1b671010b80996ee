//! DOCX: `word/document.xml` as Markdown-ish text. Headings (`Heading1`…, `Title`) become `#`
//! lines, list paragraphs `- ` lines, tables Markdown tables (a nested table's text stays in its
//! cell). DOCX has no fixed pages: they exist only once a word processor lays the text out.

use hands_core::document::DocumentError;

use crate::archive::Archive;
use crate::markdown;
use crate::xml::{self, Node};

const PART: &str = "word/document.xml";

/// The text of a DOCX archive.
pub fn text(archive: &mut Archive<'_>) -> Result<String, DocumentError> {
    let xml = archive.read(PART)?.ok_or_else(|| {
        DocumentError::Invalid(format!("this DOCX has no {PART}: it is not a Word document"))
    })?;
    let mut doc = Doc::default();
    xml::walk(&xml, "DOCX", PART, |node| doc.node(node))?;
    Ok(doc.out.trim_end().to_owned() + "\n")
}

#[derive(Default)]
struct Doc {
    out: String,
    para: String,
    /// `#` count of the current paragraph's heading style.
    heading: usize,
    list: bool,
    in_text: bool,
    /// Depth of tables around the current point.
    tables: usize,
    rows: Vec<Vec<String>>,
    row: Vec<String>,
    cell: String,
}

impl Doc {
    fn node(&mut self, node: Node<'_>) {
        match node {
            Node::Open { name, element, .. } => match name {
                "t" | "delText" => self.in_text = true,
                "tab" if !self.in_text => self.para.push('\t'),
                "br" | "cr" => self.para.push('\n'),
                "pStyle" => {
                    let style = xml::attr(element, "w:val").unwrap_or_default();
                    self.heading = heading_level(&style);
                    self.list |= style.starts_with("List");
                }
                "numPr" => self.list = true,
                "tbl" => self.tables += 1,
                _ => {}
            },
            Node::Text(t) if self.in_text => self.para.push_str(t),
            Node::Text(_) => {}
            Node::Close { name } => match name {
                "t" | "delText" => self.in_text = false,
                "p" => self.end_paragraph(),
                "tc" if self.tables == 1 => self.row.push(std::mem::take(&mut self.cell)),
                "tr" if self.tables == 1 => self.rows.push(std::mem::take(&mut self.row)),
                "tbl" => {
                    self.tables = self.tables.saturating_sub(1);
                    if self.tables == 0 {
                        separate(&mut self.out);
                        markdown::table(&mut self.out, &std::mem::take(&mut self.rows));
                        self.out.push('\n');
                    }
                }
                _ => {}
            },
        }
    }

    fn end_paragraph(&mut self) {
        let text = std::mem::take(&mut self.para);
        let (heading, list) = (std::mem::take(&mut self.heading), std::mem::take(&mut self.list));
        let text = text.trim();
        if self.tables > 0 {
            if !text.is_empty() {
                if !self.cell.is_empty() {
                    self.cell.push(' ');
                }
                self.cell.push_str(text);
            }
            return;
        }
        if text.is_empty() {
            return;
        }
        if heading > 0 {
            separate(&mut self.out);
            self.out.push_str(&"#".repeat(heading));
            self.out.push(' ');
            self.out.push_str(text);
            self.out.push_str("\n\n");
        } else if list {
            self.out.push_str("- ");
            self.out.push_str(text);
            self.out.push('\n');
        } else {
            separate(&mut self.out);
            self.out.push_str(text);
            self.out.push_str("\n\n");
        }
    }
}

/// A blank line before a block, unless the text is empty or already ends with one.
fn separate(out: &mut String) {
    if !out.is_empty() && !out.ends_with("\n\n") {
        out.push('\n');
    }
}

/// `Heading2` → 2, `Title` → 1, anything else → 0.
fn heading_level(style: &str) -> usize {
    if style == "Title" {
        return 1;
    }
    style.strip_prefix("Heading").and_then(|n| n.parse::<usize>().ok()).map_or(0, |n| n.clamp(1, 6))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heading_styles() {
        assert_eq!(heading_level("Heading1"), 1);
        assert_eq!(heading_level("Heading9"), 6);
        assert_eq!(heading_level("Title"), 1);
        assert_eq!(heading_level("Normal"), 0);
    }
}
