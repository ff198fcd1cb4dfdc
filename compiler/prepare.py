"""From a model file to the task graph of every target, at one set of concrete input shapes.

The input plan (`compiler.input_plan`) is applied to the model (`compiler.concrete.apply_plan`), then each target
compiles it; what a compiler resolved (shape arithmetic ONNX Runtime folded into constants) fills the source's
unknown shapes. A Reshape whose input cannot take its constant target shape means the model cannot run at those
inputs: when one defaulted dim explains it (an exporter baked a traced sequence length in), the dim is set to the
size the model needs and the model compiled again, once; else the error names the input and dim to set.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from compiler.concrete import apply_plan, fill_by_name, reshape_conflicts, static_shapes
from compiler.errors import InputSpecError
from compiler.graph import Graph
from compiler.input_hints import conflict_message, required_fix
from compiler.input_plan import InputPlan, Scalar, plan_inputs


@dataclass
class Prepared:
    source: Graph  # with the plan's input shapes and every shape resolved from them
    plans: dict[str, InputPlan]
    compiled: list[tuple[Graph, Path | None]]  # per target: task graph, compiled file (when the backend writes one)
    path: Path | None = None  # the file the targets compiled (for ONNX, the copy with the plan's input dims fixed)


def prepare(model_path: Path, source: Graph, workdir: Path, targets: Sequence[str],
            shapes: Mapping[str, Sequence[int]], values: Mapping[str, Scalar], reload: Callable[[], Graph],
            on_plan: Callable[[dict[str, InputPlan]], None] = lambda plans: None,
            on_target: Callable[[int], None] = lambda i: None,
            target_dir: Callable[[int], Path] | None = None) -> Prepared:
    """Plan the inputs, apply them and compile for every target. `reload()` loads the source again (a retry
    starts from its declared shapes); `on_plan` gets each plan as soon as it is made; target i compiles in
    `target_dir(i)` (default `workdir/target-i`; a retry compiles there again)."""
    from compiler.backends import compile_for_target

    pinned = {k: list(v) for k, v in shapes.items()}
    required: dict[str, str] = {}
    for attempt in (0, 1):
        if attempt:
            source = reload()
        plans = plan_inputs(source, pinned, values)
        for name, why in required.items():
            plans[name].set_by, plans[name].note = "model", why
        on_plan(plans)
        adir = Path(workdir) / f"inputs-{attempt}"
        adir.mkdir(parents=True, exist_ok=True)
        path, folded = apply_plan(model_path, source, plans, adir)
        compiled: list[tuple[Graph, Path | None]] = []
        for i, target in enumerate(targets):
            tdir = target_dir(i) if target_dir else Path(workdir) / f"target-{i}"
            tdir.mkdir(parents=True, exist_ok=True)
            graph, out = compile_for_target(path, target, tdir, source)
            fill_by_name(source, static_shapes(graph))  # what the compiler resolved (e.g. a folded Range)
            compiled.append((graph, out))
            on_target(i)
        checked = [source] + ([folded] if folded is not None else []) + [g for g, _ in compiled]
        conflicts = [(c, g) for g in checked for c in reshape_conflicts(g)]
        if not conflicts:
            return Prepared(source, plans, compiled, path)
        conflict, graph = conflicts[0]
        fix = required_fix(conflict, graph, plans)
        if fix is None or attempt:
            raise InputSpecError(conflict_message(conflict, graph, plans))
        name, shape, why = fix
        pinned[name], required[name] = shape, why
    raise AssertionError("unreachable")
