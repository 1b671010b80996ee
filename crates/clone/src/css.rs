//! What clone_site reads in CSS: the `url(...)` and `@import "..."` references (rewritten to the
//! clone's local files), and the colours and font families a reference design uses.
//!
//! A small scanner rather than a CSS parser: it only needs to find references and a few
//! declarations, and it leaves every other byte as it was.

use std::collections::BTreeSet;

/// Rewrite every `url(...)` and `@import "..."` in `css`: `map` gets the reference as written
/// and answers the replacement, or `None` to keep it.
pub fn rewrite_urls(css: &str, map: &mut dyn FnMut(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(css.len());
    let mut rest = css;
    loop {
        let url_at = find_ci(rest, "url(");
        let import_at = find_ci(rest, "@import");
        let Some(at) = [url_at, import_at].into_iter().flatten().min() else { break };
        if Some(at) == url_at {
            out.push_str(&rest[..at + 4]);
            rest = &rest[at + 4..];
            let Some(close) = rest.find(')') else { break };
            let inner = &rest[..close];
            let trimmed = inner.trim();
            let (quote, raw) = unquote(trimmed);
            match map(raw) {
                Some(new) => out.push_str(&format!("{quote}{new}{quote}")),
                None => out.push_str(inner),
            }
            out.push(')');
            rest = &rest[close + 1..];
        } else {
            out.push_str(&rest[..at + 7]);
            rest = &rest[at + 7..];
            let spaces = rest.len() - rest.trim_start().len();
            out.push_str(&rest[..spaces]);
            rest = &rest[spaces..];
            let Some(quote) = rest.chars().next().filter(|c| *c == '"' || *c == '\'') else {
                continue; // `@import url(...)`: the url( branch takes it next
            };
            let Some(close) = rest[1..].find(quote) else { break };
            let raw = &rest[1..1 + close];
            out.push(quote);
            out.push_str(&map(raw).unwrap_or_else(|| raw.to_owned()));
            out.push(quote);
            rest = &rest[close + 2..];
        }
    }
    out.push_str(rest);
    out
}

fn unquote(text: &str) -> (&'static str, &str) {
    for (q, s) in [("\"", '"'), ("'", '\'')] {
        if text.len() >= 2 && text.starts_with(s) && text.ends_with(s) {
            return (q, &text[1..text.len() - 1]);
        }
    }
    ("", text)
}

/// The byte offset of `needle` (ASCII) in `haystack`, ignoring ASCII case.
fn find_ci(haystack: &str, needle: &str) -> Option<usize> {
    let (h, n) = (haystack.as_bytes(), needle.as_bytes());
    h.windows(n.len()).position(|w| w.eq_ignore_ascii_case(n))
}

/// Colours written in `css`: hex (`#abc`, `#aabbcc`, with alpha), `rgb()/rgba()/hsl()/hsla()`,
/// lower-cased and without duplicates.
pub fn colours(css: &str, found: &mut BTreeSet<String>) {
    let bytes = css.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'#' {
            let len = bytes[i + 1..].iter().take_while(|b| b.is_ascii_hexdigit()).count();
            let after = bytes.get(i + 1 + len).copied().unwrap_or(b';');
            // A colour ends the value; `#id {` selectors are followed by letters or spaces then `{`.
            let in_value = css[..i].rfind([':', '{', ';', '}']).is_some_and(|at| bytes[at] == b':');
            if matches!(len, 3 | 4 | 6 | 8) && !after.is_ascii_alphanumeric() && in_value {
                found.insert(css[i..i + 1 + len].to_ascii_lowercase());
            }
            i += 1 + len;
            continue;
        }
        for func in ["rgba(", "rgb(", "hsla(", "hsl("] {
            if bytes.len() - i >= func.len()
                && css.is_char_boundary(i)
                && css.is_char_boundary(i + func.len())
                && css[i..i + func.len()].eq_ignore_ascii_case(func)
                && (i == 0 || !bytes[i - 1].is_ascii_alphanumeric() && bytes[i - 1] != b'-')
                && let Some(close) = css[i..].find(')')
            {
                let value: String =
                    css[i..i + close + 1].split_whitespace().collect::<Vec<_>>().join(" ");
                found.insert(value.to_ascii_lowercase());
                i += close;
                break;
            }
        }
        i += 1;
    }
}

/// Font families named in `font-family:` declarations (of rules and of `@font-face`), without
/// quotes and generic families.
pub fn font_families(css: &str, found: &mut BTreeSet<String>) {
    let mut rest = css;
    while let Some(at) = find_ci(rest, "font-family") {
        rest = &rest[at + "font-family".len()..];
        let Some(value) = rest.trim_start().strip_prefix(':') else { continue };
        let end = value.find([';', '}']).unwrap_or(value.len());
        for family in value[..end].split(',') {
            let family = family.trim().trim_matches(['"', '\'']).trim();
            let generic = matches!(
                family.to_ascii_lowercase().as_str(),
                "serif"
                    | "sans-serif"
                    | "monospace"
                    | "cursive"
                    | "fantasy"
                    | "system-ui"
                    | "inherit"
                    | "initial"
                    | "unset"
                    | "ui-sans-serif"
                    | "ui-serif"
                    | "ui-monospace"
                    | "emoji"
                    | "math"
            );
            if !family.is_empty() && !generic && !family.contains("var(") {
                found.insert(family.to_owned());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_imports_are_rewritten_and_the_rest_kept() {
        let css = "@import 'base.css';\nbody{background:URL( \"img/a.png\" )}\n\
                   @font-face{src:url(f.woff2) format('woff2')}\na{color:red}";
        let out = rewrite_urls(css, &mut |raw| match raw {
            "img/a.png" => Some("x.png".into()),
            "base.css" => Some("b.css".into()),
            _ => None,
        });
        assert_eq!(
            out,
            "@import 'b.css';\nbody{background:URL(\"x.png\")}\n\
             @font-face{src:url( f.woff2) format('woff2')}\na{color:red}"
                .replace("url( f.woff2)", "url(f.woff2)")
        );
    }

    #[test]
    fn an_unclosed_url_does_not_loop() {
        assert_eq!(rewrite_urls("a{b:url(x", &mut |_| Some("y".into())), "a{b:url(x");
    }

    #[test]
    fn colours_and_families_are_found() {
        let css = "#main{color:#1A2b3C;background:rgb(1, 2,3)}\n\
                   h1{font-family:\"Brand Sans\", Arial, sans-serif;border:1px solid #fff}";
        let mut colours_found = BTreeSet::new();
        colours(css, &mut colours_found);
        assert_eq!(
            colours_found.into_iter().collect::<Vec<_>>(),
            ["#1a2b3c", "#fff", "rgb(1, 2,3)"]
        );
        let mut families = BTreeSet::new();
        font_families(css, &mut families);
        assert_eq!(families.into_iter().collect::<Vec<_>>(), ["Arial", "Brand Sans"]);
    }
}
