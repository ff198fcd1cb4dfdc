"""From a model file to the compiled graph a target is simulated on (as the worker's pipeline does)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from compiler.graph import Graph
from compiler.input_plan import InputPlan, Scalar


def load_source(path: str | os.PathLike[str]) -> Graph:
    from compiler import frontends

    return frontends.load(path)


def compile_for(path: str | os.PathLike[str], target: str, workdir: str | os.PathLike[str],
                input_shapes: Mapping[str, Sequence[int]] | None = None,
                input_values: Mapping[str, Scalar] | None = None) -> tuple[Graph, Graph, dict[str, InputPlan]]:
    """(source, compiled, input plan) for `target` at the inputs the worker would use (the given shapes and
    values, defaults for the rest), through the same backend registry and input planning as the worker."""
    from compiler.prepare import prepare
    from compiler.vocabulary.targets import check_targets_format, get_target

    get_target(target)  # unknown names fail here, with the list of targets
    source = load_source(path)
    check_targets_format([target], source.format)  # so does a target that cannot run the model's format
    from compiler.observe import observe_once

    prep = prepare(Path(path), source, Path(workdir), [target], input_shapes or {}, input_values or {},
                   reload=lambda: load_source(path), target_dir=lambda i: Path(workdir))
    # Nothing is profiled here: shapes that depend on the data (a detector's NMS) are seen in one run instead.
    observe_once(prep.path, prep.source, [prep.compiled[0][0]], prep.plans, Path(workdir))
    return prep.source, prep.compiled[0][0], prep.plans
