from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from compiler import frontends
from compiler.graph import Graph
from testkit import modelzoo


class Zoo:
    """Zoo models built once per session, on first use."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._paths: dict[str, Path] = {}
        self._graphs: dict[str, Graph] = {}

    def path(self, name: str, builder: Callable[..., Path] | None = None, **kwargs) -> Path:
        key = name + "".join(f"-{k}={v}" for k, v in sorted(kwargs.items()))
        if key not in self._paths:
            build = builder or modelzoo.BUILDERS[name]
            self._paths[key] = build(self.root / f"{key}.onnx", **kwargs)
        return self._paths[key]

    def graph(self, name: str, **kwargs) -> Graph:
        key = name + "".join(f"-{k}={v}" for k, v in sorted(kwargs.items()))
        if key not in self._graphs:
            self._graphs[key] = frontends.load(self.path(name, **kwargs))
        return self._graphs[key]


@pytest.fixture(scope="session")
def zoo(tmp_path_factory: pytest.TempPathFactory) -> Zoo:
    return Zoo(tmp_path_factory.mktemp("zoo"))
