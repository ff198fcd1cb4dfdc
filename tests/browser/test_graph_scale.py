"""The graph view on a tall graph: legible at the closest zoom, and a selection that repaints only what changed.

A 4,000-task synthetic model from testkit/mock_server.py (its own server, whatever EDGESCOPE_UI_MOCK says): tall
enough, fully expanded (~240,000 layout units), that a fixed closest zoom left nodes under a pixel, and quick to
open. The 50,000- and 200,000-task figures are benchmarks/ui.py's.
"""
from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.conftest import ROOT, shot

pytestmark = pytest.mark.browser

GRAPH = "[data-testid=graph]"
ROWS = "[data-testid=op-table] [role=row][data-op-id]"
TASKS = 4000

# Counts sigma's full re-indexations (process) and the nodes each refresh repaints, from now on.
SPY_JS = """() => {
  const s = window.edgescopeGraph.sigma();
  window.__spy = { process: 0, refreshed: [] };
  const process = s.process.bind(s), refresh = s.refresh.bind(s);
  s.process = (...a) => { window.__spy.process++; return process(...a); };
  s.refresh = (o) => { window.__spy.refreshed.push(o && o.partialGraph ? (o.partialGraph.nodes || []).length : -1); return refresh(o); };
}"""


@pytest.fixture(scope="module")
def tall(browser: Any) -> Iterator[tuple[str, str]]:
    from testkit.mock_server import serve

    srv = serve(0, ROOT / "web" / "dist", preload=str(TASKS))
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}", next(iter(srv.store.models.values()))["id"]  # type: ignore[attr-defined]
    finally:
        srv.shutdown()


@pytest.fixture
def expanded(browser: Any, tall: tuple[str, str]) -> Iterator[Any]:
    url, mid = tall
    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    assert ctx.request.post(f"{url}/api/auth/login", data={"email": "dev@example.com", "password": "x"}).ok
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.set_default_timeout(60_000)
    page.goto(f"{url}/m/{mid}")
    page.wait_for_selector("[data-testid=model-page][data-ready=true]")
    page.evaluate("window.edgescopeGraph.expandAll()")
    page.wait_for_function(f"() => {{ const g = document.querySelector('{GRAPH}'); "
                           f"return g.dataset.state === 'rendered' && +g.dataset.nodes >= {TASKS}; }}")
    try:
        yield page
    finally:
        ctx.close()
    assert not errors, f"uncaught errors in the page: {errors}"


def test_closest_zoom_shows_nodes_and_labels(expanded: Any) -> None:
    page = expanded
    op = f"t{TASKS // 2 + 1}"
    camera = "() => { const s = window.edgescopeGraph.sigma(); return [s.getCamera().getState().ratio, s.getSetting('minCameraRatio')]; }"
    # Wheel in on the node until the camera stops at its closest. Each wheel step is an animation, and a step that
    # comes during the last one zooms from where it is: a fixed count of fast steps fell short on a quiet machine.
    for _ in range(60):
        ratio, closest = page.evaluate(camera)
        if ratio <= closest * 1.001:
            break
        v = page.evaluate("id => window.edgescopeGraph.nodeViewport(id)", op)
        page.mouse.move(v["x"], v["y"])
        page.mouse.wheel(0, -600)
        page.wait_for_timeout(100)
    page.wait_for_timeout(800)  # the zoom animation ends, labels come back
    cam = page.evaluate(camera)
    assert cam[0] == pytest.approx(cam[1]) and cam[1] < 0.002, cam  # the closest zoom follows the graph's extent
    # the node is drawn big enough to read and its label is drawn
    px = page.evaluate(f"() => {{ const s = window.edgescopeGraph.sigma(); return s.scaleSize(s.getNodeDisplayData('o{TASKS // 2 + 1}').size); }}")
    assert px >= 8, px
    labels = page.evaluate("() => [...window.edgescopeGraph.sigma().displayedNodeLabels]")
    assert f"o{TASKS // 2 + 1}" in labels, labels[:20]
    shot(page, "graph-closest-zoom")


def test_selection_repaints_only_the_changed_nodes(expanded: Any) -> None:
    page = expanded
    rows = page.locator(ROWS)
    rows.nth(2).click()
    page.wait_for_function(f"id => document.querySelector('{GRAPH}').dataset.highlighted === id",
                           arg=rows.nth(2).get_attribute("data-op-id"))
    page.wait_for_timeout(600)  # the camera's animation to it
    page.evaluate(SPY_JS)
    other = rows.nth(5).get_attribute("data-op-id")
    rows.nth(5).click()
    page.wait_for_function(f"id => document.querySelector('{GRAPH}').dataset.highlighted === id", arg=other)
    page.wait_for_timeout(600)
    spy = page.evaluate("window.__spy")
    # the old and the new selected node are repainted; the graph is never re-indexed
    assert spy["process"] == 0 and spy["refreshed"] == [2], spy
    assert page.evaluate(f"() => window.edgescopeGraph.colorOf('{other}')") == "#ffcc00"
    assert page.evaluate(f"() => window.edgescopeGraph.colorOf('{rows.nth(2).get_attribute('data-op-id')}')") != "#ffcc00"
