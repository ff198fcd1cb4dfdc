"""From a model file to the compiled graph a target is simulated on (as the worker's pipeline does)."""

from __future__ import annotations

import os
from pathlib import Path

from compiler.graph import Graph


def load_source(path: str | os.PathLike[str]) -> Graph:
    from compiler import frontends

    return frontends.load(path)


def compile_for(path: str | os.PathLike[str], target: str, workdir: str | os.PathLike[str]) -> tuple[Graph, Graph]:
    """(source, compiled) for `target`, through the same backend registry as the worker."""
    from compiler.backends import compile_for_target
    from simulator.targets import check_targets_format, get_target

    get_target(target)  # unknown names fail here, with the list of targets
    source = load_source(path)
    check_targets_format([target], source.format)  # so does a target that cannot run the model's format
    compiled, _ = compile_for_target(Path(path), target, Path(workdir), source)
    return source, compiled
