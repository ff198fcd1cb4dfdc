"""Colour by compute unit: on an accelerator target the ops that fall back to the CPU show as CPU in the graph's
legend, its node colours, and the table's Unit column (issue 6)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from testkit import modelzoo
from tests.browser.conftest import shot
from tests.browser.test_ui import GRAPH, ROWS, open_model

pytestmark = pytest.mark.browser

# ONNX Runtime's CoreML EP has no Flatten (simulator/hardware/apple-a17.yaml): tiny_cnn's Flatten runs on the
# CPU EP, its other ops on the ANE / GPU. The mock server puts its classifier on the CPU of coreml/apple-a17.
TARGET = "ort-coreml/apple-a17"
MOCK_TARGET = "coreml/apple-a17"

COLOR_OF = "id => window.edgescopeGraph.colorOf(id)"


def test_cpu_fallback_is_coloured_as_cpu(ui_server: Any, page: Any, tmp_path: Path) -> None:
    if ui_server.mock:  # a model small enough for every row to be drawn
        (path := tmp_path / "small.json").write_text('{"mock": {"n": 12}}')
    else:
        path = modelzoo.tiny_cnn(tmp_path / "tiny_cnn.onnx")
    mid = ui_server.upload(path, targets=[TARGET])
    open_model(page, ui_server.url, mid)
    if ui_server.mock:
        page.select_option("[data-testid=target-select]", MOCK_TARGET)
        page.wait_for_selector("[data-testid=model-page][data-ready=true]")
        page.wait_for_selector(ROWS)
    page.select_option("[data-testid=color-metric]", "unit")
    cpu = page.locator("[data-testid=unit-legend] [data-unit=cpu]")
    cpu.wait_for()
    assert "CPU" in cpu.inner_text()
    cpu_color = cpu.get_attribute("data-color")

    units = dict(page.locator(ROWS).evaluate_all(
        "rs => rs.map(r => [r.dataset.opId, r.querySelector('[data-col=unit]').innerText])"))
    fallback = [i for i, u in units.items() if u == "CPU"]
    accelerated = [i for i, u in units.items() if u != "CPU"]
    assert fallback and accelerated, units

    # every task drawn as its own node, so the node stands for that task alone
    page.evaluate("window.edgescopeGraph.expandAll()")
    page.wait_for_function(f"() => document.querySelector('{GRAPH}').dataset.state === 'rendered' "
                           f"&& +document.querySelector('{GRAPH}').dataset.nodes >= {len(units)}")
    page.wait_for_function(f"([id, c]) => ({COLOR_OF})(id) === c", arg=[fallback[0], cpu_color])
    assert all(page.evaluate(COLOR_OF, i) != cpu_color for i in accelerated)
    shot(page, "graph-compute-units")


def test_a_float_weight_fallback_stays_on_the_htp_in_the_per_op_dialog(ui_server: Any, page: Any, tmp_path: Path
                                                                       ) -> None:
    """On the HTP of ort-qnn/snapdragon-8g3 a MatMul asked with int8 activations and float weights has no int8 path
    and runs as fp16/fp16/fp32/0, a float op the QNN EP keeps on the HTP (it refuses quantized weights only,
    simulator/device_facts.py): the "runs as" badge names no other unit, and the combo's time is the HTP row's.
    (It named the CPU before, at about 10x that time.)"""
    mid = ui_server.upload(modelzoo.namespaced(tmp_path / "namespaced.onnx"), targets=["ort-qnn/snapdragon-8g3"])
    open_model(page, ui_server.url, mid)
    ids = page.locator(ROWS).evaluate_all("rs => rs.map(r => [r.dataset.opId, r.innerText])")
    op = next(i for i, text in ids if "MatMul" in text)
    page.locator(f"{ROWS}[data-op-id='{op}']").locator("button", has_text="Optimize").click()
    dlg = page.locator("[data-testid=op-dialog]")
    dlg.locator("[data-testid=op-options] tbody tr").first.wait_for()
    badges = [b.strip() for b in dlg.locator("[data-testid=runs-as]").all_inner_texts()]
    assert "runs as fp16/fp16/fp32/0" in badges and not any(" on " in b for b in badges), badges
    own = dlg.locator("[data-testid=op-options] tr[data-combo='fp16/fp16/fp32/0']")
    assert own.count() == 1 and own.locator("[data-testid=runs-as]").count() == 0
    shot(page, "op-dialog-fallback-unit")
