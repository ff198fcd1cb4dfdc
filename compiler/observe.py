"""Shapes only a run shows, for the targets nothing measures here.

ONNX shape inference and ONNX Runtime's constant folding (`compiler.concrete.apply_plan`) resolve every shape that
follows from the input shapes; the output of a NonZero, of a TopK whose k is read from data, of a whole detector's
score thresholds and NMS, depends on the values. An analysis that profiles `ort-cpu/host` sees them in the profile
(worker.pipeline); `edgescope predict` on a device target, or an upload analysed on device targets only, did not:
torchvision's whole SSD300 had 1,027 tasks of unknown work on every device target, 87% of its predicted time.
Here such a model runs once on this machine's ONNX Runtime (sandboxed, at the plan's inputs, as profiling runs it),
and the shapes it saw fill the graphs by value name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from compiler.graph import Graph
from compiler.input_plan import InputPlan

HOST = "ort-cpu/host"


def observe_once(concrete: Path | None, source: Graph, graphs: Sequence[Graph], plans: Mapping[str, InputPlan],
                 workdir: Path) -> int:
    """When values of an ONNX model are still unknown in `source` or `graphs`, run `concrete` (the model with the
    plan's input dims fixed) once on ONNX Runtime and fill them from what it saw. Returns how many values were set
    (0 when nothing was unknown, or the run failed: the shapes stay unknown, as before)."""
    from compiler.concrete import fill_by_name, fill_from_twins, observed_shapes, unknown_values

    if concrete is None or source.format != "onnx" or not any(unknown_values(g) for g in [source, *graphs]):
        return 0
    from compiler.backends import compile_for_target, for_target
    from compiler.errors import ModelRunError, SandboxError
    from compiler.input_plan import concrete_shapes, fill_values, value_ranges
    from compiler.profile import ProfileSettings

    d = Path(workdir) / "observe"
    d.mkdir(parents=True, exist_ok=True)
    settings = ProfileSettings(warmup=0, runs=1, input_shapes=concrete_shapes(dict(plans)),
                               input_values=fill_values(dict(plans)), input_ranges=value_ranges(dict(plans)))
    try:
        host, out = compile_for_target(concrete, HOST, d, source)
        if out is None:
            return 0
        seen = observed_shapes(host, for_target(HOST).profile(out, settings).output_shapes or {})
    except (ModelRunError, SandboxError, ImportError, OSError, RuntimeError):
        # Best effort: a runtime that cannot run here (missing, refused, out of memory) leaves those shapes unknown,
        # as before, and the prediction says how much of its time is in tasks of unknown work.
        return 0
    return sum(fill_by_name(g, seen) + fill_from_twins(g) for g in [source, *graphs])
