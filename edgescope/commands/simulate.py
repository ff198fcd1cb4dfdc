"""Simulator commands: `predict`, `optimize`, `options`, `calibrate` (added to `edgescope` by edgescope/cli.py)."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import click

from .common import (MODEL_ARGUMENT, calibration_path, ensure_calibrated, fail, keep_conversions, parse_inputs,
                     parse_ops, resolve_target, target_option, user_errors, with_inputs)


def _print_totals(out: dict[str, Any]) -> None:
    t = out["totals"]
    click.echo(f"{out['target']}  {out['model_wide']}" + (f" + {len(out['overrides'])} overrides" if out["overrides"]
                                                        else ""))
    click.echo(f"  {out['label_text']}")
    click.echo(f"  latency {t['latency_ms']:.3f} ms ({t['fps']:.1f} fps)   size {t['size_bytes'] / 1e6:.3f} MB   "
               f"peak memory {t['peak_memory_bytes'] / 1e6:.2f} MB   memory power {t['memory_power_mw']:.1f} mW")


def _print_inputs_and_unknown(out: dict[str, Any]) -> None:
    from edgescope.commands.echo import echo_inputs

    echo_inputs(out["inputs"])
    unknown = out["work_unknown"]
    if unknown["tasks"]:
        click.echo(f"  work unknown for {unknown['tasks']} task(s), {unknown['share']:.1%} of the predicted time: "
                   "their shapes could not be resolved, so these predictions are not reliable")


@click.command()
@MODEL_ARGUMENT
@target_option()
@click.option("--model-wide", default="as-uploaded", show_default=True,
              help="Option for every op (preset name); as-uploaded: the preset the file is stored as (fp32, or fp16 / "
                   "int8-static for a file stored so: an fp16 or int8 .tflite, an ONNX QDQ file on a device target).")
@click.option("--op", "ops", multiple=True, metavar="NAME=OPTION",
              help="Per-op override: task id or source node name = preset or in/out/kernel/sparsity combo.")
@with_inputs
@click.option("--calibration", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Host calibration cache (default <data dir>/calibration/host-cpu.json).")
@click.option("--top", default=10, show_default=True, help="Slowest ops to list (text output).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object: totals, label, inputs and every op.")
def predict(model: Path, target: tuple[str, ...], model_wide: str, ops: tuple[str, ...], inputs: tuple[str, ...],
            values: tuple[str, ...], calibration: Path | None, top: int, as_json: bool) -> None:
    """Predict latency, size, peak memory and memory power of MODEL on TARGET (repeatable in text output), without
    running it."""
    from simulator.predict import predict_model

    if as_json and len(target) > 1:
        fail(f"--json prints one target's prediction; --target was given {len(target)} times")
    keep_conversions()
    targets = target or (resolve_target(model, ()),)
    shapes, vals = parse_inputs(inputs, values)
    for i, name in enumerate(targets):
        try:
            ensure_calibrated([name], calibration_path(calibration), model)
            with tempfile.TemporaryDirectory() as td:
                out, *_ = predict_model(model, name, model_wide, parse_ops(ops), td, calibration_path(calibration),
                                        shapes, vals)
        except user_errors() as e:
            fail(str(e) if len(targets) == 1 else f"{name}: {e}")
        if as_json:
            click.echo(json.dumps(out))
            return
        if i:
            click.echo()
        _print_totals(out)
        _print_inputs_and_unknown(out)
        for r in sorted(out["ops"], key=lambda r: -r["latency_ms"])[:top]:
            click.echo(f"  {r['latency_ms']:9.4f} ms  {r['type']:18s} {r['combo']:20s} {r['unit']:8s} "
                       f"{r['name'] or r['id']}")


@click.command()
@MODEL_ARGUMENT
@target_option()
@click.option("--model-wide", required=True, help="Option for every op (preset name).")
@click.option("--op", "ops", multiple=True, metavar="NAME=OPTION", help="Per-op override (as for predict).")
@click.option("--out", "out_path", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Output file: .onnx (ONNX Runtime targets), .mlpackage.zip (Core ML), .tflite (LiteRT).")
@click.option("--calibration", type=click.Path(dir_okay=False, path_type=Path), default=None)
@click.option("--measure", is_flag=True, help="ort-cpu/host, litert-cpu/host: also time the written model here (1 thread).")
@with_inputs
@click.option("--json", "as_json", is_flag=True)
def optimize(model: Path, target: tuple[str, ...], model_wide: str, ops: tuple[str, ...], out_path: Path,
             calibration: Path | None, measure: bool, inputs: tuple[str, ...], values: tuple[str, ...],
             as_json: bool) -> None:
    """Write the optimized model for TARGET and print its predicted totals next to its real size.

    ONNX Runtime targets: ONNX Runtime's quantizers; Core ML: coremltools.optimize.coreml (from a
    .mlpackage or .pt2); LiteRT: ai-edge-quantizer (fp32, fp16, int8-dynamic, int8-static, int4-weights)."""
    from simulator.predict import optimize_model

    target_name = resolve_target(model, target, "optimize (one file per target)")
    keep_conversions()
    shapes, vals = parse_inputs(inputs, values)
    try:
        ensure_calibrated([target_name], calibration_path(calibration), model)
        with tempfile.TemporaryDirectory() as td:
            result = optimize_model(model, out_path, target_name, model_wide, parse_ops(ops), td,
                                    calibration_path(calibration), input_shapes=shapes, input_values=vals)
    except user_errors() as e:
        fail(str(e))
    out = result["prediction"]
    pred = out["totals"]["size_bytes"]
    result = {**out, "path": result["path"], "size_bytes": result["size_bytes"],
              "size_error_pct": result["size_error_pct"], "notes": result["notes"]}
    if measure and target_name == "ort-cpu/host":
        from simulator.calibration_timing import wall_ms

        ms = wall_ms(Path(result["path"]), min_runs=20, budget_s=0.5, rounds=3, feeds=_feeds(result))
        result["measured"] = {"latency_ms": ms, "label": "measured: onnxruntime CPU EP, 1 thread, lowest of 3 "
                                                         "medians on this machine"}
    elif measure and target_name == "litert-cpu/host":
        from compiler.backends.litert import profile

        from simulator.measured import own_whole_ms

        # On a busy machine its CPU time, as an analysis or a browser export reads it (worker.results), not the
        # wall time that waited for the CPU.
        p = profile(Path(result["path"]))
        own = own_whole_ms(p)
        result["measured"] = {"latency_ms": own, "wall_latency_ms": p.latency_ms,
                              "label": f"measured: {p.runtime}, {p.threads} thread(s)"
                                       + (", CPU time (the machine was busy)" if own < p.latency_ms else "")}
    if as_json:
        click.echo(json.dumps(result))
        return
    _print_totals(out)
    _print_inputs_and_unknown(out)
    click.echo(f"  wrote {result['path']}: {result['size_bytes'] / 1e6:.3f} MB on disk (predicted {pred / 1e6:.3f} MB, "
               f"{result['size_error_pct']:+.1f}%)")
    if "measured" in result:
        m = result["measured"]["latency_ms"]
        click.echo(f"  measured latency {m:.3f} ms (predicted {out['totals']['latency_ms']:.3f} ms, "
                   f"{(out['totals']['latency_ms'] / m - 1) * 100:+.1f}%)")
    for n in result["notes"]:
        click.echo(f"  note: {n}")


def _feeds(result: dict[str, Any]) -> dict[str, Any]:
    """Inputs for timing the written model: the ones its prediction was made at (the input plan)."""
    from compiler.frontends import onnx as onnx_frontend
    from compiler.input_plan import stored_inputs
    from compiler.inputs import generate_inputs

    st = stored_inputs(result["inputs"])
    return generate_inputs(onnx_frontend.load(result["path"]), st["input_shapes"], st["input_values"],
                           ranges=st["input_ranges"])


@click.command()
@click.option("--json", "as_json", is_flag=True)
def options(as_json: bool) -> None:
    """List the option names and what each means on each backend."""
    from compiler.vocabulary.formats import ACTIVATION_FORMATS, KERNEL_FORMATS, SPARSITIES
    from compiler.vocabulary.options import BACKEND_NOTES, BULK_PRESETS, all_presets
    from compiler.vocabulary.targets import get_target, list_targets

    presets = [{"name": p.name, "description": p.description} for p in all_presets()]
    data = {"presets": presets, "combinations": [p for p in BULK_PRESETS if "+" in p],
            "combo": {"format": "input/output/kernel/sparsity", "activation_formats": list(ACTIVATION_FORMATS),
                      "kernel_formats": list(KERNEL_FORMATS), "sparsities": list(SPARSITIES)},
            "targets": [{"name": n, "description": get_target(n).description,
                         "notes": BACKEND_NOTES.get(get_target(n).backend, {})} for n in list_targets()]}
    if as_json:
        click.echo(json.dumps(data))
        return
    click.echo("Presets (use with --model-wide or --op NAME=OPTION; combine pruning with one other: prune-50+int8-static):")
    for p in presets:
        click.echo(f"  {p['name']:16s} {p['description']}")
    click.echo("Per-op combos: input/output/kernel/sparsity, e.g. int8/int8/lut4/50; activations "
               f"{', '.join(ACTIVATION_FORMATS)}; kernels {', '.join(KERNEL_FORMATS)}; sparsity {SPARSITIES}")
    for t in data["targets"]:
        click.echo(f"\n{t['name']}: {t['description']}")
        for k, v in t["notes"].items():
            click.echo(f"  {k:14s} {v}")


@click.command()
@click.option("--out", "out_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Cache file (default <data dir>/calibration/host-cpu.json).")
@click.option("--force", is_flag=True, help="Measure again even if the cache is current.")
@click.option("--json", "as_json", is_flag=True)
def calibrate(out_path: Path | None, force: bool, as_json: bool) -> None:
    """Measure kernels with ONNX Runtime (1 thread) and fit the host-cpu profile (about 70 s of CPU time, once per
    machine), then LiteRT's (XNNPACK's) kernels for litert-cpu/host (about 30 s)."""
    from simulator.calibration import load_or_calibrate
    from simulator.litert_calibration import cache_path, with_litert

    path = calibration_path(out_path)
    echo = lambda s: None if as_json else click.echo(s, err=True)  # noqa: E731
    hw = load_or_calibrate(path, progress=echo, force=force)
    if force:
        cache_path(path).unlink(missing_ok=True)
    with_litert(hw, path, progress=echo)
    cache = json.loads(path.read_text())
    litert = json.loads(cache_path(path).read_text())
    if as_json:
        click.echo(json.dumps({**cache, "litert": litert}))
        return
    cpu = cache["overrides"]["units"]["cpu"]
    click.echo(f"host-cpu calibrated in {cache['seconds']:.1f} s on {cache['machine']} (onnxruntime "
               f"{cache['onnxruntime']}) -> {path}")
    click.echo(f"  per inference {cpu['run_overhead_s'] * 1e6:.1f} us, per kernel {cpu['dispatch_overhead_s'] * 1e6:.2f} us, "
               f"cache {cpu['cache_bandwidth_bytes_per_s'] / 1e9:.1f} GB/s, weights "
               f"{cache['overrides']['dram_bandwidth_bytes_per_s'] / 1e9:.1f} GB/s")
    if probe := cache.get("speed_probe"):  # compiler/speed_probe.py: what every profile is held against
        click.echo(f"  speed probe {probe['before_gflops']:.0f} GFLOP/s before the timings, {probe['after_gflops']:.0f} "
                   f"after" + ("; the CPU's speed changed during them: calibrate again (--force) at a steady moment"
                               if probe.get("drifted") else ""))
    for k, v in sorted(cpu["efficiency"].items()):
        click.echo(f"  efficiency {k:18s} {v:.3f}")
    click.echo(f"litert-cpu (ai-edge-litert {litert['litert']}, XNNPACK) -> {cache_path(path)}")
    for k, v in sorted(litert["overrides"]["units"]["cpu"]["efficiency"].items()):
        click.echo(f"  efficiency {k:18s} {v:.3f}")


commands: list[click.Command] = [predict, optimize, options, calibrate]

if __name__ == "__main__":  # pragma: no cover
    grp = click.Group("simulate", commands={c.name: c for c in commands if c.name})
    grp(sys.argv[1:])
