"""ShuffleNet v1 units on `ort-cpu/host`: single files built here (chains of the units the ONNX model zoo's
ShuffleNet has: a grouped 1x1 Conv + Relu, the channel shuffle, a depthwise 3x3, a grouped 1x1, the residual Sum
and Relu), each through the pipeline (corpus.check.analyse: measured, then predicted by this checkout's cost model),
predicted against thread CPU time, with the profile's and the prediction's time per op kind. Variants leave parts of
the unit out, so what the model pays beyond calibration's grouped 1x1 chains shows which part it is.

Run under the measurement lock, with a calibration of this code's CACHE_VERSION:
`flock /work/notes/measure.lock env PYTHONPATH=. .venv/bin/python benchmarks/shuffle_units.py --calibration C
[--only NAME ...]`. Prints one line per file and its op kinds; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, os.fspath(Path(__file__).resolve().parents[1]))
from benchmarks.single_op import save_onnx  # noqa: E402

GROUPS = 4
UNITS = 4

# name: (channels in, channels out, map size, shuffle, depthwise, residual, first conv's activation)
CASES: dict[str, tuple[int, int, int, bool, bool, bool, bool]] = {
    "gconv-chain-136x28": (136, 136, 28, False, False, False, True),
    "unit-136x28": (136, 136, 28, True, True, True, True),
    "unit-136x28-noshuffle": (136, 136, 28, False, True, True, True),
    "unit-136x28-nodw": (136, 136, 28, True, False, True, True),
    "unit-136x28-nores": (136, 136, 28, True, True, False, True),
    "unit-272x14": (272, 272, 14, True, True, True, True),
    "unit-544x7": (544, 544, 7, True, True, True, True),
    "unit-40x28": (40, 40, 28, True, True, True, True),
    "unit-544x14": (544, 544, 14, True, True, True, True),
}
# Chains of one part of the unit alone (UNITS * 2 of it): the op's own time where its input was just written.
PARTS: dict[str, tuple[str, int, int]] = {
    "shuffle-136x28": ("shuffle", 136, 28),
    "sumrelu-136x28": ("sumrelu", 136, 28),
    "relu-136x28": ("relu", 136, 28),
    "dwshuffle-136x28": ("dwshuffle", 136, 28),
}


class _Builder:
    def __init__(self) -> None:
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self.rng = np.random.default_rng(0)
        self.n = 0

    def const(self, a: np.ndarray) -> str:
        from onnx import numpy_helper

        self.n += 1
        name = f"k{self.n}"
        self.inits.append(numpy_helper.from_array(a, name))
        return name

    def node(self, op: str, inputs: list[str], **attrs: Any) -> str:
        from onnx import helper

        self.n += 1
        out = f"t{self.n}"
        self.nodes.append(helper.make_node(op, inputs, [out], name=f"{op}{self.n}", **attrs))
        return out

    def conv(self, x: str, cin: int, cout: int, k: int, group: int, relu: bool) -> str:
        w = (self.rng.standard_normal((cout, cin // group, k, k)) / np.sqrt(cin // group * k * k)).astype(np.float32)
        b = (0.1 * self.rng.standard_normal(cout)).astype(np.float32)
        y = self.node("Conv", [x, self.const(w), self.const(b)], kernel_shape=[k, k], pads=[k // 2] * 4, group=group)
        return self.node("Relu", [y]) if relu else y

    def shuffle(self, x: str, c: int, hw: int) -> str:
        five = self.node("Reshape", [x, self.const(np.array([1, GROUPS, c // GROUPS, hw, hw], np.int64))])
        t = self.node("Transpose", [five], perm=[0, 2, 1, 3, 4])
        return self.node("Reshape", [t, self.const(np.array([1, c, hw, hw], np.int64))])


def unit_file(path: Path, c: int, hw: int, shuffle: bool, dw: bool, residual: bool, relu: bool) -> Path:
    """UNITS units on [1, c, hw, hw] (bottleneck c, as the model zoo's ShuffleNet has it: 136 -> 136 in stage 2)."""
    from onnx import TensorProto, helper

    b = _Builder()
    x = "x"
    for _ in range(UNITS):
        y = b.conv(x, c, c, 1, GROUPS, relu)
        if shuffle:
            y = b.shuffle(y, c, hw)
        if dw:
            y = b.conv(y, c, c, 3, c, False)
        y = b.conv(y, c, c, 1, GROUPS, not residual)
        x = b.node("Relu", [b.node("Sum", [x, y])]) if residual else y
    return save_onnx(path, path.stem, b.nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, hw, hw])],
                     [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, c, hw, hw])], b.inits)


def part_file(path: Path, part: str, c: int, hw: int) -> Path:
    """2 * UNITS of one part of the unit in a chain on [1, c, hw, hw]."""
    from onnx import TensorProto, helper

    b = _Builder()
    x = "x"
    for _ in range(2 * UNITS):
        if part == "shuffle":
            x = b.shuffle(x, c, hw)
        elif part == "sumrelu":
            x = b.node("Relu", [b.node("Sum", [x, "x"])])
        elif part == "relu":
            x = b.node("Relu", [x])
        else:
            x = b.shuffle(b.conv(x, c, c, 3, c, False), c, hw)
    return save_onnx(path, path.stem, b.nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, hw, hw])],
                     [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, c, hw, hw])], b.inits)


def main() -> None:
    from corpus.check import analyse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calibration", type=Path, required=True)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--only", nargs="*", default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="shuffle-") as td:
        files = {name: lambda p, a=a: unit_file(p, a[0], a[2], *a[3:]) for name, a in CASES.items()}
        files.update({name: lambda p, a=a: part_file(p, *a) for name, a in PARTS.items()})
        for name, build in files.items():
            if args.only and name not in args.only:
                continue
            r = analyse(build(Path(td) / f"{name}.onnx"), {}, args.calibration,
                        runs=args.runs, warmup=5, measure_cpu=True, check_exports=False)
            if r.get("status") != "analysed":
                print(f"{name:24s} {r.get('status')}: {r.get('error', '')}")
                continue
            err = 100 * (r["predicted_ms"] / r["cpu_ms"] - 1)
            prof = sum(t[4] or 0.0 for t in r["per_task"])
            print(f"{name:24s} cpu {r['cpu_ms']:7.3f} ms  predicted {r['predicted_ms']:7.3f} ms  {err:+6.1f}%  "
                  f"profile sum {prof:7.3f}", flush=True)
            kinds: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
            for _, op, kind, pred, meas in r["per_task"]:
                k = kinds[(op, kind)]
                k[0] += 1
                k[1] += pred
                k[2] += meas or 0.0
            for (op, kind), (n, pred, meas) in sorted(kinds.items(), key=lambda kv: -kv[1][2]):
                print(f"    {op:14s} {kind:12s} x{int(n):<3d} predicted {pred:7.3f}  profiled {meas:7.3f}")


if __name__ == "__main__":
    main()
