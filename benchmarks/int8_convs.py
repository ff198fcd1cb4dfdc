"""Static int8 Convs at real CNNs' shapes on `ort-cpu/host`, each small file through benchmarks/export_ops.diagnose
(fp32 analysis, the int8-static export, both profiled by ORT): per QLinearConv its profiled time (mO) against the rules'
prediction (pO*), the fp32 Conv's time (m32) beside it. What the static int8 conv rules were judged on (issue 14):
MBConv pointwise pairs (expand + activation, project) as EfficientNet, MNASNet and MixNet have them, after a Relu, a
SiLU (QLinearSigmoid + QLinearMul) or none, and a pointwise Conv behind a float op; squeeze-excite blocks (1x1 Convs on
a one-pixel map).

Run under the measurement lock, with a calibration of this code's CACHE_VERSION:
`flock /work/notes/measure.lock env PYTHONPATH=. .venv/bin/python benchmarks/int8_convs.py --calibration C [--only S]`.
Prints one line per QLinearConv; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, os.fspath(Path(__file__).resolve().parents[1]))
from benchmarks.single_op import save_onnx  # noqa: E402

# name -> (input channels, expanded channels, map size, activation after the expand, blocks)
CASES: dict[str, tuple[int, int, int, str, int]] = {
    "sq256-14-relu": (256, 256, 14, "relu", 4),  # the calibration's own square 1x1 case, as pairs
    "mb24-144-56-relu": (24, 144, 56, "relu", 2),
    "mb40-240-28-relu": (40, 240, 28, "relu", 3),
    "mb40-240-28-silu": (40, 240, 28, "silu", 3),
    "mb80-480-14-relu": (80, 480, 14, "relu", 3),
    "mb112-672-14-silu": (112, 672, 14, "silu", 3),
    "mb192-1152-7-relu": (192, 1152, 7, "relu", 3),
    "mb192-1152-7-silu": (192, 1152, 7, "silu", 3),
    "mb40-240-28-none": (40, 240, 28, "none", 3),
    "mb40-240-28-float": (40, 240, 28, "float", 3),  # an Erf (kept float) before each expand
    "mb112-672-14-relu": (112, 672, 14, "relu", 3),
    "mb112-672-14-clip": (112, 672, 14, "clip", 3),  # Clip(-1, 6): folded, the project's input zero point not 0
    "mb112-672-14-sig": (112, 672, 14, "sig", 3),  # QLinearSigmoid alone between
    "mb112-672-14-square": (112, 672, 14, "square", 3),  # QLinearMul (x * x) alone between
    # Squeeze-excite blocks (se_file): pool, 1x1 conv on the 1x1 map (cin -> mid) + Relu, 1x1 (mid -> cin), Sigmoid gate
    # times the map. RegNetY-400MF's, GhostNet's and MixNet-S's shapes.
    "se48-12-56": (48, 12, 56, "se", 4),
    "se208-52-14": (208, 52, 14, "se", 4),
    "se440-110-7": (440, 110, 7, "se", 4),
    "se960-240-7": (960, 240, 7, "se", 4),
    "se1536-80-7": (1536, 80, 7, "se", 4),
}


def conv1x1_consts(rng: np.random.Generator, name: str, co: int, ci: int) -> list:
    """A 1x1 Conv's weight `<name>_w` [co, ci, 1, 1] (variance 1/ci) and bias `<name>_b` as ONNX initializers."""
    from onnx import numpy_helper

    w = (rng.standard_normal((co, ci, 1, 1)) / np.sqrt(ci)).astype(np.float32)
    return [numpy_helper.from_array(w, f"{name}_w"),
            numpy_helper.from_array((0.1 * rng.standard_normal(co)).astype(np.float32), f"{name}_b")]


def pairs_file(path: Path, cin: int, mid: int, hw: int, act: str, blocks: int) -> Path:
    """`blocks` x (1x1 cin -> mid, activation, 1x1 mid -> cin) with biases, on [1, cin, hw, hw]."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    consts, nodes, x = [], [], "x"
    for i in range(blocks):
        for name, co, ci in ((f"e{i}", mid, cin), (f"p{i}", cin, mid)):
            consts += conv1x1_consts(rng, name, co, ci)
        if act == "float":
            nodes.append(helper.make_node("Erf", [x], [f"f{i}"], name=f"erf{i}"))
            x = f"f{i}"
        nodes.append(helper.make_node("Conv", [x, f"e{i}_w", f"e{i}_b"], [f"e{i}"], name=f"expand{i}"))
        y = f"e{i}"
        if act == "clip":
            consts += [numpy_helper.from_array(np.array(-1.0, np.float32), f"lo{i}"),
                       numpy_helper.from_array(np.array(6.0, np.float32), f"hi{i}")]
            nodes.append(helper.make_node("Clip", [y, f"lo{i}", f"hi{i}"], [f"a{i}"], name=f"clip{i}"))
            y = f"a{i}"
        elif act == "sig":
            nodes.append(helper.make_node("Sigmoid", [y], [f"a{i}"], name=f"sig{i}"))
            y = f"a{i}"
        elif act == "square":
            nodes.append(helper.make_node("Mul", [y, y], [f"a{i}"], name=f"mul{i}"))
            y = f"a{i}"
        elif act == "relu":
            nodes.append(helper.make_node("Relu", [y], [f"a{i}"], name=f"relu{i}"))
            y = f"a{i}"
        elif act == "silu":
            nodes += [helper.make_node("Sigmoid", [y], [f"s{i}"], name=f"sig{i}"),
                      helper.make_node("Mul", [y, f"s{i}"], [f"a{i}"], name=f"mul{i}")]
            y = f"a{i}"
        nodes.append(helper.make_node("Conv", [y, f"p{i}_w", f"p{i}_b"], [f"p{i}"], name=f"project{i}"))
        x = f"p{i}"
    return save_onnx(path, "pairs", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin, hw, hw])],
                     [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, cin, hw, hw])], consts)


def se_file(path: Path, cin: int, mid: int, hw: int, blocks: int) -> Path:
    """`blocks` squeeze-excite blocks on [1, cin, hw, hw]: GlobalAveragePool, 1x1 cin -> mid + bias + Relu, 1x1 mid ->
    cin + bias, Sigmoid, Mul by the block's input: each 1x1 Conv on a one-pixel map (calibration's own builder)."""
    from simulator.calibration_se import se_blocks

    nodes, inputs, outputs, consts = se_blocks(cin, mid, hw, blocks)
    return save_onnx(path, "se", nodes, inputs, outputs, consts)


def report(name: str, doc: dict[str, Any]) -> None:
    o = doc["options"]["int8-static"]
    print(f"{name}: fp32 {doc['fp32']['measured_ms']:.3f} ms, int8 {o['measured_ms']:.3f} ms (CPU {o['cpu_ms'] or 0:.3f}),"
          f" predicted {o['predicted_unmeasured_ms']:.3f}; load/CPU {o['load'] or 0:.1f}", flush=True)
    for t in doc["options"]["int8-static"]["per_task"]:
        if "conv" in t["kind"] or name.startswith("se"):  # a squeeze-excite block's pool and gate too
            print(f"  {t['id'][:28]:28s} {t['kind']:11s} m32 {t['m32']:7.4f} mO {t['mO']:7.4f} pO* {t['pO*']:7.4f} "
                  f"mO/pO* {t['mO'] / max(t['pO*'], 1e-9):5.2f}", flush=True)


def main() -> None:
    from benchmarks.export_ops import diagnose

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calibration", type=Path, required=True)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--only", nargs="*", default=[])
    a = ap.parse_args()
    import logging
    import warnings

    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    for name, (cin, mid, hw, act, blocks) in CASES.items():
        if a.only and not any(s in name for s in a.only):
            continue
        with tempfile.TemporaryDirectory(prefix="int8-convs-") as td:
            f = (se_file(Path(td) / f"{name}.onnx", cin, mid, hw, blocks) if act == "se" else
                 pairs_file(Path(td) / f"{name}.onnx", cin, mid, hw, act, blocks))
            work = Path(td) / "work"
            work.mkdir()
            report(name, diagnose(f, ["int8-static"], {}, a.calibration, a.runs, 3, work))


if __name__ == "__main__":
    main()
