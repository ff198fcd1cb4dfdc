"""Where a LiteRT option's predicted latency goes wrong, per operator: one `.tflite`, each option's exported file
profiled with LiteRT's own op profiler beside the prediction of that option on the source (issue 14;
benchmarks/litert_exports.py gives the whole-model figures).

The exporter (ai-edge-quantizer) keeps the source's operators in order and adds QUANTIZE / DEQUANTIZE operators
at the boundaries of what it quantizes: each exported operator is matched to the source operator of the same type
at the same position among the operators that are not added. An added operator is listed by type with its time
(`added`), and charged to the source operator it feeds (the column `mO+`), which is where the prediction counts
it. Per operator: predicted (pO) and measured (mO) milliseconds, the kernels LiteRT ran; sums per (op type, kernel).

    nice -n 10 .venv/bin/python benchmarks/litert_export_ops.py MODEL.tflite [--options int8-dynamic int8-static]
        [--runs 20] [--calibration host-cpu.json] [--json out.json] [--top 15] [--keep DIR]

`--keep DIR`: profile the files benchmarks/litert_exports.py wrote there with the same `--keep DIR` (exported once
outside the measurement lock), predicted again with this code and `--calibration`, instead of exporting anew.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, os.fspath(ROOT))

TARGET = "litert-cpu/host"
_ADDED = frozenset({"QUANTIZE", "DEQUANTIZE"})


def _match(src_types: list[str], out_types: list[str]) -> list[int | None]:
    """For each exported operator, the index of its source operator (None: added by the exporter)."""
    out: list[int | None] = []
    j = 0
    for t in out_types:
        if t in _ADDED and (j >= len(src_types) or src_types[j] != t):
            out.append(None)
            continue
        while j < len(src_types) and src_types[j] != t:
            j += 1  # a source operator the export dropped (a folded DEQUANTIZE of fp16 weights)
        out.append(j if j < len(src_types) else None)
        j += 1
    return out


def diagnose(path: Path, option: str, calibration: Path | None, runs: int, workdir: Path,
             keep: Path | None = None) -> dict[str, Any]:
    from compiler.backends.litert import profile
    from compiler.frontends import tflite
    from compiler.profile import ProfileSettings
    from simulator.predict import optimize_model, predict_model

    kept = keep / f"{path.parent.name}-fp32-{option}" / "out.tflite" if keep is not None else None
    if kept is not None and kept.is_file():  # written by benchmarks/litert_exports.py --keep
        out, r = kept, None
    else:
        out = workdir / f"{option}.tflite"
        r = optimize_model(path, out, TARGET, option, {}, workdir / option, calibration)
    rows = r["prediction"]["ops"] if r is not None and "ops" in r.get("prediction", {}) else None
    predicted = r["predicted"]["latency_ms"] if r is not None else None
    if rows is None:
        res = predict_model(path, TARGET, option, {}, workdir / f"{option}-p", calibration)[0]
        rows, predicted = res["ops"], res["totals"]["latency_ms"]
    g = tflite.load(out)
    prof = profile(out, ProfileSettings(runs=runs, warmup=3, threads=1))
    mo = {k: t.median_ms * t.calls for k, t in prof.tasks.items()}
    match = _match([x["type"] for x in rows], [n.op_type for n in g.nodes])
    per: list[dict[str, Any]] = [{"id": x["id"], "type": x["type"], "pO": float(x["latency_ms"]), "mO": 0.0,
                                  "added": 0.0, "kernels": []} for x in rows]
    added: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    readers: dict[str, list[int]] = defaultdict(list)
    for k, n in enumerate(g.nodes):
        for v in n.inputs:
            readers[v].append(k)
    for k, n in enumerate(g.nodes):
        ms = mo.get(n.id, 0.0)
        i = match[k]
        if i is None:
            added[n.op_type][0] += 1
            added[n.op_type][1] += ms
            # charged to the source operator that reads its output (a QUANTIZE before a static int8 op)
            nxt = next((match[r] for r in readers.get(n.outputs[0], []) if match[r] is not None), None) if n.outputs else None
            if nxt is not None:
                per[nxt]["added"] += ms
            continue
        per[i]["mO"] += ms
        per[i]["kernels"] = prof.kernels.get(n.id, [])
    by: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0.0, 0.0, 0.0])
    for x in per:
        key = (x["type"], ", ".join(sorted(set(x["kernels"])))[:60])
        b = by[key]
        b[0] += 1
        b[1] += x["pO"]
        b[2] += x["mO"]
        b[3] += x["mO"] + x["added"]
    return {"model": os.fspath(path), "option": option, "predicted_ms": predicted,
            "profiled_ms": prof.latency_ms, "profiled_sum_ms": sum(mo.values()),
            "load": os.getloadavg()[0], "ops": per, "added": {k: v for k, v in added.items()},
            "by": [[*k, *v] for k, v in sorted(by.items(), key=lambda kv: -max(kv[1][1], kv[1][3]))]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="benchmarks/litert_export_ops.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("model", type=Path)
    ap.add_argument("--options", nargs="+", default=["fp32", "int8-dynamic", "int8-static"])
    ap.add_argument("--calibration", type=Path, default=None)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--json", default=None)
    ap.add_argument("--keep", type=Path, default=None, help="the --keep DIR of benchmarks/litert_exports.py")
    a = ap.parse_args(argv)
    results = []
    with tempfile.TemporaryDirectory(prefix="edgescope-litert-ops-") as tmp:
        for option in a.options:
            d = diagnose(a.model.resolve(), option, a.calibration, a.runs, Path(tmp), a.keep)
            results.append(d)
            print(f"\n## {a.model.parent.name} {option}: predicted {d['predicted_ms']:.2f} ms, profiled "
                  f"{d['profiled_ms']:.2f} ms (sum of ops {d['profiled_sum_ms']:.2f}), load {d['load']:.1f}")
            print("| op | kernels | n | predicted ms | measured ms | measured + added before it | ratio |")
            print("|---|---|---|---|---|---|---|")
            for t, kern, n, p, m, mp in d["by"]:
                print(f"| {t} | {kern} | {n} | {p:.3f} | {m:.3f} | {mp:.3f} | {(mp / p if p else float('nan')):.2f} |")
            print("added by the exporter: " + ", ".join(f"{k} x{int(v[0])} {v[1]:.3f} ms" for k, v in d["added"].items()))
            worst = sorted(d["ops"], key=lambda x: -abs(x["mO"] + x["added"] - x["pO"]))[:a.top]
            print("| op | kernels | predicted ms | measured (+ added) ms |")
            print("|---|---|---|---|")
            for x in worst:
                print(f"| {x['id']} | {', '.join(x['kernels'])[:60]} | {x['pO']:.3f} | {x['mO']:.3f} (+{x['added']:.3f}) |")
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
