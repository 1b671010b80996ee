//! connector_scaffold on real projects, checked by the real TypeScript compiler: the petstore
//! OpenAPI document → a connector file → a client for each target that `tsc --noEmit` accepts
//! under the strictest flags, with `@ts-expect-error` lines that fail the compile should a type be
//! looser than the document says; then the client and the route compiled to JavaScript and run
//! by Node against a loopback service (the key arrives in its header, the browser client has
//! none, the route refuses what the connector does not allow). Bad input: unknown connectors,
//! bad targets and languages, other ecosystems, files the user changed, symlinks out of the
//! project, a connector that names a document outside its folder.
//!
//! tsc comes from tests/preview/fixtures/vite-app (installed by `npm ci` in `.ci/run`). Without
//! it (or Node) the compiler tests fail under CI and skip loudly elsewhere.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

use hands_connectors::openapi::{ImportOptions, import};
use hands_core::{CoreConfig, Registry, Session, ToolCall, ToolOutput};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

const PETSTORE: &str = include_str!("../fixtures/petstore.yaml");

fn tsc() -> Option<PathBuf> {
    let tsc = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/preview/fixtures/vite-app/node_modules/typescript/bin/tsc");
    let node = Command::new("node").arg("--version").output().is_ok_and(|o| o.status.success());
    if tsc.exists() && node {
        return Some(tsc);
    }
    assert!(
        std::env::var("CI").is_err(),
        "tsc is required in CI: run npm ci in tests/preview/fixtures/vite-app"
    );
    eprintln!("SKIPPED: no tsc at {} (or no node)", tsc.display());
    None
}

/// A project with the petstore connector imported (base URL `base`).
fn project(base: Option<&str>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let options = ImportOptions {
        name: "petstore".into(),
        base_url: base.map(str::to_owned),
        ..Default::default()
    };
    let imported = import(PETSTORE, &options).unwrap();
    hands_connectors::files::write(
        dir.path(),
        "petstore",
        &imported.file,
        Some(&imported.document),
        false,
    )
    .unwrap();
    std::fs::write(dir.path().join("package.json"), r#"{"type": "module", "private": true}"#)
        .unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    dir
}

async fn scaffold(root: &Path, args: Value) -> ToolOutput {
    let registry =
        Registry::builder(CoreConfig::default()).tool(hands_connectors::ConnectorScaffold).build();
    let session = Session::new("s1", root);
    let out =
        registry.dispatch(&session, ToolCall::new("c1", "connector_scaffold", args)).await.unwrap();
    session.close().await;
    out
}

const TSCONFIG: &str = r#"{
  "compilerOptions": {
    "strict": true, "target": "ES2022", "module": "ESNext", "moduleResolution": "Bundler",
    "lib": ["ES2022", "DOM"], "types": [], "noEmit": true, "skipLibCheck": true,
    "exactOptionalPropertyTypes": true, "noUncheckedIndexedAccess": true,
    "noPropertyAccessFromIndexSignature": true, "noImplicitOverride": true,
    "noUnusedLocals": true, "noUnusedParameters": true, "noImplicitReturns": true,
    "erasableSyntaxOnly": true, "verbatimModuleSyntax": true, "isolatedModules": true
  },
  "include": ["src/**/*.ts"]
}"#;

/// `tsc -p` in `root`; panics with the compiler's words when it fails.
fn compile(tsc: &Path, root: &Path, config: &str) {
    std::fs::write(root.join("tsconfig.json"), config).unwrap();
    let out = Command::new("node").arg(tsc).arg("-p").arg(root).output().unwrap();
    assert!(
        out.status.success(),
        "tsc failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Uses of the server and edge clients: right calls compile, wrong ones are expected errors.
const USE_SERVER: &str = r#"
import { createPetstoreClient, PetstoreError, type Pet, type Category, type Status, type ErrorType } from "./connectors/petstore.js";

export async function demo(): Promise<string> {
  const api = createPetstoreClient({ apiKey: "k" });
  const pets = await api.listPets({ query: { limit: 10, status: "available" } });
  const first: Pet | undefined = pets[0];
  const id: number = first ? first.id : 0;
  const tag: string | null | undefined = first?.tag;
  const created = await api.createPets({ body: { name: "rex", tag: null } });
  const one = await api.showPetById({ path: { petId: String(created.id) } });
  const tree: Category[] = await api.getCategoriesTree();
  const labels: Record<string, string> | undefined = tree[0]?.labels;
  const gone: void = await api.deletePet({ path: { petId: "1" } });
  // @ts-expect-error limit is a number
  await api.listPets({ query: { limit: "ten" } });
  // @ts-expect-error status is one of the enum's values
  await api.listPets({ query: { status: "lost" } });
  // @ts-expect-error a new pet needs a name
  await api.createPets({ body: { tag: "x" } });
  // @ts-expect-error the body is required
  await api.createPets({});
  // @ts-expect-error the path parameter is required
  await api.showPetById({});
  // @ts-expect-error a pet has no colour
  one.colour;
  // @ts-expect-error PUT is not allowed by the connector
  await api.request("PUT", "/pets");
  const problem: ErrorType = { code: 1, message: "m" };
  try {
    await api.request("GET", "/pets", { query: { limit: 1 } });
  } catch (err) {
    if (err instanceof PetstoreError) return String(err.status);
  }
  const s: Status = "sold";
  return `${id} ${tag} ${String(labels)} ${String(gone)} ${s} ${problem.message}`;
}
"#;

#[tokio::test]
async fn the_petstore_document_becomes_clients_that_tsc_accepts_for_each_target() {
    let Some(tsc) = tsc() else { return };
    let dir = project(None);
    let toml = std::fs::read_to_string(dir.path().join(".hands/connectors/petstore.toml")).unwrap();
    assert!(toml.contains("base_url = \"https://petstore.example.com/v1\""), "{toml}");
    for target in ["server", "edge"] {
        let out = scaffold(dir.path(), json!({"connector": "petstore", "target": target})).await;
        assert!(!out.is_error, "{}", out.joined_text());
        let s = out.structured.clone().unwrap();
        assert_eq!(s["typed_from_openapi"], true);
        assert_eq!(s["env"], json!(["PETSTORE_API_KEY"]));
        let client =
            std::fs::read_to_string(dir.path().join("src/connectors/petstore.ts")).unwrap();
        assert!(client.contains("headers[\"x-api-key\"] = key"), "{client}");
        std::fs::write(dir.path().join("src/use.ts"), USE_SERVER).unwrap();
        compile(&tsc, dir.path(), TSCONFIG);
    }
    let env = std::fs::read_to_string(dir.path().join(".env.example")).unwrap();
    assert_eq!(env.matches("PETSTORE_API_KEY=").count(), 1, "{env}");
    assert!(env.contains("--host petstore.example.com"), "{env}");

    // The browser client: no key, no environment, the project's route instead.
    let out = scaffold(dir.path(), json!({"connector": "petstore", "target": "client"})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    let client = std::fs::read_to_string(dir.path().join("src/connectors/petstore.ts")).unwrap();
    for leak in ["PETSTORE_API_KEY", "process", "apiKey", "x-api-key", "petstore.example.com"] {
        assert!(!client.contains(leak), "the browser client mentions {leak}:\n{client}");
    }
    assert!(client.contains("\"/api/connectors/petstore\""), "{client}");
    let route =
        std::fs::read_to_string(dir.path().join("src/connectors/petstore.route.ts")).unwrap();
    assert!(route.contains("PETSTORE_API_KEY") && route.contains("x-api-key"), "{route}");
    std::fs::write(
        dir.path().join("src/use.ts"),
        r#"
import { createPetstoreClient, type Pet } from "./connectors/petstore.js";
import { handlePetstore } from "./connectors/petstore.route.js";

export async function demo(): Promise<Pet> {
  const api = createPetstoreClient();
  // @ts-expect-error the browser client takes no key
  createPetstoreClient({ apiKey: "k" });
  const answer: Response = await handlePetstore(new Request("http://app.test/api/connectors/petstore/pets"));
  console.log(answer.status);
  return api.showPetById({ path: { petId: "1" } });
}
"#,
    )
    .unwrap();
    compile(&tsc, dir.path(), TSCONFIG);
    let files: Vec<String> = out.structured.unwrap()["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| format!("{} {}", f["path"].as_str().unwrap(), f["action"].as_str().unwrap()))
        .collect();
    assert_eq!(
        files,
        [
            "src/connectors/petstore.ts updated",
            "src/connectors/petstore.route.ts created",
            ".env.example unchanged"
        ]
    );
}

/// A loopback service that records each request's head and answers a pet as JSON.
async fn service() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let log = Arc::clone(&log);
            tokio::spawn(async move {
                let mut buf = vec![0u8; 16384];
                let n = sock.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]).into_owned();
                log.lock().unwrap().push(head);
                let body = r#"{"id": 7, "name": "rex", "tag": null}"#;
                let answer = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nset-cookie: s=1\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(answer.as_bytes()).await;
            });
        }
    });
    (url, seen)
}

const EMIT: &str = r#"{
  "compilerOptions": {
    "strict": true, "target": "ES2022", "module": "ESNext", "moduleResolution": "Bundler",
    "lib": ["ES2022", "DOM"], "types": [], "outDir": "out", "skipLibCheck": true
  },
  "include": ["src/**/*.ts"]
}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_compiled_clients_send_the_key_only_from_the_server() {
    let Some(tsc) = tsc() else { return };
    let (base, seen) = service().await;
    let dir = project(Some(&base));
    let out = scaffold(dir.path(), json!({"connector": "petstore", "target": "server"})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    std::fs::rename(
        dir.path().join("src/connectors/petstore.ts"),
        dir.path().join("src/connectors/server.ts"),
    )
    .unwrap();
    let out = scaffold(dir.path(), json!({"connector": "petstore", "target": "client"})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    std::fs::write(
        dir.path().join("src/run.ts"),
        r#"
import { createPetstoreClient as serverClient } from "./connectors/server.js";
import { createPetstoreClient as browserClient } from "./connectors/petstore.js";
import { handlePetstore } from "./connectors/petstore.route.js";

const server = serverClient();
const viaServer = await server.showPetById({ path: { petId: "1" } });
const browser = browserClient({
  baseUrl: "http://app.test/api/connectors/petstore",
  fetch: (input, init) => handlePetstore(new Request(input, init)),
});
const viaRoute = await browser.listPets({ query: { limit: 2 } });
const statuses: number[] = [];
for (const [method, path] of [["GET", "/admin"], ["PUT", "/pets"], ["GET", "/pets/a%2Fb"], ["GET", "/other"]]) {
  const answer = await handlePetstore(new Request(`http://app.test/api/connectors/petstore${path}`, { method }));
  statuses.push(answer.status);
}
console.log(JSON.stringify({ viaServer, viaRoute, statuses }));
"#,
    )
    .unwrap();
    compile(&tsc, dir.path(), EMIT);
    let script = dir.path().join("out/run.js");
    let run = tokio::task::spawn_blocking(move || {
        Command::new("node").arg(script).env("PETSTORE_API_KEY", "CANARYscaffoldKEY42").output()
    })
    .await
    .unwrap()
    .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let printed: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(printed["viaServer"]["name"], "rex");
    assert_eq!(printed["viaRoute"]["id"], 7);
    assert_eq!(printed["statuses"], json!([403, 405, 400, 403]));
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "{seen:#?}");
    assert!(seen[0].starts_with("GET /v1/pets/1 "), "{}", seen[0]);
    assert!(seen[1].starts_with("GET /v1/pets?limit=2 "), "{}", seen[1]);
    for head in &seen {
        assert!(head.to_ascii_lowercase().contains("x-api-key: canaryscaffoldkey42"), "{head}");
    }
}

#[tokio::test]
async fn a_file_the_user_changed_is_never_overwritten() {
    let dir = project(None);
    let args = json!({"connector": "petstore", "target": "server"});
    assert!(!scaffold(dir.path(), args.clone()).await.is_error);
    let again = scaffold(dir.path(), args.clone()).await;
    assert!(!again.is_error);
    assert_eq!(again.structured.unwrap()["files"][0]["action"], "unchanged");
    let client = dir.path().join("src/connectors/petstore.ts");
    let mine = std::fs::read_to_string(&client).unwrap() + "\nexport const mine = 1;\n";
    std::fs::write(&client, &mine).unwrap();
    std::fs::write(dir.path().join(".env.example"), "# mine\nOTHER=1").unwrap();
    let out = scaffold(dir.path(), json!({"connector": "petstore", "target": "edge"})).await;
    assert!(out.is_error);
    assert!(out.joined_text().contains("changed since hands wrote it"), "{}", out.joined_text());
    assert_eq!(std::fs::read_to_string(&client).unwrap(), mine);
    assert_eq!(
        std::fs::read_to_string(dir.path().join(".env.example")).unwrap(),
        "# mine\nOTHER=1"
    );
    // A file of the same name that hands never wrote.
    std::fs::write(&client, "export const theirs = 1;\n").unwrap();
    let out = scaffold(dir.path(), args.clone()).await;
    assert!(
        out.joined_text().contains("not written by connector_scaffold"),
        "{}",
        out.joined_text()
    );
    // Moved aside, it is written again, and .env.example only gains a line.
    std::fs::remove_file(&client).unwrap();
    assert!(!scaffold(dir.path(), args).await.is_error);
    let env = std::fs::read_to_string(dir.path().join(".env.example")).unwrap();
    assert!(env.starts_with("# mine\nOTHER=1\n") && env.ends_with("PETSTORE_API_KEY=\n"), "{env}");
}

#[tokio::test]
async fn bad_input_is_refused_and_nothing_is_written() {
    let dir = project(None);
    let root = dir.path();
    for (args, says) in [
        (json!({"connector": "nope", "target": "server"}), "there is no connector nope"),
        (json!({"connector": "../petstore", "target": "server"}), "not a connector name"),
        (json!({"connector": "petstore", "target": "mobile"}), "target"),
        (json!({"connector": "petstore"}), "target"),
        (json!({"connector": "petstore", "target": "server", "language": "cobol"}), "TypeScript"),
        (json!({"connector": "petstore", "target": "server", "extra": 1}), "extra"),
    ] {
        let out = scaffold(root, args.clone()).await;
        assert!(out.is_error, "{args}");
        assert!(out.joined_text().contains(says), "{args}: {}", out.joined_text());
    }
    assert!(!root.join("src/connectors").exists());
    assert!(!root.join(".env.example").exists());

    // Another ecosystem: said, not guessed.
    let py = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(py.path().join(".hands/connectors")).unwrap();
    std::fs::copy(
        root.join(".hands/connectors/petstore.toml"),
        py.path().join(".hands/connectors/petstore.toml"),
    )
    .unwrap();
    std::fs::copy(
        root.join(".hands/connectors/petstore.openapi.json"),
        py.path().join(".hands/connectors/petstore.openapi.json"),
    )
    .unwrap();
    std::fs::write(py.path().join("pyproject.toml"), "[project]\nname = 'x'\n").unwrap();
    let out = scaffold(py.path(), json!({"connector": "petstore", "target": "server"})).await;
    assert!(out.joined_text().contains("Python project"), "{}", out.joined_text());
    let out =
        scaffold(py.path(), json!({"connector": "petstore", "target": "server", "language": "ts"}))
            .await;
    assert!(!out.is_error, "{}", out.joined_text());
    assert!(py.path().join("connectors/petstore.ts").exists(), "no src/: connectors/");

    // src/connectors is a symlink out of the project: refused, nothing lands outside.
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), root.join("src/connectors")).unwrap();
    let out = scaffold(root, json!({"connector": "petstore", "target": "server"})).await;
    assert!(out.is_error, "{}", out.joined_text());
    assert!(std::fs::read_dir(outside.path()).unwrap().next().is_none());
    std::fs::remove_file(root.join("src/connectors")).unwrap();

    // A connector that names a document outside its folder does not check.
    let toml = root.join(".hands/connectors/petstore.toml");
    let text = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(&toml, text.replace("\"petstore.openapi.json\"", "\"../../etc/passwd.json\""))
        .unwrap();
    let out = scaffold(root, json!({"connector": "petstore", "target": "server"})).await;
    assert!(out.joined_text().contains("not a path"), "{}", out.joined_text());
    // Its document gone: said, with the fix.
    std::fs::write(&toml, &text).unwrap();
    std::fs::remove_file(root.join(".hands/connectors/petstore.openapi.json")).unwrap();
    let out = scaffold(root, json!({"connector": "petstore", "target": "server"})).await;
    assert!(out.joined_text().contains("does not exist"), "{}", out.joined_text());
    assert!(!root.join("src/connectors").exists());
}

#[tokio::test]
async fn a_connector_without_a_document_gets_an_untyped_client_that_compiles() {
    // A name that starts with a digit, an operation called like the clients' own `request`, a
    // path without its leading slash: still valid TypeScript.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".hands/connectors")).unwrap();
    std::fs::write(
        dir.path().join(".hands/connectors/2do-list.toml"),
        "base_url = \"https://notes.example.com\"\nallowed_methods = [\"GET\", \"POST\"]\n\
         allowed_paths = [\"/notes/**\"]\n[auth]\nkind = \"basic\"\nsecret = \"NOTES_PASSWORD\"\n\
         username = \"me\"\n[[operations]]\nname = \"get-note\"\nmethod = \"GET\"\npath = \"/notes/{id}\"\n\
         [[operations]]\nname = \"request\"\nmethod = \"POST\"\npath = \"notes\"\n",
    )
    .unwrap();
    let out = scaffold(dir.path(), json!({"connector": "2do-list", "target": "client"})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    assert_eq!(out.structured.clone().unwrap()["typed_from_openapi"], false);
    let client = std::fs::read_to_string(dir.path().join("connectors/2do-list.ts")).unwrap();
    assert!(client.contains("request2(") && client.contains("`/notes`"), "{client}");
    let Some(tsc) = tsc() else { return };
    std::fs::write(
        dir.path().join("connectors/use.ts"),
        "import { create_2doListClient } from \"./2do-list.js\";\n\
         import { handle_2doList, _2DO_LIST_ROUTE_PREFIX } from \"./2do-list.route.js\";\n\
         const api = create_2doListClient();\n\
         export const note: Promise<unknown> = api.getNote({ path: { id: \"1\" } });\n\
         export const added: Promise<unknown> = api.request2({ body: { text: \"x\" } });\n\
         export const any: Promise<unknown> = api.request(\"GET\", \"/notes/1\");\n\
         export const route = [handle_2doList, _2DO_LIST_ROUTE_PREFIX];\n",
    )
    .unwrap();
    compile(&tsc, dir.path(), &TSCONFIG.replace("src/**/*.ts", "connectors/**/*.ts"));
    let route = std::fs::read_to_string(dir.path().join("connectors/2do-list.route.ts")).unwrap();
    assert!(route.contains("btoa(\"me\" + \":\" + key)"), "{route}");
}
