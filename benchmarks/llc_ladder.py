"""How much of a model's weights the last-level cache keeps between runs on this machine: batch-1 MatMul chains
(8 k x k fp32 weights each, as calibration's `stream` and `memory` chains) timed round-robin at growing footprints,
thread CPU time at the 5th percentile (simulator.calibration_timing). The rate falls from the last-level cache's to
memory's where the cache stops holding them (simulator.roofline.outgrown). Run under the measuring lock:

    PYTHONPATH=. .venv/bin/python benchmarks/llc_ladder.py [K ...]   # default k: 768 .. 4096

Prints each footprint's MB, ms per run and GB/s, and the last-level cache sysfs lists (whole, this CPU's share).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.fspath(Path(__file__).resolve().parents[1]))

DEFAULT_KS = (768, 1024, 1536, 2048, 2304, 2432, 2560, 2816, 3072, 4096)


def main(argv: list[str]) -> int:
    from simulator.calibration_models import R, matmul_chain
    from simulator.calibration_timing import time_interleaved
    from simulator.host_machine import llc_bytes

    ks = [int(a) for a in argv] or list(DEFAULT_KS)
    share, whole = llc_bytes()
    print(f"last-level cache (sysfs): {whole / 2**20:.0f} MiB, this CPU's share {share / 2**20:.0f} MiB")
    with tempfile.TemporaryDirectory() as tmp:
        models = {str(k): (matmul_chain(1, k)(Path(tmp) / f"mm{k}.onnx"), "all", 4) for k in ks}
        ms = time_interleaved(models, rounds=6, budget_s=0.3)
    for k in ks:
        mb = R * k * k * 4 / 1e6
        print(f"k={k:5d}  weights {mb:7.1f} MB  {ms[str(k)]:8.3f} ms  {mb / ms[str(k)]:6.1f} GB/s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
