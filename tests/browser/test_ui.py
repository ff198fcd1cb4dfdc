"""The web UI in a real browser (Debian Chromium via Playwright) against `edgescope serve`."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from testkit import modelzoo
from tests.browser.conftest import OWNER, shot

pytestmark = pytest.mark.browser

GRAPH = "[data-testid=graph]"
ROWS = "[data-testid=op-table] [role=row][data-op-id]"


def header_value(page: Any, metric: str) -> float:
    return float(page.get_attribute(f"[data-testid=total-{metric}]", "data-value"))


def open_model(page: Any, url: str, mid: str) -> None:
    page.goto(f"{url}/m/{mid}")
    page.wait_for_selector(f"{GRAPH}[data-state=rendered]")
    page.wait_for_selector("[data-testid=model-page][data-ready=true]")
    page.wait_for_selector(ROWS)


@pytest.fixture(scope="module")
def model_id(ui_server: Any, zoo: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    path = zoo.copy("mobilenet_v2_like", tmp_path_factory.mktemp("ui") / "mobilenet_v2_like.onnx")
    return ui_server.upload(path)


def test_sign_in_form(ui_server: Any, browser: Any) -> None:
    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    page = ctx.new_page()
    page.goto(ui_server.url + "/")
    page.fill("[data-testid=email]", OWNER["email"])
    page.fill("[data-testid=password]", OWNER["password"])
    shot(page, "sign-in")
    page.click("[data-testid=sign-in]")
    page.wait_for_selector("[data-testid=whoami]")
    assert OWNER["email"] in page.inner_text("[data-testid=whoami]") or ui_server.mock
    ctx.close()


def test_model_link_opened_signed_out_shows_the_model_after_sign_in(ui_server: Any, browser: Any, model_id: str) -> None:
    """index.html starts the model page's requests before the app loads; signed out they fail with 401, and the page
    must make them again after sign-in instead of showing their error."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{ui_server.url}/m/{model_id}")
    page.fill("[data-testid=email]", OWNER["email"])
    page.fill("[data-testid=password]", OWNER["password"])
    page.click("[data-testid=sign-in]")
    page.wait_for_selector(f"{GRAPH}[data-state=rendered]")
    page.wait_for_selector("[data-testid=model-page][data-ready=true]")
    assert int(page.get_attribute(GRAPH, "data-nodes")) > 0
    assert page.locator(".error").count() == 0 and not errors
    ctx.close()


def test_model_page_uses_the_requests_index_html_started(ui_server: Any, page: Any, model_id: str) -> None:
    """Signed in, the graph is requested once, by index.html's inline script: before the app's code has even loaded
    its lazy graph chunk, and taken over by the app rather than sent again."""
    urls: list[str] = []
    page.on("request", lambda r: urls.append(r.url))
    open_model(page, ui_server.url, model_id)
    graph = [k for k, u in enumerate(urls) if "/graph?" in u]
    chunk = [k for k, u in enumerate(urls) if "/assets/GraphView" in u]
    assert len(graph) == 1 and chunk, urls
    assert graph[0] < chunk[0], urls


def test_upload_by_drop_zone_shows_progress_then_ready(ui_server: Any, page: Any, tmp_path: Path) -> None:
    path = modelzoo.tiny_cnn(tmp_path / "tiny_cnn.onnx")
    page.goto(ui_server.url + "/")
    page.set_input_files("[data-testid=upload-input]", str(path))
    # the form reads the model's inputs in the browser, then uploads on request
    page.wait_for_selector("[data-testid=upload-form][data-read=ok] [data-testid=input-editor] tr[data-input]")
    page.click("[data-testid=upload-submit]")
    row = page.locator(".model-row", has_text="tiny_cnn.onnx").first
    row.wait_for()
    shot(page, "list-uploading")
    page.wait_for_selector(".model-row[data-status=ready] >> text=tiny_cnn.onnx", timeout=300_000)
    shot(page, "list-ready")
    page.click(".model-row[data-status=ready] >> text=tiny_cnn.onnx")
    page.wait_for_selector(f"{GRAPH}[data-state=rendered]")
    assert int(page.get_attribute(GRAPH, "data-nodes")) > 0
    page.wait_for_selector("[data-testid=model-page][data-ready=true]")  # the table's data follows the graph
    for metric in ("latency", "fps", "peak", "power", "size"):
        assert page.get_attribute(f"[data-testid=total-{metric}]", "data-value")
    shot(page, "model-tiny")


def test_sort_by_latency_and_search(ui_server: Any, page: Any, model_id: str) -> None:
    open_model(page, ui_server.url, model_id)
    page.click("[data-testid=op-table] button.th[data-col=latency_ms]")
    times = [float(t.split()[-1]) for t in page.locator(f"{ROWS} [data-col=latency_ms]").all_inner_texts()[:10]]
    assert times == sorted(times, reverse=True) and len(times) > 2
    shot(page, "table-sorted")
    typ = page.locator(f"{ROWS} [data-col=type]").first.inner_text()
    page.fill("[data-testid=search]", typ)
    page.wait_for_timeout(200)
    types = page.locator(f"{ROWS} [data-col=type]").all_inner_texts()
    assert types and all(typ.lower() in t.lower() for t in types)
    # filtered rows are highlighted in the graph: the others are dimmed
    assert int(page.get_attribute(GRAPH, "data-dimmed")) >= 0
    shot(page, "table-search")


def test_select_row_highlights_node(ui_server: Any, page: Any, model_id: str) -> None:
    open_model(page, ui_server.url, model_id)
    row = page.locator(ROWS).nth(3)
    op = row.get_attribute("data-op-id")
    row.click()
    page.wait_for_function("id => document.querySelector('[data-testid=graph]').dataset.highlighted.split(',').includes(id)", arg=op)
    page.wait_for_selector(f"{GRAPH}[data-state=rendered]")
    assert page.get_attribute(GRAPH, "data-selected") == op
    page.wait_for_timeout(500)  # camera animation
    pos = page.evaluate("id => window.edgescopeGraph.nodeViewport(id)", op)
    box = page.locator(".graph-stage").bounding_box()
    assert box["x"] <= pos["x"] <= box["x"] + box["width"] and box["y"] <= pos["y"] <= box["y"] + box["height"]
    shot(page, "graph-selected")


# Counts the edge layer's drawn pixels after each sigma render: a WebGL canvas can be read back only right after
# it was drawn, so the count is taken in sigma's afterRender.
EDGE_PIXELS_HOOK = """() => {
  const s = window.edgescopeGraph.sigma(), c = s.getCanvases().edges, t = document.createElement('canvas');
  window.__edgePixels = [];
  s.on('afterRender', () => {
    t.width = c.width; t.height = c.height;
    const g = t.getContext('2d');
    g.drawImage(c, 0, 0);
    const d = g.getImageData(0, 0, t.width, t.height).data;
    let n = 0;
    for (let i = 3; i < d.length; i += 4) if (d[i]) n++;
    window.__edgePixels.push(n);
  });
}"""


def test_moving_camera_skips_edges_then_draws_them_and_hovers_again(ui_server: Any, page: Any, model_id: str) -> None:
    """Big graphs skip edges and hover picking while the camera moves; both must come back once it stops, by a
    plain render (sigma's own hideEdgesOnMove ended each drag with a full refresh, a 300 ms hitch at 50k nodes)."""
    open_model(page, ui_server.url, model_id)
    row = page.locator(ROWS).nth(3)
    op = row.get_attribute("data-op-id")
    row.click()  # brings the node into view, expanded
    page.wait_for_timeout(600)
    page.evaluate("window.edgescopeGraph.hideEdgesWhileMoving(true)")
    page.evaluate(EDGE_PIXELS_HOOK)
    box = page.locator(".graph-sigma").bounding_box()
    cx, cy = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(cx, cy)
    page.mouse.down()
    for k in range(12):
        page.mouse.move(cx - 3 * k, cy - 2 * k)
    page.mouse.up()
    page.wait_for_timeout(1000)
    drawn = page.evaluate("window.__edgePixels")
    assert len(drawn) >= 3 and 0 in drawn[:-1], f"edges were drawn while the camera moved: {drawn}"
    assert drawn[-1] > 0, f"edges not drawn again after the drag: {drawn}"
    # hover picks again once still: the tooltip of the node under the mouse
    pos = page.evaluate("id => window.edgescopeGraph.nodeViewport(id)", op)
    page.mouse.move(pos["x"] + 20, pos["y"] + 20)
    page.mouse.move(pos["x"], pos["y"], steps=3)
    tip = page.locator(".graph-tip")
    tip.wait_for()
    assert op in tip.inner_text()


def test_lasso_in_graph_filters_table(ui_server: Any, page: Any, model_id: str) -> None:
    open_model(page, ui_server.url, model_id)
    rows = page.locator(ROWS)
    ids = [rows.nth(k).get_attribute("data-op-id") for k in range(3)]
    rows.nth(1).click()  # brings the neighbourhood into view, expanded
    page.wait_for_timeout(600)
    pts = [page.evaluate("id => window.edgescopeGraph.nodeViewport(id)", i) for i in ids]
    pts = [p for p in pts if p]
    assert pts, "no selected-neighbour nodes drawn"
    x0, x1 = min(p["x"] for p in pts) - 12, max(p["x"] for p in pts) + 12
    y0, y1 = min(p["y"] for p in pts) - 12, max(p["y"] for p in pts) + 12
    page.click("[data-testid=lasso]")
    page.mouse.move(x0, y0)
    page.mouse.down()
    for x, y in ((x1, y0), (x1, y1), (x0, y1), (x0, y0 + 1)):
        page.mouse.move(x, y, steps=4)
    page.mouse.up()
    chip = page.locator("[data-testid=lasso-chip]")
    chip.wait_for()
    n = int(chip.inner_text().split()[1])
    shown = [r.get_attribute("data-op-id") for r in page.locator(ROWS).all()]
    assert 0 < n == len(shown) <= 10
    assert set(i for i, p in zip(ids, pts) if p) <= set(shown)
    shot(page, "graph-lasso")


def test_per_op_option_changes_header_by_predicted_amount(ui_server: Any, page: Any, model_id: str) -> None:
    open_model(page, ui_server.url, model_id)
    before = header_value(page, "latency")
    # a convolution (ids may contain and start with "/": the per-op route must take them)
    ids = page.locator(ROWS).evaluate_all("rs => rs.map(r => [r.dataset.opId, r.innerText])")
    op = next((i for i, text in ids if "Conv" in text), ids[0][0])
    row = page.locator(f"{ROWS}[data-op-id='{op}']")
    row.locator("button", has_text="Optimize").click()
    dlg = page.locator("[data-testid=op-dialog]")
    dlg.locator("[data-testid=op-options] tbody tr").first.wait_for()
    kernels = dlg.locator("[data-testid=filter-kernel] option").evaluate_all("os => os.map(o => o.value)")
    by, part = ("filter-kernel", 2) if "int8" in kernels else ("filter-input", 0)
    dlg.locator(f"[data-testid={by}]").select_option("int8")
    shot(page, "op-dialog-int8")
    cands = dlg.locator("[data-testid=op-options] tbody tr")
    assert cands.count() > 0
    assert all(c.split("/")[part] == "int8" for c in cands.evaluate_all("rs => rs.map(r => r.dataset.combo)"))
    # one that changes the total (the first may equal the current choice)
    pick = next(c for c in cands.all() if float(c.get_attribute("data-total-delta")) != 0)
    combo = pick.get_attribute("data-combo")
    total = float(pick.get_attribute("data-total"))
    delta = float(pick.get_attribute("data-total-delta"))
    pick.locator("button", has_text="Apply").click()
    page.wait_for_function(f"() => document.querySelector('[data-testid=total-latency]').dataset.value !== '{before!r}'")
    after = header_value(page, "latency")
    assert after == total  # the header shows exactly what the dialog predicted
    assert after - before == pytest.approx(delta, abs=1e-12)
    marked = page.locator(f"{ROWS}[data-op-id='{op}']")
    assert "optimized" in marked.get_attribute("class")
    assert marked.locator("[data-col=combo]").inner_text() == combo
    shot(page, "op-applied")


def test_model_wide_option_undo_reset(ui_server: Any, page: Any, model_id: str) -> None:
    open_model(page, ui_server.url, model_id)
    base = header_value(page, "latency")
    page.click("[data-testid=optimize-model]")
    dlg = page.locator("[data-testid=model-wide-dialog]")
    presets = dlg.locator("tr[data-preset]").evaluate_all("rs => rs.map(r => [r.dataset.preset, +r.dataset.latency])")
    name, predicted = next((p, v) for p, v in presets if p != "fp32" and v != base)
    dlg.locator(f"tr[data-preset='{name}']").click()
    shot(page, "model-wide-dialog")
    dlg.locator("[data-testid=apply-preset]").click()
    assert header_value(page, "latency") == predicted
    assert name in page.inner_text("[data-testid=state-line]")
    page.click("[data-testid=undo]")
    assert header_value(page, "latency") == base
    page.click("[data-testid=optimize-model]")
    page.locator(f"[data-testid=model-wide-dialog] tr[data-preset='{name}']").click()
    page.click("[data-testid=apply-preset]")
    assert header_value(page, "latency") == predicted
    page.click("[data-testid=reset]")
    assert header_value(page, "latency") == base
    page.click("[data-testid=undo]")
    assert header_value(page, "latency") == predicted
    shot(page, "model-wide-undo")


def test_failed_upload_shows_its_error(ui_server: Any, page: Any, tmp_path: Path) -> None:
    bad = tmp_path / "not_a_model.onnx"
    bad.write_bytes(b"this is not a model at all\n" * 10)
    page.goto(ui_server.url + "/")
    page.set_input_files("[data-testid=upload-input]", str(bad))
    page.wait_for_selector("[data-testid=upload-form][data-read=later]")  # not a model the browser can read
    page.click("[data-testid=upload-submit]")
    err = page.locator("[data-testid=upload-error], .model-row:has-text('not_a_model.onnx') [data-testid=model-error]").first
    err.wait_for(timeout=120_000)
    text = err.inner_text()
    assert "not_a_model.onnx" in text or len(text) > 20
    shot(page, "upload-failed")


def test_code_location_panel_and_browser(ui_server: Any, page: Any, model_id: str, tmp_path: Path) -> None:
    if ui_server.mock:
        pytest.skip("source tracking needs the real pipeline")
    path = modelzoo.pt2_net_with_sources(tmp_path / "net_with_sources.pt2")
    mid = ui_server.upload(path, targets=["ort-cpu/host"])
    open_model(page, ui_server.url, mid)
    page.fill("[data-testid=search]", "conv")
    page.wait_for_timeout(200)
    page.locator(ROWS).first.click()
    loc = page.locator("[data-testid=code-loc]").first
    loc.wait_for()
    file_line = page.locator("[data-testid=code-loc-file]").first.inner_text()
    file, line = file_line.rsplit(":", 1)
    assert file.endswith(".py") and int(line) > 0, file_line
    shot(page, "code-panel")
    page.locator("[data-testid=code-loc-file]").first.click()
    page.wait_for_selector("[data-testid=code-view] .code-line.hl")
    hl = page.locator("[data-testid=code-view] .code-line.hl").first
    assert hl.get_attribute("data-line") == line
    code = loc.locator("code").inner_text().strip()
    assert code and code in hl.inner_text()
    assert hl.is_visible() and page.locator("[data-testid=code-view] .hljs-keyword").count() > 0
    assert page.locator("[data-testid=code-tree] li").count() >= 2  # net.py and layers.py
    shot(page, "code-browser")
    page.keyboard.press("Escape")
    # an ONNX model has no sources
    open_model(page, ui_server.url, model_id)
    page.locator(ROWS).first.click()
    page.wait_for_selector("[data-testid=no-sources]")
    assert page.inner_text("[data-testid=no-sources]") == "no source locations for this model"
