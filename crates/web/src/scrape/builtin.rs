//! The built-in backend of web_scrape: the page fetched through the egress guard (every redirect
//! re-checked, the body capped after decompression), then read by what it is.
//!
//! Flow: fetch (at most 20 MiB); refuse a non-2xx status; sniff the body (magic bytes first, then
//! the `Content-Type`): a document (PDF, office files) goes to the document parser when there is
//! one, else a clear error; HTML is decoded, cut at 2 MB and extracted on a blocking thread
//! ([`super::extract`]); other text is returned as served; anything else is an error that points
//! to download_to_repo.

use std::sync::Arc;

use hands_core::document::{DocumentParser, DocumentRequest};
use hands_core::{Context, ToolError};
use hands_net::{Guard, Request};

use super::extract;
use super::types::{Format, MAX_HTML_BYTES, Scraped};

/// The most bytes fetched (after decompression): a page, or a document for the parser.
const MAX_FETCH_BYTES: u64 = 20 * 1024 * 1024;

/// What the body is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    Html,
    Text,
    /// A document: its MIME type and a short name (`PDF`, `Word document`).
    Document(String, &'static str),
    /// Something else: its MIME type.
    Other(String),
}

/// Fetch `url` and read it in `format`.
pub(super) async fn scrape(
    guard: &Guard,
    ctx: &Context,
    url: &str,
    format: Format,
    main: bool,
    parser: Option<&Arc<dyn DocumentParser>>,
) -> Result<Scraped, ToolError> {
    let request = Request::get(url)
        .header("accept", "text/html,application/xhtml+xml;q=0.9,text/plain;q=0.8,*/*;q=0.5")
        .max_bytes(MAX_FETCH_BYTES);
    let fetched = guard.send(request, ctx.cancel_token()).await.map_err(|err| match err {
        hands_net::NetError::TooLarge { url, limit } => ToolError::model(format!(
            "web_scrape could not fetch the page: {url} sent more than {limit} bytes (after \
                 decompression), and reading stopped there. A file that large is no web page: \
                 save it with download_to_repo instead."
        )),
        err => ToolError::model(format!("web_scrape could not fetch the page: {err}")),
    })?;
    if !(200..300).contains(&fetched.status) {
        return Err(ToolError::model(format!(
            "{} answered with HTTP status {}; check the URL.",
            fetched.final_url, fetched.status
        )));
    }
    let final_url = fetched.final_url.clone();
    match kind(fetched.content_type.as_deref(), &fetched.body) {
        Kind::Document(mime, name) => {
            let Some(parser) = parser else {
                return Err(ToolError::model(format!(
                    "{final_url} is a {name} ({mime}, {} bytes), not a web page, and hands has no \
                     document reader here. Save it into the project with download_to_repo \
                     instead.",
                    fetched.body.len()
                )));
            };
            let file = url::Url::parse(&final_url)
                .ok()
                .and_then(|u| u.path_segments().and_then(|mut s| s.next_back().map(str::to_owned)))
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "document".to_owned());
            let parsed = parser
                .parse(fetched.body, &file, DocumentRequest::default(), ctx.cancel_token().clone())
                .await
                .map_err(|err| {
                    ToolError::model(format!(
                        "{final_url} is a {name} that could not be read: {err}"
                    ))
                })?;
            let mut notes = vec![match parsed.parts {
                Some(parts) => format!("A {} document of {parts} parts, as text.", parsed.format),
                None => format!("A {} document, as text.", parsed.format),
            }];
            notes.extend(parsed.notes);
            Ok(Scraped {
                final_url,
                format: Format::Text,
                title: None,
                main_content: false,
                content: parsed.text,
                notes,
            })
        }
        Kind::Other(mime) => Err(ToolError::model(format!(
            "{final_url} serves {mime} ({} bytes), not a web page. Save it into the project with \
             download_to_repo instead.",
            fetched.body.len()
        ))),
        Kind::Text => Ok(Scraped {
            final_url,
            format: Format::Text,
            title: None,
            main_content: false,
            content: String::from_utf8_lossy(&fetched.body).into_owned(),
            notes: vec![format!(
                "This URL serves {}, not HTML: its text as served.",
                fetched.content_type.as_deref().unwrap_or("text")
            )],
        }),
        Kind::Html => {
            let total = fetched.body.len();
            let mut notes = Vec::new();
            if total > MAX_HTML_BYTES {
                notes.push(format!(
                    "The page's HTML is {:.1} MB; only its first 2 MB were read.",
                    total as f64 / 1_000_000.0
                ));
            }
            let html = decode(&fetched.body, fetched.content_type.as_deref(), MAX_HTML_BYTES);
            let page_url = final_url.clone();
            let page = tokio::task::spawn_blocking(move || {
                extract::extract(&html, &page_url, format, main)
            })
            .await
            .map_err(|err| ToolError::Fatal(format!("web_scrape's extraction failed: {err}")))?;
            notes.extend(page.notes);
            Ok(Scraped {
                final_url,
                format,
                title: page.title,
                main_content: page.main_content,
                content: page.content,
                notes,
            })
        }
    }
}

/// What `body`, served as `content_type`, is: its magic bytes decide, then the header, then a
/// look at its start.
fn kind(content_type: Option<&str>, body: &[u8]) -> Kind {
    let declared = content_type
        .and_then(|c| c.split(';').next())
        .map(|c| c.trim().to_ascii_lowercase())
        .unwrap_or_default();
    let sniffed = infer::get(body);
    let mime = sniffed.map(|t| t.mime_type().to_owned()).unwrap_or_else(|| declared.clone());
    if let Some(name) = document_name(&mime) {
        return Kind::Document(mime, name);
    }
    if let Some(name) = document_name(&declared) {
        return Kind::Document(declared, name);
    }
    if let Some(found) = sniffed.filter(|t| t.matcher_type() != infer::MatcherType::Text) {
        return Kind::Other(found.mime_type().to_owned());
    }
    if declared.contains("html") {
        return Kind::Html;
    }
    let head = &body[..body.len().min(1024)];
    // UTF-8, allowing for a character cut at the end of the first kilobyte.
    let utf8 = match std::str::from_utf8(head) {
        Ok(_) => true,
        Err(err) => err.error_len().is_none(),
    };
    let is_text = !head.contains(&0) && (utf8 || declared.starts_with("text/"));
    if !is_text {
        let shown = if declared.is_empty() { "binary data".to_owned() } else { declared };
        return Kind::Other(shown);
    }
    let start = String::from_utf8_lossy(head)
        .trim_start_matches('\u{feff}')
        .trim_start()
        .to_ascii_lowercase();
    let looks_html = start.starts_with("<!doctype html")
        || start.starts_with("<html")
        || (start.starts_with('<') && (start.contains("<body") || start.contains("<head")));
    if looks_html && (declared.is_empty() || declared.starts_with("text/")) {
        return Kind::Html;
    }
    if declared.is_empty()
        || declared.starts_with("text/")
        || declared.contains("json")
        || declared.contains("xml")
        || declared.contains("javascript")
    {
        return Kind::Text;
    }
    Kind::Other(declared)
}

/// A short name for a document type, when `mime` is one the document parser reads.
fn document_name(mime: &str) -> Option<&'static str> {
    Some(match mime {
        "application/pdf" => "PDF",
        "application/msword"
        | "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
        | "application/vnd.oasis.opendocument.text"
        | "application/rtf"
        | "text/rtf" => "word-processor document",
        "application/vnd.ms-excel"
        | "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
        | "application/vnd.oasis.opendocument.spreadsheet" => "spreadsheet",
        "application/vnd.ms-powerpoint"
        | "application/vnd.openxmlformats-officedocument.presentationml.presentation"
        | "application/vnd.oasis.opendocument.presentation" => "presentation",
        "application/epub+zip" => "e-book",
        _ => return None,
    })
}

/// The first `max` bytes of `body` as text: Latin-1 when the header says so, else UTF-8 (cut at
/// a character boundary, invalid bytes replaced).
fn decode(body: &[u8], content_type: Option<&str>, max: usize) -> String {
    let mut end = body.len().min(max);
    let charset = content_type
        .and_then(|c| c.to_ascii_lowercase().split("charset=").nth(1).map(str::to_owned))
        .and_then(|c| c.split(';').next().map(str::to_owned))
        .map(|c| {
            c.trim_matches(|ch: char| ch == '"' || ch == '\'' || ch.is_whitespace()).to_owned()
        })
        .unwrap_or_default();
    if matches!(charset.as_str(), "iso-8859-1" | "latin1" | "windows-1252" | "us-ascii") {
        return body[..end].iter().map(|&b| b as char).collect();
    }
    // Step back over continuation bytes, so that no character is cut in two.
    while end < body.len() && end > 0 && (body[end] & 0b1100_0000) == 0b1000_0000 {
        end -= 1;
    }
    String::from_utf8_lossy(&body[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_told_apart_by_content_then_header() {
        assert_eq!(kind(Some("text/html; charset=utf-8"), b"<p>hi"), Kind::Html);
        assert_eq!(kind(None, b"  <!DOCTYPE html><html>"), Kind::Html);
        assert_eq!(kind(Some("text/plain"), b"<html><body>x"), Kind::Html);
        assert_eq!(kind(Some("text/plain"), b"just words"), Kind::Text);
        assert_eq!(kind(Some("application/json"), b"{\"a\":1}"), Kind::Text);
        let pdf = kind(Some("text/html"), b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj");
        assert_eq!(pdf, Kind::Document("application/pdf".into(), "PDF"));
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x02\0\0\0\x03\x08\x06\0\0\0";
        assert_eq!(kind(Some("text/html"), png), Kind::Other("image/png".into()));
        assert_eq!(
            kind(Some("application/octet-stream"), b"\0\x01\x02"),
            Kind::Other("application/octet-stream".into())
        );
        let docx = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";
        assert!(matches!(kind(Some(docx), b"PK\x03\x04rest"), Kind::Document(_, _)));
    }

    #[test]
    fn decoding_cuts_at_a_character_and_honours_latin1() {
        let text = "aé".repeat(10);
        let cut = decode(text.as_bytes(), None, 4);
        assert_eq!(cut, "aéa");
        assert_eq!(decode(b"caf\xe9", Some("text/html; charset=ISO-8859-1"), 100), "café");
        assert_eq!(decode(b"caf\xe9", Some("text/html; charset=\"latin1\"; q=1"), 100), "café");
        assert_eq!(decode(b"ok", Some("text/html"), 100), "ok");
    }
}
