//! OpenAPI 3 documents → connector files: the petstore (3.0, YAML) and a 3.1 JSON document give
//! the base URL, auth, operations and allow-lists the documents say; bad documents — not
//! JSON/YAML, Swagger 2, another version, over 10 MB, nested without end, an alias bomb, `$ref`
//! loops among schemas and among parameters, references outside the document or to nothing, a
//! relative server with no base — are refused with an error that says what to do, fast and
//! without overflowing the stack.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hands_connectors::openapi::{ImportOptions, OpenApiError, import};
use hands_connectors::{AuthKind, Connector};

const PETSTORE: &str = include_str!("../fixtures/petstore.yaml");

fn options() -> ImportOptions {
    ImportOptions { name: "petstore".into(), ..Default::default() }
}

#[test]
fn the_petstore_becomes_a_connector_file() {
    let imported = import(PETSTORE, &options()).unwrap();
    let file = &imported.file;
    assert_eq!(file.base_url, "https://petstore.example.com/v1");
    assert_eq!(file.auth.kind, AuthKind::Header);
    assert_eq!(file.auth.name.as_deref(), Some("X-Api-Key"));
    assert_eq!(file.auth.secret.as_deref(), Some("PETSTORE_API_KEY"));
    assert_eq!(file.allowed_methods, ["GET", "POST", "DELETE"]);
    assert_eq!(file.allowed_paths, ["/pets", "/pets/*", "/categories/tree"]);
    let ops: Vec<String> =
        file.operations.iter().map(|o| format!("{} {} {}", o.name, o.method, o.path)).collect();
    assert_eq!(
        ops,
        [
            "listPets GET /pets",
            "createPets POST /pets",
            "showPetById GET /pets/{petId}",
            "deletePet DELETE /pets/{petId}",
            "getCategoriesTree GET /categories/tree",
        ]
    );
    assert_eq!(file.openapi.as_deref(), Some("petstore.openapi.json"));
    // 3.0's nullable is 3.1's type list in the kept document.
    assert_eq!(
        imported.document["components"]["schemas"]["NewPet"]["properties"]["tag"]["type"],
        serde_json::json!(["string", "null"])
    );
    // What the connector gateway reads back checks.
    let text = hands_connectors::files::render("petstore", file);
    let connector = Connector::parse("petstore", &text).unwrap();
    assert!(connector.paths.is_match("/pets/12"));
    assert!(!connector.paths.is_match("/pets/12/owner"));
}

#[test]
fn a_31_document_in_json_with_bearer_auth_and_overrides() {
    let doc = serde_json::json!({
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "servers": [{"url": "/api"}],
        "components": {"securitySchemes": {
            "cookie": {"type": "apiKey", "in": "cookie", "name": "sid"},
            "token": {"type": "http", "scheme": "bearer"}
        }},
        "security": [{"token": []}],
        "paths": {"/items/{id}": {"put": {"responses": {"204": {"description": "ok"}}}},
                  "/items": {"trace": {"responses": {}}}}
    })
    .to_string();
    // A relative server: joined to where the document came from…
    let fetched = ImportOptions {
        name: "items".into(),
        source_url: Some(url::Url::parse("https://items.example.org/docs/openapi.json").unwrap()),
        secret: Some("ITEMS_TOKEN".into()),
        ..Default::default()
    };
    let imported = import(&doc, &fetched).unwrap();
    assert_eq!(imported.file.base_url, "https://items.example.org/api");
    assert_eq!(imported.file.auth.kind, AuthKind::Bearer);
    assert_eq!(imported.file.auth.secret.as_deref(), Some("ITEMS_TOKEN"));
    assert_eq!(imported.file.allowed_methods, ["PUT"]);
    assert_eq!(imported.file.operations[0].name, "putItemsId");
    assert!(imported.notes.iter().any(|n| n.contains("TRACE")), "{:?}", imported.notes);
    // …and refused without one, unless --base-url says it.
    let err = import(&doc, &ImportOptions { name: "items".into(), ..Default::default() });
    assert!(err.unwrap_err().to_string().contains("--base-url"));
    let given = ImportOptions {
        name: "items".into(),
        base_url: Some("https://x.example/api".into()),
        ..Default::default()
    };
    assert_eq!(import(&doc, &given).unwrap().file.base_url, "https://x.example/api");
}

fn refused(text: &str) -> String {
    let started = std::time::Instant::now();
    let err = import(text, &options()).expect_err("refused");
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "slow: {err}");
    err.to_string()
}

#[test]
fn malformed_documents_are_refused_with_what_to_do() {
    assert!(refused("{not json").contains("not valid JSON"));
    assert!(refused("a: [unclosed").contains("not valid JSON or YAML"));
    assert!(refused("swagger: '2.0'\ninfo: {}\n").contains("Swagger 2"));
    assert!(refused("openapi: 4.0.0\n").contains("not supported"));
    assert!(refused("title: x\n").contains("not an OpenAPI 3 document"));
    // The right version, the wrong shape.
    assert!(refused("openapi: 3.1.0\ninfo: 5\n").contains("not valid OpenAPI 3"));
    assert!(refused("[1, 2]").contains("not an OpenAPI 3 document"));
}

#[test]
fn huge_deep_and_exploding_documents_are_refused() {
    let huge = format!("openapi: 3.1.0\n# {}\n", "x".repeat(11 * 1024 * 1024));
    assert!(matches!(import(&huge, &options()), Err(OpenApiError::TooLarge(_))));
    let deep = format!("{}{}", "{\"a\":".repeat(100_000), "1");
    assert!(refused(&deep).contains("not valid JSON"));
    let deep_yaml = format!("openapi: 3.1.0\nx: {}1{}\n", "[".repeat(50_000), "]".repeat(50_000));
    assert!(refused(&deep_yaml).contains("nests brackets deeper"));
    let mut bomb = String::from("openapi: 3.1.0\na0: &a0 [x, x, x, x, x, x, x, x, x]\n");
    for i in 1..12 {
        let prev = format!("*a{}", i - 1);
        bomb.push_str(&format!("a{i}: &a{i} [{}]\n", vec![prev; 9].join(", ")));
    }
    refused(&bomb);
    // Schemas nested 60 deep (120 JSON levels, within the parsers' limits): parsed, then
    // refused by the importer's own limit, without overflowing a small stack.
    let mut schema = serde_json::json!({"type": "string"});
    for _ in 0..60 {
        schema = serde_json::json!({"type": "array", "items": schema});
    }
    let doc = serde_json::json!({"openapi": "3.1.0", "info": {"title": "t", "version": "1"},
        "components": {"schemas": {"Deep": schema}}});
    let small = std::thread::Builder::new().stack_size(1024 * 1024);
    let err = small.spawn(move || refused(&doc.to_string())).unwrap().join().unwrap();
    assert!(err.contains("deeper than"), "{err}");
    // Nested 200 deep, built without a parser's limit: refused before oas3 sees it.
    let mut schema = serde_json::json!({"type": "string"});
    for _ in 0..200 {
        schema = serde_json::json!({"type": "array", "items": schema});
    }
    let doc = serde_json::json!({"openapi": "3.1.0", "info": {"title": "t", "version": "1"},
        "servers": [{"url": "https://x.example"}], "components": {"schemas": {"Deep": schema}}});
    let err = refused(&doc.to_string());
    assert!(err.contains("not valid JSON"), "the parser's limit first: {err}");
    let err = hands_connectors::openapi::import_value(doc, &options()).unwrap_err();
    assert!(err.to_string().contains("nests deeper than 128"), "{err}");
}

fn with_components(components: serde_json::Value, paths: serde_json::Value) -> String {
    serde_json::json!({"openapi": "3.1.0", "info": {"title": "t", "version": "1"},
        "servers": [{"url": "https://x.example"}], "components": components, "paths": paths})
    .to_string()
}

#[test]
fn ref_loops_and_bad_refs_are_refused() {
    let ring = with_components(
        serde_json::json!({"schemas": {
            "A": {"$ref": "#/components/schemas/B"},
            "B": {"anyOf": [{"$ref": "#/components/schemas/C"}, {"type": "null"}]},
            "C": {"$ref": "#/components/schemas/A"}
        }}),
        serde_json::json!({}),
    );
    let err = refused(&ring);
    assert!(err.contains("$ref loop") && err.contains("A → B → C → A"), "{err}");
    let self_ref = with_components(
        serde_json::json!({"schemas": {"A": {"allOf": [{"$ref": "#/components/schemas/A"}]}}}),
        serde_json::json!({}),
    );
    assert!(refused(&self_ref).contains("$ref loop"));
    let params = with_components(
        serde_json::json!({"parameters": {
            "P": {"$ref": "#/components/parameters/Q"},
            "Q": {"$ref": "#/components/parameters/P"}
        }}),
        serde_json::json!({"/x": {"get": {"parameters": [{"$ref": "#/components/parameters/P"}],
            "responses": {}}}}),
    );
    assert!(refused(&params).contains("$ref loop in components/parameters: P → Q → P"));
    let bodies = with_components(
        serde_json::json!({"requestBodies": {"B": {"$ref": "#/components/requestBodies/B"}}}),
        serde_json::json!({"/x": {"post": {"requestBody": {"$ref": "#/components/requestBodies/B"},
            "responses": {}}}}),
    );
    assert!(refused(&bodies).contains("$ref loop"));
    let outside = with_components(
        serde_json::json!({"schemas": {"A": {"$ref": "other.yaml#/components/schemas/A"}}}),
        serde_json::json!({}),
    );
    assert!(refused(&outside).contains("only references inside the document"));
    let dangling = with_components(
        serde_json::json!({"schemas": {"A": {"$ref": "#/components/schemas/Gone"}}}),
        serde_json::json!({}),
    );
    assert!(refused(&dangling).contains("points to nothing"));
    // A recursive type through a property is a tree, not a loop.
    let tree = with_components(
        serde_json::json!({"schemas": {"Node": {"type": "object", "properties": {
            "kids": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}},
            "parent": {"$ref": "#/components/schemas/Node"}}}}}),
        serde_json::json!({}),
    );
    assert!(import(&tree, &options()).is_ok());
}
