"""Models of every non-ONNX format, built once per test session on first use (no downloads)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from testkit import coreml_builder as cb


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


# Core ML files, shared by test_coreml.py and test_coreml_as_shipped.py.
@pytest.fixture(scope="session")
def cnn_zip(models: Models) -> Path:
    return models.get("cnn.mlpackage.zip", lambda p: cb.mlpackage_zip(p, "cnn"))


@pytest.fixture(scope="session")
def block_zip(models: Models) -> Path:
    return models.get("block.mlpackage.zip", lambda p: cb.mlpackage_zip(p, "block"))


@pytest.fixture(scope="session")
def nn_mlmodel(models: Models) -> Path:
    return models.get("cnn.mlmodel", cb.mlmodel_nn)


@pytest.fixture(scope="session")
def int8_zip(models: Models) -> Path:
    return models.get("cnn-w8.mlpackage.zip", cb.mlpackage_int8_zip)
