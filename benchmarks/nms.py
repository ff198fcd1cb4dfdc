"""NonMaxSuppression on `ort-cpu/host`: single-op files built here, each through the pipeline (corpus.check.analyse:
measured, then predicted by this checkout's cost model from the selection the profiled run observed), predicted
against thread CPU time. What the NMS rule (simulator/other_ops.py) was fitted and judged on: boxes spread uniformly
(overlapping often), on an anchor grid with noise (as SSD's decoded boxes of random weights), or such grids of 80
classes moved apart as torchvision's batched_nms does, N 2,000-20,000, IoU thresholds 0.3-0.8. The boxes and scores are constants; an input of one element is added to the scores so that ORT
cannot fold the op at load.

Run under the measurement lock, with a calibration of this code's CACHE_VERSION:
`flock /work/notes/measure.lock env PYTHONPATH=. .venv/bin/python benchmarks/nms.py --calibration C`.
Prints one line per file and the median |error|; asserts nothing.
"""

from __future__ import annotations

import itertools
import os
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, os.fspath(Path(__file__).resolve().parents[1]))
from benchmarks.single_op import arguments, save_onnx  # noqa: E402

KINDS = ("uniform", "anchors", "classes")
CLASSES = 80  # "classes": torchvision's batched_nms (detection models' ONNX exports) offsets each class's boxes
SIZES = (2000, 8000, 20000)
IOUS = (0.3, 0.55, 0.8)


def boxes(n: int, kind: str, rng: np.random.Generator) -> np.ndarray:
    """[1, n, 4] boxes as [y1, x1, y2, x2]: centres uniform with sides up to 0.2 ("uniform"), six aspect ratios per
    cell of a square grid, jittered ("anchors"), or anchors of `CLASSES` classes, each class's boxes moved past the
    others' (torchvision.ops.batched_nms: boxes + class index x (max coordinate + 1)), so boxes of two classes never
    overlap ("classes")."""
    if kind == "classes":  # each class's anchors in [0, 1]; nms_file adds the offsets, as batched_nms does
        return np.concatenate([boxes(n // CLASSES, "anchors", rng)[0] for _ in range(CLASSES)])[None]
    if kind == "uniform":
        centre, wh = rng.random((n, 2)), rng.random((n, 2)) * 0.2
    else:
        side = int(np.ceil(np.sqrt(n / 6)))
        grid = (np.stack(np.meshgrid(np.arange(side), np.arange(side)), -1).reshape(-1, 2) + 0.5) / side
        centre = np.repeat(grid, 6, 0)[:n] + rng.normal(0, 0.1 / side, (n, 2))
        ratios = np.array([[1, 1], [2, 1], [1, 2], [2, 2], [3, 1], [1, 3]]) / side
        wh = np.repeat(ratios, side * side, 0)[:n] * rng.uniform(0.7, 1.3, (n, 2))
    xyxy = np.concatenate([centre - wh / 2, centre + wh / 2], 1)
    return xyxy[:, [1, 0, 3, 2]].astype(np.float32)[None]


def nms_file(path: Path, n: int, kind: str, iou: float, seed: int) -> Path:
    """NMS of constant boxes and scores, the scores plus the input (so that ORT cannot fold the op at load); for
    "classes", the boxes [n, 4] plus one offset per box (2 x its class index, plus the input), then unsqueezed, as
    torchvision's batched_nms exports."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    b = boxes(n, kind, rng)
    consts = [numpy_helper.from_array(rng.random((1, 1, n)).astype(np.float32), "s0"),
              numpy_helper.from_array(np.array([2 ** 62], np.int64), "max_out"),
              numpy_helper.from_array(np.array([iou], np.float32), "iou")]
    nodes = [helper.make_node("Add", ["s0", "x"], ["scores"]),
             helper.make_node("NonMaxSuppression", ["boxes", "scores", "max_out", "iou"], ["selected"])]
    if kind == "classes":
        offsets = (2.0 * (np.arange(n) // (n // CLASSES))).astype(np.float32)[:, None]
        consts += [numpy_helper.from_array(b[0], "raw"), numpy_helper.from_array(offsets, "offsets"),
                   numpy_helper.from_array(np.array([0], np.int64), "axis0")]
        nodes[:0] = [helper.make_node("Add", ["offsets", "x"], ["moved"]),
                     helper.make_node("Add", ["raw", "moved"], ["apart"]),
                     helper.make_node("Unsqueeze", ["apart", "axis0"], ["boxes"])]
    else:
        consts.append(numpy_helper.from_array(b, "boxes"))
    return save_onnx(path, "nms", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                     [helper.make_tensor_value_info("selected", TensorProto.INT64, ["S", 3])], consts)


def main() -> None:
    from corpus.check import analyse

    args = arguments(__doc__, 5)
    errors: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="nms-") as td:
        for seed, (kind, n, iou) in enumerate(itertools.product(KINDS, SIZES, IOUS)):
            name = f"{kind}-{n}-iou{iou}"
            r = analyse(nms_file(Path(td) / f"{name}.onnx", n, kind, iou, seed), {}, args.calibration,
                        runs=args.runs, warmup=1, measure_cpu=True, check_exports=False)
            if r.get("status") != "analysed":
                print(f"{name:22s} {r.get('status')}: {r.get('error', '')}")
                continue
            err = 100 * (r["predicted_ms"] / r["cpu_ms"] - 1)
            errors.setdefault(kind, []).append(abs(err))
            print(f"{name:22s} cpu {r['cpu_ms']:9.3f} ms  predicted {r['predicted_ms']:9.3f} ms  {err:+6.1f}%"
                  f"  unknown-work tasks {r['unknown_tasks']}", flush=True)
    for kinds, errs in errors.items():
        print(f"{kinds}: median |error| {statistics.median(errs):.1f}%, within ±25% {sum(e <= 25 for e in errs)}/{len(errs)}")


if __name__ == "__main__":
    main()
