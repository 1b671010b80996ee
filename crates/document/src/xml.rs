//! One pass over an XML part of an office file, as the few events the text extractors need:
//! elements opened and closed by local name (prefixes vary between writers), their attributes,
//! and text with entities resolved.

use hands_core::document::DocumentError;
use quick_xml::XmlVersion;
use quick_xml::events::{BytesStart, Event};
use quick_xml::reader::Reader;

/// What the walk meets.
pub enum Node<'a> {
    /// An element opens (an empty one, `<w:br/>`, then closes at once).
    Open { name: &'a str, element: &'a BytesStart<'a> },
    /// An element closes.
    Close { name: &'a str },
    /// Text, entities resolved.
    Text(&'a str),
}

/// The value of attribute `key` (qualified, `w:val`) of `element`.
pub fn attr(element: &BytesStart<'_>, key: &str) -> Option<String> {
    let found = element.try_get_attribute(key).ok()??;
    found.normalized_value(XmlVersion::Implicit1_0).ok().map(|v| v.into_owned())
}

fn local(name: &str) -> &str {
    name.rsplit_once(':').map_or(name, |(_, local)| local)
}

/// Walk `xml` (part `part` of a `what`), calling `f` for each node.
pub fn walk(
    xml: &[u8],
    what: &str,
    part: &str,
    mut f: impl FnMut(Node<'_>),
) -> Result<(), DocumentError> {
    let bad = |why: String| {
        DocumentError::Invalid(format!("this {what} is damaged: its part {part} {why}"))
    };
    let text = std::str::from_utf8(xml).map_err(|_| bad("is not UTF-8 text".into()))?;
    let mut reader = Reader::from_str(text);
    loop {
        let event =
            reader.read_event().map_err(|err| bad(format!("is not well-formed XML ({err})")))?;
        match event {
            Event::Start(element) => {
                let name = local(element.name().as_ref()).to_owned();
                f(Node::Open { name: &name, element: &element });
            }
            Event::Empty(element) => {
                let name = local(element.name().as_ref()).to_owned();
                f(Node::Open { name: &name, element: &element });
                f(Node::Close { name: &name });
            }
            Event::End(element) => f(Node::Close { name: local(element.name().as_ref()) }),
            Event::Text(t) => f(Node::Text(&t.xml_content(XmlVersion::Implicit1_0))),
            Event::CData(t) => f(Node::Text(&t.into_inner())),
            Event::GeneralRef(r) => {
                let resolved = match r.resolve_char_ref() {
                    Ok(Some(c)) => Some(c.to_string()),
                    _ => match r.as_ref() {
                        "amp" => Some("&".into()),
                        "lt" => Some("<".into()),
                        "gt" => Some(">".into()),
                        "quot" => Some("\"".into()),
                        "apos" => Some("'".into()),
                        _ => None,
                    },
                };
                if let Some(s) = resolved {
                    f(Node::Text(&s));
                }
            }
            Event::Eof => return Ok(()),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_entities_and_local_names() {
        let xml =
            br#"<w:doc xmlns:w="x"><w:p w:id="1"><w:t>a &amp; b&#33;</w:t><w:br/></w:p></w:doc>"#;
        let mut seen = Vec::new();
        walk(xml, "DOCX", "word/document.xml", |node| match node {
            Node::Open { name, element } => {
                seen.push(format!("<{name}{}>", attr(element, "w:id").unwrap_or_default()))
            }
            Node::Close { name } => seen.push(format!("</{name}>")),
            Node::Text(t) => seen.push(t.to_owned()),
        })
        .unwrap();
        assert_eq!(seen.concat(), "<doc><p1><t>a & b!</t><br></br></p></doc>");
        let err = walk(b"<a><b></a>", "DOCX", "word/document.xml", |_| {}).unwrap_err();
        assert!(err.to_string().contains("word/document.xml is not well-formed"), "{err}");
    }
}
