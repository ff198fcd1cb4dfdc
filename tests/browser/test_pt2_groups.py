"""A `.pt2` model page groups its graph by module, as the ONNX export of the same network does: collapsible groups
labelled by each module's qualified name and class (`features.3 (InvertedResidual)`), from `nn_module_stack`."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import shot

GRAPH = "[data-testid=graph]"
NODES = "document.querySelector('[data-testid=graph]').dataset.nodes"
ROWS = "[data-testid=op-table] [role=row][data-op-id]"


def test_pt2_model_page_shows_collapsible_module_groups(ui_server: Any, page: Any, shared_models: Any) -> None:
    if ui_server.mock:
        pytest.skip("module groups of a .pt2 need the real pipeline")
    mid = ui_server.upload(shared_models.path("pt2_mobilenet_v3_small"), targets=["ort-cpu/host"], timeout_s=900)
    page.goto(f"{ui_server.url}/m/{mid}")
    page.wait_for_selector(f"{GRAPH}[data-state=rendered]")
    page.wait_for_selector(ROWS)
    # the first view is the top level: the model's top modules, collapsed
    first = page.evaluate("window.edgescopeGraph.groupLabels()")
    collapsed = int(page.get_attribute(GRAPH, "data-nodes"))
    assert "features" in first and "classifier" in first, first
    shot(page, "pt2-module-groups")
    page.click("[data-testid=expand-all]")
    page.wait_for_function(f"n => Number({NODES}) > n", arg=collapsed)
    page.wait_for_selector(f"{GRAPH}[data-state=rendered]")
    labels = page.evaluate("window.edgescopeGraph.groupLabels()")
    for label in ("features.0 (Conv2dNormActivation)", "features.3 (InvertedResidual)",
                  "features.11 (InvertedResidual)", "features.4.block.2 (SqueezeExcitation)"):
        assert label in labels, (label, labels)
    shot(page, "pt2-module-groups-expanded")
    expanded = int(page.get_attribute(GRAPH, "data-nodes"))
    page.get_by_title("Collapse every group").click()
    page.wait_for_function(f"n => Number({NODES}) < n", arg=expanded)
    page.wait_for_selector(f"{GRAPH}[data-state=rendered]")
    assert "features" in page.evaluate("window.edgescopeGraph.groupLabels()")
