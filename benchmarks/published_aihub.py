"""Write simulator/published/aihub.csv from Qualcomm AI Hub's published perf.yaml files.

    python benchmarks/published_aihub.py /path/to/quic/ai-hub-models/.git [--out simulator/published/aihub.csv]

Reads `qai_hub_models/models/<id>/perf.yaml` at the repository's HEAD commit (git show, no work tree needed) for
the models in simulator/published/architectures.yaml, on the Galaxy S24 (Snapdragon 8 Gen 3) and Galaxy S25
(Snapdragon 8 Elite), every runtime (tflite = TFLite + QNN delegate, qnn_dlc = QNN, onnx = ONNX Runtime QNN EP)
and every precision AI Hub lists. One row per measurement; each row's source names the repository, path, commit.
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simulator.published import ARCHITECTURES_PATH, COLUMNS  # noqa: E402

PRECISIONS = ("float", "w8a8", "w8a16")
DEVICES = {"Samsung Galaxy S24": "snapdragon-8g3", "Samsung Galaxy S25": "snapdragon-8-elite"}


def _git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", repo, *args], check=True, capture_output=True, text=True).stdout


def rows(repo: str) -> list[dict[str, str]]:
    commit = _git(repo, "rev-parse", "HEAD").strip()
    archs = {a["model"]: a for a in yaml.safe_load(ARCHITECTURES_PATH.read_text())["architectures"]}
    out = []
    for model_id, arch in archs.items():
        path = f"qai_hub_models/models/{model_id}/perf.yaml"
        try:
            perf = yaml.safe_load(_git(repo, "show", f"{commit}:{path}"))
        except subprocess.CalledProcessError:
            continue  # a coremltools name, not an AI Hub model
        for precision, p in (perf.get("precisions") or {}).items():
            if precision not in PRECISIONS:
                continue  # mixed-precision variants (w8a16_mixed_int16...) are not options here
            for _component, c in (p.get("components") or {}).items():
                for device, chip in DEVICES.items():
                    for runtime, r in (c.get("performance_metrics", {}).get(device) or {}).items():
                        ms = r.get("inference_time_milliseconds")
                        if r.get("job_status") != "Passed" or ms is None:
                            continue
                        mem = r.get("estimated_peak_memory_range_mb") or {}
                        lc = r.get("layer_counts") or {}
                        out.append({
                            "model": model_id, "input": f"1x3x{arch['size']}x{arch['size']}", "device": device,
                            "chip": chip, "runtime": runtime, "precision": precision, "latency_ms": ms,
                            "mem_min_mb": mem.get("min", ""), "mem_max_mb": mem.get("max", ""),
                            "layers_total": lc.get("total", ""), "layers_npu": lc.get("npu", 0) if lc else "",
                            "layers_gpu": lc.get("gpu", 0) if lc else "", "layers_cpu": lc.get("cpu", 0) if lc else "",
                            "source": f"github quic/ai-hub-models {path} @{commit}",
                        })
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repo", help="git directory of quic/ai-hub-models")
    ap.add_argument("--out", default=str(ROOT / "simulator/published/aihub.csv"))
    a = ap.parse_args(argv)
    rs = rows(a.repo)
    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rs)
    print(f"{len(rs)} rows, {len({r['model'] for r in rs})} models -> {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
