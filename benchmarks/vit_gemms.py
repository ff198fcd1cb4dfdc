"""The ViTs' Gemms and attention MatMuls on `ort-cpu/host`, each alone in a single-op file at the model's own shapes
(a MatMul + Add, which ORT fuses to a Gemm as in the dynamo exports; a batched MatMul, scaled or not), through the
pipeline (corpus.check.analyse), predicted against thread CPU time. What issue 13's ViT under-prediction on a Zen 5
(session 61) was checked with: Swin-T's stage-1 (M = 3136 tokens, K = 96) and stage-4 (M = 49) Gemms read 0.60-0.85x
their profile inside the model, ViT-S's (M = 197) 0.97x.

Run under the measurement lock, with a calibration of this code's CACHE_VERSION (else one is timed first):
`flock /work/notes/measure.lock env PYTHONPATH=. .venv/bin/python benchmarks/vit_gemms.py --calibration C`.
Prints one line per file; asserts nothing. `--keep DIR` writes the files there (else a temporary directory), for
`benchmarks/weight_residency.py --only DIR/*.onnx --flush-mb 112`: each one back to back against right after
112 MB of other data was read (Swin-T's weights, streamed between two calls of one of its Gemms).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, os.fspath(Path(__file__).resolve().parents[1]))
from benchmarks.single_op import arguments, save_onnx  # noqa: E402

# (name, M, K, N): MatMul + Add on [M, K] x [K, N]
GEMMS: tuple[tuple[str, int, int, int], ...] = (
    ("swin1-qkv", 3136, 96, 288), ("swin1-proj", 3136, 96, 96), ("swin1-fc1", 3136, 96, 384),
    ("swin1-fc2", 3136, 384, 96), ("swin2-fc1", 784, 192, 768), ("swin3-fc1", 196, 384, 1536),
    ("swin4-qkv", 49, 768, 2304), ("swin4-fc1", 49, 768, 3072), ("swin4-fc2", 49, 3072, 768),
    ("vits-qkv", 197, 384, 1152), ("vits-fc1", 197, 384, 1536), ("vits-fc2", 197, 1536, 384),
    ("coat1-qkv", 3137, 64, 192), ("coat1-fc1", 3137, 64, 512), ("coat1-fc2", 3137, 512, 64),
    ("coat2-fc1", 785, 128, 1024), ("coat2-fc2", 785, 1024, 128), ("coat3-fc1", 197, 256, 1024),
    ("coat3-fc2", 197, 1024, 256),
    ("xvit-s-qkv", 401, 96, 288), ("xvit-s-fc1", 401, 96, 384), ("xvit-s-fc2", 401, 384, 96),
    ("xvit-l-qkv", 197, 192, 576), ("xvit-l-fc1", 197, 192, 768), ("xvit-l-fc2", 197, 768, 192),
)
# (name, batch, M, K, N, scaled): [batch, M, K] x [batch, K, N], times a scalar if scaled (ORT: FusedMatMul)
BMMS: tuple[tuple[str, int, int, int, int, bool], ...] = (
    ("swin1-qk", 192, 49, 32, 49, True), ("swin1-av", 192, 49, 49, 32, False),
    ("vits-qk", 6, 197, 64, 197, True), ("vits-av", 6, 197, 197, 64, False),
)


# K by N at 785 rows (CoaT's stage 2): its K = 1024 Gemms (N = 128, 256) read 0.88x their price alone and in the model
SWEEP: tuple[tuple[str, int, int, int], ...] = tuple((f"sweep-k{k}-n{n}", 785, k, n) for k in (256, 512, 1024, 2048)
                                                     for n in (64, 128, 256, 512))
# K by rows: A's rows K x 4 bytes apart. MLAS's AVX-512 SGEMM kernel reads 12 rows of A in step (broadcasts), so where
# K x 4 is a multiple of the L1's way size (4 KiB: K a multiple of 1024) those rows' lines fall in one L1 set; K = 1008
# / 1040 beside 1024, 1536 (a 2 KiB step off it) beside 2048 and 3072 tell such aliasing from a long K (session 63).
ALIAS: tuple[tuple[str, int, int, int], ...] = tuple(
    (f"alias-m{m}-k{k}-n{n}", m, k, n) for m, n, ks in (
        (785, 256, (512, 528, 1008, 1024, 1040, 1536, 2048, 3072)), (197, 384, (1008, 1024, 1536, 2048, 3072)),
        (49, 768, (1024, 1040, 1536, 3072, 3088))) for k in ks)
# Rows at K = N = 384 (weights 0.6 MB, kept in the L2), from the calibration's few-row gemm cases (16-128 rows) to the
# ViTs' token counts: what the SGEMM's rate per MAC does with M alone
ROWS: tuple[tuple[str, int, int, int], ...] = tuple((f"rows-m{m}", m, 384, 384)
                                                    for m in (16, 32, 64, 128, 197, 401, 785, 1568, 3136))
# (name, shape, axis): CoaT's factorized attention takes a Softmax of its keys over the tokens (axis 2, not the last)
SOFTMAXES: tuple[tuple[str, tuple[int, ...], int], ...] = (
    ("coat1-softmax", (1, 8, 3137, 8), 2), ("coat2-softmax", (1, 8, 785, 16), 2), ("coat3-softmax", (1, 8, 197, 32), 2),
    # ... as ORT runs it in the model, its heads moved out by the transpose optimizer (transposes.inner_axis_transposes)
    ("coat1-softmax-t", (1, 3137, 8, 8), 1), ("coat2-softmax-t", (1, 785, 8, 16), 1),
)
# (name, shape, perm): the two swaps ORT's Softmax runs inside its kernel for CoaT's (coat*-softmax-t), as Transposes
WALKS: tuple[tuple[str, tuple[int, ...], tuple[int, ...]], ...] = (
    ("coat1-walk-in", (1, 3137, 8, 8), (0, 3, 2, 1)), ("coat1-walk-out", (1, 8, 8, 3137), (0, 3, 2, 1)),
    ("coat2-walk-in", (1, 785, 8, 16), (0, 3, 2, 1)), ("coat2-walk-out", (1, 16, 8, 785), (0, 3, 2, 1)),
)


def transpose_file(path: Path, shape: tuple[int, ...], perm: tuple[int, ...]) -> Path:
    """y = Transpose(x, perm) on x of `shape`."""
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Transpose", ["x"], ["y"], perm=list(perm))]
    return save_onnx(path, "transpose", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [shape[p] for p in perm])], [])


def softmax_file(path: Path, shape: tuple[int, ...], axis: int) -> Path:
    """y = Softmax(x, axis) on x of `shape`."""
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Softmax", ["x"], ["y"], axis=axis)]
    return save_onnx(path, "softmax", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(shape))], [])


def gemm_file(path: Path, m: int, k: int, n: int) -> Path:
    """y = x @ w + b on x [m, k], random weights."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((rng.random((k, n)) * 0.01).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.random(n).astype(np.float32), "b")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["xw"]), helper.make_node("Add", ["xw", "b"], ["y"])]
    return save_onnx(path, "gemm", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])], [w, b])


def bmm_file(path: Path, batch: int, m: int, k: int, n: int, scaled: bool) -> Path:
    """y = a @ b (times 0.125 if scaled) on two inputs [batch, m, k] and [batch, k, n]."""
    from onnx import TensorProto, helper, numpy_helper

    consts = [numpy_helper.from_array(np.array(0.125, np.float32), "s")] if scaled else []
    nodes = [helper.make_node("MatMul", ["a", "b"], ["ab" if scaled else "y"])]
    if scaled:
        nodes.append(helper.make_node("Mul", ["ab", "s"], ["y"]))
    inputs = [helper.make_tensor_value_info("a", TensorProto.FLOAT, [batch, m, k]),
              helper.make_tensor_value_info("b", TensorProto.FLOAT, [batch, k, n])]
    return save_onnx(path, "bmm", nodes, inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, m, n])],
                     consts)


def main() -> None:
    from corpus.check import analyse

    args = arguments(__doc__, 30, keep=True)  # --only PREFIX...: the files whose names start so
    with tempfile.TemporaryDirectory(prefix="vit-gemms-") as tmp:
        td = args.keep or tmp
        Path(td).mkdir(parents=True, exist_ok=True)
        files = [(name, gemm_file(Path(td) / f"{name}.onnx", m, k, n), 2 * m * k * n)
                 for name, m, k, n in GEMMS + SWEEP + ALIAS + ROWS]
        files += [(name, bmm_file(Path(td) / f"{name}.onnx", b, m, k, n, s), 2 * b * m * k * n)
                  for name, b, m, k, n, s in BMMS]
        files += [(name, softmax_file(Path(td) / f"{name}.onnx", shape, axis), int(np.prod(shape)))
                  for name, shape, axis in SOFTMAXES]
        files += [(name, transpose_file(Path(td) / f"{name}.onnx", shape, perm), int(np.prod(shape)))
                  for name, shape, perm in WALKS]
        for name, path, flops in files:
            if args.only and not name.startswith(tuple(args.only)):
                continue
            r = analyse(path, {}, args.calibration, runs=args.runs, warmup=5, measure_cpu=True, check_exports=False)
            if r.get("status") != "analysed":
                print(f"{name:12s} {r.get('status')}: {r.get('error', '')}")
                continue
            err = 100 * (r["predicted_ms"] / r["cpu_ms"] - 1)
            print(f"{name:13s} {flops / 1e6:7.1f} MFLOP  cpu {r['cpu_ms']:7.3f} ms ({flops / r['cpu_ms'] / 1e6:5.1f} "
                  f"GFLOP/s)  predicted {r['predicted_ms']:7.3f} ms  {err:+6.1f}%", flush=True)


if __name__ == "__main__":
    main()
