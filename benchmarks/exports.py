"""ONNX exports over the corpus (issue 14): every model-wide option the option table offers x the host target
`ort-cpu/host`: exported / marked not exportable / failed, loads, measured vs predicted latency and size.

Each built ONNX corpus file (`python -m corpus.build` first; README "Real-world corpus") is analysed as the worker
does (`worker.pipeline.analyze` on `ort-cpu/host`: measured fp32 baseline, option table, export dry run), in a
child process with a time limit. For each option the table marks exportable, the file is written as an export job
writes it (`compiler.optimize.onnx_export.export_onnx`, checked: loads, runs, promised ops) and measured with the
same ORT profiler in the sandbox (`compiler.backends`), against the table's prediction for that option (what the
Optimize dialog shows). Options marked not exportable are counted with their reason.

Options: by default one per distinct way of writing the file plus pruning (`PRESETS`); `--all` takes the 33 the
table lists. Run: `nice -n 10 .venv/bin/python benchmarks/exports.py [--slice test] [--family F ...]
[--only ID ...] [--exporter X ...] [--json rows.json] [--report rows.json]`. Prints figures; asserts nothing.

`--repredict rows.json --calibration C --json new.json` predicts the rows' exports again with this checkout's code
and the calibration cache as written (never refitted), without measuring anything: the rules alone
(`predicted_unmeasured_ms`, `predicted_change`) and the predicted size are replaced, the measurements kept (the earlier figures move to
`before_*`), so a rule's before / after is read on the same measured exports (`--report new.json`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, os.fspath(ROOT))

PRESETS = ("fp32", "fp16", "int8-dynamic", "int8-static", "int4-weights", "palettize-4bit", "palettize-8bit",
           "prune-50", "prune-50+int8-static")
# --quick: one option per way of writing the file that has its own run time on ORT CPU (pruning and 8-bit palettes
# write the same graph as fp32 and 4-bit palettes do)
QUICK = ("fp32", "fp16", "int8-dynamic", "int8-static", "int4-weights", "palettize-4bit")
TARGET = "ort-cpu/host"
MIN_MS = 1.0  # the latency goal counts exports of 1 ms or more
DEFAULT_TIMEOUT_S = 1800.0


def _one_line(e: BaseException) -> str:
    return f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"


def model_rows(path: Path, inputs: dict[str, list[int]], calibration: Path, presets: list[str] | None, runs: int,
               warmup: int) -> list[dict[str, Any]]:
    """Every option row of one model (in the child)."""
    import logging
    import warnings

    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    from compiler.optimize.export import measure_export
    from compiler.input_plan import concrete_shapes, fill_values
    from compiler.optimize.onnx_export import export_onnx
    from compiler.profile import ProfileSettings
    from compiler.vocabulary.options import OptionError
    from simulator.measured import own_whole_ms
    from simulator.totals import totals
    from worker.pipeline import AnalysisOptions, analyze, user_errors

    opts = AnalysisOptions(targets=(TARGET,), input_shapes=inputs, runs=runs, warmup=warmup,
                           calibration_path=calibration)
    with tempfile.TemporaryDirectory(prefix="exports-") as d:
        t0 = time.perf_counter()
        try:
            res = analyze(path, Path(d), opts)
        except user_errors() as e:
            return [{"option": "*", "status": "analysis error", "error": _one_line(e)}]
        analysis_s = time.perf_counter() - t0
        r = res.targets[0]
        bulk = r.sweep.bulk
        names = [p["name"] for p in bulk["presets"]]
        # The option rules alone, free of the machine's load: the table swept WITHOUT the measured profile gives
        # each option's predicted change over fp32 (pure model), checked against the measured change in CPU time.
        from simulator.calibrated import hardware_for
        from simulator.sweep import sweep

        pure = sweep(r.compiled, r.target, None, hardware=hardware_for(r.target, calibration), source=res.source)
        pure_fp32 = float(totals(pure.bulk, pure.per_op, "fp32", {})["latency_ms"])
        shapes, values = concrete_shapes(res.inputs), fill_values(res.inputs)
        settings = ProfileSettings(warmup=warmup, runs=runs, threads=1, timeout_s=600, input_shapes=shapes,
                                   input_values=values)
        rows = []
        for option in presets or names:
            i = names.index(option)
            tot = totals(bulk, r.sweep.per_op, option, {})
            pure_ms = float(totals(pure.bulk, pure.per_op, option, {})["latency_ms"])
            row: dict[str, Any] = {"option": option, "predicted_ms": float(tot["latency_ms"]),
                                   "predicted_size": float(tot["size_bytes"]),
                                   "baseline_ms": r.profile.latency_ms if r.profile else None,
                                   "baseline_cpu_ms": r.profile.noise.get("cpu_latency_ms") if r.profile else None,
                                   "baseline_load": r.profile.noise.get("load_per_cpu") if r.profile else None,
                                   "baseline_cpu_time": bool(bulk["label"].get("baseline_cpu_time")
                                                             or bulk["label"].get("baseline_fast_cpu_ms")),
                                   "predicted_change": pure_ms / pure_fp32, "predicted_unmeasured_ms": pure_ms,
                                   "analysis_s": round(analysis_s, 1),
                                   # the analysis' measured profile: --repredict makes the dialog's prediction again
                                   "baseline_profile": r.profile.to_json() if r.profile else None}
            if not bulk.get("exportable", [True] * len(names))[i]:
                rows.append({**row, "status": "marked", "error": bulk["export_reasons"][i]})
                continue
            out = Path(d) / f"{option}.onnx"
            t1 = time.perf_counter()
            try:
                e = export_onnx(path, out, option, {}, input_shapes=shapes, input_values=values)
            except OptionError as err:  # offered as exportable, refused at export: the table was wrong
                rows.append({**row, "status": "failed", "error": str(err)})
                continue
            export_s = time.perf_counter() - t1
            try:
                p = measure_export(out, TARGET, "onnx", Path(d) / option, settings)
                rows.append({**row, "status": "exported", "size": e.size_bytes, "measured_ms": p.latency_ms,
                             "measured_p90_ms": p.latency_p90_ms, "measured_cpu_ms": p.noise.get("cpu_latency_ms"),
                             "measured_own_ms": own_whole_ms(p), "load": p.noise.get("load_per_cpu"), "export_s": round(export_s, 1)})
            except Exception as err:  # noqa: BLE001 - written and checked, but the measurement failed
                rows.append({**row, "status": "unmeasured", "size": e.size_bytes, "error": _one_line(err)})
            out.unlink(missing_ok=True)
        return rows


def _child(spec: dict[str, Any], out: Path) -> int:
    try:
        rows = model_rows(Path(spec["path"]), spec["inputs"], Path(spec["calibration"]), spec["presets"],
                          spec["runs"], spec["warmup"])
    except BaseException as e:  # noqa: BLE001  (a crash: the traceback is the finding)
        rows = [{"option": "*", "status": "crashed", "error": _one_line(e), "traceback": traceback.format_exc()[-3000:]}]
    out.write_text(json.dumps(rows))
    return 0


def run_one(item: dict[str, Any], spec: dict[str, Any], timeout_s: float) -> list[dict[str, Any]]:
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "rows.json"
        cmd = [sys.executable, os.fspath(Path(__file__).resolve()), "--child",
               json.dumps({**spec, "path": item["path"], "inputs": item["inputs"]}), "--out", os.fspath(out)]
        try:
            proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout_s)
            rows = json.loads(out.read_text()) if out.is_file() else [
                {"option": "*", "status": "crashed", "error": f"child died (exit {proc.returncode})",
                 "traceback": "\n".join(proc.stderr.strip().splitlines()[-15:])}]
        except subprocess.TimeoutExpired:
            rows = [{"option": "*", "status": "crashed", "error": f"timed out after {timeout_s:.0f} s"}]
    wall = round(time.perf_counter() - t0, 1)
    return [{"id": item["id"], "exporter": item["exporter"], "family": item["family"], "path": item["path"],
             "inputs": item["inputs"], "wall_s": wall, **r} for r in rows]


def predict_again(path: Path, inputs: dict[str, list[int]], calibration: Path, options: list[str], workdir: Path,
                  profile: dict[str, Any] | None = None
                  ) -> tuple[dict[str, float], dict[str, float], dict[str, float], bool]:
    """({option: latency_ms} from the rules alone (no measured profile), the same with the analysis' measured
    `profile` where given (the dialog's prediction; else empty), {option: predicted size in bytes}, whether the
    dialog's prediction is in CPU time (its label's `baseline_cpu_time`: a busy round's CPU time, or the profile's
    fast CPU time, simulator.measured.fast_scale)), compiled as the
    worker compiles it (with a profile, the shapes its run saw overwrite the inferred ones, as the analysis does:
    compiler.concrete.fill_observed), with the calibration cache as written (a cache of another code version is not
    refitted)."""
    from compiler.concrete import fill_from_twins, fill_observed
    from compiler.profile import Profile
    from simulator.calibration import profile_from_cache
    from simulator.model import compile_for
    from simulator.sweep import sweep
    from simulator.totals import totals

    source, compiled, _ = compile_for(path, TARGET, workdir, input_shapes=inputs)
    if profile is not None and profile.get("output_shapes"):  # the shapes the analysis' run saw, as it takes them
        fill_observed(compiled, profile["output_shapes"], [source])
        for g in (source, compiled):
            fill_from_twins(g)
    hw = profile_from_cache(json.loads(calibration.read_text()))
    names = list(dict.fromkeys(["fp32", *options]))
    r = sweep(compiled, TARGET, None, hardware=hw, source=source)
    pure = {o: float(totals(r.bulk, r.per_op, o, {})["latency_ms"]) for o in names}
    sizes = {o: float(totals(r.bulk, r.per_op, o, {})["size_bytes"]) for o in names}
    if profile is None:
        return pure, {}, sizes, False
    m = sweep(compiled, TARGET, Profile.from_json(profile), hardware=hw, source=source)
    return (pure, {o: float(totals(m.bulk, m.per_op, o, {})["latency_ms"]) for o in names}, sizes,
            bool(m.bulk["label"].get("baseline_cpu_time") or m.bulk["label"].get("baseline_fast_cpu_ms")))


def repredict(rows: list[dict[str, Any]], calibration: Path, root: Path) -> list[dict[str, Any]]:
    """The rows with their rules-alone prediction made again by this checkout (module docstring, --repredict)."""
    import logging
    import warnings

    from corpus import cache

    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    out = []
    by_model: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_model[(r["id"], r["exporter"])].append(r)
    for (mid, x), rs in by_model.items():
        rec = cache.load(root, mid, x)
        path = Path(rs[0].get("path") or (root / rec.path if rec is not None else ""))
        inputs = rs[0].get("inputs") or (rec.inputs if rec is not None else {})
        profile = next((r["baseline_profile"] for r in rs if r.get("baseline_profile")), None)
        with tempfile.TemporaryDirectory(prefix="repredict-") as d:
            pred, dialog, sizes, in_cpu = predict_again(path, inputs, calibration,
                                                        [r["option"] for r in rs if r["option"] != "*"], Path(d), profile)
        for r in rs:
            if r["option"] in pred and r.get("predicted_unmeasured_ms") is not None:
                r = {**r, "before_predicted_unmeasured_ms": r["predicted_unmeasured_ms"],
                     "before_predicted_change": r.get("predicted_change"),
                     "predicted_unmeasured_ms": pred[r["option"]],
                     "predicted_change": pred[r["option"]] / pred["fp32"]}
            if r["option"] in sizes and r.get("predicted_size") is not None:
                r = {**r, "before_predicted_size": r["predicted_size"], "predicted_size": sizes[r["option"]]}
            if r["option"] in dialog:
                r = {**r, "before_predicted_ms": r["predicted_ms"], "predicted_ms": dialog[r["option"]],
                     "before_baseline_cpu_time": r.get("baseline_cpu_time"), "baseline_cpu_time": in_cpu}
            out.append(r)
        print(f"{mid} {x}: " + " ".join(f"{o} {v:.2f}" for o, v in pred.items()), flush=True)
    return out


def _measured(r: dict[str, Any]) -> float:
    """The export's time as the analysis reads its own measurement (simulator.measured.own_whole_ms): its CPU time
    where the machine was busy (the process had the CPU for < 0.85 of the round), else its wall time. The
    prediction is set against the analysis' measurement by the same rule, so a busy machine's wait for the CPU is
    in neither (rows written before this field: the wall time)."""
    return float(r.get("measured_own_ms") or r["measured_ms"])


def _lat_err(r: dict[str, Any]) -> float:
    return (r["predicted_ms"] / _measured(r) - 1) * 100


def _cpu_predicted(r: dict[str, Any]) -> float:
    """The prediction in CPU time: as it is where the analysis set it against its CPU time (a busy machine), else
    rescaled from the analysis' wall-clock baseline to its CPU time."""
    if r.get("baseline_cpu_time"):
        return float(r["predicted_ms"])
    return float(r["predicted_ms"]) * r["baseline_cpu_ms"] / r["baseline_ms"]


def _by_option(errors: list[tuple[dict[str, Any], float]]) -> str:
    """Median error and the share within 10% per option, of (row, error %) pairs."""
    by: dict[str, list[float]] = defaultdict(list)
    for r, e in errors:
        by[r["option"]].append(e)
    return ", ".join(f"{o} {statistics.median(e):+.0f}% ({sum(abs(x) <= 10 for x in e)}/{len(e)})" for o, e in by.items())


def first_fast_pass(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`rows` with the fast CPU times of their first pass (export_rows.merge_pass), as a single pass reported them."""
    return [{**r, **({"fast_cpu_ms": r["fast_cpu_ms_passes"][0]} if r.get("fast_cpu_ms_passes") else {}),
             **({"baseline_fast_cpu_ms": r["baseline_fast_cpu_ms_passes"][0]}
                if r.get("baseline_fast_cpu_ms_passes") else {})} for r in rows]


def fast_errors(rows: list[dict[str, Any]]) -> dict[str, list[tuple[dict[str, Any], float]]]:
    """(row, error %) of the exports of MIN_MS or more in fast CPU time (export_rows.fast_cpu_ms): `rules` the rules
    alone against it, `change` the option's predicted change over fp32 on the upload's fast CPU time (both files in
    the machine's fast state), `dialog` the dialog's prediction in CPU time (`_cpu_predicted`)."""
    out: dict[str, list[tuple[dict[str, Any], float]]] = {"rules": [], "change": [], "dialog": []}
    for r in rows:
        fast = r.get("fast_cpu_ms")
        if r.get("status") != "exported" or not fast or fast < MIN_MS:
            continue
        if r.get("predicted_unmeasured_ms"):
            out["rules"].append((r, (r["predicted_unmeasured_ms"] / fast - 1) * 100))
        if r.get("predicted_change") and r.get("baseline_fast_cpu_ms"):
            out["change"].append((r, (r["predicted_change"] * r["baseline_fast_cpu_ms"] / fast - 1) * 100))
        if r.get("predicted_ms") and r.get("baseline_cpu_ms") and r.get("baseline_ms"):
            out["dialog"].append((r, (_cpu_predicted(r) / fast - 1) * 100))
    return out


def pass_spread(rows: list[dict[str, Any]]) -> list[float]:
    """Slowest over fastest pass of each export file timed in more than one pass."""
    return [max(p) / min(p) for r in rows if len(p := [x for x in r.get("fast_cpu_ms_passes") or [] if x]) > 1]


def fast_report(done: list[dict[str, Any]]) -> None:
    """The report's lines in fast CPU time (export_rows.py's `fast_cpu_ms`), with the passes' spread."""
    errs = fast_errors(done)
    if not any(errs.values()):
        return
    first = fast_errors(first_fast_pass(done))
    what = {"rules": "rules alone", "change": "the option's predicted change x the upload's fast CPU time",
            "dialog": "the dialog's prediction in CPU time"}
    print(f"in fast CPU time (5th percentile of interleaved rounds, as calibration times; exports of >= {MIN_MS:g} "
          "ms):")
    for k, e in errs.items():
        if e:
            print(f"  {what[k]}: within 10%: {sum(abs(x) <= 10 for _, x in e)}/{len(e)}, median |error| "
                  f"{statistics.median(abs(x) for _, x in e):.1f}%; by option: {_by_option(e)}")
    spread = pass_spread(done)
    if spread:
        print(f"  {len(spread)} export files timed in more than one pass, the fastest kept: slowest / fastest pass "
              f"median {statistics.median(spread):.3f}, max {max(spread):.3f}; their first pass alone: "
              + "; ".join(f"{k} {sum(abs(x) <= 10 for _, x in e)}/{len(e)}" for k, e in first.items() if e))


def report(rows: list[dict[str, Any]]) -> None:
    models = {(r["id"], r["exporter"]) for r in rows}
    print(f"\n{len(models)} models, {len(rows)} option rows on {TARGET}")
    print("status:", dict(Counter(r["status"] for r in rows)))
    offered = [r for r in rows if r["status"] in ("exported", "failed", "unmeasured")]
    ok = [r for r in offered if r["status"] != "failed"]
    print(f"offered as exportable: {len(offered)}; exported, checked and loaded: {len(ok)} "
          f"({100 * len(ok) / max(1, len(offered)):.1f}%)")
    for r in rows:
        if r["status"] in ("failed", "crashed", "analysis error", "unmeasured"):
            print(f"  {r['status']:14s} {r['id']} {r['exporter']} {r['option']}: {r.get('error', '')[:200]}")
    marked = Counter(r["error"][:110] for r in rows if r["status"] == "marked")
    for why, n in marked.most_common(8):
        print(f"  marked x{n}: {why}")
    done = [r for r in rows if r["status"] == "exported"]
    if not done:
        return
    size = [abs(r["predicted_size"] / r["size"] - 1) * 100 for r in done]
    print(f"size: median |error| {statistics.median(size):.2f}%, within 2%: "
          f"{sum(s <= 2 for s in size)}/{len(size)}, max {max(size):.1f}%")
    if any("before_predicted_size" in r for r in done):
        was = [abs(r.get("before_predicted_size", r["predicted_size"]) / r["size"] - 1) * 100 for r in done]
        print(f"  before (the rows' earlier prediction): within 2%: {sum(s <= 2 for s in was)}/{len(was)}, "
              f"max {max(was):.1f}%")
    big = [r for r in done if _measured(r) >= MIN_MS]
    if big:
        errs = [_lat_err(r) for r in big]
        print(f"latency (exports of >= {MIN_MS:g} ms, the dialog's prediction vs the export's measurement read as the "
              f"analysis reads its own): median |error| {statistics.median(map(abs, errs)):.1f}%, "
              f"within 10%: {sum(abs(e) <= 10 for e in errs)}/{len(errs)}")
        if any(r.get("before_predicted_ms") for r in big):  # after --repredict (rows without a profile: unchanged)
            prior = [((r.get("before_predicted_ms") or r["predicted_ms"]) / _measured(r) - 1) * 100 for r in big]
            print(f"  before (the rows' earlier prediction): median |error| {statistics.median(map(abs, prior)):.1f}%, "
                  f"within 10%: {sum(abs(e) <= 10 for e in prior)}/{len(prior)}")
        wall = [(r["predicted_ms"] / r["measured_ms"] - 1) * 100 for r in big]
        print(f"  against wall time alone: median |error| {statistics.median(map(abs, wall)):.1f}%, "
              f"within 10%: {sum(abs(e) <= 10 for e in wall)}/{len(wall)}")
    # The same against the fp32 export measured beside it: what the option changes, with the machine's load
    # at that moment (it moves every measurement of a model alike) divided out.
    fp32 = {(r["id"], r["exporter"]): r for r in done if r["option"] == "fp32"}
    rel = [((r["predicted_ms"] / f["predicted_ms"]) / (_measured(r) / _measured(f)) - 1) * 100
           for r in done if r["option"] != "fp32" and _measured(r) >= MIN_MS
           and (f := fp32.get((r["id"], r["exporter"]))) is not None]
    if rel:
        print(f"change vs the fp32 export measured beside it: median |error| {statistics.median(map(abs, rel)):.1f}%, "
              f"within 10%: {sum(abs(e) <= 10 for e in rel)}/{len(rel)}")
    # CPU time per run (the process's own, which other load on the machine does not inflate), against the
    # prediction rescaled from the analysis' wall-clock baseline to its CPU time.
    cpu = [(_cpu_predicted(r) / r["measured_cpu_ms"] - 1) * 100
           for r in big if r.get("measured_cpu_ms") and r.get("baseline_cpu_ms") and r.get("baseline_ms")]
    if cpu:
        print(f"in CPU time per run (load-free): median |error| {statistics.median(map(abs, cpu)):.1f}%, "
              f"within 10%: {sum(abs(e) <= 10 for e in cpu)}/{len(cpu)}")
        by_opt: dict[str, list[float]] = defaultdict(list)
        for r in big:
            if r.get("measured_cpu_ms") and r.get("baseline_cpu_ms") and r.get("baseline_ms"):
                by_opt[r["option"]].append((_cpu_predicted(r) / r["measured_cpu_ms"] - 1) * 100)
        print("  by option: " + ", ".join(f"{o} {statistics.median(e):+.0f}% ({sum(abs(x) <= 10 for x in e)}/{len(e)})"
                                          for o, e in by_opt.items()))
    # The option's change over fp32 predicted by the rules alone (no measured profile) against the change measured
    # in CPU time (export / the analysis' baseline, both per run of one thread): what the option rules get right
    # whatever the load and whatever the fp32 prediction's own error.
    # The reference is the fp32 export measured beside it (the same measurement path as the option's export),
    # else the analysis' baseline.
    ref = {(r["id"], r["exporter"]): r["measured_cpu_ms"] for r in done if r["option"] == "fp32" and r.get("measured_cpu_ms")}
    ch = [(r, (r["predicted_change"] / (r["measured_cpu_ms"] / base) - 1) * 100) for r in done
          if r["option"] != "fp32" and r.get("predicted_change") and r.get("measured_cpu_ms")
          and (base := ref.get((r["id"], r["exporter"])) or r.get("baseline_cpu_ms"))]
    if ch:
        errs = [e for _, e in ch]
        print(f"change over fp32, rules vs CPU time: median |error| {statistics.median(map(abs, errs)):.1f}%, "
              f"within 10%: {sum(abs(e) <= 10 for e in errs)}/{len(errs)}")
        print("  by option: " + _by_option(ch))
    # The rules alone in absolute terms: the table swept without the measured profile against CPU time per run (no
    # load gap charged to every option, no rescaling from a wall-clock baseline; the fp32 prediction's error stays in).
    pure = [(r, (r["predicted_unmeasured_ms"] / r["measured_cpu_ms"] - 1) * 100) for r in done
            if r.get("predicted_unmeasured_ms") and r.get("measured_cpu_ms")]
    if pure:
        print("rules alone vs CPU time per run, by option: " + _by_option(pure))
    # After --repredict: the same for the rows' earlier prediction, on the same measurements.
    before = [(r, (r["before_predicted_unmeasured_ms"] / r["measured_cpu_ms"] - 1) * 100) for r in done
              if r.get("before_predicted_unmeasured_ms") and r.get("measured_cpu_ms")]
    if before:
        print("  before (the rows' earlier prediction): " + _by_option(before))
        moved = sorted(((r, e, (r["predicted_unmeasured_ms"] / r["measured_cpu_ms"] - 1) * 100) for r, e in before),
                       key=lambda t: -abs(t[2] - t[1]))
        for r, e0, e1 in moved[:12]:
            if abs(e1 - e0) >= 1:
                print(f"    {r['id']:32s} {r['option']:14s} {e0:+6.1f}% -> {e1:+6.1f}%")
    fast_report(done)
    loads = [r["load"] for r in done if r.get("load") is not None]
    if loads:
        print(f"machine load per CPU during the measurements: median {statistics.median(loads):.1f}, "
              f"max {max(loads):.1f}")
    print(f"\n{'option':22s} {'n':>3s} {'marked':>6s} {'failed':>6s} {'med err':>8s} {'<=10%':>7s} {'size<=2%':>8s}")
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by[r["option"]].append(r)
    for option, rs in by.items():
        ex = [r for r in rs if r["status"] == "exported"]
        b = [r for r in ex if _measured(r) >= MIN_MS]
        e = [_lat_err(r) for r in b]
        print(f"{option:22s} {len(rs):3d} {sum(r['status'] == 'marked' for r in rs):6d} "
              f"{sum(r['status'] == 'failed' for r in rs):6d} "
              f"{(f'{statistics.median(e):+.1f}%' if e else '-'):>8s} "
              f"{(f'{sum(abs(x) <= 10 for x in e)}/{len(e)}' if e else '-'):>7s} "
              f"{sum(abs(r['predicted_size'] / r['size'] - 1) <= 0.02 for r in ex)}/{len(ex):<3d}")
    print(f"\n{'family':12s} {'n':>4s} {'med err':>8s} {'<=10%':>7s}")
    fam: dict[str, list[float]] = defaultdict(list)
    for r in done:
        if _measured(r) >= MIN_MS:
            fam[r["family"]].append(_lat_err(r))
    for f, e in sorted(fam.items()):
        print(f"{f:12s} {len(e):4d} {statistics.median(e):+7.1f}% {sum(abs(x) <= 10 for x in e)}/{len(e)}")


def wheel_items(root: Path, only: list[str] | None, families: list[str] | None) -> tuple[list[dict[str, Any]], int]:
    """The real `.onnx` files of corpus.wheels fetched into `root`, at the shapes their package feeds them
    (`RealFile.inputs`), and how many selected ones are not fetched."""
    from corpus import cache
    from corpus.wheels import REAL_FILES

    items, missing = [], 0
    for r in REAL_FILES:
        if r.suffix != ".onnx" or (families and r.family not in families) or (only and not any(
                r.id == o or (o.endswith("/") and r.id.startswith(o)) for o in only)):
            continue
        rec = cache.load(root, r.id, "wheel")
        if rec is None or rec.status != "built" or rec.key != r.member_sha256:
            missing += 1
            continue
        items.append({"id": r.id, "exporter": "wheel", "family": r.family, "path": os.fspath(root / rec.path),
                      "inputs": dict(r.inputs)})
    return items, missing


def main() -> int:
    from corpus import cache
    from corpus.exporters import EXPORTERS
    from corpus.models import FAMILIES, select

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", default=None, help=f"corpus cache (default ${cache.ENV} or {cache.DEFAULT_CACHE})")
    ap.add_argument("--only", nargs="*", help="entry ids (an id ending in '/' takes a prefix; id:exporter one export)")
    ap.add_argument("--family", nargs="*", choices=FAMILIES)
    ap.add_argument("--exporter", nargs="*", choices=sorted(x for x in EXPORTERS if EXPORTERS[x].suffix == ".onnx")
                    + ["wheel"], help="'wheel': the real .onnx files of corpus.wheels (python -m corpus.build --wheels)")
    ap.add_argument("--slice", default=None, help="a named slice of corpus.models: test or slow")
    ap.add_argument("--all", action="store_true", help="every preset of the option table, not one per kind")
    ap.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)}")
    ap.add_argument("--options", nargs="+", default=None, help="only these presets (fp32 first: the baseline export)")
    ap.add_argument("--runs", type=int, default=20, help="measured runs per model and per export")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds per model, all options")
    ap.add_argument("--calibration", default=None, help="host calibration cache (default: the workers' one)")
    ap.add_argument("--recalibrate", action="store_true",
                    help="time a named --calibration again when it is stale (else refused)")
    ap.add_argument("--json", default=None, help="write every row here (kept up to date; --resume continues)")
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--shard", default=None, help="K/N: every N-th model from the K-th (parallel runs)")
    ap.add_argument("--report", nargs="+", metavar="ROWS.json", help="print the report of earlier --json runs")
    ap.add_argument("--repredict", metavar="ROWS.json", help="predict these rows again with this code and "
                    "--calibration (as written), measuring nothing; --json writes them")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    a = ap.parse_args()
    from simulator.calibration import named_file_refusal

    if not a.recalibrate and (why := named_file_refusal(a.calibration)) is not None:
        ap.error(why)
    if a.child:
        return _child(json.loads(a.child), Path(a.out))
    if a.report:
        merged: dict[tuple[str, str, str], dict[str, Any]] = {}
        for f in a.report:
            merged.update({(r["id"], r["exporter"], r["option"]): r for r in json.loads(Path(f).read_text())["rows"]})
        report(list(merged.values()))
        return 0
    if a.repredict:
        if not a.calibration or not a.json:
            ap.error("--repredict needs --calibration and --json")
        rows = repredict(json.loads(Path(a.repredict).read_text())["rows"], Path(a.calibration), cache.cache_dir(a.cache))
        Path(a.json).write_text(json.dumps({"rows": rows}, indent=1))
        report(rows)
        return 0

    from corpus.builders import describe
    from edgescope.config import Settings
    from simulator.calibration import load_or_calibrate, stale_reason

    root = cache.cache_dir(a.cache)
    items, missing = wheel_items(root, a.only, a.family) if a.exporter and "wheel" in a.exporter else ([], 0)
    exporters = [x for x in a.exporter or [] if x != "wheel"] or None
    pairs = {tuple(o.split(":", 1)) for o in a.only or [] if ":" in o}
    for e, x in [] if a.exporter == ["wheel"] else select(
            [o.split(":", 1)[0] for o in a.only] if a.only else None, a.family, exporters, a.slice):
        rec = cache.load(root, e.id, x)
        if EXPORTERS[x].suffix != ".onnx" or (pairs and (e.id, x) not in pairs):
            continue
        if rec is None or rec.status != "built" or rec.key != cache.key(describe(e), x):
            missing += 1
            continue
        items.append({"id": e.id, "exporter": x, "family": e.family, "path": os.fspath(root / rec.path),
                      "inputs": rec.inputs})
    calibration = Path(a.calibration or Settings.from_env().calibration_path)
    if (why := stale_reason(calibration)) is not None:  # it is about to be timed again and replaced
        print(f"calibrate: {calibration}: {why}; timing this machine now", flush=True)
    load_or_calibrate(calibration, progress=lambda s: print("calibrate:", s, flush=True))
    print(f"{len(items)} ONNX models from {root} ({missing} selected exports not built), calibration {calibration}",
          flush=True)
    if a.shard:
        k, n = map(int, a.shard.split("/"))
        items = items[k::n]
    rows: list[dict[str, Any]] = []
    if a.resume and a.json and Path(a.json).is_file():
        rows = json.loads(Path(a.json).read_text())["rows"]
        done = {(r["id"], r["exporter"]) for r in rows}
        items = [it for it in items if (it["id"], it["exporter"]) not in done]
    chosen = a.options or (None if a.all else list(QUICK if a.quick else PRESETS))
    spec = {"calibration": os.fspath(calibration), "presets": chosen,
            "runs": a.runs,
            "warmup": a.warmup}
    t0 = time.perf_counter()
    for i, it in enumerate(items, 1):
        got = run_one(it, spec, a.timeout)
        rows += got
        st = Counter(r["status"] for r in got)
        errs = [f"{r['option']} {_lat_err(r):+.0f}%" for r in got if r["status"] == "exported"]
        print(f"[{i}/{len(items)}] {it['id']:36s} {it['exporter']:10s} {dict(st)} {got[0]['wall_s']:.0f} s  "
              f"{' '.join(errs)}", flush=True)
        for r in got:
            if r["status"] in ("failed", "crashed", "analysis error"):
                print(f"    {r['status']} {r['option']}: {r.get('error', '')[:200]}", flush=True)
        if a.json:
            Path(a.json).write_text(json.dumps({"rows": rows}, indent=1))
    report(rows)
    print(f"\n{len({(r['id'], r['exporter']) for r in rows})} models in {(time.perf_counter() - t0) / 60:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
