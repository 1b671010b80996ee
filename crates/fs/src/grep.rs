//! grep: lines matching a regex, over ripgrep's crates (`ignore` walk, `grep-regex` matcher,
//! `grep-searcher`).
//!
//! Flow: compile the matcher, resolve the start (a file or a folder), walk in parallel with one
//! searcher and one result map per thread, open every file through the root handle, and merge the
//! maps sorted by path. Each thread keeps the text of only its first `offset + limit` results in
//! path order (which contain the global first ones) and counts the rest, so memory stays bounded and
//! the output is deterministic whatever the thread timing.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io;

use grep_matcher::Matcher;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use hands_core::{Annotations, Context, Tool, ToolError, ToolOutput};
use hands_core::{Family, Label, Policy};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::escape::escape_name;
use crate::walk::{self, FileGlob, Start, WalkSpec};
use crate::{FsConfig, Workspace};

/// What grep returns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OutputMode {
    /// `path:line:text`.
    #[default]
    Content,
    /// Paths of files with a match.
    Files,
    /// `path:count`.
    Count,
}

/// Arguments of grep.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrepArgs {
    /// Regular expression.
    pub pattern: String,
    /// Only files whose name (path, with `/`) matches this glob, e.g. `*.{ts,tsx}`.
    #[serde(default)]
    pub include: Option<String>,
    /// File or folder to search (default: the project root).
    #[serde(default)]
    pub path: Option<String>,
    /// Search gitignored files too (an ignored `path` is searched anyway).
    #[serde(default)]
    pub include_ignored: bool,
    /// Ignore case.
    #[serde(default)]
    pub case_insensitive: bool,
    /// Lines before and after each match (at most 100).
    #[serde(default)]
    pub context: Option<usize>,
    /// Output.
    #[serde(default)]
    pub output_mode: OutputMode,
    /// Results returned at most (default 50).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Results to skip, for paging.
    #[serde(default)]
    pub offset: Option<usize>,
}
/// One matching line in the structured result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct GrepMatch {
    /// Path relative to the project root.
    pub path: String,
    /// 1-based line number.
    pub line: u64,
    /// The line (cut around the match when long).
    pub text: String,
}

/// Matching lines of one file in the structured result of count mode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct GrepCount {
    /// Path relative to the project root.
    pub path: String,
    /// Number of matching lines.
    pub count: u64,
}

/// The structured result of grep: one of `matches`, `files` or `counts`, by `mode`, plus totals.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct GrepResult {
    /// The output mode these results are in.
    pub mode: OutputMode,
    /// Content mode: the matching lines of this page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matches: Option<Vec<GrepMatch>>,
    /// Files mode: the files of this page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<Vec<String>>,
    /// Count mode: the per-file counts of this page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts: Option<Vec<GrepCount>>,
    /// Content mode with `context`: the context lines shown around the matches (`text` of a
    /// context line is cut like a match's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context_lines: Vec<GrepMatch>,
    /// Matching lines in all files. In files mode a file is not searched past its first match, so
    /// this equals `total_files`.
    pub total_matches: u64,
    /// Files with at least one match.
    pub total_files: u64,
    /// Results skipped before this page.
    pub offset: usize,
    /// True when there are results after this page.
    pub truncated: bool,
    /// Files not searched because a line is longer than grep holds in memory (64 MiB).
    pub skipped_long_lines: u64,
}

/// The grep tool.
#[derive(Debug, Clone)]
pub struct Grep {
    config: FsConfig,
}

impl Grep {
    /// With `config`.
    pub fn new(config: FsConfig) -> Self {
        Self { config }
    }
}

impl Tool for Grep {
    type Args = GrepArgs;

    fn name(&self) -> &'static str {
        "grep"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("grep.md"))
    }

    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY
    }

    fn policy(&self) -> Policy {
        Policy::from_annotations(self.annotations())
            .label(Label::In { what: "pattern", place: "path" })
            .family(Family::Search)
            .timeout_ms(120_000)
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        Some(hands_core::output_schema_for::<GrepResult>())
    }

    async fn call(&self, ctx: Context, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let config = self.config.clone();
        let task = tokio::task::spawn_blocking(move || run(&ctx, &config, &args));
        task.await.map_err(|e| ToolError::Fatal(format!("grep task failed: {e}")))?
    }
}

/// A stored line of a file: a match or a context line.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Line {
    number: u64,
    text: String,
    is_match: bool,
}

/// What one file gave.
#[derive(Debug, Default)]
struct FileHits {
    /// Matching lines in the file (all of them, stored or not).
    matches: u64,
    /// Stored lines (content mode), in line order, at most `keep` matches.
    lines: Vec<Line>,
}

/// Context lines shown at most on each side of a match, whatever `context` asks.
const MAX_CONTEXT: usize = 100;

/// What every search needs, shared by the threads.
struct Plan<'a> {
    mode: OutputMode,
    context: usize,
    /// Results (lines in content mode, files otherwise) whose text is kept: offset + limit.
    keep: usize,
    max_chars: usize,
    matcher: &'a RegexMatcher,
}

/// One thread's searcher and results.
struct ThreadHits {
    searcher: Searcher,
    matcher: RegexMatcher,
    /// Files with matches, by path; only the first `keep` results in path order keep their text.
    files: BTreeMap<String, FileHits>,
    /// Results held in `files`.
    kept: usize,
    total_matches: u64,
    total_files: u64,
    /// Files skipped because a line did not fit in the searcher's heap limit.
    too_long: u64,
}

impl ThreadHits {
    fn new(plan: &Plan<'_>) -> Self {
        Self {
            searcher: searcher(plan),
            matcher: plan.matcher.clone(),
            files: BTreeMap::new(),
            kept: 0,
            total_matches: 0,
            total_files: 0,
            too_long: 0,
        }
    }

    /// True when a file at `path` could still be among the kept results.
    fn wants(&self, plan: &Plan<'_>, path: &str) -> bool {
        self.kept < plan.keep
            || self.files.last_key_value().is_some_and(|(last, _)| path < last.as_str())
    }

    fn add(&mut self, plan: &Plan<'_>, path: String, hits: FileHits) {
        self.total_matches += hits.matches;
        self.total_files += 1;
        let results = results_of(plan, &hits);
        self.files.insert(path, hits);
        self.kept += results;
        // Drop the files that come after the first `keep` results; they are only counted.
        while self.files.len() > 1 {
            let Some((_, last)) = self.files.last_key_value() else { break };
            let last_results = results_of(plan, last);
            if self.kept - last_results < plan.keep {
                break;
            }
            self.files.pop_last();
            self.kept -= last_results;
        }
    }
}

fn results_of(plan: &Plan<'_>, hits: &FileHits) -> usize {
    match plan.mode {
        OutputMode::Content => hits.lines.iter().filter(|l| l.is_match).count(),
        OutputMode::Files | OutputMode::Count => 1,
    }
}

fn searcher(plan: &Plan<'_>) -> Searcher {
    let context = if plan.mode == OutputMode::Content { plan.context } else { 0 };
    // Line numbers cost a pass over every buffer; only content mode shows them.
    SearcherBuilder::new()
        .line_number(plan.mode == OutputMode::Content)
        .binary_detection(BinaryDetection::quit(b'\0'))
        .heap_limit(Some(HEAP_LIMIT))
        .before_context(context)
        .after_context(context)
        .build()
}

/// The sink of one file's search.
struct Collector<'a> {
    plan: &'a Plan<'a>,
    matcher: &'a RegexMatcher,
    /// Store text (false past this thread's cut-off: count only).
    store: bool,
    hits: FileHits,
    stored_matches: usize,
    last_stored_match: u64,
}

impl Sink for Collector<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.hits.matches += 1;
        if self.plan.mode == OutputMode::Files {
            return Ok(false);
        }
        if self.store
            && self.plan.mode == OutputMode::Content
            && self.stored_matches < self.plan.keep
        {
            let number = mat.line_number().unwrap_or(0);
            let text = cut_line(mat.bytes(), Some(self.matcher), self.plan.max_chars);
            self.hits.lines.push(Line { number, text, is_match: true });
            self.stored_matches += 1;
            self.last_stored_match = number;
        }
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, io::Error> {
        if !self.store {
            return Ok(true);
        }
        let number = ctx.line_number().unwrap_or(0);
        let after_last = number <= self.last_stored_match.saturating_add(self.plan.context as u64);
        if self.stored_matches < self.plan.keep || after_last {
            let text = cut_line(ctx.bytes(), None, self.plan.max_chars);
            self.hits.lines.push(Line { number, text, is_match: false });
        }
        Ok(true)
    }
}

/// What the search of one file gave.
enum Searched {
    /// At least one match.
    Hits(FileHits),
    /// No match, or the file could not be read, or it is binary.
    Nothing,
    /// A line is longer than [`HEAP_LIMIT`]: the file was skipped (its matches do not count).
    TooLong,
}

/// Memory one searcher may hold for a file: its longest line (with context) must fit, or the file
/// is skipped and counted, so that a single-line file of hundreds of MB is not read into memory.
const HEAP_LIMIT: usize = 64 * 1024 * 1024;

/// Search one open file.
fn search_one(
    plan: &Plan<'_>,
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    file: &std::fs::File,
    store: bool,
) -> Searched {
    let mut sink = Collector {
        plan,
        matcher,
        store,
        hits: FileHits::default(),
        stored_matches: 0,
        last_stored_match: 0,
    };
    match searcher.search_file(matcher, file, &mut sink) {
        // grep-searcher's only way to say so (line_buffer::alloc_error).
        Err(err) if err.to_string().contains("configured allocation limit") => Searched::TooLong,
        Err(_) => Searched::Nothing,
        Ok(()) if sink.hits.matches > 0 => Searched::Hits(sink.hits),
        Ok(()) => Searched::Nothing,
    }
}

/// A line without its terminator, lossily decoded, at most `max` characters: cut around the first
/// match of `matcher` (or from the start) with `…` where text was left out.
fn cut_line(bytes: &[u8], matcher: Option<&RegexMatcher>, max: usize) -> String {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    let text = String::from_utf8_lossy(bytes);
    if text.len() <= max || text.chars().count() <= max {
        return text.into_owned();
    }
    let found = matcher.and_then(|m| m.find(text.as_bytes()).ok().flatten());
    let match_start = found.map_or(0, |m| text[..m.start()].chars().count());
    // Some text before the match so that the model sees what leads to it.
    let first = match_start.saturating_sub(max / 5);
    let total = text.chars().count();
    let first = first.min(total.saturating_sub(max));
    let mut out = String::with_capacity(text.len().min(max.saturating_mul(4)) + 8);
    if first > 0 {
        out.push('…');
    }
    out.extend(text.chars().skip(first).take(max));
    if first.saturating_add(max) < total {
        out.push('…');
    }
    out
}

fn run(ctx: &Context, config: &FsConfig, args: &GrepArgs) -> Result<ToolOutput, ToolError> {
    let ws = Workspace::of(ctx)?;
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(args.case_insensitive)
        .line_terminator(Some(b'\n'))
        .build(&args.pattern)
        .map_err(|e| {
            ToolError::model(format!(
                "`pattern` {:?} is not a valid regex (Rust syntax): {e}\nEscape special \
                 characters with `\\` (e.g. `\\(`, `\\.`), or use a simpler pattern.",
                args.pattern
            ))
        })?;
    let include = args.include.as_deref().map(|p| FileGlob::new("include", p)).transpose()?;
    let limit = args.limit.unwrap_or(config.grep_limit).max(1);
    let offset = args.offset.unwrap_or(0);
    let plan = Plan {
        mode: args.output_mode,
        context: args.context.unwrap_or(0).min(MAX_CONTEXT),
        keep: offset.saturating_add(limit),
        max_chars: config.grep_max_line_chars.max(16),
        matcher: &matcher,
    };
    let start = walk::start(&ws, "path", args.path.as_deref())?;
    let mut skipped = Vec::new();
    let states = match &start {
        Start::File(rel) => {
            let mut state = ThreadHits::new(&plan);
            let file = ws.open_read(rel).map_err(|e| ws.io_error("searched", rel, &e))?.into_std();
            match search_one(&plan, &mut state.searcher, &matcher, &file, true) {
                Searched::Hits(hits) => state.add(&plan, rel.display(), hits),
                Searched::TooLong => state.too_long += 1,
                Searched::Nothing => {}
            }
            vec![state]
        }
        Start::Dir(rel) => {
            let (states, skips) =
                search_tree(ctx, config, &ws, rel, include.as_ref(), args.include_ignored, &plan);
            skipped = skips;
            states
        }
    };
    if ctx.is_cancelled() {
        return Err(walk::cancelled("grep"));
    }
    Ok(walk::note_skipped(render(&plan, &args.pattern, offset, limit, states), &skipped))
}

fn search_tree(
    ctx: &Context,
    config: &FsConfig,
    ws: &Workspace,
    start: &crate::RelPath,
    include: Option<&FileGlob>,
    include_ignored: bool,
    plan: &Plan<'_>,
) -> (Vec<ThreadHits>, Vec<String>) {
    let root = ws.root().to_path_buf();
    let base = root.join(start.as_path());
    let spec = WalkSpec { start: start.clone(), include_ignored, hidden: ws.hidden().cloned() };
    let progress = FilesProgress::new(ctx);
    walk::run_spec(
        &root,
        &spec,
        config,
        ctx.cancel_token(),
        || ThreadHits::new(plan),
        |state, entry| {
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return ignore::WalkState::Continue;
            }
            let path = entry.path();
            if let Some(include) = include {
                let Ok(under_base) = path.strip_prefix(&base) else {
                    return ignore::WalkState::Continue;
                };
                if !include.is_match(under_base) {
                    return ignore::WalkState::Continue;
                }
            }
            let Ok(rel) = path.strip_prefix(&root) else { return ignore::WalkState::Continue };
            // Opened through the root handle, so a folder swapped for a symlink cannot lead outside.
            let Ok(file) = ws.dir().open(rel) else { return ignore::WalkState::Continue };
            let file = file.into_std();
            let shown = rel.to_string_lossy();
            let store = state.wants(plan, &shown);
            let ThreadHits { searcher, matcher, .. } = state;
            match search_one(plan, searcher, matcher, &file, store) {
                Searched::Hits(hits) => state.add(plan, shown.into_owned(), hits),
                Searched::TooLong => state.too_long += 1,
                Searched::Nothing => {}
            }
            if let Some(progress) = &progress {
                progress.searched(ctx);
            }
            ignore::WalkState::Continue
        },
    )
}

/// Files searched so far, reported at most every 200 ms when somebody listens (MCP progress).
struct FilesProgress {
    started: std::time::Instant,
    files: std::sync::atomic::AtomicU64,
    last_ms: std::sync::atomic::AtomicU64,
}

impl FilesProgress {
    fn new(ctx: &Context) -> Option<Self> {
        ctx.wants_progress().then(|| Self {
            started: std::time::Instant::now(),
            files: 0.into(),
            last_ms: 0.into(),
        })
    }

    fn searched(&self, ctx: &Context) {
        use std::sync::atomic::Ordering::Relaxed;
        let n = self.files.fetch_add(1, Relaxed) + 1;
        let now = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let last = self.last_ms.load(Relaxed);
        // One thread wins each 200 ms window; the others go on searching.
        if now >= last.saturating_add(200)
            && self.last_ms.compare_exchange(last, now, Relaxed, Relaxed).is_ok()
        {
            ctx.progress(n as f64, None, Some(format!("{n} files searched")));
        }
    }
}

/// Merge the threads' results in path order and render the page `offset..offset + limit`.
fn render(
    plan: &Plan<'_>,
    pattern: &str,
    offset: usize,
    limit: usize,
    states: Vec<ThreadHits>,
) -> ToolOutput {
    let total_matches: u64 = states.iter().map(|s| s.total_matches).sum();
    let total_files: u64 = states.iter().map(|s| s.total_files).sum();
    let too_long: u64 = states.iter().map(|s| s.too_long).sum();
    let mut files: Vec<(String, FileHits)> = states.into_iter().flat_map(|s| s.files).collect();
    files.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let total_results = match plan.mode {
        OutputMode::Content => usize::try_from(total_matches).unwrap_or(usize::MAX),
        OutputMode::Files | OutputMode::Count => usize::try_from(total_files).unwrap_or(usize::MAX),
    };
    let end = offset.saturating_add(limit);
    let mut text = String::new();
    let mut result = GrepResult {
        mode: plan.mode,
        matches: None,
        files: None,
        counts: None,
        context_lines: Vec::new(),
        total_matches,
        total_files,
        offset,
        truncated: total_results > end,
        skipped_long_lines: too_long,
    };
    match plan.mode {
        OutputMode::Content => {
            let (matches, context_lines) = render_content(plan, &files, offset, end, &mut text);
            result.matches = Some(matches);
            result.context_lines = context_lines;
        }
        OutputMode::Files => {
            let page: Vec<String> =
                files.into_iter().skip(offset).take(limit).map(|(path, _)| path).collect();
            for path in &page {
                text.push_str(&escape_name(path));
                text.push('\n');
            }
            result.files = Some(page);
        }
        OutputMode::Count => {
            let page: Vec<GrepCount> = files
                .into_iter()
                .skip(offset)
                .take(limit)
                .map(|(path, hits)| GrepCount { path, count: hits.matches })
                .collect();
            for c in &page {
                text.push_str(&format!("{}:{}\n", escape_name(&c.path), c.count));
            }
            result.counts = Some(page);
        }
    }
    let noun = match plan.mode {
        OutputMode::Content => "matching lines",
        OutputMode::Files | OutputMode::Count => "files",
    };
    let footer = if total_matches == 0 {
        format!(
            "No matches for {pattern:?}. (Searched without node_modules, .git, dist and \
             gitignored files; try case_insensitive=true, a broader pattern, or \
             include_ignored=true.)"
        )
    } else if offset >= total_results {
        format!(
            "offset={offset} is past the end: there are {total_results} {noun} \
             ({total_matches} matching lines in {total_files} files)."
        )
    } else {
        let shown_end = end.min(total_results);
        let first = offset.saturating_add(1);
        let mut f = format!("(showing {first}-{shown_end} of {total_results} {noun}");
        if plan.mode == OutputMode::Count {
            f.push_str(&format!(", {total_matches} matching lines"));
        } else if plan.mode == OutputMode::Content {
            f.push_str(&format!(" in {total_files} files"));
        }
        if shown_end < total_results {
            f.push_str(&format!("; use offset={shown_end} for more"));
        }
        f.push(')');
        f
    };
    text.push_str(&footer);
    if too_long > 0 {
        text.push_str(&format!(
            "\n({too_long} file{} skipped: lines too long (over 64 MiB); search {} with a \
             command through bash if needed.)",
            if too_long == 1 { "" } else { "s" },
            if too_long == 1 { "it" } else { "them" }
        ));
    }
    let structured = serde_json::to_value(&result).unwrap_or(serde_json::Value::Null);
    ToolOutput::text(text).with_structured(structured)
}

/// Content mode: the selected matches as `path:line:text`, their context as `path-line-text`, and
/// `--` between groups that are not adjacent.
fn render_content(
    plan: &Plan<'_>,
    files: &[(String, FileHits)],
    offset: usize,
    end: usize,
    text: &mut String,
) -> (Vec<GrepMatch>, Vec<GrepMatch>) {
    let mut page = Vec::new();
    let mut context_lines = Vec::new();
    let mut index = 0usize;
    let mut first_group = true;
    for (path, hits) in files {
        if index >= end {
            break;
        }
        let file_start = index;
        let mut selected: Vec<u64> = Vec::new();
        for line in hits.lines.iter().filter(|l| l.is_match) {
            if index >= offset && index < end {
                selected.push(line.number);
            }
            index += 1;
        }
        index = file_start.saturating_add(usize::try_from(hits.matches).unwrap_or(usize::MAX));
        if selected.is_empty() {
            continue;
        }
        let context = plan.context as u64;
        let near = |n: u64| {
            selected
                .iter()
                .any(|&s| n.saturating_add(context) >= s && n <= s.saturating_add(context))
        };
        let mut previous: Option<u64> = None;
        for line in hits.lines.iter().filter(|l| near(l.number)) {
            let breaks = match previous {
                None => context > 0 && !first_group,
                Some(p) => line.number > p.saturating_add(1),
            };
            if breaks {
                text.push_str("--\n");
            }
            previous = Some(line.number);
            first_group = false;
            let chosen = line.is_match && selected.binary_search(&line.number).is_ok();
            let sep = if chosen { ':' } else { '-' };
            let shown = escape_name(path);
            text.push_str(&format!("{shown}{sep}{}{sep}{}\n", line.number, line.text));
            let entry =
                GrepMatch { path: path.clone(), line: line.number, text: line.text.clone() };
            if chosen { page.push(entry) } else { context_lines.push(entry) }
        }
    }
    (page, context_lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matcher(p: &str) -> RegexMatcher {
        RegexMatcherBuilder::new().line_terminator(Some(b'\n')).build(p).unwrap()
    }

    #[test]
    fn short_lines_are_kept_whole_without_terminator() {
        assert_eq!(cut_line(b"hello\r\n", None, 10), "hello");
    }

    #[test]
    fn long_lines_are_cut_around_the_match() {
        let line = format!("{}NEEDLE{}\n", "a".repeat(1000), "b".repeat(1000));
        let cut = cut_line(line.as_bytes(), Some(&matcher("NEEDLE")), 100);
        assert!(cut.contains("NEEDLE"), "{cut}");
        assert!(cut.starts_with('…') && cut.ends_with('…'), "{cut}");
        assert_eq!(cut.chars().count(), 102);
        let cut = cut_line("é".repeat(300).as_bytes(), None, 100);
        assert_eq!(cut.chars().count(), 101);
        assert!(cut.ends_with('…'));
    }

    #[test]
    fn threads_keep_only_the_first_results_in_path_order() {
        let m = matcher("x");
        let plan =
            Plan { mode: OutputMode::Files, context: 0, keep: 2, max_chars: 100, matcher: &m };
        let mut state = ThreadHits::new(&plan);
        for p in ["d", "b", "c", "a"] {
            state.add(&plan, p.into(), FileHits { matches: 1, lines: vec![] });
        }
        let kept: Vec<&str> = state.files.keys().map(String::as_str).collect();
        assert_eq!(kept, ["a", "b"]);
        assert_eq!(state.total_files, 4);
        assert!(!state.wants(&plan, "c"));
        assert!(state.wants(&plan, "a0"));
    }
}
