"""Inputs set in the browser (issue 13): read at upload without a second upload, and a failed model re-analysed
from its page with other inputs, after which every view and dialog shows the new analysis."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import shot
from tests.browser.models import frames_of_48

pytestmark = pytest.mark.browser

GRAPH = "[data-testid=graph]"
ROWS = "[data-testid=op-table] [role=row][data-op-id]"


def wait_ready_page(page: Any) -> None:
    page.wait_for_selector(f"{GRAPH}[data-state=rendered]", timeout=300_000)
    page.wait_for_selector("[data-testid=model-page][data-ready=true]")
    page.wait_for_selector(ROWS)


def per_op_dialog_works(page: Any) -> None:
    row = page.locator(ROWS).first
    row.locator("button", has_text="Optimize").click()
    dlg = page.locator("[data-testid=op-dialog]")
    dlg.locator("[data-testid=op-options] tbody tr").first.wait_for()
    assert dlg.locator("[role=alert]").count() == 0
    assert int(dlg.locator("[data-testid=outcome-count]").get_attribute("data-outcomes")) >= 1
    dlg.locator("button", has_text="Close").click()


def test_set_inputs_at_upload(ui_server: Any, page: Any, tmp_path: Path) -> None:
    if ui_server.mock:
        pytest.skip("the mock server does not run models")
    path = frames_of_48(tmp_path / "frames_at_upload.onnx")
    page.goto(ui_server.url + "/")
    page.set_input_files("[data-testid=upload-input]", str(path))
    form = page.locator("[data-testid=upload-form][data-read=ok]")
    form.wait_for()
    row = form.locator("tr[data-input=samples]")
    assert "float32" in row.inner_text()
    dim = form.locator("[data-testid=dim-samples-1]")
    assert row.locator(".dim-name").inner_text() == "n_samples"  # the symbolic dim, by name
    assert row.locator(".dim-fixed").inner_text() == "1"
    dim.fill("12")
    assert form.locator("[data-testid=input-errors]").count() == 0
    dim.fill("x")
    assert "not a positive whole number" in form.locator("[data-testid=input-errors]").inner_text()
    assert form.locator("[data-testid=upload-submit]").is_disabled()
    dim.fill("144")
    shot(page, "upload-set-inputs")
    page.click("[data-testid=upload-submit]")
    model = page.locator(".model-row", has_text="frames_at_upload.onnx").first
    model.wait_for()
    page.wait_for_selector(".model-row[data-status=ready]:has-text('frames_at_upload.onnx')", timeout=300_000)
    assert "samples 1×144" in model.locator("[data-testid=inputs-used]").inner_text()
    assert model.locator("[data-testid=share-url]").inner_text().startswith("http")
    model.locator("a.model-name").click()
    wait_ready_page(page)
    assert page.locator("[data-testid=shapes-used] [data-input=samples]").inner_text() == "samples 1×144"
    shot(page, "upload-set-inputs-model")


def test_reanalyse_a_failed_model_then_its_dialogs_show_the_new_analysis(ui_server: Any, page: Any, tmp_path: Path) -> None:
    if ui_server.mock:
        pytest.skip("the mock server does not run models")
    path = frames_of_48(tmp_path / "frames_default.onnx")
    mid = ui_server.upload(path, targets=["ort-cpu/host"], timeout_s=900)  # the audio default, 16000 samples, is no multiple of 48: it fails
    page.goto(ui_server.url + "/")
    failed = page.locator(f".model-row[data-model-id='{mid}']")
    failed.wait_for()
    assert failed.get_attribute("data-status") == "failed"
    shot(page, "list-failed-model")
    failed.locator("a.model-name").click()  # failed models link to their page
    page.wait_for_selector("[data-testid=model-pending][data-status=failed]")
    assert page.locator("[data-testid=model-error]").inner_text()
    page.click("[data-testid=reanalyse-open]")
    dlg = page.locator("[data-testid=reanalyse-dialog]")
    dim = dlg.locator("[data-testid=dim-samples-1]")
    dim.wait_for()
    dim.fill("96")
    shot(page, "reanalyse-failed-dialog")
    dlg.locator("[data-testid=reanalyse-submit]").click()
    wait_ready_page(page)
    assert page.locator("[data-testid=shapes-used] [data-input=samples]").inner_text() == "samples 1×96"
    per_op_dialog_works(page)
    shot(page, "reanalysed-model")

    # once more from the ready page: nothing of the previous analysis may stay in a view, cache or dialog
    before = page.locator(ROWS).evaluate_all("rs => rs.map(r => r.innerText)")
    page.click("[data-testid=reanalyse-open]")
    dlg = page.locator("[data-testid=reanalyse-dialog]")
    dim = dlg.locator("[data-testid=dim-samples-1]")
    dim.wait_for()
    assert dim.input_value() == "96"  # pre-filled with the shapes used
    dim.fill("4800")
    dlg.locator("[data-testid=reanalyse-submit]").click()
    page.wait_for_selector("[data-testid=model-pending]")
    wait_ready_page(page)
    assert page.locator("[data-testid=shapes-used] [data-input=samples]").inner_text() == "samples 1×4800"
    after = page.locator(ROWS).evaluate_all("rs => rs.map(r => r.innerText)")
    assert after != before  # the table shows the new analysis (50x the frames: other times)
    per_op_dialog_works(page)
