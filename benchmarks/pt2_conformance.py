"""`.pt2` conformance sweep: real architectures exported with torch.export, predicted on the targets a `.pt2` is
converted for (ONNX for ORT, Core ML, `.tflite` by litert-torch), through the CLI a user runs.

Each model (torchvision / timm, random weights, eval mode, batch 1, its default input size; plus a few hand-written
cases: dynamic batch via `torch.export.Dim`, `torch.cond`, in-place ops with dropout) is exported once, in a child
process, to `--models-dir`; then `edgescope predict M.pt2 --target T --json` runs per target, nice'd, and each row
records: converted or fallback (and why), a crash (a traceback: must never happen) or a clear error, tasks of unknown
work, and the predicted latency. Conversions are cached by content under the data dir, so a re-run is quick.

Run: `nice -n 10 .venv/bin/python benchmarks/pt2_conformance.py [--only NAME ...] [--target T ...] [--jobs N]
[--models-dir DIR] [--calibration host-cpu.json] [--json rows.json]`. Prints a table and a summary; asserts nothing. No timing (no lock needed).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TARGETS = ["ort-cpu/host", "coreml/apple-a17", "ort-qnn/snapdragon-8g3", "litert-qnn/snapdragon-8g3"]
DEFAULT_DIR = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "edgescope" / "pt2-conformance"

# (name, source, constructor, input shape); "tv" = torchvision.models, "timm" = timm.create_model, "hand" = below
MODELS: list[tuple[str, str, str, tuple[int, ...]]] = [
    ("resnet18", "tv", "resnet18", (1, 3, 224, 224)),
    ("mobilenet_v3_large", "tv", "mobilenet_v3_large", (1, 3, 224, 224)),
    ("efficientnet_b0", "tv", "efficientnet_b0", (1, 3, 224, 224)),
    ("shufflenet_v2_x1_0", "tv", "shufflenet_v2_x1_0", (1, 3, 224, 224)),
    ("squeezenet1_1", "tv", "squeezenet1_1", (1, 3, 224, 224)),
    ("regnet_y_400mf", "tv", "regnet_y_400mf", (1, 3, 224, 224)),
    ("swin_t", "tv", "swin_t", (1, 3, 224, 224)),
    ("lraspp_mobilenet_v3_large", "tv-seg", "lraspp_mobilenet_v3_large", (1, 3, 520, 520)),
    ("deeplabv3_mobilenet_v3_large", "tv-seg", "deeplabv3_mobilenet_v3_large", (1, 3, 520, 520)),
    ("ssdlite320_head", "tv-det", "ssdlite320_mobilenet_v3_large", (1, 3, 320, 320)),
    ("mobilevitv2_050", "timm", "mobilevitv2_050", (1, 3, 256, 256)),
    ("efficientformerv2_s0", "timm", "efficientformerv2_s0", (1, 3, 224, 224)),
    ("fastvit_t8", "timm", "fastvit_t8", (1, 3, 256, 256)),
    ("levit_128s", "timm", "levit_128s", (1, 3, 224, 224)),
    ("convnextv2_atto", "timm", "convnextv2_atto", (1, 3, 224, 224)),
    ("maxvit_nano_rw_256", "timm", "maxvit_nano_rw_256", (1, 3, 256, 256)),
    ("edgenext_xx_small", "timm", "edgenext_xx_small", (1, 3, 256, 256)),
    ("repvit_m0_9", "timm", "repvit_m0_9", (1, 3, 224, 224)),
    ("tiny_vit_5m_224", "timm", "tiny_vit_5m_224", (1, 3, 224, 224)),
    ("ghostnet_100", "timm", "ghostnet_100", (1, 3, 224, 224)),
    ("hrnet_w18_small", "timm", "hrnet_w18_small", (1, 3, 224, 224)),
    ("sequencer2d_s", "timm", "sequencer2d_s", (1, 3, 224, 224)),
    ("mobilenetv4_conv_small", "timm", "mobilenetv4_conv_small", (1, 3, 224, 224)),
    ("efficientvit_b0", "timm", "efficientvit_b0", (1, 3, 224, 224)),
    ("deit_tiny_patch16_224", "timm", "deit_tiny_patch16_224", (1, 3, 224, 224)),
    ("poolformer_s12", "timm", "poolformer_s12", (1, 3, 224, 224)),
    ("coat_lite_tiny", "timm", "coat_lite_tiny", (1, 3, 224, 224)),
    ("dynamic_batch_cnn", "hand", "dynamic_batch", (2, 3, 64, 64)),  # batch 1 would specialise the Dim
    ("cond_branch", "hand", "cond", (1, 3, 64, 64)),
    ("inplace_dropout", "hand", "inplace_dropout", (1, 3, 64, 64)),
]


def _hand_model(kind: str) -> tuple[Any, dict[str, Any]]:
    """Cases users write by hand; returns the module and torch.export.export's extra keyword arguments."""
    import torch
    from torch import nn

    class Cnn(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
                                      nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU6(inplace=True),
                                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.2), nn.Linear(32, 10))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.body(x)

    class Cond(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = nn.Conv2d(3, 8, 3, padding=1)
            self.b = nn.Conv2d(3, 8, 5, padding=2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.cond(x.mean() > 0, lambda t: self.a(t).relu(), lambda t: self.b(t).sigmoid(), (x,))

    class InPlace(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.drop = nn.Dropout(0.5)
            self.fc = nn.Linear(8, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.conv(x)
            y.add_(1.0).mul_(0.5)
            y = torch.nn.functional.relu_(y)
            y = self.drop(y).mean((2, 3))
            return nn.functional.dropout(self.fc(y), 0.1, training=self.training)

    if kind == "dynamic_batch":
        return Cnn(), {"dynamic_shapes": ({0: torch.export.Dim("batch", min=1, max=64)},)}
    return (Cond() if kind == "cond" else InPlace()), {}


class _DetHead:
    """SSDLite's backbone + head (the part a deployment exports; box decoding and NMS stay on the host)."""

    @staticmethod
    def build(ctor: str) -> Any:
        import torch
        from torchvision import models

        det = getattr(models.detection, ctor)(weights=None, weights_backbone=None)

        class Head(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.backbone, self.head = det.backbone, det.head

            def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
                out = self.head(list(self.backbone(x).values()))
                return out["bbox_regression"], out["cls_logits"]

        return Head()


def export_one(name: str, src: str, ctor: str, shape: tuple[int, ...], out: Path) -> None:
    """In a child process: build, eval, torch.export.export, save."""
    sys.path.insert(0, os.fspath(ROOT))
    import corpus.torchvision_compat  # noqa: F401  (before torchvision)
    import torch
    from corpus.builders import randomise_zero_weights

    torch.manual_seed(0)
    extra: dict[str, Any] = {}
    if src == "tv":
        from torchvision import models
        model = getattr(models, ctor)(weights=None)
    elif src == "tv-seg":
        from torchvision.models import segmentation
        model = getattr(segmentation, ctor)(weights=None, weights_backbone=None)
    elif src == "tv-det":
        model = _DetHead.build(ctor)
    elif src == "timm":
        import timm
        model = timm.create_model(ctor, pretrained=False)
    else:
        model, extra = _hand_model(ctor)
    model.eval()
    with torch.no_grad():
        randomise_zero_weights(model)  # else litert-torch folds zero-initialised branches away (LeViT)
        ep = torch.export.export(model, (torch.randn(*shape),), **extra)
    torch.export.save(ep, os.fspath(out))


def ensure_exported(models_dir: Path, spec: tuple[str, str, str, tuple[int, ...]]) -> dict[str, Any]:
    name = spec[0]
    path = models_dir / f"{name}.pt2"
    if path.exists():
        return {"path": path}
    tmp = models_dir / f".{name}.tmp.pt2"
    code = (f"import sys; sys.path.insert(0, {os.fspath(ROOT)!r}); from benchmarks.pt2_conformance import export_one; "
            f"from pathlib import Path; export_one(*{list(spec)!r}[:3], tuple({list(spec[3])!r}), Path({os.fspath(tmp)!r}))")
    r = subprocess.run(["nice", "-n", "10", sys.executable, "-c", code], capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:
        return {"export_error": (r.stderr.strip().splitlines() or ["?"])[-1][:300]}
    tmp.rename(path)
    return {"path": path}


def predict_one(path: Path, target: str, timeout_s: float, calibration: Path | None) -> dict[str, Any]:
    cmd = ["nice", "-n", "10", sys.executable, "-m", "edgescope", "predict", os.fspath(path), "--target", target,
           "--json", *(["--calibration", os.fspath(calibration)] if calibration else [])]
    env = {**os.environ, "PYTHONPATH": os.fspath(ROOT)}
    t0 = time.perf_counter()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "wall_s": round(time.perf_counter() - t0, 1)}
    row: dict[str, Any] = {"wall_s": round(time.perf_counter() - t0, 1)}
    if r.returncode != 0:
        crashed = "Traceback (most recent call last)" in r.stderr
        row["status"] = "crashed" if crashed else "error"
        row["error"] = " ".join((r.stderr.strip().splitlines() or ["?"])[-1].split())[:400]
        return row
    try:
        out = json.loads(r.stdout)
    except json.JSONDecodeError:
        return {**row, "status": "crashed", "error": f"not JSON: {r.stdout[:200]!r}"}
    label = out.get("label") or {}
    unknown = out.get("work_unknown") or {}
    row.update(status="fallback" if label.get("fallback") else "converted", fallback=label.get("fallback"),
               latency_ms=(out.get("totals") or {}).get("latency_ms"), tasks=len(out.get("ops") or []),
               unknown_tasks=unknown.get("tasks", 0), unknown_share=unknown.get("share", 0.0),
               unknown_types=sorted({o.get("type", "?") for o in out.get("ops") or [] if o.get("work_unknown")}))
    return row


def _fmt(row: dict[str, Any]) -> str:
    st = row.get("status", "?")
    if st in ("converted", "fallback"):
        s = f"{row['latency_ms']:.3g}ms" + ("" if st == "converted" else " FB")
        return s + (f" u{row['unknown_tasks']}" if row.get("unknown_tasks") else "")
    return st.upper()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--target", action="append", default=None)
    ap.add_argument("--models-dir", type=Path, default=DEFAULT_DIR)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=1500.0)
    ap.add_argument("--json", type=Path, default=None, help="write the rows here")
    ap.add_argument("--calibration", type=Path, default=None,
                    help="host calibration file for ort-cpu/host (without one, predict calibrates first: minutes)")
    a = ap.parse_args(argv)
    targets = a.target or TARGETS
    by_name = {m[0]: m for m in MODELS}
    specs = [by_name[n] for n in a.only if n in by_name] if a.only else list(MODELS)  # in the order asked
    done: list[dict[str, Any]] = []
    if a.json and a.json.is_file():  # resume: models already swept on these targets are kept, not run again
        done = [r for r in json.loads(a.json.read_text()) if r["target"] in targets]
        specs = [m for m in specs if {r["target"] for r in done if r["model"] == m[0]} != set(targets)]
    a.models_dir.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = [r for r in done if r["model"] not in {m[0] for m in specs}]

    def run_model(spec: tuple[str, str, str, tuple[int, ...]]) -> list[dict[str, Any]]:
        got = ensure_exported(a.models_dir, spec)
        if "path" not in got:
            print(f"{spec[0]:30s} export failed: {got['export_error']}", flush=True)
            return [{"model": spec[0], "target": t, "status": "export_failed", "error": got["export_error"]}
                    for t in targets]
        out = [{"model": spec[0], "target": t, **predict_one(got["path"], t, a.timeout, a.calibration)} for t in targets]
        print(f"{spec[0]:30s} " + "  ".join(f"{_fmt(r):>14s}" for r in out), flush=True)
        return out

    print(f"{'model':30s} " + "  ".join(f"{t[:14]:>14s}" for t in targets), flush=True)
    with ThreadPoolExecutor(max(1, a.jobs)) as pool:
        for got in pool.map(run_model, specs):
            rows.extend(got)
            if a.json:
                a.json.write_text(json.dumps(rows, indent=1))
    summarize(rows, targets)
    return 0


def summarize(rows: list[dict[str, Any]], targets: list[str]) -> None:
    print("\nper target: converted / fallback / error / crashed (tasks of unknown work)")
    for t in targets:
        rs = [r for r in rows if r["target"] == t]
        n = {s: sum(r.get("status") == s for r in rs) for s in ("converted", "fallback", "error", "crashed")}
        unk = sum(r.get("unknown_tasks", 0) for r in rs)
        other = len(rs) - sum(n.values())
        print(f"  {t:28s} {n['converted']:3d} / {n['fallback']:3d} / {n['error']:3d} / {n['crashed']:3d}"
              f"  ({unk} unknown-work tasks{f'; {other} export failed or timed out' if other else ''})")
    for r in rows:
        if r.get("status") not in ("converted",):
            why = r.get("fallback") or r.get("error") or ""
            print(f"  {r['model']} on {r['target']}: {r.get('status')}: {' '.join(str(why).split())[:300]}")
        if r.get("unknown_types"):
            print(f"  {r['model']} on {r['target']}: unknown work in {', '.join(r['unknown_types'])}")


if __name__ == "__main__":
    sys.exit(main())
