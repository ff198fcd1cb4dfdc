"""Dilated Convs on `ort-cpu/host`: each single-op file (a Conv + Relu built here) through the pipeline
(corpus.check.analyse: measured, then predicted by this checkout's cost model), predicted against thread CPU time,
the whole model, with the Conv task's share of taps (simulator.conv_work.dilated_tap_share). What the dilated-Conv rule
was judged on: dense 3x3 Convs at dilations 1-24 on 14 and 33 px maps, and depthwise ones (which keep every tap).

Run under the measurement lock, with a calibration of this code's CACHE_VERSION (else one is timed first):
`flock /work/notes/measure.lock env PYTHONPATH=. .venv/bin/python benchmarks/dilated_convs.py --calibration C`.
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

# (channels, map size, kernel, dilation, depthwise)
CASES: tuple[tuple[int, int, int, int, bool], ...] = (
    *((256, 14, 3, d, False) for d in (1, 2, 6, 12)),
    *((256, 33, 3, d, False) for d in (1, 6, 12, 24)),
    *((512, 33, 3, d, False) for d in (1, 12)),
    *((256, 33, 3, d, True) for d in (1, 6, 12)),
    *((960, 14, 5, d, True) for d in (1, 2)),
)


def conv_file(path: Path, c: int, hw: int, k: int, dilation: int, depthwise: bool) -> Path:
    """A Conv ("same" padding at its dilation) + Relu on [1, c, hw, hw], random weights."""
    from onnx import TensorProto, helper, numpy_helper

    group = c if depthwise else 1
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((rng.random((c, c // group, k, k)) * 0.01).astype(np.float32), "w")
    b = numpy_helper.from_array(np.zeros(c, np.float32), "b")
    pad = dilation * (k // 2)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[k, k], dilations=[dilation] * 2,
                              pads=[pad] * 4, group=group),
             helper.make_node("Relu", ["y"], ["z"])]
    return save_onnx(path, "dilated", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, hw, hw])],
                     [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, c, hw, hw])], [w, b])


def main() -> None:
    from corpus.check import analyse

    args = arguments(__doc__, 30)
    with tempfile.TemporaryDirectory(prefix="dilated-") as td:
        for c, hw, k, d, dw in CASES:
            name = f"{'dw' if dw else 'conv'}{k}x{k}-{c}-{hw}px-d{d}"
            r = analyse(conv_file(Path(td) / f"{name}.onnx", c, hw, k, d, dw), {}, args.calibration, runs=args.runs,
                        warmup=5, measure_cpu=True, check_exports=False)
            if r.get("status") != "analysed":
                print(f"{name:24s} {r.get('status')}: {r.get('error', '')}")
                continue
            err = 100 * (r["predicted_ms"] / r["cpu_ms"] - 1)
            print(f"{name:24s} cpu {r['cpu_ms']:8.3f} ms  predicted {r['predicted_ms']:8.3f} ms  {err:+6.1f}%",
                  flush=True)


if __name__ == "__main__":
    main()
