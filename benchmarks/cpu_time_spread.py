"""How far apart repeated `cpu_ms` figures of one model land: rounds back to back (the old corpus.check timing: 3 rounds
of 0.3 s) against rounds spread out (corpus.check.CPU_ROUNDS, CPU_ROUND_GAP_S), timed alternately, N times each.
Prints each figure and max/min per protocol: on a VM whose core's speed switches between states every few seconds, the
spread protocol's 5th percentile meets the fast state more often.

  flock /work/notes/measure.lock .venv/bin/python benchmarks/cpu_time_spread.py MODEL.onnx ... [--repeats 6]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, os.fspath(ROOT))


def main() -> int:
    from corpus.check import CPU_ROUND_GAP_S, CPU_ROUNDS
    from simulator.calibration_timing import default_feeds, fast_ms, session, timed_rounds

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="+", type=Path)
    ap.add_argument("--repeats", type=int, default=6)
    a = ap.parse_args()
    protocols = {"back to back": (3, 0.0), "spread": (CPU_ROUNDS, CPU_ROUND_GAP_S)}
    for path in a.models:
        sess = session(path)
        feeds = default_feeds(sess)
        for _ in range(5):
            sess.run(None, feeds)
        figures: dict[str, list[float]] = {k: [] for k in protocols}
        for _ in range(a.repeats):
            for name, (rounds, gap) in protocols.items():
                figures[name].append(fast_ms(timed_rounds(lambda: sess.run(None, feeds), 6, 0.3, rounds, gap, 200)))
        for name, ms in figures.items():
            print(f"{path.parent.name or path.name:36s} {name:13s} {' '.join(f'{x:7.2f}' for x in ms)}"
                  f"   max/min {max(ms) / min(ms):.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
