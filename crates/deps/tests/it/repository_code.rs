//! add_dependency runs no code of the repository's unless the user allows it, and its approval
//! says what runs (issue 26, finding 8): a project's `.venv/bin/python`, a `yarnPath` release, a
//! `node_modules/.bin/pnpm` planted on PATH, `.pnpmfile.cjs`, and lifecycle scripts of a
//! package published to a Verdaccio on loopback.
//!
//! Each test runs again in a child of this test binary with its own PATH (the planted folders
//! first, then tests/deps' tools), HOME and caches: hands looks programs up on its own PATH,
//! and a test cannot change its own environment.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

use common::registry::{Verdaccio, tools_bin};
use hands_core::approval::{ApprovalRequest, Approver, ApproverHandle, Decision};
use hands_core::config::Approval;
use hands_core::{
    BoxFuture, CancellationToken, Content, CoreConfig, Registry, Session, ToolCall, ToolOutput,
};
use hands_deps::DepsConfig;
use serde_json::{Value, json};

/// Set in the child: the test's folder.
const CHILD: &str = "HANDS_DEPS_TEST_DIR";

/// In the parent: run `test` again in a child with PATH = `front` (`{dir}` replaced by the
/// test's folder), then `tools` and the PATH it has, and fail when the child fails; `None`.
/// In the child: the test's folder.
fn enter(test: &str, front: &[&str], tools: Option<&Path>) -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os(CHILD) {
        return Some(PathBuf::from(dir));
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().canonicalize().unwrap();
    let mut path: Vec<PathBuf> = front
        .iter()
        .map(|f| PathBuf::from(f.replace("{dir}", &dir.display().to_string())))
        .collect();
    path.extend(tools.map(Path::to_path_buf));
    path.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()));
    let path: OsString = std::env::join_paths(path).unwrap();
    let cache = dir.join("cache");
    std::fs::create_dir_all(dir.join("home")).unwrap();
    let out = Command::new(std::env::current_exe().unwrap())
        .args([&format!("repository_code::{test}"), "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, &dir)
        .env("PATH", path)
        .env("HOME", dir.join("home"))
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("npm_config_cache", cache.join("npm"))
        .env("npm_config_store_dir", cache.join("pnpm-store"))
        .env("npm_config_cache_dir", cache.join("pnpm-cache"))
        .env("BUN_INSTALL_CACHE_DIR", cache.join("bun"))
        .env("YARN_CACHE_FOLDER", cache.join("yarn"))
        .env_remove("VIRTUAL_ENV")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the child failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("1 passed"), "the child ran no test:\n{stdout}\n{stderr}");
    None
}

/// Records what it is asked and answers with `yes`.
struct Recorder {
    yes: bool,
    seen: Mutex<Vec<ApprovalRequest>>,
}

impl Recorder {
    fn new(yes: bool) -> Arc<Self> {
        Arc::new(Self { yes, seen: Mutex::new(Vec::new()) })
    }

    fn details(&self) -> String {
        let seen = self.seen.lock().unwrap();
        assert_eq!(seen.len(), 1, "asked once: {seen:#?}");
        seen[0].details.clone().expect("the approval has details")
    }
}

impl Approver for Recorder {
    fn approve<'a>(
        &'a self,
        request: &'a ApprovalRequest,
        _cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Decision> {
        self.seen.lock().unwrap().push(request.clone());
        let yes = self.yes;
        Box::pin(async move { if yes { Decision::Approve } else { Decision::Deny(None) } })
    }
}

/// add_dependency `args` in `root` under `approval` and `config`, asking `approver`.
async fn add(
    root: &Path,
    approval: Approval,
    config: DepsConfig,
    approver: Option<Arc<Recorder>>,
    args: Value,
) -> ToolOutput {
    let core = CoreConfig { approval, ..CoreConfig::default() };
    let exec = hands_exec::ExecConfig::default();
    let registry = hands_deps::register(Registry::builder(core), &config, &exec, None).build();
    let session = Session::new("s1", root);
    if let Some(approver) = approver {
        session.insert_extension(ApproverHandle(approver));
    }
    registry.dispatch(&session, ToolCall::new("c1", "add_dependency", args)).await.unwrap()
}

fn text(out: &ToolOutput) -> String {
    out.content
        .iter()
        .filter_map(|c| match c {
            Content::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn allow_programs() -> DepsConfig {
    DepsConfig { allow_project_programs: true, ..DepsConfig::default() }
}

fn allow_scripts() -> DepsConfig {
    DepsConfig { allow_scripts: true, ..DepsConfig::default() }
}

/// An executable `sh` script at `path`.
fn script(path: &Path, body: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[tokio::test]
async fn a_project_venv_python_runs_only_when_the_user_allows_it() {
    let Some(dir) = enter("a_project_venv_python_runs_only_when_the_user_allows_it", &[], None)
    else {
        return;
    };
    let project = dir.join("py");
    write(&project.join("requirements.txt"), "");
    let python = project.join(".venv/bin/python");
    let marker = project.join("RAN");
    script(&python, &format!("echo \"$@\" > '{}'\nexit 3", marker.display()));
    let args = json!({"packages": ["six"]});

    // approval = "auto", nothing allowed: refused, saying what would run and how to allow it.
    let out = add(&project, Approval::Auto, DepsConfig::default(), None, args.clone()).await;
    assert!(!marker.exists(), "the project's python ran without the user's allowance");
    assert!(out.is_error, "{}", text(&out));
    let said = text(&out);
    assert!(said.contains("the repository's program"), "{said}");
    assert!(said.contains(&python.display().to_string()), "{said}");
    assert!(said.contains("allow_project_programs = true"), "{said}");

    // approval = "ask": the approval names the program as the repository's; a no runs nothing.
    let recorder = Recorder::new(false);
    let out =
        add(&project, Approval::Ask, DepsConfig::default(), Some(recorder.clone()), args.clone())
            .await;
    assert!(out.is_error);
    let details = recorder.details();
    assert!(details.contains("WARNING: this runs a program from the repository"), "{details}");
    assert!(details.contains(&format!("program: {}", python.display())), "{details}");
    assert!(details.contains("THE REPOSITORY'S"), "{details}");
    assert!(details.contains("-m pip install --report"), "{details}");
    assert!(details.contains("--only-binary :all: -- six"), "{details}");
    assert!(details.contains("Install-time code: off"), "{details}");
    assert!(!marker.exists(), "it ran although the user said no");

    // The user's yes to exactly that runs it, wheels only.
    let recorder = Recorder::new(true);
    let out =
        add(&project, Approval::Ask, DepsConfig::default(), Some(recorder), args.clone()).await;
    let ran = std::fs::read_to_string(&marker).expect("approved, the project's python ran");
    assert!(ran.contains("-m pip install --report") && ran.contains("--only-binary :all: -- six"));
    let s = out.structured.clone().unwrap();
    assert_eq!(s["program_origin"], "repository", "{s:#}");
    assert_eq!(s["repository_program"], python.display().to_string(), "{s:#}");
    assert_eq!(s["exit_code"], 3, "{s:#}");
    std::fs::remove_file(&marker).unwrap();

    // Or the user's own setting, under "auto".
    let out = add(&project, Approval::Auto, allow_programs(), None, args).await;
    assert!(marker.exists(), "allowed, it ran: {}", text(&out));
}

#[tokio::test]
async fn a_yarn_path_release_is_not_followed_unless_allowed() {
    let Some(bin) = tools_bin() else { return };
    let Some(dir) = enter("a_yarn_path_release_is_not_followed_unless_allowed", &[], Some(&bin))
    else {
        return;
    };
    let project = dir.join("yarn-app");
    write(&project.join("package.json"), r#"{"name": "yarn-app", "version": "1.0.0"}"#);
    write(&project.join("yarn.lock"), "");
    write(&project.join(".npmrc"), "registry=http://127.0.0.1:9/\n");
    write(&project.join(".yarnrc.yml"), "yarnPath: .yarn/releases/yarn-4.9.9.cjs\n");
    let release = project.join(".yarn/releases/yarn-4.9.9.cjs");
    let marker = project.join("RAN");
    write(
        &release,
        &format!("require('fs').writeFileSync({:?}, process.argv.join(' '));\n", marker.display()),
    );
    let args = json!({"packages": ["left-pad"]});

    let out = add(&project, Approval::Auto, DepsConfig::default(), None, args.clone()).await;
    assert!(!marker.exists(), "yarn followed the repository's yarnPath");
    let said = text(&out);
    assert!(out.is_error, "{said}");
    assert!(said.contains("yarnPath") && said.contains("the repository's program"), "{said}");

    let recorder = Recorder::new(false);
    add(&project, Approval::Ask, DepsConfig::default(), Some(recorder.clone()), args.clone()).await;
    let details = recorder.details();
    assert!(details.contains(&format!("yarnPath: {}", release.display())), "{details}");
    assert!(details.contains("THE REPOSITORY'S"), "{details}");
    assert!(details.contains(&format!("program: {}", bin.join("yarn").display())), "{details}");
    assert!(!marker.exists());

    // Allowed by the user: yarn hands over to it, as it would at the terminal.
    let out = add(&project, Approval::Auto, allow_programs(), None, args).await;
    assert!(marker.exists(), "allowed, the release ran: {}", text(&out));
}

#[tokio::test]
async fn js_managers_run_no_install_time_code_and_no_planted_manager() {
    let Some(bin) = tools_bin() else { return };
    // A relative PATH entry and the project's own folder, before the real managers.
    let front = ["node_modules/.bin", "{dir}/pnpm-app/node_modules/.bin"];
    let Some(dir) =
        enter("js_managers_run_no_install_time_code_and_no_planted_manager", &front, Some(&bin))
    else {
        return;
    };
    let registry = Verdaccio::start(&bin, &dir.join("registry"));
    let postinstall = dir.join("POSTINSTALL");
    let own = dir.join("OWN-SCRIPT");
    let write_marker = |file: &Path| {
        format!(
            "node -e \"require('fs').appendFileSync('{}', process.cwd() + '\\n')\"",
            file.display()
        )
    };
    registry.publish(
        "hands-postinstall",
        "1.0.0",
        json!({"scripts": {"postinstall": write_marker(&postinstall)}}),
    );
    let project = |name: &str, extra: Value| {
        let root = dir.join(name);
        let mut manifest = json!({"name": name, "version": "1.0.0", "private": true,
                                  "scripts": {"postinstall": write_marker(&own)}});
        manifest.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        write(&root.join("package.json"), &manifest.to_string());
        write(&root.join(".npmrc"), &format!("registry={}\n", registry.url()));
        root
    };
    let args = json!({"packages": ["hands-postinstall"]});

    // npm: the package's postinstall and the project's own do not run by default...
    let npm = project("npm-app", json!({}));
    let out = add(&npm, Approval::Auto, DepsConfig::default(), None, args.clone()).await;
    assert!(!out.is_error, "{}", text(&out));
    assert!(npm.join("node_modules/hands-postinstall/package.json").exists());
    assert!(!postinstall.exists(), "the package's postinstall ran");
    assert!(!own.exists(), "the project's own postinstall ran");
    let s = out.structured.clone().unwrap();
    assert_eq!(s["scripts"], false, "{s:#}");
    assert_eq!(s["program_origin"], "system", "{s:#}");
    assert!(s["command"].as_array().unwrap().contains(&json!("--ignore-scripts")), "{s:#}");
    // ...and do when the user allows scripts.
    let npm2 = project("npm-allowed", json!({}));
    let out = add(&npm2, Approval::Auto, allow_scripts(), None, args.clone()).await;
    assert!(!out.is_error, "{}", text(&out));
    assert_eq!(out.structured.unwrap()["scripts"], true);
    let ran = std::fs::read_to_string(&postinstall).expect("allowed, the postinstall ran");
    assert!(ran.contains("npm-allowed"), "{ran}");
    std::fs::remove_file(&postinstall).unwrap();
    let _ = std::fs::remove_file(&own);

    // pnpm: a planted node_modules/.bin/pnpm (on PATH twice) is not used, .pnpmfile.cjs is not
    // loaded, and a package the project allows to build does not run its postinstall.
    let pnpm_version =
        String::from_utf8(Command::new(bin.join("pnpm")).arg("--version").output().unwrap().stdout)
            .unwrap();
    let pnpm = project(
        "pnpm-app",
        json!({"packageManager": format!("pnpm@{}", pnpm_version.trim()),
               "pnpm": {"onlyBuiltDependencies": ["hands-postinstall"]}}),
    );
    write(&pnpm.join("pnpm-workspace.yaml"), "onlyBuiltDependencies:\n  - hands-postinstall\n");
    let planted = dir.join("PLANTED");
    script(&pnpm.join("node_modules/.bin/pnpm"), &format!("echo \"$@\" > '{}'", planted.display()));
    let pnpmfile = dir.join("PNPMFILE");
    write(
        &pnpm.join(".pnpmfile.cjs"),
        &format!(
            "require('fs').writeFileSync({:?}, 'loaded');\nmodule.exports = {{ hooks: {{}} }};\n",
            pnpmfile.display()
        ),
    );
    let recorder = Recorder::new(true);
    let out =
        add(&pnpm, Approval::Ask, DepsConfig::default(), Some(recorder.clone()), args.clone())
            .await;
    assert!(!planted.exists(), "the planted pnpm ran");
    assert!(!out.is_error, "{}", text(&out));
    assert!(!pnpmfile.exists(), ".pnpmfile.cjs was loaded");
    assert!(!postinstall.exists(), "the package's postinstall ran under pnpm");
    let details = recorder.details();
    assert!(details.contains(&format!("program: {}", bin.join("pnpm").display())), "{details}");
    assert!(details.contains("the system's"), "{details}");
    assert!(!details.contains("THE REPOSITORY'S"), "{details}");
    assert!(details.contains("--ignore-scripts --ignore-pnpmfile"), "{details}");
    assert!(details.contains("node_modules/.bin"), "the skipped PATH entries: {details}");
    let s = out.structured.unwrap();
    assert_eq!(s["program"], bin.join("pnpm").display().to_string(), "{s:#}");
    assert!(pnpm.join("pnpm-lock.yaml").exists(), "{s:#}");
    assert!(!pnpmfile.exists(), ".pnpmfile.cjs was loaded");
    assert!(!postinstall.exists(), "the package's postinstall ran under pnpm");
    assert!(!own.exists(), "the project's own postinstall ran under pnpm");

    // yarn (classic): neither the package's script nor the project's own.
    let yarn = project("yarn-app", json!({}));
    write(&yarn.join("yarn.lock"), "");
    write(&yarn.join(".yarnrc"), "ignore-scripts false\n");
    let out = add(&yarn, Approval::Auto, DepsConfig::default(), None, args.clone()).await;
    assert!(!out.is_error, "{}", text(&out));
    assert!(yarn.join("node_modules/hands-postinstall/package.json").exists());
    assert!(!postinstall.exists(), "the package's postinstall ran under yarn");
    assert!(!own.exists(), "the project's own postinstall ran under yarn");

    // bun: not even a package the project lists in trustedDependencies runs its script.
    let bun_version =
        String::from_utf8(Command::new(bin.join("bun")).arg("--version").output().unwrap().stdout)
            .unwrap();
    let bun = project(
        "bun-app",
        json!({"packageManager": format!("bun@{}", bun_version.trim()),
               "trustedDependencies": ["hands-postinstall"]}),
    );
    let out = add(&bun, Approval::Auto, DepsConfig::default(), None, args).await;
    assert!(!out.is_error, "{}", text(&out));
    assert!(bun.join("node_modules/hands-postinstall/package.json").exists());
    assert!(!postinstall.exists(), "the package's postinstall ran under bun");
    assert!(!own.exists(), "the project's own postinstall ran under bun");
}
