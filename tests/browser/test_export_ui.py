"""Export from the browser (issue 14): the current state with a per-op override, its progress, the download, and
on a target that runs here the measured latency and size beside the predicted ones."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from testkit import modelzoo
from tests.browser.conftest import shot

pytestmark = pytest.mark.browser

GRAPH = "[data-testid=graph]"
ROWS = "[data-testid=op-table] [role=row][data-op-id]"


def test_export_with_a_per_op_override_downloads_and_measures(ui_server: Any, page: Any, tmp_path: Path) -> None:
    if ui_server.mock:
        pytest.skip("exports need the real worker")
    mid = ui_server.upload(modelzoo.tiny_cnn(tmp_path / "tiny_cnn_export.onnx"), targets=["ort-cpu/host"], timeout_s=900)
    page.goto(f"{ui_server.url}/m/{mid}")
    page.wait_for_selector("[data-testid=model-page][data-ready=true]")
    page.wait_for_selector(ROWS)
    # one per-op override: an int8 weight option on the first convolution
    ids = page.locator(ROWS).evaluate_all("rs => rs.map(r => [r.dataset.opId, r.innerText])")
    op = next(i for i, text in ids if "Conv" in text)
    page.locator(f"{ROWS}[data-op-id='{op}']").locator("button", has_text="Optimize").click()
    dlg = page.locator("[data-testid=op-dialog]")
    dlg.locator("[data-testid=op-options] tbody tr").first.wait_for()
    dlg.locator("[data-testid=filter-kernel]").select_option("int8")
    pick = next(r for r in dlg.locator("[data-testid=op-options] tbody tr").all() if r.get_attribute("data-exportable") == "true")
    pick.locator("button", has_text="Apply").click()
    assert "1 op override" in page.inner_text("[data-testid=state-line]")

    page.click("[data-testid=export-open]")
    ex = page.locator("[data-testid=export-dialog]")
    assert "1 op override" in ex.locator("[data-testid=export-state]").inner_text()
    ex.locator("[data-testid=export-start]").click()
    ex.locator("[data-testid=export-progress], [data-testid=export-result]").first.wait_for()
    shot(page, "export-progress")
    ex.locator("[data-testid=export-result][data-status=ready], [data-testid=export-failed]").first.wait_for(timeout=300_000)
    assert ex.locator("[data-testid=export-failed]").count() == 0, ex.inner_text()
    predicted = float(ex.locator("[data-testid=export-predicted-latency]").get_attribute("data-value"))
    measured = float(ex.locator("[data-testid=export-measured-latency]").get_attribute("data-value"))
    size = int(float(ex.locator("[data-testid=export-measured-size]").get_attribute("data-value")))
    assert predicted > 0 and measured > 0 and size > 0
    shot(page, "export-measured-beside-predicted")
    with page.expect_download() as d:
        ex.locator("[data-testid=export-download]").click()
    saved = tmp_path / d.value.suggested_filename
    d.value.save_as(saved)
    assert saved.suffix == ".onnx" and saved.stat().st_size == size
    import onnx

    onnx.checker.check_model(onnx.load(str(saved)))
    # listed with the model's exports
    listed = ex.locator("[data-testid=exports-list] tr[data-status=ready]")
    assert listed.count() >= 1 and "1 op override" in listed.first.inner_text()
