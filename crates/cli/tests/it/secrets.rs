//! Stored secrets through the real binary (issue 13, items 1 and 2): `hands secrets set/list/rm`,
//! and the environment of the processes hands starts — a project's secret reaches bash in that
//! project only, a global one reaches every project, a stored name hands itself has in its
//! environment is removed where it is not granted, and the provider key never gets through. The
//! values are checked by exit status and by hash: no test prints one.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const APP_VALUE: &str = "canary-app-token-7f3e91";
const SHARED_VALUE: &str = "canary-shared-token-0b5d22";
const OUTER_VALUE: &str = "canary-outer-value-66aa10";
const PROVIDER_VALUE: &str = "canary-provider-key-4c1d";

struct Dirs {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    app: PathBuf,
    other: PathBuf,
}

fn dirs() -> Dirs {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let app = tmp.path().join("app");
    let other = tmp.path().join("other");
    for dir in [&home, &app, &other] {
        std::fs::create_dir_all(dir).unwrap();
    }
    Dirs { _tmp: tmp, home, app, other }
}

fn hands(home: &Path, root: &Path) -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("hands"));
    cmd.env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("HANDS_SECRETS_DIR")
        .env("HANDS_STATE_DIR", home.join("state"))
        .env("ANTHROPIC_API_KEY", PROVIDER_VALUE)
        .arg("--root")
        .arg(root)
        .stdin(Stdio::null());
    cmd
}

/// Run, feeding `stdin`; assert that no canary value shows in the output.
fn output(cmd: &mut Command, stdin: &str) -> Output {
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let text =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    for value in [APP_VALUE, SHARED_VALUE, OUTER_VALUE, PROVIDER_VALUE] {
        assert!(!text.contains(value), "a value was printed: {text}");
    }
    out
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn set(home: &Path, root: &Path, name: &str, value: &str, extra: &[&str]) {
    let out =
        output(hands(home, root).args(["secrets", "set", name]).args(extra), &format!("{value}\n"));
    assert!(out.status.success(), "{}", text(&out));
}

/// The sha256 of `value`, as `sha256sum` prints it.
fn sha256(value: &str) -> String {
    let out = Command::new("sh")
        .args(["-c", "printf %s \"$V\" | sha256sum"])
        .env("V", value)
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().split_whitespace().next().unwrap().to_string()
}

/// What bash in `root` has in `name`: `None` when unset or empty, else the hash of its value.
fn seen_by_bash(
    home: &Path,
    root: &Path,
    name: &str,
    extra_env: &[(&str, &str)],
) -> Option<String> {
    let command = format!(
        "command=if [ -n \"${{{name}:-}}\" ]; then printf %s \"${name}\" | sha256sum; else echo unset; fi"
    );
    let out = output(
        hands(home, root).envs(extra_env.iter().copied()).args(["call", "bash", &command]),
        "",
    );
    let text = text(&out);
    assert!(out.status.success(), "{text}");
    if text.contains("unset") {
        None
    } else {
        Some(
            text.split_whitespace()
                .find(|w| w.len() == 64)
                .unwrap_or_else(|| panic!("{text}"))
                .to_string(),
        )
    }
}

#[test]
fn set_list_and_rm_never_show_a_value() {
    let d = dirs();
    let out = output(
        hands(&d.home, &d.app).args(["secrets", "set", "APP_TOKEN"]),
        &format!("{APP_VALUE}\n"),
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("stored APP_TOKEN"), "{}", text(&out));
    assert!(text(&out).contains("cana…3e91"), "the hint: {}", text(&out));
    set(&d.home, &d.app, "SHARED_TOKEN", SHARED_VALUE, &["--global"]);

    let out = output(hands(&d.home, &d.app).args(["secrets", "list", "--json"]), "");
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> =
        list.as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["APP_TOKEN", "SHARED_TOKEN"], "{list}");
    assert_eq!(list[1]["scope"]["kind"], "global");
    // Another project sees the global one only.
    let out = output(hands(&d.home, &d.other).args(["secrets", "list"]), "");
    assert!(
        text(&out).contains("SHARED_TOKEN") && !text(&out).contains("APP_TOKEN"),
        "{}",
        text(&out)
    );
    let out = output(hands(&d.home, &d.other).args(["secrets", "list", "--all"]), "");
    assert!(text(&out).contains("APP_TOKEN"), "{}", text(&out));

    // Bad input: a clear error, nothing stored.
    let out = output(
        hands(&d.home, &d.app).args(["secrets", "set", "lower_name"]),
        "long-enough-value\n",
    );
    assert!(!out.status.success());
    assert!(text(&out).contains("STRIPE_SECRET_KEY"), "{}", text(&out));
    let out = output(hands(&d.home, &d.app).args(["secrets", "set", "SHORT_ONE"]), "1234567\n");
    assert!(!out.status.success());
    assert!(text(&out).contains("at least 8 characters"), "{}", text(&out));
    let out = output(hands(&d.home, &d.app).args(["secrets", "set", "EMPTY_ONE"]), "");
    assert!(!out.status.success());
    assert!(text(&out).contains("no value given"), "{}", text(&out));

    let out = output(hands(&d.home, &d.app).args(["secrets", "rm", "APP_TOKEN"]), "");
    assert!(out.status.success(), "{}", text(&out));
    let out = output(hands(&d.home, &d.app).args(["secrets", "rm", "APP_TOKEN"]), "");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("no secret APP_TOKEN"), "{}", text(&out));
    let out =
        output(hands(&d.home, &d.app).args(["secrets", "rm", "SHARED_TOKEN", "--global"]), "");
    assert!(out.status.success(), "{}", text(&out));
    let out = output(hands(&d.home, &d.app).args(["secrets", "list"]), "");
    assert!(text(&out).contains("no secrets stored"), "{}", text(&out));
}

#[test]
fn children_get_the_secrets_granted_to_their_project_only() {
    let d = dirs();
    set(&d.home, &d.app, "APP_TOKEN", APP_VALUE, &[]);
    set(&d.home, &d.app, "SHARED_TOKEN", SHARED_VALUE, &["--global"]);
    // The project's own secret, in its project only.
    assert_eq!(seen_by_bash(&d.home, &d.app, "APP_TOKEN", &[]), Some(sha256(APP_VALUE)));
    assert_eq!(seen_by_bash(&d.home, &d.other, "APP_TOKEN", &[]), None);
    // A global one everywhere.
    assert_eq!(seen_by_bash(&d.home, &d.app, "SHARED_TOKEN", &[]), Some(sha256(SHARED_VALUE)));
    assert_eq!(seen_by_bash(&d.home, &d.other, "SHARED_TOKEN", &[]), Some(sha256(SHARED_VALUE)));
    // A stored name that hands has in its own environment: removed where it is not granted,
    // the stored value where it is.
    let outer = [("APP_TOKEN", OUTER_VALUE)];
    assert_eq!(seen_by_bash(&d.home, &d.other, "APP_TOKEN", &outer), None);
    assert_eq!(seen_by_bash(&d.home, &d.app, "APP_TOKEN", &outer), Some(sha256(APP_VALUE)));
    // An ordinary variable still gets through; the provider key never does.
    assert_eq!(
        seen_by_bash(&d.home, &d.other, "KEPT_VAR", &[("KEPT_VAR", "ordinary-value")]),
        Some(sha256("ordinary-value"))
    );
    assert_eq!(seen_by_bash(&d.home, &d.app, "ANTHROPIC_API_KEY", &[]), None);
    // A project-scoped value beats the global one of the same name.
    set(&d.home, &d.app, "SHARED_TOKEN", "canary-app-override-9e", &[]);
    assert_eq!(
        seen_by_bash(&d.home, &d.app, "SHARED_TOKEN", &[]),
        Some(sha256("canary-app-override-9e"))
    );
    assert_eq!(seen_by_bash(&d.home, &d.other, "SHARED_TOKEN", &[]), Some(sha256(SHARED_VALUE)));
}

#[test]
fn a_background_process_of_the_project_gets_its_secret() {
    let d = dirs();
    set(&d.home, &d.app, "APP_TOKEN", APP_VALUE, &[]);
    let command = "command=printf %s \"$APP_TOKEN\" | sha256sum > hash.txt";
    let out = output(
        hands(&d.home, &d.app).args(["call", "spawn_process", "type=long-run", command]),
        "",
    );
    assert!(out.status.success(), "{}", text(&out));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let hash = loop {
        let hash = std::fs::read_to_string(d.app.join("hash.txt")).unwrap_or_default();
        if hash.len() >= 64 || std::time::Instant::now() > deadline {
            break hash;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert!(hash.starts_with(&sha256(APP_VALUE)), "{hash}");
}
