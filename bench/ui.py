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
EVENTS_PER_TURN = 1400


def words(n: int, seed: int) -> str:
    return " ".join(WORDS[(seed + i) % len(WORDS)] for i in range(n))


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


def stored_count(hands: Hands, sid: str) -> int:
    import httpx

    last = 0
    with httpx.stream("GET", f"{hands.base_url}/v1/sessions/{sid}/events", headers={"Authorization": f"Bearer {hands.token}"},
                      timeout=httpx.Timeout(10.0, read=2.0)) as r:
        try:
            for line in r.iter_lines():
                if line.startswith("id:"):
                    last = int(line[3:].strip())
        except httpx.ReadTimeout:
            pass
    return last


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


def first_load(browser, hands: Hands, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        ctx = context(browser, hands)
        page = ctx.new_page()
        page.goto(f"{hands.base_url}/")
        page.wait_for_function("() => performance.getEntriesByName('hands:interactive').length > 0", timeout=30_000)
        out.append(page.evaluate("() => performance.getEntriesByName('hands:interactive')[0].startTime"))
        ctx.close()
    return out


FRAMES = "() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(() => done(performance.now()))))"

SCROLL = """async () => {
  const log = document.querySelector('.log');
  const frames = () => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
  const t0 = performance.now();
  log.scrollTop = 0;
  await frames();
  while (!log.querySelector('[data-key="1"]')) await frames();
  const top = performance.now() - t0;
  let pages = 0;
  const t1 = performance.now();
  while (log.scrollTop + log.clientHeight < log.scrollHeight - 2) {
    log.scrollTop += log.clientHeight;
    await frames();
    pages++;
  }
  return { top, pages, through: performance.now() - t1, rendered: Number(log.dataset.rendered), items: Number(log.dataset.items) };
}"""


def open_and_scroll(browser, hands: Hands, sid: str, last: int, runs: int) -> list[dict]:
    out = []
    for _ in range(runs):
        ctx = context(browser, hands)
        page = ctx.new_page()
        page.goto(f"{hands.base_url}/#/s/{sid}")
        page.wait_for_function(f"() => Number(document.querySelector('.log')?.dataset.lastEvent) >= {last}", timeout=60_000, polling="raf")
        painted = page.evaluate(FRAMES)
        out.append({"open": painted, **page.evaluate(SCROLL)})
        ctx.close()
    return out


STREAM_START = """() => {
  window.__frames = [];
  window.__counts = [];
  const log = document.querySelector('.log');
  const loop = (t) => {
    window.__frames.push(t);
    window.__counts.push(Number(log.dataset.events));
    if (!window.__stop) requestAnimationFrame(loop);
  };
  requestAnimationFrame(loop);
}"""


def stream(browser, hands: Hands, sid: str, seconds: float) -> dict:
    ctx = context(browser, hands)
    page = ctx.new_page()
    page.goto(f"{hands.base_url}/#/s/{sid}")
    page.locator('.stream[data-state="live"]').wait_for(timeout=30_000)
    page.evaluate(STREAM_START)
    hands.post_message(sid, "stream")
    page.wait_for_function("() => document.querySelector('.log').dataset.running === 'yes'", timeout=30_000)
    page.wait_for_function("() => document.querySelector('.log').dataset.running === 'no'", timeout=int(seconds * 10_000) + 60_000)
    page.evaluate("() => { window.__stop = true; }")
    frames, counts = page.evaluate("() => [window.__frames, window.__counts]")
    text = page.evaluate("() => document.querySelector('.log .item.text:last-of-type')?.innerText.length ?? 0")
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
    stream_text = words(int(args.rate * args.seconds), 0)
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
            last = stored_count(hands, sid)
            if last < args.events:
                raise SystemExit(f"only {last} events were stored: raise STEPS_PER_TURN")
            print(f"  {last} events stored in {time.monotonic() - t0:.1f} s", flush=True)
            stream_sid = hands.create_session(title="stream")["id"]
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
                loads = first_load(browser, hands, args.runs)
                opened = open_and_scroll(browser, hands, sid, last, args.runs)
                streamed = stream(browser, hands, stream_sid, args.seconds)
                browser.close()
        finally:
            hands.stop()
            model.stop()

    med = statistics.median
    print()
    print(f"{'figure':58} {'measured':>12} {'target':>10}")
    print(f"{'first load to interactive (median of %d), ms' % args.runs:58} {med(loads):12.0f} {'<= 300':>10}")
    print(f"{'first load to interactive (worst), ms':58} {max(loads):12.0f} {'':>10}")
    o = {k: med([r[k] for r in opened]) for k in ("open", "top", "through", "pages", "rendered", "items")}
    print(f"{'%d events: open until all painted (median), ms' % last:58} {o['open']:12.0f} {'<= 1000':>10}")
    print(f"{'  then scroll to the top, ms':58} {o['top']:12.0f} {'':>10}")
    print(f"{'  then page down to the bottom (%d views), ms' % o['pages']:58} {o['through']:12.0f} {'':>10}")
    print(f"{'  open + top + through, ms':58} {o['open'] + o['top'] + o['through']:12.0f} {'<= 1000':>10}")
    print(f"{'  items in the DOM / items in the conversation':58} {'%d / %d' % (o['rendered'], o['items']):>12} {'':>10}")
    print(f"{'stream of %d deltas/s: frames per second (average)' % args.rate:58} {streamed['fps']:12.1f} {'>= 30':>10}")
    print(f"{'  frames per second, worst 500 ms window':58} {streamed['worst_fps']:12.1f} {'>= 30':>10}")
    print(f"{'  longest frame, ms':58} {streamed['longest_frame_ms']:12.1f} {'':>10}")
    print(f"{'  text deltas folded per second (what hands delivered)':58} {streamed['events_per_s']:12.0f} {'':>10}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
