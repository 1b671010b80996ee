//! The session tools through the real binary: `hands tools` lists todo_write, ask_user and
//! use_skill (plan mode the last two); `hands call` runs them; ask_user reaches a person on a
//! terminal (a pseudo-terminal from `script`) and an MCP client through elicitation, and says at
//! once when nobody can answer.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::{Arc, Mutex};

use assert_cmd::Command;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};

fn hands(home: &Path) -> Command {
    let mut cmd = Command::cargo_bin("hands").unwrap();
    cmd.env("HOME", home).env_remove("XDG_CONFIG_HOME").env_remove("HANDS_APPROVAL");
    cmd.timeout(std::time::Duration::from_secs(60));
    cmd
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run(cmd: &mut Command) -> Out {
    let out = cmd.output().unwrap();
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn tool_names(json: &str) -> Vec<String> {
    let v: Value = serde_json::from_str(json).unwrap();
    v["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn tools_lists_the_session_tools_and_plan_mode_offers_ask_user_and_use_skill_only() {
    let tmp = tempfile::tempdir().unwrap();
    // use_skill comes with a skill to load (none here yet: it costs every request its text).
    let out = run(hands(tmp.path()).args(["tools", "--json", "--root"]).arg(tmp.path()));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!tool_names(&out.stdout).contains(&"use_skill".to_owned()), "{}", out.stdout);
    write(
        &tmp.path().join(".hands/skills/notes/SKILL.md"),
        "---\nname: notes\ndescription: Take notes\n---\nWrite them down.\n",
    );
    let out = run(hands(tmp.path()).args(["tools", "--json", "--root"]).arg(tmp.path()));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let names = tool_names(&out.stdout);
    for name in ["todo_write", "ask_user", "use_skill"] {
        assert!(names.iter().any(|n| n == name), "{name} missing from {names:?}");
    }
    let out = run(hands(tmp.path())
        .args(["tools", "--json", "--mode", "plan", "--root"])
        .arg(tmp.path()));
    let names = tool_names(&out.stdout);
    assert!(
        names.contains(&"ask_user".to_owned()) && names.contains(&"use_skill".to_owned()),
        "{names:?}"
    );
    assert!(!names.contains(&"todo_write".to_owned()), "{names:?}");
}

#[test]
fn the_user_skills_folder_is_listed_in_the_description_and_project_skills_are_found_by_the_call() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, root) = (tmp.path().join("home"), tmp.path().join("project"));
    let config = tmp.path().join("xdg");
    write(
        &config.join("hands/skills/commit/SKILL.md"),
        "---\nname: commit\ndescription: Write commit messages\n---\nUse the imperative.\n",
    );
    write(
        &root.join(".hands/skills/pdf/SKILL.md"),
        "---\nname: pdf\ndescription: 'Read PDFs'\n---\nUse parse_document.\n",
    );
    write(&root.join(".hands/skills/pdf/forms.md"), "forms\n");

    let out = run(hands(&home)
        .env("XDG_CONFIG_HOME", &config)
        .args(["tools", "--json", "--root"])
        .arg(&root));
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    let use_skill =
        v["tools"].as_array().unwrap().iter().find(|t| t["name"] == "use_skill").unwrap();
    let description = use_skill["description"].as_str().unwrap();
    assert!(description.contains("- commit: Write commit messages"), "{description}");

    let out = run(hands(&home)
        .env("XDG_CONFIG_HOME", &config)
        .args(["call", "use_skill", "name=pdf", "--root"])
        .arg(&root));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("Use parse_document.") && out.stdout.contains("- forms.md"),
        "{}",
        out.stdout
    );
    let out = run(hands(&home)
        .env("XDG_CONFIG_HOME", &config)
        .args(["call", "use_skill", "name=commit", "--root"])
        .arg(&root));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("Use the imperative."), "{}", out.stdout);
    let out = run(hands(&home)
        .env("XDG_CONFIG_HOME", &config)
        .args(["call", "use_skill", "name=pdff", "--root"])
        .arg(&root));
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("Did you mean `pdf`? Available skills: commit, pdf."),
        "{}",
        out.stderr
    );
}

#[test]
fn todo_write_renders_the_list_and_refuses_two_in_progress() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let list = r#"{"todos": [{"id": "1", "content": "Read", "status": "completed"}, {"id": "2", "content": "Fix", "status": "in_progress"}]}"#;
    let out = run(hands(root).args(["call", "todo_write", list, "--json", "--root"]).arg(root));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        v["content"][0]["text"],
        "Todo list (2 items: 1 completed, 1 in progress, 0 pending):\n[x] Read\n[>] Fix"
    );
    assert_eq!(v["structuredContent"]["todos"][1]["status"], "in_progress");

    let bad = r#"{"todos": [{"id": "a", "content": "x", "status": "in_progress"}, {"id": "b", "content": "y", "status": "in_progress"}]}"#;
    let out = run(hands(root).args(["call", "todo_write", bad, "--root"]).arg(root));
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("2 items are in_progress (`a`, `b`)"), "{}", out.stderr);
}

#[test]
fn ask_user_without_a_terminal_says_at_once_that_nobody_can_answer() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let start = std::time::Instant::now();
    let out =
        run(hands(root).args(["call", "ask_user", "question=Tabs or spaces?", "--root"]).arg(root));
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("nobody to ask") && out.stderr.contains("own judgement"),
        "{}",
        out.stderr
    );
    assert!(start.elapsed() < std::time::Duration::from_secs(20), "{:?}", start.elapsed());
}

/// `hands call ask_user` inside a pseudo-terminal (util-linux `script`): the prompt shows the
/// numbered options and typing `2` picks the second.
#[test]
fn ask_user_on_a_terminal_numbers_the_options_and_takes_a_number() {
    if std::process::Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: util-linux `script` is not installed");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let bin = assert_cmd::cargo::cargo_bin("hands");
    let command = format!(
        "{} call ask_user '{{\"question\": \"Which colour?\", \"options\": [\"red\", \"blue\"]}}' --root {}",
        bin.display(),
        root.display()
    );
    // script passes stdin on to the terminal, where the typed line waits until hands reads it.
    let out = run(Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .env("HOME", root)
        .env_remove("XDG_CONFIG_HOME")
        .write_stdin("2\n")
        .timeout(std::time::Duration::from_secs(60)));
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let screen = out.stdout.replace('\r', "");
    assert!(
        screen.contains("hands: the agent asks: Which colour?\n  1) red\n  2) blue\n"),
        "{screen}"
    );
    assert!(screen.contains("The user chose: blue"), "{screen}");
}

/// A client that declares elicitation and answers every question with a fixed reply.
#[derive(Clone)]
struct Answerer {
    reply: Option<&'static str>,
    asked: Arc<Mutex<Vec<Value>>>,
}

impl ClientHandler for Answerer {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        rmcp::model::ClientConfig::new(
            rmcp::model::ClientCapabilities::builder().enable_elicitation().build(),
            rmcp::model::Implementation::new("answerer", "1"),
        )
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        self.asked.lock().unwrap().push(serde_json::to_value(&request).unwrap());
        Ok(match self.reply {
            Some(reply) => rmcp::model::ElicitResult::new(rmcp::model::ElicitationAction::Accept)
                .with_content(json!({"answer": reply})),
            None => rmcp::model::ElicitResult::new(rmcp::model::ElicitationAction::Decline),
        })
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn ask_user_over_mcp_goes_through_elicitation() {
    for reply in [Some("blue"), None] {
        let tmp = tempfile::tempdir().unwrap();
        let mut cmd = tokio::process::Command::new(assert_cmd::cargo::cargo_bin("hands"));
        // The home folder cannot be a session root: the project is a folder of its own.
        let root = tmp.path().join("proj");
        std::fs::create_dir(&root).unwrap();
        cmd.args(["mcp", "--root"]).arg(&root).env("HOME", tmp.path());
        let answerer = Answerer { reply, asked: Arc::default() };
        let client = answerer.clone().serve(TokioChildProcess::new(cmd).unwrap()).await.unwrap();
        let mut params = CallToolRequestParams::new("ask_user");
        params.arguments =
            json!({"question": "Which colour?", "options": ["red", "blue"]}).as_object().cloned();
        let result = serde_json::to_value(client.call_tool(params).await.unwrap()).unwrap();
        let asked = answerer.asked.lock().unwrap().clone();
        assert_eq!(asked.len(), 1, "{asked:?}");
        assert_eq!(asked[0]["message"], "Which colour?");
        assert_eq!(
            asked[0]["requestedSchema"]["properties"]["answer"]["enum"],
            json!(["red", "blue"])
        );
        let text = result["content"][0]["text"].as_str().unwrap();
        match reply {
            Some(_) => {
                assert_eq!(result["isError"], json!(false), "{result}");
                assert_eq!(text, "The user chose: blue");
            }
            None => {
                assert_eq!(result["isError"], json!(true), "{result}");
                assert!(text.contains("The user declined to answer"), "{text}");
            }
        }
        client.cancel().await.unwrap();
    }
}
