"""The upload form takes an ONNX model with its external data file (torch's dynamo exporter's default), chosen or
dropped together: the quick input parse reads the .onnx only, both files are sent, and the model is analysed. The
.onnx alone gets the server's answer naming the data file, which can then be added in the form."""
from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import shot
from tests.external_data_models import dynamo_with_data

pytestmark = pytest.mark.browser

FORM = "[data-testid=upload-form][data-read=ok]"

DROP = """([files]) => {
  const dt = new DataTransfer();
  for (const [name, b64] of files) {
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    dt.items.add(new File([bytes], name));
  }
  const zone = document.querySelector("section.dropzone");
  zone.dispatchEvent(new DragEvent("dragover", { dataTransfer: dt, bubbles: true, cancelable: true }));
  zone.dispatchEvent(new DragEvent("drop", { dataTransfer: dt, bubbles: true, cancelable: true }));
}"""


def _drop(page: Any, *paths: Path) -> None:
    page.evaluate(DROP, [[[p.name, base64.b64encode(p.read_bytes()).decode()] for p in paths]])


def _read_form(page: Any, model: Path) -> Any:
    form = page.locator(FORM)
    form.wait_for()
    assert form.locator("tr[data-input=image]").count() == 1  # the inputs, read from the .onnx in the browser
    read = form.locator("[data-testid=inputs-read-bytes]").inner_text()
    assert "1 input" in read
    return form


def test_drop_a_dynamo_export_with_its_data_file(ui_server: Any, page: Any, tmp_path: Path) -> None:
    if ui_server.mock:
        pytest.skip("the mock server does not merge data files")
    model, data = dynamo_with_data(tmp_path, "dropped_cnn")
    page.goto(ui_server.url + "/")
    page.locator("section.dropzone").wait_for()
    _drop(page, data, model)  # in either order
    form = _read_form(page, model)
    assert form.locator("[data-testid=upload-data-file]").inner_text().startswith("+ dropped_cnn.onnx.data")
    shot(page, "upload-onnx-with-data")
    page.click("[data-testid=upload-submit]")
    page.wait_for_selector(".model-row[data-status=ready]:has-text('dropped_cnn.onnx')", timeout=300_000)
    assert page.locator("[data-testid=upload-error]").count() == 0


def test_choose_the_pair_or_add_the_data_file_after_the_server_asks(ui_server: Any, page: Any, tmp_path: Path) -> None:
    if ui_server.mock:
        pytest.skip("the mock server does not merge data files")
    model, data = dynamo_with_data(tmp_path, "chosen_cnn")
    page.goto(ui_server.url + "/")
    # The data file alone: nothing is sent, and the form says what to choose.
    page.set_input_files("[data-testid=upload-input]", [str(data)])
    assert "is not a model file" in page.locator("[data-testid=choose-errors]").inner_text()
    # The .onnx alone: the server names the file it needs.
    page.set_input_files("[data-testid=upload-input]", [str(model)])
    assert page.locator("[data-testid=choose-errors]").count() == 0
    form = _read_form(page, model)
    assert form.locator("[data-testid=upload-data-file]").count() == 0
    page.click("[data-testid=upload-submit]")
    err = page.locator("[data-testid=upload-error]")
    err.wait_for()
    assert "'chosen_cnn.onnx.data'" in err.inner_text()
    err.locator("button", has_text="Dismiss").click()
    # Chosen again, then its data file added in the form: both are sent.
    page.set_input_files("[data-testid=upload-input]", [str(model)])
    form = _read_form(page, model)
    page.set_input_files("[data-testid=upload-data-input]", [str(data)])
    form.locator("[data-testid=upload-data-file]", has_text="chosen_cnn.onnx.data").wait_for()
    page.click("[data-testid=upload-submit]")
    row = page.locator(".model-row:has-text('chosen_cnn.onnx')").first
    row.wait_for()
    assert page.locator("[data-testid=upload-error]").count() == 0
    # Both files in one choice (the file input takes several).
    page.set_input_files("[data-testid=upload-input]", [str(model), str(data)])
    form = _read_form(page, model)
    form.locator("[data-testid=upload-data-file]", has_text="chosen_cnn.onnx.data").wait_for()
    page.click("[data-testid=upload-submit]")
    page.locator(".model-row:has-text('chosen_cnn.onnx')").nth(1).wait_for()
    assert page.locator("[data-testid=upload-error]").count() == 0
