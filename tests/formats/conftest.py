"""Models of every non-ONNX format, built once per test session on first use (no downloads)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest


class Models:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._paths: dict[str, Path] = {}

    def get(self, filename: str, build: Callable[[Path], Path]) -> Path:
        if filename not in self._paths:
            self._paths[filename] = build(self.root / filename)
        return self._paths[filename]


@pytest.fixture(scope="session")
def models(tmp_path_factory: pytest.TempPathFactory) -> Models:
    return Models(tmp_path_factory.mktemp("format-models"))
