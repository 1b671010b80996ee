//! A plan's Markdown as the terminal shows it: headings without their `#`s, list items with a
//! bullet, code blocks indented, and on a terminal simple ANSI styles (bold headings and
//! `**strong**` text, dim code blocks, cyan `code`); plain text when stdout is a file or a pipe.
//! Line by line, no full parser: a plan is short, and what is not understood is shown as written.
//! Every piece of the text is escaped ([`term::text`]); the styles are the only control bytes.

use crate::term;

const BOLD: &str = "\x1b[1m";
const BOLD_UNDERLINE: &str = "\x1b[1;4m";
const DIM: &str = "\x1b[2m";
const CYAN: &str = "\x1b[36m";
const RESET: &str = "\x1b[0m";

/// `markdown` rendered for the terminal, each line ending with a line break; `styled`: add ANSI
/// styles (stdout is a terminal).
pub fn render(markdown: &str, styled: bool) -> String {
    let style = |code: &str, text: &str| {
        if styled { format!("{code}{text}{RESET}") } else { text.to_owned() }
    };
    let mut out = String::new();
    let mut in_code = false;
    for raw in markdown.lines() {
        let trimmed = raw.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_code = !in_code;
            continue;
        }
        let line = if in_code {
            format!("    {}", style(DIM, &term::text(raw)))
        } else if let Some((level, title)) = heading(trimmed) {
            let title = inline(title, styled);
            if level == 1 { style(BOLD_UNDERLINE, &title) } else { style(BOLD, &title) }
        } else if let Some(item) = ["- ", "* ", "+ "].iter().find_map(|b| trimmed.strip_prefix(b)) {
            let indent = raw.len() - trimmed.len();
            format!("{}  • {}", " ".repeat(indent), inline(item, styled))
        } else {
            inline(raw, styled)
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// `# Title` → `(1, "Title")`, up to six `#`s followed by a space.
fn heading(line: &str) -> Option<(usize, &str)> {
    let level = line.chars().take_while(|c| *c == '#').count();
    let title = line[level..].strip_prefix(' ')?;
    (1..=6).contains(&level).then_some((level, title.trim()))
}

/// One line's text escaped, with `**strong**` in bold and `` `code` `` in cyan when `styled`
/// (the markers are kept as written otherwise).
fn inline(text: &str, styled: bool) -> String {
    let text = term::line(text);
    if !styled {
        return text;
    }
    let mut out = String::new();
    let mut rest = text.as_str();
    loop {
        let strong = rest.find("**");
        let code = rest.find('`');
        let (at, marker, code_style) = match (strong, code) {
            (Some(s), Some(c)) if c < s => (c, "`", CYAN),
            (Some(s), _) => (s, "**", BOLD),
            (None, Some(c)) => (c, "`", CYAN),
            (None, None) => break,
        };
        let after = &rest[at + marker.len()..];
        let Some(end) = after.find(marker) else { break };
        out.push_str(&rest[..at]);
        out.push_str(code_style);
        out.push_str(&after[..end]);
        out.push_str(RESET);
        rest = &after[end + marker.len()..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: &str = "# Build plan\n\nFirst **read** the `src` folder.\n\n## Steps\n- one\n  - \
                        nested\n1. numbered\n```sh\nnpm test\n```\n";

    // Issue 34, item 4: a plan was shown as the model wrote it (or as JSON in the web UI).
    #[test]
    fn a_plan_renders_plain_without_a_terminal() {
        assert_eq!(
            render(PLAN, false),
            "Build plan\n\nFirst **read** the `src` folder.\n\nSteps\n  • one\n    • nested\n1. \
             numbered\n    npm test\n"
        );
    }

    #[test]
    fn a_plan_is_styled_on_a_terminal_and_its_text_escaped() {
        let styled = render(PLAN, true);
        assert!(styled.starts_with("\x1b[1;4mBuild plan\x1b[0m\n"), "{styled:?}");
        assert!(
            styled.contains("First \x1b[1mread\x1b[0m the \x1b[36msrc\x1b[0m folder."),
            "{styled:?}"
        );
        assert!(styled.contains("    \x1b[2mnpm test\x1b[0m\n"), "{styled:?}");
        let evil = render("# x\x1b]0;owned\x07\n- \x1b[2Kitem", true);
        assert!(evil.contains("x\\e]0;owned\\x07"), "{evil:?}");
        assert!(evil.contains("• \\e[2Kitem"), "{evil:?}");
        assert_eq!(heading("#nospace"), None);
        assert_eq!(heading("####### seven"), None);
    }
}
