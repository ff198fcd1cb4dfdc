"""`edgescope solve`: the fewest per-op changes that bring a model within a budget (simulator/solver/)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import click

from .common import (MODEL_ARGUMENT, calibration_path, ensure_calibrated, fail, keep_conversions, parse_inputs,
                     parse_ops, resolve_target, target_option, user_errors, with_inputs)


def _solve(model: Path, target: str, model_wide: str, ops: dict[str, str], budget: Any, keep: tuple[str, ...],
           calibration: Path | None, shapes: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """Compile and sweep MODEL as `predict` does, then solve on its option table."""
    from compiler.input_plan import fill_values
    from compiler.vocabulary.options import parse_preset
    from compiler.vocabulary.targets import get_target
    from simulator.model import compile_for
    from simulator.predict import label_text, task_overrides
    from simulator.solver import prepare, solution_json, solve
    from simulator.calibrated import hardware_for
    from simulator.sweep import sweep

    t = get_target(target)
    preset = parse_preset(model_wide).name
    ensure_calibrated([target], calibration_path(calibration), model)
    with tempfile.TemporaryDirectory() as td:
        source, compiled, plans = compile_for(model, target, td, shapes, values)
        hw = hardware_for(t, calibration_path(calibration) if t.profile == "host-cpu" else None)
        r = sweep(compiled, target, hardware=hw, source=source, input_values=fill_values(plans))
    overrides = task_overrides(compiled, r.per_op, ops, t.float_format)
    keep_ids = list(task_overrides(compiled, r.per_op, {k: t.float_format for k in keep}, t.float_format))
    sol = solve(prepare(r.bulk, r.per_op), preset, overrides, budget, keep_ids)
    names = {n.id: n.name for n in compiled.nodes}
    out = {"target": target, "label": r.bulk["label"], "label_text": label_text(r.bulk["label"]), **solution_json(sol)}
    for p in out["proposals"] + ([out["closest"]] if out["closest"] else []):
        for c in p["changes"]:
            c["name"] = names.get(c["op"], "")
    return out


def _echo_proposal(p: dict[str, Any], start: dict[str, float]) -> None:
    t = p["totals"]
    click.echo(f"  [{', '.join(p['objectives']) or 'closest'}] {len(p['changes'])} change(s), "
               f"{p['non_float_ops']} op(s) not float: latency {t['latency_ms']:.3f} ms "
               f"(was {start['latency_ms']:.3f}), size {t['size_bytes'] / 1e6:.3f} MB, peak memory "
               f"{t['peak_memory_bytes'] / 1e6:.2f} MB, memory power {t['memory_power_mw']:.1f} mW")
    for c in p["changes"][:20]:
        click.echo(f"    {c['name'] or c['op']}: {c['before']} -> {c['after']}")
    if len(p["changes"]) > 20:
        click.echo(f"    ... and {len(p['changes']) - 20} more (--json lists all)")


@click.command()
@MODEL_ARGUMENT
@target_option()
@click.option("--model-wide", default="fp32", show_default=True, help="The starting state's preset.")
@click.option("--op", "ops", multiple=True, metavar="NAME=OPTION", help="A starting override (as for predict).")
@click.option("--latency-ms", type=float, default=None, help="Latency limit.")
@click.option("--fps", type=float, default=None, help="Frame-rate floor (a latency limit of 1000/fps).")
@click.option("--peak-memory-mb", type=float, default=None, help="Peak memory limit (MB, 10^6 bytes).")
@click.option("--size-mb", type=float, default=None, help="Model size limit (MB, 10^6 bytes).")
@click.option("--memory-power-mw", type=float, default=None, help="Memory power limit (mW).")
@click.option("--keep-float", "keep", multiple=True, metavar="NAME",
              help="An op (task id, task name or source node) that must stay float (repeatable).")
@with_inputs
@click.option("--calibration", type=click.Path(dir_okay=False, path_type=Path), default=None)
@click.option("--json", "as_json", is_flag=True, help="Print the proposals as one JSON object.")
def solve(model: Path, target: tuple[str, ...], model_wide: str, ops: tuple[str, ...], latency_ms: float | None,
          fps: float | None, peak_memory_mb: float | None, size_mb: float | None, memory_power_mw: float | None,
          keep: tuple[str, ...], inputs: tuple[str, ...], values: tuple[str, ...], calibration: Path | None,
          as_json: bool) -> None:
    """Propose the fewest per-op changes that bring MODEL within a budget on TARGET (several proposals: fewest
    changes, most layers kept float, least size), from its option table and the totals rule."""
    from simulator.solver import Budget

    target_name = resolve_target(model, target, "solve")
    keep_conversions()
    shapes, vals = parse_inputs(inputs, values)
    try:
        budget = Budget.of(latency_ms=latency_ms, fps=fps,
                           peak_memory_bytes=peak_memory_mb * 1e6 if peak_memory_mb is not None else None,
                           size_bytes=size_mb * 1e6 if size_mb is not None else None, memory_power_mw=memory_power_mw)
        out = _solve(model, target_name, model_wide, parse_ops(ops), budget, keep, calibration, shapes, vals)
    except user_errors() as e:
        fail(str(e))
    if as_json:
        click.echo(json.dumps(out))
        return
    s = out["start"]
    click.echo(f"{out['target']}  {out['model_wide']}: latency {s['latency_ms']:.3f} ms, size "
               f"{s['size_bytes'] / 1e6:.3f} MB; budget " + ", ".join(f"{k} <= {v:g}" for k, v in out["budget"].items()))
    click.echo(f"  {out['label_text']}")
    if not out["feasible"]:
        click.echo(f"  no state in the option table meets the budget; the closest found still exceeds "
                   f"{', '.join(out['unmet'])}:")
        _echo_proposal(out["closest"], s)
        raise SystemExit(1)
    for p in out["proposals"]:
        _echo_proposal(p, s)


commands: list[click.Command] = [solve]
