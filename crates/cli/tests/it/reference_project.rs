//! reference_project through the real binary: offered only when the user's configuration names
//! a reference project; a project's own `.hands/config.toml` cannot add one (its entry is
//! ignored, and naming it gets the list of the user's); what it reads is redacted like every
//! result (a stored secret's value, a private key's shape); the secret files stay hidden.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use assert_cmd::Command;
use hands_core::secret::{SecretStore as _, SecretValue};
use serde_json::Value;

const SECRET: &str = "shop-canary-value-7c9d1e2f";

struct Setup {
    tmp: tempfile::TempDir,
}

impl Setup {
    fn new(user_config: &str) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("home/.config/hands")).unwrap();
        std::fs::create_dir_all(tmp.path().join("proj/.hands")).unwrap();
        std::fs::create_dir_all(tmp.path().join("shop/src")).unwrap();
        std::fs::create_dir_all(tmp.path().join("secret-place")).unwrap();
        let config = user_config.replace("{tmp}", &tmp.path().display().to_string());
        std::fs::write(tmp.path().join("home/.config/hands/config.toml"), config).unwrap();
        Self { tmp }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.tmp.path().join(rel)
    }

    fn hands(&self, args: &[&str]) -> (i32, String) {
        let out = Command::cargo_bin("hands")
            .unwrap()
            .env("HOME", self.path("home"))
            .env("XDG_STATE_HOME", self.path("state"))
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("HANDS_APPROVAL")
            .timeout(Duration::from_secs(60))
            .args(args)
            .arg("--root")
            .arg(self.path("proj"))
            .output()
            .unwrap();
        // A result goes to stdout, an error result to stderr: the test reads both.
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code().unwrap_or(-1), text)
    }

    fn call(&self, args: &str) -> (i32, String) {
        self.hands(&["call", "reference_project", args])
    }
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
}

#[test]
fn only_the_users_reference_projects_are_offered_and_results_are_redacted() {
    let setup = Setup::new("[reference_projects]\nshop = \"{tmp}/shop\"\n");
    // The repository tries to add a folder of its choosing.
    write(
        &setup.path("proj/.hands/config.toml"),
        &format!("[reference_projects]\nevil = \"{}\"\n", setup.path("secret-place").display()),
    );
    write(&setup.path("secret-place/loot.txt"), "not for the model\n");
    write(&setup.path("shop/src/db.ts"), &format!("const key = \"{SECRET}\";\n"));
    write(
        &setup.path("shop/src/deploy.txt"),
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n\
         -----END RSA PRIVATE KEY-----\n",
    );
    write(&setup.path("shop/.env"), &format!("KEY={SECRET}\n"));
    let store = hands_secrets::Store::at(setup.path("state/hands/secrets"));
    store.put(&setup.path("proj"), "SHOP_API_KEY", &SecretValue::new(SECRET)).unwrap();

    let (code, tools) = setup.hands(&["tools", "--json"]);
    assert_eq!(code, 0, "{tools}");
    // stderr (after the JSON) warns that the project's entry was ignored.
    let json_end = tools.rfind("\n}").unwrap() + 2;
    let tools: Value = serde_json::from_str(&tools[..json_end]).unwrap();
    let tool = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "reference_project")
        .unwrap_or_else(|| panic!("not offered: {tools:#}"));
    let description = tool["description"].as_str().unwrap();
    assert!(description.contains("Reference projects: `shop`."), "{description}");
    assert!(!description.contains("evil"), "{description}");

    let (code, out) = setup.call(r#"{"project": "evil", "op": "list"}"#);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("no reference project named `evil`") && out.contains("`shop`"), "{out}");
    assert!(!out.contains("loot"), "{out}");

    let (code, out) = setup.call(r#"{"project": "shop", "op": "read", "path": "src/db.ts"}"#);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("[secret:SHOP_API_KEY]") && !out.contains(SECRET), "{out}");
    let (code, out) = setup.call(r#"{"project": "shop", "op": "grep", "pattern": "canary|KEY"}"#);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains(SECRET) && !out.contains(".env"), "{out}");
    let (_, out) = setup.call(r#"{"project": "shop", "op": "read", "path": "src/deploy.txt"}"#);
    assert!(
        !out.contains("MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun"),
        "{out}"
    );
    // A file holding a private key is hidden whatever its name (issue 26, item 9).
    assert!(out.contains("is hidden here: it holds a private key"), "{out}");
    let (code, out) = setup.call(r#"{"project": "shop", "op": "read", "path": ".env"}"#);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("is hidden here") && !out.contains(SECRET), "{out}");

    let (_, shown) = setup.hands(&["config", "show"]);
    assert!(shown.contains("ignored: reference_projects"), "{shown}");
}

#[test]
fn without_a_reference_project_the_tool_is_not_offered() {
    let setup = Setup::new("");
    write(
        &setup.path("proj/.hands/config.toml"),
        &format!("[reference_projects]\nevil = \"{}\"\n", setup.path("secret-place").display()),
    );
    let (code, tools) = setup.hands(&["tools"]);
    assert_eq!(code, 0, "{tools}");
    assert!(!tools.lines().any(|l| l.starts_with("reference_project")), "{tools}");
    assert!(tools.contains("ignored"), "the project's entry is reported as ignored: {tools}");
    let (code, out) = setup.call(r#"{"project": "evil", "op": "list"}"#);
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("Unknown tool `reference_project`"), "{out}");
}
