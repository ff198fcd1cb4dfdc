"""benchmarks/exports.py's rows in two phases, so the measurement lock is held for the timings only: `build` writes
and compiles every option's export of each corpus model (no timing: outside the lock), `measure` times the upload's
compiled file (the analysis' baseline profile, which the dialog's prediction reads) and each compiled export with
the same ORT profiler (under the lock: `flock /work/notes/measure.lock ... measure`). The rows it writes are
exports.py's, predictions left out: `exports.py --repredict rows.json --calibration C --json new.json` predicts
them with a checkout's code (the dialog's and the rules alone), `exports.py --report new.json` reads them.

  .venv/bin/python benchmarks/export_rows.py build --cache C --only ID ... --exporter ts --options fp32 fp16 \
      int8-dynamic int8-static --out DIR
  flock /work/notes/measure.lock .venv/bin/python benchmarks/export_rows.py measure DIR --runs 10 --json rows.json

A failed export is a row `failed` with its one sentence (the analysis' export check would mark it). `measure DIR --only
IDS --json rows.json`, one hold per slice of the models, adds to rows.json: the models it did not time keep their rows.

Beside each profile, the upload's compiled file and its exports are timed as calibration times its cases
(`fast_cpu_ms`, `baseline_fast_cpu_ms`: thread CPU time, 5th percentile of runs pooled over FAST_ROUNDS rounds with the
model's files interleaved round by round, sessions made anew halfway; simulator.calibration_timing.time_interleaved),
the figure the rules' prediction is made in. A profile's round spans about a second and meets whatever state the
machine is in then: on session 53's Zen 4 the same int8 file measured 25-45% apart in holds 12 minutes apart (GhostNet
7.92 -> 6.03 ms). `measure DIR --json rows.json --again` times every file of rows.json once more (a later hold) and
keeps, per file, the pass of least fast CPU time with that pass's profile, every pass's figure in
`fast_cpu_ms_passes` / `baseline_fast_cpu_ms_passes` (`merge_pass`; exports.py's report gives the passes' spread and
the first pass's figures beside the kept ones)."""

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
# fast_cpu_ms's rounds and each file's share of a round (as benchmarks/export_changes.py: 8 x 0.3 s per file)
FAST_ROUNDS = 8
FAST_BUDGET_S = 0.3
# A row's figures of one timing of its export file, and of its model's upload (the baseline): a later pass replaces
# them together (merge_pass).
MEASURED = ("size", "measured_ms", "measured_p90_ms", "measured_cpu_ms", "measured_own_ms", "load", "speed",
            "fast_cpu_ms", "timed_at")
BASELINE = ("baseline_ms", "baseline_cpu_ms", "baseline_load", "baseline_cpu_time", "baseline_profile",
            "baseline_fast_cpu_ms", "baseline_timed_at")


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


def measure_model(rec: dict[str, Any], runs: int, warmup: int, fast_rounds: bool = True) -> list[dict[str, Any]]:
    """The upload's baseline profile and each export's, as exports.py rows, with every file's fast CPU time
    (`fast_cpu_ms`, unless `fast_rounds` is False)."""
    from compiler.backends import for_target
    from compiler.profile import ProfileSettings
    from simulator.measured import own_whole_ms

    settings = ProfileSettings(warmup=warmup, runs=runs, threads=1, timeout_s=600, input_shapes=rec["inputs"],
                               input_values=rec["values"], input_ranges=rec["ranges"])
    backend = for_target(TARGET)
    base = backend.profile(Path(rec["compiled"]), settings)
    files = {"": Path(rec["compiled"])} | {o: Path(v["compiled"]) for o, v in rec["options"].items()
                                           if v["status"] == "exported"}
    fast = fast_cpu_ms(files, rec) if fast_rounds else {}
    now = time.strftime("%H:%M:%S", time.gmtime())
    row0 = {"id": rec["id"], "exporter": rec["exporter"], "family": rec.get("family", ""), "path": rec["path"],
            "inputs": rec["inputs"], "baseline_ms": base.latency_ms, "baseline_cpu_ms": base.noise.get("cpu_latency_ms"),
            "baseline_load": base.noise.get("load_per_cpu"), "baseline_cpu_time": own_whole_ms(base) != base.latency_ms,
            "baseline_profile": base.to_json(), "baseline_fast_cpu_ms": fast.get(""), "baseline_timed_at": now,
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
                     "speed": p.noise.get("speed"), "fast_cpu_ms": fast.get(option), "timed_at": now})
    return rows


def fast_cpu_ms(files: dict[str, Path], rec: dict[str, Any], rounds: int = FAST_ROUNDS,
                budget_s: float = FAST_BUDGET_S) -> dict[str, float]:
    """{key: ms} of compiled `files` of one model (module docstring), fed the model's inputs (`rec`'s shapes, values
    and ranges), each run as its profile runs it (ORT's optimizations off: the file is ORT's optimized one)."""
    from compiler.backends.ort import inputs_graph
    from compiler.inputs import generate_inputs
    from simulator.calibration_timing import session, time_interleaved

    feeds = {}
    for k, f in files.items():
        sess = session(f, "disable")
        feeds[k] = generate_inputs(inputs_graph(sess, os.fspath(f)), rec["inputs"], rec["values"],
                                   ranges=rec.get("ranges"))
        del sess
    return time_interleaved({k: (f, "disable", 6) for k, f in files.items()}, rounds=rounds, budget_s=budget_s,
                            inputs=feeds)


def _faster(old: dict[str, Any], new: dict[str, Any], key: str) -> bool:
    """Whether `new`'s `key` figure is below `old`'s (a pass without the figure never is; one with it beats one
    without)."""
    if new.get(key) is None:
        return False
    return old.get(key) is None or new[key] < old[key]


def merge_pass(rows: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`rows` with a later pass's rows `new` of the same files merged in: per export file (id, exporter, option) the
    timing of least `fast_cpu_ms` (its MEASURED fields), per model the baseline timing of least `baseline_fast_cpu_ms`
    (its BASELINE fields, the dialog's profile with them), every pass's figures in `fast_cpu_ms_passes` and
    `baseline_fast_cpu_ms_passes` (the first is what a single pass reports). A file not yet in `rows` is added; a
    pass that did not time a file (failed, no figure) leaves it as it was, its figure not counted."""
    base: dict[tuple[str, str], dict[str, Any]] = {}
    for r in new:
        k = (r["id"], r["exporter"])
        if r.get("baseline_fast_cpu_ms") is not None:
            base.setdefault(k, r)
    by_file = {(r["id"], r["exporter"], r["option"]): r for r in new}
    out, seen = [], set()
    for r in rows:
        k = (r["id"], r["exporter"], r["option"])
        seen.add(k)
        r = dict(r)
        b = base.get(k[:2])
        if b is not None:
            r["baseline_fast_cpu_ms_passes"] = [*(r.get("baseline_fast_cpu_ms_passes")
                                                  or [r.get("baseline_fast_cpu_ms")]), b["baseline_fast_cpu_ms"]]
            if _faster(r, b, "baseline_fast_cpu_ms"):
                r.update({f: b.get(f) for f in BASELINE})
        n = by_file.get(k)
        if n is not None and n.get("status") == "exported" and n.get("fast_cpu_ms") is not None:
            if r.get("status") == "exported":
                r["fast_cpu_ms_passes"] = [*(r.get("fast_cpu_ms_passes") or [r.get("fast_cpu_ms")]), n["fast_cpu_ms"]]
                if _faster(r, n, "fast_cpu_ms"):
                    r.update({f: n.get(f) for f in MEASURED})
            else:  # failed before, timed now
                r = {**n, "baseline_fast_cpu_ms_passes": r.get("baseline_fast_cpu_ms_passes")}
        out.append(r)
    return out + [r for k, r in by_file.items() if k not in seen]


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


def first_pass(earlier: list[dict[str, Any]], only: list[str] | None, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows a first pass writes: its own, after the earlier rows of the models it was not asked to time (`--only`:
    one hold per slice of models into one file; session 56 lost two holds' rows when each slice replaced the file)."""
    return [r for r in earlier if only and r["id"] not in only] + rows


def _measure(args: argparse.Namespace) -> None:
    index = json.loads((Path(args.dir) / "models.json").read_text())
    out = Path(args.json)
    earlier: list[dict[str, Any]] = json.loads(out.read_text())["rows"] if out.is_file() else []
    kept = earlier if args.again else []
    rows: list[dict[str, Any]] = []
    for key, rec in index.items():
        if args.only and rec["id"] not in args.only:
            continue
        try:
            got = measure_model(rec, args.runs, args.warmup, fast_rounds=not args.no_fast)
        except Exception as e:  # noqa: BLE001
            print(f"{key}: {type(e).__name__}: {' '.join(str(e).split())[:200]}", flush=True)
            continue
        rows += got
        # kept up to date: a pass stopped midway leaves the kept rows merged with the files it timed
        out.write_text(json.dumps({"rows": merge_pass(kept, rows) if kept else first_pass(earlier, args.only, rows)}))
        fast = next((r.get("baseline_fast_cpu_ms") for r in got), None)
        print(key, f"base {fast or 0:.2f}", " ".join(f"{r['option']} {r.get('measured_cpu_ms') or 0:.2f} / "
                                                     f"{r.get('fast_cpu_ms') or 0:.2f}" for r in got), flush=True)


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
    m.add_argument("--again", action="store_true",
                   help="time the files once more and merge this pass into --json's rows (merge_pass)")
    m.add_argument("--no-fast", action="store_true", help="profiles only (no fast_cpu_ms)")
    args = ap.parse_args()
    _build(args) if args.cmd == "build" else _measure(args)


if __name__ == "__main__":
    main()
