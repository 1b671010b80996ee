//! A folder swapped for a symlink to outside the root while writes are in flight: a racing thread
//! flips `root/dir` between a real folder and a symlink to an outside folder as fast as it can,
//! while write_file writes into `dir/`. Nothing may ever land outside the root.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use hands_core::{CoreConfig, Registry, Session, ToolCall};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn swapped_folder_never_lets_a_write_out() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("proj");
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(root.join("dir")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    let registry =
        hands_fs::register(Registry::builder(CoreConfig::default()), &Default::default()).build();
    let session = Session::one_shot(&root);

    let stop = Arc::new(AtomicBool::new(false));
    let flipper = {
        let (stop, root, outside) = (Arc::clone(&stop), root.clone(), outside.clone());
        std::thread::spawn(move || {
            let dir = root.join("dir");
            let parked = root.join("dir.real");
            let mut flips = 0u64;
            // write_file may re-create `dir` while it is parked; such strays are removed.
            let clear = |p: &std::path::Path| {
                let _ = std::fs::remove_file(p);
                let _ = std::fs::remove_dir_all(p);
            };
            while !stop.load(Ordering::Relaxed) {
                // real folder → symlink to outside → real folder
                if std::fs::rename(&dir, &parked).is_err() {
                    clear(&dir);
                    continue;
                }
                while std::os::unix::fs::symlink(&outside, &dir).is_err() {
                    clear(&dir);
                }
                std::thread::yield_now();
                clear(&dir);
                while std::fs::rename(&parked, &dir).is_err() {
                    clear(&dir);
                }
                flips += 1;
                // A window with the real folder in place, so that writes also succeed on a
                // loaded machine (the test wants both outcomes, and never an escape).
                std::thread::yield_now();
            }
            flips
        })
    };

    let mut ok = 0;
    for i in 0..2_000 {
        let call = ToolCall::new(
            format!("w{i}"),
            "write_file",
            json!({"path": format!("dir/f{}.txt", i % 7), "content": "data"}),
        );
        let out = registry.dispatch(&session, call).await.unwrap();
        if !out.is_error {
            ok += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let flips = flipper.join().unwrap();
    let leaked: Vec<_> =
        std::fs::read_dir(&outside).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(leaked.is_empty(), "files written outside the root: {leaked:?}");
    assert!(flips > 10, "the race did not run ({flips} flips)");
    assert!(ok > 0, "no write succeeded at all");
    println!("{ok} writes succeeded during {flips} folder swaps; none escaped");
}
