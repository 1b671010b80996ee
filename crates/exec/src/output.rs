//! A process's output as kept in memory: the first `head` bytes, a ring of the last `tail` bytes,
//! and an exact count of everything produced (so the bytes dropped between them are known), plus
//! the capped log file of background processes.

use std::fs::File;
use std::io::Write;

/// Head + tail of a byte stream with an exact total.
#[derive(Debug)]
pub(crate) struct HeadTail {
    head: Vec<u8>,
    head_cap: usize,
    /// Ring storage of the tail; `ring_start` is the oldest byte once the ring is full.
    ring: Vec<u8>,
    ring_cap: usize,
    ring_start: usize,
    total: u64,
}

impl HeadTail {
    pub fn new(head: usize, tail: usize) -> Self {
        Self {
            head: Vec::new(),
            head_cap: head,
            ring: Vec::new(),
            ring_cap: tail,
            ring_start: 0,
            total: 0,
        }
    }

    /// Bytes produced in all.
    pub fn total(&self) -> u64 {
        self.total
    }

    pub fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        if self.head.len() < self.head_cap {
            let n = bytes.len().min(self.head_cap - self.head.len());
            self.head.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
        }
        if bytes.is_empty() || self.ring_cap == 0 {
            return;
        }
        if bytes.len() >= self.ring_cap {
            // The new bytes replace the whole ring.
            self.ring.clear();
            self.ring.extend_from_slice(&bytes[bytes.len() - self.ring_cap..]);
            self.ring_start = 0;
            return;
        }
        if self.ring.len() < self.ring_cap {
            let n = bytes.len().min(self.ring_cap - self.ring.len());
            self.ring.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
        }
        // The ring is full: overwrite from the oldest byte on, wrapping once at most.
        while !bytes.is_empty() {
            let n = bytes.len().min(self.ring_cap - self.ring_start);
            self.ring[self.ring_start..self.ring_start + n].copy_from_slice(&bytes[..n]);
            self.ring_start = (self.ring_start + n) % self.ring_cap;
            bytes = &bytes[n..];
        }
    }

    /// The tail in order.
    pub fn tail(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.ring.len());
        out.extend_from_slice(&self.ring[self.ring_start..]);
        out.extend_from_slice(&self.ring[..self.ring_start]);
        out
    }

    pub fn head(&self) -> &[u8] {
        &self.head
    }

    /// Bytes between head and tail that are not kept.
    pub fn dropped(&self) -> u64 {
        self.total - self.head.len() as u64 - self.ring.len() as u64
    }

    /// Bytes after `cursor` still in memory, and how many after `cursor` were dropped.
    pub fn since(&self, cursor: u64) -> (Vec<u8>, u64) {
        let head_len = self.head.len() as u64;
        let tail_start = self.total - self.ring.len() as u64;
        let mut out = Vec::new();
        if cursor < head_len {
            out.extend_from_slice(&self.head[cursor as usize..]);
        }
        let from = cursor.max(head_len);
        let dropped = tail_start.saturating_sub(from);
        let skip = from.saturating_sub(tail_start) as usize;
        if skip < self.ring.len() {
            out.extend_from_slice(&self.tail()[skip..]);
        }
        (out, dropped)
    }
}

/// A log file that stops growing at `max` bytes with a final marker line.
#[derive(Debug)]
pub(crate) struct CappedLog {
    file: Option<File>,
    written: u64,
    max: u64,
}

impl CappedLog {
    /// A new log `<stem>.log` (or `<stem>-2.log`, … when taken by another session) in `dir`,
    /// created without following symlinks; returns it with the name used.
    pub fn create(dir: &cap_std::fs::Dir, stem: &str, max: u64) -> std::io::Result<(Self, String)> {
        for n in 1..1000 {
            let name = if n == 1 { format!("{stem}.log") } else { format!("{stem}-{n}.log") };
            match hands_core::middleware::truncate::create_new(dir, &name) {
                Ok(file) => {
                    return Ok((Self { file: Some(file.into_std()), written: 0, max }, name));
                }
                Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(err) => return Err(err),
            }
        }
        Err(std::io::Error::new(std::io::ErrorKind::AlreadyExists, "no free log file name"))
    }

    pub fn write(&mut self, bytes: &[u8]) {
        let Some(file) = self.file.as_mut() else { return };
        let room = self.max.saturating_sub(self.written);
        let n = (bytes.len() as u64).min(room) as usize;
        let mut ok = file.write_all(&bytes[..n]).is_ok();
        self.written += n as u64;
        if n < bytes.len() {
            let line =
                format!("\n… [log stopped at {} bytes; later output is not logged]\n", self.max);
            ok = ok && file.write_all(line.as_bytes()).is_ok();
            self.file = None;
        }
        if !ok {
            self.file = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fill(ht: &mut HeadTail, data: &[u8], chunk: usize) {
        for c in data.chunks(chunk.max(1)) {
            ht.push(c);
        }
    }

    #[test]
    fn head_and_tail_with_an_exact_dropped_count() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        for chunk in [1, 7, 100, 333, 5000, 20_000] {
            let mut ht = HeadTail::new(100, 300);
            fill(&mut ht, &data, chunk);
            assert_eq!(ht.head(), &data[..100]);
            assert_eq!(ht.tail(), &data[data.len() - 300..], "chunk {chunk}");
            assert_eq!(ht.dropped(), 10_000 - 400);
            assert_eq!(ht.total(), 10_000);
        }
    }

    #[test]
    fn short_output_is_kept_whole() {
        let mut ht = HeadTail::new(10, 10);
        fill(&mut ht, b"hello world!", 3);
        let mut all = ht.head().to_vec();
        all.extend(ht.tail());
        assert_eq!(all, b"hello world!");
        assert_eq!(ht.dropped(), 0);
    }

    #[test]
    fn since_returns_what_is_left_after_a_cursor() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i % 200) as u8).collect();
        let mut ht = HeadTail::new(100, 100);
        fill(&mut ht, &data, 64);
        let (bytes, dropped) = ht.since(50);
        assert_eq!(dropped, 800);
        assert_eq!(&bytes[..50], &data[50..100]);
        assert_eq!(&bytes[50..], &data[900..]);
        assert_eq!(ht.since(950), (data[950..].to_vec(), 0));
        assert_eq!(ht.since(1000), (Vec::new(), 0));
        assert_eq!(ht.since(500).1, 400);
    }

    #[test]
    fn log_stops_at_its_cap_with_a_marker() {
        let root = tempfile::tempdir().unwrap();
        let dir = hands_core::middleware::truncate::hands_subdir(root.path(), "processes").unwrap();
        let (mut log, name) = CappedLog::create(&dir, "p1", 10).unwrap();
        assert_eq!(name, "p1.log");
        log.write(b"12345");
        log.write(b"678901234");
        log.write(b"more");
        let path = root.path().join(".hands/processes/p1.log");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("1234567890\n… [log stopped at 10 bytes"), "{text}");
        assert!(!text.contains("more"));
        let ignore = root.path().join(".hands/processes/.gitignore");
        assert_eq!(std::fs::read_to_string(ignore).unwrap(), "*\n");
        // Another session's p1 gets its own file.
        let (_, second) = CappedLog::create(&dir, "p1", 10).unwrap();
        assert_eq!(second, "p1-2.log");
    }

    #[test]
    fn a_processes_folder_symlinked_elsewhere_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join(".hands")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join(".hands/processes")).unwrap();
        assert!(hands_core::middleware::truncate::hands_subdir(root.path(), "processes").is_err());
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    }
}
