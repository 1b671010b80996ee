//! read_file: a text file's lines numbered like `cat -n`, or an image as image content.
//!
//! Flow: open through the workspace handle, sniff the first 8 KiB (detect.rs) — images are served
//! whole up to their cap, other binaries refused with their size and type — then stream text lines
//! through a reader that keeps at most a few KiB of any line, so that even a 1 GB file paged with
//! offset/limit never sits in memory. Small files (up to `read_max_bytes`) are read whole, which also
//! gives the ledger a content hash for the stale-write guard.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::{self, BufRead, BufReader, Cursor, Read};

use hands_core::{Annotations, CancellationToken, Context, Tool, ToolError, ToolOutput};
use hands_core::{Family, Label, Policy};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::detect::{self, Kind};
use crate::ledger::{Seen, content_hash};
use crate::{FsConfig, Ledger, RelPath, Workspace};

/// Arguments of read_file.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFileArgs {
    /// Relative to the project root.
    pub path: String,
    /// First line, 1-based (default 1).
    #[serde(default)]
    pub offset: Option<u64>,
    /// Lines to return (default 2000).
    #[serde(default)]
    pub limit: Option<u64>,
}

/// The read_file tool.
#[derive(Debug, Clone)]
pub struct ReadFile {
    config: FsConfig,
    hints: Hints,
}

impl ReadFile {
    /// With `config`.
    pub fn new(config: FsConfig) -> Self {
        Self { config, hints: Hints::default() }
    }

    /// With `config`, pointing to the tools `hints` names.
    pub fn with_hints(config: FsConfig, hints: Hints) -> Self {
        Self { config, hints }
    }
}

/// Tools of other crates that read_file's description and messages may point to. hands-fs names
/// none itself: the binary, which registers them, says which exist.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hints {
    /// The tool that extracts a document's text (PDF, DOCX, PPTX, spreadsheets).
    pub documents: Option<&'static str>,
}

/// The sentence of read_file.md that the document hint replaces.
const PDF_BY_BASH: &str = "get a PDF's text with bash (`pdftotext FILE -`)";

/// Extensions of the documents the document tool reads, besides PDF (which is told by content).
const DOCUMENTS: &[&str] = &[".docx", ".pptx", ".xlsx", ".xlsm", ".xlsb", ".xls", ".ods"];

impl Tool for ReadFile {
    type Args = ReadFileArgs;

    fn name(&self) -> &'static str {
        "read_file"
    }

    fn description(&self) -> Cow<'static, str> {
        let text = include_str!("read_file.md");
        match self.hints.documents {
            Some(tool) => Cow::Owned(text.replace(
                PDF_BY_BASH,
                &format!("read documents (PDF, DOCX, PPTX, XLSX, …) with {tool}"),
            )),
            None => Cow::Borrowed(text),
        }
    }

    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY
    }

    fn policy(&self) -> Policy {
        Policy::from_annotations(self.annotations())
            .alias("read")
            .label(Label::Key { key: "path" })
            .family(Family::Files)
            .timeout_ms(30_000)
    }

    async fn call(&self, ctx: Context, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let ws = Workspace::of(&ctx)?;
        let path = ws.resolve("path", &args.path)?;
        let (file, meta) =
            ws.open_read_with_metadata(&path).map_err(|err| ws.io_error("read", &path, &err))?;
        // A small regular file is read right here: handing the work to the blocking pool and back
        // costs more than the read (measured: ~20 µs of a ~105 µs MCP round trip). Anything larger
        // goes to the blocking pool, so that a slow read never stalls the runtime.
        if meta.is_file() && meta.len() <= INLINE_MAX {
            return read(&ctx, &self.config, &self.hints, &args, &ws, &path, file, &meta);
        }
        let (config, hints) = (self.config.clone(), self.hints.clone());
        tokio::task::spawn_blocking(move || {
            read(&ctx, &config, &hints, &args, &ws, &path, file, &meta)
        })
        .await
        .map_err(|err| ToolError::Fatal(format!("read_file task failed: {err}")))?
    }
}

/// Files up to this size are read on the runtime thread.
const INLINE_MAX: u64 = 64 * 1024;

/// Read the opened `file` (its metadata `meta`) at `path` as `args` ask.
#[allow(clippy::too_many_arguments)]
fn read(
    ctx: &Context,
    config: &FsConfig,
    hints: &Hints,
    args: &ReadFileArgs,
    ws: &Workspace,
    path: &RelPath,
    mut file: cap_std::fs::File,
    meta: &cap_std::fs::Metadata,
) -> Result<ToolOutput, ToolError> {
    let io_err = |err: io::Error| ws.io_error("read", path, &err);
    if meta.is_dir() {
        return Err(ToolError::model(format!(
            "{} is a directory, not a file. Use list_files to see what it holds, or glob to find \
             files by name.",
            path.display()
        )));
    }
    let size = meta.len();
    // A regular file that read_file returns whole is read at once (its size is known: one read,
    // no second read to find the end); anything else is sniffed from its first bytes.
    let whole_read = meta.is_file() && size <= config.read_max_bytes;
    let head = if whole_read {
        read_known_size(&mut file, size, config.read_max_bytes).map_err(io_err)?
    } else {
        let mut head = Vec::with_capacity(detect::SNIFF_BYTES);
        file.by_ref().take(detect::SNIFF_BYTES as u64).read_to_end(&mut head).map_err(io_err)?;
        head
    };
    let ledger = ctx.session().extension::<Ledger>();
    match detect::sniff(&head) {
        Kind::Image(mime) => {
            if size > config.image_max_bytes {
                return Err(ToolError::model(format!(
                    "{} is a {mime} image of {}, over the {} read_file returns. Resize it first \
                     (for example with bash) if you need to see it.",
                    path.display(),
                    human_size(size),
                    human_size(config.image_max_bytes)
                )));
            }
            let mut bytes = head;
            file.take(config.image_max_bytes).read_to_end(&mut bytes).map_err(io_err)?;
            ledger.record(path, Seen::new(meta, Some(content_hash(&bytes))));
            return Ok(ToolOutput::image(bytes, mime));
        }
        kind if detect::has_image_extension(&path.display()) => {
            let looks = match kind {
                Kind::Binary(name) => name,
                _ => "text",
            };
            return Err(ToolError::model(format!(
                "{} is named like an image but its content is not a PNG, JPEG, GIF or WebP image \
                 (it looks like {looks}, {}). If it should be an image, it is broken: recreate or \
                 download it again. To see what it holds, run `file {0}` or `head -c 200 {0}` \
                 through bash.",
                path.display(),
                human_size(size)
            )));
        }
        Kind::Binary(name) => {
            let lower = path.display().to_ascii_lowercase();
            let document = name.starts_with("PDF")
                || (name.starts_with("ZIP") || name.contains("NUL"))
                    && DOCUMENTS.iter().any(|ext| lower.ends_with(ext));
            let hint = if let (true, Some(tool)) = (document, hints.documents) {
                format!(" Get its text with {tool} (path: {}).", path.display())
            } else if name.starts_with("PDF") {
                " Get its text with a command through bash, such as `pdftotext FILE -` (poppler's \
                 pdftotext, if installed)."
                    .to_owned()
            } else {
                " Inspect it with a suitable command through bash if you need its contents."
                    .to_owned()
            };
            return Err(ToolError::model(format!(
                "{} is a binary file ({name}, {}); read_file shows only text and images.{hint}",
                path.display(),
                human_size(size)
            )));
        }
        Kind::Text => {}
    }
    let whole = args.offset.is_none() && args.limit.is_none();
    if size > config.read_max_bytes && whole {
        return Err(ToolError::model(format!(
            "{} is {}, larger than the {} read_file returns at once. Pass offset and limit to read \
             part of it (e.g. offset=1, limit=500), or use grep to find the lines you need.",
            path.display(),
            human_size(size),
            human_size(config.read_max_bytes)
        )));
    }
    let window = Window::new(args, config)?;
    let output = if size <= config.read_max_bytes {
        let mut bytes = head;
        if !whole_read {
            file.take(config.read_max_bytes).read_to_end(&mut bytes).map_err(io_err)?;
        }
        let out = render(&mut &bytes[..], &window, config, ctx.cancel_token(), true);
        ledger.record_content(path, Seen::new(meta, Some(content_hash(&bytes))), &bytes);
        out
    } else {
        let mut reader = BufReader::with_capacity(64 * 1024, Cursor::new(head).chain(file));
        let out = render(&mut reader, &window, config, ctx.cancel_token(), false);
        ledger.record(path, Seen::new(meta, None));
        out
    }
    .map_err(io_err)?;
    finish(path, size, &window, output)
}

/// Read a regular file of `size` bytes (as its metadata said) whole, up to `max` bytes. One
/// `read` for a file that did not change: a regular file answers a read short only at its end,
/// so a short read is the end. A file that grew since its size was taken is read on to `max`.
fn read_known_size(file: &mut cap_std::fs::File, size: u64, max: u64) -> io::Result<Vec<u8>> {
    // One byte more than expected, to notice growth without another read.
    let want = usize::try_from(size.min(max) + 1).unwrap_or(usize::MAX);
    let mut bytes = vec![0; want];
    let mut filled = 0;
    while filled < want {
        match file.read(&mut bytes[filled..]) {
            Ok(0) => break,
            Ok(n) => {
                filled += n;
                if filled < want {
                    // Short: the end of a regular file.
                    break;
                }
            }
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
    bytes.truncate(filled);
    if filled == want && (filled as u64) < max {
        // It grew: read the rest the ordinary way.
        file.take(max - filled as u64).read_to_end(&mut bytes)?;
    }
    Ok(bytes)
}

/// Which lines to show.
struct Window {
    offset: u64,
    limit: u64,
}

impl Window {
    fn new(args: &ReadFileArgs, config: &FsConfig) -> Result<Self, ToolError> {
        let limit = args.limit.unwrap_or(config.read_limit as u64);
        if limit == 0 {
            return Err(ToolError::model(
                "`limit` must be at least 1 (it is a number of lines); leave it out for the default.",
            ));
        }
        Ok(Self { offset: args.offset.unwrap_or(1).max(1), limit })
    }
}

/// The lines shown and what is known of the rest.
struct Rendered {
    text: String,
    /// Lines read in all (the whole file when `counted`).
    lines: u64,
    shown: u64,
    /// True when every line was counted; false when the scan stopped after the window.
    counted: bool,
    lossy: bool,
}

fn render(
    reader: &mut impl BufRead,
    window: &Window,
    config: &FsConfig,
    cancel: &CancellationToken,
    count_rest: bool,
) -> io::Result<Rendered> {
    let keep = config.read_max_line_chars.saturating_mul(4).max(4);
    let mut out = Rendered { text: String::new(), lines: 0, shown: 0, counted: true, lossy: false };
    while let Some(raw) = next_line(reader, keep)? {
        out.lines += 1;
        if out.lines.is_multiple_of(65_536) && cancel.is_cancelled() {
            return Err(io::Error::new(io::ErrorKind::Interrupted, "cancelled"));
        }
        if out.lines < window.offset {
            continue;
        }
        if out.shown >= window.limit {
            if count_rest {
                continue;
            }
            out.counted = false;
            break;
        }
        let (line, lossy) = raw.text(config.read_max_line_chars);
        out.lossy |= lossy;
        if out.shown > 0 {
            out.text.push('\n');
        }
        // Straight into the result: no String per line.
        let _ = write!(out.text, "{:>6}\t", out.lines);
        out.text.push_str(&line);
        out.shown += 1;
    }
    Ok(out)
}

fn finish(
    path: &RelPath,
    size: u64,
    window: &Window,
    r: Rendered,
) -> Result<ToolOutput, ToolError> {
    if r.lines == 0 {
        return Ok(ToolOutput::text(format!("{} is empty (0 bytes).", path.display())));
    }
    if r.shown == 0 {
        return Err(ToolError::model(format!(
            "`offset` {} is past the end of {}, which has {} line{}. Use an offset between 1 and {}.",
            window.offset,
            path.display(),
            r.lines,
            if r.lines == 1 { "" } else { "s" },
            r.lines
        )));
    }
    let mut text = r.text;
    let next = window.offset + r.shown;
    if !r.counted {
        text.push_str(&format!(
            "\n\n… more lines follow (the file is {}); call again with offset={next}",
            human_size(size)
        ));
    } else if r.lines >= next {
        let more = r.lines - next + 1;
        text.push_str(&format!(
            "\n\n… {more} more line{}; call again with offset={next}",
            if more == 1 { "" } else { "s" }
        ));
    }
    if r.lossy {
        text.push_str(
            "\n\nNote: the file is not valid UTF-8; invalid bytes are shown as \u{FFFD}. Editing it \
             with edit_file is refused.",
        );
    }
    Ok(ToolOutput::text(text))
}

/// One line as read: at most `keep` bytes of it, and how many characters were dropped.
struct RawLine {
    bytes: Vec<u8>,
    dropped: usize,
}

impl RawLine {
    /// Decode (lossily) and cut to `max_chars`; the flag is true when bytes were invalid UTF-8.
    /// Borrowed from the line's bytes when they are valid UTF-8 and need no cut (the common case:
    /// no copy per line).
    fn text(&self, max_chars: usize) -> (Cow<'_, str>, bool) {
        let mut dropped = self.dropped;
        let mut text = String::from_utf8_lossy(&self.bytes);
        let lossy = matches!(text, Cow::Owned(_));
        if let Some((cut, _)) = text.char_indices().nth(max_chars) {
            dropped += text[cut..].chars().count();
            text.to_mut().truncate(cut);
        }
        if dropped > 0 {
            let _ = write!(text.to_mut(), " … [line truncated, {dropped} more chars]");
        }
        (text, lossy)
    }
}

/// Read one line (without its `\n` or `\r\n`), keeping at most `keep` bytes of it.
fn next_line(reader: &mut impl BufRead, keep: usize) -> io::Result<Option<RawLine>> {
    let mut bytes = Vec::new();
    let mut dropped = 0usize;
    let mut cut = false;
    let mut any = false;
    loop {
        let buf = match reader.fill_buf() {
            Ok(buf) => buf,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        if buf.is_empty() {
            break;
        }
        any = true;
        let (chunk, used, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], i + 1, true),
            None => (buf, buf.len(), false),
        };
        let take = chunk.len().min(keep.saturating_sub(bytes.len()));
        bytes.extend_from_slice(&chunk[..take]);
        cut |= take < chunk.len();
        dropped += chunk[take..].iter().filter(|&&b| b & 0xC0 != 0x80).count();
        reader.consume(used);
        if done {
            break;
        }
    }
    if !any {
        return Ok(None);
    }
    if cut {
        // A character cut in half at the keep limit counts as dropped, not as invalid UTF-8.
        if let Err(err) = std::str::from_utf8(&bytes)
            && err.error_len().is_none()
        {
            bytes.truncate(err.valid_up_to());
            dropped += 1;
        }
    } else if bytes.last() == Some(&b'\r') {
        bytes.pop();
    }
    Ok(Some(RawLine { bytes, dropped }))
}

/// `1.5 MiB (1572864 bytes)`.
pub(crate) fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    let mut value = bytes as f64;
    let mut unit = "bytes";
    for u in UNITS {
        if value < 1024.0 {
            break;
        }
        value /= 1024.0;
        unit = u;
    }
    format!("{value:.1} {unit} ({bytes} bytes)")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opened(bytes: &[u8]) -> (tempfile::TempDir, cap_std::fs::File) {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("f"), bytes).unwrap();
        let dir =
            cap_std::fs::Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).unwrap();
        let file = dir.open("f").unwrap();
        (tmp, file)
    }

    #[test]
    fn a_file_read_at_its_known_size_is_whole() {
        let (_tmp, mut file) = opened(b"hello\n");
        assert_eq!(read_known_size(&mut file, 6, 1024).unwrap(), b"hello\n");
        let (_tmp, mut file) = opened(b"");
        assert_eq!(read_known_size(&mut file, 0, 1024).unwrap(), b"");
    }

    #[test]
    fn a_file_that_grew_since_its_size_was_taken_is_read_on_to_the_cap() {
        // Its metadata said 3 bytes; it holds 10 now: all 10 come back, and the cap holds.
        let (_tmp, mut file) = opened(b"0123456789");
        assert_eq!(read_known_size(&mut file, 3, 1024).unwrap(), b"0123456789");
        let (_tmp, mut file) = opened(b"0123456789");
        assert_eq!(read_known_size(&mut file, 3, 8).unwrap(), b"01234567");
    }

    fn lines(input: &[u8], keep: usize) -> Vec<(Vec<u8>, usize)> {
        let mut reader = input;
        let mut out = Vec::new();
        while let Some(line) = next_line(&mut reader, keep).unwrap() {
            out.push((line.bytes, line.dropped));
        }
        out
    }

    #[test]
    fn lines_split_on_newline_and_strip_cr() {
        assert_eq!(
            lines(b"a\r\nb\nc", 100),
            vec![(b"a".to_vec(), 0), (b"b".to_vec(), 0), (b"c".to_vec(), 0)]
        );
        assert_eq!(lines(b"a\n", 100).len(), 1);
        assert_eq!(lines(b"\n\n", 100).len(), 2);
        assert!(lines(b"", 100).is_empty());
    }

    #[test]
    fn long_lines_keep_a_bounded_prefix() {
        let got = lines(b"abcdefgh\nxy", 3);
        assert_eq!(got[0], (b"abc".to_vec(), 5));
        assert_eq!(got[1], (b"xy".to_vec(), 0));
        // "é" is two bytes; cutting inside it counts it as dropped.
        let got = lines("aé".as_bytes(), 2);
        assert_eq!(got[0], (b"a".to_vec(), 1));
    }

    #[test]
    fn text_is_cut_with_a_marker() {
        let line = RawLine { bytes: b"abcdef".to_vec(), dropped: 0 };
        let (text, lossy) = line.text(4);
        assert_eq!(text, "abcd … [line truncated, 2 more chars]");
        assert!(!lossy);
        let line = RawLine { bytes: b"a\xffb".to_vec(), dropped: 0 };
        let (text, lossy) = line.text(10);
        assert_eq!(text, "a\u{FFFD}b");
        assert!(lossy);
    }

    #[test]
    fn sizes_are_human() {
        assert_eq!(human_size(12), "12 bytes");
        assert_eq!(human_size(1024 * 1024 * 1024), "1.0 GiB (1073741824 bytes)");
        assert_eq!(human_size(1536), "1.5 KiB (1536 bytes)");
    }
}
