//! Does the content match the extension? Binary formats by their magic bytes (the `infer`
//! crate); text formats (which have none) by being UTF-8 text that is no known binary type, with a
//! plausible start for markup and a full parse for JSON.

/// Extensions of text formats, which have no magic bytes.
const TEXT: &[&str] = &[
    "svg",
    "json",
    "txt",
    "csv",
    "tsv",
    "css",
    "js",
    "mjs",
    "cjs",
    "ts",
    "tsx",
    "jsx",
    "md",
    "html",
    "htm",
    "xml",
    "yaml",
    "yml",
    "toml",
    "map",
    "webmanifest",
    "geojson",
];

/// What the content was found to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kind {
    /// Its MIME type.
    pub mime: String,
    /// An image whose dimensions can be read and which may be shown (png, jpeg, gif, webp).
    pub showable_image: bool,
    /// An image of any kind.
    pub image: bool,
}

/// Check that `bytes` are what a file named with `extension` should hold; the error says why not.
pub fn check(extension: &str, bytes: &[u8]) -> Result<Kind, String> {
    let ext = extension.to_ascii_lowercase();
    let detected = infer::get(bytes);
    if TEXT.contains(&ext.as_str()) {
        if let Some(found) = detected.filter(|t| t.matcher_type() != infer::MatcherType::Text) {
            return Err(format!(
                "the content is {} ({}), not .{ext} text",
                found.mime_type(),
                found.extension()
            ));
        }
        return text(&ext, bytes).map(|mime| Kind { mime, showable_image: false, image: false });
    }
    let Some(found) = detected else {
        return Err(format!(
            "the content is no recognised file type, so it cannot be checked against .{ext}. \
             Binary files must be of a type whose signature is known (images, fonts, audio, \
             video, archives, PDF, WebAssembly); text files need a text extension ({})",
            TEXT.iter().map(|e| format!(".{e}")).collect::<Vec<_>>().join(", ")
        ));
    };
    if !same_type(&ext, found.extension()) {
        return Err(format!(
            "the content is {} (.{}), not what .{ext} holds",
            found.mime_type(),
            found.extension()
        ));
    }
    let image = found.matcher_type() == infer::MatcherType::Image;
    let showable_image = matches!(found.extension(), "png" | "jpg" | "gif" | "webp");
    Ok(Kind { mime: found.mime_type().to_owned(), showable_image, image })
}

/// True when a file named `.ext` may hold content that `infer` names `.found`.
fn same_type(ext: &str, found: &str) -> bool {
    let canonical = match ext {
        "jpeg" | "jpe" => "jpg",
        "tiff" => "tif",
        "mid" => "midi",
        "oga" => "ogg",
        "heic" => "heif",
        other => other,
    };
    canonical == found
        // A zip container is also an Office document, an e-book or an extension package.
        || (canonical == "zip"
            && matches!(found, "docx" | "xlsx" | "pptx" | "odt" | "ods" | "odp" | "epub" | "crx"))
}

/// Check text content; returns its MIME type.
fn text(ext: &str, bytes: &[u8]) -> Result<String, String> {
    let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let text = std::str::from_utf8(body)
        .map_err(|_| format!("the content is not UTF-8 text, which a .{ext} file holds"))?;
    if text.contains('\0') {
        return Err(format!("the content has NUL bytes: it is binary, not .{ext} text"));
    }
    let start = text.trim_start().get(..256.min(text.trim_start().len())).unwrap_or_default();
    let lower = start.to_ascii_lowercase();
    let mime = match ext {
        "svg" => {
            let head = text.get(..4096.min(text.len())).unwrap_or(text).to_ascii_lowercase();
            let plausible = (lower.starts_with("<?xml")
                || lower.starts_with("<svg")
                || lower.starts_with("<!--")
                || lower.starts_with("<!doctype svg"))
                && head.contains("<svg");
            if !plausible {
                return Err(
                    "the content does not start like an SVG image (`<svg` or `<?xml`)".into()
                );
            }
            "image/svg+xml"
        }
        "html" | "htm" => {
            if !lower.starts_with('<') {
                return Err(format!(
                    "the content does not start like HTML (`<`): {}",
                    preview(start)
                ));
            }
            "text/html"
        }
        "xml" => {
            if !lower.starts_with('<') {
                return Err(format!(
                    "the content does not start like XML (`<`): {}",
                    preview(start)
                ));
            }
            "application/xml"
        }
        "json" | "geojson" | "webmanifest" | "map" => {
            serde_json::from_str::<serde::de::IgnoredAny>(text)
                .map_err(|err| format!("the content is not valid JSON ({err})"))?;
            "application/json"
        }
        "css" => "text/css",
        "js" | "mjs" | "cjs" | "jsx" => "text/javascript",
        "ts" | "tsx" => "text/typescript",
        "md" => "text/markdown",
        "csv" => "text/csv",
        "tsv" => "text/tab-separated-values",
        "yaml" | "yml" => "application/yaml",
        "toml" => "application/toml",
        _ => "text/plain",
    };
    Ok(mime.to_owned())
}

fn preview(start: &str) -> String {
    let cut: String = start.chars().take(40).collect();
    format!("{cut:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x02\0\0\0\x03\x08\x06\0\0\0";

    #[test]
    fn binary_types_must_match_their_extension() {
        assert_eq!(check("png", PNG).unwrap().mime, "image/png");
        assert!(check("PNG", PNG).unwrap().showable_image);
        let err = check("jpg", PNG).unwrap_err();
        assert!(err.contains("image/png"), "{err}");
        let mut elf = b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x02\0\x3e\0".to_vec();
        elf.resize(64, 0);
        let err = check("png", &elf).unwrap_err();
        assert!(err.contains("not what .png holds"), "{err}");
        assert!(check("jpeg", b"\xFF\xD8\xFF\xE0\0\x10JFIF\0").is_ok());
        assert!(check("bin", b"just some bytes").unwrap_err().contains("no recognised"));
        assert!(check("gz", b"\x1f\x8b\x08\0\0\0\0\0").is_ok());
    }

    #[test]
    fn text_types_need_text_and_a_plausible_start() {
        assert_eq!(check("json", br#"{"a": [1, 2]}"#).unwrap().mime, "application/json");
        assert!(check("json", b"{not json").unwrap_err().contains("JSON"));
        assert!(check("svg", b"<?xml version=\"1.0\"?>\n<svg xmlns='x'></svg>").is_ok());
        assert!(check("svg", b"<svg viewBox='0 0 1 1'/>").is_ok());
        assert!(check("svg", b"hello").unwrap_err().contains("SVG"));
        assert!(check("html", b"<!doctype html><p>hi").is_ok());
        assert!(check("html", b"plain words").unwrap_err().contains("HTML"));
        assert!(check("txt", b"\xEF\xBB\xBFhello\n").is_ok());
        assert!(check("txt", b"\xff\xfe\0h").unwrap_err().contains("UTF-8"));
        assert!(check("txt", PNG).unwrap_err().contains("image/png"));
        assert!(check("csv", b"a,\0b").unwrap_err().contains("NUL"));
        assert!(check("css", b"body { color: red }").is_ok());
    }
}
