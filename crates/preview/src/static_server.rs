//! The built-in static server: serves one folder of the project on 127.0.0.1, for static sites and
//! built output. Files are opened through a handle on that folder (cap-std), so no request path —
//! `..`, an absolute path, a symlink out — reaches outside it. Responses say `no-store`, so that a
//! reload after a rebuild always sees the new files. It runs as a task of the hands process and
//! stops with its token.
//!
//! The folder itself is opened beneath the project root ([`open_beneath`]): a `static_dir` that is
//! absolute, has `..`, reaches out through a symlink, or is (or lies in) a hidden folder such as
//! `.hands` or `.git` is refused. What is served is checked where it really is, after it is
//! opened: a symlink inside the project (`public/h -> ../.hands`, `public/e -> ../.env`) cannot
//! serve a hidden file or key file that the request's own path would not reach. A request whose `Host` is not
//! loopback (`127.0.0.1`, `localhost`, `[::1]`, any port) or the configured URL's host gets 403,
//! so a web page cannot read the project through a DNS-rebound name.

use std::net::SocketAddr;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::{Method, Request, Response, StatusCode, header};
use cap_std::ambient_authority;
use cap_std::fs::Dir;
use tokio_util::sync::CancellationToken;

/// A running static server.
#[derive(Debug)]
pub struct StaticServer {
    /// Where it listens.
    pub addr: SocketAddr,
    stop: CancellationToken,
}

/// What the handler reads: the folder and the Hosts it answers.
struct Served {
    folder: Dir,
    /// Where the folder really is (its handle's path): what a request opens must lie below it
    /// with no hidden part on the way.
    real: PathBuf,
    /// Lower-case host names accepted besides the loopback ones.
    hosts: Vec<String>,
}

/// Open `rel` (the `static_dir` setting, or what detection chose) beneath `root`. `Err` says
/// what to change: an absolute path or `..` is refused before anything is opened, and cap-std
/// refuses a symlink that leads out of `root`.
pub fn open_beneath(root: &Path, rel: &Path) -> Result<Dir, String> {
    if rel.is_absolute() {
        return Err(format!(
            "preview.static_dir {:?} is an absolute path: set it relative to the project root \
             (e.g. \"dist\"); the static server only serves folders of the project",
            rel.display().to_string()
        ));
    }
    if rel.components().any(|c| c == Component::ParentDir) {
        return Err(format!(
            "preview.static_dir {:?} has `..`: set a folder inside the project root (e.g. \
             \"dist\")",
            rel.display().to_string()
        ));
    }
    let hidden = |c: Component<'_>| matches!(c, Component::Normal(n) if n.as_encoded_bytes().starts_with(b"."));
    if rel.components().any(hidden) {
        return Err(hidden_dir(rel));
    }
    let root_dir = Dir::open_ambient_dir(root, ambient_authority())
        .map_err(|err| format!("cannot open the project root {}: {err}", root.display()))?;
    if rel.as_os_str().is_empty() || rel == Path::new(".") {
        return Ok(root_dir);
    }
    let folder = root_dir.open_dir(rel).map_err(|err| {
        if err.kind() == std::io::ErrorKind::NotFound {
            format!(
                "The folder to serve, {}, does not exist. Set preview.static_dir to the folder \
                 that holds index.html.",
                rel.display()
            )
        } else {
            format!(
                "The folder to serve, {}, cannot be opened inside the project ({err}); a symlink \
                 out of the project is not followed. Set preview.static_dir to a folder of the \
                 project.",
                rel.display()
            )
        }
    })?;
    // A symlink inside the project may lead into one of its hidden folders.
    let real_root = std::fs::canonicalize(root)
        .map_err(|err| format!("cannot open the project root {}: {err}", root.display()))?;
    match real_path(&folder).as_deref().map(|real| real.strip_prefix(&real_root)) {
        Some(Ok(below)) if !below.components().any(hidden) => Ok(folder),
        _ => Err(hidden_dir(rel)),
    }
}

fn hidden_dir(rel: &Path) -> String {
    format!(
        "preview.static_dir {:?} is or leads into a hidden folder (such as .hands or .git), whose \
         files are never served: set the folder that holds index.html (e.g. \"dist\")",
        rel.display().to_string()
    )
}

/// Where an open file or folder really is, from its descriptor.
fn real_path(handle: &impl std::os::fd::AsRawFd) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/self/fd/{}", handle.as_raw_fd())).ok()
}

impl StaticServer {
    /// Serve `folder` on `127.0.0.1:port` (0: a free port), to requests whose Host is loopback or
    /// `url_host` (the configured URL's host). Fails when the port is taken.
    pub async fn start(folder: Dir, port: u16, url_host: Option<&str>) -> std::io::Result<Self> {
        let hosts = url_host.map(|h| h.trim_matches(['[', ']']).to_ascii_lowercase()).into_iter();
        let real = real_path(&folder).ok_or_else(|| {
            std::io::Error::other("the folder to serve has no path (/proc is not mounted)")
        })?;
        let served = Arc::new(Served { folder, real, hosts: hosts.collect() });
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        let addr = listener.local_addr()?;
        let stop = CancellationToken::new();
        let app = axum::Router::new().fallback(serve).with_state(served);
        let shutdown = stop.clone();
        tokio::spawn(async move {
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(async move { shutdown.cancelled().await })
                .await;
            if let Err(err) = served {
                tracing::warn!(%err, "the preview's static server stopped");
            }
        });
        Ok(Self { addr, stop })
    }

    /// Stop serving.
    pub fn stop(&self) {
        self.stop.cancel();
    }

    /// True until stopped.
    pub fn is_running(&self) -> bool {
        !self.stop.is_cancelled()
    }
}

impl Drop for StaticServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn serve(State(served): State<Arc<Served>>, request: Request<Body>) -> Response<Body> {
    let mut hosts = request.headers().get_all(header::HOST).iter();
    let host = hosts.next().and_then(|h| h.to_str().ok());
    if hosts.next().is_some() || !host.is_some_and(|h| host_allowed(h, &served.hosts)) {
        return plain(
            StatusCode::FORBIDDEN,
            "this Host is not served: open the preview at 127.0.0.1, localhost or the configured \
             preview.url",
        );
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return plain(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD");
    }
    let head = request.method() == Method::HEAD;
    let Some(rel) = relative_path(request.uri().path()) else {
        return plain(StatusCode::BAD_REQUEST, "bad path");
    };
    // Anyone on this machine can reach a loopback port: hidden files and folders (`.env`,
    // `.git/`, `.hands/`) and key files are never served, only what a site is made of.
    if !servable(&rel) {
        return plain(StatusCode::NOT_FOUND, "Not found");
    }
    let found = tokio::task::spawn_blocking(move || read(&served, &rel)).await;
    match found {
        Ok(Some((bytes, mime))) => {
            let len = bytes.len();
            let body = if head { Body::empty() } else { Body::from(bytes) };
            Response::builder()
                .header(header::CONTENT_TYPE, mime)
                .header(header::CONTENT_LENGTH, len)
                .header(header::CACHE_CONTROL, "no-store")
                .body(body)
                .unwrap_or_else(|_| plain(StatusCode::INTERNAL_SERVER_ERROR, "response"))
        }
        Ok(None) => plain(StatusCode::NOT_FOUND, "Not found"),
        Err(_) => plain(StatusCode::INTERNAL_SERVER_ERROR, "read failed"),
    }
}

/// Whether `authority` (`host[:port]`, `[v6][:port]`) names a loopback host or one of `hosts`.
fn host_allowed(authority: &str, hosts: &[String]) -> bool {
    let authority = authority.trim().to_ascii_lowercase();
    let host = match authority.strip_prefix('[') {
        Some(rest) => match rest.split_once(']') {
            Some((v6, after)) if after.is_empty() || is_port(after.trim_start_matches(':')) => v6,
            _ => return false,
        },
        None => match authority.split_once(':') {
            Some((host, port)) if is_port(port) => host,
            Some(_) => return false,
            None => authority.as_str(),
        },
    };
    !host.is_empty()
        && (matches!(host, "127.0.0.1" | "localhost" | "::1") || hosts.iter().any(|h| h == host))
}

fn is_port(port: &str) -> bool {
    !port.is_empty() && port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit())
}

/// The file for `rel` (a folder's `index.html`), with its content type; `None` also for a file
/// that is really (through a symlink) hidden, a key file, or not below the served folder.
fn read(served: &Served, rel: &str) -> Option<(Vec<u8>, &'static str)> {
    use std::io::Read as _;
    let folder = &served.folder;
    let mut path = rel.to_owned();
    let is_dir = path.is_empty() || folder.metadata(&path).is_ok_and(|m| m.is_dir());
    if is_dir {
        path = if path.is_empty() { "index.html".into() } else { format!("{path}/index.html") };
    }
    let mut file = folder.open(&path).ok()?;
    // Checked on the open file, so a symlink swapped after the check changes nothing.
    let real = real_path(&file)?;
    let below = real.strip_prefix(&served.real).ok()?.to_str()?;
    if !servable(below) || !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).ok()?;
    Some((bytes, content_type(&path)))
}

/// False for a path with a hidden segment (but `.well-known`) or a key file's name (`*.pem`,
/// `*.key`, `id_rsa`, …).
fn servable(rel: &str) -> bool {
    rel.split('/').all(|part| {
        let lower = part.to_ascii_lowercase();
        (!part.starts_with('.') || part == ".well-known")
            && !lower.ends_with(".pem")
            && !lower.ends_with(".key")
            && !lower.ends_with(".p12")
            && !lower.ends_with(".pfx")
            && !lower.starts_with("id_rsa")
            && !lower.starts_with("id_ed25519")
            && !lower.starts_with("id_ecdsa")
    })
}

/// The request path as a relative path: percent-decoded, without empty or `.` segments; `None`
/// for `..`, NUL or invalid UTF-8.
fn relative_path(path: &str) -> Option<String> {
    let decoded = percent_decode(path)?;
    let mut parts = Vec::new();
    for part in decoded.split('/') {
        match part {
            "" | "." => {}
            ".." => return None,
            p if p.contains('\0') || p.contains('\\') => return None,
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn content_type(path: &str) -> &'static str {
    let ext = path.rsplit_once('.').map_or("", |(_, e)| e).to_ascii_lowercase();
    match ext.as_str() {
        "html" | "htm" => "text/html; charset=utf-8",
        "js" | "mjs" | "cjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" | "map" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "ico" => "image/x-icon",
        "wasm" => "application/wasm",
        "woff" => "font/woff",
        "woff2" => "font/woff2",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

fn plain(status: StatusCode, text: &'static str) -> Response<Body> {
    let mut response = Response::new(Body::from(text));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_paths_stay_inside() {
        assert_eq!(relative_path("/").as_deref(), Some(""));
        assert_eq!(relative_path("/a/./b.js").as_deref(), Some("a/b.js"));
        assert_eq!(relative_path("/a%20b.html").as_deref(), Some("a b.html"));
        assert_eq!(relative_path("/../etc/passwd"), None);
        assert_eq!(relative_path("/a/%2e%2e/%2e%2e/x"), None);
        assert_eq!(relative_path("/%zz"), None);
    }

    #[test]
    fn hosts_are_loopback_or_the_configured_one() {
        let hosts = vec!["app.test".to_owned()];
        for ok in ["127.0.0.1:5173", "localhost", "LOCALHOST:1", "[::1]:80", "app.test:5173"] {
            assert!(host_allowed(ok, &hosts), "{ok}");
        }
        for bad in ["attacker.example", "attacker.example:5173", "127.0.0.1.nip.io", "", "[::1]x"] {
            assert!(!host_allowed(bad, &hosts), "{bad}");
        }
    }

    #[test]
    fn static_dir_stays_beneath_the_root() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("dist")).unwrap();
        std::os::unix::fs::symlink("/etc", root.path().join("out")).unwrap();
        let err = open_beneath(root.path(), Path::new("/")).unwrap_err();
        assert!(err.contains("absolute"), "{err}");
        let err = open_beneath(root.path(), Path::new("../x")).unwrap_err();
        assert!(err.contains("`..`"), "{err}");
        let err = open_beneath(root.path(), Path::new("out")).unwrap_err();
        assert!(err.contains("symlink"), "{err}");
        assert!(open_beneath(root.path(), Path::new("dist")).is_ok());
        // Red-team round 4: `static_dir = ".hands"` served hands' devtools.json at /devtools.json.
        std::fs::create_dir(root.path().join(".hands")).unwrap();
        std::os::unix::fs::symlink(".hands", root.path().join("pub")).unwrap();
        for hidden in [".hands", "dist/../.hands", "pub", "./.git"] {
            let err = open_beneath(root.path(), Path::new(hidden)).unwrap_err();
            assert!(err.contains("hidden") || err.contains("`..`"), "{hidden}: {err}");
        }
        assert!(open_beneath(root.path(), Path::new("missing")).unwrap_err().contains("does not"));
    }

    #[tokio::test]
    async fn a_foreign_host_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("app.txt"), "canary").unwrap();
        let folder = open_beneath(dir.path(), Path::new(".")).unwrap();
        let server = StaticServer::start(folder, 0, Some("app.test")).await.unwrap();
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        for (host, want) in [
            ("Host: attacker.example", "HTTP/1.1 403"),
            ("Host: localhost\r\nHost: attacker.example", "HTTP/1.1 403"),
            ("Host: app.test", "HTTP/1.1 200"),
            ("Host: 127.0.0.1", "HTTP/1.1 200"),
        ] {
            let mut raw = tokio::net::TcpStream::connect(server.addr).await.unwrap();
            let request = format!("GET /app.txt HTTP/1.1\r\n{host}\r\nConnection: close\r\n\r\n");
            raw.write_all(request.as_bytes()).await.unwrap();
            let mut answer = String::new();
            raw.read_to_string(&mut answer).await.unwrap();
            assert!(answer.starts_with(want), "{host}: {answer}");
            assert_eq!(answer.contains("canary"), want.ends_with("200"), "{host}: {answer}");
        }
    }

    #[tokio::test]
    async fn serves_files_index_and_404_and_never_outside() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "secret").unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("index.html"), "<h1>home</h1>").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/app.js"), "x()").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.txt"), dir.path().join("leak.txt"))
            .unwrap();
        let folder = open_beneath(dir.path(), Path::new(".")).unwrap();
        let server = StaticServer::start(folder, 0, None).await.unwrap();
        let base = format!("http://{}", server.addr);
        let get = |path: &str| {
            let url = format!("{base}{path}");
            async move {
                let r = reqwest::get(url).await.unwrap();
                let status = r.status().as_u16();
                let ctype = r
                    .headers()
                    .get("content-type")
                    .map(|v| v.to_str().unwrap().to_owned())
                    .unwrap_or_default();
                (status, ctype, r.text().await.unwrap())
            }
        };
        let (status, ctype, body) = get("/").await;
        assert_eq!((status, body.as_str()), (200, "<h1>home</h1>"));
        assert!(ctype.starts_with("text/html"));
        let (status, ctype, _) = get("/sub/app.js").await;
        assert_eq!(status, 200);
        assert!(ctype.starts_with("text/javascript"));
        assert_eq!(get("/missing.png").await.0, 404);
        assert_eq!(get("/leak.txt").await.0, 404, "a symlink out is not followed");
        // Red-team round 3: another local user fetched `.env`, `.git/config` and a key file.
        std::fs::write(dir.path().join(".env"), "DB_PASSWORD=canary-dotenv").unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join(".git/config"), "url = https://u:canary@x").unwrap();
        std::fs::write(dir.path().join("deploy.pem"), "canary-pem").unwrap();
        std::fs::create_dir(dir.path().join(".well-known")).unwrap();
        std::fs::write(dir.path().join(".well-known/security.txt"), "contact").unwrap();
        for hidden in
            ["/.env", "/.git/config", "/deploy.pem", "/sub/../.env", "/%2eenv", "/DEPLOY.PEM"]
        {
            let (status, _, body) = get(hidden).await;
            assert!(status == 404 || status == 400, "{hidden}: {status}");
            assert!(!body.contains("canary"), "{hidden}: {body}");
        }
        assert_eq!(get("/.well-known/security.txt").await.0, 200);
        // Red-team round 4: symlinks inside the project to a hidden folder and to `.env` served
        // hands' devtools.json and the env file under names that look plain.
        std::fs::create_dir(dir.path().join(".hands")).unwrap();
        std::fs::write(dir.path().join(".hands/devtools.json"), "canary-devtools").unwrap();
        std::os::unix::fs::symlink(".hands", dir.path().join("h")).unwrap();
        std::os::unix::fs::symlink(".env", dir.path().join("e")).unwrap();
        std::os::unix::fs::symlink("deploy.pem", dir.path().join("cert.txt")).unwrap();
        std::os::unix::fs::symlink("sub/app.js", dir.path().join("alias.js")).unwrap();
        for hidden in ["/h/devtools.json", "/e", "/cert.txt", "/h/"] {
            let (status, _, body) = get(hidden).await;
            assert_eq!(status, 404, "{hidden}: {body}");
            assert!(!body.contains("canary"), "{hidden}: {body}");
        }
        assert_eq!(get("/alias.js").await.2, "x()", "a symlink to a plain file inside is served");
        // Sent raw: an HTTP client would resolve the dots itself.
        let mut raw = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        raw.write_all(
            b"GET /%2e%2e/secret.txt HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        )
        .await
        .unwrap();
        let mut answer = String::new();
        raw.read_to_string(&mut answer).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
        assert!(!answer.contains("secret"), "{answer}");
        assert!(server.addr.ip().is_loopback());
        // A taken port is an error.
        let folder = open_beneath(dir.path(), Path::new(".")).unwrap();
        let taken = StaticServer::start(folder, server.addr.port(), None).await.unwrap_err();
        assert_eq!(taken.kind(), std::io::ErrorKind::AddrInUse);
        server.stop();
    }
}
