//! Children never see hands' credentials (issue 11, items 1 and 12): with canary values in the
//! provider key variables, in `HANDS_SERVER__TOKEN` / `HANDS_SANDBOX__TOKEN`, in the variable named
//! by `model.api_key_env` and in one listed in `[exec] env_remove`, the real `hands` binary starts
//! bash, a background process, an MCP stdio server (another `hands mcp`) and a bwrap sandbox's
//! inner hands without any of them — while an ordinary variable still gets through.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

/// Variable → canary value. None of the values may ever show up in a child.
const CANARIES: &[(&str, &str)] = &[
    ("ANTHROPIC_API_KEY", "canary-anthropic-5f1c"),
    ("OPENAI_API_KEY", "canary-openai-77ab"),
    ("GEMINI_API_KEY", "canary-gemini-0c3d"),
    ("GOOGLE_API_KEY", "canary-google-91e0"),
    ("HANDS_SERVER__TOKEN", "canary-server-token-4a2b"),
    ("HANDS_SANDBOX__TOKEN", "canary-sandbox-token-e8d1"),
    ("MY_MODEL_KEY", "canary-model-key-3b7f"),
    ("DEPLOY_SECRET", "canary-env-remove-c6a0"),
];

/// What a child prints: each canary variable's value in brackets (empty when absent), and one
/// ordinary variable that must get through.
fn echo_command() -> String {
    let mut command = String::from("echo");
    for (name, _) in CANARIES {
        command.push_str(&format!(" {name}=[${name}]"));
    }
    command.push_str(" KEPT=[$KEPT_VAR]");
    command
}

/// `hands` with the canaries in its environment, a user configuration in `home`, and the two
/// settings that name more variables to remove.
fn hands(home: &Path, root: &Path) -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("hands"));
    cmd.env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .env("HANDS_STATE_DIR", home.join("state"))
        .env("KEPT_VAR", "ordinary")
        .envs(CANARIES.iter().copied())
        .arg("--root")
        .arg(root)
        .args(["-c", "model.api_key_env=\"MY_MODEL_KEY\""])
        .args(["-c", "exec.env_remove=[\"DEPLOY_SECRET\"]"]);
    cmd
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    let text =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{text}");
    text
}

/// No canary value anywhere in `text`, every canary variable printed empty, and the ordinary
/// variable printed with its value.
fn assert_clean(text: &str, what: &str) {
    for (name, value) in CANARIES {
        assert!(!text.contains(value), "{what} saw {name}: {text}");
        assert!(text.contains(&format!("{name}=[]")), "{what} did not print {name}: {text}");
    }
    assert!(text.contains("KEPT=[ordinary]"), "{what} lost an ordinary variable: {text}");
}

fn dirs() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let root = tmp.path().join("proj");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&root).unwrap();
    (tmp, home, root)
}

#[test]
fn bash_gets_no_credentials() {
    let (_tmp, home, root) = dirs();
    let command = format!("command={}", echo_command());
    let text = run(hands(&home, &root).args(["call", "bash", &command]));
    assert_clean(&text, "bash");
}

#[test]
fn a_background_process_gets_no_credentials() {
    let (_tmp, home, root) = dirs();
    // A long-run that prints and ends: spawn_process waits for its first output.
    let command = format!("command={}", echo_command());
    let text = run(hands(&home, &root).args(["call", "spawn_process", "type=long-run", &command]));
    assert_clean(&text, "spawn_process");
}

#[test]
fn an_mcp_stdio_server_gets_no_credentials() {
    let (_tmp, home, root) = dirs();
    // The MCP server is another `hands mcp`; its bash prints the server's own environment (its
    // parent's, read from /proc), not just what bash itself got.
    let config = home.join(".config/hands");
    std::fs::create_dir_all(&config).unwrap();
    let bin = assert_cmd::cargo::cargo_bin("hands");
    std::fs::write(
        config.join("config.toml"),
        format!(
            // Its own (empty) user configuration: with ours it would start itself again.
            "[mcp_servers.inner]\ncommand = {:?}\nargs = [\"mcp\", \"--root\", {:?}]\n\
             env = {{ XDG_CONFIG_HOME = {:?} }}\n",
            bin.display().to_string(),
            root.display().to_string(),
            home.join("inner-config").display().to_string()
        ),
    )
    .unwrap();
    let mut command = String::from("command=tr '\\0' '\\n' < /proc/$PPID/environ > env.txt; ");
    command.push_str("echo");
    for (name, _) in CANARIES {
        command.push_str(&format!(" {name}=[$(grep '^{name}=' env.txt | cut -d= -f2-)]"));
    }
    command.push_str(" KEPT=[$(grep '^KEPT_VAR=' env.txt | cut -d= -f2-)]");
    let args = serde_json::json!({"command": command.strip_prefix("command=").unwrap()});
    let text = run(hands(&home, &root).args(["call", "mcp__inner__bash"]).arg(args.to_string()));
    assert_clean(&text, "the MCP server");
}

#[test]
fn a_bwrap_sandbox_gets_no_credentials() {
    if hands_mcp::sandbox::find_on_path("bwrap").is_none() {
        assert!(std::env::var_os("CI").is_none(), "bwrap is required in CI");
        eprintln!("!!!!! bwrap is not installed: SKIPPING this sandbox test !!!!!");
        return;
    }
    let (_tmp, home, root) = dirs();
    // bash's parent is the inner hands under bwrap: it is not dumpable, so a sandboxed command
    // cannot read its environment (nor open its stdin) through /proc.
    let command = "command=tr '\\0' '\\n' < /proc/$PPID/environ > /dev/null 2>&1 \
                   && echo READABLE || echo SEALED";
    let text = run(hands(&home, &root)
        .args(["-c", "sandbox.backend=\"bwrap\"", "call", "bash"])
        .arg(command));
    assert!(text.contains("SEALED") && !text.contains("READABLE"), "{text}");
    assert_clean(
        &run(hands(&home, &root)
            .args(["-c", "sandbox.backend=\"bwrap\"", "call", "bash"])
            .arg(format!("command={}", echo_command()))),
        "bash in the sandbox",
    );
}
