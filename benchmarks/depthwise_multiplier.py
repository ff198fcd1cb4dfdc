"""Depthwise Convs with a channel multiplier on `ort-cpu/host` (simulator.conv_work.multiplied_depthwise): single-op
files of one Conv (one input channel per group, 1, 2 or 4 outputs each, channels ORT does not block, so every case
stays in NCHW), each through the pipeline (corpus.check.analyse: measured, then predicted by this checkout's cost
model), predicted against thread CPU time. FastViT's downsamplers (7x7, stride 2, 48 -> 96 channels at 64 px, then
96 -> 192 at 32 and 192 -> 384 at 16) beside multiplier-1 twins, and stride-1 pairs (3x3, 5x5; FastViT's 3x3 384 -> 768
at 8 px).

Run under the measurement lock, with a calibration of this code's CACHE_VERSION:
`flock /work/notes/measure.lock env PYTHONPATH=. .venv/bin/python benchmarks/depthwise_multiplier.py --calibration C`.
Prints one line per file; asserts nothing.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, os.fspath(Path(__file__).resolve().parents[1]))
from benchmarks.single_op import arguments, save_onnx  # noqa: E402

# (input channels, multiplier, input side, kernel, stride)
CASES = ((48, 2, 64, 7, 2), (46, 1, 64, 7, 2), (46, 2, 64, 7, 2), (46, 4, 64, 7, 2), (96, 2, 32, 7, 2),
         (94, 1, 32, 7, 2), (192, 2, 16, 7, 2), (190, 1, 16, 7, 2), (384, 2, 8, 3, 1), (382, 1, 8, 3, 1),
         (50, 1, 56, 3, 1), (50, 2, 56, 3, 1), (90, 1, 28, 5, 1), (90, 2, 28, 5, 1))


def depthwise_file(path: Path, c: int, m: int, side: int, k: int, stride: int) -> Path:
    """One Conv of `c` groups, `m` output channels each, padded to keep the size at stride 1, with a bias."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w = (rng.standard_normal((c * m, 1, k, k)) / k).astype(np.float32)
    b = (0.1 * rng.standard_normal(c * m)).astype(np.float32)
    out = (side + 2 * (k // 2) - k) // stride + 1
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], name="dw", group=c, pads=[k // 2] * 4,
                            strides=[stride, stride], kernel_shape=[k, k])
    return save_onnx(path, "dw", [node], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, side, side])],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c * m, out, out])],
                     [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])


def main() -> None:
    from corpus.check import analyse

    args = arguments(__doc__, 5)
    with tempfile.TemporaryDirectory(prefix="dwmult-") as td:
        for c, m, side, k, stride in CASES:
            name = f"dw-{c}x{m}-{side}-{k}x{k}-s{stride}"
            r = analyse(depthwise_file(Path(td) / f"{name}.onnx", c, m, side, k, stride), {}, args.calibration,
                        runs=args.runs, warmup=1, measure_cpu=True, check_exports=False)
            if r.get("status") != "analysed":
                print(f"{name:24s} {r.get('status')}: {r.get('error', '')}")
                continue
            kinds = ",".join(sorted({t[2] for t in r["per_task"]}))
            print(f"{name:24s} cpu {r['cpu_ms']:8.3f} ms  predicted {r['predicted_ms']:8.3f} ms  "
                  f"{r['predicted_ms'] / r['cpu_ms']:5.2f}x  {kinds}", flush=True)


if __name__ == "__main__":
    main()
