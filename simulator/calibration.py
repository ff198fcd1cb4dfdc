"""Calibrate the host-cpu profile: time kernels with ONNX Runtime (1 intra-op thread) and fit.

Each case is a chain of R identical ops (so the per-inference fixed cost and the layout changes at
the ends are amortised), compiled by ORT at its default level like `ort-cpu/host`. fp32 cases fix
the fixed costs and bandwidths directly; every efficiency factor is then fitted so that the sweep's
own prediction for the case equals the measured time: the fit goes through the same code as every
prediction. Quantized and fp16 variants are written by compiler/optimize/onnx_export.py, so
`int8-dynamic` on a Conv + bias + activation chain is fitted against ORT running the real
DynamicQuantizeLinear + ConvInteger + Cast/Mul/Add model; paths measured at 3+ shapes fit an
efficiency and a fixed setup per task (`<kind>.<path>` in kind_overhead_s) jointly. Runs are timed in
the calling thread's CPU time (see `_clock`).
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from compiler.graph import Graph
from simulator.profiles import HardwareProfile, load_profile

CACHE_VERSION = 25
R = 8  # ops per chain

# Timer of one session.run: CPU time of the calling thread. With 1 intra-op thread ORT computes on the
# caller's thread, so this is the run's latency on a core of its own; wall-clock time on this shared
# 2-core machine doubled under other engineers' load (resnet-32-64: wall median 7.7 ms, CPU 3.4 ms).
_clock = time.thread_time

# Figure taken from a model's timed runs: a low percentile of all of them, pooled over rounds and sessions.
# On this shared VM the other tenants slow runs by 10-25% in bursts of about a second (seen on 2026-11-30:
# resnet-32-64 ran 2.9 ms and 3.7 ms in consecutive seconds, CPU time, load 0.2). A round's median lands
# in whichever state the round hit; the 5th percentile of the pooled runs is the uncontended time (within
# about 2% between repeats a few seconds apart; slower drifts of the whole machine it cannot remove), and
# calibration and every timing compared against it use the same figure.
FAST_PERCENTILE = 5.0


def fast_ms(times_s: list[float]) -> float:
    """`FAST_PERCENTILE` of run times (seconds) in ms."""
    return float(np.percentile(times_s, FAST_PERCENTILE)) * 1e3


@dataclass(frozen=True)
class Case:
    name: str
    kind: str  # the kind whose efficiency this case fits
    build: Callable[[Path], Path]
    variants: tuple[tuple[str, str], ...]  # (preset, efficiency tag) pairs fitted on this model


def _save(nodes: list[Any], inputs: list[Any], outputs: list[Any], inits: list[Any], path: Path) -> Path:
    import onnx
    from onnx import helper

    g = helper.make_graph(nodes, path.stem, inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 9
    onnx.save(m, os.fspath(path))
    return path


def _chain(op: str, shape: list[int], path: Path, r: int = R, attrs: dict[str, Any] | None = None,
           weight: Callable[[int], Any] | None = None, binary_self: bool = False) -> Path:
    from onnx import TensorProto, helper, numpy_helper

    nodes, inits = [], []
    for i in range(r):
        ins = [f"v{i}"]
        if weight is not None:
            w = weight(i)
            inits.append(numpy_helper.from_array(w, f"w{i}"))
            ins.append(f"w{i}")
        elif binary_self:
            # x_{i+1} = x_i (op) x_0: a fixed second operand keeps values bounded for the quantizer.
            ins.append("v0")
        nodes.append(helper.make_node(op, ins, [f"v{i + 1}"], name=f"{op}_{i}", **(attrs or {})))
    return _save(nodes, [helper.make_tensor_value_info("v0", TensorProto.FLOAT, shape)],
                 [helper.make_tensor_value_info(f"v{r}", TensorProto.FLOAT, shape)], inits, path)


def _rng_w(shape: list[int]) -> Callable[[int], Any]:
    rng = np.random.default_rng(0)
    return lambda i: (rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32)


def _layernorm_chain(shape: list[int], path: Path) -> Path:
    from onnx import TensorProto, helper, numpy_helper

    c = shape[-1]
    inits = [numpy_helper.from_array(np.ones(c, np.float32), "g"), numpy_helper.from_array(np.zeros(c, np.float32), "b")]
    nodes = [helper.make_node("LayerNormalization", [f"v{i}", "g", "b"], [f"v{i + 1}"], axis=-1, name=f"LN_{i}")
             for i in range(R)]
    return _save(nodes, [helper.make_tensor_value_info("v0", TensorProto.FLOAT, shape)],
                 [helper.make_tensor_value_info(f"v{R}", TensorProto.FLOAT, shape)], inits, path)


def _mixed(c: int, size: int, path: Path, blocks: int = 12) -> Path:
    """Conv -> Sigmoid -> Mul -> Transpose -> Add blocks: ORT turns them into NCHWc convs with fused
    activations, reorders and transposes, the data-movement tasks real CNN and transformer graphs have."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    nodes, inits, x = [], [], "v0"
    for i in range(blocks):
        inits += [numpy_helper.from_array((rng.standard_normal((c, c, 1, 1)) / np.sqrt(c)).astype(np.float32), f"w{i}"),
                  numpy_helper.from_array(rng.standard_normal((1, c, 1, 1)).astype(np.float32), f"b{i}")]
        nodes += [helper.make_node("Conv", [x, f"w{i}"], [f"c{i}"], name=f"conv{i}"),
                  helper.make_node("Sigmoid", [f"c{i}"], [f"s{i}"], name=f"sig{i}"),
                  helper.make_node("Mul", [f"s{i}", f"b{i}"], [f"m{i}"], name=f"mul{i}"),
                  helper.make_node("Transpose", [f"m{i}"], [f"t{i}"], perm=[0, 1, 3, 2], name=f"tr{i}"),
                  helper.make_node("Add", [f"t{i}", x], [f"a{i}"], name=f"add{i}")]
        x = f"a{i}"
    return _save(nodes, [helper.make_tensor_value_info("v0", TensorProto.FLOAT, [1, c, size, size])],
                 [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, c, size, size])], inits, path)


def _skip_layernorm_chain(shape: list[int], path: Path) -> Path:
    """x_{i+1} = LayerNorm(x_i + x_0): ORT fuses each Add + LayerNormalization into SkipLayerNormalization,
    as it does for every post-norm transformer's residual."""
    from onnx import TensorProto, helper, numpy_helper

    c = shape[-1]
    inits = [numpy_helper.from_array(np.ones(c, np.float32), "g"), numpy_helper.from_array(np.zeros(c, np.float32), "b")]
    nodes = []
    for i in range(R):
        nodes += [helper.make_node("Add", [f"v{i}", "v0"], [f"a{i}"], name=f"add_{i}"),
                  helper.make_node("LayerNormalization", [f"a{i}", "g", "b"], [f"v{i + 1}"], axis=-1, name=f"LN_{i}")]
    return _save(nodes, [helper.make_tensor_value_info("v0", TensorProto.FLOAT, shape)],
                 [helper.make_tensor_value_info(f"v{R}", TensorProto.FLOAT, shape)], inits, path)


def _conv(c: int, hw: int, k: int, group: int = 1) -> Callable[[Path], Path]:
    return lambda p: _chain("Conv", [1, c, hw, hw], p, attrs={"pads": [k // 2] * 4, "group": group},
                            weight=_rng_w([c, c // group, k, k]))


def _conv_act(c: int, hw: int, k: int, group: int = 1, shared_bias: bool = False) -> Callable[[Path], Path]:
    """Conv + bias + activation blocks as CNNs have them (Relu and Clip 0..6 alternating): what the
    quantizers and the fp16 converter rewrite, so the fitted paths include the kernels they add (Casts,
    DynamicQuantizeLinear, scale Mul / bias Add) and the fusions they lose. `shared_bias`: every Conv
    reads one bias tensor (as deduplicated BatchNorm-folded biases are), which fp16 keeps behind a run-time
    Cast, so ORT leaves the Convs in NCHW (simulator.backends.fp16_shared_casts)."""
    def build(path: Path) -> Path:
        from onnx import TensorProto, helper, numpy_helper

        rng = np.random.default_rng(0)
        w = _rng_w([c, c // group, k, k])
        inits = [numpy_helper.from_array(np.array(0.0, np.float32), "lo"),
                 numpy_helper.from_array(np.array(6.0, np.float32), "hi")]
        nodes = []
        for i in range(R):
            inits.append(numpy_helper.from_array(w(i), f"w{i}"))
            if not shared_bias or i == 0:
                inits.append(numpy_helper.from_array((0.1 * rng.standard_normal(c)).astype(np.float32), f"b{i}"))
            b = "b0" if shared_bias else f"b{i}"
            nodes.append(helper.make_node("Conv", [f"v{i}", f"w{i}", b], [f"c{i}"], name=f"conv{i}",
                                          pads=[k // 2] * 4, group=group))
            nodes.append(helper.make_node("Relu", [f"c{i}"], [f"v{i + 1}"], name=f"act{i}") if i % 2 == 0 else
                         helper.make_node("Clip", [f"c{i}", "lo", "hi"], [f"v{i + 1}"], name=f"act{i}"))
        return _save(nodes, [helper.make_tensor_value_info("v0", TensorProto.FLOAT, [1, c, hw, hw])],
                     [helper.make_tensor_value_info(f"v{R}", TensorProto.FLOAT, [1, c, hw, hw])], inits, path)
    return build


def _matmul_w(m: int, k: int) -> Callable[[Path], Path]:
    return lambda p: _chain("MatMul", [m, k], p, weight=_rng_w([k, k]))


Q = (("int8-static", "int8"), ("int8-dynamic", "int8dyn"))
QF = (*Q, ("fp16", "cast16"))  # paths fitted jointly (efficiency + fixed setup per task) over several shapes
CASES: tuple[Case, ...] = (
    Case("conv-64x28-3x3", "conv", _conv(64, 28, 3), (("fp32", "fp32"),)),
    Case("conv-256x14-1x1", "conv", _conv(256, 14, 1), (("fp32", "fp32"),)),
    Case("conv-32x56-1x1", "conv", _conv(32, 56, 1), (("fp32", "fp32"),)),
    # Few input channels (< one 16-wide NCHWc block): ORT's NCHWc conv reads plain NCHW input, a slower kernel.
    Case("convsmall-8x48-1x1", "convsmall", _conv(8, 48, 1), (("fp32", "fp32"),)),
    Case("convsmall-8x48-3x3", "convsmall", _conv(8, 48, 3), (("fp32", "fp32"),)),
    Case("dwconv-64x56", "dwconv", _conv(64, 56, 3, group=64), (("fp32", "fp32"),)),
    Case("dwconv-256x14", "dwconv", _conv(256, 14, 3, group=256), (("fp32", "fp32"),)),
    # Quantized and fp16 convs: Conv + bias + activation blocks from large to small feature maps.
    *(Case(f"convact-{c}x{s}-{k}x{k}", "conv", _conv_act(c, s, k), QF)
      for c, s, k in ((16, 32, 3), (64, 28, 3), (128, 8, 3), (32, 56, 1), (256, 14, 1), (96, 12, 1))),
    # fp16 Convs sharing one bias stay NCHW (im2col + SGEMM): their own path, `cast16nchw`.
    *(Case(f"convact-shared-{c}x{s}-{k}x{k}", "conv", _conv_act(c, s, k, shared_bias=True), (("fp16", "cast16nchw"),))
      for c, s, k in ((16, 32, 3), (64, 28, 3), (128, 8, 3), (256, 14, 1))),
    *(Case(f"convsmallact-8x{s}-{k}x{k}", "convsmall", _conv_act(8, s, k), QF) for s, k in ((48, 1), (48, 3), (24, 3))),
    *(Case(f"dwconvact-{c}x{s}", "dwconv", _conv_act(c, s, 3, group=c), QF)
      for c, s in ((64, 56), (256, 14), (32, 24), (144, 12), (16, 48))),
    # Batch-1 MatMulNBits time is the per-run unpacking of its weights: it fits the decode rate.
    # Its fp32 / int8 variants are bound by weight streaming, so they would only fit noise into efficiencies.
    Case("gemm-1x768", "gemm", _matmul_w(1, 768), (("int4-weights", "decode.int4w"),)),
    # With several rows MatMulNBits dequantizes B to fp32 and runs SGEMM: the dequantization costs about the
    # same per weight whatever M is (measured M = 4..128 at K = N = 1024: +0.13..0.21 ns per weight over
    # fp32), so it is fitted where it is a large share of the time (K >= 768), the compute taking the fp32
    # GEMM efficiency these cases also fit.
    Case("gemm-32x512", "gemm", _matmul_w(32, 512), (("fp32", "fp32"), *Q)),
    Case("gemm-128x256", "gemm", _matmul_w(128, 256), (("fp32", "fp32"), *Q)),
    Case("gemm-16x768", "gemm", _matmul_w(16, 768), (("fp32", "fp32"), ("int4-weights", "decode.int4wrows"))),
    Case("gemm-64x896", "gemm", _matmul_w(64, 896), (("fp32", "fp32"), ("int4-weights", "decode.int4wrows"))),
    # Small GEMMs (transformer projections with few tokens) pin the fixed cost of the int8 paths.
    Case("gemm-16x128", "gemm", _matmul_w(16, 128), Q),
    Case("matmul-4x32x32", "matmul", lambda p: _chain("MatMul", [4, 32, 32], p, binary_self=True),
         (("int8-static", "int8"),)),
    Case("matmul-8x64x64", "matmul", lambda p: _chain("MatMul", [8, 64, 64], p, binary_self=True),
         (("fp32", "fp32"), ("int8-static", "int8"))),
    Case("matmul-4x128x128", "matmul", lambda p: _chain("MatMul", [4, 128, 128], p, binary_self=True),
         (("fp32", "fp32"), ("int8-static", "int8"))),
    Case("maxpool-64x56", "pool", lambda p: _chain("MaxPool", [1, 64, 56, 56], p,
                                                   attrs={"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
         (("fp32", "fp32"), ("int8-static", "int8"))),
    Case("layernorm-128x768", "norm", lambda p: _layernorm_chain([128, 768], p), (("fp32", "fp32"),)),
    Case("skipnorm-32x128", "skipnorm", lambda p: _skip_layernorm_chain([1, 32, 128], p), (("fp32", "fp32"),)),
    Case("skipnorm-64x256", "skipnorm", lambda p: _skip_layernorm_chain([1, 64, 256], p), (("fp32", "fp32"),)),
    Case("softmax-12x128x128", "softmax", lambda p: _chain("Softmax", [12, 128, 128], p, attrs={"axis": -1}),
         (("fp32", "fp32"), ("int8-static", "int8"))),
    Case("softmax-2x48x48", "softmax", lambda p: _chain("Softmax", [2, 48, 48], p, attrs={"axis": -1}),
         (("int8-static", "int8"),)),
    # Small shapes: what they cost beyond the roofline is the kind's fixed setup per task.
    Case("small-conv-16x24-1x1", "conv", _conv(16, 24, 1), (("fp32", "setup"),)),
    Case("small-conv-32x12-3x3", "conv", _conv(32, 12, 3), (("fp32", "setup"),)),
    Case("small-dwconv-32x24", "dwconv", _conv(32, 24, 3, group=32), (("fp32", "setup"),)),
    Case("small-gemm-1x128", "gemm", _matmul_w(1, 128), (("fp32", "setup"),)),
    Case("small-layernorm-32x128", "norm", lambda p: _layernorm_chain([32, 128], p), (("fp32", "setup"),)),
    Case("small-softmax-4x32x32", "softmax", lambda p: _chain("Softmax", [4, 32, 32], p, attrs={"axis": -1}),
         (("fp32", "setup"),)),
    Case("sigmoid-1x262144", "elementwise", lambda p: _chain("Sigmoid", [1, 262144], p), (("fp32", "fp32"),)),
    Case("add-1x262144", "elementwise", lambda p: _chain("Add", [1, 262144], p, binary_self=True),
         (("int8-static", "int8"),)),
)


def _session(path: Path, opt: str = "all") -> Any:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.log_severity_level = 3
    if opt == "disable":
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(os.fspath(path), so, providers=["CPUExecutionProvider"])


def _feeds(sess: Any) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    feeds = {}
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        if "int" in i.type:  # token ids and the like: small valid indices
            feeds[i.name] = np.ones(shape, np.int64 if "int64" in i.type else np.int32)
        else:
            feeds[i.name] = rng.standard_normal(shape).astype(np.float16 if "float16" in i.type else np.float32)
    return feeds


def wall_ms(path: Path, min_runs: int = 6, budget_s: float = 0.08, opt: str = "all", rounds: int = 3,
            feeds: dict[str, np.ndarray] | None = None) -> float:
    """Time of session.run (ms, `_clock`, `fast_ms` of all runs), 1 intra-op thread, after warm-up, over
    `rounds` rounds, so a burst of load from other processes on a shared machine does not become the figure.
    `feeds`: the inputs to run with (default: calibration's own, symbolic dims at 1)."""
    sess = _session(path, opt)
    feeds = feeds if feeds is not None else _feeds(sess)
    for _ in range(3):
        sess.run(None, feeds)
    times: list[float] = []
    for _ in range(rounds):
        t_end = time.perf_counter() + budget_s
        n = len(times)
        while len(times) - n < min_runs or (time.perf_counter() < t_end and len(times) - n < 400):
            t0 = _clock()
            sess.run(None, feeds)
            times.append(_clock() - t0)
    return fast_ms(times)


def time_interleaved(models: dict[str, tuple[Path, str, int]], rounds: int = 6, budget_s: float = 0.06,
                     progress: Callable[[str], None] = lambda s: None) -> dict[str, float]:
    """{key: ms (`_clock`, `fast_ms` of all its runs)} of `models` ({key: (path, optimization level, min
    runs)}), timed round-robin: each round times every model once, so every case gets runs spread over the
    whole timing and a burst of load from other work on a shared machine hits all cases alike. Sessions
    are created anew for the second half of the rounds: one session of a model can be consistently slower
    than another of the same model (buffer placement), and the figure should not depend on that draw."""
    pooled: dict[str, list[float]] = {k: [] for k in models}
    sessions: dict[str, Any] = {}
    feeds: dict[str, dict[str, np.ndarray]] = {}
    for r in range(rounds):
        fresh = r in (0, rounds // 2)
        if fresh:
            sessions = {k: _session(p, opt) for k, (p, opt, _) in models.items()}
            feeds = {k: _feeds(sess) for k, sess in sessions.items()}
        for k, sess in sessions.items():
            min_runs = models[k][2]
            for _ in range(3 if fresh else 1):  # warm-up (then re-warm caches another model evicted)
                sess.run(None, feeds[k])
            times: list[float] = []
            t_end = time.perf_counter() + budget_s
            while len(times) < min_runs or (time.perf_counter() < t_end and len(times) < 400):
                t0 = _clock()
                sess.run(None, feeds[k])
                times.append(_clock() - t0)
            pooled[k] += times
        progress(f"timing round {r + 1}/{rounds} done")
    return {k: fast_ms(v) for k, v in pooled.items()}


def compile_for_host(path: Path, out: Path) -> Graph:
    """ORT-optimized graph as `ort-cpu/host` runs it, with shapes filled from the source."""
    import onnxruntime as ort

    from compiler.frontends import onnx as onnx_frontend
    from simulator.shapes import fill_shapes

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    so.optimized_model_filepath = os.fspath(out)
    ort.InferenceSession(os.fspath(path), so, providers=["CPUExecutionProvider"])
    return fill_shapes(onnx_frontend.load(out), onnx_frontend.load(path))


def _predict_ms(g: Graph, hw: HardwareProfile, preset: str) -> float:
    """Predicted latency of `preset` on g, without the per-inference fixed cost."""
    from simulator.sweep import sweep
    from simulator.totals import totals

    r = sweep(g, "ort-cpu/host", hardware=hw)
    return totals(r.bulk, r.per_op, preset, {})["latency_ms"] - hw.units[0].run_overhead_s * 1e3


def _fit_eff(g: Graph, hw: HardwareProfile, preset: str, key: str, measured_ms: float) -> float:
    """Efficiency for `key` (e.g. conv.int8) that makes the prediction equal the measurement."""
    # Up to 3x: efficiencies are relative to the nominal peak at the base clock; turbo exceeds it.
    lo, hi = np.log(1e-4), np.log(3.0)
    for _ in range(14):
        mid = (lo + hi) / 2
        p = _predict_ms(g, hw.with_overrides({"units": {"cpu": {"efficiency": {key: float(np.exp(mid))}}}}), preset)
        if p > measured_ms:
            lo = mid  # too slow: needs a higher efficiency
        else:
            hi = mid
    return float(np.exp((lo + hi) / 2))


def _fit_eff_setup(cases: list[tuple[Graph, str, float]], hw: HardwareProfile,
                   key: str) -> tuple[float, dict[str, float]]:
    """(efficiency, {key: fixed seconds per task, key.pixel: per output pixel, key.im2col: per im2col
    element, key.weights: per weight}) for `key` (e.g. conv.int8dyn) that fit several cases at once in
    relative least squares: small shapes pin the fixed cost of the path's extra kernels, large ones its
    rate. The other costs are fitted only where the path pays them (depthwise int8: a loop over an
    indirection buffer per output pixel; ConvInteger and plain NCHW Conv: an expanded input for kernels
    above 1x1; ConvInteger: its weights packed on every run); else 0.
    Non-negative least squares by trying every subset of the columns."""
    import itertools

    meas = np.array([ms for _, _, ms in cases])
    subs = [key, key + ".pixel", key + ".im2col", key + ".weights"]

    def slope(sub: str) -> np.ndarray:
        # Setup units per case (tasks, channels or pixels, as the path pays it): the prediction's slope in s.
        h0, h1 = (hw.with_overrides({"units": {"cpu": {"kind_overhead_s": {sub: v}}}}) for v in (0.0, 1e-6))
        return np.array([(_predict_ms(g, h1, p) - _predict_ms(g, h0, p)) / 1e-3 for g, p, _ in cases])

    n = np.stack([slope(sub) for sub in subs], axis=1)
    cols = [j for j in range(len(subs)) if n[:, j].any()]
    uses = [list(c) for k in range(len(cols), 0, -1) for c in itertools.combinations(cols, k)]

    def at(log_eff: float) -> tuple[float, np.ndarray]:
        h = hw.with_overrides({"units": {"cpu": {"efficiency": {key: float(np.exp(log_eff))},
                                                 "kind_overhead_s": {sub: 0.0 for sub in subs}}}})
        pred = np.array([_predict_ms(g, h, preset) for g, preset, _ in cases])
        # Relative residual with setups s: (pred + n s) / meas - 1 = a s - b; least squares, s >= 0.
        a, b = n * 1e3 / meas[:, None], 1 - pred / meas
        best = (float((b ** 2).sum()), np.zeros(len(subs)))
        for use in uses:
            s_use = np.linalg.lstsq(a[:, use], b, rcond=None)[0]
            if (s_use < 0).any():
                continue
            s = np.zeros(len(subs))
            s[use] = s_use
            err = float(((a @ s - b) ** 2).sum())
            if err < best[0]:
                best = (err, s)
        return best

    grid = np.linspace(np.log(1e-4), np.log(3.0), 25)
    i = int(np.argmin([at(x)[0] for x in grid]))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    for _ in range(12):  # golden-section refinement around the best grid point
        m1, m2 = lo + 0.382 * (hi - lo), lo + 0.618 * (hi - lo)
        if at(m1)[0] < at(m2)[0]:
            hi = m2
        else:
            lo = m1
    x = (lo + hi) / 2
    s = at(x)[1]
    return float(np.exp(x)), {sub: float(v) for sub, v in zip(subs, s)}


def _fit_setup(g: Graph, hw: HardwareProfile, kind: str, measured_ms: float) -> float:
    """Fixed seconds per task of `kind` that make the fp32 prediction equal the measurement (>= 0)."""
    lo, hi = 0.0, 2e-4
    for _ in range(20):
        mid = (lo + hi) / 2
        p = _predict_ms(g, hw.with_overrides({"units": {"cpu": {"kind_overhead_s": {kind: mid}}}}), "fp32")
        if p < measured_ms:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


@dataclass
class Bench:
    """Calibration's models, built and compiled, waiting to be timed (`timings`: {key: (file, optimization
    level, min runs)}, as time_interleaved takes them), and what the fit needs to read the timings back."""

    tmp: Path
    t_start: float
    timings: dict[str, tuple[Path, str, int]]
    graphs: dict[str, Graph]
    variants: list[tuple[Case, str, str, str]]  # (case, preset, tag, timing key)
    mixed: list[str]
    n_mid: int
    k_stream: int
    llc: float
    llc_all: float


def build_bench(tmp: Path, progress: Callable[[str], None] = lambda s: None) -> Bench:
    """Build and compile every calibration model into `tmp` (which must outlive the fit)."""
    from compiler.optimize.onnx_export import export_onnx

    logging.getLogger().setLevel(logging.ERROR)  # the quantizer's pre-processing advice is noise here
    t_start = time.perf_counter()
    base = load_profile("host-cpu")
    # 1. Fixed cost per inference, per-kernel dispatch, bandwidths (elementwise chains, fp32).
    one = _chain("Relu", [1, 8], tmp / "one.onnx", r=1)
    many = _chain("Relu", [1, 8], tmp / "many.onnx", r=64)
    n_mid = 131072  # 3 x 512 KiB per Add: fits the 4 MiB L2
    mid = _chain("Add", [1, n_mid], tmp / "mid.onnx", r=16, binary_self=True)
    # Weights that do not stay in L2 between inferences: a batch-1 MatMul chain streams 8 k x k weights
    # per run from the last-level cache (k = 768: 19 MB). The chain must fit in half this core's share
    # of that cache: 19 MB on a 32 MB L3 shared by 2 vCPUs measured anywhere from 28 to 41 GB/s.
    llc, llc_all = llc_bytes()
    if not llc:
        llc, llc_all = int(base.units[0].llc_share_bytes), int(base.units[0].llc_bytes)
    k = max(128, min(768, int(np.sqrt(llc / 2 / R / 4)) // 64 * 64)) if llc else 768
    stream = _matmul_w(1, k)(tmp / "stream.onnx")
    timings: dict[str, tuple[Path, str, int]] = {"one": (one, "disable", 100), "many": (many, "disable", 100),
                                                 "mid": (mid, "disable", 20), "stream": (stream, "all", 20)}
    # 2. Efficiency per kind and path: every case and variant.
    graphs: dict[str, Graph] = {}
    variants: list[tuple[Case, str, str, str]] = []
    for case in CASES:
        src = case.build(tmp / f"{case.name}.onnx")
        graphs[case.name] = compile_for_host(src, tmp / f"{case.name}.opt.onnx")
        for preset, tag in case.variants:
            model = src
            if preset != "fp32":
                model = export_onnx(src, tmp / f"{case.name}.{preset}.onnx", preset).path
            timings[f"{case.name}/{preset}"] = (model, "all", 6)
            variants.append((case, preset, tag, f"{case.name}/{preset}"))
    mixed: list[str] = []
    for c, size in ((32, 16), (64, 28)):
        name = f"mixed-{c}x{size}"
        src = _mixed(c, size, tmp / f"{name}.onnx")
        graphs[name] = compile_for_host(src, tmp / f"{name}.opt.onnx")
        timings[name] = (src, "all", 6)
        mixed.append(name)
    progress(f"{len(timings)} models built in {time.perf_counter() - t_start:.1f} s")
    return Bench(tmp, t_start, timings, graphs, variants, mixed, n_mid, k, float(llc), float(llc_all))


def calibrate(progress: Callable[[str], None] = lambda s: None) -> dict[str, Any]:
    """Measure and fit; returns the JSON-able cache (overrides for HardwareProfile.with_overrides)."""
    with tempfile.TemporaryDirectory() as td:
        bench = build_bench(Path(td), progress)
        progress("timing")
        return fit_bench(bench, time_interleaved(bench.timings, progress=progress), progress)


def fit_bench(bench: Bench, wall: dict[str, float], progress: Callable[[str], None] = lambda s: None
              ) -> dict[str, Any]:
    """Fit the host profile to the timings of `bench` (ms per key; other keys are ignored); returns the
    JSON-able cache (overrides for HardwareProfile.with_overrides)."""
    import onnxruntime as ort

    base = load_profile("host-cpu")
    graphs, variants, mixed, tmp = bench.graphs, bench.variants, bench.mixed, bench.tmp
    n_mid, k_stream, llc, llc_all = bench.n_mid, bench.k_stream, bench.llc, bench.llc_all
    cases_out: list[dict[str, Any]] = []
    t1, t64 = wall["one"], wall["many"]
    dispatch_s = max((t64 - t1) / 63 * 1e-3, 1e-8)
    run_s = max(t1 * 1e-3 - dispatch_s, 0.0)
    t_mid = (wall["mid"] * 1e-3 - run_s) / 16 - dispatch_s
    cache_bw = 3 * 4 * n_mid / max(t_mid, 1e-9)
    t_stream = (wall["stream"] * 1e-3 - run_s) / R - dispatch_s
    dram_bw = k_stream * k_stream * 4 / max(t_stream, 1e-9)
    progress(f"fixed cost {run_s * 1e6:.1f} us, dispatch {dispatch_s * 1e6:.2f} us, "
             f"cache {cache_bw / 1e9:.1f} GB/s, weight streaming {dram_bw / 1e9:.1f} GB/s")
    # The profiler adds its own cost to each task's recorded time; measured baselines subtract it.
    prof_over = _profiler_overhead(bench.timings["many"][0], dispatch_s, tmp)
    over: dict[str, Any] = {"dram_bandwidth_bytes_per_s": dram_bw, "units": {"cpu": {
        "run_overhead_s": run_s, "dispatch_overhead_s": dispatch_s, "profiler_overhead_s": prof_over,
        "cache_bandwidth_bytes_per_s": cache_bw, "llc_share_bytes": float(llc), "llc_bytes": float(llc_all),
        "bandwidth_efficiency": 1.0,
        "efficiency": {}}}}
    hw = base.with_overrides(over)
    fits: dict[str, list[float]] = {}
    n_cases: dict[str, int] = {}
    for case, preset, tag, _ in variants:
        k = tag if "." in tag else f"{case.kind}.{tag}"
        n_cases[k] = n_cases.get(k, 0) + 1
    for case, preset, tag, tkey in variants:
        g = graphs[case.name]
        meas = wall[tkey] - run_s * 1e3
        key = tag if "." in tag else f"{case.kind}.{tag}"
        # Quantized and fp16 paths with 3+ shapes fit efficiency and setup jointly; setup and decode
        # rates are fitted below, once the efficiencies they add to are known.
        joint = preset != "fp32" and not key.startswith("decode.") and n_cases[key] >= 3
        later = tag == "setup" or key.startswith("decode.") or joint
        eff = _fit_eff(g, hw, preset, key, meas) if not later else float("nan")
        if not later:
            fits.setdefault(key, []).append(eff)
        cases_out.append({"case": case.name, "preset": preset, "key": key, "measured_ms": meas,
                          "efficiency": eff, "joint": joint})
    # The median of per-case fits (robust to one odd shape).
    effs = {k: float(np.median(v)) for k, v in fits.items()}
    effs["default"] = effs.get("elementwise.fp32", 0.1)
    # MatMulNBits (accuracy level 0) computes in fp32 with the SGEMM kernels; its extra cost is the decode.
    # An fp16 MatMul runs the same SGEMM on weights cast back at load; its activation Casts are costed
    # on their own. (Fitted apart on one case it only added that case's noise: 0.566-0.658 between
    # calibrations against 0.58-0.65 for fp32.)
    if "gemm.fp32" in effs:
        effs["gemm.int4w"] = effs["gemm.cast16"] = effs["gemm.fp32"]
    over["units"]["cpu"]["efficiency"] = effs
    hw = base.with_overrides(over)
    joint_setups: dict[str, float] = {}
    for key in sorted({c["key"] for c in cases_out if c["joint"]}):
        cs = [c for c in cases_out if c["key"] == key]
        eff, setups = _fit_eff_setup([(graphs[c["case"]], c["preset"], c["measured_ms"]) for c in cs], hw, key)
        effs[key] = eff
        # The task setup always (0 is a fit too); the per-pixel and im2col costs where the path has them.
        joint_setups.update({k: v for k, v in setups.items() if k == key or v})
        for c in cs:
            c["efficiency"], c["setup_s"] = eff, setups[key]
            c.update({f"{k.rsplit('.', 1)[1]}_setup_s": v for k, v in setups.items() if k != key and v})
    over["units"]["cpu"]["kind_overhead_s"] = dict(joint_setups)
    hw = base.with_overrides(over)
    decodes: dict[str, list[float]] = {}
    for c in cases_out:
        if c["key"].startswith("decode."):
            c["efficiency"] = e = _fit_eff(graphs[c["case"]], hw, c["preset"], c["key"], c["measured_ms"])
            decodes.setdefault(c["key"], []).append(e)
    effs.update({k: float(np.median(v)) for k, v in decodes.items()})
    hw = base.with_overrides(over)
    # Fixed setup per kind from the small cases, with the efficiencies above in place.
    setups: dict[str, list[float]] = {}
    for c in cases_out:
        if c["key"].endswith(".setup"):
            kind = c["key"].split(".")[0]
            s = _fit_setup(graphs[c["case"]], hw, kind, c["measured_ms"])
            c["setup_s"] = s
            setups.setdefault(kind, []).append(s)
    over["units"]["cpu"]["kind_overhead_s"] = {**joint_setups, **{k: float(np.median(v)) for k, v in setups.items()}}
    hw = base.with_overrides(over)
    # Data movement (transposes, NCHWc reorders) from a mixed graph, every other kind already fitted:
    # chains of transposes alone are cancelled by ORT's transpose optimizer.
    lay: list[float] = []
    for name in mixed:
        meas = wall[name] - run_s * 1e3
        e = _fit_eff(graphs[name], hw, "fp32", "layout.fp32", meas)
        lay.append(e)
        cases_out.append({"case": name, "preset": "fp32", "key": "layout.fp32", "measured_ms": meas,
                          "efficiency": e})
    effs["layout.fp32"] = float(np.median(lay))
    hw = base.with_overrides(over)
    # Residuals of the fitted profile on its own cases (in-sample; fidelity.py measures held-out).
    for c in cases_out:
        c["predicted_ms"] = _predict_ms(graphs[c["case"]], hw, c["preset"])
    return {
        "version": CACHE_VERSION, "profile": "host-cpu", "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": machine(), "onnxruntime": ort.__version__, "seconds": time.perf_counter() - bench.t_start,
        "profiler_overhead_s": prof_over, "overrides": over, "cases": cases_out,
    }


def _profiler_overhead(model: Path, dispatch_s: float, tmp: Path) -> float:
    """Median profiled kernel time of a 1x8 Relu minus its dispatch cost from wall-clock timing."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.enable_profiling = True
    so.profile_file_prefix = os.fspath(tmp / "prof")
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    sess = ort.InferenceSession(os.fspath(model), so, providers=["CPUExecutionProvider"])
    feeds = _feeds(sess)
    for _ in range(20):
        sess.run(None, feeds)
    trace = json.loads(Path(sess.end_profiling()).read_text())
    durs = [e["dur"] for e in trace if e.get("cat") == "Node" and str(e.get("name", "")).endswith("_kernel_time")]
    if not durs:
        return 0.0
    return max(0.0, statistics.median(durs) * 1e-6 - dispatch_s)


def llc_bytes(sysfs: Path = Path("/sys/devices/system/cpu/cpu0/cache")) -> tuple[int, int]:
    """(one core's share, the whole) of its last-level cache from Linux sysfs: the size of the highest-level
    data cache, over the number of CPUs sharing it for the share (this VM: a 32 MB L3 shared by 2 vCPUs).
    (0, 0) if unknown."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    best = (0, 0, 0)  # (level, share, whole)
    for idx in sysfs.glob("index*"):
        try:
            if (idx / "type").read_text().strip() == "Instruction":
                continue
            level = int((idx / "level").read_text())
            size = (idx / "size").read_text().strip()
            cpus = (idx / "shared_cpu_list").read_text().strip()
        except (OSError, ValueError):
            continue
        n = int(size[:-1]) * units[size[-1]] if size[-1:] in units and size[:-1].isdigit() else 0
        # "0-3,8-11": ranges and single CPUs.
        sharing = 0
        for part in filter(None, cpus.split(",")):
            first, _, last = part.partition("-")
            sharing += int(last or first) - int(first) + 1
        if n and level > best[0]:
            best = (level, n // max(1, sharing), n)
    return best[1], best[2]


def machine() -> str:
    """The CPU this machine calibrates on: a cache made on another is stale."""
    try:
        from compiler.backends.ort import cpu_name

        return cpu_name()
    except Exception:  # pragma: no cover - the compiler backend is optional here
        return platform.processor() or platform.machine()


def profile_from_cache(cache: dict[str, Any]) -> HardwareProfile:
    over = dict(cache["overrides"])
    if cache.get("fidelity"):
        over["error_pct_median"] = cache["fidelity"]["error_pct_median"]
        over["error_models"] = cache["fidelity"]["models"]
        over["error_target"] = cache["fidelity"].get("target", "ort-cpu/host")
    hw = load_profile("host-cpu").with_overrides(over)
    return hw


def load_or_calibrate(path: str | os.PathLike[str], progress: Callable[[str], None] = lambda s: None,
                      force: bool = False) -> HardwareProfile:
    """The calibrated host-cpu profile, from the JSON cache at `path` (calibrating and writing it first
    if it is missing, of another version, or made on another machine / ORT version)."""
    p = Path(path)
    if not force and (cache := _current_cache(p)) is not None:
        return profile_from_cache(cache)
    p.parent.mkdir(parents=True, exist_ok=True)
    # One calibration per machine at a time: workers (and the warm-up at start) that find no cache wait
    # for the first one's result instead of each timing kernels on the same cores.
    with open(p.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not force and (cache := _current_cache(p)) is not None:
            return profile_from_cache(cache)
        cache = calibrate(progress)
        save_cache(p, cache)
    return profile_from_cache(cache)


def is_cached(path: str | os.PathLike[str]) -> bool:
    """True when `load_or_calibrate(path)` would return at once (a current cache exists)."""
    return _current_cache(Path(path)) is not None


def save_cache(path: str | os.PathLike[str], cache: dict[str, Any]) -> None:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(".tmp")
    tmp.write_text(json.dumps(cache, indent=1))
    tmp.replace(p)  # atomic: a concurrent reader never sees half a file


def _current_cache(p: Path) -> dict[str, Any] | None:
    """The cache at p if it was made by this calibration version, ORT version and machine."""
    import onnxruntime as ort

    try:
        cache = json.loads(p.read_text())
        if (cache.get("version") == CACHE_VERSION and cache.get("onnxruntime") == ort.__version__
                and cache.get("machine") == machine()):
            return cache
    except (OSError, ValueError, KeyError):
        pass  # missing or unreadable: calibrate
    return None


def record_fidelity(path: str | os.PathLike[str], error_pct_median: float, models: int,
                    target: str = "ort-cpu/host", **extra: Any) -> None:
    """Store the held-out error (benchmarks/fidelity.py) in the cache so predictions on `target` cite it."""
    p = Path(path)
    cache = json.loads(p.read_text())
    cache["fidelity"] = {"error_pct_median": error_pct_median, "models": models, "target": target, **extra}
    save_cache(p, cache)
