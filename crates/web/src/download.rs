//! download_to_repo: fetch a URL through the egress guard and write it into the project.
//!
//! Flow: resolve the target path through the confined workspace and refuse protected targets
//! (as write_file does) and an existing file unless `overwrite`; fetch through the guard with the
//! byte cap; refuse a non-2xx status and content that does not match the extension; write
//! atomically (hands-fs); answer with size, type, SHA-256, the final URL and, for an image, its
//! dimensions (and a small image itself). Every failure happens before the rename, so nothing is
//! left behind.

use std::borrow::Cow;
use std::io;

use hands_core::approval::Review;
use hands_core::{Annotations, Content, Context, Tool, ToolError, ToolOutput};
use hands_core::{Family, Label, Policy};
use hands_fs::{FsConfig, RelPath, Workspace, atomic};
use hands_net::{Guard, Request};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::{DEFAULT_DOWNLOAD_BYTES, WebConfig, content};

/// Images up to this size are also returned as image content.
const SHOW_IMAGE_BYTES: usize = 1024 * 1024;

/// Arguments of download_to_repo.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DownloadArgs {
    /// The absolute http:// or https:// URL to download.
    pub url: String,
    /// Where to write the file, relative to the project root; missing folders are created.
    pub path: String,
    /// Replace an existing file (default false: an existing file is an error).
    #[serde(default)]
    pub overwrite: bool,
    /// The most bytes accepted, after decompression (default 20 MiB).
    pub max_bytes: Option<u64>,
}

/// The structured result of download_to_repo: everything its text says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct DownloadResult {
    /// `created` (the file was new) or `replaced`.
    pub action: String,
    /// Path relative to the project root.
    pub path: String,
    /// Bytes written.
    pub bytes: u64,
    /// The content's MIME type, as found from its bytes.
    pub mime_type: String,
    /// SHA-256 of the content, in hex.
    pub sha256: String,
    /// The URL that answered, after redirects.
    pub final_url: String,
    /// An image's width in pixels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width: Option<u64>,
    /// An image's height in pixels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub height: Option<u64>,
}

/// The download_to_repo tool.
#[derive(Debug, Clone)]
pub struct DownloadToRepo {
    guard: Guard,
    config: WebConfig,
}

impl DownloadToRepo {
    /// Fetching through `guard`, limited by `config`.
    pub fn new(guard: Guard, config: WebConfig) -> Self {
        Self { guard, config }
    }
}

impl Tool for DownloadToRepo {
    type Args = DownloadArgs;

    fn name(&self) -> &'static str {
        "download_to_repo"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("download_to_repo.md"))
    }

    fn annotations(&self) -> Annotations {
        Annotations { read_only: false, destructive: true, idempotent: true, open_world: true }
    }

    fn policy(&self) -> Policy {
        Policy::from_annotations(self.annotations())
            .label(Label::Key { key: "url" })
            .family(Family::Web)
            .timeout_ms(120_000)
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        Some(hands_core::output_schema_for::<DownloadResult>())
    }

    /// The URL fetched and the file written, and whether it replaces one: a target that would
    /// be refused is refused before anybody is asked.
    async fn review(&self, ctx: &Context, args: &DownloadArgs) -> Result<Review, ToolError> {
        let (ctx, raw, overwrite) = (ctx.clone(), args.path.clone(), args.overwrite);
        let (path, replaces) = blocking(move || {
            let (ws, path, _) = target(&ctx, &raw, overwrite)?;
            let replaces = exists(&ws, &path)?;
            Ok::<_, ToolError>((path, replaces))
        })
        .await??;
        let what = if replaces { "replacing the file there" } else { "a new file" };
        Ok(Review::summary(format!("download_to_repo: {} → {}", args.url, path.display()))
            .with_details(format!("GET {}\nwrites {} ({what})", args.url, path.display())))
    }

    async fn call(&self, ctx: Context, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let cap = self.config.download_max_bytes;
        let max_bytes = match args.max_bytes {
            Some(0) => {
                return Err(ToolError::model(
                    "`max_bytes` must be at least 1; leave it out for the default of 20 MiB.",
                ));
            }
            Some(asked) if asked > cap => {
                return Err(ToolError::model(format!(
                    "`max_bytes` {asked} is over the {cap} bytes the user allows \
                     (web.download_max_bytes). Ask for at most {cap}, or ask the user to raise \
                     the setting."
                )));
            }
            Some(asked) => asked,
            None => DEFAULT_DOWNLOAD_BYTES.min(cap),
        };
        let (ws, path, extension) = {
            let ctx = ctx.clone();
            let args_path = args.path.clone();
            let overwrite = args.overwrite;
            blocking(move || target(&ctx, &args_path, overwrite)).await??
        };
        let request = Request::get(args.url.clone()).max_bytes(max_bytes);
        let fetched = self
            .guard
            .send(request, ctx.cancel_token())
            .await
            .map_err(|err| ToolError::model(format!("{err} Nothing was written.")))?;
        if !(200..300).contains(&fetched.status) {
            return Err(ToolError::model(format!(
                "{} answered with HTTP status {}; nothing was written. Check the URL.",
                fetched.final_url, fetched.status
            )));
        }
        let kind = content::check(&extension, &fetched.body).map_err(|why| {
            ToolError::model(format!(
                "{} does not hold what its name says: {why}. Nothing was written. Give the path \
                 the extension of what the URL serves, or use another URL.",
                path.display()
            ))
        })?;
        let body = fetched.body;
        let final_url = fetched.final_url;
        let (existed, body) = {
            let ctx = ctx.clone();
            let ws = ws.clone();
            let path = path.clone();
            let overwrite = args.overwrite;
            blocking(move || write(&ctx, &ws, &path, overwrite, body)).await??
        };
        let size = imagesize::blob_size(&body).ok().filter(|_| kind.image);
        let result = DownloadResult {
            action: if existed { "replaced" } else { "created" }.to_owned(),
            path: path.display(),
            bytes: body.len() as u64,
            mime_type: kind.mime.clone(),
            sha256: hex::encode(Sha256::digest(&body)),
            final_url,
            width: size.map(|s| s.width as u64),
            height: size.map(|s| s.height as u64),
        };
        let mut text = format!(
            "{} {} ({}, {} bytes, sha256 {}) from {}",
            if existed { "Replaced" } else { "Downloaded" },
            result.path,
            result.mime_type,
            result.bytes,
            result.sha256,
            result.final_url
        );
        if let (Some(w), Some(h)) = (result.width, result.height) {
            text.push_str(&format!("; image {w}×{h} px"));
        }
        let structured = serde_json::to_value(&result)
            .map_err(|err| ToolError::Fatal(format!("a result did not serialize: {err}")))?;
        let mut output = ToolOutput::text(text).with_structured(structured);
        if kind.showable_image && body.len() <= SHOW_IMAGE_BYTES {
            output.content.push(Content::Image { data: body, mime_type: kind.mime });
        }
        Ok(output)
    }
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ToolError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|err| ToolError::Fatal(format!("download_to_repo task failed: {err}")))
}

/// The target: resolved inside the project, writable as write_file's are, not an existing file
/// unless `overwrite`, with an extension to check the content against.
fn target(
    ctx: &Context,
    raw: &str,
    overwrite: bool,
) -> Result<(Workspace, RelPath, String), ToolError> {
    let ws = Workspace::of(ctx)?;
    let path = ws.resolve("path", raw)?;
    atomic::check_writable(&ws, &path, &FsConfig::default(), "download to")?;
    let extension = path
        .as_path()
        .extension()
        .map(|e| e.to_string_lossy().into_owned())
        .filter(|e| !e.is_empty())
        .ok_or_else(|| {
            ToolError::model(format!(
                "`path` {} has no extension; give one that says what the file is (`.png`, \
                 `.json`, `.woff2`, …) so its content can be checked.",
                path.display()
            ))
        })?;
    if !overwrite && exists(&ws, &path)? {
        return Err(exists_error(&path));
    }
    Ok((ws, path, extension))
}

/// Whether anything (a file, a folder, a symlink) is at `path`; also image_gen's check.
pub(crate) fn exists(ws: &Workspace, path: &RelPath) -> Result<bool, ToolError> {
    match ws.dir().symlink_metadata(path.for_open()) {
        Ok(_) => Ok(true),
        Err(err)
            if matches!(err.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) =>
        {
            Ok(false)
        }
        Err(err) => Err(ws.io_error("written", path, &err)),
    }
}

fn exists_error(path: &RelPath) -> ToolError {
    ToolError::model(format!(
        "{} already exists; nothing was downloaded. Pass `\"overwrite\": true` to replace it, or \
         choose another path.",
        path.display()
    ))
}

/// Write `body` to `path` atomically; returns whether a file was there before, and the body.
fn write(
    ctx: &Context,
    ws: &Workspace,
    path: &RelPath,
    overwrite: bool,
    body: Vec<u8>,
) -> Result<(bool, Vec<u8>), ToolError> {
    // Checked again: the download took a while, and the tree may have changed meanwhile.
    atomic::check_writable(ws, path, &FsConfig::default(), "download to")?;
    let existed = exists(ws, path)?;
    if existed && !overwrite {
        return Err(exists_error(path));
    }
    atomic::write(ws, path, &body, ctx.cancel_token())
        .map_err(|err| atomic::write_error(ws, "download_to_repo", path, &err))?;
    Ok((existed, body))
}

#[cfg(test)]
mod tests {
    use hands_core::{CoreConfig, Mode, Registry};

    use super::*;

    fn registry() -> Registry {
        let guard = Guard::new(&hands_net::NetConfig::default()).unwrap();
        crate::register(Registry::builder(CoreConfig::default()), &guard, &WebConfig::default())
            .build()
    }

    #[test]
    fn spec_snapshot() {
        let registry = registry();
        let spec =
            registry.list(Mode::Build).into_iter().find(|s| s.name == "download_to_repo").unwrap();
        assert!(registry.list(Mode::Plan).iter().all(|s| s.name != "download_to_repo"));
        insta::assert_snapshot!("description", spec.description);
        insta::assert_json_snapshot!(
            "schemas",
            serde_json::json!({"input": spec.input_schema, "output": spec.output_schema,
                "annotations": spec.annotations})
        );
    }
}
