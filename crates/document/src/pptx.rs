//! PPTX: each slide's text, in the presentation's order (`ppt/presentation.xml`'s slide list
//! through its relationships; by file number when those do not read). A title placeholder
//! becomes a `#` line, every other paragraph a line, a table a Markdown table.

use hands_core::document::DocumentError;

use crate::archive::Archive;
use crate::markdown;
use crate::xml::{self, Node};

/// The slides' part names in presentation order.
pub fn slides(archive: &mut Archive<'_>) -> Result<Vec<String>, DocumentError> {
    let mut by_number: Vec<(u32, String)> = archive
        .names()
        .into_iter()
        .filter_map(|name| {
            let n = name.strip_prefix("ppt/slides/slide")?.strip_suffix(".xml")?.parse().ok()?;
            Some((n, name))
        })
        .collect();
    by_number.sort();
    let fallback: Vec<String> = by_number.into_iter().map(|(_, name)| name).collect();
    let (Some(presentation), Some(rels)) =
        (archive.read("ppt/presentation.xml")?, archive.read("ppt/_rels/presentation.xml.rels")?)
    else {
        return Ok(fallback);
    };
    let mut ids = Vec::new();
    xml::walk(&presentation, "PPTX", "ppt/presentation.xml", |node| {
        if let Node::Open { name: "sldId", element, .. } = node
            && let Some(id) = xml::attr(element, "r:id")
        {
            ids.push(id);
        }
    })?;
    let mut targets = std::collections::HashMap::new();
    xml::walk(&rels, "PPTX", "ppt/_rels/presentation.xml.rels", |node| {
        if let Node::Open { name: "Relationship", element, .. } = node
            && let (Some(id), Some(target)) =
                (xml::attr(element, "Id"), xml::attr(element, "Target"))
        {
            targets.insert(id, target);
        }
    })?;
    let ordered: Vec<String> = ids
        .iter()
        .filter_map(|id| targets.get(id))
        .map(|target| {
            format!("ppt/{}", target.trim_start_matches("/ppt/").trim_start_matches("./"))
        })
        .filter(|name| archive.has(name))
        .collect();
    Ok(if ordered.is_empty() { fallback } else { ordered })
}

/// The text of slide part `part`.
pub fn slide_text(archive: &mut Archive<'_>, part: &str) -> Result<String, DocumentError> {
    let Some(xml) = archive.read(part)? else { return Ok(String::new()) };
    let mut slide = Slide::default();
    xml::walk(&xml, "PPTX", part, |node| slide.node(node))?;
    Ok(slide.out.trim_end().to_owned())
}

#[derive(Default)]
struct Slide {
    out: String,
    para: String,
    in_text: bool,
    title: bool,
    tables: usize,
    rows: Vec<Vec<String>>,
    row: Vec<String>,
    cell: String,
}

impl Slide {
    fn node(&mut self, node: Node<'_>) {
        match node {
            Node::Open { name, element, .. } => match name {
                "t" => self.in_text = true,
                "br" => self.para.push('\n'),
                "ph" => {
                    let kind = xml::attr(element, "type").unwrap_or_default();
                    self.title = kind == "title" || kind == "ctrTitle";
                }
                "tbl" => self.tables += 1,
                _ => {}
            },
            Node::Text(t) if self.in_text => self.para.push_str(t),
            Node::Text(_) => {}
            Node::Close { name } => match name {
                "t" => self.in_text = false,
                "p" => self.end_paragraph(),
                "sp" => self.title = false,
                "tc" if self.tables == 1 => self.row.push(std::mem::take(&mut self.cell)),
                "tr" if self.tables == 1 => self.rows.push(std::mem::take(&mut self.row)),
                "tbl" => {
                    self.tables = self.tables.saturating_sub(1);
                    if self.tables == 0 {
                        markdown::table(&mut self.out, &std::mem::take(&mut self.rows));
                    }
                }
                _ => {}
            },
        }
    }

    fn end_paragraph(&mut self) {
        let text = std::mem::take(&mut self.para);
        let text = text.trim();
        if text.is_empty() {
            return;
        }
        if self.tables > 0 {
            if !self.cell.is_empty() {
                self.cell.push(' ');
            }
            self.cell.push_str(text);
        } else if self.title {
            self.out.push_str("# ");
            self.out.push_str(text);
            self.out.push('\n');
        } else {
            self.out.push_str(text);
            self.out.push('\n');
        }
    }
}
