"""fp32 LiteRT conv / depthwise / deconvolution chains as LiteRT's calibration builds and times them
(simulator.litert_calibration.build: R operators, LiteRT's profiler, 1 thread, in one sandboxed child), each operator's
median against the rules' prediction with a calibration: what tells a cost of the activations' size (beyond the L2)
from one of the shape (channels in and out, taps) at one size.

Run under the measurement lock, with a calibration of this code's CACHE_VERSIONs (ORT's and LiteRT's):
`flock /work/notes/measure.lock env PYTHONPATH=. .venv/bin/python benchmarks/litert_conv_chains.py --calibration C
[--json out.json] [--rounds 3] conv:32:112:3 dw:24:64:5 conv:96:184:3:1:24 deconv:24:184:2:2:24 ...`
(op:C_in:map:kernel[:stride[:C_out]]; with C_out every operator reads the model's input, as calibration's stems do).
Prints one line per chain (the first and last operators left out, as the fits leave them); asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, os.fspath(Path(__file__).resolve().parents[1]))

OPS = {"conv": "CONV_2D", "dw": "DEPTHWISE_CONV_2D", "deconv": "TRANSPOSE_CONV"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("shapes", nargs="+", help="op:C_in:map:kernel[:stride[:C_out]], op one of " + ", ".join(OPS))
    ap.add_argument("--calibration", type=Path, required=True)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=1, help="time the chains in this many rounds, the runs split between "
                    "them, each chain's fastest round kept (as LiteRT's calibration times its chains)")
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    from compiler.frontends import tflite
    from simulator.calibrated import hardware_for
    from simulator.litert_calibration import Case, build
    from simulator.litert_cases import TARGET, predicted_ms, profile_cases

    hw = hardware_for(TARGET, a.calibration)
    cases = []
    for spec in a.shapes:
        op, *dims = spec.split(":")
        shape = tuple(int(d) for d in dims)
        if op == "deconv" and len(shape) < 5:
            ap.error(f"{spec}: a deconvolution needs op:C_in:map:kernel:stride:C_out")
        cases.append(Case(spec.replace(":", "-"), OPS[op], shape, ("fp32",)))
    rows = []
    with tempfile.TemporaryDirectory(prefix="litert-conv-chains-") as td:
        timed = profile_cases(cases, lambda c, p: build(c, "fp32", p), lambda c: c.name, Path(td), "conv chains",
                              a.runs, warmup=3, rounds=a.rounds)
        for case, path, res in timed:
            g = tflite.load(path)
            meas = [res["tasks"][n.id][0] for n in g.nodes[1:-1]]
            pred = predicted_ms(g, hw, "fp32")[:-1]
            out = g.values[g.nodes[1].outputs[0]].shape
            in_ = g.values[g.nodes[1].inputs[0 if case.op != "TRANSPOSE_CONV" else 2]].shape
            m, p = float(np.median(meas)), float(np.median(pred))
            row = {"case": case.name, "in_mib": float(np.prod(in_)) * 4 / 2**20,
                   "out_mib": float(np.prod(out)) * 4 / 2**20, "measured_ms": m, "predicted_ms": p}
            rows.append(row)
            print(f"{case.name:22s} in {row['in_mib']:6.2f} MiB  out {row['out_mib']:6.2f} MiB  measured {m:8.3f} ms  "
                  f"predicted {p:8.3f} ms  pred/meas {p / m:5.2f}", flush=True)
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
