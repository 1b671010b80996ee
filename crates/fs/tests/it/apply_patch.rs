//! Black-box tests of apply_patch through the registry: every section kind, anchors, the match
//! levels, ambiguity, what a miss says, all or nothing, confinement, line endings, plan mode and
//! the approval's diff.

use crate::common;

use std::sync::{Arc, Mutex};

use common::Project;
use hands_core::BoxFuture;
use hands_core::approval::{ApprovalRequest, Approver, ApproverHandle, Decision};
use serde_json::{Value, json};

fn patch(body: &str) -> Value {
    json!({ "input": format!("*** Begin Patch\n{body}\n*** End Patch\n") })
}

const PY: &str = "class A:\n    def run(self):\n        return 1\n\nclass B:\n    def run(self):\n        return 1\n";

#[tokio::test]
async fn every_section_kind_in_one_patch() {
    let p = Project::new();
    p.put("src/app.py", "def greet():\n    print(\"Hi\")\n\ngreet()\n");
    p.put("old.txt", "bye\n");
    p.put("keep.txt", "a\nb\nc\n");
    let out = p
        .call(
            "apply_patch",
            patch(
                "*** Add File: docs/hello.txt\n+Hello\n+world\n\
                 *** Update File: src/app.py\n*** Move to: src/main.py\n@@ def greet():\n-    print(\"Hi\")\n+    print(\"Hello\")\n\
                 *** Delete File: old.txt\n\
                 *** Update File: keep.txt\n@@\n a\n-b\n+B\n c\n*** End of File",
            ),
        )
        .await;
    assert!(!out.is_error, "{}", out.joined_text());
    assert_eq!(p.get("docs/hello.txt"), b"Hello\nworld\n");
    assert_eq!(p.get("src/main.py"), b"def greet():\n    print(\"Hello\")\n\ngreet()\n");
    assert!(!p.path("src/app.py").exists() && !p.path("old.txt").exists());
    assert_eq!(p.get("keep.txt"), b"a\nB\nc\n");
    let text = out.joined_text();
    assert!(text.starts_with("Applied the patch: 4 files changed, +4 -3.\n"), "{text}");
    assert!(text.contains("A docs/hello.txt (+2 -0)"), "{text}");
    assert!(text.contains("R src/app.py -> src/main.py (+1 -1): hunk 1 at line 2 exact"), "{text}");
    assert!(text.contains("D old.txt (+0 -1)"), "{text}");
    assert!(text.contains("M keep.txt (+1 -1): hunk 1 at line 1 exact"), "{text}");
    let s = out.structured.unwrap();
    assert_eq!((&s["lines_added"], &s["lines_removed"]), (&json!(4), &json!(3)));
    let actions: Vec<&str> =
        s["files"].as_array().unwrap().iter().map(|f| f["action"].as_str().unwrap()).collect();
    assert_eq!(actions, ["added", "moved", "deleted", "updated"]);
    assert_eq!(s["files"][1]["moved_to"], "src/main.py");
    assert_eq!(s["files"][1]["hunks"][0], json!({"line": 2, "level": "exact"}));
}

#[tokio::test]
async fn anchors_choose_between_equal_blocks_and_nest() {
    let p = Project::new();
    p.put("a.py", PY);
    // Without an anchor the hunk matches twice: refused, saying so.
    let err = p
        .err(
            "apply_patch",
            patch("*** Update File: a.py\n@@\n-        return 1\n+        return 2"),
        )
        .await;
    assert!(err.contains("match 2 places (lines 3, 7") && err.contains("no `@@` anchor"), "{err}");
    assert!(err.contains("Next: add an `@@ <line>` anchor"), "{err}");
    assert_eq!(p.get("a.py"), PY.as_bytes());
    // Nested anchors: class B, then its run method.
    p.ok("apply_patch", patch("*** Update File: a.py\n@@ class B:\n@@ def run(self):\n-        return 1\n+        return 2")).await;
    assert_eq!(
        p.get("a.py"),
        PY.replacen("return 1\n", "X", 2)
            .replacen("X", "return 1\n", 1)
            .replace('X', "return 2\n")
            .as_bytes()
    );
    // An anchor that is not there.
    let err = p
        .err(
            "apply_patch",
            patch("*** Update File: a.py\n@@ class C:\n-        return 2\n+        return 3"),
        )
        .await;
    assert!(
        err.contains("hunk 1 of 1") && err.contains("the anchor `@@ class C:` was not found"),
        "{err}"
    );
}

#[tokio::test]
async fn each_tolerance_level_is_used_only_when_needed_and_reported() {
    let p = Project::new();
    let content = "alpha   \n\tbeta\nsay(“hi”) — ok\nlast\n";
    let cases = [
        ("@@\n alpha   \n-\tbeta\n+\tBETA", "exact"),
        ("@@\n alpha\n-\tbeta\n+\tBETA", "trailing_whitespace"),
        ("@@\n alpha\n-    beta\n+\tBETA", "whitespace"),
        ("@@\n-say(\"hi\") - ok\n+say(\"bye\")", "punctuation"),
    ];
    for (hunk, level) in cases {
        p.put("f.txt", content);
        let out = p.call("apply_patch", patch(&format!("*** Update File: f.txt\n{hunk}"))).await;
        assert!(!out.is_error, "{level}: {}", out.joined_text());
        let s = out.structured.clone().unwrap();
        assert_eq!(s["files"][0]["hunks"][0]["level"], level, "{hunk}");
        if level != "exact" {
            assert!(out.joined_text().contains("matched only loosely"), "{}", out.joined_text());
        }
    }
    // The context line keeps the file's trailing spaces: only the removed line changed.
    p.put("f.txt", content);
    p.ok("apply_patch", patch("*** Update File: f.txt\n@@\n alpha\n-    beta\n+\tBETA")).await;
    assert_eq!(p.get("f.txt"), "alpha   \n\tBETA\nsay(“hi”) — ok\nlast\n".as_bytes());
    // Never fuzzier than that: a typo is a miss.
    let err = p.err("apply_patch", patch("*** Update File: f.txt\n@@\n-lsat\n+x")).await;
    assert!(err.contains("the patch has `lsat` where line 4 of the file has `last`"), "{err}");
}

#[tokio::test]
async fn a_miss_names_file_hunk_diverging_line_region_and_next_step() {
    let p = Project::new();
    let body: String = (1..=30).map(|i| format!("line {i}\n")).collect();
    p.put("a.txt", "a\n");
    p.put("b.txt", &body);
    let err = p
        .err(
            "apply_patch",
            patch("*** Update File: a.txt\n-a\n+A\n*** Update File: b.txt\n@@\n line 10\n-line 11\n+x\n@@\n line 20\n-line 2I\n line 22\n+y"),
        )
        .await;
    assert!(
        err.starts_with(
            "apply_patch changed nothing. Section 2 of 2: b.txt, hunk 2 of 2 (patch line 10)"
        ),
        "{err}"
    );
    assert!(err.contains("The nearest region is lines 20-22"), "{err}");
    assert!(err.contains("    21\tline 21\n"), "{err}");
    assert!(
        err.contains("the patch has `line 2I` where line 21 of the file has `line 21`"),
        "{err}"
    );
    assert!(err.contains("\nNext: send the patch again"), "{err}");
    // All or nothing: the first section, which applied, was not written.
    assert_eq!(p.get("a.txt"), b"a\n");
    assert_eq!(p.get("b.txt"), body.as_bytes());
}

#[tokio::test]
async fn malformed_patches_and_bad_sections_change_nothing() {
    let p = Project::new();
    p.put("a.txt", "a\n");
    let err = p.err("apply_patch", json!({"input": "*** Update File: a.txt\n-a\n+b\n"})).await;
    assert!(err.contains("does not parse: line 1") && err.contains("*** Begin Patch"), "{err}");
    let err = p.err("apply_patch", patch("*** Update File: a.txt\n@@\na\n+b")).await;
    assert!(err.contains("line 4") && err.contains("prefix unchanged lines with a space"), "{err}");
    let err = p.err("apply_patch", patch("*** Add File: a.txt\n+x")).await;
    assert!(err.contains("already exists"), "{err}");
    let err = p.err("apply_patch", patch("*** Delete File: nope.txt")).await;
    assert!(err.contains("does not exist"), "{err}");
    let err = p.err("apply_patch", patch("*** Update File: nope.txt\n-a\n+b")).await;
    assert!(err.contains("does not exist") && err.contains("Add File"), "{err}");
    let err =
        p.err("apply_patch", patch("*** Update File: a.txt\n-a\n+b\n*** Delete File: a.txt")).await;
    assert!(err.contains("more than one section for a.txt"), "{err}");
    p.put("b.txt", "b\n");
    let err =
        p.err("apply_patch", patch("*** Update File: a.txt\n*** Move to: b.txt\n-a\n+c")).await;
    assert!(err.contains("b.txt already exists"), "{err}");
    assert_eq!((p.get("a.txt"), p.get("b.txt")), (b"a\n".to_vec(), b"b\n".to_vec()));
}

#[tokio::test]
async fn paths_stay_inside_the_project() {
    let p = Project::new();
    p.put("a.txt", "a\n");
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "s\n").unwrap();
    std::os::unix::fs::symlink(outside.path(), p.path("out")).unwrap();
    std::os::unix::fs::symlink("a.txt", p.path("alias.txt")).unwrap();
    std::fs::create_dir_all(p.path(".git")).unwrap();
    p.put(".git/config", "[core]\n");
    p.put("latin1.txt", b"caf\xe9\n");
    let abs = outside.path().join("secret.txt");
    let cases = [
        ("*** Add File: ../escape.txt\n+x".to_owned(), "outside the project root"),
        (format!("*** Update File: {}\n-s\n+x", abs.display()), "outside the project root"),
        ("*** Update File: out/secret.txt\n-s\n+x".to_owned(), "outside the project root"),
        ("*** Update File: alias.txt\n-a\n+x".to_owned(), "symlink"),
        ("*** Update File: .git/config\n-[core]\n+x".to_owned(), "protected"),
        ("*** Add File: .git/hooks/pre-commit\n+x".to_owned(), "protected"),
        (
            "*** Update File: a.txt\n*** Move to: ../moved.txt\n-a\n+b".to_owned(),
            "outside the project root",
        ),
        ("*** Update File: latin1.txt\n-caf\n+x".to_owned(), "not valid UTF-8"),
    ];
    for (body, want) in cases {
        let err =
            p.err("apply_patch", patch(&format!("*** Update File: a.txt\n-a\n+A\n{body}"))).await;
        assert!(err.contains(want) && err.contains("changed nothing"), "{body}: {err}");
    }
    assert_eq!(p.get("a.txt"), b"a\n");
    assert_eq!(std::fs::read(&abs).unwrap(), b"s\n");
    assert!(!p.path("../escape.txt").exists() && !p.path(".git/hooks").exists());
}

#[tokio::test]
async fn crlf_bom_and_a_missing_final_newline_are_kept() {
    let p = Project::new();
    p.put("win.txt", "\u{FEFF}one\r\ntwo\r\nthree\r\n");
    p.ok("apply_patch", patch("*** Update File: win.txt\n@@\n one\n-two\n+2\n+2b\n three")).await;
    assert_eq!(p.get("win.txt"), "\u{FEFF}one\r\n2\r\n2b\r\nthree\r\n".as_bytes());
    p.put("tail.txt", "a\nb");
    p.ok("apply_patch", patch("*** Update File: tail.txt\n@@\n a\n-b\n+c\n*** End of File")).await;
    assert_eq!(p.get("tail.txt"), b"a\nc");
    // A patch sent with CRLF line breaks reads the same.
    p.put("lf.txt", "x\ny\n");
    p.ok("apply_patch", json!({"input": "*** Begin Patch\r\n*** Update File: lf.txt\r\n-y\r\n+z\r\n*** End Patch\r\n"})).await;
    assert_eq!(p.get("lf.txt"), b"x\nz\n");
}

#[tokio::test]
async fn a_file_changed_since_the_read_is_judged_by_content() {
    let p = Project::new();
    p.put("a.js", "const a = 1\nconst b = 2\n");
    p.ok("read_file", json!({"path": "a.js"})).await;
    p.put("a.js", "const a = 1;\nconst b = 2;\n");
    let out =
        p.call("apply_patch", patch("*** Update File: a.js\n-const b = 2;\n+const b = 3;")).await;
    assert!(!out.is_error, "{}", out.joined_text());
    assert!(out.joined_text().contains("had changed on disk since this session read it"));
    assert_eq!(out.structured.unwrap()["files"][0]["changed_since_read"], true);
    p.put("a.js", "const a = 1;\nconst b = 4;\n");
    let err =
        p.err("apply_patch", patch("*** Update File: a.js\n-const b = 3;\n+const b = 5;")).await;
    assert!(err.contains("changed on disk since this session read it"), "{err}");
    assert!(err.contains("-const b = 3;\n+const b = 4;"), "{err}");
    assert_eq!(p.get("a.js"), b"const a = 1;\nconst b = 4;\n");
    // A changed file is not deleted unseen.
    let err = p.err("apply_patch", patch("*** Delete File: a.js")).await;
    assert!(err.contains("not deleted unseen"), "{err}");
    assert!(p.path("a.js").exists());
}

#[tokio::test]
async fn placeholders_follow_the_env_rules() {
    let p = Project::new();
    p.put("app.js", "const key = 'x';\n");
    let err = p
        .err(
            "apply_patch",
            patch("*** Update File: app.js\n-const key = 'x';\n+const key = '[secret:API_KEY]';"),
        )
        .await;
    assert!(err.contains("[secret:API_KEY]") && err.contains("process.env.API_KEY"), "{err}");
    assert_eq!(p.get("app.js"), b"const key = 'x';\n");
}

#[tokio::test]
async fn plan_mode_refuses_it() {
    let p = Project::new();
    p.put("a.txt", "a\n");
    p.session.set_mode(hands_core::Mode::Plan);
    let err = p.err("apply_patch", patch("*** Update File: a.txt\n-a\n+b")).await;
    assert!(err.contains("not available in plan mode"), "{err}");
    assert_eq!(p.get("a.txt"), b"a\n");
}

#[derive(Default)]
struct Recorder(Mutex<Vec<ApprovalRequest>>);

impl Approver for Recorder {
    fn approve<'a>(
        &'a self,
        request: &'a ApprovalRequest,
        _cancel: &'a hands_core::CancellationToken,
    ) -> BoxFuture<'a, Decision> {
        self.0.lock().unwrap().push(request.clone());
        Box::pin(async { Decision::Approve })
    }
}

#[tokio::test]
async fn the_approval_shows_the_diff_of_every_file() {
    let core = hands_core::CoreConfig {
        approval: hands_core::config::Approval::Ask,
        ..Default::default()
    };
    let p = Project::with_configs(core, hands_fs::FsConfig::default());
    let asked = Arc::new(Recorder::default());
    p.session.insert_extension(ApproverHandle(asked.clone()));
    p.put("a.txt", "one\ntwo\n");
    p.put("gone.txt", "bye\n");
    p.ok(
        "apply_patch",
        patch("*** Update File: a.txt\n-two\n+2\n*** Add File: n.txt\n+new\n*** Delete File: gone.txt"),
    )
    .await;
    let details = asked.0.lock().unwrap().last().unwrap().details.clone().unwrap();
    assert!(
        details.contains("--- a/a.txt\n+++ b/a.txt") && details.contains("-two\n+2"),
        "{details}"
    );
    assert!(details.contains("add n.txt\n") && details.contains("+new"), "{details}");
    assert!(details.contains("delete gone.txt\n") && details.contains("-bye"), "{details}");
    // A patch that cannot apply is refused before anybody is asked.
    let before = asked.0.lock().unwrap().len();
    p.err("apply_patch", patch("*** Update File: a.txt\n-zzz\n+y")).await;
    assert_eq!(asked.0.lock().unwrap().len(), before);
}

#[tokio::test]
async fn its_policy_is_edit_files() {
    let p = Project::new();
    let spec = p.registry.get("apply_patch").unwrap().spec().clone();
    assert!(spec.needs_approval && !spec.annotations.read_only);
    assert!(spec.output_schema.is_some());
    assert!(spec.input_schema["required"].as_array().unwrap().contains(&json!("input")));
}
