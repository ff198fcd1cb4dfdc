"""Does a kernel pay for writing its output into lines that are not in any cache? Each single-op file (`--only`, as
`vit_gemms.py --keep DIR` writes them) timed three ways in thread CPU time: back to back; right after a flush of the
caches (a buffer several times the last-level cache touched once per line: inputs, weights and the output buffer all
cold); and after the flush with the inputs read again (hot: only the weights and the output buffer cold). The third
less the first, per byte of output beyond the core's L2, is the price of a cold output; the second less the third the
price of cold inputs. In a model, a Gemm's input was written by the task before it (hot), while its output buffer was
last touched a run of other data ago.

    flock /work/notes/measure.lock env PYTHONPATH=. .venv/bin/python benchmarks/cold_outputs.py --only DIR/*.onnx

Prints one line per file; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, os.fspath(Path(__file__).resolve().parents[1]))



def timings(path: Path, rounds: int, runs: int, flush_bytes: int) -> tuple[float, float, float, int, int]:
    """(back to back, flushed, flushed with the inputs read again) in ms, each the calibration's fast percentile of
    thread CPU time pooled over `rounds` fresh sessions; with the input and output bytes."""
    from simulator.calibration_timing import default_feeds, fast_ms, session

    buf = np.ones(flush_bytes // 4, np.float32)
    times: list[list[float]] = [[], [], []]
    in_b = out_b = 0
    for _ in range(rounds):
        s = session(path)
        feeds = default_feeds(s)
        outs = s.run(None, feeds)
        in_b, out_b = sum(a.nbytes for a in feeds.values()), sum(a.nbytes for a in outs)
        for _ in range(5):
            s.run(None, feeds)
        for mode in range(3):
            for _ in range(runs):
                if mode:
                    buf[::16] += 1.0  # one write per 64-byte line: every line of the caches replaced
                if mode == 2:
                    for a in feeds.values():
                        a.reshape(-1)[:: 16 // a.itemsize or 1].sum()  # every line of each input read back
                t = time.thread_time()
                s.run(None, feeds)
                times[mode].append(time.thread_time() - t)
    hot, cold, warm_in = (fast_ms(t) for t in times)
    return hot, cold, warm_in, in_b, out_b


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="+", type=Path, required=True, help="single-op .onnx files")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=25)
    ap.add_argument("--flush-mb", type=int, default=112, help="flush buffer (Swin-T's fp32 weights: 112 MB)")
    a = ap.parse_args()
    from simulator.host_machine import l2_bytes

    l2 = l2_bytes()  # this core's share, as the cost model reads it (0 where sysfs does not say)
    print(f"{'file':20s} {'b2b':>7s} {'flushed':>7s} {'in hot':>7s} | {'out MB':>6s} {'cold out':>8s} "
          f"{'ns/byte':>7s} | {'in MB':>6s} {'cold in':>7s}")
    for p in a.only:
        hot, cold, warm_in, in_b, out_b = timings(p, a.rounds, a.runs, a.flush_mb * 2 ** 20)
        beyond = max(out_b - l2, 0)
        per_b = (warm_in - hot) * 1e6 / beyond if beyond else float("nan")
        print(f"{p.stem:20s} {hot:7.3f} {cold:7.3f} {warm_in:7.3f} | {out_b / 1e6:6.2f} {warm_in - hot:+8.3f} "
              f"{per_b:7.3f} | {in_b / 1e6:6.2f} {cold - warm_in:+7.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
