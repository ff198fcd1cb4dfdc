"""Where `.tflite` rows miss, by operator shape: each row of `benchmarks/realworld.py --json` on `litert-cpu/host`
(its error against thread CPU time), and the rows' per-operator figures (LiteRT's profiler against the fp32
prediction: fp32 and fp16 files only, an int8 file's per-operator column is not its preset) summed by class: convs by
kernel, stride and whether 1x1 (XNNPACK's F32 GEMM) or an image stem (`stem`: at most 4 input channels), depthwise
convs by kernel and channels (`split` where they are not whole vectors of this CPU's fp32 lanes,
host_machine.f32_vector_floats; `>L1` where XNNPACK's tile reads a pixel's weights and inputs beyond this CPU's L1,
host_machine.l1_bytes and simulator.litert_paths.DW_PIXEL_BYTES).

`PYTHONPATH=. .venv/bin/python benchmarks/litert_per_op.py ROWS.json ... [--detail] [--cache DIR]` (the files are
read from the corpus cache to classify their operators). Asserts nothing; times nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, os.fspath(Path(__file__).resolve().parents[1]))

from compiler.graph import Graph, Node  # noqa: E402
from simulator.host_machine import f32_vector_floats, l1_bytes  # noqa: E402
from simulator.litert_paths import XNN_DWCONV_MAX_TAPS, dw_pixel_bytes  # noqa: E402

# The rows are this machine's: classify by its own L1 and vector lanes (0 where unknown: no such class)
L1, LANES = l1_bytes(), f32_vector_floats()
STEM_CHANNELS = 4  # a conv of at most this many input channels is an image stem (RGB, RGBA)


def op_class(nd: Node, g: Graph) -> tuple[str, str]:
    """(class, shape text) of an operator: convs and depthwise convs by kernel, stride and channels."""
    op = nd.op_type
    if op not in ("CONV_2D", "DEPTHWISE_CONV_2D") or len(nd.inputs) < 2:
        return op, ""
    w, x, y = (g.values.get(v) for v in (nd.inputs[1], nd.inputs[0], nd.outputs[0]))
    if w is None or x is None or y is None or not (w.shape and x.shape and y.shape):
        return op, ""
    k, s, c = f"{w.shape[1]}x{w.shape[2]}", nd.attributes.get("stride_h", 1), y.shape[-1]
    if op == "CONV_2D":  # an image stem (few channels per tap) apart: the F32 IGEMM's walk per tap weighs most there
        stem = " stem" if isinstance(x.shape[-1], int) and x.shape[-1] <= STEM_CHANNELS else ""
        return f"conv{k}s{s}{stem}", f"{x.shape[-1]}->{c} at {y.shape[1]}px"
    taps = int(w.shape[1]) * int(w.shape[2])
    big = isinstance(c, int) and 0 < L1 < dw_pixel_bytes(taps, c) and taps <= XNN_DWCONV_MAX_TAPS
    split = isinstance(c, int) and LANES > 0 and c % LANES > 0
    return f"dw{k}s{s}{' split' if split else ''}{' >L1' if big else ''}", f"{y.shape[1]}px {c}ch"


def row_classes(r: dict[str, Any], g: Graph | None, detail: bool,
                tot: dict[tuple[str, str], list[float]]) -> dict[str, list[float]]:
    """One row's per-operator figures summed by class ([predicted, profiled, count]), added to `tot` too."""
    nodes = {n.id: n for n in g.nodes} if g is not None else {}
    per: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for tid, op, _kind, p, m in r["per_task"]:
        c, shape = op_class(nodes[tid], g) if g is not None and tid in nodes else (op, "")
        for acc in (per[c], tot[(r["exporter"], c)]):
            acc[0], acc[1], acc[2] = acc[0] + p, acc[1] + (m or 0.0), acc[2] + 1
        if detail and m and m > 0.02 and not 0.85 <= p / m <= 1.15:
            print(f"     {tid:28s} {c:24s} {shape:22s} pred {p:7.3f} prof {m:7.3f}  {p / m:5.2f}x")
    return per


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rows", nargs="+", type=Path)
    ap.add_argument("--detail", action="store_true", help="also every operator beyond 0.85-1.15x of 20 us or more")
    ap.add_argument("--cache", type=Path, default=Path(os.environ.get("EDGESCOPE_CORPUS_CACHE", "/work/corpus-cache")))
    a = ap.parse_args()
    from compiler.frontends import tflite

    rows = {(r["id"], r["exporter"]): r for f in a.rows for r in json.loads(f.read_text())["rows"]}
    tot: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for (rid, exp), r in sorted(rows.items()):
        if r.get("status") != "analysed" or r.get("target") != "litert-cpu/host":
            continue
        cpu, pred = r.get("cpu_ms"), float(r["predicted_ms"])
        print(f"== {rid:36s} {exp:12s} cpu {cpu or 0:8.3f} pred {pred:8.3f} "
              f"err {((pred / cpu - 1) * 100 if cpu else float('nan')):+6.1f}%")
        path = a.cache / rid.replace("/", "__") / f"{exp}.tflite"
        per = row_classes(r, tflite.load(path) if path.is_file() else None, a.detail, tot)
        for c, (p, m, n) in sorted(per.items(), key=lambda kv: -kv[1][1]):
            if m > 0.01 * (cpu or 1.0):
                print(f"   {c:28s} n={n:4.0f} pred {p:7.3f} prof {m:7.3f}  {p / m if m else float('nan'):5.2f}x")
    print("== by exporter and class (fp32 and fp16 files)")
    for (exp, c), (p, m, n) in sorted(tot.items(), key=lambda kv: -kv[1][1]):
        if exp != "tflite-int8" and m > 0.1:
            print(f"   {exp:12s} {c:28s} n={n:4.0f} pred {p:8.3f} prof {m:8.3f}  {p / m:5.2f}x")


if __name__ == "__main__":
    main()
