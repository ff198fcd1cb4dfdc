"""Peak memory on ort-cpu/host (rule 3 of docs/option-table.md, simulator/peak_memory.py): the share of the weights
packed at load the session keeps (MLAS's MatMul / Gemm B, QLinearConv's filter), the larger of the load's peak (library
pages read at load, the copy of the largest weights) and the run's (all the runtime's pages, the arena over the largest
working set, int8 kernels' scratch included), and weights decoded at load (fp16 and palettized held at fp32)."""

from __future__ import annotations

import pytest

from compiler.graph import Node
from simulator.peak_memory import ORT_HOST, _conv_scratch, int8_scratch
from simulator.sweep import sweep
from simulator.totals import totals
from tests.simulator.helpers import act, conv_gemm, graph, weight


@pytest.fixture(scope="module")
def swept():
    return sweep(conv_gemm(), "ort-cpu/host")


def _col(r, name: str, metric: str) -> list[float]:
    p = [x["name"] for x in r.bulk["presets"]].index(name)
    return [row[p] for row in r.bulk["metrics"][metric]]


def _load_and_run(wb: list[float], act: list[float], packed: float = 0.0, packed_int8: float = 0.0,
                  scratch: list[float] | None = None) -> tuple[float, float]:
    """The load's peak and the run's beside the file: the run keeps its share of the packed weights, and its arena is
    arena_factor times an op's activations plus its int8 scratch."""
    k = ORT_HOST
    scratch = scratch or [0.0] * len(act)
    return (k["load_copies"] * max(wb) + k["load_runtime_bytes"],
            k["runtime_bytes"] + k["prepack_share"] * packed + k["prepack_share_int8"] * packed_int8
            + max(k["arena_factor"] * a + s for a, s in zip(act, scratch)))


def test_ort_host_peak_is_the_file_the_kept_packed_weights_and_the_larger_of_load_and_run(swept) -> None:
    b, k = swept.bulk, swept.bulk["constants"]
    assert k["prepacked_ops"] == [3] and k["prepacked_int8_ops"] == [0]  # fc, the Gemm; conv1 (QLinearConv)
    wb, a = _col(swept, "fp32", "weight_bytes"), _col(swept, "fp32", "activation_bytes")
    t = totals(b, swept.per_op, "fp32", {})
    load, run = _load_and_run(wb, a, packed=wb[3])  # fp32: only fc's weights are packed (conv1's under int8-static)
    want = t["size_bytes"] + max(load, run)
    assert t["peak_memory_bytes"] == pytest.approx(want, rel=1e-12)
    # the two peaks do not add up: the load's copy is freed before the first run's arena
    assert t["peak_memory_bytes"] < t["size_bytes"] + load + run - 1.0


def test_int8_static_packs_the_conv_filter_and_adds_its_kernels_scratch(swept) -> None:
    """int8-static: QLinearConv packs conv1's filter (kept) and works in an int32 buffer of its output (3 input
    channels: not the symmetric kernel) and an im2col buffer; int8-dynamic: ConvInteger packs nothing and works in the
    input's uint8 copy, an int32 output and the im2col buffer."""
    b, k = swept.bulk, swept.bulk["constants"]
    scratch = {int(i): (st, dyn) for i, st, dyn in k["int8_scratch"]}
    out, col = 32 * 32 * 32, 27 * 32 * 32
    assert scratch[0] == (4 * out + col, 3 * 32 * 32 + 4 * out + col) and set(scratch) == {0, 3}
    for preset, packed_ops, s in (("int8-static", [0, 3], 0), ("int8-dynamic", [3], 1)):
        wb, a = _col(swept, preset, "weight_bytes"), _col(swept, preset, "activation_bytes")
        extra = [scratch[i][s] if i in scratch else 0.0 for i in range(len(a))]
        t = totals(b, swept.per_op, preset, {})
        want = t["size_bytes"] + max(*_load_and_run(wb, a, packed_int8=sum(wb[i] for i in packed_ops), scratch=extra))
        assert t["peak_memory_bytes"] == pytest.approx(want, rel=1e-12), preset


def test_int8_scratch_follows_ort_kernels_paths() -> None:
    """The symmetric int8 conv kernels (x86-64, mlas convsym.cpp) accumulate in registers; a pointwise stride-1 conv
    needs no im2col buffer; a depthwise conv takes an indirection buffer (a pointer per tap and output pixel)."""
    y = 64.0 * 28 * 28
    # 1x1, 32 -> 64: symmetric, pointwise: no scratch under int8-static; int8-dynamic: the input's copy, int32 output
    assert _conv_scratch({}, [64, 32, 1, 1], 32 * 28 * 28, y) == (0.0, 32 * 28 * 28 + 4 * y)
    # 3x3, 3 -> 64 (a stem): 3 channels are no multiple of 4: int32 output and im2col
    st, _ = _conv_scratch({"pads": [1, 1, 1, 1]}, [64, 3, 3, 3], 3 * 28 * 28, y)
    assert st == 4 * y + 27 * 28 * 28
    # 3x3 depthwise over 64 channels (a multiple of 16): symmetric, an indirection buffer only
    st, dyn = _conv_scratch({"group": 64, "pads": [1, 1, 1, 1]}, [64, 1, 3, 3], y, y)
    assert st == 8 * 9 * 28 * 28 and dyn == y + 4 * y + 9 * 28 * 28
    # 24 channels (no multiple of 16): the int32 output too
    assert _conv_scratch({"group": 24}, [24, 1, 3, 3], 24.0 * 100, 24.0 * 100)[0] == 4 * 2400 + 8 * 9 * 100
    # MatMul / Gemm: QLinearMatMul's int32 output; DynamicQuantizeMatMul's uint8 copy of its input
    assert int8_scratch(conv_gemm())[1] == [3, 4 * 64.0, 32768.0]


def test_the_loads_peak_counts_where_one_weight_outweighs_the_runs() -> None:
    """One 64 MB Gemm weight on a small input: the load's copy of it, not its packed copy or the arena, makes the
    peak (packing follows loading)."""
    nodes = [Node("fc", "fc", "Gemm", inputs=["x", "w"], outputs=["y"])]
    r = sweep(graph(nodes, [act("x", [1, 4096]), act("y", [1, 4096]), weight("w", [4096, 4096])], ["x"], ["y"]),
              "ort-cpu/host")
    wb, a = _col(r, "fp32", "weight_bytes"), _col(r, "fp32", "activation_bytes")
    load, run = _load_and_run(wb, a, packed=wb[0])
    assert load > run
    t = totals(r.bulk, r.per_op, "fp32", {})
    assert t["peak_memory_bytes"] == pytest.approx(t["size_bytes"] + load, rel=1e-12)


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
    fp32 = totals(b, swept.per_op, "fp32", {})
    int8 = totals(b, swept.per_op, "fp32", {"fc": "fp32/fp32/int8/0"})
    row = swept.per_op[3]
    wb = _col(swept, "fp32", "weight_bytes")
    wb8 = row["weight_bytes"][row["combos"].index("fp32/fp32/int8/0")]
    a = _col(swept, "fp32", "activation_bytes")
    scratch = {int(i): dyn for i, _, dyn in b["constants"]["int8_scratch"]}
    a[3] = row["activation_bytes"][row["combos"].index("fp32/fp32/int8/0")]
    extra = [scratch[3] if i == 3 else 0.0 for i in range(len(a))]
    held = [wb[0], 0.0, 0.0, wb8]
    want = int8["size_bytes"] + max(*_load_and_run(held, a, packed_int8=wb8, scratch=extra))
    assert int8["peak_memory_bytes"] == pytest.approx(want, rel=1e-9)
    assert int8["peak_memory_bytes"] < fp32["peak_memory_bytes"]
    lut = totals(b, swept.per_op, "fp32", {"fc": "fp32/fp32/lut4/0"})
    assert lut["peak_memory_bytes"] == pytest.approx(fp32["peak_memory_bytes"], rel=1e-9)
    assert lut["size_bytes"] < 0.3 * fp32["size_bytes"]


def test_other_targets_keep_their_rule() -> None:
    """LiteRT counts the weights twice (weight_copies) and none of ORT's terms; a device target neither."""
    for target in ("litert-cpu/host", "coreml/apple-a17"):
        r = sweep(conv_gemm(), target)
        k = r.bulk["constants"]
        assert not {"runtime_bytes", "arena_factor", "decoded_at_load", "prepacked_ops", "int8_scratch"} & set(k)
        p = r.bulk["base"]["preset"]
        t = totals(r.bulk, r.per_op, p, {})
        wb, a = _col(r, p, "weight_bytes"), _col(r, p, "activation_bytes")
        assert t["peak_memory_bytes"] == pytest.approx(t["size_bytes"] + k["weight_copies"] * sum(wb) + max(a),
                                                       rel=1e-12)


def test_every_packed_weight_is_kept() -> None:
    """Three equal Gemms (a transformer's MLP): the run keeps the packed share of all three."""
    nodes = [Node(f"fc{i}", f"fc{i}", "Gemm", inputs=[f"x{i}", f"w{i}"], outputs=[f"x{i + 1}"]) for i in range(3)]
    values = [act(f"x{i}", [1, 1024]) for i in range(4)] + [weight(f"w{i}", [1024, 1024]) for i in range(3)]
    r = sweep(graph(nodes, values, ["x0"], ["x3"]), "ort-cpu/host")
    wb, a = _col(r, "fp32", "weight_bytes"), _col(r, "fp32", "activation_bytes")
    t = totals(r.bulk, r.per_op, "fp32", {})
    assert r.bulk["constants"]["prepacked_ops"] == [0, 1, 2]
    load, run = _load_and_run(wb, a, packed=sum(wb))
    assert run > load
    want = t["size_bytes"] + run
    assert t["peak_memory_bytes"] == pytest.approx(want, rel=1e-12)


def test_a_recurrent_op_holds_its_tensors_not_every_steps_traffic() -> None:
    """An LSTM's activation figure counts every step's re-read of R (200 steps here); its share of the arena is its
    tensors in and out (activation_caps), on every target."""
    steps, hidden = 200, 256
    nodes = [Node("lstm", "lstm", "LSTM", inputs=["x", "W", "R", "B"], outputs=["y"],
                  attributes={"hidden_size": hidden})]
    values = [act("x", [steps, 1, 64]), act("y", [steps, 1, 1, hidden]), weight("W", [1, 4 * hidden, 64]),
              weight("R", [1, 4 * hidden, hidden]), weight("B", [1, 8 * hidden])]
    g = graph(nodes, values, ["x"], ["y"])
    held = 4.0 * (steps * 64 + steps * hidden)
    for target in ("ort-cpu/host", "litert-cpu/host", "coreml/apple-a17"):
        r = sweep(g, target)
        p = r.bulk["base"]["preset"]
        k, a = r.bulk["constants"], _col(r, p, "activation_bytes")
        assert k["activation_caps"] == [[0, held]] and a[0] > 10 * held  # the figure counts every step
        t = totals(r.bulk, r.per_op, p, {})
        wb = _col(r, p, "weight_bytes")
        if target == "ort-cpu/host":
            want = t["size_bytes"] + max(*_load_and_run(wb, [held]))
        else:
            want = t["size_bytes"] + k["weight_copies"] * sum(wb) + held
        assert t["peak_memory_bytes"] == pytest.approx(want, rel=1e-12), target
