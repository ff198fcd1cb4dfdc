"""A predicted target's tasks are the source nodes in the order a runtime runs them: a node computed from weights
alone (TorchScript's Identity of a shared weight, written before every other node) sits just before its first
consumer instead of heading the table and timeline, and every figure stays the same."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.backends.base import as_tasks, run_order
from compiler.graph import Graph, Node
from simulator.sweep import sweep
from simulator.totals import totals
from tests.simulator.helpers import act, graph, weight


def _small() -> Graph:
    """Identity(w2) and Identity(Identity(w1)) first, as TorchScript writes them; then conv1 -> relu -> conv2."""
    conv = lambda i, x, w, y: Node(f"conv{i}", f"conv{i}", "Conv", inputs=[x, w], outputs=[y],  # noqa: E731
                                   attributes={"pads": [1, 1, 1, 1], "kernel_shape": [3, 3]})
    nodes = [Node("id_w2", "id_w2", "Identity", inputs=["w2"], outputs=["w2i"]),
             Node("id_w1", "id_w1", "Identity", inputs=["w1"], outputs=["w1i"]),
             Node("id_w1b", "id_w1b", "Identity", inputs=["w1i"], outputs=["w1j"]),
             conv(1, "x", "w1j", "a"), Node("relu", "relu", "Relu", inputs=["a"], outputs=["b"]), conv(2, "b", "w2i", "y")]
    values = [act(v, [1, 8, 8, 8]) for v in ("x", "a", "b", "y")] + [weight("w1", [8, 8, 3, 3]),
                                                                     weight("w2", [8, 8, 3, 3])]
    return graph(nodes, values, ["x"], ["y"])


def test_weight_only_nodes_move_to_just_before_their_first_consumer() -> None:
    assert [n.id for n in run_order(_small())] == ["id_w1", "id_w1b", "conv1", "relu", "id_w2", "conv2"]
    assert [n.id for n in as_tasks(_small()).nodes] == ["id_w1", "id_w1b", "conv1", "relu", "id_w2", "conv2"]


@pytest.mark.parametrize("target", ["ort-qnn/snapdragon-8g3", "ort-xnnpack/rpi5"])
def test_a_torchscript_export_heads_with_a_task_that_runs(target: str, tmp_path: Path) -> None:
    """torchvision's MobileNetV3-small (random weights) through the TorchScript exporter: 37 Identity nodes of shared
    weights come first in the file. Each folded task now precedes its consumer, and every preset's totals are those
    of the file order to the last digit (the folded tasks add zeros)."""
    import corpus  # noqa: F401  (torchvision importable beside CPU torch)
    import torch
    import torchvision

    from compiler import frontends

    path = tmp_path / "mobilenet_v3_small.onnx"
    torch.onnx.export(torchvision.models.mobilenet_v3_small(weights=None).eval(), (torch.zeros(1, 3, 96, 96),),
                      str(path), input_names=["x"], output_names=["y"], dynamo=False)
    source = frontends.load(path)
    assert sum(n.op_type == "Identity" for n in source.nodes[:37]) == 37  # as the exporter writes them
    r = sweep(as_tasks(source), target, source=source)
    lat = [row[0] for row in r.bulk["metrics"]["latency_ms"]]
    folded = [w.kind == "folded" for w in r.works]
    assert sum(folded) >= 37 and lat[0] == 0.0 and not folded[1] and lat[1] > 0  # only conv 0's weight before it
    index = {n.id: i for i, n in enumerate(as_tasks(source).nodes)}
    nodes = as_tasks(source).nodes
    for i, n in enumerate(nodes):
        if folded[i]:
            nxt = next(j for j in range(i + 1, len(nodes)) if not folded[j])
            assert set(n.outputs) & set(nodes[nxt].inputs) or any(
                set(n.outputs) & set(nodes[k].inputs) for k in range(i + 1, nxt)), n.id
    file_order = Graph(source.name, source.format, [nodes[index[m.id]] for m in source.nodes], source.values,
                       source.inputs, source.outputs, dict(source.metadata))
    before = sweep(file_order, target, source=source)
    for p in [x["name"] for x in r.bulk["presets"]]:
        assert totals(r.bulk, r.per_op, p, {}) == totals(before.bulk, before.per_op, p, {}), p
