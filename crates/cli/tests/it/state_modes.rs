//! Every file hands writes under its state and data folders is 0600 and every folder 0700
//! (issue 13, permissions): with the XDG folders in a temporary place and a umask of 000 (so that
//! only hands' own modes count), the real binary stores a secret, runs a background process (the
//! records folder), serves with a generated token (the token file) and creates a session (the SQLite
//! store with its -wal and -shm files); then both trees are walked.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead as _, BufReader, Write as _};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

struct Dirs {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    state: PathBuf,
    data: PathBuf,
    root: PathBuf,
}

/// `hands ARGS` under `umask 000`, with every folder of hands in the temporary tree.
fn hands(d: &Dirs) -> Command {
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "umask 000; exec \"$@\"", "sh"])
        .arg(assert_cmd::cargo::cargo_bin("hands"))
        .env("HOME", &d.home)
        .env("XDG_STATE_HOME", &d.state)
        .env("XDG_DATA_HOME", &d.data)
        .env("XDG_CONFIG_HOME", d.home.join("config"))
        .env_remove("HANDS_STATE_DIR")
        .env_remove("HANDS_SECRETS_DIR")
        .env_remove("HANDS_SERVER__TOKEN")
        .env_remove("HANDS_STORE__PATH")
        .arg("--root")
        .arg(&d.root);
    cmd
}

fn walk(dir: &Path, found: &mut Vec<(PathBuf, u32, bool)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        found.push((path.clone(), meta.permissions().mode() & 0o777, meta.is_dir()));
        if meta.is_dir() {
            walk(&path, found);
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn state_and_data_are_private() {
    let tmp = tempfile::tempdir().unwrap();
    let d = Dirs {
        home: tmp.path().join("home"),
        state: tmp.path().join("state"),
        data: tmp.path().join("data"),
        root: tmp.path().join("proj"),
        _tmp: tmp,
    };
    std::fs::create_dir_all(&d.home).unwrap();
    std::fs::create_dir_all(&d.root).unwrap();

    let mut set = hands(&d)
        .args(["secrets", "set", "APP_TOKEN"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    set.stdin.take().unwrap().write_all(b"canary-modes-value-1234\n").unwrap();
    let out = set.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let out = hands(&d)
        .args(["call", "spawn_process", "type=long-run", "command=echo logged"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    // `hands serve` without a token: it makes one and keeps it in the state folder.
    let mut serve = hands(&d)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = serve.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.split("http://127.0.0.1:").nth(1) {
                let port: String = rest.chars().take_while(char::is_ascii_digit).collect();
                let _ = tx.send(port);
            }
        }
    });
    let port = rx.recv_timeout(Duration::from_secs(30)).expect("hands serve did not start");
    let token = std::fs::read_to_string(d.state.join("hands/server-token")).unwrap();
    let reply = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port}/v1/sessions"))
        .bearer_auth(token.trim())
        .json(&serde_json::json!({"root": d.root, "id": "modes"}))
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 201, "{}", reply.text().await.unwrap());
    let mut found = Vec::new();
    walk(&d.state, &mut found);
    walk(&d.data, &mut found);
    let _ = serve.kill();
    let _ = serve.wait();

    let names: Vec<String> = found
        .iter()
        .map(|(p, ..)| p.strip_prefix(&d._tmp).unwrap().display().to_string())
        .collect();
    for expected in ["state/hands/secrets", "state/hands/server-token", "data/hands/sessions.db"] {
        assert!(names.iter().any(|n| n == expected), "{expected} missing: {names:?}");
    }
    assert!(names.iter().any(|n| n.starts_with("state/hands/secrets/project-")), "{names:?}");
    // The process record is gone with its process; its folder stays.
    assert!(names.iter().any(|n| n == "state/hands/processes"), "{names:?}");
    let wrong: Vec<String> = found
        .iter()
        // The XDG folders themselves are the user's; hands' own start at `hands`.
        .filter(|(path, ..)| path.parent() != Some(&d.state) && path.parent() != Some(&d.data))
        .filter(|(_, mode, dir)| *mode != if *dir { 0o700 } else { 0o600 })
        .map(|(path, mode, _)| format!("{} {mode:o}", path.display()))
        .collect();
    assert!(wrong.is_empty(), "not private: {wrong:?}");
    // The `hands` folders themselves.
    for dir in [d.state.join("hands"), d.data.join("hands")] {
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{}", dir.display());
    }
}
