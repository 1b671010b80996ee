//! The limits a document is parsed under. A hostile file meets them one by one: its size before
//! anything is read, its archive's entries and inflated bytes while they are read (declared sizes
//! lie), then the child process's address space and wall clock.

use std::time::Duration;

/// The limits of one parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The largest file parsed, in bytes.
    pub max_file_bytes: u64,
    /// The most entries an archive (DOCX, PPTX, XLSX, ODS) may hold.
    pub max_entries: usize,
    /// The most bytes an archive's entries may inflate to, together, counted as they are read.
    pub max_inflated_bytes: u64,
    /// The child process's address space (RLIMIT_AS), in bytes.
    pub max_memory_bytes: u64,
    /// How long the child may take.
    pub timeout: Duration,
    /// Rows shown of each sheet; the rest are counted.
    pub max_rows: usize,
    /// The most text returned, in bytes; the rest is cut with a note.
    pub max_text_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_file_bytes: 50 * MB,
            max_entries: 10_000,
            max_inflated_bytes: 200 * MB,
            max_memory_bytes: 1024 * MB,
            timeout: Duration::from_secs(60),
            max_rows: 200,
            max_text_bytes: 16 * MB as usize,
        }
    }
}

const MB: u64 = 1024 * 1024;

/// `bytes` as people read it: `50 MB`, `3.2 KB`, `17 bytes`.
pub fn human(bytes: u64) -> String {
    match bytes {
        b if b >= MB && b % MB == 0 => format!("{} MB", b / MB),
        b if b >= MB => format!("{:.1} MB", b as f64 / MB as f64),
        b if b >= 1024 => format!("{:.1} KB", b as f64 / 1024.0),
        b => format!("{b} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(human(50 * MB), "50 MB");
        assert_eq!(human(MB + MB / 2), "1.5 MB");
        assert_eq!(human(2048), "2.0 KB");
        assert_eq!(human(7), "7 bytes");
    }
}
