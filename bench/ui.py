"""Benchmark of the web UI of `hands serve` in Debian's Chromium (Playwright), against the real
server and the scripted model of tests/agent, with the browser's performance API:

1. first load to interactive on loopback: navigation start to the `hands:interactive` mark (the
   session list on screen), in a fresh browser context each run (nothing cached);
2. a session of >= 5,000 stored events (turns of text and tool calls the scripted model streams):
   opened (navigation start to every event folded and painted), scrolled to the top, then paged
   down to the bottom one view at a time, with the number of items in the DOM against the total;
3. a stream of text deltas at 2,000 per second (the scripted model's `events_per_second`): the
   frames the page painted while it streamed (requestAnimationFrame timestamps), as the average
   and the worst 500 ms window, and the deltas per second the page actually folded.

Prints each figure beside its target. Usage: python bench/ui.py [--runs N] [--events N]
[--rate N] [--seconds N] (bench/ui.sh sets up the environment)."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))

from harness import Hands, ScriptedModel, hands_binary  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
WORDS = ("the quick brown fox jumps over a lazy dog while hands reads `src/main.rs` and **edits** "
         "calc.py so that add adds; then it runs the tests again").split()
STEPS_PER_TURN = 40
# What one turn of history_steps stores, about (text deltas, tool call events, turn events).
EVENTS_PER_TURN = 750


def words(n: int, seed: int) -> str:
    return " ".join(WORDS[(seed + i) % len(WORDS)] for i in range(n))


def reply(n: int) -> str:
    """A long answer as models write one: paragraphs of about 60 words, now and then a list."""
    parts = []
    left, k = n, 0
    while left > 0:
        size = min(left, 60)
        parts.append(words(size, k) if k % 5 != 4 else "\n".join(f"- {words(6, k + i)}" for i in range(size // 6)))
        left -= size
        k += 1
    return "\n\n".join(parts)


def history_steps(turns: int) -> list[dict]:
    """Turns of steps with text and four tool calls each; the last step of a turn answers."""
    steps = []
    for t in range(turns):
        for s in range(STEPS_PER_TURN - 1):
            calls = [{"name": "read_file", "input": {"path": p}} for p in ("hello.txt", "notes.md", "calc.py", "src/main.rs")]
            calls += [{"name": "grep", "input": {"pattern": "needle"}}] if s % 3 == 0 else []
            steps.append({"text": words(12 + (s * 7) % 30, s + t), "tool_calls": calls})
        steps.append({"text": f"Turn {t + 1} is done.\n\n- it read the files\n- it found the `needle`"})
    return steps


def project(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "hello.txt").write_text("hello world\nsecond line\n")
    (root / "notes.md").write_text("# Notes\nthe needle is here\n")
    (root / "src" / "main.rs").write_text('fn main() {\n    println!("needle in a haystack");\n}\n')
    return root


def stored_count(hands: Hands, sid: str, idle: float = 2.0) -> tuple[int, int]:
    """The last stored event id, and the first (the first item's key)."""
    import httpx

    ids = []
    with httpx.stream("GET", f"{hands.base_url}/v1/sessions/{sid}/events", headers={"Authorization": f"Bearer {hands.token}"},
                      timeout=httpx.Timeout(10.0, read=idle)) as r:
        try:
            for line in r.iter_lines():
                if line.startswith("id:"):
                    ids.append(int(line[3:].strip()))
        except httpx.ReadTimeout:
            pass
    return ids[-1], ids[0]


def wait_turn(hands: Hands, sid: str, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    time.sleep(0.2)
    while hands.get_session(sid)["running_turn"] is not None:
        if time.monotonic() > deadline:
            raise SystemExit("a turn did not end")
        time.sleep(0.2)


def context(browser, hands: Hands):
    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    ctx.add_init_script(f"sessionStorage.setItem('hands.token', {json.dumps(hands.token)})")
    return ctx


LOAD = """() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const res = (part) => performance.getEntriesByType('resource').find((r) => r.name.includes(part));
  return {
    interactive: performance.getEntriesByName('hands:interactive')[0].startTime,
    html: nav.responseEnd,
    script: res('/app.js')?.responseEnd ?? 0,
    list: res('/v1/sessions')?.responseEnd ?? 0,
  };
}"""


def first_load(browser, hands: Hands, runs: int) -> list[dict]:
    out = []
    for _ in range(runs):
        ctx = context(browser, hands)
        page = ctx.new_page()
        page.goto(f"{hands.base_url}/")
        page.wait_for_function("() => performance.getEntriesByName('hands:interactive').length > 0", timeout=30_000)
        out.append(page.evaluate(LOAD))
        ctx.close()
    return out


FRAMES = "() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(() => done(performance.now()))))"

SCROLL = """async () => {
  const log = document.querySelector('.log');
  const frame = () => new Promise((done) => requestAnimationFrame(done));
  const painted = async (ready) => { do { await frame(); } while (!ready()); await frame(); };
  const firstKey = %s;
  const lastKey = [...log.querySelectorAll('[data-key]')].pop()?.dataset.key;
  let t = performance.now();
  log.scrollTop = 0;
  await painted(() => log.querySelector(`[data-key="${firstKey}"]`));
  const top = performance.now() - t;
  t = performance.now();
  log.scrollTop = log.scrollHeight;
  await painted(() => log.querySelector(`[data-key="${lastKey}"]`));
  const bottom = performance.now() - t;
  // Page up through the whole list, one view a frame: the cost of rendering what comes into view.
  const frames = [];
  let last = performance.now();
  while (log.scrollTop > 0) {
    log.scrollTop -= log.clientHeight;
    await frame();
    const now = performance.now();
    frames.push(now - last);
    last = now;
  }
  frames.sort((a, b) => a - b);
  return { top, bottom, pages: frames.length, frame_median: frames[frames.length >> 1], frame_worst: frames[frames.length - 1],
           rendered: Number(log.dataset.rendered), items: Number(log.dataset.items) };
}"""


def open_and_scroll(browser, hands: Hands, sid: str, last: int, first_key: int, runs: int) -> list[dict]:
    out = []
    for _ in range(runs):
        ctx = context(browser, hands)
        page = ctx.new_page()
        cdp = ctx.new_cdp_session(page)
        cdp.send("Performance.enable")
        page.goto(f"{hands.base_url}/#/s/{sid}")
        page.wait_for_function(f"() => Number(document.querySelector('.log')?.dataset.lastEvent) >= {last}", timeout=60_000, polling="raf")
        painted = page.evaluate(FRAMES)
        cpu = metrics(cdp).get("ThreadTime", 0) * 1000
        out.append({"open": painted, "open_cpu": cpu, **page.evaluate(SCROLL % json.dumps(str(first_key)))})
        ctx.close()
    return out


STREAM_START = """() => {
  window.__frames = [];
  window.__counts = [];
  window.__long = [];
  new PerformanceObserver((list) => { for (const e of list.getEntries()) window.__long.push(e.duration); })
    .observe({ type: 'longtask', buffered: false });
  const log = document.querySelector('.log');
  const loop = (t) => {
    window.__frames.push(t);
    window.__counts.push(Number(log.dataset.events));
    if (!window.__stop) requestAnimationFrame(loop);
  };
  requestAnimationFrame(loop);
}"""


def metrics(cdp) -> dict[str, float]:
    """Chromium's counters for the page: ThreadTime (CPU time of its main thread), TaskDuration,
    ScriptDuration, LayoutDuration, RecalcStyleDuration, in seconds."""
    return {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}


def busy(before: dict, after: dict, wall: float) -> dict:
    d = {k: after.get(k, 0) - before.get(k, 0) for k in ("ThreadTime", "ScriptDuration", "LayoutDuration", "RecalcStyleDuration")}
    return {"cpu_share": d["ThreadTime"] / wall if wall else 0, "script_s": d["ScriptDuration"],
            "layout_s": d["LayoutDuration"] + d["RecalcStyleDuration"], "cpu_s": d["ThreadTime"]}


def stream(browser, hands: Hands, sid: str, seconds: float) -> dict:
    ctx = context(browser, hands)
    page = ctx.new_page()
    cdp = ctx.new_cdp_session(page)
    cdp.send("Performance.enable")
    page.goto(f"{hands.base_url}/#/s/{sid}")
    page.locator('.stream[data-state="live"]').wait_for(timeout=30_000)
    page.evaluate(STREAM_START)
    hands.post_message(sid, "stream")
    page.wait_for_function("() => document.querySelector('.log').dataset.running === 'yes'", timeout=30_000)
    m0, t0 = metrics(cdp), time.monotonic()
    page.wait_for_function("() => document.querySelector('.log').dataset.running === 'no'", timeout=int(seconds * 10_000) + 60_000)
    m1, t1 = metrics(cdp), time.monotonic()
    page.evaluate("() => { window.__stop = true; }")
    frames, counts, long = page.evaluate("() => [window.__frames, window.__counts, window.__long]")
    text = page.evaluate("() => [...document.querySelectorAll('.log .item.text')].pop()?.innerText.length ?? 0")
    ctx.close()
    # The streaming part: from the first frame that saw a new event to the last one.
    first = next(i for i, c in enumerate(counts) if c > counts[0])
    last = max(i for i, c in enumerate(counts) if c < counts[-1]) + 1
    span = frames[first:last + 1]
    duration = (span[-1] - span[0]) / 1000
    fps = (len(span) - 1) / duration if duration > 0 else 0
    worst = min(
        (sum(1 for t in span if start <= t < start + 500) * 2 for start in span if start + 500 <= span[-1]),
        default=fps,
    )
    gaps = [b - a for a, b in zip(span, span[1:])]
    return {
        "fps": fps,
        "worst_fps": worst,
        "longest_frame_ms": max(gaps) if gaps else 0,
        "seconds": duration,
        "events_per_s": (counts[last] - counts[first]) / duration if duration > 0 else 0,
        "text_chars": text,
        "long_tasks": len(long),
        "long_task_ms": sum(long),
        **busy(m0, m1, t1 - t0),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--rate", type=int, default=2000, help="text deltas per second")
    parser.add_argument("--seconds", type=float, default=4.0, help="how long the stream lasts")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    binary = hands_binary()
    turns = max(1, -(-args.events // EVENTS_PER_TURN))
    stream_text = reply(int(args.rate * args.seconds))
    steps = history_steps(turns) + [{"text": stream_text, "events_per_second": args.rate}]
    with tempfile.TemporaryDirectory(prefix="hands-bench-ui-") as tmp:
        tmp = Path(tmp)
        model = ScriptedModel("anthropic", steps, tmp / "model")
        home = tmp / "home"
        home.mkdir()
        hands = Hands(binary, home, project(tmp / "proj"), model, extra_config=f"\n[agent]\nmax_steps = {STEPS_PER_TURN + 5}\n")
        hands.start()
        try:
            sid = hands.create_session(title="bench")["id"]
            print(f"hands: {binary}", flush=True)
            print(f"building a session of >= {args.events} events ...", flush=True)
            t0 = time.monotonic()
            for t in range(turns):
                hands.post_message(sid, f"turn {t + 1}: read the files and find the needle")
                wait_turn(hands, sid)
            replay = time.monotonic()
            last, first_key = stored_count(hands, sid, idle=1.0)
            # The reference: a plain HTTP client reading the same replay (less its idle wait).
            replay = (time.monotonic() - replay - 1.0) * 1000
            if last < args.events:
                raise SystemExit(f"only {last} events were stored: raise STEPS_PER_TURN")
            print(f"  {last} events stored in {time.monotonic() - t0:.1f} s", flush=True)
            stream_sid = hands.create_session(title="stream")["id"]
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
                loads = first_load(browser, hands, args.runs)
                opened = open_and_scroll(browser, hands, sid, last, first_key, args.runs)
                streamed = stream(browser, hands, stream_sid, args.seconds)
                browser.close()
        finally:
            hands.stop()
            model.stop()

    med = statistics.median
    row = lambda label, value, target="": print(f"{label:62} {value:>12} {target:>10}")  # noqa: E731
    print()
    print(f"load average while measuring: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    row("figure", "measured", "target")
    ld = {k: med([r[k] for r in loads]) for k in ("interactive", "html", "script", "list")}
    row(f"first load to interactive (median of {args.runs}), ms", f"{ld['interactive']:.0f}", "<= 300")
    row("  (worst), ms", f"{max(r['interactive'] for r in loads):.0f}")
    row("  of which: HTML / app.js / the session list received at, ms", f"{ld['html']:.0f} / {ld['script']:.0f} / {ld['list']:.0f}")
    o = {k: med([r[k] for r in opened]) for k in ("open", "open_cpu", "top", "bottom", "pages", "frame_median", "frame_worst", "rendered", "items")}
    row(f"{last} events: open until all folded and painted (median), ms", f"{o['open']:.0f}", "<= 1000")
    row("  the page's main thread on a CPU until then, ms", f"{o['open_cpu']:.0f}")
    row("  reference: the same replay read by a plain HTTP client, ms", f"{replay:.0f}")
    row("  then scroll to the first item, painted, ms", f"{o['top']:.0f}")
    row("  then back to the last, painted, ms", f"{o['bottom']:.0f}")
    row("  open + both scrolls, ms", f"{o['open'] + o['top'] + o['bottom']:.0f}", "<= 1000")
    row(f"  paging through all {o['pages']:.0f} views, frame median / worst, ms", f"{o['frame_median']:.1f} / {o['frame_worst']:.1f}")
    row("  items in the DOM / items in the conversation", f"{o['rendered']:.0f} / {o['items']:.0f}")
    row(f"stream of {args.rate} deltas/s: frames per second (average)", f"{streamed['fps']:.1f}", ">= 30")
    row("  frames per second, worst 500 ms window", f"{streamed['worst_fps']:.1f}", ">= 30")
    row("  longest frame, ms", f"{streamed['longest_frame_ms']:.1f}")
    row("  long tasks (> 50 ms) on the page's main thread: count, total ms", f"{streamed['long_tasks']}, {streamed['long_task_ms']:.0f}")
    row("  the page's main thread on a CPU, share of the stream's time", f"{100 * streamed['cpu_share']:.0f} %")
    row("    of which script / style and layout, s", f"{streamed['script_s']:.2f} / {streamed['layout_s']:.2f}")
    row("  text deltas folded per second (what hands delivered)", f"{streamed['events_per_s']:.0f}", f"{args.rate}")
    row("  text shown at the end, characters", f"{streamed['text_chars']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
