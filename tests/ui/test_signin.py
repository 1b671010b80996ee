"""`hands serve --open` in a real browser (issue 34): the one-time sign-in link the browser is
opened at signs the page in, leaves the address bar without its code and fills the project root
with the server's; the same link a second time is refused with what to do instead."""

from __future__ import annotations

import os
from pathlib import Path

from harness import wait_until


def test_open_signs_in_once_with_a_one_time_link(setup, project: Path, open_page, tmp_path: Path) -> None:
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser.sh"
    # The browser is given a page only the user can read, which sends it on to the link (the
    # link itself in a command line would be readable by every user): the script reads it there.
    browser.write_text(
        "#!/bin/sh\n"
        f"sed -n 's/.*id=\"signin\" href=\"\\([^\"]*\\)\".*/\\1/p' \"${{1#file://}}\" >> '{opened}'\n"
    )
    browser.chmod(0o755)
    _, hands = setup("anthropic", [{"text": "ok"}], args=["--open"], extra_env={"BROWSER": str(browser)})
    base = f"http://127.0.0.1:{hands.port}"
    link = wait_until(lambda: opened.exists() and opened.read_text().strip(), 30, "the browser to be opened")
    assert link.startswith(f"{base}/#signin="), link
    assert hands.token not in link, "the token is never in the URL"
    code = link.split("#signin=", 1)[1]

    pg = open_page(base)
    pg.page.goto(link)
    pg.page.get_by_role("button", name="New session").wait_for()
    assert pg.page.url == f"{base}/", f"the code stays in the address bar: {pg.page.url}"
    root = pg.page.get_by_label("Project root")
    assert root.input_value() == os.path.realpath(project)
    assert not any(code in url or hands.token in url for url in pg.requests), pg.requests
    assert not pg.foreign(), pg.foreign()
    # The root as it is filled in makes a session.
    pg.page.get_by_role("button", name="New session").click()
    pg.page.wait_for_url("**/#/s/*")
    sessions = hands.client.get("/v1/sessions").json()["sessions"]
    assert [s["root"] for s in sessions] == [os.path.realpath(project)], sessions

    # The same link again (another tab, which keeps no token) is refused, and says what to do.
    again = open_page(base)
    again.page.goto(link)
    alert = again.page.get_by_role("alert")
    alert.wait_for()
    text = alert.inner_text()
    assert "This sign-in link was already used or has expired" in text, text
    assert "hands serve --open" in text, text
    assert again.page.url == f"{base}/"
    assert again.page.get_by_label("Token").is_visible()
