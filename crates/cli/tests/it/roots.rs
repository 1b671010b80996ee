//! A session root may not be `/`, the home folder, or a folder that holds hands' own state,
//! configuration or sessions: refused by `hands serve`, `hands mcp`, `hands run` and the session
//! API (`POST /v1/sessions`), each with an error that says what to pick instead (started in the
//! home folder or at `/`, the projects found below the home folder).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

const TOKEN: &str = "roots-test-token";

/// `hands` with HOME and every hands folder inside `home`.
fn hands(home: &Path) -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("hands"));
    cmd.env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .env_remove("HANDS_STATE_DIR")
        .env_remove("HANDS_SERVER__TOKEN")
        .stdin(Stdio::null());
    cmd
}

fn refused(out: &std::process::Output, what: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{what} was accepted: {stderr}");
    assert!(stderr.contains("cannot be a session root"), "{what}: {stderr}");
    assert!(stderr.contains("pick the project's own folder"), "{what} says what to do: {stderr}");
}

#[test]
fn the_command_line_refuses_slash_home_and_ancestors_of_hands_folders() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let project = home.join("src/app");
    std::fs::create_dir_all(&project).unwrap();
    let listen = ["--listen", "127.0.0.1:0", "--token", TOKEN];
    let out = hands(&home).args(["serve", "--root", "/"]).args(listen).output().unwrap();
    refused(&out, "serve --root /");
    let out = hands(&home).arg("mcp").arg("--root").arg(&home).output().unwrap();
    refused(&out, "mcp --root $HOME");
    // tmp holds HOME, so every hands folder.
    let out = hands(&home).arg("run").arg("--root").arg(tmp.path()).arg("hi").output().unwrap();
    refused(&out, "run --root <ancestor of HOME>");
    // A state folder set apart from HOME is protected too.
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir_all(elsewhere.join("state")).unwrap();
    let out = hands(&home)
        .env("HANDS_STATE_DIR", elsewhere.join("state"))
        .arg("mcp")
        .arg("--root")
        .arg(&elsewhere)
        .output()
        .unwrap();
    refused(&out, "mcp --root <holder of HANDS_STATE_DIR>");
    // A configured store's folder too.
    std::fs::create_dir_all(elsewhere.join("db")).unwrap();
    let out = hands(&home)
        .arg("-c")
        .arg(format!("store.path={}", elsewhere.join("db/sessions.db").display()))
        .arg("mcp")
        .arg("--root")
        .arg(elsewhere.join("db"))
        .output()
        .unwrap();
    refused(&out, "mcp --root <the store's folder>");
    // The project itself is fine: `hands mcp` starts (and ends at its closed stdin).
    let out = hands(&home).arg("mcp").arg("--root").arg(&project).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("session root"), "{stderr}");
    assert!(stderr.contains("handshake"), "it got as far as MCP: {stderr}");
}

/// `POST /v1/sessions` with `root`; the status and body.
fn create(port: u16, root: &Path) -> (u16, String) {
    let body = serde_json::json!({ "root": root }).to_string();
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let head = format!(
        "POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    let status = answer.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, answer)
}

#[test]
fn the_session_api_refuses_them_too() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let project = home.join("src/app");
    std::fs::create_dir_all(&project).unwrap();
    let mut child = hands(&home)
        .args(["serve", "--listen", "127.0.0.1:0", "--token", TOKEN, "--root"])
        .arg(&project)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap()).read_line(&mut line).unwrap();
    let port: u16 = line
        .split("http://127.0.0.1:")
        .nth(1)
        .map(|r| r.chars().take_while(char::is_ascii_digit).collect::<String>())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {line}"));
    for root in [Path::new("/"), home.as_path(), tmp.path(), &home.join(".local")] {
        let (status, answer) = create(port, root);
        assert_eq!(status, 400, "root {}: {answer}", root.display());
        assert!(answer.contains("cannot be a session root"), "{answer}");
    }
    let (status, answer) = create(port, &project);
    assert_eq!(status, 201, "{answer}");
    let _ = child.kill();
    let _ = child.wait();
}

/// `dir/marker` made (a folder for `.git`), the marker and the folder last changed at `secs`
/// after the epoch.
fn project(dir: &Path, marker: &str, secs: u64) {
    std::fs::create_dir_all(dir).unwrap();
    if marker == ".git" {
        std::fs::create_dir(dir.join(marker)).unwrap();
    } else {
        std::fs::write(dir.join(marker), "{}").unwrap();
    }
    let at = std::time::UNIX_EPOCH + Duration::from_secs(secs);
    for path in [dir.join(marker), dir.to_path_buf()] {
        std::fs::File::open(path).unwrap().set_modified(at).unwrap();
    }
}

/// Issue 34: started in the home folder (or at `/`) without `--root`, hands names the projects
/// below the home folder to pass instead, most recently changed first.
#[test]
fn started_in_the_home_folder_it_names_the_projects_to_pass_instead() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    project(&home.join("src/app"), ".git", 1_000_000);
    project(&home.join("site"), "package.json", 2_000_000);
    std::fs::create_dir_all(home.join("notes")).unwrap();
    let listen = ["--listen", "127.0.0.1:0", "--token", TOKEN];
    let out = hands(&home).current_dir(&home).arg("serve").args(listen).output().unwrap();
    refused(&out, "serve in $HOME");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("it is the home folder"), "{stderr}");
    assert!(stderr.contains("\n  --root ~/site\n  --root ~/src/app"), "{stderr}");
    assert!(!stderr.contains("notes"), "{stderr}");

    let out = hands(&home).current_dir("/").args(["run", "hi"]).output().unwrap();
    refused(&out, "run at /");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("file system root") && stderr.contains("--root ~/site"), "{stderr}");

    // No project below the home folder: the plain advice.
    let empty = tmp.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = hands(&empty).current_dir(&empty).arg("mcp").output().unwrap();
    refused(&out, "mcp in an empty $HOME");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("(e.g. --root ~/src/app) instead"), "{stderr}");
}
