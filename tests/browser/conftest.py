"""Fixtures for the browser tests: Debian's Chromium through Playwright, and the server the UI talks to.

`ui_server` is the real `edgescope serve` (the session-wide `live_server` of tests/conftest.py). With
EDGESCOPE_UI_MOCK=1 it is testkit/mock_server.py instead (synthetic data; for UI work without the pipeline).
"""
from __future__ import annotations

import os
import threading
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "artifacts" / "screenshots"
CHROMIUM = os.environ.get("EDGESCOPE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


# the account tests/conftest.py's live_server signs up
OWNER = {"email": "owner@example.com", "password": "owner password 1"}


@dataclass
class UiServer:
    url: str
    mock: bool
    _live: Any = None

    def upload(self, path: Path, wait: bool = True, **fields: Any) -> str:
        """Upload through the API (not the UI) and return the model id once ready (fields: e.g. targets=[...])."""
        if self._live is not None:
            m = self._live.upload(path, wait=wait, **fields)
            return m["id"] if isinstance(m, dict) else m
        with open(path, "rb") as f:
            r = requests.post(f"{self.url}/api/models", files={"file": (path.name, f)}, timeout=60)
        r.raise_for_status()
        mid = r.json()["id"]
        if wait:
            import time
            for _ in range(600):
                if requests.get(f"{self.url}/api/models/{mid}", timeout=10).json()["status"] in ("ready", "failed"):
                    break
                time.sleep(0.2)
        return mid


@pytest.fixture(scope="session")
def ui_server(request: pytest.FixtureRequest) -> Iterator[UiServer]:
    if not (ROOT / "web" / "dist" / "index.html").exists():
        pytest.fail("web/dist is not built: run `make web` (cd web && npm ci && npm run build)")
    if os.environ.get("EDGESCOPE_UI_MOCK") == "1":
        from testkit.mock_server import serve

        srv = serve(0, ROOT / "web" / "dist", stage_seconds=0.25)
        t = threading.Thread(target=srv.serve_forever, daemon=True)
        t.start()
        try:
            yield UiServer(url=f"http://127.0.0.1:{srv.server_address[1]}", mock=True)
        finally:
            srv.shutdown()
        return
    live = request.getfixturevalue("live_server")
    yield UiServer(url=live.url, mock=False, _live=live)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"no Chromium at {CHROMIUM}: `make test` installs Debian's chromium")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


_CALL_PASSED = pytest.StashKey[bool]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item,
                              call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Whether the test's own call passed, for `page`'s teardown."""
    report = yield
    if report.when == "call":
        item.stash[_CALL_PASSED] = report.passed
    return report


@pytest.fixture
def page(browser: Any, ui_server: UiServer, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A 1280x800 page signed in as the owner of the models the tests upload. A test that did not pass leaves a
    screenshot of where its page ended (`<test>-end.png` in artifacts/screenshots; one per test cost ~45 of them a
    run)."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    r = ctx.request.post(f"{ui_server.url}/api/auth/login", data=OWNER)
    assert r.ok, r.text()
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.set_default_timeout(30_000)
    try:
        yield pg
    finally:
        if not request.node.stash.get(_CALL_PASSED, False):
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            try:
                pg.screenshot(path=str(SCREENSHOTS / f"{request.node.name}-end.png"))
            except Exception:  # noqa: BLE001 - a closed page has nothing to show
                pass
        ctx.close()
    assert not errors, f"uncaught errors in the page: {errors}"


def shot(page: Any, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"))
