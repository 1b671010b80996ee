//! The bearer token `hands serve` requires when none is configured: made at first start from 32
//! random bytes, kept in `server-token` (0600) in the state folder (0700), and read again on every
//! later start, so a client set up once keeps working across restarts.
//!
//! The token itself is never printed: hands' stderr often ends up in a log another user can read
//! (a service manager's journal, a CI log), while the file is readable by its owner only. The
//! hint says where the file is and how to send it.

use std::io::{Read as _, Write as _};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

/// Name of the token file in the state folder.
pub const TOKEN_FILE: &str = "server-token";

/// hands' state folder: `$HANDS_STATE_DIR`, else `$XDG_STATE_HOME/hands` (absolute only, as the
/// XDG spec says), else `~/.local/state/hands`; `None` without any of them.
pub fn state_dir() -> Option<PathBuf> {
    hands_dirs::state_dir()
}

/// Why the generated token could not be kept.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// Neither `HANDS_STATE_DIR`, `XDG_STATE_HOME` nor `HOME` is set.
    #[error(
        "no bearer token is configured and there is no state folder to keep a generated one in: \
         pass --token, set HANDS_SERVER__TOKEN, or set HOME or HANDS_STATE_DIR"
    )]
    NoStateDir,
    /// The folder or the file could not be made, read or written.
    #[error(
        "cannot keep the generated bearer token in {path}: {source}; make that folder writable \
         by this user, set HANDS_STATE_DIR to another folder, or pass --token"
    )]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file exists but is not a regular file (a FIFO would hang the read).
    #[error(
        "{0} is not a regular file: remove it (hands writes a new token there) or pass --token"
    )]
    NotAFile(PathBuf),
}

/// A token read from or written to the state folder.
#[derive(Debug, Clone)]
pub struct StoredToken {
    /// The token.
    pub value: String,
    /// The file it is kept in.
    pub path: PathBuf,
    /// Whether it was made by this call (first start) rather than read.
    pub created: bool,
}

/// The token in `dir/server-token`, made (0600, in `dir` 0700) when missing or empty.
pub fn load_or_create(dir: &Path) -> Result<StoredToken, TokenError> {
    private_dir(dir)?;
    let path = dir.join(TOKEN_FILE);
    let io = |source| TokenError::Io { path: path.clone(), source };
    match std::fs::symlink_metadata(&path) {
        Ok(meta) if !meta.file_type().is_file() => return Err(TokenError::NotAFile(path)),
        Ok(meta) => {
            if meta.permissions().mode() & 0o077 != 0 {
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
                    .map_err(io)?;
            }
            let mut text = String::new();
            std::fs::File::open(&path).and_then(|mut f| f.read_to_string(&mut text)).map_err(io)?;
            let value = text.trim().to_owned();
            if !value.is_empty() {
                return Ok(StoredToken { value, path, created: false });
            }
            std::fs::remove_file(&path).map_err(io)?;
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => return Err(io(err)),
    }
    let value =
        random_token().map_err(|source| TokenError::Io { path: "/dev/urandom".into(), source })?;
    let mut file = hands_dirs::create_private_file(&path).map_err(io)?;
    file.write_all(format!("{value}\n").as_bytes()).map_err(io)?;
    file.sync_all().map_err(io)?;
    Ok(StoredToken { value, path, created: true })
}

/// Make `dir` (and its parents) and set it to 0700.
pub fn private_dir(dir: &Path) -> Result<(), TokenError> {
    let io = |source| TokenError::Io { path: dir.to_path_buf(), source };
    hands_dirs::private_dir(dir).map_err(io)
}

/// 32 random bytes from the kernel's CSPRNG, as 64 hex digits (the sign-in codes use it too).
pub fn random_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The lines `hands serve` prints to stderr about a token it keeps in a file: where it is and how
/// to send it, never the token itself.
pub fn usage_hint(stored: &StoredToken, base_url: &str) -> String {
    let path = stored.path.display();
    let made = if stored.created {
        "made a bearer token and stored it"
    } else {
        "using the bearer token stored"
    };
    format!(
        "hands: no token configured: {made} in {path} (readable by this user only); every request \
         to /mcp, /v1 and /vibe needs the header \"Authorization: Bearer <that token>\", e.g.\n  \
         curl -H \"Authorization: Bearer $(cat '{path}')\" {base_url}/v1/sessions"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_made_once_private_and_reused() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state/hands");
        let first = load_or_create(&dir).unwrap();
        assert!(first.created);
        assert_eq!(first.value.len(), 64);
        let mode = std::fs::metadata(&first.path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        let second = load_or_create(&dir).unwrap();
        assert!(!second.created);
        assert_eq!(second.value, first.value);
        let hint = usage_hint(&second, "http://127.0.0.1:1");
        assert!(!hint.contains(&first.value), "the hint never shows the token");
        assert!(hint.contains(&first.path.display().to_string()));
    }

    #[test]
    fn a_loose_file_is_tightened_and_an_empty_one_replaced() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(TOKEN_FILE);
        std::fs::write(&path, "  \n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let made = load_or_create(tmp.path()).unwrap();
        assert!(made.created && !made.value.is_empty());
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    }
}
