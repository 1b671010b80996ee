//! Policy lives on the tool: no crate names a tool of another crate in its code, not even in text
//! a model reads (that text comes from the tool's own crate: its description, its policy's
//! guideline, the registry's spill hint). Each tool's description file (`<tool>.md` beside it,
//! read with `include_str!`) says which crate owns the name; the string literals of every other
//! crate's `src/` (outside its `#[cfg(test)]` modules) must not contain it. And every tool the
//! binary lists has such a file.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Literals that are a tool's name without naming the tool: (file or folder, the literal's tool
/// name, why). Configuration keys are the user's file format, named after the tool they set; the
/// one-word names are ordinary words elsewhere.
const NOT_A_TOOL: &[(&str, &str, &str)] = &[
    ("crates/dirs/src/lib.rs", "secrets", "the secret store's folder under the state folder"),
    ("crates/fs/src/placeholders.rs", "bash", "a file type (script.bash) an env file is not"),
    (
        "crates/cli/src/settings/",
        "*",
        "configuration sections and keys ([web_search], ask_user.timeout_ms)",
    ),
    (
        "crates/reference/src/args.rs",
        "glob",
        "reference_project's op, which runs the fs tool's code",
    ),
    (
        "crates/reference/src/args.rs",
        "grep",
        "reference_project's op, which runs the fs tool's code",
    ),
    ("crates/scan/src/", "secrets", "run_security_scan's check of that name"),
    ("crates/secrets/src/store.rs", "secrets", "the store's folder under the state folder"),
];

fn not_a_tool(file: &str, tool: &str) -> bool {
    NOT_A_TOOL.iter().any(|(at, name, _)| file.starts_with(at) && (*name == "*" || *name == tool))
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn files(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, ext, out);
        } else if path.extension().is_some_and(|e| e == ext) {
            out.push(path);
        }
    }
}

fn crates() -> Vec<(String, PathBuf)> {
    let mut crates: Vec<(String, PathBuf)> = std::fs::read_dir(workspace().join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("src").is_dir())
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), p.join("src")))
        .collect();
    crates.sort();
    crates
}

/// Tool name → the crate whose `src/` holds its description file.
fn owners() -> BTreeMap<String, String> {
    let mut owners = BTreeMap::new();
    for (name, src) in crates() {
        let mut docs = Vec::new();
        files(&src, "md", &mut docs);
        for doc in docs {
            let tool = doc.file_stem().unwrap().to_string_lossy().into_owned();
            if let Some(other) = owners.insert(tool.clone(), name.clone()) {
                panic!("{tool}.md is in two crates: {other} and {name}");
            }
        }
    }
    owners
}

/// The string literals of Rust `source` (normal, byte and raw), with their line numbers; comments
/// and char literals skipped.
fn literals(source: &str) -> Vec<(usize, String)> {
    let chars: Vec<char> = source.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\n' => {
                line += 1;
                i += 1;
            }
            '/' if at(i + 1) == '/' => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '/' if at(i + 1) == '*' => {
                i += 2;
                while i < chars.len() && !(chars[i] == '*' && at(i + 1) == '/') {
                    line += usize::from(chars[i] == '\n');
                    i += 1;
                }
                i += 2;
            }
            '\'' => {
                // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
                if at(i + 1) == '\\' {
                    i += 3;
                    while i < chars.len() && chars[i] != '\'' {
                        i += 1;
                    }
                    i += 1;
                } else if at(i + 2) == '\'' {
                    i += 3;
                } else {
                    i += 1;
                }
            }
            'r' if (at(i + 1) == '"' || at(i + 1) == '#')
                && (i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_')) =>
            {
                let mut j = i + 1;
                let mut hashes = 0;
                while at(j) == '#' {
                    hashes += 1;
                    j += 1;
                }
                if at(j) != '"' {
                    i += 1;
                    continue;
                }
                let start = line;
                let mut text = String::new();
                j += 1;
                loop {
                    if j >= chars.len() {
                        break;
                    }
                    if chars[j] == '"' && (1..=hashes).all(|k| at(j + k) == '#') {
                        j += 1 + hashes;
                        break;
                    }
                    line += usize::from(chars[j] == '\n');
                    text.push(chars[j]);
                    j += 1;
                }
                out.push((start, text));
                i = j;
            }
            '"' => {
                let start = line;
                let mut text = String::new();
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    if chars[i] == '\\' {
                        // A line continuation joins the next line's text without its indent.
                        if at(i + 1) == '\n' {
                            line += 1;
                            i += 2;
                            while at(i) == ' ' {
                                i += 1;
                            }
                            continue;
                        }
                        text.push(chars[i]);
                        i += 1;
                    }
                    line += usize::from(chars[i] == '\n');
                    text.push(chars[i]);
                    i += 1;
                }
                out.push((start, text));
                i += 1;
            }
            _ => i += 1,
        }
    }
    out
}

/// `source` without its unit tests (the `#[cfg(test)]` module at the bottom, as the style has it).
fn without_tests(source: &str) -> &str {
    source.find("#[cfg(test)]\nmod").map_or(source, |at| &source[..at])
}

/// Whether `text` names `tool`: as a whole word for a name with an underscore (`read_file`), as
/// the whole literal for a one-word name (`bash`, `grep`: common words too).
fn names(text: &str, tool: &str) -> bool {
    if !tool.contains('_') {
        return text == tool;
    }
    let word = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(tool).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + tool.len()..].chars().next();
        !before.is_some_and(word) && !after.is_some_and(word)
    })
}

#[test]
fn no_crate_names_another_crates_tool() {
    let owners = owners();
    assert!(owners.contains_key("read_file") && owners.contains_key("bash"), "{owners:?}");
    let mut found = Vec::new();
    for (krate, src) in crates() {
        let mut sources = Vec::new();
        files(&src, "rs", &mut sources);
        for file in sources {
            let source = std::fs::read_to_string(&file).unwrap();
            for (line, text) in literals(without_tests(&source)) {
                for (tool, owner) in &owners {
                    let shown = file.strip_prefix(workspace()).unwrap().display().to_string();
                    if *owner != krate && names(&text, tool) && !not_a_tool(&shown, tool) {
                        found.push(format!("{shown}:{line}: {tool} (of {owner}) in {text:?}"));
                    }
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "tool names outside their own crate (move the text to the tool's crate: its description, \
         its policy's guideline, or a hook the tool's crate sets):\n{}",
        found.join("\n")
    );
}

#[test]
fn every_listed_tool_has_a_description_file() {
    let owners = owners();
    let project = tempfile::tempdir().unwrap();
    let out = assert_cmd::Command::cargo_bin("hands")
        .unwrap()
        .args(["tools", "--json", "--root"])
        .arg(project.path())
        .env_remove("HANDS_MODEL__MODEL")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let tools: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let tools = tools.as_array().or_else(|| tools["tools"].as_array()).cloned().unwrap();
    assert!(tools.len() >= 10, "{tools:?}");
    let missing: Vec<String> = tools
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .filter(|name| !name.starts_with("mcp__") && !owners.contains_key(*name))
        .map(str::to_owned)
        .collect();
    assert!(missing.is_empty(), "tools without a <name>.md description file: {missing:?}");
}

#[test]
fn the_literal_scanner_sees_what_the_check_needs() {
    let source = "let a = 'x'; fn f<'a>() {} // \"read_file\" in a comment\n\
                  /* \"bash\" */ let b = \"use read_file\\\n      here\"; let c = r#\"grep\"#;\n\
                  let d = \"bash\";";
    let found = literals(source);
    let texts: Vec<&str> = found.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(texts, ["use read_filehere", "grep", "bash"], "{found:?}");
    assert_eq!(found[2].0, 4);
    assert!(names("use read_file here", "read_file"));
    assert!(!names("use read_files here", "read_file"));
    assert!(!names("bash -c", "bash") && names("bash", "bash"));
}
