"""A .tflite's dynamic dims resolved without running it: LiteRT's Prepare at the planned input shapes, with the
small shape arithmetic TFLite leaves for the invoke (SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE) evaluated first."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from compiler.backends import litert_shapes
from compiler.frontends.tflite import tensor_names
from simulator.model import compile_for
from simulator.tflite_ops import tflite_works
from testkit import tflite_builder as tb


@pytest.fixture(scope="module")
def reshaped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tb.shape_arithmetic(tmp_path_factory.mktemp("tflite-shapes") / "shape_arith.tflite")


def test_shape_arithmetic_is_folded_so_prepare_sizes_the_rest(reshaped: Path) -> None:
    """LiteRT alone stops at the RESHAPE (its target computed from the batch), whose output keeps the file's
    placeholder [1, 4, 4] with data (not to be trusted); with the target folded it sizes every tensor, as the
    invoke then does (FULLY_CONNECTED reads rows of 4: [12, 8] at batch 3)."""
    buf = reshaped.read_bytes()
    i = {name: k for k, name in enumerate(tensor_names(buf))}
    alone = litert_shapes._prepared_shapes(buf, [[3, 16]])
    assert alone is not None and i["h"] not in alone and i["y"] not in alone and alone[i["x"]][0] == [3, 16]
    assert alone[i["r"]][0] == [1, 4, 4]
    got = litert_shapes.resolve(buf, [[3, 16]])
    assert got[i["r"]] == ([3, 4, 4], "float32") and got[i["h"]] == ([12, 8], "float32") and got[i["y"]][0] == [12, 8]
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_path=str(reshaped))
    it.resize_tensor_input(0, [3, 16])
    it.allocate_tensors()
    it.set_tensor(0, np.ones((3, 16), np.float32))
    it.invoke()
    assert list(it.get_output_details()[0]["shape"]) == got[i["y"]][0]


def test_prediction_knows_every_operators_work_without_a_run(reshaped: Path, tmp_path: Path) -> None:
    """The predict path (compile only, no profile) at x=3x16: every operator's work known, the FULLY_CONNECTED's
    MACs those of the 12 rows LiteRT runs. Before, the frontend's symbolic batch left 4 of the 5 unknown."""
    source, compiled, plans = compile_for(reshaped, "litert-cpu/host", tmp_path, {"x": [3, 16]})
    works = tflite_works(compiled)[0]
    assert all(w.shapes_known for w in works)
    fc = [n.op_type for n in compiled.nodes].index("FULLY_CONNECTED")
    assert works[fc].macs == 12 * 8 * 4 and works[fc + 1].out_elements == 96
    assert source.values["r"].shape == [3, 4, 4]


def test_inputs_the_model_cannot_take_leave_the_shapes_unresolved(reshaped: Path) -> None:
    """Best effort: a batch the RESHAPE cannot take (17 elements per row) resolves nothing past what LiteRT
    prepared; nothing raises (the analysis then says which work is unknown)."""
    buf = reshaped.read_bytes()
    got = litert_shapes.resolve(buf, [[3, 17]])
    assert not {tensor_names(buf).index(n) for n in ("r", "h", "y")} & set(got)
