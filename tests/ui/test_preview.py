"""The preview pane in a real browser: the scripted model opens the preview of tests/preview's
static and Vite fixtures; the page shows the stage, the app itself in an iframe (its loopback
origin is the one thing the CSP lets the page frame), a fresh screenshot on demand, and the
runtime errors with their counts — read through the session API without moving the model's
read_runtime_errors cursor."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from conftest import axe_violations, shoot

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "preview" / "fixtures"
TIMEOUT = 60_000  # ms: a Vite dev server and a browser start
PNG = b"\x89PNG\r\n\x1a\n"

# What each fixture throws and logs when it loads, and a word of its page.
EXPECT = {
    "static-site": {"error": "widget is undefined", "page": "static fixture"},
    "vite-app": {"error": "the widget is not configured", "page": "hands preview fixture"},
}


def _copy_fixture(name: str, project: Path) -> None:
    src = FIXTURES / name
    if (src / "package.json").exists() and not (src / "node_modules" / ".bin").is_dir():
        msg = f"npm ci in tests/preview/fixtures/{name} first (.ci/run does it)"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    for entry in src.iterdir():
        if entry.name in ("dist", ".vite-cache", ".hands"):
            continue
        dst = project / entry.name
        if entry.name == "node_modules":
            dst.symlink_to(entry)
        elif entry.is_dir():
            shutil.copytree(entry, dst, dirs_exist_ok=True)
        else:
            shutil.copy2(entry, dst)


def login_and_open(pg, hands, sid: str) -> None:
    pg.page.goto(f"{pg.base}/")
    pg.page.get_by_label("Token").fill(hands.token)
    pg.page.get_by_role("button", name="Sign in").click()
    pg.page.get_by_role("button", name="New session").wait_for()
    pg.page.goto(f"{pg.base}/#/s/{sid}")
    pg.page.locator('.stream[data-state="live"]').wait_for(timeout=TIMEOUT)


@pytest.mark.parametrize("fixture", ["static-site", "vite-app"])
def test_the_preview_pane_shows_the_app_its_errors_and_a_screenshot(setup, project: Path, open_page, fixture: str) -> None:
    _copy_fixture(fixture, project)
    steps = [
        {"tool_calls": [{"name": "preview_open", "input": {}}]},
        {"text": "The preview is open."},
    ]
    _, hands = setup("anthropic", steps)
    sid = hands.create_session()["id"]
    state = hands.request("GET", f"/v1/sessions/{sid}/preview").json()
    assert state["available"] is True and state["stage"] == "stopped" and state["running"] is False, state
    r = hands.request("GET", f"/v1/sessions/{sid}/preview/screenshot")
    assert r.status_code == 409 and "preview_open" in r.json()["error"]["message"], r.text

    pg = open_page(hands.base_url)
    login_and_open(pg, hands, sid)
    page = pg.page
    page.get_by_role("tab", name="Preview").click()
    pane = page.get_by_role("region", name="Preview")
    pane.locator('.stage[data-stage="stopped"]').wait_for(timeout=TIMEOUT)
    box = page.get_by_label("Message")
    box.fill("open the preview")
    box.press("Enter")
    pane.locator('.stage[data-stage="ready"]').wait_for(timeout=TIMEOUT)
    state = hands.request("GET", f"/v1/sessions/{sid}/preview").json()
    url = state["url"]
    assert state["running"] and url.startswith("http://127.0.0.1:"), state
    assert pane.locator(".url").inner_text() == url

    # The app itself, in an iframe on its loopback origin.
    frame = pane.locator("iframe")
    frame.wait_for(timeout=TIMEOUT)
    assert frame.get_attribute("src") == url
    body = page.frame_locator(".preview iframe").locator("body")
    body.wait_for(timeout=TIMEOUT)
    body.get_by_text(EXPECT[fixture]["page"]).first.wait_for(timeout=TIMEOUT)

    # The runtime errors with their counts, as the API has them.
    errors = pane.locator(".runtime-errors")
    errors.locator("li", has_text=EXPECT[fixture]["error"]).wait_for(timeout=TIMEOUT)
    listed = hands.request("GET", f"/v1/sessions/{sid}/preview/errors").json()
    counts = listed["counts"]
    assert counts["errors"] >= 1, listed
    page.wait_for_function(
        "([e, w]) => { const s = document.querySelector('.runtime-errors summary');"
        " return s && s.querySelector('[data-errors]').dataset.errors == e && s.querySelector('[data-warnings]').dataset.warnings == w; }",
        arg=[str(counts["errors"]), str(counts["warnings"])], timeout=TIMEOUT)
    assert errors.locator("li").count() == len(listed["errors"])
    if fixture == "static-site":
        shoot(page, "ui-preview.png")
    assert any(EXPECT[fixture]["error"] in e["message"] for e in listed["errors"]), listed
    # Reading them here left the model's cursor alone: its read returns them as new.
    read = hands.request("POST", f"/v1/sessions/{sid}/tools/read_runtime_errors", json={"args": {}}).json()
    assert any(EXPECT[fixture]["error"] in e["message"] for e in read["structuredContent"]["errors"]), read
    after = hands.request("GET", f"/v1/sessions/{sid}/preview").json()
    assert after["errors"]["unread"] == 0 and after["errors"]["errors"] >= counts["errors"], after
    if fixture == "vite-app":
        # The model's read mapped the frames through Vite's source maps: the list shows the source.
        mapped = hands.request("GET", f"/v1/sessions/{sid}/preview/errors").json()["errors"]
        console = next(e for e in mapped if EXPECT[fixture]["error"] in e["message"])
        assert console["originalLocation"].startswith("src/main.ts:"), console
        errors.locator(".meta", has_text="src/main.ts:").wait_for(timeout=TIMEOUT)

    # A fresh screenshot instead of the app, and again on Refresh.
    r = hands.request("GET", f"/v1/sessions/{sid}/preview/screenshot")
    assert r.status_code == 200 and r.headers["content-type"] == "image/png" and r.content.startswith(PNG), r.headers
    assert r.headers["cache-control"] == "no-store"
    pane.get_by_role("button", name="Screenshot").click()
    img = pane.get_by_role("img", name="Screenshot of the app")
    img.wait_for(timeout=TIMEOUT)
    page.wait_for_function("() => { const i = document.querySelector('.shot img'); return i && i.complete && i.naturalWidth > 100; }",
                           timeout=TIMEOUT)
    first = img.get_attribute("src")
    assert first.startswith("blob:"), first
    pane.get_by_role("button", name="Refresh screenshot").click()
    page.wait_for_function("(old) => { const i = document.querySelector('.shot img'); return i && i.src !== old && i.naturalWidth > 100; }",
                           arg=first, timeout=TIMEOUT)
    assert pane.locator("iframe").count() == 0
    pane.get_by_role("button", name="App").click()
    pane.locator("iframe").wait_for(timeout=TIMEOUT)

    # The page reached nothing but its own origin and the preview's.
    origin = url.split("/", 3)[:3]
    preview_origin = "/".join(origin)
    others = [u for u in pg.foreign() if not u.startswith(preview_origin) and not u.startswith("blob:")]
    assert not others, others
    assert not pg.dialogs


def test_the_user_starts_and_stops_the_preview_without_the_agent(setup, project: Path, open_page) -> None:
    # Issue 34, item 5: the pane's Start/Stop call preview_open and preview_close directly, so the
    # preview comes back after a server restart with no turn and no model request.
    _copy_fixture("static-site", project)
    model, hands = setup("anthropic", [{"text": "unused"}])
    sid = hands.create_session()["id"]
    pg = open_page(hands.base_url)
    login_and_open(pg, hands, sid)
    page = pg.page
    page.get_by_role("tab", name="Preview").click()
    pane = page.get_by_role("region", name="Preview")
    pane.locator('.stage[data-stage="stopped"]').wait_for(timeout=TIMEOUT)
    pane.get_by_role("button", name="Start preview").click()
    pane.locator('.stage[data-stage="ready"]').wait_for(timeout=TIMEOUT)
    body = page.frame_locator(".preview iframe").locator("body")
    body.get_by_text(EXPECT["static-site"]["page"]).first.wait_for(timeout=TIMEOUT)
    assert hands.request("GET", f"/v1/sessions/{sid}/preview").json()["running"] is True
    pane.get_by_role("button", name="Stop preview").click()
    pane.locator('.stage[data-stage="stopped"]').wait_for(timeout=TIMEOUT)
    assert pane.locator("iframe").count() == 0
    state = hands.request("GET", f"/v1/sessions/{sid}/preview").json()
    assert state["running"] is False, state
    # After a restart of hands serve (same port and state), the user brings the preview back.
    hands.listen = f"127.0.0.1:{hands.port}"
    assert hands.stop() == 0
    page.locator('.stream[data-state="reconnecting"]').wait_for(timeout=TIMEOUT)
    hands.start()
    page.locator('.stream[data-state="live"]').wait_for(timeout=TIMEOUT)
    pane.get_by_role("button", name="Start preview").click()
    pane.locator('.stage[data-stage="ready"]').wait_for(timeout=TIMEOUT)
    page.frame_locator(".preview iframe").locator("body").get_by_text(EXPECT["static-site"]["page"]).first.wait_for(timeout=TIMEOUT)
    assert model.requests() == [], "the model was never asked"


def test_a_runtime_error_notice_reads_for_the_user_not_as_the_model_reads_it(setup, project: Path, open_page) -> None:
    # Issue 34, item 10: the notice the model gets (`… — read_runtime_errors`) is shown without
    # the tool's name, pointing at the Preview tab.
    (project / "index.html").write_text(
        "<!doctype html><title>late</title><h1>late failure page</h1>\n"
        "<script>setTimeout(() => { throw new Error('thrown a little later'); }, 800);</script>\n")
    steps = [
        {"tool_calls": [{"name": "preview_open", "input": {}}]},
        # The error is thrown while this runs: its notice rides on this result.
        {"tool_calls": [{"name": "bash", "input": {"command": "sleep 3"}}]},
        {"text": "Noted."},
    ]
    _, hands = setup("anthropic", steps)
    sid = hands.create_session()["id"]
    pg = open_page(hands.base_url)
    login_and_open(pg, hands, sid)
    page = pg.page
    box = page.get_by_label("Message")
    box.fill("open it and wait")
    box.press("Enter")
    page.locator(".log", has_text="Noted.").wait_for(timeout=TIMEOUT)
    notices = page.locator(".log .item .notice").all_inner_texts()
    assert "1 new runtime error in the preview (see the Preview tab)" in notices, notices
    assert not [n for n in notices if "read_runtime_errors" in n or "[notice]" in n], notices
    # Opened, the bash card's result leaves the notice out too (it is a row of its own), though
    # the stored result the model read carries it.
    assert "[notice] 1 new runtime error" in str(hands.transcript(sid))
    page.locator("details.tool", has_text="sleep 3").locator("summary").click()
    page.locator("details.tool .result", has_text="exit code 0").wait_for(timeout=TIMEOUT)
    assert "[notice]" not in page.locator("details.tool .result").last.inner_text()


def test_the_preview_pane_has_no_serious_accessibility_violation(setup, project: Path, browser) -> None:
    _copy_fixture("static-site", project)
    _, hands = setup("anthropic", [{"tool_calls": [{"name": "preview_open", "input": {}}]}, {"text": "Open."}])
    sid = hands.create_session()["id"]
    ctx = browser.new_context(bypass_csp=True, viewport={"width": 1280, "height": 800})  # for axe's script
    try:
        page = ctx.new_page()

        class Pg:
            base = hands.base_url

        pg = Pg()
        pg.page = page
        login_and_open(pg, hands, sid)
        page.get_by_role("tab", name="Preview").click()
        box = page.get_by_label("Message")
        box.fill("open the preview")
        box.press("Enter")
        pane = page.get_by_role("region", name="Preview")
        pane.locator('.stage[data-stage="ready"]').wait_for(timeout=TIMEOUT)
        pane.locator(".runtime-errors li").first.wait_for(timeout=TIMEOUT)
        assert not axe_violations(page)
        pane.get_by_role("button", name="Screenshot").click()
        pane.get_by_role("img", name="Screenshot of the app").wait_for(timeout=TIMEOUT)
        assert not axe_violations(page)
    finally:
        ctx.close()


def test_the_csp_frames_only_loopback_and_images_only_from_itself(setup, project: Path, open_page) -> None:
    _, hands = setup("anthropic", [{"text": "ok"}])
    r = hands.request("GET", "/")
    csp = dict(part.strip().split(" ", 1) for part in r.headers["content-security-policy"].split(";") if " " in part.strip())
    frames = csp["frame-src"].split()
    assert frames and all(f.startswith(("http://127.0.0.1:", "http://localhost:", "http://[::1]:")) for f in frames), frames
    assert csp["img-src"].split() == ["'self'", "data:", "blob:"], csp["img-src"]
    assert csp["frame-ancestors"] == "'none'" and csp["connect-src"] == "'self'"
    # A frame of an origin not on the list (a loopback address, so that nothing leaves the machine
    # even if the policy were wrong) is refused by the browser.
    pg = open_page(hands.base_url)
    pg.page.goto(f"{pg.base}/")
    violations = pg.page.evaluate(
        """() => new Promise((done) => {
            const seen = [];
            document.addEventListener('securitypolicyviolation', (e) => seen.push(e.effectiveDirective));
            const f = document.createElement('iframe');
            f.src = 'http://127.0.0.2:9/';
            document.body.appendChild(f);
            setTimeout(() => done(seen), 500);
        })""")
    assert "frame-src" in violations, violations
    assert not [u for u in pg.requests if "127.0.0.2" in u], "the blocked frame made no request"
