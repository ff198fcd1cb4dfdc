"""Peak memory on `ort-cpu/host`: the simulator's rule (rule 3 of docs/option-table.md, simulator/peak_memory.py)
against the growth of a process's resident-set high-water mark (VmHWM) while ONNX Runtime opens the compiled model
as the profiling child does (compiler/backends/ort.py `_profile_child`: the file ORT compiled, graph optimizations
off, one thread) and runs it 3 times. Memory is not timing: run under `nice -n 10`, no measurement lock.

Models: the built TorchScript corpus files (`python -m corpus.build --exporter ts`), alphabetical by entry; wheel
files are left out (the held-out wheels among them must never be tuned on). `--presets fp32 int8-static ...`: fp32
is the file as uploaded (`edgescope predict`); another preset is written by `edgescope optimize`'s path
(`simulator.predict.optimize_model`) and its written file measured, against the prediction of the fp32 file with
that model-wide option. Each row also carries the terms of the rule and the state's per-op figures (op type, combo,
weights, working set), so constants can be refitted from the rows without measuring again (`--report`).

Run: `nice -n 10 .venv/bin/python benchmarks/ort_peak_memory.py --presets fp32 --json rows.jsonl [--only ID ...]`;
`--report rows.jsonl [more.jsonl]` predicts every stored state again with this checkout's rule and prints predicted /
measured per row, split as fitted / held out (every other model, alphabetical) per preset.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, os.fspath(ROOT))

TARGET = "ort-cpu/host"
RUNS = 3
RECURRENT = frozenset({"torch/gru-bi", "torch/lstm-kws"})


def corpus_files(cache: Path, only: list[str] | None) -> list[tuple[str, Path]]:
    """(entry id, file) of every built TorchScript corpus file, alphabetical; wheels' files left out."""
    out = []
    for rec in sorted(cache.glob("*/ts.json")):
        r = json.loads(rec.read_text())
        if r.get("status") != "built" or r["entry"].startswith("wheel"):
            continue
        if only and r["entry"] not in only:
            continue
        out.append((r["entry"], cache / r["path"]))
    return sorted(out)


def measure(compiled: Path, prepack: bool = True) -> dict[str, int]:
    """VmHWM growth of a fresh process that opens `compiled` and runs it RUNS times (in a child of its own)."""
    cmd = [sys.executable, os.fspath(Path(__file__).resolve()), "--child", os.fspath(compiled)]
    if not prepack:
        cmd.append("--no-prepack")
    env = {**os.environ, "PYTHONPATH": os.fspath(ROOT)}
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env)
    if p.returncode:
        raise RuntimeError(p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"rc {p.returncode}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def _child(path: str, prepack: bool) -> None:
    import numpy as np  # noqa: F401 - imported before the baseline, as in the profiling child
    import onnxruntime as ort

    from compiler.backends.ort import inputs_graph, run_session, session_options
    from compiler.host import status_kb, peak_rss, reset_peak
    from compiler.inputs import generate_inputs

    base = reset_peak()
    file0 = status_kb("RssFile") * 1024  # pages of files (the libraries' code, a mapped model), not allocations
    so = session_options(ort, "disable", 1)
    if not prepack:
        so.add_session_config_entry("session.disable_prepacking", "1")
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    load = peak_rss() - base
    loaded_rss = status_kb("VmRSS") * 1024 - base
    loaded_file = status_kb("RssFile") * 1024
    graph = inputs_graph(sess, path)
    feeds = generate_inputs(graph, {}, {})
    run_session(sess, feeds, graph)
    first = peak_rss() - base
    for _ in range(RUNS - 1):
        run_session(sess, feeds, graph)
    print(json.dumps({"peak": peak_rss() - base, "load_peak": load, "loaded_rss": loaded_rss, "first_run": first,
                      "final_rss": status_kb("VmRSS") * 1024 - base, "file_pages": [file0, loaded_file,
                                                                                     status_kb("RssFile") * 1024]}))


def _state_rows(pred: dict[str, Any]) -> list[list[Any]]:
    return [[r["type"], r["combo"], r["weight_bytes"], r["activation_bytes"]] for r in pred["ops"]]


def model_row(entry: str, path: Path, preset: str, no_prepack: bool) -> dict[str, Any]:
    """One model x preset: predicted totals, the state's per-op figures, the measured growth of the written file."""
    from simulator.model import load_source
    from simulator.peak_memory import memory_constants
    from compiler.prepare import prepare
    from simulator.predict import optimize_model, predict_model

    row: dict[str, Any] = {"entry": entry, "preset": preset}
    with tempfile.TemporaryDirectory(prefix="peakmem-") as td:
        if preset == "fp32":
            pred, _, g = predict_model(path, TARGET, "fp32", {}, td)
            written = path
            row["facts"] = graph_facts(g)
            row["memory_constants"] = memory_constants(TARGET, g)
        else:
            res = optimize_model(path, Path(td) / "export.onnx", TARGET, preset, {}, td)
            pred, written = res["prediction"], Path(res["path"])
        src = load_source(written)
        cdir = Path(td) / "measure"
        cdir.mkdir()
        prep = prepare(written, src, cdir, [TARGET], {}, {}, reload=lambda: load_source(written))
        compiled_graph, compiled = prep.compiled[0]
        row["compiled_ops"] = _op_counts(compiled_graph)
        row["predicted"] = pred["totals"]["peak_memory_bytes"]
        row["size_bytes"] = pred["totals"]["size_bytes"]
        row["file_bytes"] = written.stat().st_size
        row["state"] = _state_rows(pred)
        row["measured"] = measure(compiled)
        if no_prepack:
            row["measured_no_prepack"] = measure(compiled, prepack=False)
    return row


def graph_facts(g: Any) -> dict[str, Any]:
    """Per op of the compiled fp32 graph: output and input activation elements, a conv's weight shape and group;
    and each activation value once: (producer index or -1 for a graph input, last consumer index, elements)."""
    index = {n.id: i for i, n in enumerate(g.nodes)}
    ops = []
    for n in g.nodes:
        acts = [v for v in n.inputs if v in g.values and g.values[v].weight is None]
        ws = g.weights_of(n)
        ops.append({"type": n.op_type, "out": sum(g.values[v].elements or 0 for v in n.outputs if v in g.values),
                    "in": sum(g.values[v].elements or 0 for v in acts),
                    "w_shape": ws[0].shape if ws else None, "group": n.attributes.get("group", 1)})
    last: dict[str, int] = {}
    for n in g.nodes:
        for v in n.inputs:
            if v in g.values and g.values[v].weight is None:
                last[v] = index[n.id]
    for v in g.outputs:
        last[v] = len(g.nodes) - 1
    prod = {v: index[n.id] for n in g.nodes for v in n.outputs if v}
    live = [[prod.get(v, -1), end, g.values[v].elements or 0] for v, end in last.items() if v in g.values]
    return {"ops": ops, "live": live}


def _op_counts(g: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for n in g.nodes:
        out[n.op_type] = out.get(n.op_type, 0) + 1
    return out


def repredict(row: dict[str, Any], constants: dict[str, Any]) -> float:
    """A row's peak by this checkout's rule (simulator.totals, ORT_HOST's constants) from the state it stored: the
    constants of its model's fp32 row (packed ops, int8 scratch) with today's figures."""
    import numpy as np

    from simulator.peak_memory import ORT_HOST
    from simulator.totals import peak_bytes

    wb = np.array([x[2] for x in row["state"]], dtype=np.float64)
    act = np.array([x[3] for x in row["state"]], dtype=np.float64)
    names = [x[1] for x in row["state"]]
    const = {k: v for k, v in {**constants, **ORT_HOST}.items() if k != "decoded_at_load"}  # fp32 / int8 states
    return peak_bytes(float(row["size_bytes"]), wb, act, names, {"constants": const})


def report(rows: list[dict[str, Any]]) -> None:
    """Predicted (this checkout's rule on the stored states) against measured, per preset, the models split
    alphabetically: every other one fitted, the others held out. Recurrent models (torch/gru-bi, torch/lstm-kws)
    are listed apart: their activation figure counts every step."""
    constants = {r["entry"]: r["memory_constants"] for r in rows if r.get("memory_constants")}
    rows = [r for r in rows if "measured" in r and r["entry"] in constants]
    entries = sorted({r["entry"] for r in rows if r["entry"] not in RECURRENT})
    fit = set(entries[::2])
    for preset in sorted({r["preset"] for r in rows}):
        for part, keep in (("fitted", True), ("held out", False), ("recurrent", None)):
            sel = [r for r in rows if r["preset"] == preset
                   and ((r["entry"] in RECURRENT) if keep is None else
                        (r["entry"] not in RECURRENT and (r["entry"] in fit) == keep))]
            if not sel:
                continue
            errs = []
            for r in sel:
                m, pred = r["measured"]["peak"], repredict(r, constants[r["entry"]])
                errs.append(pred / m - 1)
                print(f"  {preset:14s} {part:9s} {r['entry']:40s} pred {pred / 1e6:8.1f} MB  "
                      f"meas {m / 1e6:8.1f} MB  {errs[-1] * 100:+6.1f}%")
            within = sum(abs(e) <= 0.15 for e in errs)
            print(f"{preset} {part}: {within}/{len(errs)} within ±15%, median {statistics.median(errs) * 100:+.1f}%, "
                  f"{min(errs) * 100:+.0f}% .. {max(errs) * 100:+.0f}%")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--child")
    ap.add_argument("--no-prepack", action="store_true")
    ap.add_argument("--presets", nargs="+", default=["fp32"])
    ap.add_argument("--only", nargs="+")
    ap.add_argument("--every", type=int, default=1, help="every n-th corpus file")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--report", type=Path, nargs="+", help="rows files (--json) to report on together")
    a = ap.parse_args()
    if a.child:
        _child(a.child, not a.no_prepack)
        return
    if a.report:
        report([json.loads(x) for f in a.report for x in f.read_text().splitlines() if x.strip()])
        return
    import corpus  # noqa: F401 - the torchvision shim first
    from corpus.cache import cache_dir

    for entry, path in corpus_files(cache_dir(), a.only)[:: a.every]:
        for preset in a.presets:
            try:
                row = model_row(entry, path, preset, a.no_prepack)
            except Exception as e:  # noqa: BLE001 - a row that fails is reported and the sweep goes on
                row = {"entry": entry, "preset": preset, "error": f"{type(e).__name__}: {str(e)[:300]}"}
            line = json.dumps(row)
            if a.json:
                with a.json.open("a") as fh:
                    fh.write(line + "\n")
            m = row.get("measured", {}).get("peak")
            print(f"{entry:40s} {preset:14s} " + (f"pred {row['predicted'] / 1e6:8.1f} meas {m / 1e6:8.1f} MB"
                                                  if m else row.get("error", "")), flush=True)


if __name__ == "__main__":
    main()
