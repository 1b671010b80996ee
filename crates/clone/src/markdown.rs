//! page.md: a plain HTML→Markdown rendering of the captured page, for reading its copy (headings,
//! paragraphs, lists, links, images). Deliberately small: the HTML beside it is the faithful copy.

/// Markdown for `html` (the whole document; `<head>`, `<script>`, `<style>` are dropped).
pub fn from_html(html: &str) -> String {
    let mut out = String::new();
    let mut rest = html;
    let mut link: Option<String> = None;
    while let Some(lt) = rest.find('<') {
        push_text(&mut out, &rest[..lt]);
        rest = &rest[lt..];
        let Some(gt) = rest.find('>') else { break };
        let tag = &rest[1..gt];
        rest = &rest[gt + 1..];
        let closing = tag.starts_with('/');
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '!')
            .collect::<String>()
            .to_ascii_lowercase();
        match (name.as_str(), closing) {
            ("head" | "script" | "style" | "noscript" | "template", false) => {
                let end = format!("</{name}");
                let at = rest.to_ascii_lowercase().find(&end).unwrap_or(rest.len());
                rest = &rest[at..];
            }
            ("h1" | "h2" | "h3" | "h4" | "h5" | "h6", false) => {
                let level = usize::from(name.as_bytes()[1] - b'0');
                out.push_str(&format!("\n\n{} ", "#".repeat(level)));
            }
            (
                "p" | "div" | "section" | "article" | "header" | "footer" | "main" | "nav" | "ul"
                | "ol" | "table" | "tr" | "h1" | "h2" | "h3" | "h4" | "h5" | "h6",
                _,
            ) => out.push_str("\n\n"),
            ("br", _) => out.push('\n'),
            ("li", false) => out.push_str("\n- "),
            ("strong" | "b", _) => out.push_str("**"),
            ("em" | "i", _) => out.push('*'),
            ("a", false) => {
                link = attr(tag, "href");
                out.push('[');
            }
            ("a", true) => {
                out.push_str(&format!("]({})", link.take().unwrap_or_default()));
            }
            ("img", false) => {
                let alt = attr(tag, "alt").unwrap_or_default();
                let src = attr(tag, "src").unwrap_or_default();
                out.push_str(&format!("![{alt}]({src})"));
            }
            _ => {}
        }
    }
    push_text(&mut out, rest);
    tidy(&out)
}

fn push_text(out: &mut String, text: &str) {
    let text = text
        .replace("&nbsp;", " ")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&");
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.is_empty() {
        if !text.is_empty() && !out.ends_with([' ', '\n']) && !out.is_empty() {
            out.push(' ');
        }
        return;
    }
    if text.starts_with(char::is_whitespace) && !out.ends_with([' ', '\n', '[']) {
        out.push(' ');
    }
    out.push_str(&collapsed);
    if text.ends_with(char::is_whitespace) {
        out.push(' ');
    }
}

/// An attribute's value in a start tag (quoted with either quote, or bare).
fn attr(tag: &str, name: &str) -> Option<String> {
    let lower = tag.to_ascii_lowercase();
    let mut from = 0;
    while let Some(at) = lower[from..].find(name).map(|i| i + from) {
        from = at + name.len();
        let before_ok = at > 0 && lower.as_bytes()[at - 1].is_ascii_whitespace();
        let after = lower[from..].trim_start();
        if !before_ok || !after.starts_with('=') {
            continue;
        }
        let value = tag[tag.len() - after.len() + 1..].trim_start();
        return Some(match value.chars().next() {
            Some(q @ ('"' | '\'')) => value[1..].split(q).next().unwrap_or("").to_owned(),
            _ => value.split([' ', '>', '/']).next().unwrap_or("").to_owned(),
        });
    }
    None
}

/// At most one blank line in a row, no trailing spaces.
fn tidy(text: &str) -> String {
    let mut out = String::new();
    let mut blank = 0;
    for line in text.lines().map(str::trim) {
        if line.is_empty() {
            blank += 1;
            continue;
        }
        if !out.is_empty() {
            out.push_str(if blank > 0 { "\n\n" } else { "\n" });
        }
        blank = 0;
        out.push_str(line);
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_links_lists_and_images() {
        let html = "<html><head><title>T</title><style>p{}</style></head><body>\
                    <h1>Hello &amp; welcome</h1><p>Read <a href=\"/docs\">the docs</a>.</p>\
                    <ul><li>one</li><li>two</li></ul><img src='a.png' alt=\"Logo\">\
                    <script>alert(1)</script></body></html>";
        assert_eq!(
            from_html(html),
            "# Hello & welcome\n\nRead [the docs](/docs).\n\n- one\n- two\n\n![Logo](a.png)\n"
        );
    }
}
