"""The sweep and the totals rule: structure, conversions, overrides, backend behaviour."""

from __future__ import annotations

import pytest

from compiler.graph import Node
from compiler.profile import Profile, TaskTiming
from compiler.vocabulary.options import OptionError
from simulator.sweep import sweep
from simulator.totals import totals
from tests.simulator.helpers import act, conv_chain, graph, weight

HOST = "ort-cpu/host"


def col(r, preset: str) -> int:
    return [p["name"] for p in r.bulk["presets"]].index(preset)


def test_bulk_shape_matches_the_contract() -> None:
    g = conv_chain()
    r = sweep(g, HOST)
    b = r.bulk
    n, p = len(g.nodes), len(b["presets"])
    assert b["schema"] == 2 and b["target"] == HOST and b["ops"] == [nd.id for nd in g.nodes]
    for m in ("latency_ms", "weight_bytes", "activation_bytes", "dram_bytes"):
        assert len(b["metrics"][m]) == n and all(len(row) == p for row in b["metrics"][m])
    assert len(b["supported"]) == n and len(b["combos"]) == n
    assert b["edges"] == {"src": [0, 1, 2, 3, 4], "dst": [1, 2, 3, 4, 5],
                          "elements": [16384.0, 16384.0, 16384.0, 16.0, 16.0]}
    assert b["label"]["kind"] == "predicted" and b["label"]["baseline"] == "predicted"
    assert len(r.per_op) == n and r.per_op[0]["op"] == "conv1" and len(r.per_op[0]["combos"]) == 405
    assert r.per_op[1]["combos"][0] == "fp32/fp32/-/0"  # Relu has no weights
    assert b["base"]["latency_ms"] == totals(b, r.per_op, "fp32", {})["latency_ms"]


def test_totals_rule_by_hand() -> None:
    r = sweep(conv_chain(), HOST)
    b = r.bulk
    p = col(r, "int8-static")
    got = totals(b, r.per_op, "int8-static", {})
    lat = b["constants"]["per_inference_ms"] + sum(row[p] for row in b["metrics"]["latency_ms"])
    assert b["constants"]["per_inference_ms"] > 0  # the runtime's fixed cost per call
    fmt = [c[p].split("/") for c in b["combos"]]
    conv_ms, conv_bytes = 0.0, 0.0
    for s, d, el in zip(b["edges"]["src"], b["edges"]["dst"], b["edges"]["elements"]):
        a, z = fmt[s][1], fmt[d][0]
        if a != z:
            conv_ms += b["conversion"]["fixed_ms"] + el * b["conversion"]["ms_per_element"][f"{a}>{z}"]
            conv_bytes += el * ({"fp32": 4, "fp16": 2, "int8": 1}[a] + {"fp32": 4, "fp16": 2, "int8": 1}[z])
    assert got["latency_ms"] == pytest.approx(lat + conv_ms, rel=1e-12)
    size = sum(row[p] for row in b["metrics"]["weight_bytes"]) + b["constants"]["size_overhead_bytes"]
    assert got["size_bytes"] == size
    # int8 kernels run as stored (nothing decoded); MLAS packs the Gemm's weights (fc) and QLinearConv its convs'
    # filters; the int8 kernels' scratch joins their working sets; the load's peak or the run's counts
    k = b["constants"]
    wb = [row[p] for row in b["metrics"]["weight_bytes"]]
    assert k["prepacked_ops"] == [b["ops"].index("fc")]
    packed = sorted({*k["prepacked_ops"], *(i for i in k["prepacked_int8_ops"] if fmt[i][0] == fmt[i][2] == "int8")})
    work = [k["arena_factor"] * row[p] for row in b["metrics"]["activation_bytes"]]
    for i, st, _ in k["int8_scratch"]:
        work[i] += st if fmt[i][2] == "int8" else 0.0
    share = {True: k["prepack_share_int8"], False: k["prepack_share"]}
    load = k["load_copies"] * max(wb) + k["load_runtime_bytes"]
    run = k["runtime_bytes"] + sum(share[fmt[i][2] == "int8"] * wb[i] for i in packed) + max(work)
    assert got["peak_memory_bytes"] == pytest.approx(size + max(load, run), rel=1e-12)
    dram = sum(row[p] for row in b["metrics"]["dram_bytes"]) + conv_bytes
    assert got["memory_power_mw"] == pytest.approx(dram * b["constants"]["dram_pj_per_byte"] * 1e-9
                                                   / got["latency_ms"] * 1e3, rel=1e-12)
    assert got["fps"] == pytest.approx(1000 / got["latency_ms"])


def test_conversions_appear_exactly_where_neighbours_formats_differ() -> None:
    r = sweep(conv_chain(), HOST)
    b = r.bulk
    base = totals(b, r.per_op, "fp32", {})
    # All fp32: no edge converts. Overriding the depthwise conv (op 2) to int8 in and out adds two conversions:
    # relu (fp32 out) -> dw (int8 in) and dw (int8 out) -> gap (fp32 in).
    dw_table = r.per_op[2]
    j_int8, j_fp32 = dw_table["combos"].index("int8/int8/int8/0"), dw_table["combos"].index("fp32/fp32/fp32/0")
    over = totals(b, r.per_op, "fp32", {"dw": "int8/int8/int8/0"})
    conv = b["conversion"]
    expected = (base["latency_ms"] - dw_table["latency_ms"][j_fp32] + dw_table["latency_ms"][j_int8]
                + 2 * conv["fixed_ms"] + 16384 * conv["ms_per_element"]["fp32>int8"]
                + 16384 * conv["ms_per_element"]["int8>fp32"])
    assert over["latency_ms"] == pytest.approx(expected, rel=1e-12)
    # Same formats on both sides: int8 in, fp32 out only converts on the way in.
    one = totals(b, r.per_op, "fp32", {"dw": "int8/fp32/int8/0"})
    j = dw_table["combos"].index("int8/fp32/int8/0")
    assert one["latency_ms"] == pytest.approx(base["latency_ms"] - dw_table["latency_ms"][j_fp32]
                                              + dw_table["latency_ms"][j] + conv["fixed_ms"]
                                              + 16384 * conv["ms_per_element"]["fp32>int8"], rel=1e-12)


def test_override_wins_over_model_wide_and_others_keep_it() -> None:
    r = sweep(conv_chain(), HOST)
    b = r.bulk
    p = col(r, "int8-static")
    t = totals(b, r.per_op, "int8-static", {"fc": "fp32/fp32/fp32/0"})
    fc = r.per_op[5]
    j = fc["combos"].index("fp32/fp32/fp32/0")
    # Weight bytes: every op from the int8 column except fc, from its per-op row.
    size = sum(row[p] for i, row in enumerate(b["metrics"]["weight_bytes"]) if i != 5) + fc["weight_bytes"][j]
    assert t["size_bytes"] == size + b["constants"]["size_overhead_bytes"]


def test_bad_overrides_are_clear() -> None:
    r = sweep(conv_chain(), HOST)
    with pytest.raises(OptionError, match="not a task of this model"):
        totals(r.bulk, r.per_op, "fp32", {"nope": "fp32/fp32/fp32/0"})
    with pytest.raises(OptionError, match="has no weights"):
        totals(r.bulk, r.per_op, "fp32", {"relu1": "int8/int8/int8/0"})
    with pytest.raises(OptionError, match="not in this table"):
        totals(r.bulk, r.per_op, "int7", {})


def test_cpu_realities() -> None:
    """ORT CPU: dynamic int8 Conv is slower than fp32; fp16 shrinks the file without speeding up; int4 does
    not apply to Conv (falls back); pruning changes nothing (dense storage, no sparse kernels)."""
    r = sweep(conv_chain(), HOST)
    b = r.bulk
    lat = lambda preset, i: b["metrics"]["latency_ms"][i][col(r, preset)]  # noqa: E731
    assert lat("int8-dynamic", 0) > lat("fp32", 0)
    assert lat("fp16", 0) >= lat("fp32", 0)
    fp32, fp16 = totals(b, r.per_op, "fp32", {}), totals(b, r.per_op, "fp16", {})
    ov = b["constants"]["size_overhead_bytes"]
    # The values halve; the fp16 converter adds its Casts and value_info records (simulator.onnx_file).
    from simulator.onnx_file import EVENTS, export_records

    g = conv_chain()
    added = export_records(g, g, [True] * len(g.nodes)).events[:, [EVENTS.index("fp16"), EVENTS.index("shapes")]]
    assert fp16["size_bytes"] - ov - added.sum() == pytest.approx((fp32["size_bytes"] - ov) / 2, rel=1e-9)
    p4 = col(r, "int4-weights")
    assert b["supported"][0][p4] is False and b["combos"][0][p4] == "fp32/fp32/fp32/0"
    assert b["supported"][5][p4] is True and b["combos"][5][p4] == "fp32/fp32/int4/0"
    assert totals(b, r.per_op, "prune-50", {}) == fp32


def test_sparse_and_palettized_weights_shrink_on_core_ml() -> None:
    big = graph([Node("c", "c", "Conv", inputs=["x", "w"], outputs=["y"], attributes={"pads": [1, 1, 1, 1]})],
                [act("x", [1, 64, 16, 16]), weight("w", [64, 64, 3, 3]), act("y", [1, 64, 16, 16])], ["x"], ["y"])
    r = sweep(big, "coreml/apple-a17")
    t = lambda p: totals(r.bulk, r.per_op, p, {})["size_bytes"] - r.bulk["constants"]["size_overhead_bytes"]  # noqa
    assert t("prune-75") < t("prune-25") < t("fp16")
    assert t("palettize-2bit") < t("palettize-4bit") < t("palettize-8bit") < t("fp16")
    # A table of 256 entries costs more than it saves on a 432-weight kernel: the model says so.
    small = sweep(conv_chain(), "coreml/apple-a17")
    assert small.bulk["metrics"]["weight_bytes"][0][col(small, "palettize-8bit")] > \
        small.bulk["metrics"]["weight_bytes"][0][col(small, "fp16")]
    # ANE first; an fp32 model runs there at fp16 (ML Programs compute fp16 by default, the ANE only fp16).
    units = r.bulk["units"]
    assert units[0][col(r, "fp16")] == "ane" and units[0][col(r, "fp32")] == "ane"


def test_unsupported_ops_fall_back_to_the_cpu_on_npus() -> None:
    g = graph([Node("a", "a", "Conv", inputs=["x", "w"], outputs=["y"]),
               Node("b", "b", "NonMaxSuppression", inputs=["y"], outputs=["z"])],
              [act("x", [1, 4, 8, 8]), weight("w", [4, 4, 1, 1]), act("y", [1, 4, 8, 8]), act("z", [1, 4, 8, 8])],
              ["x"], ["z"])
    r = sweep(g, "ort-qnn/snapdragon-8g3")
    p = col(r, "int8-static")
    assert r.bulk["units"][0][p] == "htp" and r.bulk["units"][1][p] == "cpu"


def test_measured_profile_sets_the_fp32_baseline() -> None:
    g = conv_chain()
    prof = Profile(target=HOST, runtime="onnxruntime test", device="cpu", threads=1, runs=10, warmup=1,
                   latency_ms=1.0, latency_p90_ms=1.1, peak_memory_bytes=0, input_shapes={},
                   tasks={"dw": TaskTiming(0.5, 0.4, 0.6, 10)})
    r = sweep(g, HOST, prof)
    p = col(r, "fp32")
    assert r.bulk["label"]["baseline"] == "measured"
    assert r.bulk["metrics"]["latency_ms"][2][p] == pytest.approx(0.5)  # (profiler overhead 0 uncalibrated)
    # Options stay predicted: int8-static of the same op is not the measured number.
    assert r.bulk["metrics"]["latency_ms"][2][col(r, "int8-static")] != pytest.approx(0.5)


def test_shared_weights_are_stored_once() -> None:
    g = graph([Node("a", "a", "MatMul", inputs=["x", "w"], outputs=["y"]),
               Node("b", "b", "MatMul", inputs=["y", "w"], outputs=["z"])],
              [act("x", [1, 8]), weight("w", [8, 8]), act("y", [1, 8]), act("z", [1, 8])], ["x"], ["z"])
    r = sweep(g, HOST)
    p = col(r, "fp32")
    assert [row[p] for row in r.bulk["metrics"]["weight_bytes"]] == [256.0, 0.0]


def test_skip_layernorm_is_costed_as_its_own_kernel() -> None:
    from simulator.profiles import load_profile

    def one(op: str, inputs: list[str]) -> object:
        return graph([Node("n", "n", op, inputs=inputs, outputs=["y"], domain="com.microsoft" if "Skip" in op else "")],
                     [act("x", [1, 32, 128]), act("s", [1, 32, 128]), weight("g", [128]), weight("b", [128]),
                      act("y", [1, 32, 128])], ["x", "s"], ["y"])

    hw = load_profile("host-cpu").with_overrides({"units": {"cpu": {"efficiency": {"norm.fp32": 0.1,
                                                                                  "skipnorm.fp32": 0.01}}}})
    ln = sweep(one("LayerNormalization", ["x", "g", "b"]), HOST, hardware=hw)
    sln = sweep(one("SkipLayerNormalization", ["x", "s", "g", "b"]), HOST, hardware=hw)
    assert ln.works[0].kind == "norm" and sln.works[0].kind == "skipnorm"
    assert sln.bulk["base"]["latency_ms"] > 2 * ln.bulk["base"]["latency_ms"]
    # Without a figure of its own a skipnorm uses the norm figure (parent kind).
    plain = load_profile("host-cpu").with_overrides({"units": {"cpu": {"efficiency": {"norm.fp32": 0.1}}}})
    assert sweep(one("SkipLayerNormalization", ["x", "s", "g", "b"]), HOST, hardware=plain).works[0].kind == "skipnorm"


def test_int4_weight_decode_rate_depends_on_activation_rows() -> None:
    """MatMulNBits: one row is a fused GEMV (decode.int4w), several rows dequantize B then SGEMM
    (decode.int4wrows); each has its calibrated rate."""
    from simulator.profiles import load_profile

    def mm(m: int) -> object:
        return graph([Node("a", "a", "MatMul", inputs=["x", "w"], outputs=["y"])],
                     [act("x", [m, 512]), weight("w", [512, 512]), act("y", [m, 512])], ["x"], ["y"])

    def hw(rows_eff: float) -> object:
        return load_profile("host-cpu").with_overrides({"units": {"cpu": {"efficiency": {
            "decode.int4w": 1.0, "decode.int4wrows": rows_eff}}}})

    def p(g: object, h: object) -> float:
        r = sweep(g, HOST, hardware=h)
        return r.bulk["metrics"]["latency_ms"][0][col(r, "int4-weights")]
    slow, fast = hw(0.01), hw(1.0)
    assert p(mm(1), slow) == p(mm(1), fast)  # one row: the GEMV rate only
    peak = slow.units[0].peak_ops_per_s["fp32"]
    assert p(mm(8), slow) - p(mm(8), fast) == pytest.approx(512 * 512 / peak * (1 / 0.01 - 1) * 1e3, rel=1e-6)


def test_profiler_cost_beyond_the_calibrated_one_is_taken_from_the_unprofiled_whole() -> None:
    """Task medians that add up to more than the whole-model latency (timed without the profiler):
    the excess per task is this graph's profiler cost, so the measured baseline sums to the whole."""
    g = conv_chain()
    ids = [nd.id for nd in g.nodes]
    tasks = {i: TaskTiming(0.1, 0.09, 0.11, 10) for i in ids}  # 0.6 ms profiled in all
    prof = Profile(target=HOST, runtime="onnxruntime test", device="cpu", threads=1, runs=10, warmup=1,
                   latency_ms=0.3, latency_p90_ms=0.33, peak_memory_bytes=0, input_shapes={}, tasks=tasks)
    r = sweep(g, HOST, prof)
    tasks_ms = sum(row[col(r, "fp32")] for row in r.bulk["metrics"]["latency_ms"])
    assert r.bulk["base"]["latency_ms"] == pytest.approx(0.3, rel=1e-9)
    # the runtime's fixed cost is the totals' per-inference term, not in any task's cell
    assert tasks_ms + r.bulk["constants"]["per_inference_ms"] == pytest.approx(0.3, rel=1e-9)
    assert r.bulk["constants"]["per_inference_ms"] > 0


def test_weights_beyond_the_cache_share_do_not_overlap() -> None:
    """A model whose weights, as an option runs them, exceed the core's last-level cache share streams them
    from memory every run without hiding that behind the compute: the exposed part grows linearly from the
    share to the whole cache, beyond which fp32 pays the smaller of compute and weight time in full; int8
    (a quarter of the bytes) still fits and keeps the overlap."""
    from simulator.profiles import load_profile

    values = [act("x", [8, 1024]), weight("w", [1024, 1024]), act("y", [8, 1024])]
    g = graph([Node("mm", "mm", "MatMul", inputs=["x", "w"], outputs=["y"])], values, ["x"], ["y"])
    fp32_bytes = 1024 * 1024 * 4

    def lat(share: float, preset: str, whole: float = 0.0) -> float:
        hw = load_profile("host-cpu").with_overrides({"units": {"cpu": {"llc_share_bytes": share,
                                                                        "llc_bytes": whole}}})
        r = sweep(g, HOST, hardware=hw)
        return r.bulk["metrics"]["latency_ms"][0][col(r, preset)]

    fits, beyond = lat(2 * fp32_bytes, "fp32"), lat(fp32_bytes / 2, "fp32")
    hw = load_profile("host-cpu")
    overlap = hw.units[0].roofline_overlap
    assert 0 < overlap < 1 and beyond > fits
    assert lat(0.0, "fp32") == fits  # 0: no share known, the plain overlap
    # Only the overlap term changes: (1 - overlap) x the smaller of the two times, which is positive.
    assert lat(fp32_bytes / 2, "int8-static") == lat(2 * fp32_bytes, "int8-static")
    # Between the share and the whole cache: linear. Halfway is halfway; past the whole, all exposed, and the weights
    # come from memory (roofline.outgrown): their time at the memory rate instead of the last-level cache's.
    assert lat(fp32_bytes / 2, "fp32", 1.5 * fp32_bytes) == pytest.approx((fits + beyond) / 2)
    u = hw.units[0]
    from_memory_ms = fp32_bytes * (1 / u.evicted_bandwidth_bytes_per_s
                                   - 1 / (hw.dram_bandwidth_bytes_per_s * u.bandwidth_efficiency)) * 1e3
    assert lat(fp32_bytes / 4, "fp32", fp32_bytes / 2) == pytest.approx(beyond + from_memory_ms, rel=1e-3)
    assert lat(fp32_bytes, "fp32", 2 * fp32_bytes) == pytest.approx(fits, rel=1e-3)  # weights + bias ~ the share


def test_a_busy_round_sets_the_tasks_against_the_models_cpu_time() -> None:
    """When the process had the CPU for too little of the timed round (other load), the whole model's own time is
    its CPU time: the wall time's wait for the CPU becomes no per-inference term that every option would carry."""
    g = conv_chain()
    tasks = {nd.id: TaskTiming(0.1, 0.09, 0.11, 10) for nd in g.nodes}

    def run(noise: dict) -> object:
        prof = Profile(target=HOST, runtime="onnxruntime test", device="cpu", threads=1, runs=10, warmup=1,
                       latency_ms=2.0, latency_p90_ms=2.2, peak_memory_bytes=0, input_shapes={}, tasks=tasks,
                       noise=noise)
        return sweep(g, HOST, prof)

    quiet = run({"cpu_share": 0.97, "cpu_latency_ms": 1.9})
    busy = run({"cpu_share": 0.5, "cpu_latency_ms": 1.0})
    assert quiet.bulk["base"]["latency_ms"] == pytest.approx(2.0, rel=1e-9)  # wall time: the quiet round's
    assert busy.bulk["base"]["latency_ms"] == pytest.approx(1.0, rel=1e-9)
    assert busy.bulk["constants"]["per_inference_ms"] < quiet.bulk["constants"]["per_inference_ms"] - 0.8
    assert "CPU time" in busy.bulk["label"]["text"] and "CPU time" not in quiet.bulk["label"]["text"]


def test_an_outer_tensor_reaches_a_loop_body_once_per_loop_run_where_bodies_run_on_the_cpu() -> None:
    """Core ML runs a loop and its body on the CPU: a tensor from outside crosses to the body once per run of the
    loop, whatever the file's format (an ONNX Loop on coreml/* too); elsewhere once per execution of the body task."""
    import numpy as np

    from simulator.sweep_edges import activation_edges

    nodes = [Node("relu", "relu", "Relu", inputs=["x"], outputs=["r"]),
             Node("loop", "loop", "Loop", inputs=["n", "", "s0"], outputs=["s"]),
             Node("add", "add", "Add", inputs=["s_in", "r"], outputs=["s_out"], parent="loop", branch="body")]
    g = graph(nodes, [act("x", [1, 64]), act("r", [1, 64]), act("s0", [1, 64]), act("s_in", [1, 64]),
                      act("s_out", [1, 64]), act("s", [1, 64])], ["x", "s0"], ["s"])
    execs = np.array([1.0, 1.0, 200.0])
    src, dst, el = activation_edges(g, execs=execs, bodies_on_cpu=True)
    assert (src.tolist(), dst.tolist(), el.tolist()) == ([0], [1], [64.0])
    src, dst, el = activation_edges(g, execs=execs)
    assert (src.tolist(), dst.tolist(), el.tolist()) == ([0], [2], [64.0 * 200])
