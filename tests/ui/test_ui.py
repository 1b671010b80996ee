"""The web UI of `hands serve` in a real browser, against the real server and the scripted model."""

from __future__ import annotations

from pathlib import Path

XSS = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'


def login(pg, hands) -> None:
    pg.page.goto(f"{pg.base}/")
    pg.page.get_by_label("Token").fill(hands.token)
    pg.page.get_by_role("button", name="Sign in").click()
    pg.page.get_by_role("button", name="New session").wait_for()


def test_page_headers_and_login(setup, project: Path, open_page) -> None:
    _, hands = setup("anthropic", [{"text": "ok"}])
    base = f"http://127.0.0.1:{hands.port}"
    pg = open_page(base)
    response = pg.page.goto(f"{base}/")
    headers = response.headers
    csp = headers["content-security-policy"]
    assert "script-src 'self'" in csp and "connect-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert headers["x-frame-options"] == "DENY"
    assert headers["content-type"].startswith("text/html")
    # Without a token the page asks for one; a wrong one is refused, the right one lets in.
    pg.page.get_by_label("Token").fill("wrong-token")
    pg.page.get_by_role("button", name="Sign in").click()
    pg.page.get_by_role("alert").wait_for()
    assert hands.token not in pg.page.url
    pg.page.get_by_label("Token").fill(hands.token)
    pg.page.get_by_role("button", name="Sign in").click()
    pg.page.get_by_role("button", name="New session").wait_for()
    assert hands.token not in "".join(pg.requests), "the token is never in a URL"
    assert not pg.foreign(), pg.foreign()


def test_a_whole_turn_with_xss_rendered_as_text(setup, project: Path, open_page) -> None:
    (project / "evil.html").write_text(XSS)
    steps = [
        {"text": "Reading it. " + XSS, "tool_calls": [{"name": "read_file", "input": {"path": "evil.html"}}]},
        {"tool_calls": [{"name": "edit_file", "input": {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"}}]},
        {"text": "Fixed **add**."},
    ]
    _, hands = setup("anthropic", steps)
    base = f"http://127.0.0.1:{hands.port}"
    pg = open_page(base)
    login(pg, hands)
    pg.page.get_by_label("Project root").fill(str(project))
    pg.page.get_by_role("button", name="New session").click()
    pg.page.wait_for_url("**/#/s/*")
    pg.page.get_by_label("Message").fill("fix add")
    pg.page.get_by_label("Message").press("Enter")
    pg.page.locator(".log strong", has_text="add").wait_for(timeout=15000)
    tools = pg.page.locator(".tool .name").all_inner_texts()
    assert tools == ["read_file", "edit_file"], tools
    statuses = pg.page.locator(".tool .status").all_inner_texts()
    assert all(s.endswith("ms") for s in statuses), statuses
    assert (project / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    # The markup in the model's text and in the file is shown as text and never runs.
    assert XSS in pg.page.locator(".log").inner_text()
    pg.page.locator(".tool summary").first.click()
    pg.page.wait_for_timeout(300)
    assert pg.page.evaluate("window.__pwned") is None
    assert pg.page.locator(".log img[src=x]").count() == 0
    assert not pg.dialogs
    assert not pg.foreign(), pg.foreign()
    # The URL names the session: a reload returns to it.
    url = pg.page.url
    pg.page.reload()
    pg.page.locator(".tool .name").first.wait_for()
    assert pg.page.url == url
