"""Each option's change over fp32 on `ort-cpu/host`, measured against predicted by one or more calibrations in the
same run (issue 14: before / after a rule or calibration change, side by side on the same measurements).

Every ONNX file given is exported with each option (compiler/optimize/onnx_export.py, as an export job writes it);
the fp32 file and its exports are timed interleaved, round by round, in CPU time per run (1 intra-op thread, the
calibration's own timer and 5th percentile: simulator/calibration_timing.py), and each option's time over the fp32
file's is printed against the ratio the option table predicts from its rules alone (the sweep of ORT's compiled
graph without a measured profile) under each calibration given. Also the absolute prediction per calibration.

    PYTHONPATH=. nice -n 5 .venv/bin/python benchmarks/export_changes.py A.onnx ... --calibration before.json
        after.json [--trees /work/main .] [--options fp16 int8-dynamic int8-static] [--rounds 6] [--json rows.json]

The load average is printed at the start and end; measurements on a loaded machine move together (one round hits
every file alike), which the ratio divides out.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, os.fspath(ROOT))

TARGET = "ort-cpu/host"


def predicted_ms(model: Path, calibration: Path, options: list[str], workdir: Path) -> dict[str, float]:
    """{option: latency_ms} the option table predicts from its rules alone (no measured profile), with this
    checkout's code and the calibration cache as it is (never refitted here: a cache of another code version is
    read as written, so a before / after pair can be predicted by each tree's own code)."""
    from simulator.calibration import profile_from_cache
    from simulator.model import compile_for
    from simulator.sweep import sweep
    from simulator.totals import totals

    # Compiled as the worker compiles it: each task knows its source nodes, which the rules that read the source
    # need (fp16's shared Casts, static int8's depthwise channels). compile_for_host's graph has no such links.
    source, compiled, _ = compile_for(model, TARGET, workdir / model.stem)
    hw = profile_from_cache(json.loads(calibration.read_text()))
    r = sweep(compiled, TARGET, None, hardware=hw, source=source)
    return {o: float(totals(r.bulk, r.per_op, o, {})["latency_ms"]) for o in options}


def _predict_in(tree: Path, model: Path, calibration: Path, options: list[str], workdir: Path) -> dict[str, float]:
    """predicted_ms run by the code of another checkout `tree` (its benchmarks/export_changes.py, or this file's
    function imported with that tree first on the path)."""
    code = ("import sys, json; from pathlib import Path; sys.path.insert(0, sys.argv[1]); "
            "sys.path.insert(1, sys.argv[2]); import warnings; warnings.filterwarnings('ignore'); "
            "import logging; logging.disable(logging.WARNING); "
            "from export_changes import predicted_ms; sys.path.insert(0, sys.argv[1]); "
            "print(json.dumps(predicted_ms(Path(sys.argv[3]), Path(sys.argv[4]), sys.argv[5].split(','), "
            "Path(sys.argv[6]))))")
    out = subprocess.run([sys.executable, "-c", code, os.fspath(tree), os.fspath(Path(__file__).parent),
                          os.fspath(model), os.fspath(calibration), ",".join(options), os.fspath(workdir)],
                         capture_output=True, text=True, check=True, cwd=tree, env={**os.environ, "PYTHONPATH": os.fspath(tree)})
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="benchmarks/export_changes.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="+", type=Path)
    ap.add_argument("--calibration", nargs="+", type=Path, required=True, help="host calibration caches to compare")
    ap.add_argument("--trees", nargs="+", type=Path, default=None,
                    help="the checkout whose code predicts with each calibration (default: this one for all)")
    ap.add_argument("--options", nargs="+", default=["fp16", "int8-dynamic", "int8-static"])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    from compiler.optimize.onnx_export import export_onnx
    from simulator.calibration_timing import time_interleaved

    options = ["fp32", *[o for o in a.options if o != "fp32"]]
    print(f"load average at start: {os.getloadavg()[0]:.1f} ({os.cpu_count()} CPUs)", flush=True)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="export-changes-") as d:
        files: dict[str, tuple[Path, str, int]] = {}
        preds: dict[str, list[dict[str, float]]] = {}
        for i, m in enumerate(a.models):
            name = f"{i}:{m.parent.name}/{m.name}"
            trees = a.trees or [ROOT] * len(a.calibration)
            preds[name] = [_predict_in(tr.resolve(), m.resolve(), c.resolve(), options, Path(d)) for tr, c in zip(trees, a.calibration)]
            files[f"{name}|fp32"] = (m, "all", 3)
            for o in options[1:]:
                try:
                    files[f"{name}|{o}"] = (export_onnx(m, Path(d) / f"{i}.{o}.onnx", o).path, "all", 3)
                except Exception as e:  # noqa: BLE001 - reported, the rest measured
                    print(f"{name} {o}: export failed: {type(e).__name__}: {str(e)[:200]}", flush=True)
        t = time_interleaved(files, rounds=a.rounds, budget_s=0.3,
                             progress=lambda s: print(f"  {s} (load {os.getloadavg()[0]:.1f})", flush=True))
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    cal = " / ".join(c.stem for c in a.calibration)
    print(f"\n{'model':44s} {'option':14s} {'measured':>9s}  predicted change ({cal}), error")
    errs: dict[tuple[str, int], list[float]] = {}
    for name, ps in preds.items():
        m32 = t.get(f"{name}|fp32")
        for o in options:
            k = f"{name}|{o}"
            if k not in t or m32 is None:
                continue
            meas = t[k] / m32
            row = {"model": name, "option": o, "measured_ms": t[k], "measured_change": meas,
                   "predicted_ms": [p[o] for p in ps], "predicted_change": [p[o] / p["fp32"] for p in ps]}
            rows.append(row)
            cells = []
            for j, p in enumerate(ps):
                ch = p[o] / p["fp32"]
                e = (ch / meas - 1) * 100
                if o != "fp32":
                    errs.setdefault((o, j), []).append(e)
                cells.append(f"{ch:5.2f}x ({e:+4.0f}%) abs {p[o]:7.2f} ({(p[o] / t[k] - 1) * 100:+4.0f}%)")
            print(f"{name[:44]:44s} {o:14s} {t[k]:7.2f}ms {meas:5.2f}x  " + "  |  ".join(cells))
    print("\nchange over fp32, by option: median error, median |error|, within 10% (per calibration)")
    for o in options[1:]:
        cells = []
        for j, c in enumerate(a.calibration):
            e = errs.get((o, j), [])
            if e:
                cells.append(f"{c.stem}: {statistics.median(e):+.0f}% / {statistics.median(map(abs, e)):.0f}% / "
                             f"{sum(abs(x) <= 10 for x in e)}/{len(e)}")
        print(f"  {o:14s} " + "  |  ".join(cells))
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
