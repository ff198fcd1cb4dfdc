"""How the commands print an analysis' inputs and the caveats of its figures (`analyze`, `predict`)."""

from __future__ import annotations

from typing import Any

import click


def echo_inputs(plans: list[dict[str, Any]]) -> None:
    """One line per input: the shape (and value) it ran with, and why."""
    from compiler.input_plan import InputPlan, describe

    for p in plans:
        plan = InputPlan(name=p["name"], dtype=p["dtype"], declared=p["declared"], shape=p["shape"], role=p["role"],
                         set_by=p["set_by"], value=p["value"], note=p["note"])
        click.echo(f"  input {describe(plan)}" + (" [set]" if p["set_by"] == "user" else ""))


def echo_quality(t: dict[str, Any]) -> None:
    """Say when a figure is less than it looks: a noisy measurement, tasks whose work is unknown."""
    noise = t.get("noise") or {}
    if noise.get("noisy"):
        click.echo(f"  noisy measurement: {noise['reason']}; the model's own CPU time per run was "
                   f"{noise['cpu_latency_ms']:.3f} ms ({noise['rounds']} round(s) timed)")
    unknown = t.get("work_unknown") or {}
    if unknown.get("tasks"):
        click.echo(f"  work unknown for {unknown['tasks']} task(s), {unknown['share']:.1%} of the time: their "
                   "shapes could not be resolved, so predictions for them are not reliable")
