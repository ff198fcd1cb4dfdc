"""Peak memory on ort-cpu/host (rule 3 of docs/option-table.md, simulator/peak_memory.py): the runtime's own memory,
the load copy of the largest weights, the arena over the largest working set, weights decoded at load (fp16 and
palettized kernels are held at fp32) and the share of MLAS's prepacked MatMul / Gemm weights the peak sees."""

from __future__ import annotations

import pytest

from compiler.graph import Node
from simulator.peak_memory import ORT_HOST
from simulator.sweep import sweep
from simulator.totals import totals
from tests.simulator.helpers import act, conv_gemm, graph, weight


@pytest.fixture(scope="module")
def swept():
    return sweep(conv_gemm(), "ort-cpu/host")


def _col(r, name: str, metric: str) -> list[float]:
    p = [x["name"] for x in r.bulk["presets"]].index(name)
    return [row[p] for row in r.bulk["metrics"][metric]]


def test_ort_host_peak_is_the_runtime_the_weights_their_copies_and_the_arena(swept) -> None:
    b, k = swept.bulk, swept.bulk["constants"]
    assert k["prepacked_ops"] == [3]  # fc, the Gemm
    wb, a = _col(swept, "fp32", "weight_bytes"), _col(swept, "fp32", "activation_bytes")
    t = totals(b, swept.per_op, "fp32", {})
    # packing follows loading: the larger transient of the two counts (here the load copy of fc's weights)
    assert max(wb) == wb[3] > ORT_HOST["prepack_share"] * wb[3]
    want = t["size_bytes"] + ORT_HOST["runtime_bytes"] + max(wb) + ORT_HOST["arena_factor"] * max(a)
    assert t["peak_memory_bytes"] == pytest.approx(want, rel=1e-12)


def test_palettized_and_fp16_weights_are_held_at_fp32(swept) -> None:
    """A palettized or fp16 export shrinks the file, not the peak: ORT CPU runs them on fp32 weights (the compiled
    file of such an export holds fp32 initializers)."""
    fp32 = totals(swept.bulk, swept.per_op, "fp32", {})
    for preset in ("palettize-4bit", "fp16"):
        t = totals(swept.bulk, swept.per_op, preset, {})
        assert t["size_bytes"] < 0.6 * fp32["size_bytes"]
        assert t["peak_memory_bytes"] == pytest.approx(fp32["peak_memory_bytes"], rel=1e-3)


def test_an_override_changes_the_peak_by_that_ops_terms(swept) -> None:
    """int8 weights are held as stored; a palettized override is decoded to fp32, as the preset would have it."""
    b = swept.bulk
    wb = _col(swept, "fp32", "weight_bytes")
    fp32 = totals(b, swept.per_op, "fp32", {})["peak_memory_bytes"]
    int8 = totals(b, swept.per_op, "fp32", {"fc": "fp32/fp32/int8/0"})
    row = swept.per_op[3]
    wb8 = row["weight_bytes"][row["combos"].index("fp32/fp32/int8/0")]
    # the file and the load copy (still fc's, the largest, above its packed share) shrink to int8
    assert wb8 > wb[0]
    want = fp32 - 2 * (wb[3] - wb8)
    assert int8["peak_memory_bytes"] == pytest.approx(want, rel=1e-9)
    lut = totals(b, swept.per_op, "fp32", {"fc": "fp32/fp32/lut4/0"})
    assert lut["peak_memory_bytes"] == pytest.approx(fp32, rel=1e-9) and lut["size_bytes"] < 0.3 * fp32


def test_other_targets_keep_their_rule() -> None:
    """LiteRT counts the weights twice (weight_copies) and none of ORT's terms; a device target neither."""
    for target in ("litert-cpu/host", "coreml/apple-a17"):
        r = sweep(conv_gemm(), target)
        k = r.bulk["constants"]
        assert not {"runtime_bytes", "arena_factor", "decoded_at_load", "prepacked_ops"} & set(k)
        p = r.bulk["base"]["preset"]
        t = totals(r.bulk, r.per_op, p, {})
        wb, a = _col(r, p, "weight_bytes"), _col(r, p, "activation_bytes")
        assert t["peak_memory_bytes"] == pytest.approx(t["size_bytes"] + k["weight_copies"] * sum(wb) + max(a),
                                                       rel=1e-12)


def test_many_packed_weights_outweigh_the_load_copy() -> None:
    """Three equal Gemms (a transformer's MLP): the packed share of all three is above the load copy of one."""
    nodes = [Node(f"fc{i}", f"fc{i}", "Gemm", inputs=[f"x{i}", f"w{i}"], outputs=[f"x{i + 1}"]) for i in range(3)]
    values = [act(f"x{i}", [1, 1024]) for i in range(4)] + [weight(f"w{i}", [1024, 1024]) for i in range(3)]
    r = sweep(graph(nodes, values, ["x0"], ["x3"]), "ort-cpu/host")
    wb, a = _col(r, "fp32", "weight_bytes"), _col(r, "fp32", "activation_bytes")
    t = totals(r.bulk, r.per_op, "fp32", {})
    packed = ORT_HOST["prepack_share"] * sum(wb)
    assert packed > max(wb) and r.bulk["constants"]["prepacked_ops"] == [0, 1, 2]
    want = t["size_bytes"] + ORT_HOST["runtime_bytes"] + packed + ORT_HOST["arena_factor"] * max(a)
    assert t["peak_memory_bytes"] == pytest.approx(want, rel=1e-12)
