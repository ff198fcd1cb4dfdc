"""Work of TFLite builtins (simulator/tflite_ops.py) against hand-computed MACs on small flatbuffers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from compiler.frontends import tflite
from simulator.sweep import sweep
from simulator.tflite_ops import tflite_works
from testkit import tflite_builder as tb


@pytest.fixture(scope="session")
def zoo(models) -> Path:
    return models.get("op_zoo.tflite", tb.op_zoo)


def test_zoo_runs_in_litert_at_the_declared_shapes(zoo: Path) -> None:
    """The expectations below are computed from the shapes written in the file: LiteRT must agree with them."""
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_path=str(zoo))
    it.allocate_tensors()
    for d in it.get_input_details():
        it.set_tensor(d["index"], np.ones(d["shape"], np.float32))
    it.invoke()
    g = tflite.load(zoo)
    seen = {d["name"]: list(d["shape"]) for d in it.get_tensor_details()}
    assert all(seen[n] == v.shape for n, v in g.values.items() if n in seen)
    assert np.isfinite(it.get_tensor(it.get_output_details()[0]["index"])).all()


# op id -> (kind, MACs, other FLOPs, activation elements in, out, kernel elements, kernel rows)
EXPECTED = {
    "DEQUANTIZE_0": ("folded", 0, 0, 0, 0, 0, 1),  # fp16 filter: dequantized once at prepare
    # x [1,8,8,4], multiplier 2 -> [1,8,8,8]; filter [1,3,3,8]: 3x3 taps per output; fused RELU6 clamps.
    "DEPTHWISE_CONV_2D_1": ("dwconv", 8 * 8 * 8 * 9, 8 * 8 * 8, 8 * 8 * 4, 8 * 8 * 8, 3 * 3 * 8, 8),
    "DEQUANTIZE_2": ("folded", 0, 0, 0, 0, 0, 1),  # per-channel int8 filter
    # [1,8,8,8] stride 2 -> [1,4,4,16], filter OHWI [16,3,3,8].
    "CONV_2D_3": ("conv", 4 * 4 * 16 * 3 * 3 * 8, 0, 8 * 8 * 8, 4 * 4 * 16, 16 * 72, 16),
    "HARD_SWISH_4": ("elementwise", 0, 4 * 256, 256, 256, 0, 1),
    "MUL_5": ("elementwise", 0, 256, 256, 256, 0, 1),  # [1,4,4,16] x constant [16], broadcast
    "ADD_6": ("elementwise", 0, 256 + 256, 512, 256, 0, 1),  # + fused RELU
    "PAD_7": ("layout", 0, 6 * 6 * 16, 256, 6 * 6 * 16, 0, 1),
    "AVERAGE_POOL_2D_8": ("pool", 0, 4 * 4 * 16 * 9, 6 * 6 * 16, 4 * 4 * 16, 0, 1),
    "MAX_POOL_2D_9": ("pool", 0, 2 * 2 * 16 * 4, 256, 64, 0, 1),
    "RESIZE_BILINEAR_10": ("layout", 0, 4 * 256, 64, 256, 0, 1),
    "RESIZE_NEAREST_NEIGHBOR_11": ("layout", 0, 1024, 256, 1024, 0, 1),
    # Input [1,8,8,16] scatters into C_out x 3 x 3 = 72 outputs per element; filter [8,3,3,16].
    "TRANSPOSE_CONV_12": ("conv", 8 * 8 * 16 * 72, 0, 1024, 16 * 16 * 8, 8 * 3 * 3 * 16, 8),
    "MEAN_13": ("reduce", 0, 2048, 2048, 8, 0, 1),
    "RESHAPE_14": ("view", 0, 0, 8, 8, 0, 1),
    "FULLY_CONNECTED_15": ("gemm", 6 * 12 * 8, 0, 48, 72, 96, 12),  # [1,6,8] rows of 8 -> 12 units
    "STRIDED_SLICE_16": ("layout", 0, 48, 72, 48, 0, 1),
    "BATCH_MATMUL_17": ("matmul", 6 * 6 * 8, 0, 96, 36, 0, 1),  # q k^T (adj_y): K = 8
    "SOFTMAX_18": ("softmax", 0, 5 * 36, 36, 36, 0, 1),
    "BATCH_MATMUL_19": ("matmul", 6 * 8 * 6, 0, 36 + 48, 48, 0, 1),  # p v: K = 6
    "GELU_20": ("elementwise", 0, 10 * 48, 48, 48, 0, 1),
    "CONCATENATION_21": ("layout", 0, 56, 56, 56, 0, 1),
    "TRANSPOSE_22": ("layout", 0, 56, 56, 56, 0, 1),
    "QUANTIZE_23": ("quant", 0, 112, 56, 56, 0, 1),
    "DEQUANTIZE_24": ("quant", 0, 112, 56, 56, 0, 1),  # of an activation: runs every inference
    "DENSIFY_25": ("folded", 0, 0, 0, 0, 0, 1),
    "FULLY_CONNECTED_26": ("gemm", 8 * 5 * 7, 0, 56, 40, 35, 5),  # the densified [5,7] matrix
}


def test_hand_computed_work_of_every_builtin(zoo: Path) -> None:
    g = tflite.load(zoo)
    works, folded, _ = tflite_works(g)
    got = {n.id: (w.kind, w.macs, w.flops, w.in_elements, w.out_elements, w.kernel_elements, w.kernel_out_channels)
           for n, w in zip(g.nodes, works)}
    assert got == EXPECTED
    assert folded == {"DEQUANTIZE_0", "DEQUANTIZE_2", "DENSIFY_25"}
    by_id = dict(zip((n.id for n in g.nodes), works))
    assert by_id["DEPTHWISE_CONV_2D_1"].kernel_name == "dw/w" and by_id["DEPTHWISE_CONV_2D_1"].fused_activation
    assert by_id["CONV_2D_3"].aux_weight_elements == 16 and by_id["TRANSPOSE_CONV_12"].other_const_bytes == 16
    assert all(w.shapes_known for w in works)


def test_weights_behind_dequantize_cost_what_fp32_weights_cost(models, tmp_path: Path) -> None:
    """The regression of issue 13: an fp16-weight file's depthwise conv read its DEQUANTIZE output ([1,3,3,C]) as
    a dense OIHW filter, C times the MACs. Same network, fp32 or fp16 weights: same work, same fp32 latency."""
    f32 = tflite.load(models.get("cnn.tflite", tb.cnn))
    f16 = tflite.load(tb.cnn(tmp_path / "cnn16.tflite", fp16=True))
    w32, w16 = tflite_works(f32)[0], tflite_works(f16)[0]
    by_type = lambda g, ws: {(n.op_type, w.macs) for n, w in zip(g.nodes, ws) if w.macs}  # noqa: E731
    assert by_type(f32, w32) == by_type(f16, w16)
    assert sum(w.macs for w in w16) == 16 * 16 * 16 * 27 + 16 * 16 * 16 * 9 + 16 * 16 * 16 * 16 + 10 * 16
    lat = [sum(sweep(g, "litert/pixel-8").bulk["metrics"]["latency_ms"][i][0] for i in range(len(g.nodes)))
           for g in (f32, f16)]
    assert lat[1] == pytest.approx(lat[0], rel=0.02)


def test_sparse_constant_weights(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    dense = rng.standard_normal((6, 16)).astype(np.float32)
    dense[rng.random((6, 16)) < 0.75] = 0.0
    w = tb.TfliteWriter()
    x, y = w.tensor("x", [2, 16]), w.tensor("y", [2, 6])
    wd = w.tensor("w/dense", [6, 16])
    w.op("DENSIFY", [w.sparse_const("w", dense)], [wd])
    w.op("FULLY_CONNECTED", [x, wd, -1], [y], w.options("FullyConnectedOptions"))
    g = tflite.load(w.save(tmp_path / "sparse.tflite", [x], [y]))
    ws = g.values["w"].weight
    nz = int(np.count_nonzero(dense))
    assert ws is not None and (ws.elements, ws.bytes) == (96, nz * 4)
    assert ws.sparsity == pytest.approx(1 - nz / 96) and ws.min == pytest.approx(float(dense.min()))
    works, folded, _ = tflite_works(g)
    assert folded == {"DENSIFY_0"}
    assert (works[1].macs, works[1].kernel_elements) == (2 * 6 * 16, 96)  # XNNPACK runs the densified matrix


def test_rfft2d_counts_its_fft(tmp_path: Path) -> None:
    """An audio front end's short-time FFT (TF's tf.signal.rfft becomes RFFT2D with fft_length [1, n]): real FFTs of
    length n per frame, 5/2 n log2 n FLOPs each; it had no cost rule and was costed at its bytes only (BirdNET's
    spectrogram: 19 of 22 ms measured, 0.09 ms predicted). LiteRT runs the file and agrees with the shapes."""
    from ai_edge_litert.interpreter import Interpreter

    w = tb.TfliteWriter()
    x, y = w.tensor("x", [1, 10, 1, 64]), w.tensor("y", [1, 10, 1, 33], "complex64")
    w.op("RFFT2D", [x, w.const("fft_length", np.array([1, 64], np.int32))], [y])
    path = w.save(tmp_path / "rfft.tflite", [x], [y])
    it = Interpreter(model_path=str(path))
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], np.ones((1, 10, 1, 64), np.float32))
    it.invoke()
    assert list(it.get_output_details()[0]["shape"]) == [1, 10, 1, 33]
    (work,), _, _ = tflite_works(tflite.load(path))
    assert work.flops == pytest.approx(10 * 2.5 * 64 * 6) and work.shapes_known
    assert not any("no cost rule" in n for n in work.notes)


def test_resource_variable_handles_hold_no_elements() -> None:
    """A streaming model's state lives in resource variables (pymicro-wakeword's models): VAR_HANDLE makes a handle,
    READ_VARIABLE / ASSIGN_VARIABLE move the data. The handle has no shape and no elements; it was counted as a
    tensor of unknown shape, so every variable op of those models was marked work unknown."""
    from compiler.graph import Graph, Node, Value

    values = {"h": Value("h", None, "resource"), "s": Value("s", [1, 2, 1, 40], "int8"),
              "n": Value("n", [1, 2, 1, 40], "int8")}
    nodes = [Node("VAR_HANDLE_0", "", "VAR_HANDLE", outputs=["h"]),
             Node("READ_VARIABLE_1", "", "READ_VARIABLE", inputs=["h"], outputs=["s"]),
             Node("ASSIGN_VARIABLE_2", "", "ASSIGN_VARIABLE", inputs=["h", "n"])]
    works, _, _ = tflite_works(Graph("state", "tflite", nodes, values, ["n"], ["s"]))
    assert all(w.shapes_known for w in works)
    assert [(w.in_elements, w.out_elements) for w in works] == [(0, 0), (0, 80), (80, 0)]


def test_weights_the_last_level_cache_keeps_draw_no_memory_power(tmp_path: Path) -> None:
    """An fp16-weight MLP of 13 MB at fp32, on the host (a 32 MB L3 that keeps weights read again within the run's
    0.1 ms): its weights are read from the L3, not DRAM, so they are no memory traffic and its memory power stays
    under what the memory can deliver (bandwidth x energy per byte). Counted as DRAM bytes, BirdNET's metadata
    model drew 9.9 W on the host (83 GB/s from a 52 GB/s memory); a device with no last-level cache known
    (pixel-8's CPU) still streams them from memory every run."""
    from simulator.profiles import load_profile
    from simulator.totals import totals

    g = tflite.load(tb.fp16_mlp(tmp_path / "mlp16.tflite"))
    weights = 4.0 * (64 * 1024 + 1024 * 2048 + 2048 * 512)
    host = load_profile("host-cpu", "litert")
    u = host.units[0]
    assert u.llc_bytes > weights and u.evicted_bandwidth_bytes_per_s > 0  # the premise: they fit the L3
    r = sweep(g, "litert-cpu/host", hardware=host)
    tot = totals(r.bulk, r.per_op, "fp32", {})
    ceiling_mw = u.evicted_bandwidth_bytes_per_s * host.dram_energy_pj_per_byte * 1e-9
    assert 0 < tot["memory_power_mw"] < 0.05 * ceiling_mw
    dram = sum(row[0] for row in r.bulk["metrics"]["dram_bytes"])
    assert dram < 0.01 * weights
    pixel = sweep(g, "litert/pixel-8")
    assert sum(row[0] for row in pixel.bulk["metrics"]["dram_bytes"]) >= weights


def test_litert_peak_memory_counts_xnnpack_s_copy_of_the_weights(tmp_path: Path) -> None:
    """LiteRT on the host keeps the file's weights mapped and XNNPACK packs each weight into its own buffers: the
    predicted peak holds both (BirdNET's metadata model measured 61.3 MB, predicted 29.6 MB with one copy). The
    solver reads the same figure; a target without such a copy (pixel-8's table) keeps size + largest working set."""
    from simulator.solver import Budget, prepare
    from simulator.solver.state import Pricing
    from simulator.totals import totals

    g = tflite.load(tb.fp16_mlp(tmp_path / "mlp16.tflite"))
    r = sweep(g, "litert-cpu/host")
    m = r.bulk["metrics"]
    weights = sum(row[0] for row in m["weight_bytes"])
    largest = max(row[0] for row in m["activation_bytes"])
    tot = totals(r.bulk, r.per_op, "fp32", {})
    assert weights > 4e6 and tot["peak_memory_bytes"] == pytest.approx(tot["size_bytes"] + weights + largest)
    pricing = Pricing(prepare(r.bulk, r.per_op), "fp32", {}, Budget.of(peak_memory_bytes=1e9), ())
    assert pricing.figure("peak_memory_bytes", 0.0, weights, 0.0, largest) == pytest.approx(tot["peak_memory_bytes"])
    pixel = sweep(g, "litert/pixel-8")
    ptot = totals(pixel.bulk, pixel.per_op, "fp32", {})
    assert ptot["peak_memory_bytes"] == pytest.approx(
        ptot["size_bytes"] + max(row[0] for row in pixel.bulk["metrics"]["activation_bytes"]))


def test_a_tflite_stored_fp16_starts_from_its_fp16_state(tmp_path: Path) -> None:
    """A .tflite whose weights are stored fp16 behind DEQUANTIZE (TFLite's float16 quantization) is, unoptimized, the
    fp16 preset: its size is the file's (the fp32 preset is what the fp32 export writes, twice the weights; BirdNET's
    metadata model was predicted 29.5 MB for a 14.8 MB file). An fp32 file starts from fp32."""
    path = tb.fp16_mlp(tmp_path / "mlp16.tflite")
    r = sweep(tflite.load(path), "litert-cpu/host")
    assert r.bulk["base"]["preset"] == "fp16"
    assert r.bulk["base"]["size_bytes"] == pytest.approx(path.stat().st_size, rel=0.02)
    from simulator.totals import totals

    assert totals(r.bulk, r.per_op, "fp32", {})["size_bytes"] > 1.8 * path.stat().st_size
    assert sweep(tflite.load(tb.cnn(tmp_path / "f32.tflite")), "litert-cpu/host").bulk["base"]["preset"] == "fp32"
    assert sweep(tflite.load(tb.int8_add(tmp_path / "i8.tflite")), "litert-cpu/host").bulk["base"]["preset"] == \
        "int8-static"  # fully quantized: int8 weights and activations
    # LiteRT measures the uploaded file whole: the table is scaled so that it, the fp16 state, sums to the measurement
    from compiler.profile import Profile

    prof = Profile(target="litert-cpu/host", runtime="LiteRT test", device="cpu", threads=1, runs=10, warmup=1,
                   latency_ms=1.0, latency_p90_ms=1.1, peak_memory_bytes=0, input_shapes={})
    assert sweep(tflite.load(path), "litert-cpu/host", prof).bulk["base"]["latency_ms"] == pytest.approx(1.0)


def test_gather_counts_a_call_per_index(tmp_path: Path) -> None:
    """TFLite's GATHER copies one slice per index: its arithmetic is the indices, its slices the bytes moved (BirdNET's
    framing, 511 x 1024 indices of 2 floats, profiled 1.7 ms; counted per element moved, 0.1)."""
    w = tb.TfliteWriter()
    x, y = w.tensor("x", [100, 2]), w.tensor("y", [4, 8, 2])
    w.op("GATHER", [x, w.const("idx", np.zeros((4, 8), np.int32))], [y], w.options("GatherOptions", axis=0))
    (work,), _, _ = tflite_works(tflite.load(w.save(tmp_path / "gather.tflite", [x], [y])))
    assert work.flops == 32 and work.out_elements == 64 and work.kind == "layout"
