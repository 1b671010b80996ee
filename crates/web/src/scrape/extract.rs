//! A page's HTML as the model reads it: its main content (readability, the `dom_smoothie` port of
//! readability.js) or the whole page, as Markdown, text or cleaned HTML, or its links.
//!
//! Flow: parse once (`dom_query`, html5ever); drop scripts, styles and templates; measure the
//! page's text; when the main content is asked for, run readability on a copy and keep its answer
//! only when it holds at least 500 characters and a tenth of the page's text (the usual failure of
//! main-content extraction is an empty or tiny answer), else the whole page with a note.

use dom_query::Document;
use dom_smoothie::{Config, Readability, TextMode};

use super::types::Format;

/// Main content shorter than this (in non-space characters) is not trusted: the whole page is
/// returned instead.
pub const MIN_MAIN_CHARS: usize = 500;
/// Main content with less than this share of the page's text is not trusted.
const MIN_MAIN_SHARE: f64 = 0.10;
/// Readability gives up (and the whole page is returned) past this many elements.
const MAX_ELEMENTS: usize = 100_000;
/// Elements whose content is never page text.
const NOT_TEXT: &str = "script, style, noscript, template";
/// What the Markdown of a whole page leaves out.
const SKIP_IN_MARKDOWN: &[&str] = &["script", "style", "meta", "head", "noscript", "template"];

/// A page, extracted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Page {
    /// The page's title, if it has one.
    pub title: Option<String>,
    /// The page in the asked format (links: one per line).
    pub content: String,
    /// True when `content` is the main content only.
    pub main_content: bool,
    /// What the model should know: a fallback to the whole page, and why.
    pub notes: Vec<String>,
}

/// Extract `html`, served at the absolute `url`, in `format`; `main` asks for the main content.
pub(crate) fn extract(html: &str, url: &str, format: Format, main: bool) -> Page {
    let doc = Document::from(html);
    if let Some(noise) = doc.try_select(NOT_TEXT) {
        noise.remove();
    }
    let page_title = doc.try_select("title").map(|t| one_line(&t.text())).filter(|t| !t.is_empty());
    if format == Format::Links {
        return Page {
            title: page_title,
            content: links(&doc, url).join("\n"),
            main_content: false,
            notes: Vec::new(),
        };
    }
    let mut notes = Vec::new();
    if main {
        let page_chars = visible_chars(&body_text(&doc));
        match main_content(&doc, url, format) {
            Ok((title, content, text_chars)) => {
                let share =
                    if page_chars == 0 { 1.0 } else { text_chars as f64 / page_chars as f64 };
                if text_chars >= MIN_MAIN_CHARS && share >= MIN_MAIN_SHARE {
                    let title = title.filter(|t| !t.is_empty()).or(page_title);
                    return Page { title, content, main_content: true, notes };
                }
                notes.push(format!(
                    "The main content found was only {text_chars} characters ({:.0}% of the \
                     page's {page_chars}), so this is the whole page.",
                    share * 100.0
                ));
            }
            Err(why) => {
                notes.push(format!("No main content was found ({why}), so this is the whole page."))
            }
        }
    }
    let content = match format {
        Format::Markdown => tidy(&doc.md(Some(SKIP_IN_MARKDOWN))),
        Format::Text => body_text(&doc),
        Format::Html => doc.html().to_string(),
        Format::Links => String::new(),
    };
    Page { title: page_title, content, main_content: false, notes }
}

/// The text of `html` (a fragment or a page), block by block.
pub(crate) fn html_to_text(html: &str) -> String {
    let doc = Document::from(html);
    if let Some(noise) = doc.try_select(NOT_TEXT) {
        noise.remove();
    }
    body_text(&doc)
}

/// Readability's answer: its title, the content in `format` and the length of its text.
fn main_content(
    doc: &Document,
    url: &str,
    format: Format,
) -> Result<(Option<String>, String, usize), String> {
    let text_mode = match format {
        Format::Markdown => TextMode::Markdown,
        _ => TextMode::Formatted,
    };
    let config = Config { max_elements_to_parse: MAX_ELEMENTS, text_mode, ..Config::default() };
    let mut readability = Readability::with_document(doc.clone(), Some(url), Some(config))
        .map_err(|err| err.to_string())?;
    let article = readability.parse().map_err(|err| err.to_string())?;
    let text_chars = visible_chars(&article.text_content);
    let content = match format {
        Format::Html => article.content.to_string(),
        Format::Markdown => tidy(&article.text_content),
        _ => article.text_content.trim().to_owned(),
    };
    Ok((Some(one_line(&article.title)), content, text_chars))
}

/// The text of the body (the whole document when it has none).
fn body_text(doc: &Document) -> String {
    match doc.body() {
        Some(body) => body.formatted_text().trim().to_owned(),
        None => doc.formatted_text().trim().to_owned(),
    }
}

/// Every http(s) link of the page, absolute (against `<base href>` or `url`), once each, in order.
fn links(doc: &Document, url: &str) -> Vec<String> {
    let page = url::Url::parse(url).ok();
    let base = doc
        .base_uri()
        .and_then(|b| match &page {
            Some(page) => page.join(&b).ok(),
            None => url::Url::parse(&b).ok(),
        })
        .or(page);
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    let Some(anchors) = doc.try_select("a[href]") else { return out };
    for anchor in anchors.nodes() {
        let Some(href) = anchor.attr("href") else { continue };
        let joined = match &base {
            Some(base) => base.join(href.trim()).ok(),
            None => url::Url::parse(href.trim()).ok(),
        };
        let Some(mut link) = joined.filter(|l| matches!(l.scheme(), "http" | "https")) else {
            continue;
        };
        link.set_fragment(None);
        let link = link.to_string();
        if seen.insert(link.clone()) {
            out.push(link);
        }
    }
    out
}

/// Characters that are not whitespace: the length of a text, as the thresholds count it.
pub(crate) fn visible_chars(text: &str) -> usize {
    text.chars().filter(|c| !c.is_whitespace()).count()
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Markdown with trailing spaces cut and at most one blank line in a row.
fn tidy(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut blank = 0;
    for line in markdown.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn article(paragraphs: usize) -> String {
        let body: String = (0..paragraphs)
            .map(|i| {
                format!(
                    "<p>Paragraph {i} of the article, with enough words in it to count as real \
                     prose: rust, tokio, futures, executors and the borrow checker.</p>"
                )
            })
            .collect();
        format!(
            "<!doctype html><html><head><title>The Article</title><style>p{{}}</style></head>\
             <body><nav><a href='/home'>Home</a> <a href='https://other.example/x#frag'>Other</a></nav>\
             <article><h1>The Article</h1>{body}</article>\
             <footer>Footer text <a href='mailto:a@b.c'>mail</a></footer><script>var x=1;</script></body></html>"
        )
    }

    #[test]
    fn the_main_content_of_an_article() {
        let page = extract(&article(20), "https://example.com/post", Format::Markdown, true);
        assert!(page.main_content, "{page:?}");
        assert!(page.notes.is_empty(), "{page:?}");
        assert_eq!(page.title.as_deref(), Some("The Article"));
        assert!(page.content.contains("Paragraph 19 of the article"), "{}", page.content);
        assert!(!page.content.contains("Footer text"), "{}", page.content);
        assert!(!page.content.contains("var x"), "{}", page.content);
    }

    #[test]
    fn a_short_main_content_falls_back_to_the_whole_page() {
        let html = "<html><head><title>Menu</title></head><body><nav>Home About Blog</nav>\
                    <p>Hi.</p><footer>Contact us at the office.</footer></body></html>";
        let page = extract(html, "https://example.com/", Format::Text, true);
        assert!(!page.main_content);
        assert!(page.notes[0].contains("whole page"), "{page:?}");
        assert!(page.content.contains("Contact us") && page.content.contains("Home About"));
        let page = extract(html, "https://example.com/", Format::Text, false);
        assert!(!page.main_content && page.notes.is_empty(), "{page:?}");
    }

    #[test]
    fn links_are_absolute_http_and_unique() {
        let page = extract(&article(1), "https://example.com/blog/post", Format::Links, true);
        assert_eq!(page.content, "https://example.com/home\nhttps://other.example/x");
        let based = "<html><head><base href='https://cdn.example/'></head><body>\
                     <a href='a'>a</a><a href='a'>again</a><a href='javascript:x()'>js</a></body></html>";
        assert_eq!(
            extract(based, "https://example.com/", Format::Links, true).content,
            "https://cdn.example/a"
        );
    }

    #[test]
    fn html_and_text_formats() {
        let page = extract(&article(20), "https://example.com/post", Format::Html, true);
        assert!(page.main_content && page.content.contains("<p>"), "{}", page.content);
        let whole = extract(&article(20), "https://example.com/post", Format::Html, false);
        assert!(whole.content.contains("Footer text") && !whole.content.contains("var x=1"));
        assert_eq!(
            html_to_text("<div><p>a <b>b</b></p><script>x</script><p>c</p></div>")
                .split_whitespace()
                .collect::<Vec<_>>(),
            ["a", "b", "c"]
        );
        assert_eq!(tidy("a  \n\n\n\nb\n"), "a\n\nb");
    }
}
