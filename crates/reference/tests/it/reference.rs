//! reference_project through a real registry (the fs tools and reference_project, the standard
//! middleware) over real folders: each op reads the other root, never the session's; secret files
//! are refused by name, through a symlink, and are absent from listings, globs and greps; escapes
//! by `..`, absolute paths and symlinks out are refused; an unknown name lists the known ones.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;

use hands_core::{CoreConfig, Registry, Session, ToolCall, ToolOutput};
use serde_json::{Value, json};

struct Fixture {
    _tmp: tempfile::TempDir,
    registry: Registry,
    session: Session,
    other: std::path::PathBuf,
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let own = tmp.path().join("own");
    let other = tmp.path().join("other");
    write(&own.join("src/main.ts"), "export const ownMarker = 1;\n");
    write(&other.join("src/client.ts"), "export function createClient() {\n  return 42;\n}\n");
    write(&other.join("README.md"), "# other\ncreateClient is documented here\n");
    write(&other.join(".env"), "API_TOKEN=createClient-env-value\n");
    write(&other.join(".env.local"), "LOCAL=createClient-local\n");
    write(&other.join("certs/server.pem"), "createClient pem\n");
    write(&other.join("deploy.key"), "createClient key\n");
    write(&other.join(".git/config"), "[core]\n# createClient git\n");
    write(&tmp.path().join("outside.txt"), "createClient outside\n");
    std::os::unix::fs::symlink(".env", other.join("notes.txt")).unwrap();
    std::os::unix::fs::symlink("certs", other.join("keys-link")).unwrap();
    std::os::unix::fs::symlink(tmp.path().join("outside.txt"), other.join("out.txt")).unwrap();
    std::os::unix::fs::symlink(tmp.path().join("own"), other.join("own-link")).unwrap();
    let mut projects = BTreeMap::new();
    projects.insert("other".to_owned(), other.clone());
    projects.insert("second".to_owned(), tmp.path().join("missing"));
    let builder = Registry::builder(CoreConfig::default());
    let builder = hands_fs::register(builder, &Default::default());
    let registry = hands_reference::register(builder, &projects, &Default::default()).build();
    let session = Session::new("s1", &own);
    Fixture { _tmp: tmp, registry, session, other }
}

async fn call(f: &Fixture, args: Value) -> ToolOutput {
    let call = ToolCall::new("c1", "reference_project", args);
    f.registry.dispatch(&f.session, call).await.unwrap()
}

#[tokio::test]
async fn every_op_reads_the_other_root() {
    let f = fixture();
    let out = call(&f, json!({"project": "other", "op": "read", "path": "src/client.ts"})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    let text = out.joined_text();
    assert!(text.starts_with("reference project `other` (read):"), "{text}");
    assert!(text.contains("1\texport function createClient()"), "{text}");
    assert!(out.structured.is_none());

    let out = call(&f, json!({"project": "other", "op": "list"})).await;
    let text = out.joined_text();
    assert!(text.contains("src/") && text.contains("README.md"), "{text}");

    let out = call(&f, json!({"project": "other", "op": "glob", "pattern": "**/*.ts"})).await;
    let text = out.joined_text();
    assert!(text.contains("src/client.ts") && !text.contains("main.ts"), "{text}");

    let out = call(&f, json!({"project": "other", "op": "grep", "pattern": "createClient"})).await;
    let text = out.joined_text();
    assert!(text.contains("src/client.ts:1:") && text.contains("README.md:2:"), "{text}");

    let out = call(&f, json!({"project": "other", "op": "grep", "pattern": "ownMarker"})).await;
    assert!(!out.joined_text().contains("main.ts"), "{}", out.joined_text());
}

#[tokio::test]
async fn secret_files_are_refused_and_never_listed_or_searched() {
    let f = fixture();
    for path in [
        ".env",
        ".env.local",
        "certs/server.pem",
        "deploy.key",
        ".git/config",
        "notes.txt",
        "keys-link/server.pem",
    ] {
        let out = call(&f, json!({"project": "other", "op": "read", "path": path})).await;
        let text = out.joined_text();
        assert!(out.is_error, "{path}: {text}");
        assert!(text.contains("is hidden here"), "{path}: {text}");
        assert!(!text.contains("createClient-"), "{path}: {text}");
    }
    let out = call(&f, json!({"project": "other", "op": "list", "depth": 5})).await;
    let text = out.joined_text();
    for name in [".env", "server.pem", "deploy.key", ".git"] {
        assert!(!text.contains(name), "{name} listed: {text}");
    }
    for pattern in ["*", ".env*", "**/*.pem", "*.key", "**/config"] {
        let out = call(
            &f,
            json!({"project": "other", "op": "glob", "pattern": pattern, "include_ignored": true}),
        )
        .await;
        let text = out.joined_text();
        for name in [".env.local", "certs/server.pem", "deploy.key", ".git/config"] {
            assert!(!text.contains(name), "{pattern}: {name} globbed: {text}");
        }
        assert!(!text.lines().any(|l| l.trim() == ".env"), "{pattern}: {text}");
    }
    let out = call(
        &f,
        json!({"project": "other", "op": "grep", "pattern": "createClient", "include_ignored": true}),
    )
    .await;
    let text = out.joined_text();
    for leak in ["env-value", "local", "pem", "key", "git", "outside"] {
        assert!(!text.contains(&format!("createClient {leak}")), "{leak}: {text}");
    }
    assert!(!text.contains("createClient-"), "{text}");
    for path in [".git", "certs/server.pem"] {
        let out =
            call(&f, json!({"project": "other", "op": "grep", "pattern": "x", "path": path})).await;
        assert!(out.is_error && out.joined_text().contains("is hidden here"), "{path}");
    }
}

#[tokio::test]
async fn escapes_are_refused() {
    let f = fixture();
    let outside = f.other.parent().unwrap().join("outside.txt");
    for path in ["../outside.txt", "../own/src/main.ts", outside.to_str().unwrap(), "out.txt"] {
        let out = call(&f, json!({"project": "other", "op": "read", "path": path})).await;
        let text = out.joined_text();
        assert!(out.is_error, "{path}: {text}");
        assert!(!text.contains("createClient outside"), "{path}: {text}");
        assert!(text.contains("outside"), "{path}: {text}");
    }
    let out = call(&f, json!({"project": "other", "op": "list", "path": "own-link"})).await;
    assert!(out.is_error, "{}", out.joined_text());
    let out = call(&f, json!({"project": "other", "op": "glob", "pattern": "../*"})).await;
    assert!(out.is_error, "{}", out.joined_text());
}

#[tokio::test]
async fn bad_names_and_fields_say_what_to_do() {
    let f = fixture();
    let out = call(&f, json!({"project": "nope", "op": "list"})).await;
    let text = out.joined_text();
    assert!(out.is_error && text.contains("no reference project named `nope`"), "{text}");
    assert!(text.contains("`other`, `second`"), "{text}");
    let out = call(&f, json!({"project": "second", "op": "list"})).await;
    assert!(out.is_error && out.joined_text().contains("not a folder"), "{}", out.joined_text());
    let out = call(&f, json!({"project": "other", "op": "read", "path": "a", "depth": 1})).await;
    assert!(out.joined_text().contains("`depth` does not apply to op `read`"));
    let out = call(&f, json!({"project": "other", "op": "write", "path": "a"})).await;
    assert!(out.is_error && out.joined_text().contains("op"), "{}", out.joined_text());
    let spec = f.registry.get("reference_project").unwrap().spec().clone();
    assert!(spec.description.contains("Reference projects: `other`, `second`."));
    assert!(spec.policy.offered(hands_core::Mode::Plan) && spec.policy.subagent);
}

/// Issue 26, item 9: the well-known credential files and private keys without an extension (found
/// by name and by content) are never read, listed, globbed or grepped.
#[tokio::test]
async fn credential_files_and_extensionless_keys_are_hidden() {
    let f = fixture();
    let o = &f.other;
    let openssh = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAAcanary-cred\n\
                   -----END OPENSSH PRIVATE KEY-----\n";
    let rsa = "-----BEGIN RSA PRIVATE KEY-----\nMIIEcanary-cred\n-----END RSA PRIVATE KEY-----\n";
    let files = [
        (".npmrc", "//registry.example.test/:_authToken=npm_canary-cred\n".to_owned()),
        ("web/.npmrc", "_auth=canary-cred\n".to_owned()),
        (".yarnrc.yml", "npmAuthToken: canary-cred\n".to_owned()),
        (".dev.vars", "API_KEY=canary-cred\n".to_owned()),
        (".aws/credentials", "[default]\naws_secret_access_key = canary-cred\n".to_owned()),
        (".aws/config", "[default]\n# canary-cred\n".to_owned()),
        (".netrc", "machine api.example.test login me password canary-cred\n".to_owned()),
        (".pypirc", "[pypi]\npassword = canary-cred\n".to_owned()),
        (".docker/config.json", "{\"auths\": {\"x\": {\"auth\": \"canary-cred\"}}}\n".to_owned()),
        (".git-credentials", "https://me:canary-cred@example.test\n".to_owned()),
        ("id_rsa", rsa.to_owned()),
        ("id_ed25519", openssh.to_owned()),
        (".ssh/config", "Host x # canary-cred\n".to_owned()),
        // No telling name: found by what they hold.
        ("keys/deploy", openssh.to_owned()),
        ("ops/github", format!("\n{rsa}")),
        ("ops/raw", "openssh-key-v1\0canary-cred".to_owned()),
    ];
    for (rel, text) in &files {
        write(&o.join(rel), text);
    }
    // Ordinary files that only talk about keys stay visible.
    write(&o.join("docs/ssh.md"), "# keys\ncanary-ok -----BEGIN OPENSSH PRIVATE KEY-----\n");
    write(&o.join("keys/README"), "canary-ok: the deploy key lives elsewhere\n");
    for (rel, _) in &files {
        let out = call(&f, json!({"project": "other", "op": "read", "path": rel})).await;
        let text = out.joined_text();
        assert!(out.is_error && text.contains("is hidden here"), "{rel}: {text}");
        assert!(!text.contains("canary-cred"), "{rel}: {text}");
    }
    let out = call(&f, json!({"project": "other", "op": "read", "path": "docs/ssh.md"})).await;
    assert!(!out.is_error && out.joined_text().contains("canary-ok"), "{}", out.joined_text());
    let names = [
        ".npmrc",
        ".yarnrc",
        ".dev.vars",
        ".aws",
        ".netrc",
        ".pypirc",
        ".docker",
        ".git-credentials",
        "id_rsa",
        "id_ed25519",
        ".ssh",
    ];
    // Found by content: not read, globbed or grepped (a listing shows names, never content).
    let by_content = ["keys/deploy", "ops/github", "ops/raw"];
    let out = call(&f, json!({"project": "other", "op": "list", "depth": 5})).await;
    let text = out.joined_text();
    for name in names {
        assert!(!text.contains(name), "{name} listed: {text}");
    }
    assert!(text.contains("README") && text.contains("ssh.md"), "{text}");
    for pattern in ["**/*", "**/.*", "**/deploy", "ops/*", "**/config*"] {
        let out = call(
            &f,
            json!({"project": "other", "op": "glob", "pattern": pattern, "include_ignored": true}),
        )
        .await;
        let text = out.joined_text();
        for name in names.iter().chain(&by_content) {
            assert!(!text.contains(name), "{pattern}: {name} globbed: {text}");
        }
    }
    for mode in ["content", "files", "count"] {
        for pattern in ["canary", "PRIVATE KEY", "b3BlbnNzaC", "openssh"] {
            let out = call(
                &f,
                json!({"project": "other", "op": "grep", "pattern": pattern,
                       "include_ignored": true, "output_mode": mode}),
            )
            .await;
            let text = out.joined_text();
            assert!(!text.contains("canary-cred"), "{mode} {pattern}: {text}");
            for name in names.iter().chain(&by_content) {
                assert!(!text.contains(name), "{mode} {pattern}: {name} grepped: {text}");
            }
        }
    }
    let out = call(
        &f,
        json!({"project": "other", "op": "grep", "pattern": "canary", "output_mode": "files"}),
    )
    .await;
    assert!(out.joined_text().contains("docs/ssh.md"), "{}", out.joined_text());
    for path in ["keys/deploy", "ops"] {
        let out = call(
            &f,
            json!({"project": "other", "op": "grep", "pattern": "canary-cred", "path": path}),
        )
        .await;
        assert!(!out.joined_text().contains("canary-cred"), "{path}: {}", out.joined_text());
    }
}
