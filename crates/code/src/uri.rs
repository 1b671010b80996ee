//! File paths to `file://` URIs and back (lsp-types' `Uri` has no path conversion of its own).

use std::path::{Path, PathBuf};

use lsp_types::Uri;

/// The URI of an absolute `path`.
pub fn from_path(path: &Path) -> Option<Uri> {
    url::Url::from_file_path(path).ok()?.as_str().parse().ok()
}

/// The path of a `file://` URI.
pub fn to_path(uri: &Uri) -> Option<PathBuf> {
    url::Url::parse(uri.as_str()).ok()?.to_file_path().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_with_spaces() {
        let uri = from_path(Path::new("/tmp/a b/c.ts")).unwrap();
        assert_eq!(uri.as_str(), "file:///tmp/a%20b/c.ts");
        assert_eq!(to_path(&uri).unwrap(), PathBuf::from("/tmp/a b/c.ts"));
    }
}
