"""Web UI benchmark in headless Chromium (Debian's, through Playwright). Prints figures.

For models of 1,000 / 10,000 / 50,000 tasks, namespaced and flat names (`--llm`: also a decoder's structure, as
benchmarks/pipeline.py's `llm_like` writes it, at each size, e.g. `--sizes 200000 --flat no --llm`):
  - time from opening /m/<id> (navigation start, in the page's clock) to the first rendered graph (graph root
    data-state="rendered"; the other viewers: their first drawn graph, see *_DRAWN), with where it went: the graph
    worker's phases and the page's timeline (downloads, the page's performance marks; TIMELINE_JS)
  - time to the whole graph drawn (every group expanded, every task a node)
  - median / p95 frame time during a scripted zoom and pan (requestAnimationFrame intervals)
  - time to sort and to filter the table (click to painted frame)
  - distributions (the whole graph expanded): time to open the chart, median / p95 frame time while brushing a
    histogram range and a scatter rectangle with the mouse, including the frames that apply the brushed selection
    to the table, graph and timeline; mouse-up to the selection applied; a table click to its highlight in the chart

Data: by default testkit/mock_server.py serves synthetic models of those sizes (the UI's cost only; API
responses are fetched once before timing so server time is excluded). `--server URL --models ID,ID` measures
models already uploaded to a running `edgescope serve` instead (signed in with --email/--password).

Comparisons, in the same run so the shared machine's load hits every system alike:
  - `--dist A,B`: several builds of web/ (e.g. before / after a change) on the same synthetic models
  - `--netron BIN` / `--model-explorer BIN` (or $EDGESCOPE_NETRON / $EDGESCOPE_MODEL_EXPLORER; Netron from PyPI
    `netron` in a venv of its own, Model Explorer from the project's venv, where `ai-edge-model-explorer` and
    `model-explorer-onnx` are pinned): the same graphs written as ONNX files (same node names and edges), whole graph
    against whole graph, each by its own "done" signal (Netron: its layout applied and shown, not its first SVG node,
    which exists during layout; Model Explorer: its collapsed first view, then "Expand all layers" until the page is
    quiet), and frame times while moving; a viewer that is absent or fails is named with its reason, never given a
    figure. `--onnx FILES` measures given files.

    python benchmarks/ui.py [--sizes 1000,10000,50000] [--flat both|yes|no] [--llm] [--server URL --models IDS]
        [--dist web/dist,/tmp/dist-before] [--netron /tmp/me-venv/bin/netron]
        [--model-explorer /tmp/me-venv/bin/model-explorer] [--first-view-only] [--repeat N]
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]

FRAME_JS = """async ([steps, kind]) => {
  const stage = document.querySelector('.graph-stage');
  const r = stage.getBoundingClientRect();
  const times = [];
  let last = performance.now();
  let run = true;
  const tick = (t) => { times.push(t - last); last = t; if (run) requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
  const cx = r.left + r.width / 2, cy = r.top + r.height / 2;
  const ev = (type, x, y, extra = {}) => new MouseEvent(type, { clientX: x, clientY: y, bubbles: true, cancelable: true, ...extra });
  const target = stage.querySelector('.graph-sigma canvas:last-child') || stage;
  const sleep = (ms) => new Promise((res) => setTimeout(res, ms));
  for (let i = 0; i < steps; i++) {
    if (kind === 'zoom') {
      target.dispatchEvent(new WheelEvent('wheel', { clientX: cx, clientY: cy, deltaY: i < steps / 2 ? -120 : 120, bubbles: true, cancelable: true }));
    } else {
      if (i === 0) target.dispatchEvent(ev('mousedown', cx, cy, { button: 0, buttons: 1 }));
      const x = cx + 200 * Math.sin(i / steps * Math.PI * 2), y = cy + 120 * Math.cos(i / steps * Math.PI * 2) - 120;
      target.dispatchEvent(ev('mousemove', x, y, { buttons: 1 }));
      if (i === steps - 1) target.dispatchEvent(ev('mouseup', x, y, { button: 0 }));
    }
    await sleep(16);
  }
  await sleep(300);
  run = false;
  return times.slice(2);
}"""

TIMED_JS = """async ([action]) => {
  const t0 = performance.now();
  if (action === 'sort') document.querySelector('[data-testid=op-table] button.th[data-col=latency_ms]').click();
  else if (action === 'sort2') document.querySelector('[data-testid=op-table] button.th[data-col=name]').click();
  else {
    const el = document.querySelector('[data-testid=search]');
    const set = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value').set;
    set.call(el, action === 'filter' ? 'FusedConv' : '');
    el.dispatchEvent(new Event('input', { bubbles: true }));
  }
  await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
  return [performance.now() - t0, +document.querySelector('[data-testid=op-table]').dataset.rows];
}"""


FRAMES_START_JS = """() => {
  window.__frames = []; window.__framesRun = true;
  let last = performance.now();
  const tick = (t) => { window.__frames.push(t - last); last = t; if (window.__framesRun) requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
}"""
FRAMES_STOP_JS = "() => { window.__framesRun = false; return window.__frames.slice(2); }"
# the chart writes data-selected whenever the shared selection changes (also to the same count): -1 marks "not yet"
CHART_MARK_JS = "() => { document.querySelector('[data-testid=chart]').dataset.selected = '-1'; return performance.now(); }"
CHART_APPLIED_JS = """() => new Promise((res) => {
  const el = document.querySelector('[data-testid=chart]');
  const t0 = performance.now();
  const poll = () => el.dataset.selected !== '-1' ? requestAnimationFrame(() => setTimeout(() => res(performance.now()), 0))
    : performance.now() - t0 > 20000 ? res(NaN) : setTimeout(poll, 2);
  poll();
})"""


def measure_brush(page, prefix: str) -> dict:  # noqa: ANN001
    """Brushing on the distributions with the real mouse (Playwright's input events), three brushes per chart kind,
    each selecting a different range, then a table click highlighted in the chart. Keys start with `prefix`; the
    panel is closed again at the end."""
    t0 = page.evaluate("performance.now()")
    page.click("[data-testid=views-charts]")
    page.wait_for_selector("[data-testid=chart] canvas")
    res: dict = {"chart_open_ms": page.evaluate(CHART_APPLIED_JS.replace("!== '-1'", "!== undefined")) - t0}
    box = page.locator("[data-testid=chart]").bounding_box()
    for kind in ("histogram", "scatter"):
        if kind == "scatter":
            page.click("[data-testid=chart-scatter]")
            page.select_option("[data-testid=chart-x]", "macs")
            page.select_option("[data-testid=chart-y]", "latency")
            page.wait_for_timeout(500)
            box = page.locator("[data-testid=chart]").bounding_box()  # its legend above moved it
        frames: list[float] = []
        applied: list[float] = []
        selected: list[int] = []
        for rep in range(3):
            x0, x1 = box["x"] + box["width"] * (0.15 + 0.2 * rep), box["x"] + box["width"] * 0.92
            y0, y1 = ((box["y"] + box["height"] * 0.5,) * 2 if kind == "histogram"
                      else (box["y"] + box["height"] * 0.2, box["y"] + box["height"] * (0.8 - 0.15 * rep)))
            page.evaluate(FRAMES_START_JS)
            page.mouse.move(x0, y0)
            page.mouse.down()
            for i in range(1, 31):
                page.mouse.move(x0 + (x1 - x0) * i / 30, y0 + (y1 - y0) * i / 30)
                page.wait_for_timeout(16)
            t_up = page.evaluate(CHART_MARK_JS)
            page.mouse.up()
            applied.append(page.evaluate(CHART_APPLIED_JS) - t_up)
            page.wait_for_timeout(300)
            frames += page.evaluate(FRAMES_STOP_JS)
            selected.append(int(page.get_attribute("[data-testid=chart]", "data-selected")))
        res[f"{kind}_brush_frame_median_ms"] = statistics.median(frames)
        res[f"{kind}_brush_frame_p95_ms"] = pct(frames, 95)
        res[f"{kind}_brush_frame_max_ms"] = max(frames)  # the frame that applies a brush: one in ~50, below p95
        res[f"{kind}_brush_apply_ms"] = statistics.median(applied)
        res[f"{kind}_brushed_tasks"] = selected
    # a selection made in the table, highlighted in the scatter
    page.evaluate(FRAMES_START_JS)
    t_click = page.evaluate(CHART_MARK_JS)
    page.locator("[data-testid=op-table] .optable-row").nth(3).click()
    res["table_to_chart_ms"] = page.evaluate(CHART_APPLIED_JS) - t_click
    page.wait_for_timeout(300)
    fr = page.evaluate(FRAMES_STOP_JS)
    res["table_to_chart_frame_p95_ms"] = pct(fr, 95)
    page.click("[data-testid=views-charts]")
    page.wait_for_timeout(300)
    return {prefix + k: v for k, v in res.items()}


def first_drawn_script(condition: str) -> str:
    """Page init script: window.__firstDrawn = performance.now() (ms since navigation) at the first DOM change after
    which `condition` holds. A MutationObserver runs right after the task that drew, so the figure does not depend on
    when the busy main thread next lets Playwright poll (our table's data is parsed right after the first drawing)."""
    return f"""(() => {{
  const done = () => {{ try {{ return !!({condition}); }} catch (e) {{ return false; }} }};
  const obs = new MutationObserver(() => {{ if (done()) {{ window.__firstDrawn = performance.now(); obs.disconnect(); }} }});
  const start = () => obs.observe(document.documentElement, {{ subtree: true, childList: true, attributes: true }});
  if (document.documentElement) start(); else document.addEventListener('DOMContentLoaded', start);
}})();"""


OURS_DRAWN = "document.querySelector('[data-testid=graph][data-state=rendered]')"
# Netron builds every node's SVG before it lays the graph out (its first `svg .node` exists during layout, with the
# splash screen still up); it shows the graph, `show('default')` on <body>, once the layout is applied.
NETRON_DRAWN = ("document.body.classList.contains('default') && !document.body.classList.contains('spinner') "
                "&& document.querySelector('svg .node')")
# Model Explorer (Angular + WebGL) shows a spinner with "Processing graph..." while its worker lays the graph out;
# the graph is on screen once its webgl-renderer's canvas exists and no spinner is left.
ME_DRAWN = "document.querySelector('webgl-renderer canvas') && !document.querySelector('mat-spinner')"
# Model Explorer opens a namespaced graph collapsed to its top layer (one box here). Its "Expand all layers" button lays
# the whole graph out in its web worker (the page stays idle meanwhile) and draws it on WebGL without a DOM sign of
# being done: the expansion is done at the later of the worker's last message and the end of the last frame longer
# than 100 ms, once at least one message came back and 2 s passed with neither.
ME_WORKER_HOOK = """(() => {
  window.__workerMsgs = [];
  const W = window.Worker;
  window.Worker = class extends W {
    constructor(...a) { super(...a); this.addEventListener('message', () => window.__workerMsgs.push(performance.now())); }
  };
})();"""
ME_EXPAND_JS = """async ([limit]) => {
  const gaps = [];
  let last = performance.now(), run = true;
  const tick = (t) => { if (t - last > 100) gaps.push(t); last = t; if (run) requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
  const t0 = performance.now();
  const icon = [...document.querySelectorAll('mat-icon')].find((e) => e.textContent.trim() === 'unfold_more_double');
  if (!icon) { run = false; return 'no button'; }
  const before = window.__workerMsgs.length;
  icon.closest('div').click();
  while (true) {
    await new Promise((r) => setTimeout(r, 250));
    const msgs = window.__workerMsgs.slice(before);
    const end = Math.max(t0, gaps.length ? gaps[gaps.length - 1] : t0, msgs.length ? msgs[msgs.length - 1] : t0);
    if (msgs.length && performance.now() - end > 2000) { run = false; return end - t0; }
    if (performance.now() - t0 > limit) { run = false; return 'busy'; }
  }
}"""


# The page's own marks (ms since navigation; the first of each name) and the graph's download: where the first view's
# and the table's time goes (graph bytes in hand, the worker's first layout and its columns received, drawn, table data).
TIMELINE_JS = """() => {
  const out = {};
  for (const [name, part] of [['graph', 'format=columns'], ['ops', '/ops?'], ['options', '/options?']]) {
    const r = performance.getEntriesByType('resource').find((e) => e.name.includes(part));
    if (r) out[name + '-download'] = [Math.round(r.startTime), Math.round(r.responseEnd)];
  }
  for (const m of performance.getEntriesByType('mark'))
    if (m.name.startsWith('edgescope:') && !(m.name.slice(10) in out)) out[m.name.slice(10)] = Math.round(m.startTime);
  return out;
}"""


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))] if xs else float("nan")


def measure(browser, base: str, mid: str, login: dict, first_only: bool = False) -> dict:
    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    r = ctx.request.post(f"{base}/api/auth/login", data=login)
    assert r.ok, r.text()
    for ep in ("graph", "graph?view=compiled&format=columns", "ops", "options"):  # warm the server's cache: time the UI, not the API
        assert ctx.request.get(f"{base}/api/models/{mid}/{ep}", timeout=600_000).ok
    page = ctx.new_page()
    page.set_default_timeout(600_000)
    page.add_init_script(first_drawn_script(OURS_DRAWN))
    page.goto(f"{base}/m/{mid}")
    first = page.wait_for_function("window.__firstDrawn", polling=50).json_value() / 1000
    first_nodes = int(page.get_attribute('[data-testid=graph]', 'data-nodes'))
    # the graph worker's first view by phase (ms: parse, hierarchy, index, layout), where the build reports it
    phases = page.get_attribute('[data-testid=graph]', 'data-phases')
    page.wait_for_selector('[data-testid=model-page][data-ready=true]')
    table_ready = page.evaluate("performance.now()") / 1000
    n = int(page.get_attribute('[data-testid=op-table]', 'data-rows'))
    res: dict = {"tasks": n, "first_render_s": first, "first_nodes": first_nodes, "table_ready_s": table_ready,
                 "worker_phases_ms": json.loads(phases) if phases else None, "timeline_ms": page.evaluate(TIMELINE_JS)}
    zoom = page.evaluate(FRAME_JS, [60, "zoom"])
    pan = page.evaluate(FRAME_JS, [60, "pan"])
    fr = zoom + pan
    res.update(top_frame_median_ms=statistics.median(fr), top_frame_p95_ms=pct(fr, 95))
    if first_only:
        ctx.close()
        return res
    sort = page.evaluate(TIMED_JS, ["sort"])[0]
    sort2 = page.evaluate(TIMED_JS, ["sort2"])[0]
    filt, shown = page.evaluate(TIMED_JS, ["filter"])
    unfilt = page.evaluate(TIMED_JS, ["clear"])[0]
    res.update(sort_ms=sort, sort_name_ms=sort2, filter_ms=filt, filter_rows=shown, clear_filter_ms=unfilt)
    res.update(measure_brush(page, "top_"))
    t1 = time.perf_counter()
    page.evaluate("window.edgescopeGraph.expandAll()")
    page.wait_for_function(f"() => {{ const g = document.querySelector('[data-testid=graph]'); return g.dataset.state === 'rendered' && +g.dataset.nodes >= {n}; }}",
                           polling=50)
    res["whole_graph_s"] = time.perf_counter() - t1
    res["whole_nodes"] = int(page.get_attribute('[data-testid=graph]', 'data-nodes'))
    page.wait_for_timeout(300)
    fr = page.evaluate(FRAME_JS, [60, "zoom"]) + page.evaluate(FRAME_JS, [60, "pan"])
    res.update(all_frame_median_ms=statistics.median(fr), all_frame_p95_ms=pct(fr, 95))
    res.update(measure_brush(page, "all_"))
    page.screenshot(path=str(ROOT / "artifacts" / "screenshots" / f"bench-{n}-{mid}.png"))
    ctx.close()
    return res


NETRON_FRAME_JS = """async ([steps]) => {
  const el = document.getElementById('target') || document.scrollingElement;
  const times = [];
  let last = performance.now(), run = true;
  const tick = (t) => { times.push(t - last); last = t; if (run) requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
  const r = el.getBoundingClientRect();
  for (let i = 0; i < steps; i++) {
    if (i < steps / 2) {  // its controls: ctrl+wheel zooms (re-scaling the whole SVG), the container scrolls
      el.dispatchEvent(new WheelEvent('wheel', { clientX: r.left + r.width / 2, clientY: r.top + r.height / 2, ctrlKey: true, deltaY: i < steps / 4 ? -12 : 12, bubbles: true, cancelable: true }));
    } else {
      el.scrollTop += i < steps * 3 / 4 ? 40 : -40;
      el.scrollLeft += i % 2 ? 10 : -10;
    }
    await new Promise((r) => setTimeout(r, 16));
  }
  await new Promise((r) => setTimeout(r, 300));
  run = false;
  return times.slice(2);
}"""


def free_port() -> int:
    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        return so.getsockname()[1]


def wait_http(url: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"{url} not up after {timeout_s:.0f} s")


def write_onnx(synth, path: Path) -> Path:
    """The mock server's synthetic model as an ONNX file with the same node names and edges, for the other viewers.
    Task types map to ONNX ops (FusedConv and Gemm to Conv, DepthwiseConv to a grouped Conv); the weights are two
    shared 1x1 initializers so the file stays small and only the graph's size varies."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    ch = 16
    inputs: dict[int, list[str]] = {}
    for a, b, _ in synth.edges:
        inputs.setdefault(b, []).append(f"x{a + 1}")
    nodes = []
    for i, op in enumerate(synth.ops):
        x, out = inputs.get(i, ["input"]), [f"x{i + 1}"]
        if op["type"] == "Add":
            nodes.append(helper.make_node("Add", x[:2], out, name=op["name"]))
        elif op["type"] == "DepthwiseConv":
            nodes.append(helper.make_node("Conv", [x[0], "Wd"], out, name=op["name"], group=ch))
        else:
            nodes.append(helper.make_node("Conv", [x[0], "W"], out, name=op["name"]))
    value = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, ch, 8, 8])  # noqa: E731
    weights = [numpy_helper.from_array(np.zeros((ch, ch, 1, 1), np.float32), "W"),
               numpy_helper.from_array(np.zeros((ch, 1, 1, 1), np.float32), "Wd")]
    graph = helper.make_graph(nodes, "synthetic", [value("input")], [value(f"x{synth.n}")], weights)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def measure_netron(browser, netron: str, path: str, timeout_s: float) -> dict:
    """Netron serving one file (`netron FILE --port P`): time to its graph drawn and frame times while scrolling."""
    port = free_port()
    proc = subprocess.Popen([netron, path, "--port", str(port), "--verbosity", "quiet"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        ctx = browser.new_context(viewport={"width": 1280, "height": 800})
        page = ctx.new_page()
        page.add_init_script(first_drawn_script(NETRON_DRAWN))
        # Netron replaces window.eval, which page.evaluate needs: evaluate over CDP instead.
        cdp = ctx.new_cdp_session(page)

        def ev(expr: str):  # noqa: ANN202
            return cdp.send("Runtime.evaluate", {"expression": expr, "returnByValue": True, "awaitPromise": True})["result"].get("value")

        wait_http(f"http://127.0.0.1:{port}/")
        t0 = time.perf_counter()
        page.goto(f"http://127.0.0.1:{port}/")
        try:
            page.click("button:has-text('Accept')", timeout=5000)  # first-run consent screen
        except Exception:  # noqa: BLE001 - not shown
            pass
        deadline = t0 + timeout_s
        while not ev("window.__firstDrawn") and time.perf_counter() < deadline:
            time.sleep(0.1)
        if not ev("window.__firstDrawn"):
            ctx.close()
            return {"first_render_s": float("nan"), "error": f"no graph after {timeout_s:.0f} s"}
        # Netron draws every node at once: its first view is the whole graph
        first = ev("window.__firstDrawn") / 1000
        res = {"first_render_s": first, "whole_graph_s": first, "nodes": ev("document.querySelectorAll('svg .node').length")}
        fr = ev(f"({NETRON_FRAME_JS})([60])")
        res.update(frame_median_ms=statistics.median(fr), frame_p95_ms=pct(fr, 95))
        page.screenshot(path=str(ROOT / "artifacts" / "screenshots" / f"bench-netron-{Path(path).stem}.png"))
        ctx.close()
        return res
    finally:
        proc.terminate()
        proc.wait(10)


ME_ERROR_JS = """() => { const e = document.querySelector('.error-message, .model-load-error, mat-error, .mat-mdc-snack-bar-label');
  return e ? e.innerText.slice(0, 200) : ''; }"""
ME_FRAME_JS = """async ([steps]) => {
  const el = document.querySelector('webgl-renderer canvas');
  const r = el.getBoundingClientRect();
  const cx = r.left + r.width / 2, cy = r.top + r.height / 2;
  const times = [];
  let last = performance.now(), run = true;
  const tick = (t) => { times.push(t - last); last = t; if (run) requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
  for (let i = 0; i < steps; i++) {
    // its controls: ctrl+wheel zooms, wheel pans
    const zoom = i < steps / 2;
    el.dispatchEvent(new WheelEvent('wheel', { clientX: cx, clientY: cy, ctrlKey: zoom, deltaY: zoom ? (i < steps / 4 ? -60 : 60) : 40 * Math.sin(i), deltaX: zoom ? 0 : 40 * Math.cos(i), bubbles: true, cancelable: true }));
    await new Promise((r) => setTimeout(r, 16));
  }
  await new Promise((r) => setTimeout(r, 300));
  run = false;
  return times.slice(2);
}"""


def measure_model_explorer(browser, me: str, path: str, timeout_s: float) -> dict:
    """Model Explorer serving one file with its ONNX adapter: time to the first drawn graph, then frame times."""
    port = free_port()
    proc = subprocess.Popen([me, path, "--port", str(port), "--no_open_in_browser", "--extensions=model_explorer_onnx"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_http(f"http://127.0.0.1:{port}/", 120)
        ctx = browser.new_context(viewport={"width": 1280, "height": 800})
        page = ctx.new_page()
        page.add_init_script(first_drawn_script(ME_DRAWN))
        page.add_init_script(ME_WORKER_HOOK)
        url = f"http://127.0.0.1:{port}/?data=" + urllib.request.quote(json.dumps({"models": [{"url": path}]}))
        page.goto(url)
        try:
            page.wait_for_function("window.__firstDrawn", polling=100, timeout=timeout_s * 1000)
        except Exception as e:  # noqa: BLE001 - a timeout or a crashed tab: report it as its failure
            err = ("" if page.is_closed() else page.evaluate(ME_ERROR_JS)) or f"no graph after {timeout_s:.0f} s ({type(e).__name__})"
            page.screenshot(path=str(ROOT / "artifacts" / "screenshots" / f"bench-me-{Path(path).stem}.png"))
            ctx.close()
            return {"first_render_s": float("nan"), "error": err}
        res: dict = {"first_render_s": page.evaluate("window.__firstDrawn") / 1000}
        page.wait_for_timeout(300)
        expand = page.evaluate(ME_EXPAND_JS, [timeout_s * 1000])
        if isinstance(expand, str):
            res["whole_graph_s"] = float("nan")
            res["error"] = ("no 'Expand all layers' button found" if expand == "no button"
                            else f"expand all: page still busy after {timeout_s:.0f} s")
        else:
            res["whole_graph_s"] = res["first_render_s"] + expand / 1000
        fr = page.evaluate(ME_FRAME_JS, [60])
        res.update(frame_median_ms=statistics.median(fr), frame_p95_ms=pct(fr, 95))
        page.screenshot(path=str(ROOT / "artifacts" / "screenshots" / f"bench-me-{Path(path).stem}.png"))
        ctx.close()
        return res
    finally:
        proc.terminate()
        proc.wait(10)


def fmt(x: float, unit: str = "s") -> str:
    return "  fail" if x != x else f"{x:5.2f}{unit}" if unit == "s" else f"{x:5.0f}{unit}"


def print_comparison(rows: list[dict]) -> None:
    """One line per graph, whole graph against whole graph: ours from opening the page to every task drawn (first
    view + expand all), Netron's layout shown (it draws everything at once), Model Explorer's first (collapsed) view +
    its expand all; then each one's p95 frame time while moving over the whole graph. A viewer that could not be run
    prints its reason, never a figure."""
    print(f"\n{'graph':22} {'whole graph s: ours':>19} {'netron':>8} {'x':>6} {'m.expl.':>8} {'x':>6}   "
          f"{'p95 frame ms: ours':>18} {'netron':>7} {'m.expl.':>7}")
    nan = float("nan")
    for r in rows:
        us = r["ours"]
        ours_whole = us.get("first_render_s", nan) + us.get("whole_graph_s", nan)
        cells = []
        for key in ("netron", "me"):
            o = r.get(key)
            if o is None:  # not measured
                cells.append((f"{'-':>8}", f"{'-':>6}", f"{'-':>7}"))
            else:
                whole = o.get("whole_graph_s", nan)
                cells.append((f"{fmt(whole):>8}", f"{whole / ours_whole:5.1f}x", f"{o.get('frame_p95_ms', nan):>7.0f}"))
        errors = " ".join(f"{k}: {r[k]['error']}" for k in ("netron", "me") if r.get(k, {}).get("error"))
        print(f"{r['graph']:22} {fmt(ours_whole):>19} {cells[0][0]} {cells[0][1]} {cells[1][0]} {cells[1][1]}   "
              f"{us['all_frame_p95_ms']:>18.0f} {cells[0][2]} {cells[1][2]}  {errors}")
    print("x: the other viewer's time over ours. Model Explorer's first view is one collapsed box per top-level "
          "namespace; its whole graph is timed from its 'Expand all layers'.")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000,50000")
    ap.add_argument("--flat", default="both", choices=["both", "yes", "no"])
    ap.add_argument("--llm", action="store_true", help="also a decoder-structured model (testkit/mock_server.py N:llm) per size")
    ap.add_argument("--server")
    ap.add_argument("--models", default="")
    ap.add_argument("--email", default="owner@example.com")
    ap.add_argument("--password", default="owner password 1")
    ap.add_argument("--dist", default=str(ROOT / "web" / "dist"), help="web builds to compare, comma-separated")
    ap.add_argument("--netron", default=os.environ.get("EDGESCOPE_NETRON"),
                    help="netron executable (pip install netron in its own venv) to compare with")
    ap.add_argument("--model-explorer", default=os.environ.get("EDGESCOPE_MODEL_EXPLORER"),
                    help="model-explorer executable (pip install ai-edge-model-explorer model-explorer-onnx in its own venv)")
    ap.add_argument("--onnx", default="", help="ONNX files for the other viewers (default: the synthetic models written as ONNX)")
    ap.add_argument("--netron-timeout", type=float, default=300)
    ap.add_argument("--json", help="also write the figures here")
    ap.add_argument("--first-view-only", action="store_true",
                    help="only the first view: time to it, to the table, frames moving over it (no table, brush or expand-all timings)")
    ap.add_argument("--repeat", type=int, default=1, help="measure each model this many times (builds interleaved)")
    a = ap.parse_args()
    from playwright.sync_api import sync_playwright

    (ROOT / "artifacts" / "screenshots").mkdir(parents=True, exist_ok=True)
    others = [(name, exe, fn) for name, exe, fn in (("netron", a.netron, measure_netron),
                                                    ("me", a.model_explorer, measure_model_explorer)) if exe]
    for name, exe in (("Netron", a.netron), ("Model Explorer", a.model_explorer)):
        if not exe:
            print(f"note: {name} not compared: no executable given (see --help); no figure is printed for it")
        elif not Path(exe).exists():
            print(f"note: {name} not compared: {exe} does not exist here; no figure is printed for it")
    others = [(n, exe, fn) for n, exe, fn in others if Path(exe).exists()]
    runs: list[tuple[str, str, list[tuple[str, str]]]] = []  # (build label, base url, [(model name, id)])
    onnx_files: dict[str, str] = {}
    if a.server:
        runs.append(("server", a.server.rstrip("/"), [(mid, mid) for mid in a.models.split(",") if mid]))
    else:
        from testkit.mock_server import serve

        specs = [f"{s}{flag}" for s in a.sizes.split(",")
                 for flag, want in (("", ("both", "no")), (":flat", ("both", "yes"))) if a.flat in want]
        specs += [f"{s}:llm" for s in a.sizes.split(",")] if a.llm else []
        for dist in a.dist.split(","):
            srv = serve(0, Path(dist), preload=",".join(specs))
            threading.Thread(target=srv.serve_forever, daemon=True).start()
            store = srv.store  # type: ignore[attr-defined]
            runs.append((Path(dist).parent.name + "/" + Path(dist).name, f"http://127.0.0.1:{srv.server_address[1]}",
                         [(m["name"], m["id"]) for m in store.models.values()]))
        if others and not a.onnx:
            out_dir = ROOT / "artifacts" / "bench-onnx"
            out_dir.mkdir(parents=True, exist_ok=True)
            for m in store.models.values():
                onnx_files[m["name"]] = str(write_onnx(store.synth[m["id"]], out_dir / m["name"]))
    for f in filter(None, a.onnx.split(",")):
        onnx_files[Path(f).name] = f
    out: list[dict] = []
    ours: dict[str, dict] = {}
    nan = float("nan")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        print(f"{'build':18} {'model':22} {'tasks':>6} {'first':>7} {'nodes':>5} {'table':>7} {'frame med/p95 (top)':>20} "
              f"{'whole':>7} {'frame med/p95 (all)':>20} {'sort':>7} {'filter':>7}")
        # interleave builds per model so the machine's load drifts alike over all of them
        for k in [k for k in range(max(len(r[2]) for r in runs)) for _ in range(a.repeat)]:
            for label, base, todo in runs:
                name, mid = todo[k]
                r = measure(browser, base, mid, {"email": a.email, "password": a.password}, a.first_view_only)
                r.update(model=name, build=label)
                out.append(r)
                ours.setdefault(name, r)
                print(f"{label[-18:]:18} {name:22} {r['tasks']:>6} {r['first_render_s']:>6.2f}s {r['first_nodes']:>5} {r['table_ready_s']:>6.2f}s "
                      f"{r['top_frame_median_ms']:>8.1f}/{r['top_frame_p95_ms']:>6.1f} ms {r.get('whole_graph_s', nan):>6.2f}s "
                      f"{r.get('all_frame_median_ms', nan):>8.1f}/{r.get('all_frame_p95_ms', nan):>6.1f} ms "
                      f"{r.get('sort_ms', nan):>5.0f}ms {r.get('filter_ms', nan):>5.0f}ms", flush=True)
                if r["worker_phases_ms"]:
                    print(f"{'':18} graph worker before the first view (ms): {r['worker_phases_ms']}", flush=True)
                if r["timeline_ms"]:
                    print(f"{'':18} page timeline (ms since navigation): {r['timeline_ms']}", flush=True)
                for pre, what in (() if a.first_view_only else (("top_", "first view"), ("all_", "whole graph"))):
                    print(f"{'':18} brushing ({what}): chart open {r[pre + 'chart_open_ms']:.0f} ms; histogram frame med/p95/max "
                          f"{r[pre + 'histogram_brush_frame_median_ms']:.1f}/{r[pre + 'histogram_brush_frame_p95_ms']:.1f}/"
                          f"{r[pre + 'histogram_brush_frame_max_ms']:.0f} ms, "
                          f"applied in {r[pre + 'histogram_brush_apply_ms']:.0f} ms "
                          f"({'/'.join(map(str, r[pre + 'histogram_brushed_tasks']))} tasks); scatter "
                          f"{r[pre + 'scatter_brush_frame_median_ms']:.1f}/{r[pre + 'scatter_brush_frame_p95_ms']:.1f}/"
                          f"{r[pre + 'scatter_brush_frame_max_ms']:.0f} ms, "
                          f"applied in {r[pre + 'scatter_brush_apply_ms']:.0f} ms "
                          f"({'/'.join(map(str, r[pre + 'scatter_brushed_tasks']))} tasks); table click -> chart "
                          f"{r[pre + 'table_to_chart_ms']:.0f} ms (p95 frame {r[pre + 'table_to_chart_frame_p95_ms']:.1f} ms)",
                          flush=True)
        cmp_rows: list[dict] = []
        for name, f in onnx_files.items():
            row: dict = {"graph": name, "ours": ours.get(name, {"first_render_s": float("nan"), "all_frame_p95_ms": float("nan")})}
            for key, exe, fn in others:
                r = fn(browser, exe, f, a.netron_timeout)
                r.update(viewer=key, file=f)
                out.append(r)
                row[key] = r
                print(f"{key:18} {name:22} first {fmt(r['first_render_s'])}  whole {fmt(r.get('whole_graph_s', float('nan')))}  frame med/p95 "
                      f"{r.get('frame_median_ms', float('nan')):6.1f}/{r.get('frame_p95_ms', float('nan')):6.1f} ms {r.get('error', '')}",
                      flush=True)
            cmp_rows.append(row)
        browser.close()
    if cmp_rows:
        print_comparison(cmp_rows)
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
