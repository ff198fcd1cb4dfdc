"""Static int8 depthwise convs at any channel count, as chains timed the way calibration times its cases (8 convs +
Relu / Clip, calibration_models.conv_act; thread CPU time, the fast end of pooled rounds: calibration_timing), against
the rules' prediction with a calibration, each chain compiled as a model's analysis compiles it (the depthwise
channels read on the source: counts off MLAS's 16 take its generic u8 kernel, simulator/ort_int8.py). Per conv: time,
prediction, their ratio, the kernel's blocks [16, 8, scalar] (simulator.conv_work.generic_depthwise_lanes).

Run under the measurement lock, with a calibration of this code's CACHE_VERSION:
`flock /work/notes/measure.lock env PYTHONPATH=. .venv/bin/python benchmarks/dw_generic.py --calibration C
[--json out.json] 12:56 18:56 72:28:5 ...` (channels:map[:kernel]). Prints one line per chain; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import warnings
from pathlib import Path

sys.path.insert(0, os.fspath(Path(__file__).resolve().parents[1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("shapes", nargs="+", help="channels:map[:kernel], e.g. 12:56 or 72:28:5")
    ap.add_argument("--calibration", type=Path, required=True)
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    from compiler import frontends
    from compiler.backends import compile_for_target
    from compiler.optimize.onnx_export import export_onnx
    from simulator.calibration import profile_from_cache
    from simulator.calibration_models import R, conv_act
    from simulator.calibration_timing import time_interleaved
    from simulator.sweep import sweep
    from simulator.totals import totals

    hw = profile_from_cache(json.loads(a.calibration.read_text()))
    run_ms = hw.units[0].run_overhead_s * 1e3
    tmp = Path(tempfile.mkdtemp(prefix="dw-generic-"))
    timings, predicted, dims = {}, {}, {}
    for spec in a.shapes:
        c, s, k = ([int(x) for x in spec.split(":")] + [3])[:3]
        name = f"dw-{c}x{s}-{k}x{k}"
        src = conv_act(c, s, k, group=c)(tmp / f"{name}.onnx")
        source = frontends.load(src)
        (tmp / name).mkdir()
        compiled, _ = compile_for_target(src, "ort-cpu/host", tmp / name, source)
        r = sweep(compiled, "ort-cpu/host", hardware=hw, source=source, presets_only=("int8-static",))
        predicted[name] = totals(r.bulk, r.per_op, "int8-static", {})["latency_ms"] - run_ms
        timings[name] = (export_onnx(src, tmp / f"{name}.int8.onnx", "int8-static").path, "all", 6)
        dims[name] = (c, s)
    measured = {k: v - run_ms for k, v in time_interleaved(timings).items()}
    for name, (c, s) in dims.items():
        blocks, rest = divmod(c, 16)
        m, p = measured[name] / R * 1e3, predicted[name] / R * 1e3
        print(f"{name:16s} [{blocks:2d},{rest // 8},{rest % 8}] {m:8.2f} us per conv, predicted {p:8.2f} "
              f"(x{m / p:.2f}), {m * 1e3 / (s * s):6.1f} ns per pixel", flush=True)
    if a.json:
        a.json.write_text(json.dumps({n: {"measured_ms": measured[n], "predicted_ms": predicted[n]} for n in dims}))


if __name__ == "__main__":
    main()
