//! The database and its companions (`-wal`, `-shm`, `-journal`) are private to their owner: the
//! file is made 0600 before SQLite opens it (SQLite creates its companions with the database's
//! mode), an existing one is tightened to 0600, and the folder hands makes for it is 0700 (a
//! folder named `hands`, hands' own data folder, is tightened too; a folder of the user's own
//! choosing is left as it is).

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use crate::StoreError;

/// Files SQLite keeps beside the database.
const COMPANIONS: [&str; 3] = ["-wal", "-shm", "-journal"];

/// Make `path`'s folder (0700) and the file itself (0600, empty) if missing; tighten an existing
/// file, its companions and a `hands` folder to 0600/0700.
pub(super) fn prepare(path: &Path) -> Result<(), StoreError> {
    let fail = |what: &Path, e: std::io::Error| {
        StoreError::Backend(format!(
            "cannot make {} private to this user: {e}; check its owner and permissions or set \
             [store] path to a folder of your own",
            what.display()
        ))
    };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        let existed = parent.is_dir();
        hands_dirs::create_private_dir_all(parent).map_err(|e| fail(parent, e))?;
        if !existed || parent.file_name().is_some_and(|n| n == "hands") {
            tighten(parent, 0o700).map_err(|e| fail(parent, e))?;
        }
    }
    match std::fs::symlink_metadata(path) {
        Ok(_) => tighten(path, 0o600).map_err(|e| fail(path, e))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            hands_dirs::private_options().open(path).map_err(|e| fail(path, e))?;
        }
        Err(e) => return Err(fail(path, e)),
    }
    for suffix in COMPANIONS {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        let companion = Path::new(&name);
        if companion.exists() {
            tighten(companion, 0o600).map_err(|e| fail(companion, e))?;
        }
    }
    Ok(())
}

/// Clear the group and other bits of `path` (a regular file or folder, not followed if a link)
/// down to `mode`.
fn tighten(path: &Path, mode: u32) -> std::io::Result<()> {
    let meta = std::fs::symlink_metadata(path)?;
    if meta.file_type().is_symlink() {
        return Ok(());
    }
    if meta.permissions().mode() & 0o077 != 0 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
    }
    Ok(())
}
