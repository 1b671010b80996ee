//! Files changed: how a tool that wrote files hears what a watcher of the session has to say
//! about them (a language server's new type errors) without knowing who watches.
//!
//! Flow: a crate that watches (hands-code) adds a [`ChangeWatcher`] to the session; a tool that
//! wrote files awaits [`Session::files_changed`](crate::Session::files_changed) with the paths it
//! wrote and puts the notices it gets on its own result. Each watcher bounds its own wait (a short
//! budget, never the tool's limit); what comes later it queues with
//! [`Session::push_notice`](crate::Session::push_notice), so it rides on the next result.

use std::path::PathBuf;

use crate::{BoxFuture, Notice, Session};

/// Something that wants to hear of changed files and may answer with notices.
pub trait ChangeWatcher: Send + Sync + 'static {
    /// `paths` (absolute, under the session's root) were just written, created, moved or
    /// deleted. The answer must come within the watcher's own short budget.
    fn changed(&self, session: &Session, paths: &[PathBuf]) -> BoxFuture<'static, Vec<Notice>>;
}
