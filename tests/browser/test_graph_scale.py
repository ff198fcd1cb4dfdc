"""The graph view on a tall graph: legible at the closest zoom, and a selection drawn on its own layer.

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


# The colour of the highlight layer's pixel under a page point (RGBA).
PIXEL_JS = """([x, y]) => { const c = document.querySelector('[data-testid=graph-highlight]'); const r = c.getBoundingClientRect();
  if (x < r.left || y < r.top || x >= r.right || y >= r.bottom) return null;
  return [...c.getContext('2d').getImageData(Math.floor((x - r.left) * c.width / r.width), Math.floor((y - r.top) * c.height / r.height), 1, 1).data]; }"""
YELLOW = [255, 204, 0, 255]


def test_selection_is_drawn_on_its_own_layer(expanded: Any) -> None:
    page = expanded
    rows = page.locator(ROWS)
    old = rows.nth(2).get_attribute("data-op-id")
    rows.nth(2).click()
    page.wait_for_function(f"id => document.querySelector('{GRAPH}').dataset.highlighted === id", arg=old)
    page.wait_for_timeout(600)  # the camera's animation to it
    page.evaluate(SPY_JS)
    other = rows.nth(5).get_attribute("data-op-id")
    rows.nth(5).click()
    page.wait_for_function(f"id => document.querySelector('{GRAPH}').dataset.highlighted === id", arg=other)
    page.wait_for_timeout(600)
    spy = page.evaluate("window.__spy")
    # selecting never touches sigma's nodes: no re-indexing, no node repainted (the camera's flight only re-draws)
    assert spy["process"] == 0 and spy["refreshed"] == [], spy
    assert page.get_attribute(GRAPH, "data-highlight-drawn") == "1"
    # the new node is covered in the selection's colour on the layer over the graph, the old one no longer
    at = lambda op: page.evaluate(PIXEL_JS, list(page.evaluate("id => window.edgescopeGraph.nodeViewport(id)", op).values()))  # noqa: E731
    assert at(other) == YELLOW
    old_px = at(old)
    assert old_px is not None and old_px != YELLOW, old_px  # still on screen (three tasks up), not highlighted
    # the node itself keeps its colour underneath
    assert page.evaluate(f"() => window.edgescopeGraph.colorOf('{other}')") != "#ffcc00"
    shot(page, "graph-selection-layer")
