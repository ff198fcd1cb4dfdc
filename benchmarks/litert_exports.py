"""LiteRT exports, predicted vs written vs measured on litert-cpu/host: every option the LiteRT exporter builds,
from each `.tflite` given and from its fp16-weight copy (the model with fp16 weights behind DEQUANTIZE, as
`edgescope optimize --model-wide fp16` writes it).

    python benchmarks/litert_exports.py /path/to/a.tflite ... [--calibration host-cpu.json] [--runs 30] [--all]
    python benchmarks/litert_exports.py --wheel [ID ...] [--cache DIR] ...  # real files of corpus.wheels

Files: the corpus's `tflite` exports (python -m corpus.build --only tv/mobilenet_v2 --exporter tflite), or with
`--wheel` the real `.tflite` files of corpus.wheels (python -m corpus.build --wheels), exported, predicted and
measured at the shapes their package feeds them (`RealFile.inputs`; a dynamic dim is not left at 1). Prints one
row per (file, source, option): predicted and written size, predicted and measured latency (LiteRT's profiler,
1 thread, median of the runs; and the process's CPU time per run, which preemption on a shared machine does not
inflate), and the load average. `--all`: every preset the option table lists (33); those the LiteRT exporter has
no recipe for must be refused before anything is written (a row "not exportable" with the exporter's reason), every
other one exported, loaded and measured. `--rounds N`: then the CPU time per run of every written file again, the
files interleaved over N rounds (a shared machine's load moves between rounds, not within one), and each option's
change over the fp32 export of the same source, predicted against measured (median of the rounds).
`--keep DIR`: the written files and their export results stay in DIR and are reused by the next run with the same
DIR (export once without the shared measurement lock, `--no-measure`; then time them under it).
`--rounds-only --json ROWS`: with `--keep DIR`, only the interleaved rounds' CPU times of the kept files, written to
ROWS (no per-file profile, no prediction: the shortest hold of the lock); `--repredict ROWS --calibration C
[--compare-calibration B ...]`: the rounds' table from those CPU times, predicted with this checkout's code and each
calibration (before / after on the same measurements), outside the lock.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, os.fspath(ROOT))  # this checkout's code, not the one the venv has installed

OPTIONS = ("fp32", "fp16", "int8-dynamic", "int8-static", "int4-weights")


def _cpu_ms(path: Path, runs: int, shapes: dict[str, list[int]] | None = None) -> float:
    """Median CPU time of the calling thread per invoke (1 thread: XNNPACK runs on it), on generated inputs."""
    from compiler.optimize.litert_check import fed_interpreter
    from compiler.profile import timed_runs

    it = fed_interpreter(str(path), shapes)
    for _ in range(3):
        it.invoke()
    return timed_runs(it.invoke, runs).cpu_median_ms


def model_names(files: list[Path]) -> list[str]:
    """A distinct name per file for the table and its work folders: the folder's name where each file has its own
    (the corpus's `<entry>/tflite.tflite`), else the file's stem (corpus.wheels' files share `<cache>/real/`)."""
    if len({f.parent.name for f in files}) == len(files):
        return [f.parent.name for f in files]
    return [f.stem if [g.stem for g in files].count(f.stem) == 1 else f"{f.parent.name}-{f.stem}" for f in files]


def table_marks(src: Path, shapes: dict[str, list[int]], work: Path) -> dict[str, str | None]:
    """{preset: None, or why the option table marks it not exportable for this file} (what the UI offers)."""
    from simulator.model import compile_for
    from simulator.sweep import sweep

    work.mkdir(parents=True, exist_ok=True)
    source, compiled, _ = compile_for(src, "litert-cpu/host", work, input_shapes=shapes)
    bulk = sweep(compiled, "litert-cpu/host", source=source).bulk
    return {p["name"]: (None if ok else why) for p, ok, why in
            zip(bulk["presets"], bulk["exportable"], bulk["export_reasons"])}


def wheel_files(cache_dir: str | None, ids: list[str]) -> list[tuple[Path, dict[str, list[int]]]]:
    """(path, input shapes) of corpus.wheels' fetched `.tflite` files (all, or those of `ids`)."""
    from corpus import cache
    from corpus.wheels import REAL_FILES

    root, out = cache.cache_dir(cache_dir), []
    for r in REAL_FILES:
        if r.suffix == ".tflite" and (not ids or r.id in ids):
            rec = cache.load(root, r.id, "wheel")
            if rec is None or rec.status != "built":
                raise SystemExit(f"{r.id} is not fetched: python -m corpus.build --wheels --no-models")
            out.append((root / rec.path, dict(r.inputs)))
    return out


def _export(src: Path, out: Path, kept: Path, option: str, work: Path, calibration: Path | None,
            shapes: dict[str, list[int]] | None = None) -> dict[str, Any]:
    """optimize_model's result for `option` on `src`, written to `out`; with `kept` (its JSON), a file written by
    an earlier run (--keep) is reused and predicted again with this code and `calibration`."""
    from simulator.predict import optimize_model, predict_model

    if out.is_file() and kept.is_file():
        r = dict(json.loads(kept.read_text()))
        totals = predict_model(src, "litert-cpu/host", option, {}, work, calibration, shapes)[0]["totals"]
        pred = {**r["predicted"], "latency_ms": totals["latency_ms"], "size_bytes": totals["size_bytes"]}
        return {**r, "predicted": pred, "size_error_pct": (pred["size_bytes"] / r["size_bytes"] - 1) * 100}
    r = optimize_model(src, out, "litert-cpu/host", option, {}, work, calibration, shapes)
    kept.write_text(json.dumps({k: r[k] for k in ("predicted", "size_bytes", "size_error_pct")}))
    return r


def main(argv: list[str] | None = None) -> int:
    from compiler.backends.litert import profile
    from compiler.optimize.export import check_state
    from compiler.vocabulary.options import OptionError
    from simulator.predict import predict_model
    from compiler.optimize.litert_export import export_tflite
    from compiler.profile import ProfileSettings

    ap = argparse.ArgumentParser(prog="benchmarks/litert_exports.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--wheel", nargs="*", default=None, metavar="ID",
                    help="corpus.wheels' real .tflite files (all, or these ids) at their package's input shapes")
    ap.add_argument("--cache", default=None, help="corpus cache for --wheel (default $EDGESCOPE_CORPUS_CACHE)")
    ap.add_argument("--calibration", type=Path, default=None, help="host calibration cache (default: none)")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--options", nargs="+", default=list(OPTIONS))
    ap.add_argument("--fp32-source-only", action="store_true", help="skip the fp16-weight copy of each file")
    ap.add_argument("--all", action="store_true", help="every preset of the option table (BULK_PRESETS)")
    ap.add_argument("--rounds", type=int, default=0, help="interleaved CPU-time rounds over the written files")
    ap.add_argument("--compare-calibration", type=Path, nargs="+", default=[],
                    help="other host calibration caches (each with its LiteRT cache beside it): their predictions "
                         "beside the first's in the --rounds table, on the same measurements (before / after)")
    ap.add_argument("--keep", type=Path, default=None, help="keep (and reuse) the written files in this directory")
    ap.add_argument("--no-measure", action="store_true", help="export and predict only")
    ap.add_argument("--rounds-only", action="store_true", help="with --keep: the kept files' rounds only, unpredicted")
    ap.add_argument("--json", type=Path, default=None, help="write the rounds' rows (CPU times per round) here")
    ap.add_argument("--repredict", type=Path, default=None, help="the rounds' table of these rows, predicted again")
    a = ap.parse_args(argv)
    if a.repredict is not None:
        _repredict(json.loads(a.repredict.read_text()), [a.calibration, *a.compare_calibration])
        return 0
    if a.rounds_only:
        rows = _rounds_only(a.files, a.options, a.keep, a.rounds, a.runs)
        if a.json is not None:
            a.json.write_text(json.dumps(rows, indent=1))
        return 0
    wheels = wheel_files(a.cache, a.wheel) if a.wheel is not None else []
    given = [(f, {}) for f in a.files] + wheels
    if not given:
        ap.error("give .tflite files or --wheel")
    # A wheel file is named by its stem (its id) even alone: every one sits in <cache>/real/, and --keep's folders
    # are named by the model (a lone file named "real" took another wheel file's kept exports).
    names = model_names(list(a.files)) + [f.stem for f, _ in wheels] if a.files else [f.stem for f, _ in wheels]
    if a.all:
        from compiler.vocabulary.options import BULK_PRESETS

        a.options = list(BULK_PRESETS)
    counts = {"exported": 0, "not exportable": 0, "failed": 0}
    # (model, source, option, file, predicted ms, others, input shapes)
    written: list[tuple[str, str, str, Path, float, list[float], dict[str, list[int]]]] = []
    print("| model | source | option | predicted size | written | size error | predicted ms | measured ms "
          "| latency error | CPU ms per run | CPU-time error | load |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="edgescope-litert-bench-") as tmp_dir:
        tmp = a.keep or Path(tmp_dir)
        tmp.mkdir(parents=True, exist_ok=True)
        for (f, shapes), name in zip(given, names):
            sources = [("fp32", f)]
            if not a.fp32_source_only:
                fp16 = Path(tmp, f"{name}-fp16src.tflite")
                try:
                    if not fp16.is_file():
                        export_tflite(f, fp16, "fp16", input_shapes=shapes)
                    sources.append(("fp16 weights", fp16))
                except Exception as e:  # noqa: BLE001 - the fp16 export failed: a row, and no fp16-weight source
                    counts["failed"] += 1
                    print(f"| {name} | fp16 weights | (source) | failed: {' '.join(str(e).split())[:160]} |")
            for label, src in sources:
                marks = table_marks(src, shapes, Path(tmp, f"{name}-{label}-table"))
                for option in a.options:
                    work = Path(tmp, f"{name}-{label}-{option}")
                    work.mkdir(exist_ok=True)
                    out, kept = work / "out.tflite", work / "result.json"
                    try:
                        check_state("litert-cpu/host", "tflite", option, {})
                        if marks.get(option):  # the table marks it for this file: not offered
                            raise OptionError(marks[option] or "")
                    except OptionError as e:  # refused before anything is queued (the API's 400 no_export)
                        counts["not exportable"] += 1
                        print(f"| {name} | {label} | {option} | not exportable: {' '.join(str(e).split())[:120]} |")
                        continue
                    try:
                        r = _export(src, out, kept, option, work, a.calibration, shapes)
                    except Exception as e:  # noqa: BLE001 - a failed export is a row of its own
                        counts["failed"] += 1
                        print(f"| {name} | {label} | {option} | failed: {' '.join(str(e).split())[:160]} |")
                        continue
                    counts["exported"] += 1
                    others = [predict_model(src, "litert-cpu/host", option, {}, work, c, shapes)[0]["totals"]["latency_ms"]
                              for c in a.compare_calibration]
                    written.append((name, label, option, out, r["predicted"]["latency_ms"], others, shapes))
                    if a.no_measure:
                        print(f"| {name} | {label} | {option} | {r['predicted']['size_bytes'] / 1e6:.3f} MB "
                              f"| {r['size_bytes'] / 1e6:.3f} MB | {r['size_error_pct']:+.2f}% "
                              f"| {r['predicted']['latency_ms']:.2f} | - | - | - | - | {os.getloadavg()[0]:.1f} |")
                        continue
                    p = profile(out, ProfileSettings(runs=a.runs, warmup=3, threads=1, input_shapes=shapes))
                    pred_ms, ms = r["predicted"]["latency_ms"], p.latency_ms
                    cpu = _cpu_ms(out, a.runs, shapes)
                    cpu_err = f"{(pred_ms / cpu - 1) * 100:+.0f}%" if cpu else "-"
                    print(f"| {name} | {label} | {option} | {r['predicted']['size_bytes'] / 1e6:.3f} MB "
                          f"| {r['size_bytes'] / 1e6:.3f} MB | {r['size_error_pct']:+.2f}% | {pred_ms:.2f} | {ms:.2f} "
                          f"| {(pred_ms / ms - 1) * 100:+.0f}% | {cpu:.2f} | {cpu_err} | {os.getloadavg()[0]:.1f} |",
                          flush=True)
        print(", ".join(f"{k}: {v}" for k, v in counts.items()))
        if a.rounds and not a.no_measure:
            _interleaved(written, a.rounds, a.runs, [a.calibration, *a.compare_calibration])
    return 0


def _rounds_only(files: list[Path], options: list[str], keep: Path | None, rounds: int, runs: int
                 ) -> list[dict[str, Any]]:
    """The CPU times per run of the files kept in `keep` for each (file, option), interleaved over `rounds`."""
    if keep is None:
        raise SystemExit("--rounds-only needs --keep DIR (the files an earlier run exported)")
    rows = [{"model": f.parent.name, "source": os.fspath(f), "option": o,
             "file": os.fspath(keep / f"{f.parent.name}-fp32-{o}" / "out.tflite"), "cpu_ms": []}
            for f in files for o in options]
    rows = [r for r in rows if Path(r["file"]).is_file()]
    for _ in range(rounds):
        for r in rows:
            r["cpu_ms"].append(_cpu_ms(Path(r["file"]), runs))
        print(f"round done, load {os.getloadavg()[0]:.1f}", flush=True)
    return rows


def _repredict(rows: list[dict[str, Any]], calibrations: list[Path | None]) -> None:
    """The rounds' table of `rows` (--rounds-only --json), each file predicted again with each calibration."""
    from simulator.predict import predict_model

    written: list[tuple[str, str, str, Path, float, list[float], dict[str, list[int]]]] = []
    with tempfile.TemporaryDirectory(prefix="edgescope-litert-repredict-") as tmp:
        for i, r in enumerate(rows):
            preds = []
            for j, c in enumerate(calibrations):
                work = Path(tmp, f"{i}-{j}")
                work.mkdir()
                preds.append(predict_model(Path(r["source"]), "litert-cpu/host", r["option"], {}, work, c)[0]["totals"]["latency_ms"])
            written.append((r["model"], "fp32", r["option"], Path(r["file"]), preds[0], preds[1:], {}))
    _interleaved(written, len(rows[0]["cpu_ms"]) if rows else 0, 0, calibrations, [r["cpu_ms"] for r in rows])


def _interleaved(written: list[tuple[str, str, str, Path, float, list[float], dict[str, list[int]]]], rounds: int,
                 runs: int, calibrations: list[Path | None], measured: list[list[float]] | None = None) -> None:
    """CPU time per run of every file, interleaved over `rounds` (or `measured`, already timed); each option against
    its source's fp32 export, as predicted with each calibration (the first: the one the files were exported with);
    per option and over all, how many within ±10% of the CPU time (files of 1 ms or more)."""
    cpu: dict[int, list[float]] = {i: list(m) for i, m in enumerate(measured)} if measured is not None else {
        i: [] for i in range(len(written))}
    for _ in range(rounds if measured is None else 0):
        for i, w in enumerate(written):
            cpu[i].append(_cpu_ms(w[3], runs, w[6]))
    med = {i: statistics.median(v) for i, v in cpu.items()}
    base: dict[tuple[str, str], Any] = {(m, s): i for i, (m, s, o, *_) in enumerate(written) if o == "fp32"}
    names = [c.parent.name if c is not None else "profile" for c in calibrations]
    print(f"\n| model | source | option | CPU ms per run (median of {rounds} rounds, min) | measured change over fp32 "
          + "".join(f"| {n}: predicted ms | error | predicted change | change error " for n in names) + "|")
    print("|---|---|---|---|---|" + "---|---|---|---|" * len(names))
    errs: dict[tuple[str, int], list[float]] = {}
    abs_errs: dict[tuple[str, int], list[float]] = {}
    for i, (m, s, o, _, pred, others, _shapes) in enumerate(written):
        b = base.get((m, s))
        cells = []
        for j, p in enumerate([pred, *others]):
            if med[i] >= 1:
                abs_errs.setdefault((o, j), []).append((p / med[i] - 1) * 100)
            if b is None:
                cells.append(f"| {p:.2f} | {(p / med[i] - 1) * 100:+.0f}% | - | - ")
                continue
            pb = [written[b][4], *written[b][5]][j]
            e = (p / pb) / (med[i] / med[b]) * 100 - 100
            if o != "fp32":
                errs.setdefault((o, j), []).append(e)
            cells.append(f"| {p:.2f} | {(p / med[i] - 1) * 100:+.0f}% | {p / pb:.2f}x | {e:+.0f}% ")
        change = "-" if b is None else f"{med[i] / med[b]:.2f}x"
        print(f"| {m} | {s} | {o} | {med[i]:.2f} ({min(cpu[i]):.2f}) | {change} " + "".join(cells) + "|", flush=True)
    for (o, j), e in sorted(errs.items()):
        print(f"{o} ({names[j]}): change error median {statistics.median(e):+.0f}%, "
              f"within 10% {sum(abs(x) <= 10 for x in e)}/{len(e)}")
    for j, n in enumerate(names):
        per = {o: e for (o, k), e in sorted(abs_errs.items()) if k == j}
        flat = [x for e in per.values() for x in e]
        print(f"{n}: latency within ±10% {sum(abs(x) <= 10 for x in flat)}/{len(flat)} (files of 1 ms or more); "
              + ", ".join(f"{o} median {statistics.median(e):+.1f}% ({sum(abs(x) <= 10 for x in e)}/{len(e)})"
                          for o, e in per.items()))
    print(f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    raise SystemExit(main())
