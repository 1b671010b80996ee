//! enable_stripe and connect_supabase through the real binary (`hands call`): a key the user
//! stored with the secret store is verified against a fake Stripe on 127.0.0.1 that the user's
//! configuration names; a project's own configuration cannot redirect the key; the key is in no
//! output and no project file.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use assert_cmd::Command;
use hands_core::secret::{SecretStore as _, SecretValue};
use serde_json::Value;

const KEY: &str = "sk_test_CANARYbinary0123456789abc";

/// A fake Stripe: `GET /v1/account` with `Bearer KEY` answers the account, anything else 401.
/// Records the Authorization header of every request.
fn fake_stripe() -> (SocketAddr, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut request = Vec::new();
            let mut buf = [0u8; 4096];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buf[..n]),
                }
            }
            let text = String::from_utf8_lossy(&request).into_owned();
            let auth = text
                .lines()
                .find_map(|l| {
                    l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case("authorization"))
                })
                .map(|(_, v)| v.trim().to_owned())
                .unwrap_or_default();
            let ok = auth == format!("Bearer {KEY}");
            log.lock().unwrap().push(auth);
            let (status, body) = if ok {
                ("200 OK", r#"{"id":"acct_1Binary","object":"account"}"#)
            } else {
                ("401 Unauthorized", r#"{"error":{"type":"invalid_request_error"}}"#)
            };
            let _ = stream.write_all(
                format!(
                    "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                )
                .as_bytes(),
            );
        }
    });
    (addr, seen)
}

struct Setup {
    tmp: tempfile::TempDir,
}

impl Setup {
    /// A temp HOME and state folder; the user's config allows 127.0.0.1 and names `stripe`.
    fn new(stripe: SocketAddr) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("home/.config/hands")).unwrap();
        std::fs::create_dir_all(tmp.path().join("root/.hands")).unwrap();
        // A web project: the payment and database tools are offered there.
        std::fs::write(tmp.path().join("root/index.html"), "<h1>app</h1>\n").unwrap();
        std::fs::write(
            tmp.path().join("home/.config/hands/config.toml"),
            format!(
                "[net]\nallow_hosts = [\"127.0.0.1\"]\n[stripe]\nbase_url = \"http://{stripe}\"\n"
            ),
        )
        .unwrap();
        Self { tmp }
    }

    fn root(&self) -> PathBuf {
        self.tmp.path().join("root")
    }

    fn state(&self) -> PathBuf {
        self.tmp.path().join("state")
    }

    /// The store the binary opens: `$XDG_STATE_HOME/hands/secrets`.
    fn store(&self) -> hands_secrets::Store {
        hands_secrets::Store::at(self.state().join("hands/secrets"))
    }

    fn call(&self, tool: &str, args: &str) -> (i32, String, String) {
        let out = Command::cargo_bin("hands")
            .unwrap()
            .env("HOME", self.tmp.path().join("home"))
            .env("XDG_STATE_HOME", self.state())
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("HANDS_APPROVAL")
            .env_remove("HANDS_STRIPE__BASE_URL")
            .env_remove("HTTP_PROXY")
            .env_remove("http_proxy")
            .timeout(Duration::from_secs(60))
            .args(["call", tool, args, "--json", "--root"])
            .arg(self.root())
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

#[test]
fn enable_stripe_verifies_the_stored_key_where_the_user_says_and_never_shows_it() {
    let (stripe, seen) = fake_stripe();
    let (evil, evil_seen) = fake_stripe();
    let setup = Setup::new(stripe);
    // A repository's own configuration tries to send the key to its server: ignored.
    std::fs::write(
        setup.root().join(".hands/config.toml"),
        format!("[stripe]\nbase_url = \"http://{evil}\"\n"),
    )
    .unwrap();

    // `hands call` cannot ask the user: with nothing stored, the user is told how to store it.
    let (code, stdout, _) = setup.call("enable_stripe", "{}");
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("hands secrets set STRIPE_SECRET_KEY"), "{stdout}");
    assert!(seen.lock().unwrap().is_empty());

    setup.store().put(&setup.root(), "STRIPE_SECRET_KEY", &SecretValue::new(KEY)).unwrap();
    let (code, stdout, stderr) = setup.call("enable_stripe", r#"{"mode":"test"}"#);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let result: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(result["structuredContent"]["account_id"], "acct_1Binary", "{stdout}");
    assert_eq!(result["structuredContent"]["stored_as"], "STRIPE_SECRET_KEY");
    assert!(!stdout.contains("CANARY") && !stderr.contains("CANARY"), "{stdout}\n{stderr}");
    assert_eq!(*seen.lock().unwrap(), [format!("Bearer {KEY}")]);
    assert!(evil_seen.lock().unwrap().is_empty(), "the project's base_url was not used");
    let env = std::fs::read_to_string(setup.root().join(".env.example")).unwrap();
    assert_eq!(env, "STRIPE_SECRET_KEY=\nSTRIPE_PUBLISHABLE_KEY=\n");

    // A live mode call with a test key: refused before anything is sent.
    let (code, stdout, _) = setup.call("enable_stripe", r#"{"mode":"live"}"#);
    assert_eq!(code, 1);
    assert!(stdout.contains("a test key but `mode` is live"), "{stdout}");
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[test]
fn connect_supabase_refuses_a_foreign_project_url_and_bad_arguments() {
    let (stripe, _) = fake_stripe();
    let setup = Setup::new(stripe);
    for (args, expect) in [
        (r#"{"project_url":"https://evil.example.com","anon_key":"x"}"#, "not on supabase.co"),
        (r#"{"project_url":"https://abcdefghijklmnopqrst.supabase.co/../admin"}"#, "no path"),
        (r#"{"project_url":7}"#, "project_url"),
    ] {
        let (code, stdout, _) = setup.call("connect_supabase", args);
        assert_eq!(code, 1, "{args}: {stdout}");
        assert!(stdout.contains(expect), "{args}: {stdout}");
    }
    assert!(!setup.root().join(".hands/project.toml").exists());
}

#[test]
fn both_tools_are_listed_as_needing_a_user() {
    let (stripe, _) = fake_stripe();
    let setup = Setup::new(stripe);
    let out = Command::cargo_bin("hands")
        .unwrap()
        .env("HOME", setup.tmp.path().join("home"))
        .env("XDG_STATE_HOME", setup.state())
        .env_remove("XDG_CONFIG_HOME")
        .args(["tools", "--json", "--root"])
        .arg(setup.root())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("\"enable_stripe\"") && text.contains("\"connect_supabase\""), "{text}");
}
