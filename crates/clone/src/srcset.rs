//! `srcset` (and `imagesrcset`) in the captured DOM: every candidate URL pointed at its saved
//! file. The browser fetched one candidate for its own screen; clone_site fetches the others
//! (see the tool) so that the clone holds them all, and a candidate that could not be saved is
//! dropped, so that the clone never reaches out to the network.
//!
//! Candidates are parsed the way the HTML standard splits them: a URL is a run of
//! non-whitespace (trailing commas end the candidate), then descriptors up to the next comma
//! outside parentheses.

/// One candidate: its URL and its descriptors (`2x`, `640w`; possibly empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// As written.
    pub url: String,
    /// As written, trimmed.
    pub descriptor: String,
}

/// The candidates of a `srcset` value.
pub fn parse(value: &str) -> Vec<Candidate> {
    let chars: Vec<char> = value.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        while i < chars.len() && (chars[i].is_whitespace() || chars[i] == ',') {
            i += 1;
        }
        if i >= chars.len() {
            break;
        }
        let start = i;
        while i < chars.len() && !chars[i].is_whitespace() {
            i += 1;
        }
        let mut url: String = chars[start..i].iter().collect();
        let mut descriptor = String::new();
        if url.ends_with(',') {
            url = url.trim_end_matches(',').to_owned();
        } else {
            let from = i;
            let mut depth = 0i32;
            while i < chars.len() {
                match chars[i] {
                    '(' => depth += 1,
                    ')' => depth -= 1,
                    ',' if depth <= 0 => break,
                    _ => {}
                }
                i += 1;
            }
            descriptor = chars[from..i].iter().collect::<String>().trim().to_owned();
            i += 1;
        }
        if !url.is_empty() {
            out.push(Candidate { url, descriptor });
        }
    }
    out
}

/// The value of every `srcset="…"` and `imagesrcset="…"` attribute in `html` (as serialized by
/// the browser: double quotes, `&amp;` for `&`), HTML-unescaped.
pub fn values(html: &str) -> Vec<String> {
    let mut found = Vec::new();
    for_each(html, &mut |value| {
        found.push(unescape(value));
        None
    });
    found
}

/// `html` with each candidate URL of each `srcset` attribute replaced by `map(url)` (the URL
/// unescaped; the answer is written escaped), and candidates `map` answers `None` for dropped;
/// an attribute left with no candidate is removed. `data:` URLs are kept as they are.
pub fn rewrite(html: &str, map: &mut dyn FnMut(&str) -> Option<String>) -> String {
    for_each(html, &mut |value| {
        let kept: Vec<String> = parse(&unescape(value))
            .into_iter()
            .filter_map(|c| {
                let url = if c.url.starts_with("data:") { Some(c.url) } else { map(&c.url) }?;
                let url = escape(&url);
                Some(if c.descriptor.is_empty() { url } else { format!("{url} {}", c.descriptor) })
            })
            .collect();
        Some(kept.join(", "))
    })
}

/// Walks the attributes; `visit` gets the raw value and answers its replacement (`Some("")`
/// removes the attribute).
fn for_each(html: &str, visit: &mut dyn FnMut(&str) -> Option<String>) -> String {
    let lower = html.to_ascii_lowercase();
    let mut out = String::with_capacity(html.len());
    let mut at = 0;
    loop {
        let next = [" srcset=\"", " imagesrcset=\""]
            .iter()
            .filter_map(|name| lower[at..].find(name).map(|i| (at + i, name.len())))
            .min();
        let Some((start, len)) = next else { break };
        let value_start = start + len;
        let Some(end) = html[value_start..].find('"').map(|i| value_start + i) else { break };
        // Only inside a tag: text that reads ` srcset="` is left alone.
        if lower[..start].rfind('<') <= lower[..start].rfind('>') {
            out.push_str(&html[at..value_start]);
            at = value_start;
            continue;
        }
        match visit(&html[value_start..end]) {
            Some(new) if new.is_empty() => out.push_str(&html[at..start]),
            Some(new) => {
                out.push_str(&html[at..value_start]);
                out.push_str(&new);
                out.push('"');
            }
            None => out.push_str(&html[at..=end]),
        }
        at = end + 1;
    }
    out.push_str(&html[at..]);
    out
}

fn unescape(value: &str) -> String {
    value.replace("&quot;", "\"").replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
}

fn escape(value: &str) -> String {
    value.replace('&', "&amp;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_are_split_like_the_standard_says() {
        let got = parse(" a.png 1x,b.png 2x , c.png, d.png,, data:image/png;base64,AAA= 3x ");
        let pairs: Vec<(&str, &str)> =
            got.iter().map(|c| (c.url.as_str(), c.descriptor.as_str())).collect();
        assert_eq!(
            pairs,
            [
                ("a.png", "1x"),
                ("b.png", "2x"),
                ("c.png", ""),
                ("d.png", ""),
                ("data:image/png;base64,AAA=", "3x")
            ]
        );
        assert_eq!(parse("x.png (max-width: 2px, y) 10w")[0].descriptor, "(max-width: 2px, y) 10w");
    }

    #[test]
    fn saved_candidates_are_pointed_at_their_files_and_the_rest_dropped() {
        let html = "<img src=\"a\" srcset=\"http://h/a.png?x=1&amp;y=2 1x, http://h/b.png 2x\">\
                    <source srcset=\"http://h/gone.png\"><p> srcset=\"not an attribute\"</p>";
        let out = rewrite(html, &mut |url| match url {
            "http://h/a.png?x=1&y=2" => Some("assets/a.png".into()),
            "http://h/b.png" => Some("assets/b.png".into()),
            _ => None,
        });
        assert_eq!(
            out,
            "<img src=\"a\" srcset=\"assets/a.png 1x, assets/b.png 2x\"><source>\
             <p> srcset=\"not an attribute\"</p>"
        );
        assert_eq!(values(html)[0], "http://h/a.png?x=1&y=2 1x, http://h/b.png 2x");
    }
}
