"""CNN parts on `ort-cpu/host`: files built here (depthwise chains by kernel and map size, a stem before and
without the blocks after it, a classifier head after tails of growing weight footprints) and a corpus model cut
into pieces at named nodes, all timed side by side round-robin (thread CPU time at the 5th percentile, as
calibration times its cases: simulator.calibration_timing.time_interleaved) against this checkout's prediction
with a calibration. A model's whole against the sum of its pieces shows what it pays in context (its weights and
maps sharing the caches) beyond what its parts cost alone; a part's cost in context is the file with it less the
file without it, measured in the same rounds (ORT's profiled per-node times come from runs interleaved with a
second session of the model, whose copy of the weights shares the cache: they are not the figure a rule is fitted
to).

Run under the measurement lock, with a calibration of this code's CACHE_VERSION:
`flock /work/notes/measure.lock env PYTHONPATH=. .venv/bin/python benchmarks/cnn_parts.py --calibration C
[--groups dw stem head] [--model FILE --cut PREFIX ...]`. `--cut` names a node-name prefix: the model is cut at the
first input of the first node whose name starts with it. Prints one line per file; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, os.fspath(Path(__file__).resolve().parents[1]))

Tensor = tuple[str, list[int]]  # a value's name and NCHW shape


class Builder:
    """An ONNX graph of Convs (each with its own weights and bias), pools and a classifier Gemm."""

    def __init__(self) -> None:
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self.inputs: list[Any] = []
        self.n = 0
        self.rng = np.random.default_rng(0)

    def input(self, shape: list[int]) -> Tensor:
        from onnx import TensorProto, helper

        name = f"in{len(self.inputs)}"
        self.inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, shape))
        return name, list(shape)

    def _name(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def _weight(self, shape: list[int]) -> str:
        from onnx import numpy_helper

        a = (self.rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32)
        name = self._name("w")
        self.inits.append(numpy_helper.from_array(a, name))
        return name

    def conv(self, x: Tensor, co: int, k: int = 1, stride: int = 1, group: int = 1, relu: bool = True) -> Tensor:
        from onnx import helper

        ci, hw = x[1][1], x[1][2]
        out = self._name("c")
        ins = [x[0], self._weight([co, ci // group, k, k]), self._weight([co])]
        self.nodes.append(helper.make_node("Conv", ins, [out], pads=[k // 2] * 4, strides=[stride] * 2, group=group))
        if relu:
            self.nodes.append(helper.make_node("Relu", [out], [out + "r"]))
            out += "r"
        o = (hw + 2 * (k // 2) - k) // stride + 1
        return out, [1, co, o, o]

    def depthwise(self, x: Tensor, k: int = 3) -> Tensor:
        return self.conv(x, x[1][1], k, group=x[1][1])

    def pool(self, x: Tensor) -> Tensor:
        from onnx import helper

        out = self._name("g")
        self.nodes.append(helper.make_node("GlobalAveragePool", [x[0]], [out]))
        return out, [1, x[1][1], 1, 1]

    def head(self, x: Tensor, classes: int = 1000) -> Tensor:
        """GlobalAveragePool, Flatten and a classes x channels Gemm: a classifier, a batch-1 GEMV on its weights."""
        from onnx import helper

        g = self.pool(x)[0]
        flat, out = self._name("f"), self._name("y")
        self.nodes.append(helper.make_node("Flatten", [g], [flat]))
        self.nodes.append(helper.make_node("Gemm", [flat, self._weight([classes, x[1][1]]), self._weight([classes])],
                                           [out], transB=1))
        return out, [1, classes]

    def save(self, outs: list[Tensor], path: Path) -> Path:
        from onnx import TensorProto, helper

        from simulator.calibration_models import save_model

        return save_model(self.nodes, self.inputs,
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outs], self.inits, path)


def blocks(b: Builder, x: Tensor, n: int) -> Tensor:
    """`n` MNASNet-like blocks at the stem's resolution: a depthwise 3x3, a 1x1 to 16 channels, a 1x1 back."""
    for _ in range(n):
        x = b.conv(b.conv(b.depthwise(x), 16, relu=False), x[1][1])
    return x


def tail(b: Builder, x: Tensor, n: int) -> Tensor:
    """`n` 1x1 Convs keeping the channels, then one to 1280 (a CNN's last stage at 7x7)."""
    for _ in range(n):
        x = b.conv(x, x[1][1])
    return b.conv(x, 1280)


def stem(b: Builder) -> Tensor:
    return b.conv(b.input([1, 3, 224, 224]), 32, 3, 2)


# name: builder of its outputs. A part's cost in context: the file with it less the file without it.
BUILT: dict[str, Callable[[Builder], list[Tensor]]] = {
    "stem": lambda b: [b.pool(stem(b))],
    "stem+blocks2": lambda b: [b.pool(blocks(b, stem(b), 2))],
    "blocks2": lambda b: [b.pool(blocks(b, b.input([1, 32, 112, 112]), 2))],
    "stem+blocks4": lambda b: [b.pool(blocks(b, stem(b), 4))],
    "head1280": lambda b: [b.head(b.input([1, 1280, 7, 7]))],
    **{f"tail{n}{h}": (lambda b, n=n, h=h: [(b.head if h else b.pool)(tail(b, b.input([1, 512, 7, 7]), n))])
       for n in (3, 6, 12) for h in ("", "+head")},
    **{f"blocks4+tail{n}{h}": (lambda b, n=n, h=h: [b.pool(blocks(b, stem(b), 4)),
                                                    (b.head if h else b.pool)(tail(b, b.input([1, 512, 7, 7]), n))])
       for n in (6, 12) for h in ("", "+head")},
}
DEPTHWISE = ((576, 7, 5), (1152, 7, 3), (1152, 7, 5), (480, 14, 5), (672, 14, 5), (256, 14, 3), (240, 28, 5),
             (120, 28, 5), (144, 56, 3), (64, 56, 3), (96, 112, 3),
             # session 53: 3x3 at every map size, few and many channels; 5x5 at 56 px; a 112 px map of 32 channels
             (576, 7, 3), (384, 14, 3), (192, 28, 3), (64, 56, 5), (32, 112, 3))
for _c, _hw, _k in DEPTHWISE:  # 8 depthwise convs + Relu in a chain (calibration's dwconv cases are such)
    BUILT[f"dw-{_c}x{_hw}-{_k}x{_k}"] = lambda b, c=_c, hw=_hw, k=_k: [
        _chain(b, b.input([1, c, hw, hw]), lambda b, x: b.depthwise(x, k))]
GROUPS = {"dw": [n for n in BUILT if n.startswith("dw-")], "stem": ["stem", "stem+blocks2", "blocks2"],
          "head": [n for n in BUILT if "tail" in n or n.startswith("head")],
          # a CNN built here whole and in its two parts: what the whole pays in context
          "context": ["stem+blocks4", "tail6+head", "tail12+head", "blocks4+tail6+head", "blocks4+tail12+head"]}


def _chain(b: Builder, x: Tensor, op: Callable[[Builder, Tensor], Tensor], n: int = 8) -> Tensor:
    for _ in range(n):
        x = op(b, x)
    return x


def cut_points(model: Any, prefixes: list[str]) -> list[str]:
    """The model's input, the first input of the first node (in file order) named with each prefix, its output."""
    cuts = [model.graph.input[0].name]
    for p in prefixes:
        node = next((nd for nd in model.graph.node if nd.name.startswith(p)), None)
        if node is None:
            raise SystemExit(f"no node of {p!r}")
        cuts.append(node.input[0])
    return cuts + [model.graph.output[0].name]


def pieces(path: Path, prefixes: list[str], tmp: Path) -> dict[str, Path]:
    """{name: file}: the model whole and cut between consecutive cut points (onnx.utils.Extractor)."""
    import onnx
    from onnx.utils import Extractor

    model = onnx.shape_inference.infer_shapes(onnx.load(os.fspath(path)))
    cuts = cut_points(model, prefixes)
    out = {"whole": path}
    for i, (a, z) in enumerate(zip(cuts, cuts[1:])):
        out[f"piece{i}"] = tmp / f"piece{i}.onnx"
        onnx.save(Extractor(model).extract_model([a], [z]), os.fspath(out[f"piece{i}"]))
    return out


def predicted_ms(path: Path, hw: Any, tmp: Path) -> float:
    """This checkout's fp32 prediction of the file as ORT compiles it for the host (the run's fixed cost in)."""
    from simulator.calibration_models import compile_for_host
    from simulator.sweep import sweep
    from simulator.totals import totals

    g = compile_for_host(path, tmp / f"{path.stem}.opt.onnx")
    r = sweep(g, "ort-cpu/host", hardware=hw, presets_only=("fp32",))
    return float(totals(r.bulk, r.per_op, "fp32", {})["latency_ms"])


def flushed_ms(files: dict[str, Path], rounds: int) -> dict[str, tuple[float, float]]:
    """{name: (back to back, after a flush of every cache) ms}, files taken in turn (benchmarks/weight_residency.py's
    timings: a buffer of 4x the last-level cache sysfs lists written once per line before each flushed run)."""
    from benchmarks.weight_residency import timings
    from simulator.host_machine import llc_bytes

    flush = int(4 * max(llc_bytes()[1], 32 << 20))
    return {name: timings(p, max(1, rounds // 4), 20, flush) for name, p in files.items()}


def main() -> None:
    from simulator.calibrated import hardware_for
    from simulator.calibration_timing import time_interleaved

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calibration", type=Path, required=True)
    ap.add_argument("--groups", nargs="*", default=[], choices=sorted(GROUPS))
    ap.add_argument("--only", nargs="*", default=[], help="built files by name")
    ap.add_argument("--model", type=Path, help="a model to time whole and in pieces")
    ap.add_argument("--cut", nargs="*", default=[], help="node-name prefixes the model is cut before")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--flush", action="store_true", help="also time each file after the caches are flushed")
    args = ap.parse_args()
    from simulator.calibration import named_file_refusal

    if (why := named_file_refusal(args.calibration)) is not None:
        ap.error(why)  # (session 52: a rebase onto a newer CACHE_VERSION had this script re-time its copy in place)
    hw = hardware_for("ort-cpu/host", args.calibration)
    with tempfile.TemporaryDirectory(prefix="cnn-parts-") as td:
        tmp = Path(td)
        files: dict[str, Path] = {}
        for name in [n for g in args.groups for n in GROUPS[g]] + args.only:
            b = Builder()
            files[name] = b.save(BUILT[name](b), tmp / f"{name}.onnx")
        if args.model:
            files.update(pieces(args.model, args.cut, tmp))
        pred = {name: predicted_ms(p, hw, tmp) for name, p in files.items()}
        start = time.strftime("%H:%M:%S", time.gmtime())
        cpu = time_interleaved({name: (p, "all", 6) for name, p in files.items()}, rounds=args.rounds, budget_s=0.25)
        cold = flushed_ms(files, args.rounds) if args.flush else {}
    print(f"timed {start}-{time.strftime('%H:%M:%S', time.gmtime())} UTC")
    for name in files:
        err = 100 * (pred[name] / cpu[name] - 1)
        print(f"{name:24s} cpu {cpu[name]:8.4f} ms  predicted {pred[name]:8.4f} ms  {err:+6.1f}%"
              + (f"  back to back {cold[name][0]:8.4f} ms, after a flush {cold[name][1]:8.4f} ms" if cold else ""))
    if args.model:
        parts = [n for n in files if n.startswith("piece")]
        whole_cpu, whole_pred = cpu["whole"], pred["whole"]
        sum_cpu, sum_pred = sum(cpu[n] for n in parts), sum(pred[n] for n in parts)
        print(f"pieces summed: cpu {sum_cpu:.4f} ms, predicted {sum_pred:.4f} ms; whole less pieces: cpu "
              f"{whole_cpu - sum_cpu:+.4f} ms, predicted {whole_pred - sum_pred:+.4f} ms")


if __name__ == "__main__":
    main()
