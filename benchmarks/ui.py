"""Web UI benchmark in headless Chromium (Debian's, through Playwright). Prints figures.

For models of 1,000 / 10,000 / 50,000 tasks, namespaced and flat names:
  - time from opening /m/<id> to the first rendered graph (graph root data-state="rendered")
  - time to the whole graph drawn (every group expanded, every task a node)
  - median / p95 frame time during a scripted zoom and pan (requestAnimationFrame intervals)
  - time to sort and to filter the table (click to painted frame)

Data: by default tests/browser/mock_server.py serves synthetic models of those sizes (the UI's cost only; API
responses are fetched once before timing so server time is excluded). `--server URL --models ID,ID` measures
models already uploaded to a running `edgescope serve` instead (signed in with --email/--password).

    python benchmarks/ui.py [--sizes 1000,10000,50000] [--flat both|yes|no] [--server URL --models IDS]
"""
from __future__ import annotations

import argparse
import json
import statistics
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


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))] if xs else float("nan")


def measure(browser, base: str, mid: str, login: dict) -> dict:
    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    r = ctx.request.post(f"{base}/api/auth/login", data=login)
    assert r.ok, r.text()
    for ep in ("graph", "ops", "options"):  # warm the server's cache: time the UI, not the API
        assert ctx.request.get(f"{base}/api/models/{mid}/{ep}", timeout=600_000).ok
    page = ctx.new_page()
    page.set_default_timeout(600_000)
    t0 = time.perf_counter()
    page.goto(f"{base}/m/{mid}")
    page.wait_for_selector('[data-testid=graph][data-state=rendered]')
    first = time.perf_counter() - t0
    first_nodes = int(page.get_attribute('[data-testid=graph]', 'data-nodes'))
    page.wait_for_selector('[data-testid=model-page][data-ready=true]')
    table_ready = time.perf_counter() - t0
    n = int(page.get_attribute('[data-testid=op-table]', 'data-rows'))
    res: dict = {"tasks": n, "first_render_s": first, "first_nodes": first_nodes, "table_ready_s": table_ready}
    zoom = page.evaluate(FRAME_JS, [60, "zoom"])
    pan = page.evaluate(FRAME_JS, [60, "pan"])
    fr = zoom + pan
    res.update(top_frame_median_ms=statistics.median(fr), top_frame_p95_ms=pct(fr, 95))
    sort = page.evaluate(TIMED_JS, ["sort"])[0]
    sort2 = page.evaluate(TIMED_JS, ["sort2"])[0]
    filt, shown = page.evaluate(TIMED_JS, ["filter"])
    unfilt = page.evaluate(TIMED_JS, ["clear"])[0]
    res.update(sort_ms=sort, sort_name_ms=sort2, filter_ms=filt, filter_rows=shown, clear_filter_ms=unfilt)
    t1 = time.perf_counter()
    page.evaluate("window.edgescopeGraph.expandAll()")
    page.wait_for_function(f"() => {{ const g = document.querySelector('[data-testid=graph]'); return g.dataset.state === 'rendered' && +g.dataset.nodes >= {n}; }}",
                           polling=50)
    res["whole_graph_s"] = time.perf_counter() - t1
    res["whole_nodes"] = int(page.get_attribute('[data-testid=graph]', 'data-nodes'))
    page.wait_for_timeout(300)
    fr = page.evaluate(FRAME_JS, [60, "zoom"]) + page.evaluate(FRAME_JS, [60, "pan"])
    res.update(all_frame_median_ms=statistics.median(fr), all_frame_p95_ms=pct(fr, 95))
    page.screenshot(path=str(ROOT / "artifacts" / "screenshots" / f"bench-{n}-{mid}.png"))
    ctx.close()
    return res


NETRON_FRAME_JS = """async ([steps]) => {
  const el = document.getElementById('target') || document.scrollingElement;
  const times = [];
  let last = performance.now(), run = true;
  const tick = (t) => { times.push(t - last); last = t; if (run) requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
  for (let i = 0; i < steps; i++) {
    el.scrollTop += i < steps / 2 ? 40 : -40;
    el.scrollLeft += i % 2 ? 10 : -10;
    await new Promise((r) => setTimeout(r, 16));
  }
  await new Promise((r) => setTimeout(r, 300));
  run = false;
  return times.slice(2);
}"""


def measure_netron(browser, netron: str, path: str, timeout_s: float) -> dict:
    """Netron serving one file (`netron FILE --port P`): time to its graph drawn and frame times while scrolling."""
    import socket
    import subprocess

    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        port = so.getsockname()[1]
    proc = subprocess.Popen([netron, path, "--port", str(port), "--verbosity", "quiet"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        ctx = browser.new_context(viewport={"width": 1280, "height": 800})
        page = ctx.new_page()
        # Netron replaces window.eval, which page.evaluate needs: evaluate over CDP instead.
        cdp = ctx.new_cdp_session(page)

        def ev(expr: str):  # noqa: ANN202
            return cdp.send("Runtime.evaluate", {"expression": expr, "returnByValue": True, "awaitPromise": True})["result"].get("value")

        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2)
                break
            except OSError:
                time.sleep(0.2)
        t0 = time.perf_counter()
        page.goto(f"http://127.0.0.1:{port}/")
        try:
            page.click("button:has-text('Accept')", timeout=5000)  # first-run consent screen
        except Exception:  # noqa: BLE001 - not shown
            pass
        deadline = time.perf_counter() + timeout_s
        while not ev("document.querySelectorAll('svg .node').length") and time.perf_counter() < deadline:
            time.sleep(0.1)
        if not ev("document.querySelectorAll('svg .node').length"):
            ctx.close()
            return {"first_render_s": float("nan"), "error": f"no graph after {timeout_s:.0f} s"}
        res = {"first_render_s": time.perf_counter() - t0, "nodes": ev("document.querySelectorAll('svg .node').length")}
        fr = ev(f"({NETRON_FRAME_JS})([60])")
        res.update(frame_median_ms=statistics.median(fr), frame_p95_ms=pct(fr, 95))
        page.screenshot(path=str(ROOT / "artifacts" / "screenshots" / f"bench-netron-{Path(path).stem}.png"))
        ctx.close()
        return res
    finally:
        proc.terminate()
        proc.wait(10)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000,50000")
    ap.add_argument("--flat", default="both", choices=["both", "yes", "no"])
    ap.add_argument("--server")
    ap.add_argument("--models", default="")
    ap.add_argument("--email", default="owner@example.com")
    ap.add_argument("--password", default="owner password 1")
    ap.add_argument("--netron", help="netron executable (pip install netron in its own venv) to compare with")
    ap.add_argument("--onnx", default="", help="ONNX files for --netron, comma-separated")
    ap.add_argument("--netron-timeout", type=float, default=300)
    ap.add_argument("--json", help="also write the figures here")
    a = ap.parse_args()
    from playwright.sync_api import sync_playwright

    (ROOT / "artifacts" / "screenshots").mkdir(parents=True, exist_ok=True)
    if a.server:
        base, todo = a.server.rstrip("/"), [(mid, mid) for mid in a.models.split(",") if mid]
    else:
        from tests.browser.mock_server import serve

        specs = []
        for s in a.sizes.split(","):
            if a.flat in ("both", "no"):
                specs.append(f"{s}")
            if a.flat in ("both", "yes"):
                specs.append(f"{s}:flat")
        srv = serve(0, ROOT / "web" / "dist", preload=",".join(specs))
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        base = f"http://127.0.0.1:{srv.server_address[1]}"
        models = srv.store.models.values()  # type: ignore[attr-defined]
        todo = [(m["name"], m["id"]) for m in models]
    out = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        print(f"{'model':24} {'tasks':>6} {'first':>7} {'nodes':>5} {'table':>7} {'frame med/p95 (top)':>20} "
              f"{'whole':>7} {'frame med/p95 (all)':>20} {'sort':>7} {'filter':>7}")
        for name, mid in todo:
            r = measure(browser, base, mid, {"email": a.email, "password": a.password})
            r["model"] = name
            out.append(r)
            print(f"{name:24} {r['tasks']:>6} {r['first_render_s']:>6.2f}s {r['first_nodes']:>5} {r['table_ready_s']:>6.2f}s "
                  f"{r['top_frame_median_ms']:>8.1f}/{r['top_frame_p95_ms']:>6.1f} ms {r['whole_graph_s']:>6.2f}s "
                  f"{r['all_frame_median_ms']:>8.1f}/{r['all_frame_p95_ms']:>6.1f} ms {r['sort_ms']:>5.0f}ms {r['filter_ms']:>5.0f}ms",
                  flush=True)
        if a.netron:
            print(f"\n{'netron: file':40} {'first':>9} {'nodes':>6} {'frame med/p95':>16}")
            for f in filter(None, a.onnx.split(",")):
                r = measure_netron(browser, a.netron, f, a.netron_timeout)
                r["netron_file"] = f
                out.append(r)
                print(f"{Path(f).name:40} {r['first_render_s']:>8.2f}s {r.get('nodes', 0):>6} "
                      f"{r.get('frame_median_ms', float('nan')):>7.1f}/{r.get('frame_p95_ms', float('nan')):>6.1f} ms {r.get('error', '')}",
                      flush=True)
        browser.close()
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
