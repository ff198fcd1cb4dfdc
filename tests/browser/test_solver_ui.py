"""Budget solver and result downloads in the browser (issue 18, items 1 and 4): the dialog proposes per-op
changes, shows one as a per-op diff, and applying it gives the header the proposal's totals to the digit; an
impossible budget says so; the table downloads as CSV and as Model Explorer node data."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import shot

pytestmark = pytest.mark.browser

ROWS = "[data-testid=op-table] [role=row][data-op-id]"


@pytest.fixture(scope="module")
def model_id(ui_server: Any, zoo: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    """One analysis for the module: solving and downloading read it, applying a proposal changes only the page."""
    if ui_server.mock:
        pytest.skip("the solver and downloads need the real server")
    path = zoo.copy("mobilenet_v2_like", tmp_path_factory.mktemp("solve") / "mnv2_solve.onnx")
    return ui_server.upload(path, targets=["ort-cpu/host"], timeout_s=900)


def _open(ui_server: Any, page: Any, mid: str) -> str:
    page.goto(f"{ui_server.url}/m/{mid}")
    page.wait_for_selector("[data-testid=model-page][data-ready=true]")
    page.wait_for_selector(ROWS)
    return mid


def _solved(dlg: Any, outcome: str) -> None:
    """Wait for the dialog's answer; an error or another outcome fails with what the dialog says."""
    dlg.locator(f"[data-testid={outcome}], [data-testid=solve-error], [data-testid=solve-infeasible], "
                f"[data-testid=solve-proposals]").first.wait_for(timeout=60_000)
    if dlg.locator(f"[data-testid={outcome}]").count() == 0:
        raise AssertionError(f"expected {outcome}, the dialog says: {dlg.inner_text()[-600:]}")


def test_solve_dialog_proposes_reviews_and_applies(ui_server: Any, page: Any, model_id: str, tmp_path: Path) -> None:
    _open(ui_server, page, model_id)
    # A size budget: int8 weights meet it on any machine (a latency budget depends on this machine's calibration,
    # which may have no option 10% faster than fp32).
    size = float(page.get_attribute("[data-testid=total-size]", "data-value"))
    page.click("[data-testid=open-solve]")
    dlg = page.locator("[data-testid=solve-dialog]")
    dlg.locator("[data-testid=solve-size_bytes]").fill(repr(size * 0.9 / 1e6))
    dlg.locator("[data-testid=solve-run]").click()
    _solved(dlg, "solve-proposals")
    tabs = dlg.locator("[data-testid=solve-proposal]")
    objectives = " ".join(tabs.nth(k).get_attribute("data-objectives") for k in range(tabs.count())).split()
    assert sorted(objectives) == ["fewest_changes", "least_size", "most_float"]
    fewest = next(k for k in range(tabs.count()) if "fewest_changes" in tabs.nth(k).get_attribute("data-objectives"))
    tabs.nth(fewest).click()
    changes = dlg.locator("[data-testid=solve-change]")
    n = changes.count()
    assert n >= 1
    proposed = float(dlg.locator("[data-testid=solve-total-size_bytes]").get_attribute("data-value"))
    latency = float(dlg.locator("[data-testid=solve-total-latency_ms]").get_attribute("data-value"))
    assert proposed <= size * 0.9
    shot(page, "solve-dialog-proposal-diff")
    dlg.locator("[data-testid=solve-apply]").click()
    page.wait_for_selector("[data-testid=solve-dialog]", state="detached")
    assert f"{n} op override" in page.inner_text("[data-testid=state-line]")
    # The browser's totals rule on the applied state gives the solver's figures exactly.
    assert float(page.get_attribute("[data-testid=total-size]", "data-value")) == proposed
    assert float(page.get_attribute("[data-testid=total-latency]", "data-value")) == latency
    shot(page, "solve-applied-header")


def test_solve_dialog_says_when_no_state_meets_the_budget(ui_server: Any, page: Any, model_id: str, tmp_path: Path) -> None:
    _open(ui_server, page, model_id)
    page.click("[data-testid=open-solve]")
    dlg = page.locator("[data-testid=solve-dialog]")
    dlg.locator("[data-testid=solve-latency_ms]").fill("0.000001")
    dlg.locator("[data-testid=solve-run]").click()
    _solved(dlg, "solve-infeasible")
    assert "latency_ms" in dlg.locator("[data-testid=solve-infeasible]").inner_text()
    assert dlg.locator("[data-testid=solve-apply]").count() == 0
    assert dlg.locator("[data-testid=solve-change]").count() >= 1  # the closest state, for review
    shot(page, "solve-infeasible")


def _csv(text: str) -> tuple[list[str], list[dict[str, str]]]:
    """(the "# " header lines, the rows) of an ops.csv."""
    lines = text.splitlines(keepends=True)
    head = [x[2:].rstrip("\n") for x in lines if x.startswith("# ")]
    return head, list(csv.DictReader(io.StringIO("".join(x for x in lines if not x.startswith("# ")))))


def test_downloads_csv_and_model_explorer(ui_server: Any, page: Any, model_id: str, tmp_path: Path) -> None:
    _open(ui_server, page, model_id)
    rows = page.locator(ROWS).count()
    with page.expect_download() as d:
        page.click("[data-testid=download-csv]")
    path = tmp_path / d.value.suggested_filename
    d.value.save_as(path)
    head, table = _csv(path.read_text())
    assert path.suffix == ".csv" and len(table) >= rows and all(r["latency_ms"] for r in table)
    assert "state: unoptimized" in head[1]
    # under a model-wide option the CSV holds the page's state, and says so
    page.click("[data-testid=optimize-model]")
    page.locator("[data-testid=model-wide-dialog] tr[data-preset=int8-dynamic]").click()
    page.click("[data-testid=apply-preset]")
    with page.expect_download() as d:
        page.click("[data-testid=download-csv]")
    path = tmp_path / "state.csv"
    d.value.save_as(path)
    head, table = _csv(path.read_text())
    assert head[1] == "state: the page's state (not saved); model-wide option int8-dynamic; 0 per-op options"
    assert any(r["combo"].endswith("/int8/0") for r in table) and all(r["overridden"] == "false" for r in table)
    page.select_option("[data-testid=model-explorer-metric]", "macs")
    with page.expect_download() as d:
        page.click("[data-testid=download-model-explorer]")
    path = tmp_path / d.value.suggested_filename
    d.value.save_as(path)
    data = json.loads(path.read_text())
    (graph,) = data.values()
    assert path.name.endswith("macs.node-data.json") and len(graph["results"]) > 10
    assert max(v["value"] for v in graph["results"].values()) > 1e4  # MACs, not milliseconds
    shot(page, "downloads-toolbar")
