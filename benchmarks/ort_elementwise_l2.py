"""ORT's fp32 element-wise ops in and beyond the core's L2: chains of 8 ops (Add, Mul, Sigmoid, Tanh, Gelu) on
[1, n] tensors from 64K to 2M elements, timed as calibration times its cases (1 intra-op thread, thread CPU time,
`time_interleaved`: round-robin, the 5th percentile of the pooled runs), each set beside the time the host rules
predict with a given calibration (`profile_from_cache`: the calibration's own rates, no speed-history scaling).

Prints, per op and size, the bytes one op moves (inputs and output, fp32), the measured and predicted ns per element
and their ratio for each calibration given (`--calibration` again: side by side); `--json` writes the rows, which
`--measured` predicts again without timing. Time only under the measurement lock:
`flock /work/notes/measure.lock env PYTHONPATH=. .venv/bin/python benchmarks/ort_elementwise_l2.py --calibration C`.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from simulator.calibration import profile_from_cache
from simulator.calibration_models import R, activation_chain, compile_for_host, op_chain
from simulator.calibration_timing import time_interleaved
from simulator.host_machine import l2_bytes
from simulator.profiles import HardwareProfile
from simulator.sweep import sweep
from simulator.totals import totals

SIZES = (65536, 131072, 196608, 262144, 393216, 524288, 1048576, 1605632, 2097152, 4194304)  # 1605632: CoaT-Lite-Tiny's
# stage-1 MLP, 3136 x 512
OPS = ("Add", "Mul", "Sigmoid", "Tanh", "Gelu")
INPUTS = {"Add": 2, "Mul": 2}  # tensors an op reads (x and the chain's first input); the others read one


def op_bytes(op: str, n: int) -> int:
    """Bytes one op of the chain reads and writes (fp32)."""
    return (INPUTS.get(op, 1) + 1) * 4 * n


def build(op: str, n: int, path: Path) -> Path:
    if op == "Gelu":  # as exporters write it (ORT fuses it into one Gelu kernel)
        return activation_chain("gelu", n, path)
    return op_chain(op, [1, n], path, binary_self=op in INPUTS)


def predict_ms(path: Path, hw: HardwareProfile, tmp: Path) -> float:
    """The host rules' time of the compiled chain without the per-inference fixed cost (as calibration fits it)."""
    g = compile_for_host(path, tmp / f"{path.stem}.opt.onnx")
    r = sweep(g, "ort-cpu/host", hardware=hw, presets_only=("fp32",))
    return totals(r.bulk, r.per_op, "fp32", {})["latency_ms"] - hw.units[0].run_overhead_s * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calibration", type=Path, action="append", required=True,
                    help="host calibration JSON whose rates predict (repeat it to set calibrations side by side)")
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--max-mb", type=float, default=34.0, help="leave out chains whose op moves more (MB)")
    ap.add_argument("--measured", type=Path, help="predict this earlier --json's timings again instead of timing")
    ap.add_argument("--json", type=Path, help="write the rows here")
    args = ap.parse_args()
    caches = [json.loads(c.read_text()) for c in args.calibration]
    hws = [profile_from_cache(c) for c in caches]
    run_s = hws[0].units[0].run_overhead_s  # (the per-run cost of the first: one machine)
    ops, sizes = args.ops.split(","), [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as td:
        tmp = Path(td)
        models = {f"{op}-{n}": (build(op, n, tmp / f"{op}-{n}.onnx"), "all", 6) for op in ops for n in sizes
                  if op_bytes(op, n) <= args.max_mb * 1e6}
        predicted = [{k: predict_ms(p, hw, tmp) for k, (p, _, _) in models.items()} for hw in hws]
        if args.measured:
            old = json.loads(args.measured.read_text())["rows"]
            measured = {f"{r['op']}-{r['elements']}": r["measured_ms"] for r in old}
        else:
            measured = time_interleaved(models, rounds=args.rounds)
    l2 = l2_bytes()
    print(f"L2 {l2 / 2**20:.2f} MiB; " + "; ".join(f"calibration {i}: {c} (version {cache.get('version')})"
                                                 for i, (c, cache) in enumerate(zip(args.calibration, caches))))
    print(f"{'op':8} {'elements':>9} {'op MB':>7} {'meas ns/el':>10} "
          + " ".join(f"{f'pred{i} ns/el':>11} {f'meas/pred{i}':>11}" for i in range(len(hws))))
    rows: list[dict[str, Any]] = []
    for op in ops:
        for n in sizes:
            k, moved = f"{op}-{n}", op_bytes(op, n)
            if k not in measured or k not in predicted[0]:
                continue
            m = (measured[k] - run_s * 1e3) / R / n * 1e6
            ps = [pr[k] / R / n * 1e6 for pr in predicted]
            rows.append({"op": op, "elements": n, "op_bytes": moved, "measured_ns_per_element": m,
                         "predicted_ns_per_element": ps, "measured_ms": measured[k],
                         "predicted_ms": [pr[k] for pr in predicted]})
            print(f"{op:8} {n:>9} {moved / 1e6:>7.2f} {m:>10.3f} " + " ".join(f"{p:>11.3f} {m / p:>11.2f}" for p in ps))
    if args.json:
        args.json.write_text(json.dumps({"l2_bytes": l2, "calibration": [str(c) for c in args.calibration],
                                         "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
