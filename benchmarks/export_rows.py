"""benchmarks/exports.py's rows in two phases, so the measurement lock is held for the timings only: `build` writes
and compiles every option's export of each corpus model (no timing: outside the lock), `measure` times the upload's
compiled file (the analysis' baseline profile, which the dialog's prediction reads) and each compiled export with
the same ORT profiler (under the lock: `flock /work/notes/measure.lock ... measure`). The rows it writes are
exports.py's, predictions left out: `exports.py --repredict rows.json --calibration C --json new.json` predicts
them with a checkout's code (the dialog's and the rules alone), `exports.py --report new.json` reads them.

  .venv/bin/python benchmarks/export_rows.py build --cache C --only ID ... --exporter ts --options fp32 fp16 \
      int8-dynamic int8-static --out DIR
  flock /work/notes/measure.lock .venv/bin/python benchmarks/export_rows.py measure DIR --runs 10 --json rows.json

A failed export is a row `failed` with its one sentence (the analysis' export check would mark it)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, os.fspath(ROOT))

TARGET = "ort-cpu/host"


def build_model(path: Path, inputs: dict[str, list[int]], options: list[str], out: Path) -> dict[str, Any]:
    """Compile the upload and write + compile each option's export into `out`; the model's record."""
    from compiler import frontends
    from compiler.backends import compile_for_target
    from compiler.backends.ort import AS_WRITTEN
    from compiler.frontends import onnx as onnx_frontend
    from compiler.input_plan import concrete_shapes, fill_values, value_ranges
    from compiler.optimize.onnx_export import export_onnx
    from compiler.prepare import prepare
    from compiler.vocabulary.options import OptionError

    (out / "upload").mkdir(parents=True, exist_ok=True)
    source = frontends.load(path)
    prep = prepare(path, source, out / "upload", [TARGET], inputs, {}, reload=lambda: frontends.load(path))
    shapes, values = concrete_shapes(prep.plans), fill_values(prep.plans)
    rec: dict[str, Any] = {"path": os.fspath(path), "inputs": shapes, "values": values,
                           "ranges": value_ranges(prep.plans), "compiled": os.fspath(prep.compiled[0][1]),
                           "options": {}}
    for option in options:
        f = out / f"{option}.onnx"
        try:
            e = export_onnx(path, f, option, {}, input_shapes=shapes, input_values=values)
        except OptionError as err:
            rec["options"][option] = {"status": "failed", "error": str(err)}
            continue
        (out / option).mkdir(exist_ok=True)
        g = onnx_frontend.load(f)
        g.metadata[AS_WRITTEN] = "true"  # as compiler.optimize.export.measure_export compiles it
        _, compiled = compile_for_target(f, TARGET, out / option, g)
        rec["options"][option] = {"status": "exported", "size": e.size_bytes, "compiled": os.fspath(compiled or f)}
    return rec


def measure_model(rec: dict[str, Any], runs: int, warmup: int) -> list[dict[str, Any]]:
    """The upload's baseline profile and each export's, as exports.py rows."""
    from compiler.backends import for_target
    from compiler.profile import ProfileSettings
    from simulator.measured import own_whole_ms

    settings = ProfileSettings(warmup=warmup, runs=runs, threads=1, timeout_s=600, input_shapes=rec["inputs"],
                               input_values=rec["values"], input_ranges=rec["ranges"])
    backend = for_target(TARGET)
    base = backend.profile(Path(rec["compiled"]), settings)
    row0 = {"id": rec["id"], "exporter": rec["exporter"], "family": rec.get("family", ""), "path": rec["path"],
            "inputs": rec["inputs"], "baseline_ms": base.latency_ms, "baseline_cpu_ms": base.noise.get("cpu_latency_ms"),
            "baseline_load": base.noise.get("load_per_cpu"), "baseline_cpu_time": own_whole_ms(base) != base.latency_ms,
            "baseline_profile": base.to_json(),
            # placeholders: exports.py --repredict fills the predictions
            "predicted_ms": 0.0, "predicted_unmeasured_ms": 0.0, "predicted_change": 0.0, "predicted_size": 0.0}
    rows = []
    for option, o in rec["options"].items():
        if o["status"] != "exported":
            rows.append({**row0, "option": option, "status": o["status"], "error": o["error"]})
            continue
        p = backend.profile(Path(o["compiled"]), settings)
        rows.append({**row0, "option": option, "status": "exported", "size": o["size"], "measured_ms": p.latency_ms,
                     "measured_p90_ms": p.latency_p90_ms, "measured_cpu_ms": p.noise.get("cpu_latency_ms"),
                     "measured_own_ms": own_whole_ms(p), "load": p.noise.get("load_per_cpu"),
                     # the CPU's speed around this export's timing (compiler.speed_probe), beside the baseline's
                     "speed": p.noise.get("speed")})
    return rows


def _build(args: argparse.Namespace) -> None:
    from corpus import cache
    from corpus.models import BY_ID

    out = Path(args.out)
    index_path = out / "models.json"
    index = json.loads(index_path.read_text()) if index_path.is_file() else {}
    for mid in args.only:
        for x in args.exporter:
            rec = cache.load(Path(args.cache), mid, x)
            if rec is None or rec.status != "built":
                print(f"{mid} {x}: not built", flush=True)
                continue
            t0 = time.perf_counter()
            key = f"{mid}:{x}"
            try:
                m = build_model(Path(args.cache) / rec.path, rec.inputs, args.options,
                                out / key.replace("/", "__").replace(":", "."))
            except Exception as e:  # noqa: BLE001 - the model is reported and left out
                print(f"{key}: {type(e).__name__}: {' '.join(str(e).split())[:200]}", flush=True)
                continue
            e = BY_ID.get(mid)
            index[key] = {**m, "id": mid, "exporter": x, "family": e.family if e is not None else x}
            index_path.write_text(json.dumps(index, indent=1))
            print(f"{key}: " + ", ".join(f"{o} {v['status']}" for o, v in m["options"].items())
                  + f" ({time.perf_counter() - t0:.0f} s)", flush=True)


def _measure(args: argparse.Namespace) -> None:
    index = json.loads((Path(args.dir) / "models.json").read_text())
    rows: list[dict[str, Any]] = []
    for key, rec in index.items():
        if args.only and rec["id"] not in args.only:
            continue
        try:
            rows += measure_model(rec, args.runs, args.warmup)
        except Exception as e:  # noqa: BLE001
            print(f"{key}: {type(e).__name__}: {' '.join(str(e).split())[:200]}", flush=True)
            continue
        Path(args.json).write_text(json.dumps({"rows": rows}))
        print(key, " ".join(f"{r['option']} {r.get('measured_cpu_ms') or 0:.2f}" for r in rows if r["id"] == rec["id"]
                            and r["exporter"] == rec["exporter"]), flush=True)


def main() -> None:
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--cache", required=True)
    b.add_argument("--only", nargs="+", required=True)
    b.add_argument("--exporter", nargs="+", default=["ts"])
    b.add_argument("--options", nargs="+", default=["fp32", "fp16", "int8-dynamic", "int8-static"])
    b.add_argument("--out", required=True)
    m = sub.add_parser("measure")
    m.add_argument("dir")
    m.add_argument("--only", nargs="*")
    m.add_argument("--runs", type=int, default=10)
    m.add_argument("--warmup", type=int, default=2)
    m.add_argument("--json", required=True)
    args = ap.parse_args()
    _build(args) if args.cmd == "build" else _measure(args)


if __name__ == "__main__":
    main()
