//! The checkpoint benchmark's timed part (driven by `bench/checkpoint.sh`): on an existing tree,
//! the first checkpoint, a checkpoint after 10 changed files, a restore of 100 changed files, and
//! the store's growth against the changed bytes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::Path;
use std::time::Instant;

use hands_checkpoint::{Config, Store};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (root, state) = (Path::new(&args[1]), Path::new(&args[2]));
    let git_ms: f64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(0.0);
    let store = Store::open(root, state, Config::default()).unwrap();
    let files: Vec<_> = {
        let mut v: Vec<_> = walk(root);
        v.sort();
        v
    };

    let t = Instant::now();
    let first = store.snapshot("bench", 1, "first").unwrap();
    let first_ms = t.elapsed().as_secs_f64() * 1e3;
    let used = store.disk_usage();

    let mut changed = 0u64;
    for (i, f) in files.iter().take(10).enumerate() {
        let body = format!("changed {i}\n").repeat(1000);
        changed += body.len() as u64;
        fs::write(f, body).unwrap();
    }
    // Let the clock move past the racy window of the files just written.
    std::thread::sleep(std::time::Duration::from_millis(20));
    let t = Instant::now();
    store.snapshot("bench", 2, "ten changed").unwrap();
    let ten_ms = t.elapsed().as_secs_f64() * 1e3;
    let grew = store.disk_usage() - used;

    for (i, f) in files.iter().skip(10).take(100).enumerate() {
        fs::write(f, format!("changed again {i}\n")).unwrap();
    }
    std::thread::sleep(std::time::Duration::from_millis(20));
    store.snapshot("bench", 3, "hundred changed").unwrap();
    let t = Instant::now();
    let r = store.restore(first.id).unwrap();
    let restore_ms = t.elapsed().as_secs_f64() * 1e3;

    println!("files in tree:                 {}", first.entries.len());
    println!("first checkpoint:              {first_ms:.0} ms");
    if git_ms > 0.0 {
        println!(
            "git add -A && git commit:      {git_ms:.0} ms  (ratio {:.2}, target <= 1.5)",
            first_ms / git_ms
        );
    }
    println!("checkpoint, 10 files changed:  {ten_ms:.0} ms  (target <= 150)");
    println!(
        "restore, {} files written:    {restore_ms:.0} ms  (target <= 100; includes the undo checkpoint)",
        r.written.len()
    );
    println!(
        "store growth for 10 files:     {grew} bytes for {changed} changed bytes (ratio {:.2}; includes the manifest of {} entries)",
        grew as f64 / changed as f64,
        first.entries.len()
    );
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n != ".git") {
                out.extend(walk(&p));
            }
        } else {
            out.push(p);
        }
    }
    out
}
