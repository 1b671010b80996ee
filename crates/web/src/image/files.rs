//! Where image_gen's images go, and the writing of them, through the confined workspace.
//!
//! The rule on existing files: an explicit `path` that exists is refused before anything is
//! generated, unless `overwrite`; the default path (`.hands/media/<slug>.png`) never replaces a
//! file, it takes the next free name (`<slug>-2.png`, …). An image already paid for is never lost:
//! when its name is taken by the time it is written (or its type needs another extension), it is
//! saved under the next free name, and the result says so.

use hands_core::{Context, ToolError};
use hands_fs::{FsConfig, RelPath, Workspace, atomic};

use super::types::SavedImage;
use crate::download::exists;

/// The folder of images saved without a `path`.
const MEDIA_DIR: &str = ".hands/media";
/// Extensions a `path` may have.
const EXTENSIONS: &[&str] = &["png", "jpg", "jpeg", "webp"];
/// How many numbered names are tried for a free one.
const MAX_NUMBER: u32 = 1000;

/// The files a call will write, worked out before anything is generated.
#[derive(Debug, Clone)]
pub(super) struct Plan {
    ws: Workspace,
    /// One path per image asked for.
    targets: Vec<RelPath>,
    /// The default path was used: names are picked, files never replaced.
    default: bool,
    overwrite: bool,
}

/// The targets of `n` images: `path` and its numbered siblings, or free names under the media
/// folder; every one writable and (without `overwrite`) not there yet.
pub(super) fn plan(
    ctx: &Context,
    path: Option<&str>,
    prompt: &str,
    n: u32,
    overwrite: bool,
) -> Result<Plan, ToolError> {
    let ws = Workspace::of(ctx)?;
    let targets = match path {
        Some(raw) => {
            let first = ws.resolve("path", raw)?;
            let ext = extension(&first);
            if !EXTENSIONS.contains(&ext.as_str()) {
                return Err(ToolError::model(format!(
                    "`path` {} must end in .png, .jpg, .jpeg or .webp; nothing was generated.",
                    first.display()
                )));
            }
            let targets: Vec<RelPath> = (1..=n).map(|k| numbered(&first, k, &ext)).collect();
            if !overwrite {
                let taken: Vec<String> = targets
                    .iter()
                    .filter(|t| exists(&ws, t).unwrap_or(true))
                    .map(RelPath::display)
                    .collect();
                if !taken.is_empty() {
                    return Err(ToolError::model(format!(
                        "{} already exist{}; nothing was generated. Pass `\"overwrite\": true` to \
                         replace, or choose another path.",
                        taken.join(", "),
                        if taken.len() == 1 { "s" } else { "" }
                    )));
                }
            }
            targets
        }
        None => {
            let first = ws.resolve("path", &format!("{MEDIA_DIR}/{}.png", slug(prompt)))?;
            let mut targets = Vec::new();
            let mut k = 1;
            while targets.len() < n as usize {
                let candidate = numbered(&first, k, "png");
                if !exists(&ws, &candidate)? {
                    targets.push(candidate);
                }
                k += 1;
                if k > MAX_NUMBER {
                    return Err(ToolError::model(format!(
                        "{MEDIA_DIR} has no free name for {}; give a `path`.",
                        first.display()
                    )));
                }
            }
            targets
        }
    };
    for target in &targets {
        atomic::check_writable(&ws, target, &FsConfig::default(), "save an image to")?;
    }
    Ok(Plan { ws, targets, default: path.is_none(), overwrite })
}

/// What the written images are: the result's entries, each image's bytes and MIME type (to show),
/// and notes on names that changed.
pub(super) type Written = (Vec<SavedImage>, Vec<(Vec<u8>, String)>, Vec<String>);

/// Write each checked image (bytes, MIME type, extension) to its planned target.
pub(super) fn write_all(
    ctx: &Context,
    plan: &Plan,
    images: Vec<(Vec<u8>, (String, &'static str))>,
) -> Result<Written, ToolError> {
    let ws = &plan.ws;
    let mut saved = Vec::new();
    let mut shown = Vec::new();
    let mut notes = Vec::new();
    for ((bytes, (mime, ext)), planned) in images.into_iter().zip(&plan.targets) {
        let mut target = planned.clone();
        let mut renamed = false;
        if !same_extension(&extension(planned), ext) {
            target = numbered(planned, 1, ext);
            renamed = true;
        }
        let mut existed = exists(ws, &target)?;
        if existed && (plan.default || !plan.overwrite || renamed) {
            target = free_name(ws, &target, ext)?;
            existed = false;
            renamed = true;
        }
        if renamed {
            notes.push(format!(
                "Saved as {} ({mime}) instead of {}.",
                target.display(),
                planned.display()
            ));
        }
        atomic::check_writable(ws, &target, &FsConfig::default(), "save an image to")?;
        atomic::write(ws, &target, &bytes, ctx.cancel_token()).map_err(|err| {
            let mut error = atomic::write_error(ws, "image_gen", &target, &err).to_string();
            if !saved.is_empty() {
                let done: Vec<String> = saved.iter().map(|s: &SavedImage| s.path.clone()).collect();
                error.push_str(&format!(" Already saved: {}.", done.join(", ")));
            }
            ToolError::model(error)
        })?;
        let size = imagesize::blob_size(&bytes).ok();
        saved.push(SavedImage {
            path: target.display(),
            action: if existed { "replaced" } else { "created" }.to_owned(),
            mime_type: mime.clone(),
            width: size.map_or(0, |s| s.width as u64),
            height: size.map_or(0, |s| s.height as u64),
            bytes: bytes.len() as u64,
        });
        shown.push((bytes, mime));
    }
    Ok((saved, shown, notes))
}

/// The image type of `bytes` (MIME type, extension), by magic bytes: PNG, JPEG, WebP or GIF.
pub(super) fn image_kind(bytes: &[u8]) -> Result<(String, &'static str), String> {
    match infer::get(bytes) {
        Some(t) => {
            let ext = match t.mime_type() {
                "image/png" => "png",
                "image/jpeg" => "jpg",
                "image/webp" => "webp",
                "image/gif" => "gif",
                other => return Err(format!("its bytes are {other}")),
            };
            Ok((t.mime_type().to_owned(), ext))
        }
        None => Err(format!("{} bytes of no known image type", bytes.len())),
    }
}

/// A few words of the prompt, for a file name: lowercase ASCII letters and digits joined by `-`.
pub(super) fn slug(prompt: &str) -> String {
    let mut out = String::new();
    for word in prompt
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase)
    {
        if out.len() + word.len() + 1 > 48 {
            break;
        }
        if !out.is_empty() {
            out.push('-');
        }
        out.push_str(&word);
    }
    if out.is_empty() { "image".to_owned() } else { out }
}

fn extension(path: &RelPath) -> String {
    path.as_path().extension().map(|e| e.to_string_lossy().to_ascii_lowercase()).unwrap_or_default()
}

fn same_extension(have: &str, want: &str) -> bool {
    have == want || (want == "jpg" && have == "jpeg")
}

/// `dir/name.ext` as the `k`th of its series: `dir/name-k.EXT` (`k` = 1: `dir/name.EXT`).
fn numbered(path: &RelPath, k: u32, ext: &str) -> RelPath {
    let stem =
        path.as_path().file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let name = if k <= 1 { format!("{stem}.{ext}") } else { format!("{stem}-{k}.{ext}") };
    path.parent().join(name)
}

/// The first of `path`'s numbered siblings that does not exist.
fn free_name(ws: &Workspace, path: &RelPath, ext: &str) -> Result<RelPath, ToolError> {
    for k in 2..=MAX_NUMBER {
        let candidate = numbered(path, k, ext);
        if !exists(ws, &candidate)? {
            return Ok(candidate);
        }
    }
    Err(ToolError::model(format!(
        "no free name next to {}; nothing more was written.",
        path.display()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_short_ascii_words() {
        assert_eq!(slug("A red Fox, jumping!"), "a-red-fox-jumping");
        assert_eq!(slug("日本語"), "image");
        assert_eq!(slug("../../etc/passwd"), "etc-passwd");
        assert!(slug(&"word ".repeat(100)).len() <= 48);
    }

    #[test]
    fn magic_bytes_decide_the_type() {
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x02\0\0\0\x03\x08\x06\0\0\0";
        assert_eq!(image_kind(png).unwrap(), ("image/png".to_owned(), "png"));
        assert_eq!(image_kind(b"\xFF\xD8\xFF\xE0\0\x10JFIF\0").unwrap().1, "jpg");
        assert!(image_kind(b"<html>nope</html>").unwrap_err().contains("text/html"));
        assert!(image_kind(b"plain").unwrap_err().contains("no known image type"));
        assert!(image_kind(b"%PDF-1.7\n%\xe2\xe3").unwrap_err().contains("application/pdf"));
        assert!(same_extension("jpeg", "jpg") && !same_extension("png", "jpg"));
    }
}
