//! No file-level import cycles in any crate of the workspace: for each crate under `crates/`, the
//! graph of which file uses an item defined in which other file (see `graph.rs`) has no cycle.
//! A cycle is listed as `a.rs → b.rs → a.rs`; break it by moving the shared item into a file both
//! can use, or by having the parent own what its children share.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod graph;

use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every cycle of every crate root (`lib.rs`, `main.rs`) under `crates/`, with the crate named.
fn workspace_cycles() -> Vec<String> {
    let mut crates: Vec<PathBuf> = std::fs::read_dir(workspace().join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("Cargo.toml").is_file())
        .collect();
    crates.sort();
    let mut out = Vec::new();
    for krate in crates {
        for root in ["lib.rs", "main.rs"] {
            let root = krate.join("src").join(root);
            if !root.is_file() {
                continue;
            }
            let graph = graph::load(&root).unwrap_or_else(|e| panic!("{e}"));
            let name = krate.file_name().unwrap().to_string_lossy().into_owned();
            out.extend(
                graph::cycles(&graph).into_iter().map(|c| format!("crates/{name}/src: {c}")),
            );
        }
    }
    out
}

#[test]
fn no_crate_has_an_import_cycle_between_files() {
    let cycles = workspace_cycles();
    assert!(cycles.is_empty(), "import cycles between files:\n{}", cycles.join("\n"));
}

/// Write `files` (path, text) under a temporary `src`, and list the cycles of its `lib.rs`.
fn cycles_of(files: &[(&str, &str)]) -> Vec<String> {
    let tmp = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = tmp.path().join("src").join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    graph::cycles(&graph::load(&tmp.path().join("src/lib.rs")).unwrap())
}

#[test]
fn two_files_using_each_other_are_a_cycle() {
    let cycles = cycles_of(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        ("a.rs", "use crate::b::B;\npub struct A(B);\n"),
        ("b.rs", "pub struct B;\nfn f() -> crate::a::A { todo!() }\n"),
    ]);
    assert_eq!(cycles, ["a.rs → b.rs → a.rs"]);
}

#[test]
fn one_way_use_through_a_re_export_is_no_cycle() {
    // b uses A through lib.rs' re-export: the edge goes to a.rs, not to lib.rs.
    let files = [
        ("lib.rs", "mod a;\nmod b;\npub use a::A;\npub use b::B;\n"),
        ("a.rs", "pub struct A;\n"),
        ("b.rs", "use crate::A;\npub struct B(A);\n"),
    ];
    assert_eq!(cycles_of(&files), Vec::<String>::new());
    // …and a use back from a to b closes a cycle found through the re-export.
    let files = [files[0], ("a.rs", "pub struct A;\nfn f(_: crate::B) {}\n"), files[2]];
    assert_eq!(cycles_of(&files), ["a.rs → b.rs → a.rs"]);
}

#[test]
fn a_child_glob_importing_its_parent_that_uses_it_is_a_cycle() {
    let cycles = cycles_of(&[
        ("lib.rs", "mod x;\n"),
        ("x/mod.rs", "mod y;\npub struct X;\nfn f() { let _ = y::Y; }\n"),
        ("x/y.rs", "use super::*;\npub struct Y;\n"),
    ]);
    assert_eq!(cycles, ["x/mod.rs → x/y.rs → x/mod.rs"]);
    // Without the parent's use of the child, the glob alone is no cycle.
    let cycles = cycles_of(&[
        ("lib.rs", "mod x;\n"),
        ("x/mod.rs", "mod y;\npub struct X;\n"),
        ("x/y.rs", "use super::*;\npub struct Y;\n"),
    ]);
    assert_eq!(cycles, Vec::<String>::new());
}

#[test]
fn paths_inside_macros_and_three_file_cycles_are_found_and_tests_are_not() {
    let cycles = cycles_of(&[
        ("lib.rs", "mod a;\nmod b;\nmod c;\n"),
        ("a.rs", "pub fn a() { println!(\"{}\", crate::b::b()); }\n"),
        ("b.rs", "pub fn b() -> u8 { super::c::c() }\n"),
        ("c.rs", "pub fn c() -> u8 { 1 }\n#[cfg(test)]\nmod tests { use crate::a::a; }\n"),
    ]);
    assert_eq!(cycles, Vec::<String>::new());
    let cycles = cycles_of(&[
        ("lib.rs", "mod a;\nmod b;\nmod c;\n"),
        ("a.rs", "pub fn a() { println!(\"{}\", crate::b::b()); }\n"),
        ("b.rs", "pub fn b() -> u8 { super::c::c() }\n"),
        ("c.rs", "pub fn c() -> u8 { crate::a::a(); 1 }\n"),
    ]);
    assert_eq!(cycles, ["a.rs → b.rs → c.rs → a.rs"]);
}
