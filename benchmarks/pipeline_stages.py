"""Where an analysis spends its CPU and memory, stage by stage: `worker.pipeline.analyze` and the job's store step
(`worker.jobs.store_blobs`, into a local blob store) in this process, with each stage's wall time, CPU time (this
process, and its sandboxed children: parse, compile and profile run in those) and peak resident memory of this
process with its children, sampled every 50 ms. On a loaded machine the CPU seconds are the figure to compare.

    .venv/bin/python benchmarks/pipeline_stages.py --scale 50000 [--runs 30] [--cprofile 40] [--calibration FILE]

`--scale N`: the scale models of benchmarks/pipeline.py (a chain of N elementwise nodes; an LLM-like graph for
N >= 100,000, or with --llm). `--cprofile K`: also print the K most expensive functions (cumulative). Prints figures;
it is not a test.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import resource
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _cpu() -> tuple[float, float]:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


class StagePeaks:
    """Peak RSS of this process and its children per stage, sampled every 50 ms."""

    def __init__(self) -> None:
        self.stage, self.peaks, self._run = "start", {}, True
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        import psutil

        me = psutil.Process()
        while self._run:
            try:
                rss = me.memory_info().rss + sum(c.memory_info().rss for c in me.children(recursive=True))
            except psutil.Error:  # a child ended between listing and reading
                rss = 0
            self.peaks[self.stage] = max(self.peaks.get(self.stage, 0), rss)
            time.sleep(0.05)

    def stop(self) -> None:
        self._run = False
        self._thread.join()


def _progress(peaks: StagePeaks, rows: dict[str, tuple[float, float, float]]) -> Callable[[str, float], None]:
    start: dict[str, tuple[float, float, float]] = {}

    def progress(stage: str, frac: float) -> None:
        if frac == 0.0:
            peaks.stage = stage
            start[stage] = (time.perf_counter(), *_cpu())
        elif frac >= 1.0 and stage in start:  # the last report of a stage is its end (a stage reports per target)
            t0, s0, c0 = start[stage]
            s1, c1 = _cpu()
            rows[stage] = (time.perf_counter() - t0, s1 - s0, c1 - c0)
    return progress


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=int, default=50_000)
    ap.add_argument("--llm", action="store_true", help="the LLM-like graph at any size")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--calibration", type=Path, help="a host calibration cache (else the uncalibrated profile)")
    ap.add_argument("--cprofile", type=int, default=0, metavar="K")
    a = ap.parse_args()
    from benchmarks.pipeline import llm_like
    from store.blobs import LocalBlobStore
    from testkit import modelzoo
    from worker import jobs, pipeline, results

    with tempfile.TemporaryDirectory(prefix="edgescope-stages-") as d:
        tmp = Path(d)
        model = tmp / "model.onnx"
        if a.llm or a.scale >= 100_000:
            llm_like(model, a.scale)
        else:
            modelzoo.large_chain(model, n_nodes=a.scale)
        (tmp / "work").mkdir()
        opts = pipeline.AnalysisOptions(runs=a.runs, warmup=5, check_exports=False, calibration_path=a.calibration)
        peaks, rows = StagePeaks(), {}
        progress = _progress(peaks, rows)
        prof = cProfile.Profile() if a.cprofile else None
        if prof:
            prof.enable()
        result = pipeline.analyze(model, tmp / "work", opts, progress)

        class Services:
            blobs = LocalBlobStore(tmp / "blobs")

        progress("store", 0.0)
        tables: dict[str, dict[str, object]] = {}
        stored = jobs.store_blobs(Services, "m", "j", result, tables)  # type: ignore[arg-type]
        results.summary(result, tables)
        progress("store", 1.0)
        if prof:
            prof.disable()
        peaks.stop()
    print(f"{model.name}: {a.scale:,} nodes, {len(result.targets[0].compiled.nodes):,} tasks, {a.runs} runs")
    print(f"{'stage':<9} {'wall s':>7} {'CPU s':>6} {'children CPU s':>14} {'peak GB':>7}")
    for stage, (wall, me, kids) in rows.items():
        print(f"{stage:<9} {wall:7.1f} {me:6.1f} {kids:14.1f} {peaks.peaks.get(stage, 0) / 1e9:7.2f}")
    total = [sum(r[i] for r in rows.values()) for i in range(3)]
    print(f"{'total':<9} {total[0]:7.1f} {total[1]:6.1f} {total[2]:14.1f} {max(peaks.peaks.values()) / 1e9:7.2f}")
    print("largest blobs: " + ", ".join(f"{kind} {size / 1e6:.1f} MB"
                                        for kind, _, _, size in sorted(stored, key=lambda s: -s[3])[:4]))
    if prof:
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(a.cprofile)
        print(out.getvalue())


if __name__ == "__main__":
    main()
