//! Changed since read: whether a file that edit_file or apply_patch is about to change was changed on
//! disk after this session last read or wrote it (a formatter, an editor's autosave, another
//! process). Such a file is judged by its content: the edit goes ahead only when what it replaces
//! still matches the current content exactly once, and the result says the file had changed; else
//! the refusal shows the lines that changed since the read (from the content the ledger kept).

use std::sync::Arc;

use hands_core::Context;

use crate::diff::unified_diff;
use crate::ledger::{Seen, content_hash};
use crate::{FsConfig, Ledger, RelPath};

/// A file that changed on disk since the session last saw it.
#[derive(Debug, Clone)]
pub(crate) struct Changed {
    /// The content the session last saw, when the ledger kept it.
    pub(crate) before: Option<Arc<[u8]>>,
}

impl Changed {
    /// The content last seen as text, without a BOM (lossy: it is only compared and shown).
    pub(crate) fn before_text(&self) -> Option<String> {
        let bytes = self.before.as_deref()?;
        let text = String::from_utf8_lossy(bytes);
        Some(text.strip_prefix('\u{FEFF}').unwrap_or(&text).to_owned())
    }
}

/// Whether `path`, whose current content is `bytes` (with metadata `meta`), changed since this
/// session last read or wrote it. `None` when it did not, when the session never saw it (nothing
/// to compare with), in a one-shot call, or with `fs.stale_write_guard` off.
pub(crate) fn changed_since_read(
    ctx: &Context,
    config: &FsConfig,
    path: &RelPath,
    meta: &cap_std::fs::Metadata,
    bytes: &[u8],
) -> Option<Changed> {
    if !config.stale_write_guard || ctx.session().is_one_shot() {
        return None;
    }
    let ledger = ctx.session().extension::<Ledger>();
    let seen = ledger.get(path)?;
    let now = Seen { size: bytes.len() as u64, ..Seen::new(meta, None) };
    seen.is_stale(&now, || Some(content_hash(bytes)))
        .then(|| Changed { before: ledger.content(path) })
}

/// The lines of `path` that changed between the session's read and `now` (the body without its
/// BOM), as a unified diff; or a sentence saying they cannot be shown.
pub(crate) fn changed_lines(path: &RelPath, changed: &Changed, now: &str) -> String {
    match changed.before_text() {
        Some(before) if before != now => unified_diff(path, &before, now),
        Some(_) => "(only the file's metadata or line endings differ from the read)\n".to_owned(),
        None => "(the file was too large for this session to keep what it read, so the changed \
                 lines cannot be shown)\n"
            .to_owned(),
    }
}
