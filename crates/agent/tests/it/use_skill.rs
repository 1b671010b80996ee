//! use_skill over real folders: the description lists the skills found at construction, a call
//! returns the instructions without front matter and lists the skill's other files, a project
//! skill wins over a user skill of the same name, and broken or escaping skills are refused with
//! the reason.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;

use hands_agent::{AgentConfig, UseSkill};
use hands_core::{CoreConfig, Mode, Registry, Session, Tool, ToolCall, ToolOutput};
use serde_json::{Value, json};

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn skill(dir: &Path, name: &str, description: &str, body: &str) {
    write(
        &dir.join("SKILL.md"),
        &format!("---\nname: {name}\ndescription: {description}\n---\n\n{body}"),
    );
}

/// A project root and a user skills folder, side by side in one temp dir.
struct Fixture {
    _tmp: tempfile::TempDir,
    root: std::path::PathBuf,
    user: std::path::PathBuf,
    outside: std::path::PathBuf,
}

impl Fixture {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("project");
        let user = tmp.path().join("config/hands/skills");
        let outside = tmp.path().join("outside");
        for dir in [&root, &user, &outside] {
            fs::create_dir_all(dir).unwrap();
        }
        Self { _tmp: tmp, root, user, outside }
    }

    fn project_skills(&self) -> std::path::PathBuf {
        self.root.join(".hands/skills")
    }

    fn tool(&self) -> UseSkill {
        UseSkill::discover(Some(&self.root), Some(&self.user))
    }

    fn registry(&self) -> Registry {
        hands_agent::register_with(
            Registry::builder(CoreConfig::default()),
            &AgentConfig::default(),
            self.tool(),
        )
        .build()
    }

    async fn call(&self, args: Value) -> ToolOutput {
        let session = Session::new("s", &self.root);
        self.registry().dispatch(&session, ToolCall::new("c", "use_skill", args)).await.unwrap()
    }
}

#[tokio::test]
async fn a_project_skill_returns_its_body_and_lists_its_other_files() {
    let f = Fixture::new();
    let dir = f.project_skills().join("release-notes");
    write(
        &dir.join("SKILL.md"),
        "---\nname: release-notes\ndescription: \"Write release notes: from git log\"\nlicense: MIT\n---\n\n# Release notes\n\n1. Run `scripts/log.sh`.\n",
    );
    write(&dir.join("scripts/log.sh"), "git log --oneline\n");
    write(&dir.join("template.md"), "## Changes\n");
    write(&dir.join(".hidden"), "x");

    let out = f.call(json!({"name": "release-notes"})).await;
    assert!(!out.is_error, "{out:?}");
    let text = out.joined_text();
    assert!(
        text.starts_with(
            "Skill `release-notes` (.hands/skills/release-notes/SKILL.md): Write release notes: from git log\n\n# Release notes\n\n1. Run `scripts/log.sh`."
        ),
        "{text}"
    );
    assert!(!text.contains("license: MIT") && !text.contains("---"), "front matter leaked: {text}");
    assert!(text.contains("read them as `.hands/skills/release-notes/<file>`"), "{text}");
    assert!(text.ends_with("\n- scripts/log.sh\n- template.md"), "{text}");
    assert!(!text.contains(".hidden") && !text.contains("- SKILL.md"), "{text}");
}

#[tokio::test]
async fn the_description_lists_project_and_user_skills_and_the_project_wins_a_clash() {
    let f = Fixture::new();
    skill(&f.project_skills().join("pdf"), "pdf", "Project PDF rules", "project body");
    skill(&f.user.join("pdf"), "pdf", "User PDF rules", "user body");
    skill(
        &f.user.join("commit"),
        "commit",
        "Write commit messages\n  the user's way",
        "commit body",
    );

    let description = f.tool().description().into_owned();
    assert!(
        description
            .contains("- commit: Write commit messages the user's way\n- pdf: Project PDF rules"),
        "{description}"
    );
    assert!(!description.contains("User PDF rules"), "{description}");

    let out = f.call(json!({"name": "pdf"})).await;
    assert!(out.joined_text().contains("project body"), "{out:?}");
    let out = f.call(json!({"name": "commit"})).await;
    assert!(!out.is_error, "{out:?}");
    let text = out.joined_text();
    assert!(text.contains("commit body"), "{text}");
    assert!(
        text.contains(&format!("Skill `commit` ({}/commit/SKILL.md)", f.user.display())),
        "{text}"
    );
}

#[tokio::test]
async fn user_skill_files_are_listed_with_a_note_that_they_are_outside_the_project() {
    let f = Fixture::new();
    skill(&f.user.join("deploy"), "deploy", "Deploy", "Run deploy.sh");
    write(&f.user.join("deploy/deploy.sh"), "echo\n");
    let text = f.call(json!({"name": "deploy"})).await.joined_text();
    assert!(text.contains("outside the project, so the file tools cannot open them"), "{text}");
    assert!(text.ends_with("- deploy.sh"), "{text}");
}

#[tokio::test]
async fn no_skills_is_said_in_the_description_and_in_errors() {
    let f = Fixture::new();
    let description = f.tool().description().into_owned();
    assert!(
        description.ends_with(
            "No skills were found when hands started (call use_skill with any name to look again)."
        ),
        "{description}"
    );
    let out = f.call(json!({"name": "pdf"})).await;
    assert!(out.is_error);
    assert!(
        out.joined_text().contains(
            "No skills are installed: a skill is a folder with a SKILL.md under .hands/skills/"
        ),
        "{out:?}"
    );
}

#[tokio::test]
async fn a_skill_added_after_start_is_found_by_the_call() {
    let f = Fixture::new();
    let registry = f.registry();
    skill(&f.project_skills().join("late"), "late", "Added later", "late body");
    let session = Session::new("s", &f.root);
    let out = registry
        .dispatch(&session, ToolCall::new("c", "use_skill", json!({"name": "late"})))
        .await
        .unwrap();
    assert!(out.joined_text().contains("late body"), "{out:?}");
}

#[tokio::test]
async fn an_unknown_name_lists_the_known_skills_and_suggests_a_close_one() {
    let f = Fixture::new();
    skill(&f.project_skills().join("pdf-forms"), "pdf-forms", "Fill PDF forms", "b");
    skill(&f.project_skills().join("xlsx"), "xlsx", "Spreadsheets", "b");
    let out = f.call(json!({"name": "pdf-form"})).await;
    assert!(out.is_error);
    assert_eq!(
        out.joined_text(),
        "Unknown skill `pdf-form`. Did you mean `pdf-forms`? Available skills: pdf-forms, xlsx."
    );
    // Case differences are forgiven.
    let out = f.call(json!({"name": "XLSX"})).await;
    assert!(!out.is_error, "{out:?}");
}

#[tokio::test]
async fn a_skill_folder_that_is_a_symlink_out_of_the_root_is_refused() {
    let f = Fixture::new();
    skill(&f.outside.join("evil"), "evil", "Reads your secrets", "secret body");
    fs::create_dir_all(f.project_skills()).unwrap();
    symlink(f.outside.join("evil"), f.project_skills().join("evil")).unwrap();
    skill(&f.project_skills().join("good"), "good", "Fine", "good body");

    let description = f.tool().description().into_owned();
    assert!(!description.contains("evil") && description.contains("- good: Fine"), "{description}");
    let out = f.call(json!({"name": "evil"})).await;
    assert!(out.is_error);
    let text = out.joined_text();
    assert!(text.contains("The skill `evil` (.hands/skills/evil) cannot be used: the skill folder is a symlink that leads outside the project (or an absolute one), so it is refused"), "{text}");
    assert!(!text.contains("secret body"), "{text}");
    assert!(text.contains("Available skills: good."), "{text}");
}

#[tokio::test]
async fn a_skill_md_that_is_a_symlink_out_is_refused_and_one_inside_is_fine() {
    let f = Fixture::new();
    write(&f.outside.join("SKILL.md"), "---\nname: leak\ndescription: d\n---\nsecret body");
    let dir = f.project_skills().join("leak");
    fs::create_dir_all(&dir).unwrap();
    symlink(f.outside.join("SKILL.md"), dir.join("SKILL.md")).unwrap();
    let out = f.call(json!({"name": "leak"})).await;
    assert!(out.is_error);
    assert!(
        out.joined_text().contains("its SKILL.md is a symlink that leads outside the project"),
        "{out:?}"
    );
    assert!(!out.joined_text().contains("secret body"));

    // Symlinks that stay inside the project are followed: a skill kept in docs/.
    skill(&f.root.join("docs/style"), "style", "House style", "style body");
    // (relative: an absolute symlink cannot be resolved beneath the root handle and is refused
    // like one that leads out, as by the file tools).
    symlink("../../docs/style", f.project_skills().join("style")).unwrap();
    let out = f.call(json!({"name": "style"})).await;
    assert!(!out.is_error && out.joined_text().contains("style body"), "{out:?}");
}

#[tokio::test]
async fn a_skills_folder_that_is_a_symlink_out_is_refused() {
    let f = Fixture::new();
    skill(&f.outside.join("skills/evil"), "evil", "d", "secret body");
    fs::create_dir_all(f.root.join(".hands")).unwrap();
    symlink(f.outside.join("skills"), f.project_skills()).unwrap();
    let description = f.tool().description().into_owned();
    assert!(!description.contains("evil"), "{description}");
    let out = f.call(json!({"name": "evil"})).await;
    assert!(out.is_error && !out.joined_text().contains("secret body"), "{out:?}");
}

#[tokio::test]
async fn a_user_skill_symlinked_out_of_the_user_folder_is_refused() {
    let f = Fixture::new();
    skill(&f.outside.join("evil"), "evil", "d", "secret body");
    symlink(f.outside.join("evil"), f.user.join("evil")).unwrap();
    let out = f.call(json!({"name": "evil"})).await;
    assert!(out.is_error);
    assert!(out.joined_text().contains("leads outside the user skills folder"), "{out:?}");
}

#[tokio::test]
async fn broken_skill_files_are_explained() {
    let f = Fixture::new();
    let skills = f.project_skills();
    write(&skills.join("plain/SKILL.md"), "# Plain\nNo front matter here.\n");
    write(&skills.join("open/SKILL.md"), "---\nname: open\ndescription: never closed\n");
    write(&skills.join("mute/SKILL.md"), "---\nname: mute\n---\nbody");
    write(
        &skills.join("huge/SKILL.md"),
        &format!("---\nname: huge\ndescription: d\n---\n{}", "x".repeat(300 * 1024)),
    );
    write(&skills.join("notes.txt"), "not a skill");
    fs::create_dir_all(skills.join("empty")).unwrap();
    let description = f.tool().description().into_owned();
    assert!(description.contains("No skills were found"), "{description}");
    for (name, expected) in [
        ("plain", "its SKILL.md has no front matter: it must start with a `---` line"),
        ("open", "front matter has no closing `---` line"),
        ("mute", "front matter has no `description`"),
        ("huge", "over the 262144 a skill may have"),
    ] {
        let out = f.call(json!({"name": name})).await;
        assert!(out.is_error, "{name}");
        assert!(out.joined_text().contains(expected), "{name}: {}", out.joined_text());
    }
    // A folder without SKILL.md and a loose file are not skills at all.
    for name in ["empty", "notes.txt"] {
        let out = f.call(json!({"name": name})).await;
        assert!(out.joined_text().starts_with(&format!("Unknown skill `{name}`")), "{out:?}");
    }
}

#[tokio::test]
async fn a_skill_without_a_name_is_called_by_its_folder() {
    let f = Fixture::new();
    write(
        &f.project_skills().join("lint/SKILL.md"),
        "---\ndescription: >\n  Run the linters\n  in order\n---\nlint body",
    );
    assert!(f.tool().description().contains("- lint: Run the linters in order"));
    assert!(f.call(json!({"name": "lint"})).await.joined_text().contains("lint body"));
}

#[tokio::test]
async fn bad_arguments() {
    let f = Fixture::new();
    skill(&f.project_skills().join("pdf"), "pdf", "d", "b");
    for (args, expected) in [
        (json!({"name": " "}), "`name` is empty: pass a skill's name. Available skills: pdf."),
        (json!({}), "missing field `name`"),
        (json!({"name": ["pdf"]}), "field `name`: invalid type: sequence"),
        (json!({"name": "pdf", "path": "x"}), "unknown field `path`"),
        (json!({"name": "../../outside/evil"}), "Unknown skill `../../outside/evil`"),
    ] {
        let out = f.call(args.clone()).await;
        assert!(out.is_error, "{args}");
        assert!(out.joined_text().contains(expected), "{args}: {}", out.joined_text());
    }
}

#[tokio::test]
async fn plan_mode_offers_it_and_it_is_read_only() {
    let f = Fixture::new();
    skill(&f.project_skills().join("pdf"), "pdf", "d", "pdf body");
    let registry = f.registry();
    let spec = registry.get("use_skill").unwrap().spec().clone();
    assert!(spec.annotations.read_only && !spec.needs_approval);
    let session = Session::new("s", &f.root);
    session.set_mode(Mode::Plan);
    let out = registry
        .dispatch(&session, ToolCall::new("c", "use_skill", json!({"name": "pdf"})))
        .await
        .unwrap();
    assert!(out.joined_text().contains("pdf body"), "{out:?}");
}
