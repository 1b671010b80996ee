//! Gathering a folder's tags: walk it as glob does (hands-fs), keep the files of a known language,
//! take each one's tags from the cache or read it through the root handle and parse it, on as
//! many threads as the machine has cores (at most 8), checking for cancellation between files.

use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use hands_core::{Context, ToolError};
use hands_fs::{FolderFile, FsConfig, Workspace};

use crate::cache;
use crate::lang::Lang;
use crate::tags::{self, FileTags};

/// Files walked at most; past it the map says to narrow `path`.
pub(crate) const MAX_FILES: usize = 50_000;
/// Source files larger than this are left out (generated or minified code, not the shape).
pub(crate) const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// One source file with its tags.
#[derive(Debug)]
pub(crate) struct Source {
    /// Its path from the root, as the model sees it.
    pub rel: String,
    pub lang: Lang,
    pub tags: Arc<FileTags>,
    /// Its content's key in the cache.
    pub key: cache::ContentKey,
}

/// What a walk gathered.
#[derive(Debug, Default)]
pub(crate) struct Collected {
    /// The source files, by path.
    pub sources: Vec<Source>,
    /// Files of no language the map reads.
    pub other_files: usize,
    /// Source files left out, with why.
    pub skipped: Vec<(String, String)>,
    /// Files beyond [`MAX_FILES`].
    pub more: usize,
    /// The walk's own note on ignore files it could not read.
    pub walk_skipped: Vec<String>,
    /// Files parsed in this call (the rest came from the cache).
    pub parsed: usize,
    /// The folder walked, as the model sees it.
    pub start: String,
}

/// One file's tags or why there are none, by its index in the list to read.
type Outcome = (usize, Result<(Arc<FileTags>, cache::ContentKey), String>);

/// The tags of every source file under `path`.
pub(crate) fn collect(
    ctx: &Context,
    config: &FsConfig,
    path: Option<&str>,
) -> Result<Collected, ToolError> {
    let found = hands_fs::folder_files(ctx, config, "path", path, MAX_FILES)?;
    let mut out = Collected {
        more: found.more,
        walk_skipped: found.skipped,
        start: found.start.display(),
        ..Collected::default()
    };
    let mut todo: Vec<(FolderFile, Lang)> = Vec::new();
    for file in found.files {
        match Lang::of(file.path.as_path()) {
            None => out.other_files += 1,
            Some(_) if file.len > MAX_FILE_BYTES => out
                .skipped
                .push((file.path.display(), format!("larger than {} KiB", MAX_FILE_BYTES / 1024))),
            Some(lang) => todo.push((file, lang)),
        }
    }
    let ws = &found.workspace;
    let next = AtomicUsize::new(0);
    let parsed = AtomicUsize::new(0);
    let threads = std::thread::available_parallelism().map_or(2, usize::from).clamp(1, 8);
    let results: Vec<Vec<Outcome>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads.min(todo.len().max(1)))
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        let Some((file, lang)) = todo.get(index) else { break };
                        if ctx.is_cancelled() {
                            break;
                        }
                        mine.push((index, tags_of(ws, file, *lang, &parsed)));
                    }
                    mine
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap_or_default()).collect()
    });
    if ctx.is_cancelled() {
        return Err(ToolError::model(
            "repo_map was stopped (timeout or abort) before it read every file. Map a smaller \
             folder with `path`.",
        ));
    }
    let mut by_index: Vec<Outcome> = results.into_iter().flatten().collect();
    by_index.sort_unstable_by_key(|(i, _)| *i);
    for (index, tags) in by_index {
        let (file, lang) = &todo[index];
        match tags {
            Ok((tags, key)) => {
                out.sources.push(Source { rel: file.path.display(), lang: *lang, tags, key });
            }
            Err(why) => out.skipped.push((file.path.display(), why)),
        }
    }
    out.parsed = parsed.into_inner();
    Ok(out)
}

/// The tags of one file: from the cache by size and time, else read and looked up by content,
/// else parsed (and counted in `parsed`).
fn tags_of(
    ws: &Workspace,
    file: &FolderFile,
    lang: Lang,
    parsed: &AtomicUsize,
) -> Result<(Arc<FileTags>, cache::ContentKey), String> {
    let absolute = ws.root().join(file.path.as_path());
    if let Some(found) = cache::by_stat(&absolute, file.len, file.modified) {
        return Ok(found);
    }
    let mut source = Vec::new();
    let handle = ws.open_read(&file.path).map_err(|e| format!("could not be read: {e}"))?;
    handle
        .take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut source)
        .map_err(|e| format!("could not be read: {e}"))?;
    if source.len() as u64 > MAX_FILE_BYTES {
        return Err(format!("larger than {} KiB", MAX_FILE_BYTES / 1024));
    }
    let key = cache::key(lang, &source);
    let tags = match cache::by_content(&key) {
        Some(tags) => tags,
        None => {
            parsed.fetch_add(1, Ordering::Relaxed);
            Arc::new(tags::extract(lang, &source).ok_or_else(|| "could not be parsed".to_owned())?)
        }
    };
    cache::store(absolute, source.len() as u64, file.modified, key, &tags);
    Ok((tags, key))
}
