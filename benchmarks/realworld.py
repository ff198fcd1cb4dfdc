"""The real-world conformance corpus through the real pipeline: analysed / clear error / crashed, host fp32
predicted vs measured, tasks of unknown work, predicted vs file size, wall time per model.

Every built corpus file (`python -m corpus.build [--wheels]` first; see README "Real-world corpus") is
analysed as `edgescope analyze` does (`worker.pipeline.analyze`, on its host target: `ort-cpu/host`, or
`litert-cpu/host` for `.tflite`; Core ML files, which do not run on Linux, predicted on `coreml/apple-a17`),
each in a child process with a time limit. Dynamic exports and real files
with symbolic dims get the shapes their users feed (`--input`, as a user would pass them). The prediction
is the simulator's fp32 total on that target from the compiled graph WITHOUT the measured profile (as
`edgescope predict` and benchmarks/fidelity.py predict), against the measured whole-model median.

Run: `nice -n 10 .venv/bin/python benchmarks/realworld.py [--slice test] [--family F ...] [--only ID ...]
[--exporter X ...] [--no-real] [--no-export-check] [--json rows.json] [--repredict rows.json]`. Prints figures;
asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, os.fspath(ROOT))

from compiler.speed_probe import DRIFT_LIMIT  # noqa: E402  (a light module: no runtime imported)

DEFAULT_TIMEOUT_S = 1200.0
MIN_MS = 1.0  # the accuracy goal counts models of 1 ms or more


def _child(spec: dict[str, Any], out: Path) -> int:
    t0 = time.perf_counter()
    try:
        from corpus.check import analyse
        from simulator.calibration import stale_reason

        calibration = Path(spec["calibration"]) if spec["calibration"] else None
        # The parent made the calibration current before the first row: stale now means this checkout's code changed
        # mid-run (a landing), and loading it would time the machine again and replace the file in place.
        if calibration is not None and (why := stale_reason(calibration)) is not None:
            row = {"status": "error", "error": f"calibration {calibration} went stale during the run ({why}): "
                                                 "not timed again here"}
        else:
            row = analyse(Path(spec["path"]), spec["inputs"], calibration, spec["runs"], spec["warmup"],
                          measure_cpu=spec.get("measure_cpu", True), check_exports=spec.get("check_exports", True),
                          keep_probes=spec.get("keep_probes", True))
    except BaseException as e:  # noqa: BLE001  (a crash: the traceback is the finding)
        row = {"status": "crashed", "error": f"{type(e).__name__}: {' '.join(str(e).split())[:400]}",
               "traceback": traceback.format_exc()[-4000:]}
    row["wall_s"] = round(time.perf_counter() - t0, 1)
    out.write_text(json.dumps(row))
    return 0


def run_one(item: dict[str, Any], calibration: Path | None, runs: int, warmup: int, timeout_s: float,
            **flags: bool) -> dict[str, Any]:
    """One model in a child process; `flags`: analyse's measure_cpu, check_exports and keep_probes."""
    spec = {"path": item["path"], "inputs": item["inputs"], "calibration": calibration and os.fspath(calibration),
            "runs": runs,
            "warmup": warmup, **flags}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "row.json"
        cmd = [sys.executable, os.fspath(Path(__file__).resolve()), "--child", json.dumps(spec), "--out", os.fspath(out)]
        try:
            proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout_s)
            if out.is_file():
                row = json.loads(out.read_text())
            else:
                tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
                row = {"status": "crashed", "error": f"child died (exit {proc.returncode})", "traceback": tail}
        except subprocess.TimeoutExpired:
            row = {"status": "crashed", "error": f"timed out after {timeout_s:.0f} s"}
    row["wall_s"] = round(time.perf_counter() - t0, 1)
    return {**{k: v for k, v in item.items() if k != "path"}, **row}


def corpus_items(root: Path, pairs: Iterable[tuple[Any, str]], real: Iterable[Any]) -> tuple[list[dict[str, Any]],
                                                                                           list[dict[str, Any]]]:
    """(items to analyse, exports that are not there: failed or not built) from the cache records."""
    from corpus import cache
    from corpus.builders import describe

    items, missing = [], []
    for e, x in pairs:
        rec = cache.load(root, e.id, x)
        if rec is None or rec.key != cache.key(describe(e), x):
            missing.append({"id": e.id, "exporter": x, "family": e.family, "reason": "not built (python -m corpus.build)"})
        elif rec.status != "built":
            missing.append({"id": e.id, "exporter": x, "family": e.family, "reason": rec.reason})
        else:
            items.append({"id": e.id, "exporter": x, "family": e.family, "path": os.fspath(root / rec.path),
                          "inputs": rec.inputs})
    for r in real:
        rec = cache.load(root, r.id, "wheel")
        if rec is None or rec.status != "built":
            missing.append({"id": r.id, "exporter": "wheel", "family": r.family,
                            "reason": rec.reason if rec else "not fetched (python -m corpus.build --wheels)"})
        else:
            items.append({"id": r.id, "exporter": "wheel", "family": r.family, "path": os.fspath(root / rec.path),
                          "inputs": dict(r.inputs)})
    return items, missing


def _err(row: dict[str, Any], measure: str = "measured_ms") -> float | None:
    m, p = row.get(measure), row.get("predicted_ms")
    return (p / m - 1) * 100 if m and p is not None else None


def _errors(rows: list[dict[str, Any]], measure: str) -> list[float]:
    return [abs(e) for r in rows if (e := _err(r, measure)) is not None and r[measure] >= MIN_MS]


def _accuracy(rows: list[dict[str, Any]], measure: str = "measured_ms") -> str:
    errs = _errors(rows, measure)
    if not errs:
        return "no model of 1 ms or more"
    within = sum(e <= 10 for e in errs)
    return (f"{len(errs):3d} models >= 1 ms: median abs error {statistics.median(errs):6.1f}%, within ±10% "
            f"{within}/{len(errs)} ({within / len(errs) * 100:3.0f}%)")


# The speed probe record of each measure (compiler.speed_probe.SpeedCheck.to_json): the profile's round for the
# pipeline's median, the probes around the thread CPU timing (corpus.check.probed_cpu_ms) for `cpu_ms`.
_SPEED_OF = {"measured_ms": "speed", "cpu_ms": "cpu_speed"}


def _speed(row: dict[str, Any], measure: str) -> dict[str, Any] | None:
    return row.get(_SPEED_OF.get(measure, "speed"))


def speed_ratio(row: dict[str, Any], measure: str = "measured_ms") -> float | None:
    """The CPU's speed while `measure` was timed over its speed when the calibration was timed (compiler.speed_probe);
    None for rows without a probe (measured before rows recorded one, or no calibration figure)."""
    return (_speed(row, measure) or {}).get("ratio")


def drifted(row: dict[str, Any], measure: str = "measured_ms") -> bool | None:
    """Whether the speed probe around `measure` drifted (from the calibration's, or during the timing); None: no
    probe."""
    speed = _speed(row, measure)
    return None if not speed else bool(speed.get("drifted"))


def _ratio(row: dict[str, Any], measure: str) -> str:
    r = speed_ratio(row, measure)
    return f"{r:.2f}x" + ("!" if drifted(row, measure) else " ") if r is not None else "-"


def keep_steadier(rows: list[dict[str, Any]], row: dict[str, Any]) -> list[dict[str, Any]]:
    """`rows` with `row` added, or in place of an earlier row of the same model and exporter where `row`'s CPU time
    was measured nearer the calibration's speed (a drifted row measured again: the steadier of the two stays)."""
    key = (row["id"], row["exporter"])
    old = next((r for r in rows if (r["id"], r["exporter"]) == key), None)
    if old is None:
        return [*rows, row]

    def off(r: dict[str, Any]) -> float:
        ratio = speed_ratio(r, "cpu_ms")
        return abs(math.log(ratio)) if ratio and r.get("status") == "analysed" else math.inf

    return [row if r is old and off(row) <= off(old) else r for r in rows]


def keep_faster(rows: list[dict[str, Any]], row: dict[str, Any]) -> list[dict[str, Any]]:
    """`rows` with `row` merged in, for `--again`: a model timed once more keeps whichever pass ran in less thread CPU
    time, and every pass's figure in `cpu_ms_passes` (the first is what a single pass reports). Calibration's figures
    are each case's 5th percentile over rounds spread across minutes (the machine's fast state); a row's rounds span
    3 s and meet whatever state the machine is in then, so the faster of passes far apart is the comparable figure. A
    failed pass keeps the other."""
    key = (row["id"], row["exporter"])
    old = next((r for r in rows if (r["id"], r["exporter"]) == key), None)
    if old is None:
        return [*rows, row]
    if row.get("status") != "analysed" or row.get("cpu_ms") is None:
        return rows
    if old.get("status") != "analysed" or old.get("cpu_ms") is None:
        return [row if r is old else r for r in rows]
    passes = [*(old.get("cpu_ms_passes") or [old["cpu_ms"]]), row["cpu_ms"]]
    best = row if row["cpu_ms"] < old["cpu_ms"] else old
    return [{**best, "cpu_ms_passes": passes} if r is old else r for r in rows]


def first_pass(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`rows` with the thread CPU time of their first pass (`keep_faster`), as a single pass would have reported."""
    return [{**r, "cpu_ms": r["cpu_ms_passes"][0]} if r.get("cpu_ms_passes") else r for r in rows]


def within_share(rows: list[dict[str, Any]], measure: str) -> tuple[int, int]:
    """(models within ±10%, models of MIN_MS or more) of `rows` against `measure`."""
    errs = _errors(rows, measure)
    return sum(e <= 10 for e in errs), len(errs)


def drift_summary(rows: list[dict[str, Any]], measure: str = "cpu_ms") -> str:
    """How many rows' probes drifted, and the share within ±10% over all rows and over those whose probe did not
    drift: on a machine whose speed drifts, the steady rows still say how good the rates are."""
    probed = [r for r in rows if drifted(r, measure) is not None]
    steady = [r for r in probed if not drifted(r, measure)]

    def share(rs: list[dict[str, Any]]) -> str:
        k, n = within_share(rs, measure)
        return f"{k}/{n} ({k / n * 100:.0f}%)" if n else "-"

    return (f"speed probe drifted (beyond {DRIFT_LIMIT:.2f}x) in {len(probed) - len(steady)}/{len(probed)} rows "
            f"with a probe ({len(rows) - len(probed)} without); within ±10% vs {measure}: all {share(rows)}, "
            f"rows without drift {share(steady)}")


def at_calibration_speed(rows: list[dict[str, Any]], measure: str = "cpu_ms") -> list[dict[str, Any]]:
    """`rows` whose `measure` has a speed probe, with it scaled by the probe's ratio: the time at the calibration's
    speed. A diagnostic for a machine whose speed moves for minutes at a time (another tenant on the core): the rules'
    own error, as far as a GEMM probe's ratio stands for every kernel's (memory-bound work scales less)."""
    return [{**r, measure: r[measure] * ratio} for r in rows
            if r.get(measure) and (ratio := speed_ratio(r, measure))]


def _ran(row: dict[str, Any]) -> float:
    """Bytes of the file the target ran (corpus.check: a .pt2's converted ONNX file); rows before it: the upload's."""
    return float(row.get("runs_bytes") or row.get("file_bytes") or 0)


def _pct(x: float | None) -> str:
    return f"{x:+6.1f}%" if x is not None else "-"


def _ms(x: float | None) -> str:
    return f"{x:9.2f}" if x else f"{'-':>9s}"


def report(rows: list[dict[str, Any]], missing: list[dict[str, Any]]) -> None:
    print(f"\n{'id':46s} {'exporter':11s} {'status':8s} {'meas ms':>9s} {'cpu ms':>9s} {'pred ms':>9s} "
          f"{'err/meas':>8s} {'err/cpu':>8s} {'spd/meas':>8s} {'spd/cpu':>7s} {'unk':>4s} {'zero':>4s} {'size err':>8s} "
          f"{'wall s':>6s}")
    for r in rows:
        size = (r["predicted_size"] / _ran(r) - 1) * 100 if r.get("predicted_size") and _ran(r) else None
        print(f"{r['id']:46s} {r['exporter']:11s} {r['status']:8s} {_ms(r.get('measured_ms'))} {_ms(r.get('cpu_ms'))} "
              f"{_ms(r.get('predicted_ms'))} {_pct(_err(r)):>8s} {_pct(_err(r, 'cpu_ms')):>8s} "
              f"{_ratio(r, 'measured_ms'):>8s} {_ratio(r, 'cpu_ms'):>7s} "
              f"{r.get('unknown_tasks', '-'):>4} {r.get('zero_tasks', '-'):>4} {_pct(size):>8s} {r['wall_s']:6.1f}"
              + (f"  {r['error'][:150]}" if r["status"] != "analysed" else ""))
    by_status: dict[str, int] = defaultdict(int)
    for r in rows:
        by_status[r["status"]] += 1
    failed = [m for m in missing if not m["reason"].startswith("not built")]
    print(f"\nanalysed {by_status['analysed']}/{len(rows)}, clear error {by_status['error']}, crashed "
          f"{by_status['crashed']}; exports that failed: {len(failed)}, not built: {len(missing) - len(failed)}")
    ok = [r for r in rows if r["status"] == "analysed"]
    for measure, what in (("measured_ms", "the pipeline's measured median (wall clock)"),
                          ("cpu_ms", "thread CPU time, 5th percentile (as calibration times)")):
        print(f"host fp32 predicted vs {what}: {_accuracy(ok, measure)}")
        for key in ("family", "exporter", "target"):
            groups = defaultdict(list)
            for r in ok:
                groups[r[key]].append(r)
            for g, rs in sorted(groups.items()):
                print(f"  {key:8s} {g:18s} {_accuracy(rs, measure)}")
    for measure in ("measured_ms", "cpu_ms"):
        print(drift_summary(ok, measure))
    if n := sum(len(r.get("cpu_ms_passes") or ()) > 1 for r in ok):
        print(f"{n} rows timed in more than one pass (--again), the faster kept; their first pass alone: "
              f"{_accuracy(first_pass(ok), 'cpu_ms')}")
    print(f"host fp32 predicted vs thread CPU time x its speed probe's ratio (at the calibration's speed; a "
          f"diagnostic): {_accuracy(at_calibration_speed(ok), 'cpu_ms')}")
    for r in ok:  # a QDQ upload: the host measured its float graph; the file as written, timed apart
        if r.get("uploaded_predicted_ms") is not None:
            up = {"predicted_ms": r["uploaded_predicted_ms"], "cpu_ms": r.get("uploaded_cpu_ms")}
            print(f"QDQ upload as written ({r['uploaded_preset']}): {r['id']} {r['exporter']} predicted "
                  f"{_ms(r['uploaded_predicted_ms'])} ms, CPU {_ms(r.get('uploaded_cpu_ms'))} ms, {_pct(_err(up, 'cpu_ms'))}")
    unk = [r for r in ok if r.get("unknown_tasks")]
    print(f"tasks with unknown work: {sum(r['unknown_tasks'] for r in ok)} tasks in {len(unk)}/{len(ok)} models; "
          f"share of time in them: median {statistics.median([r['unknown_share'] for r in unk]) * 100 if unk else 0:.1f}%"
          f", max {max([r['unknown_share'] for r in unk], default=0) * 100:.1f}%")
    zero = [r for r in ok if r.get("zero_tasks")]
    print(f"tasks silently at zero work: {sum(r['zero_tasks'] for r in ok)} in {len(zero)}/{len(ok)} models")
    sizes = [abs(r["predicted_size"] / _ran(r) - 1) * 100 for r in ok if _ran(r)]
    if sizes:
        print(f"predicted size vs file: median abs error {statistics.median(sizes):.2f}%, within 5% "
              f"{sum(s <= 5 for s in sizes)}/{len(sizes)}")
    walls = [r["wall_s"] for r in rows]
    if walls:
        print(f"wall time per model: median {statistics.median(walls):.1f} s, max {max(walls):.1f} s, "
              f"total {sum(walls) / 60:.1f} min")
    if failed:
        print("\nexports that failed:")
        for m in failed:
            print(f"  {m['id']:50s} {m['exporter']:11s} {m['reason'][:160]}")


_MEASURED = ("measured_ms", "measured_p90_ms", "cpu_ms", "speed", "cpu_speed", "uploaded_cpu_ms", "cpu_ms_passes")


def repredict(old_json: Path, items: list[dict[str, Any]], missing: list[dict[str, Any]], calibration: Path | None,
              timeout_s: float, out_json: str | None) -> int:
    """Rows of `old_json` predicted again by this code, with their measured figures kept; prints the report of the
    new rows and each model's error before -> after."""
    from compiler.speed_probe import SpeedCheck
    from simulator.calibration import speed_reference

    old = {(r["id"], r["exporter"]): r for r in json.loads(old_json.read_text())["rows"]}
    reference = speed_reference(calibration)  # the kept measurements' speed, held against this calibration's
    todo = [it for it in items if (it["id"], it["exporter"]) in old]
    rows: list[dict[str, Any]] = []
    for i, it in enumerate(todo, 1):
        before = old[(it["id"], it["exporter"])]
        # its one profile's probes stay out of the speed history: the rows are predicted at the speed it said before
        row = run_one(it, calibration, 1, 0, timeout_s, measure_cpu=False, check_exports=False, keep_probes=False)
        row.update({k: before.get(k) for k in _MEASURED})
        for key in ("speed", "cpu_speed"):
            if row.get(key) and reference is not None:
                row[key] = replace(SpeedCheck.from_json(row[key]), reference=reference).to_json()
        if row.get("per_task"):  # the earlier run's profile per task (this run profiled once, for the shapes)
            prof = {t[0]: t[4] for t in before.get("per_task") or ()}
            row["per_task"] = [[*t[:4], prof.get(t[0])] for t in row["per_task"]]
        rows.append(row)
        print(f"[{i}/{len(todo)}] {row['id']:46s} {row['exporter']:11s} {row['status']:8s} err/cpu "
              f"{_pct(_err(before, 'cpu_ms'))} -> {_pct(_err(row, 'cpu_ms'))}", flush=True)
        if out_json:
            Path(out_json).write_text(json.dumps({"rows": rows, "missing": missing}, indent=1))
    report(rows, missing)
    return 0


def main() -> int:
    from corpus import cache
    from corpus.check import COREML_TARGET, host_target
    from corpus.exporters import EXPORTERS
    from corpus.models import FAMILIES, select
    from corpus.wheels import REAL_FILES

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", default=None, help=f"corpus cache (default ${cache.ENV} or {cache.DEFAULT_CACHE})")
    ap.add_argument("--only", nargs="*", help="entry or real-file ids (an id ending in '/' takes a prefix)")
    ap.add_argument("--family", nargs="*", choices=FAMILIES)
    ap.add_argument("--exporter", nargs="*", choices=sorted(EXPORTERS) + ["wheel"])
    ap.add_argument("--slice", default=None, help="a named slice of corpus.models: test or slow")
    ap.add_argument("--no-real", action="store_true", help="leave out the real files from wheels")
    ap.add_argument("--runs", type=int, default=30, help="measured runs per model (as edgescope analyze)")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds per model")
    ap.add_argument("--calibration", default=None, help="host calibration cache (default: the workers' one)")
    ap.add_argument("--recalibrate", action="store_true",
                    help="time a named --calibration again when it is stale (else refused)")
    ap.add_argument("--json", default=None, help="write every row here")
    ap.add_argument("--resume", action="store_true",
                    help="keep the rows already in --json and analyse only the models it lacks")
    ap.add_argument("--redo-drifted", action="store_true",
                    help="with --resume: measure again the kept rows whose CPU-time speed probe drifted, keeping "
                         "whichever of the two ran nearer the calibration's speed")
    ap.add_argument("--again", type=int, nargs="?", const=2, default=0, metavar="PASSES",
                    help="with --resume: time the kept analysed rows again until each has PASSES passes (default 2), "
                         "keeping the faster in thread CPU time (every pass recorded, the first reported too)")
    ap.add_argument("--no-export-check", action="store_true",
                    help="skip the ONNX export dry runs (minutes per model at load; the fp32 figures do not read them)")
    ap.add_argument("--repredict", metavar="ROWS.json",
                    help="predict the models of an earlier --json run again with this code, keeping its measured "
                         "figures (one profiled run per model, for the shapes; no CPU timing): the same rows and "
                         "measurements before and after a change to the cost model")
    ap.add_argument("--report", nargs="+", metavar="ROWS.json",
                    help="print the report of earlier --json runs (merged; a later row replaces one of the same model)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    a = ap.parse_args()
    from simulator.calibration import named_file_refusal

    if not a.recalibrate and (why := named_file_refusal(a.calibration)) is not None:
        ap.error(why)
    if a.child:
        return _child(json.loads(a.child), Path(a.out))
    if a.report:
        merged: dict[tuple[str, str], dict[str, Any]] = {}
        gone: dict[tuple[str, str], dict[str, Any]] = {}
        for f in a.report:
            doc = json.loads(Path(f).read_text())
            merged.update({(r["id"], r["exporter"]): r for r in doc["rows"]})
            gone.update({(m["id"], m["exporter"]): m for m in doc["missing"]})
        report(list(merged.values()), [m for k, m in gone.items() if k not in merged])
        return 0

    from edgescope.config import Settings
    from simulator.calibration import load_or_calibrate, stale_reason

    root = cache.cache_dir(a.cache)
    exporters = [x for x in (a.exporter or []) if x != "wheel"] or None
    pairs = [] if a.exporter == ["wheel"] else select(a.only, a.family, exporters, a.slice)
    real = [] if a.no_real or a.slice or (a.exporter and "wheel" not in a.exporter) else [
        r for r in REAL_FILES if (not a.family or r.family in a.family)
        and (not a.only or any(r.id == o or (o.endswith("/") and r.id.startswith(o)) for o in a.only))]
    items, missing = corpus_items(root, pairs, real)
    calibration: Path | None = Path(a.calibration or Settings.from_env().calibration_path)
    if all(host_target(Path(it["path"])) == COREML_TARGET for it in items):
        calibration = None  # Core ML files are predicted on the device: no host calibration to time
    else:
        if (why := stale_reason(calibration)) is not None:  # it is about to be timed again and replaced
            print(f"calibrate: {calibration}: {why}; timing this machine now", flush=True)
        load_or_calibrate(calibration, progress=lambda s: print("calibrate:", s, flush=True))
    print(f"{len(items)} models to analyse from {root} ({len(missing)} exports not there), calibration {calibration}",
          flush=True)
    rows: list[dict[str, Any]] = []
    if a.repredict:
        return repredict(Path(a.repredict), items, missing, calibration, a.timeout, a.json)
    if a.resume and a.json and Path(a.json).is_file():
        rows = json.loads(Path(a.json).read_text())["rows"]
        done = {(r["id"], r["exporter"]) for r in rows if not (a.redo_drifted and drifted(r, "cpu_ms"))}
        if a.again:  # the analysed rows not yet timed in this pass (a stopped --again run resumes too)
            done = {(r["id"], r["exporter"]) for r in rows if r.get("status") != "analysed"
                    or len(r.get("cpu_ms_passes") or [r]) >= a.again}
        items = [it for it in items if (it["id"], it["exporter"]) not in done]
        print(f"resuming: {len(rows)} rows kept, {len(items)} to analyse", flush=True)
    t0 = time.perf_counter()
    for i, it in enumerate(items, 1):
        row = run_one(it, calibration, a.runs, a.warmup, a.timeout, check_exports=not a.no_export_check)
        rows = keep_faster(rows, row) if a.again else keep_steadier(rows, row)
        print(f"[{i}/{len(items)}] {row['id']:46s} {row['exporter']:11s} {row['status']:8s} "
              f"{_pct(_err(row)):>8s} {_pct(_err(row, 'cpu_ms')):>8s} speed {_ratio(row, 'cpu_ms'):>6s} "
              f"{row['wall_s']:6.1f} s  "
              f"{row.get('error', '')[:160]}", flush=True)
        if a.json:  # kept up to date, so a long run that is stopped still leaves its rows
            Path(a.json).write_text(json.dumps({"rows": rows, "missing": missing}, indent=1))
    report(rows, missing)
    print(f"\n{len(rows)} models in {(time.perf_counter() - t0) / 60:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
