"""Fixtures of the browser suite: the e2e suite's `hands serve` + scripted model (`setup`,
`project`, `hands_bin` come from tests/e2e/conftest.py) and a Playwright page in Debian's Chromium
(no browser download) that records every request it makes."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Iterator

import pytest

E2E = Path(__file__).resolve().parents[1] / "e2e"
sys.path.insert(0, str(E2E))

import importlib.util  # noqa: E402

_spec = importlib.util.spec_from_file_location("e2e_conftest", E2E / "conftest.py")
_e2e = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_e2e)
hands_bin, project, setup = _e2e.hands_bin, _e2e.project, _e2e.setup  # the e2e fixtures

CHROMIUM = os.environ.get("HANDS_UI_CHROMIUM", "/usr/bin/chromium")
REPO = Path(__file__).resolve().parents[2]
AXE = REPO / "web" / "node_modules" / "axe-core" / "axe.min.js"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).is_file():
        if os.environ.get("CI"):
            pytest.fail(f"no Chromium at {CHROMIUM}")
        pytest.skip(f"no Chromium at {CHROMIUM}")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield b
        b.close()


class Page:
    """A page plus the list of every URL it requested."""

    def __init__(self, page, base: str) -> None:
        self.page = page
        self.base = base
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        page.on("request", lambda r: self.requests.append(r.url))
        page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))

    def foreign(self) -> list[str]:
        return [u for u in self.requests if not (u.startswith(self.base) or u.startswith("data:"))]


@pytest.fixture
def open_page(browser) -> Iterator:
    contexts = []

    def make(base: str) -> Page:
        ctx = browser.new_context(viewport={"width": 1280, "height": 800})
        contexts.append(ctx)
        return Page(ctx.new_page(), base)

    yield make
    for ctx in contexts:
        ctx.close()


def shoot(page, name: str) -> bytes:
    """A screenshot of the page as `name` (a PNG); written under $HANDS_UI_SCREENSHOTS when set
    (`HANDS_UI_SCREENSHOTS=docs` refreshes the pictures of the README and docs/guide/serve.md)."""
    png = page.screenshot()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000, f"{name}: not a PNG of a page"
    out = os.environ.get("HANDS_UI_SCREENSHOTS")
    if out:
        Path(REPO / out if not Path(out).is_absolute() else out, name).write_bytes(png)
    return png


def axe_violations(page) -> list[str]:
    """The serious and critical violations axe-core finds in the page (its context must bypass
    the CSP: axe is injected as a script). Frames are left out: the preview's iframe is the
    user's app, not the UI."""
    if not AXE.is_file():
        msg = f"axe-core is missing at {AXE}: run `npm ci` in web/"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    page.add_script_tag(path=str(AXE))
    result = page.evaluate("async () => (await axe.run(document, {iframes: false})).violations.map(v => [v.id, v.impact, v.nodes.length])")
    return [f"{vid} ({impact}, {n} nodes)" for vid, impact, n in result if impact in ("serious", "critical")]
