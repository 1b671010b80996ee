//! A generated corpus of edit_file calls and apply_patch patches against files with CRLF, tabs, a
//! BOM, mixed indentation, long lines, Unicode quotes and trailing whitespace, some reformatted
//! between the read and the edit. No file may be corrupted: after each call the file is exactly
//! the expected content, or untouched with an error that names a line. Half the cases are
//! well-formed (copied as a model copies: sometimes with whitespace or quotes off); their
//! first-try success rate is printed.

use crate::common;

use common::Project;
use serde_json::{Value, json};

/// A small deterministic generator (xorshift64*), so that every run sees the same corpus.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const INDENTS: [&str; 5] = ["", "    ", "\t", "  \t", "\t\t"];

/// A file as lines (without endings), its line ending and BOM.
#[derive(Clone)]
struct File {
    lines: Vec<String>,
    eol: &'static str,
    bom: bool,
}

impl File {
    fn bytes(&self) -> Vec<u8> {
        let mut out = String::new();
        if self.bom {
            out.push('\u{FEFF}');
        }
        for line in &self.lines {
            out.push_str(line);
            out.push_str(self.eol);
        }
        out.into_bytes()
    }
}

fn line(rng: &mut Rng, i: usize) -> String {
    let indent = INDENTS[rng.below(INDENTS.len())];
    match rng.below(5) {
        0 => format!("{indent}let v = compute(#{i}#);"),
        1 => format!("{indent}say(“hello #{i}#”) — ‘ok’"),
        2 => format!("{indent}// #{i}# {}", "long words in a long line ".repeat(20)),
        3 => format!("{indent}  \tmixed #{i}# indentation   "),
        _ => format!("{indent}return f(#{i}#, \"x\");\t"),
    }
}

fn file(rng: &mut Rng) -> File {
    let n = 12 + rng.below(40);
    let lines = (0..n).map(|i| line(rng, i)).collect();
    File { lines, eol: if rng.below(2) == 0 { "\r\n" } else { "\n" }, bom: rng.below(4) == 0 }
}

/// How a model might copy a line: exactly, or with trailing whitespace dropped, indentation
/// as spaces, or typographic quotes as ASCII.
fn copied(line: &str, how: usize) -> String {
    match how {
        1 => line.trim_end().to_owned(),
        2 => line.replace('\t', "    "),
        3 => line
            .replace(['“', '”'], "\"")
            .replace(['‘', '’'], "'")
            .replace('—', "-")
            .trim()
            .to_owned(),
        _ => line.to_owned(),
    }
}

/// One case: the call, the content expected on success (None: it must fail).
struct Case {
    tool: &'static str,
    args: Value,
    expected: Option<Vec<u8>>,
}

fn new_text(line: &str, tag: &str) -> String {
    let indent: String = line.chars().take_while(|c| c.is_whitespace()).collect();
    format!("{indent}changed {tag}")
}

/// Build case `k` against `f` (the file as it will be when the call runs); `path` is its name.
fn case(rng: &mut Rng, k: usize, f: &mut File, path: &str, well_formed: bool, patch: bool) -> Case {
    let n = f.lines.len();
    let t = 3 + rng.below(n - 7);
    let tag = format!("@{k}@");
    let how = rng.below(4);
    let mut expected = f.clone();
    if well_formed {
        expected.lines[t] = new_text(&f.lines[t], &tag);
        if patch {
            let ctx = |i: usize| format!(" {}", copied(&f.lines[i], how));
            let body = format!(
                "*** Update File: {path}\n@@\n{}\n{}\n-{}\n+{}\n{}\n{}",
                ctx(t - 2),
                ctx(t - 1),
                copied(&f.lines[t], how),
                expected.lines[t],
                ctx(t + 1),
                ctx(t + 2)
            );
            let input = format!("*** Begin Patch\n{body}\n*** End Patch\n");
            return Case {
                tool: "apply_patch",
                args: json!({"input": input}),
                expected: Some(expected.bytes()),
            };
        }
        let args = match how {
            1 => {
                expected.lines[t + 1] = new_text(&f.lines[t + 1], &format!("{tag}b"));
                json!({"path": path, "old_string": format!("{}\n{}", f.lines[t], f.lines[t + 1]),
                       "new_string": format!("{}\n{}", expected.lines[t], expected.lines[t + 1])})
            }
            2 => {
                expected.lines[t + 2] = new_text(&f.lines[t + 2], &format!("{tag}c"));
                json!({"path": path, "edits": [
                    {"old_string": f.lines[t], "new_string": expected.lines[t]},
                    {"old_string": f.lines[t + 2], "new_string": expected.lines[t + 2]}]})
            }
            3 => {
                // Copied as a model may: trailing whitespace left out (it stays in the file),
                // or tabs as spaces (edit_file then finds only a near miss: a first-try failure).
                let orig = &f.lines[t];
                let new = expected.lines[t].clone();
                if k.is_multiple_of(4) {
                    return Case {
                        tool: "edit_file",
                        args: json!({"path": path, "old_string": copied(orig, 2), "new_string": new}),
                        expected: Some(expected.bytes()),
                    };
                }
                expected.lines[t] = format!("{new}{}", &orig[orig.trim_end().len()..]);
                json!({"path": path, "old_string": copied(orig, 1), "new_string": new})
            }
            _ => json!({"path": path, "old_string": f.lines[t], "new_string": expected.lines[t]}),
        };
        return Case { tool: "edit_file", args, expected: Some(expected.bytes()) };
    }
    // Malformed: a typo in the removed text, or in a context line, or text that occurs twice.
    let marker = format!("#{t}#");
    let typo = f.lines[t].replace(&marker, &format!("#{t} #"));
    let kind = rng.below(3);
    if kind == 2 {
        f.lines[1] = "duplicate line".into();
        f.lines[n - 2] = "duplicate line".into();
    }
    let (removed, before) = match kind {
        0 => (typo.clone(), f.lines[t - 1].clone()),
        1 => (f.lines[t].clone(), f.lines[t - 1].replace('#', "%")),
        _ => ("duplicate line".to_owned(), String::new()),
    };
    if patch {
        let body = if kind == 2 {
            format!("*** Update File: {path}\n@@\n-{removed}\n+x")
        } else {
            format!("*** Update File: {path}\n@@\n {before}\n-{removed}\n+x")
        };
        let input = format!("*** Begin Patch\n{body}\n*** End Patch\n");
        return Case { tool: "apply_patch", args: json!({"input": input}), expected: None };
    }
    let old = if kind == 1 { format!("{before}\n{removed}") } else { removed };
    Case {
        tool: "edit_file",
        args: json!({"path": path, "old_string": old, "new_string": "x"}),
        expected: None,
    }
}

#[tokio::test]
async fn no_generated_edit_or_patch_corrupts_a_file() {
    let p = Project::new();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let total = 400;
    let (mut well_formed, mut first_try) = (0, 0);
    let mut by_tool = std::collections::BTreeMap::<&str, (usize, usize)>::new();
    for k in 0..total {
        let patch = k % 2 == 1;
        let good = (k / 2) % 2 == 0;
        let path = format!("f{k}.txt");
        let mut f = file(&mut rng);
        // Malformed cases may change the file (duplicates) before it is written and read.
        let mut planned = f.clone();
        let c = case(&mut rng, k, &mut planned, &path, good, patch);
        f = planned;
        p.put(&path, f.bytes());
        p.ok("read_file", json!({"path": &path})).await;
        // Reformatted between the read and the edit: a line away from the change for a
        // well-formed case (which must then still apply), the changed line itself otherwise.
        let mut c = c;
        if rng.below(3) == 0 {
            let mut now = f.clone();
            if good {
                now.lines[0].push_str("  // formatted");
                if let Some(expected) = &mut c.expected {
                    let mut text = String::from_utf8(expected.clone()).unwrap();
                    let first = f.lines[0].clone();
                    text = text.replacen(&first, &format!("{first}  // formatted"), 1);
                    *expected = text.into_bytes();
                }
            } else {
                for l in &mut now.lines {
                    if l.contains("#") && !l.contains("duplicate") {
                        *l = l.replace("compute(", "compute( ");
                    }
                }
            }
            f = now;
            p.put(&path, f.bytes());
        }
        let before = p.get(&path);
        let out = p.call(c.tool, c.args.clone()).await;
        let after = p.get(&path);
        let text = out.joined_text();
        match (&c.expected, out.is_error) {
            (Some(expected), false) => {
                let (got, want) =
                    (String::from_utf8_lossy(&after), String::from_utf8_lossy(expected));
                let first = got.lines().zip(want.lines()).position(|(g, w)| g != w);
                assert!(
                    got == want,
                    "case {k} ({}) wrong content at line {first:?}: {}\n{text}",
                    c.tool,
                    c.args
                );
            }
            (_, true) => {
                assert_eq!(
                    after, before,
                    "case {k} ({}) failed but changed the file: {text}",
                    c.tool
                );
                let names_line =
                    text.contains("line") && text.chars().any(|ch| ch.is_ascii_digit());
                assert!(names_line, "case {k} ({}) error names no line: {text}", c.tool);
            }
            (None, false) => panic!("case {k} ({}) should have failed: {}\n{text}", c.tool, c.args),
        }
        if good {
            well_formed += 1;
            let entry = by_tool.entry(c.tool).or_default();
            entry.0 += 1;
            if !out.is_error {
                first_try += 1;
                entry.1 += 1;
            }
        }
    }
    assert!(total >= 300 && well_formed == total / 2);
    println!(
        "edit corpus: {total} cases, 0 corrupted; well-formed first-try success {first_try}/{well_formed} ({:.1}%)",
        100.0 * first_try as f64 / well_formed as f64
    );
    for (tool, (n, ok)) in &by_tool {
        println!("  {tool}: {ok}/{n} ({:.1}%)", 100.0 * *ok as f64 / *n as f64);
    }
    // apply_patch's tolerance levels take every well-formed copy.
    assert_eq!(by_tool["apply_patch"].0, by_tool["apply_patch"].1);
}
