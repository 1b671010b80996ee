//! What a file is, from its first bytes: an image (by magic bytes, whatever its name says), another
//! binary format, or text. read_file serves images, refuses binaries, and numbers text lines; edit_file
//! refuses anything that is not text.

/// How many leading bytes decide (a NUL in them means binary).
pub const SNIFF_BYTES: usize = 8 * 1024;

/// The kind of a file's content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An image the model can see, with its MIME type.
    Image(&'static str),
    /// A binary file, with a short name of its type ("PDF document", "binary data", …).
    Binary(&'static str),
    /// Anything else.
    Text,
}

const IMAGES: &[(&[u8], &str)] = &[
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
];

const BINARIES: &[(&[u8], &str)] = &[
    (b"%PDF-", "PDF document"),
    (b"PK\x03\x04", "ZIP archive"),
    (b"PK\x05\x06", "ZIP archive"),
    (b"\x7fELF", "ELF executable"),
    (b"\x1f\x8b", "gzip archive"),
    (b"BZh", "bzip2 archive"),
    (b"\xfd7zXZ\x00", "xz archive"),
    (b"7z\xbc\xaf\x27\x1c", "7-zip archive"),
    (b"\x28\xb5\x2f\xfd", "zstd archive"),
    (b"\0asm", "WebAssembly module"),
    (b"\xca\xfe\xba\xbe", "Mach-O or Java class file"),
    (b"\xcf\xfa\xed\xfe", "Mach-O executable"),
    (b"MZ", "Windows executable"),
    (b"SQLite format 3\0", "SQLite database"),
    (b"BM", "BMP image"),
    (b"II*\0", "TIFF image"),
    (b"MM\0*", "TIFF image"),
];

/// Classify content from its first bytes (at most [`SNIFF_BYTES`] are looked at).
pub fn sniff(head: &[u8]) -> Kind {
    if let Some(mime) = image_mime(head) {
        return Kind::Image(mime);
    }
    // Short magics like "MZ" or "BM" also start ordinary words, so they only count with a NUL near.
    let head = &head[..head.len().min(SNIFF_BYTES)];
    let has_nul = head.contains(&0);
    for (magic, name) in BINARIES {
        if head.starts_with(magic) && (magic.len() > 2 || has_nul) {
            return Kind::Binary(name);
        }
    }
    if has_nul { Kind::Binary("binary data (NUL bytes)") } else { Kind::Text }
}

/// The MIME type of an image the model can see (PNG, JPEG, GIF, WebP), by magic bytes.
pub fn image_mime(head: &[u8]) -> Option<&'static str> {
    if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        return Some("image/webp");
    }
    IMAGES.iter().find(|(magic, _)| head.starts_with(magic)).map(|(_, mime)| *mime)
}

/// True when the file name claims an image type the model can see.
pub fn has_image_extension(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    [".png", ".jpg", ".jpeg", ".gif", ".webp"].iter().any(|ext| lower.ends_with(ext))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_by_magic() {
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"), Kind::Image("image/png"));
        assert_eq!(sniff(b"\xff\xd8\xff\xe0\0\x10JFIF"), Kind::Image("image/jpeg"));
        assert_eq!(sniff(b"GIF89a\x01\0"), Kind::Image("image/gif"));
        assert_eq!(sniff(b"RIFF\x24\0\0\0WEBPVP8 "), Kind::Image("image/webp"));
        assert_eq!(sniff(b"RIFF\x24\0\0\0WAVEfmt "), Kind::Binary("binary data (NUL bytes)"));
    }

    #[test]
    fn binaries_and_text() {
        assert_eq!(sniff(b"%PDF-1.7\n"), Kind::Binary("PDF document"));
        assert_eq!(sniff(b"\x7fELF\x02\x01\x01\0"), Kind::Binary("ELF executable"));
        assert_eq!(sniff(b"PK\x03\x04\x14\0"), Kind::Binary("ZIP archive"));
        assert_eq!(sniff(b"\x1f\x8b\x08\0"), Kind::Binary("gzip archive"));
        assert_eq!(sniff(b"hello\0world"), Kind::Binary("binary data (NUL bytes)"));
        // "MZ"/"BM" starting a text file is not a binary.
        assert_eq!(sniff(b"MZ is a name\n"), Kind::Text);
        assert_eq!(sniff(b"BMW\n"), Kind::Text);
        assert_eq!(sniff("caf\u{e9}\n".as_bytes()), Kind::Text);
        assert_eq!(sniff(b""), Kind::Text);
    }

    #[test]
    fn image_extensions() {
        assert!(has_image_extension("a/B.PNG"));
        assert!(has_image_extension("x.jpeg"));
        assert!(!has_image_extension("x.svg"));
        assert!(!has_image_extension("png"));
    }
}
