//! The README cannot drift from what hands is:
//! - its tool tables (and docs/tools.md's) are what `hands tools --markdown` prints for a project that offers every tool
//!   (a static site: the preview tools; a model: spawn_subagent; an MCP server: mcp_list and
//!   mcp_call; a reference project: reference_project; a connector file: connector_call and
//!   connector_scaffold), each between its `<!-- tools:KEY -->` markers;
//! - the Layout table of docs/guide/development.md lists the workspace's members with each crate's
//!   package name and the `description` of its Cargo.toml;
//! - the README's MCP client snippets are the ones docs/guide/mcp-clients.md holds, which the client
//!   suite (tests/clients) runs as written;
//! - no tracked file points at documents outside the repository.
//!
//! After an intended change to the tools, `HANDS_UPDATE_DOCS=1 cargo nextest run -p hands --test
//! readme` rewrites the tool tables in place (review the diff).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use assert_cmd::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn readme() -> String {
    std::fs::read_to_string(repo().join("README.md")).unwrap()
}

/// The guide page that holds the Layout table.
const LAYOUT_PAGE: &str = "docs/guide/development.md";

/// The README's first screen, in lines: what hands is, its two commands and the MCP set-up.
const FIRST_SCREEN: usize = 60;

/// The guide page whose client snippets tests/clients runs as written.
const CLIENTS_PAGE: &str = "docs/guide/mcp-clients.md";

/// Every `<!-- KIND:KEY -->…<!-- /KIND:KEY -->` block of `text`, markers included, by key.
fn blocks(text: &str, kind: &str) -> Vec<(String, String)> {
    let open = format!("<!-- {kind}:");
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(&open) {
        let after = &rest[start + open.len()..];
        let key = after[..after.find(" -->").expect("a marker ends with ` -->`")].to_owned();
        let close = format!("<!-- /{kind}:{key} -->\n");
        let end = rest[start..].find(&close).unwrap_or_else(|| panic!("{key} is not closed"));
        found.push((key, rest[start..start + end + close.len()].to_owned()));
        rest = &rest[start + end + close.len()..];
    }
    found
}

/// `hands tools --markdown` in a project that offers every tool.
fn tools_markdown() -> String {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("proj");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(home.join(".config/hands")).unwrap();
    std::fs::create_dir_all(tmp.path().join("inner-home")).unwrap();
    std::fs::write(root.join("index.html"), "<h1>hi</h1>\n").unwrap();
    // A package with a database, a document and a skill: every project-gated tool.
    std::fs::write(root.join("package.json"), "{}\n").unwrap();
    std::fs::write(root.join("brief.pdf"), "%PDF-1.4\n").unwrap();
    std::fs::create_dir_all(root.join("supabase")).unwrap();
    std::fs::write(root.join("supabase/config.toml"), "").unwrap();
    std::fs::create_dir_all(root.join(".hands/skills/notes")).unwrap();
    std::fs::write(
        root.join(".hands/skills/notes/SKILL.md"),
        "---\nname: notes\ndescription: Take notes\n---\nWrite them down.\n",
    )
    .unwrap();
    // A connector: connector_call and connector_scaffold.
    std::fs::create_dir_all(root.join(".hands/connectors")).unwrap();
    std::fs::write(
        root.join(".hands/connectors/example.toml"),
        "base_url = \"https://api.example.com\"\nallowed_paths = [\"/items\"]\n",
    )
    .unwrap();
    let bin = assert_cmd::cargo::cargo_bin("hands");
    std::fs::write(
        home.join(".config/hands/config.toml"),
        format!(
            "[model]\nmodel = \"test-model\"\n\n[web_search]\nprovider = \"searxng\"\nbase_url = \"http://127.0.0.1:9\"\n\n[web_scrape]\nbuiltin = true\n\n[mcp_servers.inner]\ncommand = {:?}\nargs = [\"mcp\", \"--root\", {:?}]\nenv = {{ HOME = {:?} }}\n\n[reference_projects]\nshop = \"/nonexistent/shop\"\n",
            bin.display().to_string(),
            root.display().to_string(),
            // The inner hands must not read this configuration (it would start itself again).
            tmp.path().join("inner-home").display().to_string()
        ),
    )
    .unwrap();
    let out = Command::cargo_bin("hands")
        .unwrap()
        .env("HOME", &home)
        .env_remove("XDG_CONFIG_HOME")
        // image_gen is offered while its key exists.
        .env("FAL_KEY", "fal-readme-placeholder-key")
        .current_dir(&root)
        .timeout(std::time::Duration::from_secs(60))
        .args(["tools", "--markdown", "--root"])
        .arg(&root)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn readme_tool_tables_are_the_registrys() {
    let markdown = tools_markdown();
    let generated = blocks(&markdown, "tools");
    let keys: Vec<&str> = generated.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        keys,
        [
            "files",
            "search",
            "processes",
            "session",
            "delegation",
            "mcp",
            "preview",
            "web",
            "connectors",
            "data",
            "project"
        ],
        "{markdown}"
    );
    for name in [
        "`read_file` (`read`)",
        "`bash`",
        "`exit_plan_mode`",
        "`spawn_subagent`",
        "`mcp_list`",
        "`mcp_call`",
        "`preview_open`",
        "`download_to_repo`",
        "`enable_stripe`",
        "`connect_supabase`",
        "`parse_document`",
        "`run_security_scan`",
        "`web_scrape`",
        "`image_gen`",
        "`connector_call`",
        "`connector_scaffold`",
        "`clone_site`",
    ] {
        assert!(markdown.contains(&format!("| {name} |")), "{name} is not listed:\n{markdown}");
    }
    // A remote server's tools are the user's, not hands': no row for them.
    assert!(!markdown.contains("mcp__inner__"), "{markdown}");
    for file in ["README.md", "docs/tools.md"] {
        let mut text = std::fs::read_to_string(repo().join(file)).unwrap();
        if std::env::var_os("HANDS_UPDATE_DOCS").is_some() {
            // After an intended change: put the new tables in place, then review the diff.
            for (key, old) in blocks(&text, "tools") {
                if let Some((_, new)) = generated.iter().find(|(k, _)| *k == key) {
                    text = text.replace(&old, new);
                }
            }
            std::fs::write(repo().join(file), &text).unwrap();
        }
        let published = blocks(&text, "tools");
        for (key, block) in &generated {
            assert!(
                published.iter().any(|(k, b)| k == key && b == block),
                "{file}'s `{key}` tool table differs from `hands tools --markdown`; paste this \
                 block in its place:\n{block}"
            );
        }
        assert_eq!(
            published.len(),
            generated.len(),
            "{file} has a tool table hands does not print"
        );
    }
}

/// The workspace's members, from the root Cargo.toml.
fn members() -> Vec<String> {
    let manifest: toml::Value =
        toml::from_str(&std::fs::read_to_string(repo().join("Cargo.toml")).unwrap()).unwrap();
    manifest["workspace"]["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn layout_table_is_the_workspace() {
    let mut table =
        String::from("<!-- layout:crates -->\n| crate | package | holds |\n|---|---|---|\n");
    for member in members() {
        let manifest: toml::Value = toml::from_str(
            &std::fs::read_to_string(repo().join(&member).join("Cargo.toml")).unwrap(),
        )
        .unwrap();
        let package = &manifest["package"];
        let name = package["name"].as_str().unwrap();
        let description = package
            .get("description")
            .and_then(toml::Value::as_str)
            .unwrap_or_else(|| panic!("{member}/Cargo.toml has no description"));
        table.push_str(&format!("| `{member}` | `{name}` | {description} |\n"));
    }
    table.push_str("<!-- /layout:crates -->\n");
    let page = std::fs::read_to_string(repo().join(LAYOUT_PAGE)).unwrap();
    assert!(
        page.contains(&table),
        "{LAYOUT_PAGE}'s Layout table differs from the workspace (members and each crate's \
         description); put this in its place:\n{table}"
    );
}

/// Every `<!-- client-suite: NAME -->` marker of `text` with the fenced block that follows it
/// (the marker, the blank space and the fences included), in order.
fn client_blocks(text: &str) -> Vec<(String, String)> {
    let open = "<!-- client-suite: ";
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(open) {
        let after = &rest[start + open.len()..];
        let name = after[..after.find(" -->").expect("a marker ends with ` -->`")].to_owned();
        let fence = after.find("```").unwrap_or_else(|| panic!("{name} has no code block"));
        let body = &after[fence + 3..];
        let close =
            body.find("\n```").unwrap_or_else(|| panic!("{name}'s code block is not closed"));
        let end = start + open.len() + fence + 3 + close + 4;
        found.push((name, rest[start..end].to_owned()));
        rest = &rest[end..];
    }
    found
}

#[test]
fn readme_client_snippets_are_the_tested_ones() {
    let guide = std::fs::read_to_string(repo().join(CLIENTS_PAGE)).unwrap();
    let tested = client_blocks(&guide);
    let names: Vec<&str> = tested.iter().map(|(n, _)| n.as_str()).collect();
    // What tests/clients reads (readme_block in tests/clients/task.py), each once.
    for name in [
        "hands-serve",
        "claude-stdio",
        "claude-http",
        "claude-run",
        "codex-stdio",
        "codex-http",
        "codex-run",
        "gemini-stdio",
        "gemini-http",
        "gemini-run",
        "inspector-stdio",
        "inspector-http",
    ] {
        let count = names.iter().filter(|n| **n == name).count();
        assert_eq!(count, 1, "{CLIENTS_PAGE} should mark one `{name}` block; it has {count}");
    }
    // Every name tests/clients asks for is marked there too.
    for file in std::fs::read_dir(repo().join("tests/clients")).unwrap() {
        let path = file.unwrap().path();
        if path.extension().is_none_or(|e| e != "py") {
            continue;
        }
        let source = std::fs::read_to_string(&path).unwrap();
        for piece in source.split("readme_block(\"").skip(1) {
            let name = &piece[..piece.find('"').unwrap()];
            assert!(
                names.contains(&name),
                "{} reads `{name}`, which {CLIENTS_PAGE} lacks",
                path.display()
            );
        }
    }
    let readme = readme();
    let shown = client_blocks(&readme);
    let shown_names: Vec<&str> = shown.iter().map(|(n, _)| n.as_str()).collect();
    // The README's first screen: the shortest form for each of the three clients.
    for name in ["claude-stdio", "codex-stdio", "gemini-stdio"] {
        assert!(shown_names.contains(&name), "the README shows no `{name}` block: {shown_names:?}");
    }
    let (_, last) = shown.last().unwrap();
    let last_line = readme[..readme.find(last.as_str()).unwrap() + last.len()].lines().count();
    assert!(
        last_line <= FIRST_SCREEN,
        "the README's MCP set-up ends on line {last_line}; it should fit its first {FIRST_SCREEN}"
    );
    for (name, block) in &shown {
        let (_, original) = tested.iter().find(|(n, _)| n == name).unwrap();
        assert_eq!(
            block, original,
            "README.md's `{name}` snippet differs from {CLIENTS_PAGE}'s, which tests/clients runs"
        );
    }
}

#[test]
fn no_tracked_file_points_outside_the_repository() {
    // Spelled in pieces so that this file does not name them itself.
    let outside =
        [["..", "/shared"].concat(), ["TOOLS", ".md"].concat(), ["DESIGN", ".md"].concat()];
    let listed = std::process::Command::new("git")
        .arg("-C")
        .arg(repo())
        .args(["ls-files", "-z"])
        .output()
        .unwrap();
    assert!(listed.status.success(), "git ls-files: {}", String::from_utf8_lossy(&listed.stderr));
    let files: Vec<&[u8]> = listed.stdout.split(|b| *b == 0).filter(|f| !f.is_empty()).collect();
    assert!(files.len() > 50, "git ls-files listed {} files", files.len());
    let mut found = Vec::new();
    for file in files {
        let path = repo().join(String::from_utf8_lossy(file).as_ref());
        // A file deleted in the work tree, or one that is not text, cannot point anywhere.
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        for (n, line) in text.lines().enumerate() {
            if outside.iter().any(|o| line.contains(o.as_str())) {
                found.push(format!("{}:{}: {line}", path.display(), n + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "these lines point at documents a clone does not have; say what they mean, or point at \
         docs/:\n{}",
        found.join("\n")
    );
}
