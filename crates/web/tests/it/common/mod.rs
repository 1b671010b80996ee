//! What the web tools' black-box tests share: a secret store in memory, and a fixture HTTP server
//! on a loopback address that records each request and answers as the handler says (the
//! documented API of a provider, or the pages of a fixture site).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hands_core::secret::{SecretError, SecretScope, SecretStore, SecretValue, StoredSecret};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// The user's secret store, in memory; `hosts` are the hosts secrets were stored for.
#[derive(Default)]
pub struct MemoryStore {
    values: Mutex<BTreeMap<(PathBuf, String), SecretValue>>,
    hosts: Mutex<BTreeMap<String, String>>,
}

impl MemoryStore {
    /// Record `host` as the only one `name` may be sent to.
    pub fn bind(&self, name: &str, host: &str) {
        self.hosts.lock().unwrap().insert(name.to_owned(), host.to_owned());
    }
}

impl SecretStore for MemoryStore {
    fn put(
        &self,
        root: &Path,
        name: &str,
        value: &SecretValue,
    ) -> Result<StoredSecret, SecretError> {
        self.values.lock().unwrap().insert((root.to_path_buf(), name.to_owned()), value.clone());
        Ok(StoredSecret {
            name: name.to_owned(),
            scope: SecretScope::Project(root.display().to_string()),
            hint: "x…x".into(),
        })
    }
    fn get(&self, root: &Path, name: &str) -> Option<SecretValue> {
        self.values.lock().unwrap().get(&(root.to_path_buf(), name.to_owned())).cloned()
    }
    fn list(&self, root: &Path) -> Vec<StoredSecret> {
        let names: Vec<String> = self
            .values
            .lock()
            .unwrap()
            .keys()
            .filter(|(r, _)| r == root)
            .map(|(_, n)| n.clone())
            .collect();
        names
            .into_iter()
            .map(|name| StoredSecret {
                name,
                scope: SecretScope::Project(root.display().to_string()),
                hint: "x…x".into(),
            })
            .collect()
    }
    fn delete(&self, root: &Path, name: &str) -> Result<bool, SecretError> {
        Ok(self.values.lock().unwrap().remove(&(root.to_path_buf(), name.to_owned())).is_some())
    }
    fn host(&self, _root: &Path, name: &str) -> Option<String> {
        self.hosts.lock().unwrap().get(name).cloned()
    }
}

/// Conditions that see the names `store` grants `root`, and no environment: a tool offered "when
/// its key exists" comes and goes with the store.
pub fn conditions_of(
    store: &Arc<MemoryStore>,
    root: &Path,
) -> impl Fn() -> hands_core::Conditions + Send + Sync + 'static {
    let store = Arc::clone(store);
    let root = root.to_path_buf();
    move || hands_core::Conditions {
        config: serde_json::Value::Null,
        env: BTreeMap::new(),
        secrets: store.list(&root).into_iter().map(|s| s.name).collect(),
        project: None,
    }
}

/// One request as the fake saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    /// The request line and headers.
    pub head: String,
    /// The body, as text.
    pub body: String,
}

impl Seen {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            l.split_once(':')
                .filter(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.trim().to_owned())
        })
    }

    /// The method and path of the request line (`POST /v2/scrape`).
    pub fn line(&self) -> String {
        let first = self.head.lines().next().unwrap_or_default();
        first.rsplit_once(' ').map_or(first, |(l, _)| l).to_owned()
    }

    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap()
    }
}

/// An answer: status line, headers, body; `hang` keeps the connection open without a byte.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub hang: bool,
}

impl Reply {
    /// `status` (`"200 OK"`) with `body`, served as `content_type`.
    pub fn new(status: &str, content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        Self {
            status: status.to_owned(),
            headers: vec![("content-type".into(), content_type.into())],
            body: body.into(),
            hang: false,
        }
    }

    /// A JSON answer.
    pub fn json(status: &str, body: &serde_json::Value) -> Self {
        Self::new(status, "application/json", body.to_string())
    }

    /// With the header `name: value`.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// A connection that never answers.
    pub fn hang() -> Self {
        Self { hang: true, ..Self::new("200 OK", "text/plain", "") }
    }
}

/// The answers, in order (the last one repeats): status line, extra header lines, JSON body.
pub type Script = Vec<(&'static str, &'static str, String)>;

type Handler = Arc<dyn Fn(&Seen, usize) -> Reply + Send + Sync>;

/// A fixture server.
pub struct Fake {
    /// `http://ADDR:PORT`.
    pub url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Fake {
    /// A fake on 127.0.0.1 that answers `script` in order.
    pub async fn start(script: Script) -> Self {
        Self::serve(move |_, n| {
            let (status, extra, body) = &script[n.min(script.len() - 1)];
            let mut reply = Reply::new(status, "application/json", body.clone());
            for line in extra.split("\r\n").filter(|l| !l.is_empty()) {
                let (k, v) = line.split_once(':').unwrap();
                reply = reply.header(k.trim(), v.trim());
            }
            reply
        })
        .await
    }

    /// A fake on 127.0.0.1 whose `handler` answers the `n`th request.
    pub async fn serve(handler: impl Fn(&Seen, usize) -> Reply + Send + Sync + 'static) -> Self {
        Self::serve_on("127.0.0.1", handler).await
    }

    /// A fake on the loopback address `ip`.
    pub async fn serve_on(
        ip: &str,
        handler: impl Fn(&Seen, usize) -> Reply + Send + Sync + 'static,
    ) -> Self {
        let listener = tokio::net::TcpListener::bind((ip, 0)).await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        let handler: Handler = Arc::new(handler);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(answer(stream, Arc::clone(&log), Arc::clone(&handler)));
            }
        });
        Self { url, seen }
    }

    /// Every request so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

async fn answer(mut stream: tokio::net::TcpStream, log: Arc<Mutex<Vec<Seen>>>, handler: Handler) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let (head, body) = loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            let len: usize = head
                .lines()
                .find_map(|l| {
                    l.split_once(':')
                        .filter(|(k, _)| k.eq_ignore_ascii_case("content-length"))
                        .and_then(|(_, v)| v.trim().parse().ok())
                })
                .unwrap_or(0);
            if buf.len() >= end + 4 + len {
                let body = String::from_utf8_lossy(&buf[end + 4..end + 4 + len]).into_owned();
                break (head, body);
            }
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
        if buf.len() > 1 << 20 {
            return;
        }
    };
    let (seen, n) = {
        let mut log = log.lock().unwrap();
        log.push(Seen { head, body });
        (log[log.len() - 1].clone(), log.len() - 1)
    };
    let reply = handler(&seen, n);
    if reply.hang {
        tokio::time::sleep(Duration::from_secs(30)).await;
        return;
    }
    let mut head = format!("HTTP/1.1 {}\r\n", reply.status);
    for (k, v) in &reply.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!("content-length: {}\r\nconnection: close\r\n\r\n", reply.body.len()));
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(&reply.body).await;
    let _ = stream.shutdown().await;
}

/// A guard that lets the tests reach 127.0.0.1 (and only it), with a short read timeout.
pub fn guard(read_timeout_ms: u64) -> hands_net::Guard {
    let net = hands_net::NetConfig {
        allow_hosts: vec!["127.0.0.1".into()],
        read_timeout_ms,
        ..Default::default()
    };
    hands_net::Guard::new(&net).unwrap()
}

/// A 4×3 PNG, made here (zlib stored blocks, real CRCs) so that its dimensions can be read.
pub fn png(width: u32, height: u32) -> Vec<u8> {
    fn crc(data: &[u8]) -> u32 {
        let mut c = 0xFFFF_FFFFu32;
        for &b in data {
            c ^= u32::from(b);
            for _ in 0..8 {
                c = if c & 1 == 1 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 };
            }
        }
        !c
    }
    fn chunk(out: &mut Vec<u8>, kind: &[u8], data: &[u8]) {
        out.extend_from_slice(&(data.len() as u32).to_be_bytes());
        let mut body = kind.to_vec();
        body.extend_from_slice(data);
        out.extend_from_slice(&body);
        out.extend_from_slice(&crc(&body).to_be_bytes());
    }
    let row: Vec<u8> = std::iter::once(0u8)
        .chain(std::iter::repeat_n([200u8, 30, 30], width as usize).flatten())
        .collect();
    let raw = row.repeat(height as usize);
    let mut z = vec![0x78, 0x01];
    let len = raw.len() as u16;
    z.push(1);
    z.extend_from_slice(&len.to_le_bytes());
    z.extend_from_slice(&(!len).to_le_bytes());
    z.extend_from_slice(&raw);
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in &raw {
        a = (a + u32::from(byte)) % 65521;
        b = (b + a) % 65521;
    }
    z.extend_from_slice(&((b << 16) | a).to_be_bytes());
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&width.to_be_bytes());
    ihdr.extend_from_slice(&height.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    chunk(&mut out, b"IHDR", &ihdr);
    chunk(&mut out, b"IDAT", &z);
    chunk(&mut out, b"IEND", &[]);
    out
}

/// A JPEG's frame header for `width`×`height` (enough for its type and dimensions).
pub fn jpeg(width: u16, height: u16) -> Vec<u8> {
    let mut out = vec![0xFF, 0xD8, 0xFF, 0xE0, 0, 16];
    out.extend_from_slice(b"JFIF\0\x01\x01\0\0\x01\0\x01\0\0");
    out.extend_from_slice(&[0xFF, 0xC0, 0, 11, 8]);
    out.extend_from_slice(&height.to_be_bytes());
    out.extend_from_slice(&width.to_be_bytes());
    out.extend_from_slice(&[1, 1, 0x11, 0, 0xFF, 0xD9]);
    out
}
