//! Results every client shows the model in full, through the real binary (`hands tools --json`,
//! `hands call --json`).
//!
//! Claude Code and Codex give the model a result's `structuredContent` instead of its text when a
//! result has both. So a tool that declares an output schema returns structured content on every
//! success, that content validates against the schema (checked with the `jsonschema` crate), and it
//! holds what the text says: bash's output, edit_file's diff, each grep match, … A tool without an
//! output schema returns no structured content. See docs/tools.md ("Results: text and structured
//! content").
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::{Value, json};

// The real PostgreSQL connect_supabase's result is checked against.
#[path = "../../../connect/tests/it/common/postgres.rs"]
mod postgres;

/// Where rustup and cargo keep their state for the real user (the tests change HOME).
fn rustup_home() -> PathBuf {
    std::env::var_os("RUSTUP_HOME").map_or_else(|| real_home().join(".rustup"), PathBuf::from)
}

fn cargo_home() -> PathBuf {
    std::env::var_os("CARGO_HOME").map_or_else(|| real_home().join(".cargo"), PathBuf::from)
}

fn real_home() -> PathBuf {
    PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
}

struct Project {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    /// Extra `-c key=value` settings for every call.
    settings: Vec<String>,
}

impl Project {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("proj");
        std::fs::create_dir_all(root.join("src")).unwrap();
        // A static site, so that the preview tools are offered.
        std::fs::write(root.join("index.html"), "<h1>hi</h1>\n").unwrap();
        // hands itself as an MCP server of hands, so that mcp_list is offered (user settings).
        let home = tmp.path().join("home");
        std::fs::create_dir_all(home.join(".config/hands")).unwrap();
        std::fs::create_dir_all(tmp.path().join("inner-home")).unwrap();
        let bin = assert_cmd::cargo::cargo_bin("hands");
        std::fs::write(
            home.join(".config/hands/config.toml"),
            format!(
                "[mcp_servers.inner]\ncommand = {:?}\nargs = [\"mcp\", \"--root\", {:?}]\n\
                 env = {{ HOME = {:?} }}\n",
                bin.display().to_string(),
                root.display().to_string(),
                // The inner hands must not read this configuration (it would start itself again).
                tmp.path().join("inner-home").display().to_string()
            ),
        )
        .unwrap();
        Self { _tmp: tmp, root, settings: Vec::new() }
    }

    fn home(&self) -> PathBuf {
        self.root.parent().unwrap().join("home")
    }

    fn hands(&self) -> Command {
        let mut cmd = Command::cargo_bin("hands").unwrap();
        cmd.env("HOME", self.home())
            // cargo (add_dependency's) is rustup's proxy, which finds its toolchains from HOME.
            .env("RUSTUP_HOME", rustup_home())
            .env("CARGO_HOME", cargo_home())
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("HANDS_APPROVAL")
            // The user's secret store, in the test's folder.
            .env("XDG_STATE_HOME", self.root.parent().unwrap().join("state"))
            .current_dir(&self.root)
            .timeout(std::time::Duration::from_secs(90));
        for setting in &self.settings {
            cmd.args(["-c", setting]);
        }
        cmd
    }

    fn put(&self, path: &str, body: &str) {
        let path = self.root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, body).unwrap();
    }

    /// Every tool's output schema (None for the tools without one), from `hands tools --json`.
    fn output_schemas(&self) -> BTreeMap<String, Option<Value>> {
        let out =
            self.hands().args(["tools", "--json", "--root"]).arg(&self.root).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let list: Value = serde_json::from_slice(&out.stdout).unwrap();
        list["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| (t["name"].as_str().unwrap().to_owned(), t.get("outputSchema").cloned()))
            .collect()
    }

    /// `hands call TOOL ARGS --json`: the whole result.
    fn call(&self, tool: &str, args: &Value) -> Value {
        let out = self
            .hands()
            .args(["call", tool, &args.to_string(), "--json", "--root"])
            .arg(&self.root)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        serde_json::from_str(&stdout).unwrap_or_else(|e| {
            panic!(
                "{tool} {args}: not JSON ({e}):\n{stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        })
    }
}

/// The joined text and the structured content of a successful result of `tool`, after checking the
/// rule: structured content present exactly when the tool has an output schema, and valid.
fn checked(
    schemas: &BTreeMap<String, Option<Value>>,
    tool: &str,
    result: &Value,
) -> (String, Value) {
    assert_eq!(result["isError"], false, "{tool}: {result:#}");
    let text: Vec<&str> =
        result["content"].as_array().unwrap().iter().filter_map(|c| c["text"].as_str()).collect();
    let text = text.join("\n");
    let schema = schemas.get(tool).unwrap_or_else(|| panic!("{tool} is not offered"));
    let structured = result.get("structuredContent").cloned();
    match (schema, structured) {
        (None, None) => (text, Value::Null),
        (None, Some(s)) => {
            panic!("{tool} returns structured content without an output schema: {s}")
        }
        (Some(_), None) => {
            panic!("{tool} declares an output schema but returned no structured content")
        }
        (Some(schema), Some(structured)) => {
            let validator = jsonschema::validator_for(schema)
                .unwrap_or_else(|e| panic!("{tool}: its output schema does not compile: {e}"));
            let errors: Vec<String> = validator
                .iter_errors(&structured)
                .map(|e| format!("{} at {}", e, e.instance_path()))
                .collect();
            assert!(
                errors.is_empty(),
                "{tool}: structured content fails its own schema: {errors:?}\n{structured:#}"
            );
            (text, structured)
        }
    }
}

/// Each of `needles` (from the text) is in `structured` too, as (part of) some string.
fn holds(tool: &str, structured: &Value, needles: &[&str]) {
    let mut strings = Vec::new();
    collect_strings(structured, &mut strings);
    for needle in needles {
        assert!(
            strings.iter().any(|s| s.contains(needle)),
            "{tool}: the text says {needle:?} but the structured content does not:\n{structured:#}"
        );
    }
}

fn collect_strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => out.push(s.clone()),
        Value::Number(n) => out.push(n.to_string()),
        Value::Array(items) => items.iter().for_each(|v| collect_strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| collect_strings(v, out)),
        _ => {}
    }
}

/// The tools this test exercises; every tool with an output schema must be among them.
const EXERCISED: &[&str] = &[
    "secrets",
    "write_file",
    "edit_file",
    "apply_patch",
    "glob",
    "repo_map",
    "grep",
    "bash",
    "spawn_process",
    "terminal_start",
    // terminal_send and terminal_read answer terminal_start's result type; a one-shot `hands call`
    // has no running terminal to type into, so they are exercised through the registry's
    // debug-build schema check in hands-exec's terminal tests and over MCP by the Python SDK, which
    // validates structured content against the output schema (tests/mcp/test_terminal.py).
    "terminal_send",
    "terminal_read",
    "list_processes",
    "todo_write",
    "preview_status",
    "read_runtime_errors",
    "mcp_list",
    "download_to_repo",
    "enable_stripe",
    "connect_supabase",
    "db_schema",
    "supabase_setup",
    "clone_site",
    "add_dependency",
    "run_security_scan",
    "web_scrape",
    "image_gen",
    "diagnostics",
    "code_navigation",
];

#[test]
fn every_tool_with_an_output_schema_is_exercised_here() {
    let p = Project::new();
    let schemas = p.output_schemas();
    for name in ["preview_status", "mcp_list", "mcp__inner__bash"] {
        assert!(schemas.contains_key(name), "{name} is not offered: {:?}", schemas.keys());
    }
    for (name, schema) in &schemas {
        // mcp__inner__*: hands' own tools, proxied; their schemas are checked under their own names.
        if schema.is_some() && !name.starts_with("mcp__") && name != "preview_open" {
            assert!(
                EXERCISED.contains(&name.as_str()),
                "{name} has an output schema: test it here"
            );
        }
    }
}

#[test]
fn file_tools_structured_results_hold_what_the_text_says() {
    let p = Project::new();
    let schemas = p.output_schemas();

    let r = p.call(
        "write_file",
        &json!({"path": "src/lib.rs", "content": "fn alpha() {}\nfn beta() {}\n"}),
    );
    let (text, s) = checked(&schemas, "write_file", &r);
    assert!(text.contains("Created src/lib.rs (2 lines, 27 bytes)"), "{text}");
    assert_eq!(s, json!({"action": "created", "path": "src/lib.rs", "lines": 2, "bytes": 27}));

    let r = p.call(
        "edit_file",
        &json!({"path": "src/lib.rs", "old_string": "fn beta() {}", "new_string": "fn gamma() {}"}),
    );
    let (text, s) = checked(&schemas, "edit_file", &r);
    assert!(text.contains("-fn beta() {}") && text.contains("+fn gamma() {}"), "{text}");
    let diff = s["diff"].as_str().unwrap();
    assert!(
        text.contains(diff.trim_end()),
        "the text's diff is the structured diff:\n{text}\n{diff}"
    );
    assert!(diff.contains("-fn beta() {}") && diff.contains("+fn gamma() {}"), "{diff}");
    assert_eq!(s["replacements"], 1);

    let patch = "*** Begin Patch\n*** Update File: src/lib.rs\n@@\n-fn alpha() {}\n+fn delta() {}\n*** Add File: notes/new.txt\n+new\n*** End Patch\n";
    let r = p.call("apply_patch", &json!({"input": patch}));
    let (text, s) = checked(&schemas, "apply_patch", &r);
    assert!(text.contains("M src/lib.rs (+1 -1): hunk 1 at line 1 exact"), "{text}");
    assert!(text.contains("A notes/new.txt (+1 -0)"), "{text}");
    assert_eq!((&s["lines_added"], &s["lines_removed"]), (&json!(2), &json!(1)));
    assert_eq!(s["files"][0]["hunks"][0], json!({"line": 1, "level": "exact"}));
    assert_eq!(s["files"][1]["action"], "added");

    for i in 0..3 {
        p.put(&format!("src/m{i}.rs"), &format!("// one\nlet needle_{i} = 1;\n// two\n"));
    }
    let r = p.call("glob", &json!({"pattern": "**/*.rs", "limit": 2}));
    let (text, s) = checked(&schemas, "glob", &r);
    let listed: Vec<&str> = text.lines().filter(|l| l.ends_with(".rs")).collect();
    assert_eq!(listed.len(), 2, "{text}");
    holds("glob", &s, &listed);
    assert!(text.contains("… and 2 more"), "{text}");
    assert_eq!((s["total"].clone(), s["truncated"].clone()), (json!(4), json!(true)));

    let r = p.call("grep", &json!({"pattern": "needle_", "context": 1}));
    let (text, s) = checked(&schemas, "grep", &r);
    let shown: Vec<&str> = text.lines().filter(|l| l.starts_with("src/")).collect();
    assert_eq!(shown.len(), 9, "3 matches with one context line each side:\n{text}");
    for line in shown {
        // `path:line:text` for a match, `path-line-text` for context.
        let (path, rest) = line.split_once(".rs").unwrap();
        let mut parts = rest[1..].splitn(2, [':', '-']);
        let (number, body) = (parts.next().unwrap(), parts.next().unwrap());
        let kind = if rest.starts_with(':') { "matches" } else { "context_lines" };
        let found = s[kind].as_array().unwrap().iter().any(|m| {
            m["path"] == format!("{path}.rs")
                && m["line"] == number.parse::<u64>().unwrap()
                && m["text"] == body
        });
        assert!(found, "grep: {line:?} is not in `{kind}`:\n{s:#}");
    }
    assert!(text.contains("(showing 1-3 of 3 matching lines in 3 files)"), "{text}");
    assert_eq!((s["total_matches"].clone(), s["total_files"].clone()), (json!(3), json!(3)));

    let r = p.call("grep", &json!({"pattern": "needle_", "output_mode": "count"}));
    let (text, s) = checked(&schemas, "grep", &r);
    holds("grep", &s, &["src/m0.rs", "src/m1.rs", "src/m2.rs"]);
    assert!(text.contains("src/m1.rs:1"), "{text}");

    p.put("src/main.rs", "fn main() { delta(); }\n");
    let r = p.call("repo_map", &json!({"path": "src", "max_tokens": 500}));
    let (text, s) = checked(&schemas, "repo_map", &r);
    assert!(text.contains("src/lib.rs:\n  1│fn delta() {}"), "{text}");
    // Every file and signature the text shows is in the structured result.
    let files = text.lines().filter(|l| l.ends_with(".rs:")).map(|l| l.trim_end_matches(':'));
    let defs = text.lines().filter(|l| l.starts_with("  ")).map(|l| l.split_once('│').unwrap().1);
    let shown: Vec<&str> = files.chain(defs).collect();
    assert!(shown.len() >= 4, "{text}");
    holds("repo_map", &s, &shown);
    assert_eq!(s["files"][0]["definitions"][0]["referenced_by"], 1);
}

#[test]
fn bash_structured_result_is_the_whole_result() {
    let mut p = Project::new();
    let schemas = p.output_schemas();

    let r = p.call("bash", &json!({"command": "echo out-line; echo err-line >&2; exit 3"}));
    // A non-zero exit is a successful call (the model reads the code).
    let (text, s) = checked(&schemas, "bash", &r);
    assert!(
        text.contains("out-line") && text.contains("err-line") && text.contains("[exit code 3]")
    );
    let output = s["output"].as_str().unwrap();
    assert!(output.contains("out-line\n") && output.contains("err-line\n"), "{output}");
    assert_eq!(s["exit_code"], 3);
    assert!(s.get("signal").is_none() && s["duration_ms"].is_u64(), "{s}");

    let r = p.call("bash", &json!({"command": "kill -TERM $$"}));
    let (text, s) = checked(&schemas, "bash", &r);
    assert!(text.contains("killed by signal 15"), "{text}");
    assert_eq!(s["signal"], 15);
    assert!(s.get("exit_code").is_none(), "{s}");

    // Past bash's own head+tail capture: the dropped count is in the output string.
    p.settings = vec!["bash.max_output_bytes=2000".into()];
    let r = p.call("bash", &json!({"command": "seq 1 20000"}));
    let (text, s) = checked(&schemas, "bash", &r);
    let output = s["output"].as_str().unwrap();
    assert!(output.starts_with("1\n2\n") && output.ends_with("19999\n20000\n"), "{output}");
    assert!(output.contains(" bytes dropped] …"), "{output}");
    assert!(text.contains(output.trim_end()), "the text shows the same output");
    assert!(s["dropped_bytes"].as_u64().unwrap() > 100_000, "{s}");

    // Past the result cap: text and structured content are both cut, and both say where the whole
    // output went.
    p.settings = vec!["output.max_bytes=4000".into()];
    let r = p.call("bash", &json!({"command": "seq 1 30000"}));
    let (text, s) = checked(&schemas, "bash", &r);
    let path = s["full_output"].as_str().unwrap();
    assert!(text.contains(path), "{text}");
    assert!(serde_json::to_string(&s).unwrap().len() <= 4000, "{s}");
    let output = s["output"].as_str().unwrap();
    assert!(output.starts_with("1\n2\n") && output.ends_with("30000\n"), "{output}");
    assert!(output.contains("… [truncated, "), "{output}");
    let full = std::fs::read_to_string(p.root.join(path)).unwrap();
    assert!(full.contains("\n15000\n") && full.contains("[exit code 0]"));
}

#[test]
fn process_session_and_preview_tools_structured_results_validate() {
    let mut p = Project::new();
    // mcp_list lists the inner hands' every tool with its whole description: with the tools of
    // issue 13 that is more than the default result cap, which would cut the descriptions.
    p.settings.push("output.max_bytes=262144".into());
    let schemas = p.output_schemas();

    let r = p.call(
        "spawn_process",
        &json!({"command": "echo spawned-line; sleep 0.2", "type": "long-run"}),
    );
    let (text, s) = checked(&schemas, "spawn_process", &r);
    assert!(text.contains("exited with code 0") && text.contains("spawned-line"), "{text}");
    assert_eq!((s["status"].clone(), s["exit_code"].clone()), (json!("exited"), json!(0)));
    holds("spawn_process", &s, &["spawned-line", s["id"].as_str().unwrap(), ".hands/processes/"]);
    let r =
        p.call("terminal_start", &json!({"command": "echo in-a-terminal; tty", "wait_for": "pts"}));
    let (text, s) = checked(&schemas, "terminal_start", &r);
    assert!(text.contains("in-a-terminal") && text.contains("/dev/pts/"), "{text}");
    holds("terminal_start", &s, &["in-a-terminal", "/dev/pts/", ".hands/processes/"]);
    let (_, s) = checked(&schemas, "list_processes", &p.call("list_processes", &json!({})));
    assert_eq!(s, json!({"processes": []}), "a one-shot session has none");

    let r = p.call(
        "todo_write",
        &json!({"todos": [
            {"id": "1", "content": "first step", "status": "in_progress"},
            {"id": "2", "content": "second step", "status": "pending"}
        ]}),
    );
    let (text, s) = checked(&schemas, "todo_write", &r);
    assert!(text.contains("first step") && text.contains("second step"), "{text}");
    holds("todo_write", &s, &["first step", "second step"]);

    let (text, s) = checked(&schemas, "preview_status", &p.call("preview_status", &json!({})));
    assert!(text.contains("Preview: "), "{text}");
    assert_eq!(s["running"], false);
    let (_, s) =
        checked(&schemas, "read_runtime_errors", &p.call("read_runtime_errors", &json!({})));
    assert_eq!(s["errors"], json!([]));
    // An error without a stack or location leaves those fields out: the schema must not require
    // them (it did: `stack` was required, so such results failed their own schema).
    let schema = schemas["read_runtime_errors"].as_ref().unwrap();
    let required = &schema["properties"]["errors"]["items"]["required"];
    for optional in ["stack", "location", "originalLocation"] {
        assert!(!required.as_array().unwrap().contains(&json!(optional)), "{required}");
    }

    // secrets lists names, scopes and hints only (this project has none).
    let r = p.call("secrets", &json!({"action": "list"}));
    let (text, s) = checked(&schemas, "secrets", &r);
    assert!(text.contains("No secrets are stored for this project"), "{text}");
    assert_eq!(s, json!({"action": "list", "secrets": []}));

    // The inner hands' whole tool list is more than the default 32 KiB a result shows.
    p.settings = vec!["output.max_bytes=131072".into()];
    let r = p.call("mcp_list", &json!({}));
    let (text, s) = checked(&schemas, "mcp_list", &r);
    assert!(text.contains("inner: "), "{text}");
    let tools = s["servers"][0]["tools"].as_array().unwrap();
    let bash = tools.iter().find(|t| t["name"] == "bash").unwrap();
    assert_eq!(bash["hands_name"], "mcp__inner__bash");
    assert!(bash["description"].as_str().unwrap().len() > 100, "descriptions are whole: {bash}");

    // Tools without an output schema give text only.
    for (tool, args) in [
        ("read_file", json!({"path": "index.html"})),
        ("list_files", json!({})),
        ("process_output", json!({"id": "p9"})),
    ] {
        let r = p.call(tool, &args);
        assert!(r.get("structuredContent").is_none(), "{tool}: {r:#}");
    }
}

#[test]
fn file_names_with_newlines_cannot_forge_lines() {
    let p = Project::new();
    let schemas = p.output_schemas();
    // A name that, printed raw, would look like two more entries of the listing.
    let evil = "a\nforged.rs\nb.rs";
    p.put(evil, "needle\n");
    let escaped = "a\\nforged.rs\\nb.rs";

    let r = p.call("glob", &json!({"pattern": "*.rs"}));
    let (text, s) = checked(&schemas, "glob", &r);
    assert!(text.lines().any(|l| l == escaped), "{text}");
    assert!(!text.lines().any(|l| l == "forged.rs"), "{text}");
    assert_eq!(s["paths"], json!([evil]), "the structured result keeps the real name");

    for mode in ["content", "files", "count"] {
        let r = p.call("grep", &json!({"pattern": "needle", "output_mode": mode}));
        let (text, s) = checked(&schemas, "grep", &r);
        assert!(!text.lines().any(|l| l.starts_with("forged.rs")), "{mode}: {text}");
        assert!(text.contains(escaped), "{mode}: {text}");
        let real = serde_json::to_string(&s).unwrap();
        assert!(real.contains(&serde_json::to_string(evil).unwrap()), "{mode}: {s}");
    }

    let r = p.call("list_files", &json!({}));
    let (text, _) = checked(&schemas, "list_files", &r);
    assert!(text.contains(escaped), "{text}");
    assert!(!text.lines().any(|l| l.trim() == "forged.rs"), "{text}");
}

/// A 1×1 PNG served once by a fixture on 127.0.0.1; returns its URL.
fn png_fixture() -> (String, Vec<u8>) {
    use std::io::{Read, Write};
    let png: Vec<u8> = vec![
        0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44,
        0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F,
        0x15, 0xC4, 0x89, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00,
        0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00, 0x00, 0x00, 0x49,
        0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
    ];
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/dot.png", listener.local_addr().unwrap());
    let body = png.clone();
    std::thread::spawn(move || {
        if let Ok((mut stream, _)) = listener.accept() {
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len());
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
        }
    });
    (url, png)
}

#[test]
fn download_to_repo_structured_result_validates() {
    let mut p = Project::new();
    p.settings.push(r#"net.allow_hosts=["127.0.0.1"]"#.into());
    let schemas = p.output_schemas();
    let (url, png) = png_fixture();
    let r = p.call("download_to_repo", &json!({"url": url, "path": "public/dot.png"}));
    let (text, s) = checked(&schemas, "download_to_repo", &r);
    assert_eq!(std::fs::read(p.root.join("public/dot.png")).unwrap(), png);
    assert_eq!((s["width"].clone(), s["height"].clone()), (json!(1), json!(1)));
    holds("download_to_repo", &s, &["public/dot.png", "image/png", &url, &png.len().to_string()]);
    assert!(text.contains(s["sha256"].as_str().unwrap()), "{text}");
}

/// An HTML page for every request on 127.0.0.1, each connection on its own thread and closed
/// after its answer (a browser keeps several open).
fn html_page(body: &'static str) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(5)));
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\
                     Connection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(body.as_bytes());
            });
        }
    });
    url
}

/// One HTTP answer to every request on 127.0.0.1 (a fake Stripe's `GET /v1/account`).
fn answering(body: &'static str) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut request = Vec::new();
            let mut buf = [0u8; 4096];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buf[..n]),
                }
            }
            let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len());
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body.as_bytes());
        }
    });
    url
}

/// enable_stripe and connect_supabase with the keys the user stored (`hands call` cannot ask),
/// against a fake Stripe and a real PostgreSQL on 127.0.0.1.
#[test]
fn connect_tools_structured_results_validate() {
    use hands_core::secret::{SecretStore as _, SecretValue};
    let mut p = Project::new();
    let stripe = answering(r#"{"id":"acct_1Result","object":"account"}"#);
    p.settings.push(r#"net.allow_hosts=["127.0.0.1"]"#.into());
    p.settings.push(format!("stripe.base_url={stripe}"));
    let schemas = p.output_schemas();
    let store = hands_secrets::Store::at(p.root.parent().unwrap().join("state/hands/secrets"));
    let key = SecretValue::new("sk_test_CANARYresult0123456789");
    store.put(&p.root, "STRIPE_SECRET_KEY", &key).unwrap();
    let (text, s) = checked(&schemas, "enable_stripe", &p.call("enable_stripe", &json!({})));
    holds("enable_stripe", &s, &["acct_1Result", "test", "STRIPE_SECRET_KEY"]);
    assert!(!text.contains("CANARY") && !s.to_string().contains("CANARY"), "{text}");

    let Some(pg) = postgres::postgres_or_skip() else { return };
    let b64 = |s: &str| {
        use base64::Engine as _;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s)
    };
    let jwt = |role: &str| {
        format!(
            "{}.{}.sig",
            b64(r#"{"alg":"HS256"}"#),
            b64(&format!(r#"{{"ref":"abcdefghijklmnopqrst","role":"{role}"}}"#))
        )
    };
    let service = SecretValue::new(jwt("service_role"));
    store.put(&p.root, "SUPABASE_SERVICE_ROLE_KEY", &service).unwrap();
    store.put(&p.root, "SUPABASE_DB_URL", &SecretValue::new(pg.url(postgres::PASSWORD))).unwrap();
    let args =
        json!({"project_url": "https://abcdefghijklmnopqrst.supabase.co", "anon_key": jwt("anon")});
    let (text, s) = checked(&schemas, "connect_supabase", &p.call("connect_supabase", &args));
    holds("connect_supabase", &s, &["abcdefghijklmnopqrst", "PostgreSQL", "SUPABASE_DB_URL"]);
    assert!(!text.contains(postgres::PASSWORD) && !s.to_string().contains(postgres::PASSWORD));

    // db_schema reads the database connect_supabase linked: PostgreSQL's own catalog schema. The
    // database tools are offered from the link on.
    let schemas = p.output_schemas();
    let (text, s) = checked(
        &schemas,
        "db_schema",
        &p.call("db_schema", &json!({"schema": "information_schema"})),
    );
    holds("db_schema", &s, &["information_schema", "sql_features"]);
    assert!(!text.contains(postgres::PASSWORD) && !s.to_string().contains(postgres::PASSWORD));

    // supabase_setup writes a migration, applies it to the same database, shows the status; a
    // failing migration's result (an error) carries the same structure.
    let args = json!({"action": "new", "name": "results_table", "sql": "create table results_t (id int);"});
    let (text, s) = checked(&schemas, "supabase_setup", &p.call("supabase_setup", &args));
    holds("supabase_setup", &s, &["supabase/migrations/", "_results_table.sql"]);
    assert!(text.contains("_results_table.sql"), "{text}");
    let (text, s) = checked(
        &schemas,
        "supabase_setup",
        &p.call("supabase_setup", &json!({"action": "migrate"})),
    );
    holds("supabase_setup", &s, &["_results_table.sql", "reload schema", "applied"]);
    assert!(!text.contains(postgres::PASSWORD) && !s.to_string().contains(postgres::PASSWORD));
    let (_, s) = checked(
        &schemas,
        "supabase_setup",
        &p.call("supabase_setup", &json!({"action": "status"})),
    );
    assert_eq!(s["migrations"][0]["state"], "applied", "{s}");
    p.put("supabase/migrations/29990101000000_bad.sql", "select * from missing_table;\n");
    let failed = p.call("supabase_setup", &json!({"action": "migrate"}));
    assert_eq!(failed["isError"], true, "{failed:#}");
    let schema = schemas["supabase_setup"].as_ref().unwrap();
    let validator = jsonschema::validator_for(schema).unwrap();
    assert!(validator.is_valid(&failed["structuredContent"]), "{failed:#}");
    assert_eq!(failed["structuredContent"]["failed"]["sqlstate"], "42P01");
}

/// run_security_scan's structured result holds what its text says: a key in the build output
/// (critical) and in a source file, and the parts it skipped with their reasons.
#[test]
fn run_security_scan_structured_result_validates() {
    let mut p = Project::new();
    p.settings.push("security.audit_commands=false".into());
    let schemas = p.output_schemas();
    let key = format!("sk_{}_{}", "live", "9fQ2xLmPz3RtY7uWv1bN5cKd");
    p.put("src/pay.js", &format!("export const k = '{key}';\n"));
    p.put("dist/app.js", &format!("var k='{key}';\n"));
    let r = p.call("run_security_scan", &json!({"checks": ["secrets", "bundle", "database"]}));
    let (text, s) = checked(&schemas, "run_security_scan", &r);
    assert!(text.starts_with("run_security_scan: 1 critical, 1 high"), "{text}");
    holds(
        "run_security_scan",
        &s,
        &["dist/app.js:1", "src/pay.js:1", "stripe_key", "no database is linked"],
    );
    assert!(!text.contains(&key) && !s.to_string().contains(&key), "{text}");
}

/// clone_site in the real Chromium against a page served on 127.0.0.1.
#[test]
fn clone_site_structured_result_validates() {
    if !std::path::Path::new("/usr/bin/chromium").exists() {
        assert!(std::env::var_os("CI").is_none(), "clone_site needs /usr/bin/chromium on CI");
        eprintln!("SKIPPED: /usr/bin/chromium is not installed");
        return;
    }
    let mut p = Project::new();
    let page = html_page("<!doctype html><title>Result page</title><h1>Cloned heading</h1>");
    p.settings.push(r#"net.allow_hosts=["127.0.0.1"]"#.into());
    let schemas = p.output_schemas();
    let (_, s) = checked(&schemas, "clone_site", &p.call("clone_site", &json!({"url": page})));
    holds("clone_site", &s, &[".hands/clones/127.0.0.1"]);
    assert!(p.root.join(".hands/clones/127.0.0.1/index.html").exists());
}

/// add_dependency with cargo, offline: a workspace member added as a path dependency.
#[test]
fn add_dependency_structured_result_validates() {
    let p = Project::new();
    let write = |path: &str, text: &str| {
        let path = p.root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("ws/Cargo.toml", "[workspace]\nmembers = [\"app\", \"helper\"]\nresolver = \"2\"\n");
    write("ws/.cargo/config.toml", "[net]\noffline = true\n");
    write(
        "ws/app/Cargo.toml",
        "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    write("ws/app/src/main.rs", "fn main() {}\n");
    write(
        "ws/helper/Cargo.toml",
        "[package]\nname = \"helper\"\nversion = \"0.2.0\"\nedition = \"2021\"\n",
    );
    write("ws/helper/src/lib.rs", "");
    let schemas = p.output_schemas();
    let args = json!({"packages": ["helper"], "path": "ws/app"});
    let (text, s) = checked(&schemas, "add_dependency", &p.call("add_dependency", &args));
    holds("add_dependency", &s, &["cargo", "helper", "0.2.0", "ws/Cargo.lock"]);
    assert!(text.contains("+ helper 0.2.0"), "{text}");
}

/// web_scrape's built-in backend on a page served on 127.0.0.1, and image_gen through a fake fal
/// on 127.0.0.1 (its image as a `data:` URL), with the key stored by `hands secrets set`.
#[test]
fn web_scrape_and_image_gen_structured_results_validate() {
    let mut p = Project::new();
    let paragraphs: String = (0..20)
        .map(|i| format!("<p>Paragraph {i} of the scraped article, long enough to count.</p>"))
        .collect();
    let article: &'static str = Box::leak(
        format!("<!doctype html><title>Scraped page</title><article>{paragraphs}</article>")
            .into_boxed_str(),
    );
    let page = html_page(article);
    const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEElEQVR4nGP4z8AARAwQCgAf7gP9i18U1AAAAABJRU5ErkJggg==";
    let answer: &'static str = Box::leak(
        json!({"images": [{"url": format!("data:image/png;base64,{PNG}")}], "prompt": "a dot"})
            .to_string()
            .into_boxed_str(),
    );
    let fal = json_server(answer);
    p.settings.push(r#"net.allow_hosts=["127.0.0.1"]"#.into());
    p.settings.push("web_scrape.builtin=true".into());
    p.settings.push(format!("image_gen.base_url={}", fal.trim_end_matches('/')));
    let stored = p
        .hands()
        .args(["secrets", "set", "FAL_KEY", "--root"])
        .arg(&p.root)
        .write_stdin("fal-results-key:0123456789\n")
        .output()
        .unwrap();
    assert!(stored.status.success(), "{}", String::from_utf8_lossy(&stored.stderr));
    let schemas = p.output_schemas();

    let (text, s) = checked(&schemas, "web_scrape", &p.call("web_scrape", &json!({"url": page})));
    assert!(text.contains("Paragraph 19 of the scraped article"), "{text}");
    holds("web_scrape", &s, &["Scraped page", "builtin", "Paragraph 19 of the scraped"]);

    let result = p.call("image_gen", &json!({"prompt": "a dot", "path": "dot.png"}));
    let (text, s) = checked(&schemas, "image_gen", &result);
    assert!(text.contains("dot.png (2×2 px, image/png"), "{text}");
    holds("image_gen", &s, &["dot.png", "image/png", "fal-ai/flux/schnell"]);
    assert_eq!(result["content"][1]["type"], "image", "{result}");
    assert!(p.root.join("dot.png").exists());
}

/// A server on 127.0.0.1 answering every request, read whole (its body too), with `body` as JSON.
fn json_server(body: &'static str) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(5)));
            let mut request = Vec::new();
            let mut buf = [0u8; 4096];
            loop {
                if let Some(end) = request.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&request[..end]).to_ascii_lowercase();
                    let len = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse::<usize>().ok())
                        .unwrap_or(0);
                    if request.len() >= end + 4 + len {
                        break;
                    }
                }
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buf[..n]),
                }
            }
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body.as_bytes());
        }
    });
    url
}

#[test]
fn code_tools_structured_results_validate() {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/lsp/node_modules/.bin");
    let server = bin.join("typescript-language-server");
    if !server.exists() {
        assert!(std::env::var_os("CI").is_none(), "no language servers: npm ci in tests/lsp");
        eprintln!("SKIPPED: no language servers in {} (npm ci in tests/lsp)", bin.display());
        return;
    }
    let mut p = Project::new();
    p.settings = vec![
        format!("code.servers.typescript=[{:?}, \"--stdio\"]", server.display().to_string()),
        "code.request_timeout_ms=60000".into(),
    ];
    p.put(
        "tsconfig.json",
        r#"{"compilerOptions": {"strict": true, "noEmit": true}, "include": ["src"]}"#,
    );
    p.put("src/util.ts", "export function twice(n: number): number {\n  return n * 2;\n}\n");
    p.put(
        "src/main.ts",
        "import { twice } from \"./util\";\n\nexport const four: string = twice(2);\n",
    );
    let schemas = p.output_schemas();
    let (text, s) =
        checked(&schemas, "diagnostics", &p.call("diagnostics", &json!({"path": "src"})));
    assert!(
        text.contains("src/main.ts:3:14: Type 'number' is not assignable to type 'string'. [2322]"),
        "{text}"
    );
    assert_eq!((s["total"].as_u64(), s["files"].as_u64()), (Some(1), Some(2)), "{s}");
    holds("diagnostics", &s, &["src/main.ts", "Type 'number' is not assignable", "2322"]);
    let at = json!({"action": "references", "path": "src/util.ts", "symbol": "twice"});
    let (text, s) = checked(&schemas, "code_navigation", &p.call("code_navigation", &at));
    assert!(text.contains("src/main.ts:3:29: export const four"), "{text}");
    holds(
        "code_navigation",
        &s,
        &["src/util.ts", "src/main.ts", "export const four: string = twice(2);"],
    );
}
