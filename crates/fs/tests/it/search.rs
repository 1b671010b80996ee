#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Black-box tests of list_files, glob and grep through the registry.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime};

use hands_core::{CoreConfig, Registry, Session, ToolCall, ToolOutput};
use hands_fs::FsConfig;
use serde_json::{Value, json};

async fn call(root: &Path, tool: &str, args: Value) -> ToolOutput {
    let registry =
        hands_fs::register(Registry::builder(CoreConfig::default()), &FsConfig::default()).build();
    registry.dispatch(&Session::new("s", root), ToolCall::new("c1", tool, args)).await.unwrap()
}

/// [`call`] with a result cap large enough for any result here.
async fn call_uncapped(root: &Path, tool: &str, args: Value) -> ToolOutput {
    let mut core = CoreConfig::default();
    core.output.max_bytes = 64 * 1024 * 1024;
    let registry = hands_fs::register(Registry::builder(core), &FsConfig::default()).build();
    registry.dispatch(&Session::new("s", root), ToolCall::new("c1", tool, args)).await.unwrap()
}

fn write(root: &Path, rel: &str, content: &str) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, content).unwrap();
}

fn paths(out: &ToolOutput) -> Vec<String> {
    let s = out.structured.as_ref().expect("structured");
    s["paths"].as_array().unwrap().iter().map(|p| p.as_str().unwrap().to_owned()).collect()
}

/// A tree with the three excluded folders, a gitignored folder and a hidden file.
fn excluded_tree() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let r = tmp.path();
    write(r, "src/app.js", "needle\n");
    write(r, ".hidden/h.js", "needle\n");
    write(r, "node_modules/lib/index.js", "needle\n");
    write(r, "sub/node_modules/x.js", "needle\n");
    write(r, ".git/hooks/x.js", "needle\n");
    write(r, "dist/bundle.js", "needle\n");
    write(r, "ignored/gen.js", "needle\n");
    write(r, ".gitignore", "ignored/\n");
    tmp
}

#[tokio::test]
async fn glob_skips_excluded_folders_and_honours_gitignore() {
    let tmp = excluded_tree();
    let out = call(tmp.path(), "glob", json!({"pattern": "*.js"})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    let mut got = paths(&out);
    got.sort();
    assert_eq!(got, [".hidden/h.js", "src/app.js"]);

    let out = call(tmp.path(), "glob", json!({"pattern": "*.js", "include_ignored": true})).await;
    let mut got = paths(&out);
    got.sort();
    assert_eq!(got, [".hidden/h.js", "ignored/gen.js", "src/app.js"]);
}

#[tokio::test]
async fn grep_skips_excluded_folders_and_gitignored_files() {
    let tmp = excluded_tree();
    let out = call(tmp.path(), "grep", json!({"pattern": "needle", "output_mode": "files"})).await;
    assert_eq!(out.structured.unwrap()["files"], json!([".hidden/h.js", "src/app.js"]));
}

/// Review finding 7: grep could not search a folder named explicitly when it is gitignored
/// (`path=build` with `build/` in .gitignore found nothing; rg finds it). It now does, keeps root
/// rules for subfolders that are not ignored, and has `include_ignored` like glob.
#[tokio::test]
async fn review_finding_7_grep_searches_a_named_ignored_folder() {
    let tmp = excluded_tree();
    let r = tmp.path();
    write(r, "build/out.txt", "needle\n");
    write(r, "build/deep/more.txt", "needle\n");
    write(r, "build/node_modules/m.js", "needle\n");
    write(r, "src/gen.log", "needle\n");
    write(r, ".gitignore", "ignored/\nbuild/\n*.log\n");
    let files = |out: ToolOutput| out.structured.unwrap()["files"].clone();
    let grep = |args: Value| call(r, "grep", args);
    let out = grep(json!({"pattern": "needle", "output_mode": "files", "path": "build"})).await;
    assert_eq!(files(out), json!(["build/deep/more.txt", "build/out.txt"]));
    let out =
        grep(json!({"pattern": "needle", "output_mode": "files", "path": "build/deep"})).await;
    assert_eq!(files(out), json!(["build/deep/more.txt"]));
    let out = grep(json!({"pattern": "needle", "path": "build", "include": "*.txt"})).await;
    assert!(
        out.joined_text().starts_with("build/deep/more.txt:1:needle\nbuild/out.txt:1:needle\n")
    );
    // Root rules still apply to a subfolder search that is not ignored.
    let out = grep(json!({"pattern": "needle", "output_mode": "files", "path": "src"})).await;
    assert_eq!(files(out), json!(["src/app.js"]));
    // The whole tree: ignored folders stay out unless include_ignored.
    let out = grep(json!({"pattern": "needle", "output_mode": "files"})).await;
    assert_eq!(files(out), json!([".hidden/h.js", "src/app.js"]));
    let out =
        grep(json!({"pattern": "needle", "output_mode": "files", "include_ignored": true})).await;
    assert_eq!(
        files(out),
        json!([
            ".hidden/h.js",
            "build/deep/more.txt",
            "build/out.txt",
            "ignored/gen.js",
            "src/app.js",
            "src/gen.log"
        ])
    );
    // glob shares the walk.
    let out = call(r, "glob", json!({"pattern": "*.txt", "path": "build"})).await;
    let mut got = paths(&out);
    got.sort();
    assert_eq!(got, ["build/deep/more.txt", "build/out.txt"]);
    // An always-excluded folder named explicitly stays excluded.
    let out =
        grep(json!({"pattern": "needle", "output_mode": "files", "path": "node_modules"})).await;
    assert_eq!(out.structured.unwrap()["total_files"], 0);
}

#[tokio::test]
async fn list_files_collapses_excluded_and_shows_symlinks() {
    let tmp = excluded_tree();
    std::os::unix::fs::symlink("/etc", tmp.path().join("etc-link")).unwrap();
    let out = call(tmp.path(), "list_files", json!({"depth": 3})).await;
    let text = out.joined_text();
    assert!(!out.is_error, "{text}");
    assert!(text.contains("node_modules/  (collapsed: 1 entries)"), "{text}");
    assert!(!text.contains("index.js"), "{text}");
    assert!(text.contains(".git/  (collapsed"), "{text}");
    assert!(!text.contains("hooks"), "{text}");
    assert!(text.contains("dist/  (collapsed"), "{text}");
    assert!(text.contains("etc-link -> /etc"), "{text}");
    assert!(!text.contains("passwd"), "{text}");
    assert!(text.contains("app.js  7 B"), "{text}");
    // Folders first: `src/` comes before `.gitignore`.
    assert!(text.find("src/").unwrap() < text.find(".gitignore").unwrap(), "{text}");
}

/// `levels` folders `d/d/d/…` under `root`, made through handles (the path is longer than PATH_MAX).
fn nest(root: &Path, levels: usize) {
    let mut dir = cap_std::fs::Dir::open_ambient_dir(root, cap_std::ambient_authority()).unwrap();
    for _ in 0..levels {
        dir.create_dir("d").unwrap();
        dir = dir.open_dir("d").unwrap();
    }
    dir.write("leaf.txt", "x").unwrap();
}

/// Review finding 4: list_files walked recursively, so 3000 nested folders with a huge `depth`
/// overflowed the stack and aborted the process. The walk is iterative and depth is capped at 64.
#[tokio::test]
async fn review_finding_4_list_files_on_3000_nested_folders() {
    let tmp = tempfile::tempdir().unwrap();
    nest(tmp.path(), 3000);
    let out = call(tmp.path(), "list_files", json!({"depth": 100_000})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    let text = out.joined_text();
    let folders = text.lines().filter(|l| l.trim() == "d/").count();
    assert_eq!(folders, 63, "{text}");
    assert!(text.lines().any(|l| l.trim() == "d/  (1 entries)"), "{text}");
    assert!(text.contains("depth is capped at 64"), "{text}");
    // Within the cap nothing is said about it.
    let out = call(tmp.path(), "list_files", json!({"depth": 64})).await;
    assert!(!out.joined_text().contains("capped"), "{}", out.joined_text());
    // Deep trees under the cap come out whole, in order, and down to the leaf.
    let small = tempfile::tempdir().unwrap();
    nest(small.path(), 5);
    let out = call(small.path(), "list_files", json!({"depth": 10})).await;
    let expected =
        "./\n  d/\n    d/\n      d/\n        d/\n          d/\n            leaf.txt  1 B";
    assert_eq!(out.joined_text(), expected);
}

#[tokio::test]
async fn list_files_caps_entries_and_refuses_files() {
    let tmp = tempfile::tempdir().unwrap();
    for i in 0..1100 {
        write(tmp.path(), &format!("f{i:04}.txt"), "");
    }
    let out = call(tmp.path(), "list_files", json!({})).await;
    let text = out.joined_text();
    assert!(text.contains("… 100 more entries not shown"), "{}", &text[text.len() - 300..]);
    let out = call(tmp.path(), "list_files", json!({"path": "f0001.txt"})).await;
    assert!(out.is_error);
    assert!(out.joined_text().contains("read_file"), "{}", out.joined_text());
}

#[tokio::test]
async fn glob_is_newest_first() {
    let tmp = tempfile::tempdir().unwrap();
    let base = SystemTime::now() - Duration::from_secs(10_000);
    for (name, age) in
        [("old.rs", 300), ("new.rs", 1), ("mid.rs", 100), ("b/tie.rs", 50), ("a/tie.rs", 50)]
    {
        write(tmp.path(), name, "");
        let f = fs::File::options().write(true).open(tmp.path().join(name)).unwrap();
        f.set_modified(base - Duration::from_secs(age)).unwrap();
    }
    let out = call(tmp.path(), "glob", json!({"pattern": "**/*.rs"})).await;
    assert_eq!(paths(&out), ["new.rs", "a/tie.rs", "b/tie.rs", "mid.rs", "old.rs"]);
}

#[tokio::test]
async fn glob_caps_and_counts_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    for i in 0..20 {
        write(tmp.path(), &format!("d/f{i}.txt"), "");
    }
    let out = call(tmp.path(), "glob", json!({"pattern": "*.txt", "limit": 5})).await;
    assert_eq!(paths(&out).len(), 5);
    assert!(
        out.joined_text().contains("… and 15 more; narrow the pattern"),
        "{}",
        out.joined_text()
    );
    let s = out.structured.unwrap();
    assert_eq!(s["total"], 20);
    assert_eq!(s["truncated"], true);
}

#[tokio::test]
async fn glob_brace_sets_and_slash_patterns() {
    let tmp = tempfile::tempdir().unwrap();
    for f in ["web/a.ts", "web/b.tsx", "web/c.js", "web/deep/d.ts", "other/e.ts"] {
        write(tmp.path(), f, "");
    }
    let out = call(tmp.path(), "glob", json!({"pattern": "*.{ts,tsx}", "path": "web"})).await;
    let got: BTreeSet<String> = paths(&out).into_iter().collect();
    assert_eq!(got, ["web/a.ts", "web/b.tsx", "web/deep/d.ts"].map(String::from).into());
    let out = call(tmp.path(), "glob", json!({"pattern": "web/*.ts"})).await;
    assert_eq!(paths(&out), ["web/a.ts"]);
}

#[tokio::test]
async fn glob_no_match_is_not_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "a.rs", "");
    let out = call(tmp.path(), "glob", json!({"pattern": "*.zig"})).await;
    assert!(!out.is_error);
    assert!(out.joined_text().contains("No files match"), "{}", out.joined_text());
    assert_eq!(out.structured.unwrap()["total"], 0);
}

#[tokio::test]
async fn climbing_and_absolute_patterns_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    for pattern in ["../*.rs", "/etc/*"] {
        let out = call(tmp.path(), "glob", json!({"pattern": pattern})).await;
        assert!(out.is_error, "{pattern}");
        assert!(out.joined_text().contains("absolute or contains `..`"), "{}", out.joined_text());
        let out = call(tmp.path(), "grep", json!({"pattern": "x", "include": pattern})).await;
        assert!(out.is_error, "{pattern}");
    }
}

#[tokio::test]
async fn a_path_through_a_symlink_to_outside_is_refused() {
    let outside = tempfile::tempdir().unwrap();
    write(outside.path(), "sub/secret.txt", "needle\n");
    let tmp = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), tmp.path().join("link")).unwrap();
    for path in ["link", "link/sub", "link/sub/secret.txt"] {
        for (tool, args) in [
            ("glob", json!({"pattern": "*", "path": path})),
            ("grep", json!({"pattern": "needle", "path": path})),
            ("list_files", json!({"path": path})),
        ] {
            let out = call(tmp.path(), tool, args).await;
            assert!(out.is_error, "{tool} {path}: {}", out.joined_text());
            assert!(!out.joined_text().contains("needle"));
        }
    }
    // And a walk of the root never follows it.
    let out = call(tmp.path(), "grep", json!({"pattern": "needle"})).await;
    assert_eq!(out.structured.unwrap()["total_matches"], 0);
}

fn code_tree() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "a.rs", "fn main() {\n    let x = 1;\n    println!(\"Hello\");\n}\n");
    write(tmp.path(), "b.rs", "// hello world\nfn helper() {}\n");
    write(tmp.path(), "c.txt", "HELLO again\nhello\n");
    tmp
}

#[tokio::test]
async fn grep_content_files_and_count_modes() {
    let tmp = code_tree();
    let out = call(tmp.path(), "grep", json!({"pattern": "hello"})).await;
    let text = out.joined_text();
    assert!(text.starts_with("b.rs:1:// hello world\nc.txt:2:hello\n"), "{text}");
    assert!(text.contains("showing 1-2 of 2 matching lines in 2 files"), "{text}");
    let s = out.structured.unwrap();
    assert_eq!(s["matches"][0], json!({"path": "b.rs", "line": 1, "text": "// hello world"}));

    let out = call(tmp.path(), "grep", json!({"pattern": "hello", "output_mode": "files"})).await;
    assert!(out.joined_text().starts_with("b.rs\nc.txt\n"), "{}", out.joined_text());

    let out = call(
        tmp.path(),
        "grep",
        json!({"pattern": "hello", "output_mode": "count", "case_insensitive": true}),
    )
    .await;
    assert!(out.joined_text().starts_with("a.rs:1\nb.rs:1\nc.txt:2\n"), "{}", out.joined_text());
    assert_eq!(out.structured.unwrap()["total_matches"], 4);
}

#[tokio::test]
async fn grep_case_insensitive_and_include() {
    let tmp = code_tree();
    let out = call(
        tmp.path(),
        "grep",
        json!({"pattern": "HELLO", "case_insensitive": true, "include": "*.rs"}),
    )
    .await;
    let text = out.joined_text();
    assert!(
        text.starts_with("a.rs:3:    println!(\"Hello\");\nb.rs:1:// hello world\n("),
        "{text}"
    );
    let out = call(tmp.path(), "grep", json!({"pattern": "HELLO"})).await;
    assert!(out.joined_text().starts_with("c.txt:1:HELLO again\n("), "{}", out.joined_text());
}

#[tokio::test]
async fn grep_context_lines_and_group_separators() {
    let tmp = tempfile::tempdir().unwrap();
    let lines: Vec<String> = (1..=20)
        .map(|i| if i == 5 || i == 15 { format!("hit {i}") } else { format!("l{i}") })
        .collect();
    write(tmp.path(), "f.txt", &(lines.join("\n") + "\n"));
    let out = call(tmp.path(), "grep", json!({"pattern": "hit", "context": 1})).await;
    let text = out.joined_text();
    assert!(
        text.starts_with("f.txt-4-l4\nf.txt:5:hit 5\nf.txt-6-l6\n--\nf.txt-14-l14\nf.txt:15:hit 15\nf.txt-16-l16\n("),
        "{text}"
    );
}

/// Review finding 5: `context`, `limit` and `offset` at usize::MAX panicked with an overflow.
/// Context is clamped to 100 lines; the page arithmetic saturates.
#[tokio::test]
async fn review_finding_5_grep_huge_context_limit_and_offset_do_not_panic() {
    let tmp = tempfile::tempdir().unwrap();
    let lines: Vec<String> =
        (1..=300).map(|i| if i == 150 { "hit".to_owned() } else { format!("l{i}") }).collect();
    write(tmp.path(), "f.txt", &(lines.join("\n") + "\n"));
    write(tmp.path(), "g.txt", "hit\nhit\n");
    let max = usize::MAX;
    for path in [".", "f.txt"] {
        for mode in ["content", "files", "count"] {
            for (context, limit, offset) in [
                (max, None, None),
                (0, Some(max), None),
                (0, None, Some(max)),
                (max, Some(max), Some(max)),
            ] {
                let args = json!({"pattern": "hit", "path": path, "output_mode": mode,
                    "context": context, "limit": limit, "offset": offset});
                let out = call(tmp.path(), "grep", args.clone()).await;
                assert!(!out.is_error, "{args}: {}", out.joined_text());
            }
        }
    }
    // Clamped context: 100 lines either side of line 150.
    let out =
        call(tmp.path(), "grep", json!({"pattern": "hit", "path": "f.txt", "context": max})).await;
    let text = out.joined_text();
    assert!(text.starts_with("f.txt-50-l50\n"), "{}", &text[..100]);
    assert!(text.contains("f.txt:150:hit\n") && text.contains("f.txt-250-l250\n"), "{text}");
    assert!(!text.contains("f.txt-49-") && !text.contains("f.txt-251-"), "{text}");
    let out = call(tmp.path(), "grep", json!({"pattern": "hit", "limit": max})).await;
    assert!(
        out.joined_text().contains("showing 1-3 of 3 matching lines in 2 files)"),
        "{}",
        out.joined_text()
    );
    let out = call(tmp.path(), "grep", json!({"pattern": "hit", "offset": max})).await;
    assert!(
        out.joined_text().contains("is past the end: there are 3 matching lines"),
        "{}",
        out.joined_text()
    );
}

/// Review finding 8: a 400 MB single-line file took 426 MB of memory. The searcher's heap is
/// limited (64 MiB), so a file with a longer line is skipped and counted in the footer.
#[tokio::test]
async fn review_finding_8_grep_skips_files_with_lines_too_long() {
    let tmp = tempfile::tempdir().unwrap();
    let mut huge = vec![b'a'; 80 * 1024 * 1024];
    huge.extend_from_slice(b"needle");
    fs::write(tmp.path().join("huge.txt"), &huge).unwrap();
    drop(huge);
    write(tmp.path(), "small.txt", "a needle\n");
    let out = call(tmp.path(), "grep", json!({"pattern": "needle"})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    let text = out.joined_text();
    assert!(text.starts_with("small.txt:1:a needle\n"), "{text}");
    assert!(text.contains("1 file skipped: lines too long"), "{text}");
    let s = out.structured.unwrap();
    assert_eq!((s["total_files"].as_u64(), s["skipped_long_lines"].as_u64()), (Some(1), Some(1)));
    // Named as the single file to search, too.
    let out = call(tmp.path(), "grep", json!({"pattern": "needle", "path": "huge.txt"})).await;
    assert!(out.joined_text().contains("1 file skipped: lines too long"), "{}", out.joined_text());
}

#[tokio::test]
async fn grep_paging_is_consistent() {
    let tmp = tempfile::tempdir().unwrap();
    for f in 0..30 {
        let body: String = (0..7).map(|l| format!("match {f} {l}\nnope\n")).collect();
        write(tmp.path(), &format!("d{}/f{f:02}.txt", f % 4), &body);
    }
    let get = |offset: usize, limit: usize| {
        let root = tmp.path().to_path_buf();
        async move {
            let out =
                call(&root, "grep", json!({"pattern": "match", "offset": offset, "limit": limit}))
                    .await;
            let s = out.structured.unwrap();
            assert_eq!(s["total_matches"], 210);
            s["matches"].as_array().unwrap().clone()
        }
    };
    let all = get(0, 100).await;
    let mut paged = get(0, 50).await;
    paged.extend(get(50, 50).await);
    assert_eq!(all.len(), 100);
    assert_eq!(paged, all);
    let out = call(tmp.path(), "grep", json!({"pattern": "match"})).await;
    assert!(
        out.joined_text()
            .contains("showing 1-50 of 210 matching lines in 30 files; use offset=50 for more"),
        "{}",
        out.joined_text()
    );
    // Sorted by path, then line.
    let keys: Vec<(String, u64)> = all
        .iter()
        .map(|m| (m["path"].as_str().unwrap().to_owned(), m["line"].as_u64().unwrap()))
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
}

#[tokio::test]
async fn grep_invalid_regex_quotes_the_parser() {
    let tmp = code_tree();
    let out = call(tmp.path(), "grep", json!({"pattern": "fn("})).await;
    assert!(out.is_error);
    let text = out.joined_text();
    assert!(text.contains("not a valid regex") && text.contains("unclosed group"), "{text}");
}

#[tokio::test]
async fn grep_no_match_is_not_an_error() {
    let tmp = code_tree();
    let out = call(tmp.path(), "grep", json!({"pattern": "zzzz"})).await;
    assert!(!out.is_error);
    assert!(out.joined_text().starts_with("No matches"), "{}", out.joined_text());
}

#[tokio::test]
async fn grep_skips_binary_files_and_cuts_long_lines() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("blob.bin"), b"needle\0\x01\x02needle\n").unwrap();
    let long = format!("{}needle{}\n", "x".repeat(5000), "y".repeat(5000));
    write(tmp.path(), "long.txt", &long);
    let out = call(tmp.path(), "grep", json!({"pattern": "needle"})).await;
    let s = out.structured.unwrap();
    assert_eq!(s["total_files"], 1, "{s}");
    let text = s["matches"][0]["text"].as_str().unwrap();
    assert!(text.contains("needle") && text.starts_with('…') && text.ends_with('…'), "{text}");
    assert!(text.chars().count() <= 502, "{}", text.len());
}

#[tokio::test]
async fn grep_a_single_file() {
    let tmp = code_tree();
    let out = call(tmp.path(), "grep", json!({"pattern": "fn", "path": "a.rs"})).await;
    assert!(out.joined_text().starts_with("a.rs:1:fn main() {\n"), "{}", out.joined_text());
}

// ---- oracle: the same answers as ripgrep ----

fn rg() -> Option<&'static str> {
    let found = Path::new("/usr/bin/rg").exists();
    if !found {
        assert!(std::env::var_os("CI").is_none(), "rg is required in CI (apt-get install ripgrep)");
        eprintln!("!!!!! rg not found at /usr/bin/rg: SKIPPING the ripgrep oracle test !!!!!");
        return None;
    }
    Some("/usr/bin/rg")
}

/// A few hundred files of pseudo-random words in nested folders, with excluded and ignored ones.
fn generated_tree() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let words =
        ["alpha", "beta", "gamma", "delta", "fn", "let", "mut", "needle", "Needle", "x_mut("];
    let exts = ["rs", "ts", "txt", "md"];
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for i in 0..320 {
        let dir = match i % 7 {
            0 => "node_modules/pkg".to_owned(),
            1 => "gen".to_owned(),
            2 => format!("src/m{}", i % 5),
            3 => ".config".to_owned(),
            4 => format!("lib/a{}/b{}", i % 3, i % 2),
            5 => "dist".to_owned(),
            _ => String::new(),
        };
        let name = format!("f{i}.{}", exts[(next() % 4) as usize]);
        let rel = if dir.is_empty() { name } else { format!("{dir}/{name}") };
        let lines = next() % 40;
        let mut body = String::new();
        for _ in 0..lines {
            let n = next() % 8;
            let line: Vec<&str> = (0..n).map(|_| words[(next() % 10) as usize]).collect();
            body.push_str(&line.join(" "));
            body.push('\n');
        }
        write(tmp.path(), &rel, &body);
    }
    write(tmp.path(), ".gitignore", "gen/\n*.md\n");
    tmp
}

fn excluded(path: &str) -> bool {
    path.split('/').any(|c| ["node_modules", ".git", "dist"].contains(&c))
}

fn run_rg(root: &Path, args: &[&str]) -> BTreeSet<String> {
    let out =
        std::process::Command::new(rg().unwrap()).args(args).current_dir(root).output().unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.strip_prefix("./").unwrap_or(l).to_owned())
        .filter(|l| !excluded(l))
        .collect()
}

#[tokio::test]
async fn grep_agrees_with_ripgrep() {
    if rg().is_none() {
        return;
    }
    let tmp = generated_tree();
    for pattern in ["needle", "x_mut\\(", "\\bfn\\s+\\w+", "^beta"] {
        let expected: BTreeSet<String> = run_rg(
            tmp.path(),
            &[
                "-n",
                "--no-heading",
                "--hidden",
                "--no-require-git",
                "--with-filename",
                pattern,
                ".",
            ],
        )
        .into_iter()
        .map(|l| l.splitn(3, ':').take(2).collect::<Vec<_>>().join(":"))
        .collect();
        assert!(expected.len() > 20, "{pattern}: the oracle should find plenty");
        // All matches, uncut: the structured result is capped like the text (32 KiB by default).
        let out =
            call_uncapped(tmp.path(), "grep", json!({"pattern": pattern, "limit": 100_000})).await;
        let s = out.structured.unwrap();
        let got: BTreeSet<String> = s["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| format!("{}:{}", m["path"].as_str().unwrap(), m["line"]))
            .collect();
        assert_eq!(got, expected, "{pattern}");
        assert_eq!(s["total_matches"], expected.len(), "{pattern}");
    }
}

#[tokio::test]
async fn glob_agrees_with_ripgrep() {
    if rg().is_none() {
        return;
    }
    let tmp = generated_tree();
    // rg's `-g` overrides .gitignore, which glob does not: keep only what rg would list anyway.
    let listed = run_rg(tmp.path(), &["--files", "--hidden", "--no-require-git"]);
    for pattern in ["*.rs", "*.{ts,txt}", "src/**/*.rs", "lib/*/b1/*"] {
        let expected: BTreeSet<String> =
            run_rg(tmp.path(), &["--files", "--hidden", "--no-require-git", "-g", pattern])
                .intersection(&listed)
                .cloned()
                .collect();
        assert!(!expected.is_empty(), "{pattern}: the oracle should find something");
        let out =
            call_uncapped(tmp.path(), "glob", json!({"pattern": pattern, "limit": 100_000})).await;
        let got: BTreeSet<String> = paths(&out).into_iter().collect();
        assert_eq!(got, expected, "{pattern}");
    }
}

#[tokio::test]
async fn description_examples_are_valid_calls() {
    let tmp = code_tree();
    write(tmp.path(), "src/x.rs", "fn main() {}\n");
    write(tmp.path(), "web/src/a.tsx", "");
    let registry =
        hands_fs::register(Registry::builder(CoreConfig::default()), &FsConfig::default()).build();
    for tool in ["list_files", "glob", "grep"] {
        let description = registry.get(tool).unwrap().spec().description.clone();
        let example = description.split("```json\n").nth(1).unwrap().split("```").next().unwrap();
        let args: Value = serde_json::from_str(example).unwrap();
        let out = call(tmp.path(), tool, args).await;
        assert!(!out.is_error, "{tool}: {}", out.joined_text());
    }
}
