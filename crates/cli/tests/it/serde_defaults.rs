//! Every type whose JSON schema is derived (`Serialize` + `JsonSchema`: tool outputs, the session
//! API's rows) gives each field it may leave out (`skip_serializing_if`) a `#[serde(default)]` too,
//! on the field or on the type. Without it a field that is left out of the output can still be
//! required by the schema (schemars' deserialize contract, or a client that reads the type
//! back), which is how read_runtime_errors once sent results its own schema refused (issue #12).
//! A source scan, so that it holds for types no test happens to produce.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The words inside every `#[name(…)]` attribute of `attrs`.
fn words(attrs: &[syn::Attribute], name: &str) -> Vec<String> {
    attrs
        .iter()
        .filter(|a| a.path().is_ident(name))
        .filter_map(|a| a.meta.require_list().ok().map(|l| l.tokens.to_string()))
        .flat_map(|t| {
            t.split(|c: char| !c.is_alphanumeric() && c != '_')
                .filter(|w| !w.is_empty())
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// `file: Type.field` for each field of a derived-schema type with `skip_serializing_if` and no
/// `default`.
fn offenders(file: &Path, text: &str) -> Vec<String> {
    let ast = syn::parse_file(text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let mut out = Vec::new();
    let mut check = |ident: &syn::Ident, attrs: &[syn::Attribute], fields: &syn::Fields| {
        let derives = words(attrs, "derive");
        if !(derives.iter().any(|d| d == "Serialize") && derives.iter().any(|d| d == "JsonSchema"))
        {
            return;
        }
        let container_default = words(attrs, "serde").iter().any(|w| w == "default");
        for (i, field) in fields.iter().enumerate() {
            let serde = words(&field.attrs, "serde");
            if serde.iter().any(|w| w == "skip_serializing_if")
                && !container_default
                && !serde.iter().any(|w| w == "default")
            {
                let name = field.ident.as_ref().map_or_else(|| i.to_string(), ToString::to_string);
                out.push(format!("{}: {ident}.{name}", file.display()));
            }
        }
    };
    struct Walk<'f>(&'f mut dyn FnMut(&syn::Ident, &[syn::Attribute], &syn::Fields));
    impl<'ast> syn::visit::Visit<'ast> for Walk<'_> {
        fn visit_item_struct(&mut self, s: &'ast syn::ItemStruct) {
            (self.0)(&s.ident, &s.attrs, &s.fields);
        }
        fn visit_item_enum(&mut self, e: &'ast syn::ItemEnum) {
            for variant in &e.variants {
                let mut attrs = e.attrs.clone();
                attrs.extend(variant.attrs.iter().cloned());
                (self.0)(&variant.ident, &attrs, &variant.fields);
            }
        }
    }
    syn::visit::Visit::visit_file(&mut Walk(&mut check), &ast);
    out
}

#[test]
fn fields_left_out_of_a_derived_schema_type_have_a_default() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    rust_files(&crates, &mut files);
    files.retain(|f| f.components().any(|c| c.as_os_str() == "src"));
    assert!(files.len() > 50, "found only {} source files under {}", files.len(), crates.display());
    let found: Vec<String> =
        files.iter().flat_map(|f| offenders(f, &std::fs::read_to_string(f).unwrap())).collect();
    assert!(
        found.is_empty(),
        "add `default` to `#[serde(skip_serializing_if = …)]` (or to the type):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_scan_finds_a_field_without_default() {
    let text = r#"
        #[derive(Serialize, JsonSchema)]
        struct Row {
            #[serde(skip_serializing_if = "Vec::is_empty")]
            stack: Vec<u8>,
            #[serde(default, skip_serializing_if = "Option::is_none")]
            location: Option<String>,
        }
        #[derive(Serialize, JsonSchema)]
        #[serde(default)]
        struct Fine {
            #[serde(skip_serializing_if = "Vec::is_empty")]
            stack: Vec<u8>,
        }
        #[derive(Serialize)]
        struct NoSchema {
            #[serde(skip_serializing_if = "Vec::is_empty")]
            stack: Vec<u8>,
        }
    "#;
    assert_eq!(offenders(Path::new("x.rs"), text), ["x.rs: Row.stack"]);
}
