#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Huge output through bash: complete, exact dropped-byte count, lossy UTF-8, and a bounded peak
//! RSS. Its own test binary, so that no other test inflates the peak (VmHWM of this process).

use crate::supervisor_common;

use std::time::Instant;

use hands_core::{Context, Tool};
use hands_exec::bash::{Bash, BashArgs};
use supervisor_common::{config, session};

fn vm_hwm_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gigabytes_of_output_are_drained_counted_and_bounded() {
    let (_dir, s) = session("big");
    let bash = Bash::new(config());
    let kept = config().bash.max_output_bytes as u64;
    for (command, total, binary) in [
        ("yes | head -c 2G", 2u64 << 30, false),
        ("cat /dev/urandom | head -c 1G", 1u64 << 30, true),
    ] {
        let start = Instant::now();
        let args = BashArgs { command: command.into(), timeout: Some(300_000) };
        let out = bash.call(Context::new(&s, "c", None), args).await.unwrap();
        let secs = start.elapsed().as_secs_f64();
        let st = out.structured.clone().unwrap();
        assert!(!out.is_error, "{command}");
        assert_eq!(st["exit_code"], 0, "{command}");
        assert_eq!(st["output_bytes"], total, "{command}");
        assert_eq!(st["dropped_bytes"], total - kept, "{command}");
        let text = out.joined_text();
        assert!(text.contains(&format!("… [{} bytes dropped] …", total - kept)), "{command}");
        assert!(text.ends_with("[exit code 0]"));
        if binary {
            assert!(text.contains('\u{FFFD}'), "invalid UTF-8 is shown lossily");
        } else {
            assert!(text.starts_with("y\ny\ny\n"));
        }
        eprintln!("{command}: {:.0} MB/s", total as f64 / secs / 1e6);
    }
    let peak = vm_hwm_kb();
    eprintln!("peak RSS {peak} kB");
    assert!(peak < 64 * 1024, "peak RSS {peak} kB");
    s.close().await;
}
