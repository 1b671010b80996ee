//! The checkpoint benchmark's timed part (driven by `bench/checkpoint.sh`): on an existing tree
//! and a copy of it under git, the first checkpoint against `git add -A && git commit`, a
//! checkpoint after 10 changed files (against git's commit of the same change), a restore of 100
//! changed files, and the store's growth against the changed bytes (raw and compressed). Every
//! timed step after the first runs 5 times; the median is printed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use hands_checkpoint::{Config, Kind, Meta, Store};

const ROUNDS: usize = 5;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (root, state, git) = (Path::new(&args[1]), Path::new(&args[2]), Path::new(&args[3]));
    let store = Store::open(root, state, Config::default()).unwrap();
    let files = sorted_files(root);
    let meta = |kind| Meta { turn: Some("bench".into()), ..Meta::new("bench", kind) };

    let git_first = git_commit(git);
    let t = Instant::now();
    let first = store.snapshot(&meta(Kind::TurnStart)).unwrap();
    let first_ms = ms(t.elapsed());
    let entries = store.entries(&first).unwrap().len();

    // 10 changed files, 5 times: checkpoint time, git's commit time, growth.
    let (mut ten, mut git_ten, mut grew, mut changed, mut packed) = (vec![], vec![], 0, 0, 0);
    for round in 0..ROUNDS {
        // A different content for each file (the store would deduplicate equal ones).
        for (i, f) in files.iter().skip(round * 10).take(10).enumerate() {
            let body = text(10 * 1024, round as u64 * 1000 + i as u64 + 1);
            changed += body.len() as u64;
            packed += deflated(body.as_bytes());
            fs::write(f, &body).unwrap();
            fs::write(git.join(f.strip_prefix(root).unwrap()), &body).unwrap();
        }
        // Past the racy window of the files just written, as a turn's end usually is.
        std::thread::sleep(Duration::from_millis(30));
        let before = used(&store);
        let t = Instant::now();
        store.snapshot(&meta(Kind::TurnEnd)).unwrap();
        ten.push(ms(t.elapsed()));
        grew += used(&store) - before;
        git_ten.push(git_commit(git));
    }

    // 100 changed files, restored 5 times over (each restore is undone by the next).
    let base = store.snapshot(&meta(Kind::TurnStart)).unwrap();
    for (i, f) in files.iter().skip(100).take(100).enumerate() {
        fs::write(f, text(2048, 7_000 + i as u64)).unwrap();
    }
    std::thread::sleep(Duration::from_millis(30));
    let hundred = store.snapshot(&meta(Kind::TurnEnd)).unwrap();
    let (mut restore, mut written) = (vec![], 0);
    for round in 0..ROUNDS {
        let target = if round % 2 == 0 { base.id } else { hundred.id };
        let t = Instant::now();
        let r = store.restore(target, &Meta::new("bench", Kind::Restore)).unwrap();
        restore.push(ms(t.elapsed()));
        written = r.written.len();
    }

    let (ten, git_ten, restore) = (median(ten), median(git_ten), median(restore));
    println!("tree: {} files and folders", entries);
    println!(
        "first checkpoint:             {first_ms:7.0} ms   git add -A && git commit: {git_first:.0} ms   ratio {:.2} (target <= 1.5)",
        first_ms / git_first
    );
    println!(
        "checkpoint, 10 files changed: {ten:7.1} ms   (target <= 150; git add -A && git commit: {git_ten:.0} ms)"
    );
    println!(
        "restore, {written} files written:   {restore:7.1} ms   (target <= 100; includes the undo checkpoint)"
    );
    println!(
        "store growth, 10 files x {ROUNDS}:   {grew} bytes for {changed} changed bytes ({packed} deflated): {:.2}x the compressed change (trees and records included)",
        grew as f64 / packed as f64
    );
}

/// Bytes of the store besides its stat index (a cache rewritten in place).
fn used(store: &Store) -> u64 {
    store.disk_usage() - fs::metadata(store.dir().join("index")).map_or(0, |m| m.len())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// `git add -A && git commit -q` in `dir`; its wall time in ms.
fn git_commit(dir: &Path) -> f64 {
    let t = Instant::now();
    let ok = Command::new("sh")
        .arg("-c")
        .arg("git add -A && git commit -qm bench --allow-empty")
        .current_dir(dir)
        .status()
        .unwrap()
        .success();
    assert!(ok, "git commit failed in {}", dir.display());
    ms(t.elapsed())
}

/// Text of `len` bytes from words picked by a xorshift seeded with `seed` (compresses like
/// source code does, about 3:1).
fn text(len: usize, seed: u64) -> String {
    const WORDS: &[&str] = &[
        "let", "fn", "return", "value", "index", "self", "match", "Some", "None", "=>", "{", "}",
        "(", ")", ";", "if", "else", "for", "in", "map", "config", "error", "path", "root",
    ];
    let mut x = seed | 1;
    let mut out = String::with_capacity(len + 16);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.push_str(WORDS[(x % WORDS.len() as u64) as usize]);
        out.push(if x.is_multiple_of(9) { '\n' } else { ' ' });
        if x.is_multiple_of(31) {
            out.push_str(&format!("{} ", x % 100_000));
        }
    }
    out.truncate(len);
    out
}

fn deflated(bytes: &[u8]) -> u64 {
    let mut enc = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap().len() as u64
}

fn sorted_files(dir: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                if p.file_name().is_some_and(|n| n != ".git") {
                    walk(&p, out);
                }
            } else {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, &mut out);
    out.sort();
    out
}
