"""Core ML control flow as coremltools writes it: a GRU becomes counted `while_loop`s (ML Program) or `loop` layers
(NeuralNetwork); their bodies are read, nested under the loop, their weights counted, their trip count read from the
file, and the work per inference is the ONNX GRU's. A bidirectional `lstm` is ONNX's bidirectional LSTM."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from compiler.frontends import coreml
from compiler.frontends.coreml_control import trips
from compiler.frontends.onnx_view import onnx_view
from simulator.control_flow import executions
from simulator.costs import fold_constants, work_of
from testkit import coreml_builder as cb

STEPS, FEATURES, HIDDEN = 10, 8, 16


def _rnn(cell: str):  # type: ignore[no-untyped-def]
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.rnn = (nn.GRU if cell == "gru" else nn.LSTM)(FEATURES, HIDDEN, 2, batch_first=True, bidirectional=True)

        def forward(self, x):  # type: ignore[no-untyped-def]
            return self.rnn(x)[0]

    torch.manual_seed(0)
    return Net().eval(), (torch.randn(1, STEPS, FEATURES),)


def _nn_file(cell: str, path: Path) -> Path:
    ml = cb._convert(*_rnn(cell), "neuralnetwork")
    ml.save(os.fspath(path))
    return path


@pytest.fixture(scope="module")
def gru_zip(models) -> Path:  # type: ignore[no-untyped-def]
    return models.get("gru-bi.mlpackage.zip", lambda p: cb.mlpackage_from(*_rnn("gru"), p))


@pytest.fixture(scope="module")
def gru_nn(models) -> Path:  # type: ignore[no-untyped-def]
    return models.get("gru-bi.mlmodel", lambda p: _nn_file("gru", p))


@pytest.fixture(scope="module")
def lstm_zip(models) -> Path:  # type: ignore[no-untyped-def]
    return models.get("lstm-bi.mlpackage.zip", lambda p: cb.mlpackage_from(*_rnn("lstm"), p))


def _macs_per_inference(path: Path) -> tuple[float, np.ndarray, list]:  # type: ignore[type-arg]
    view = onnx_view(coreml.load(path))
    folded_view, folded = fold_constants(view, static_shapes=True)
    works = [work_of(nd, folded_view) for nd in view.nodes]
    execs, notes = executions(view, works)
    macs = sum(w.macs * e for nd, w, e in zip(view.nodes, works, execs) if nd.id not in folded)
    return macs, execs, notes


def _onnx_gru_macs(gates: int) -> float:
    """An ONNX bidirectional 2-layer GRU / LSTM: steps x directions x gates x hidden x (input + hidden) per layer."""
    per_step = sum(gates * HIDDEN * (n_in + HIDDEN) for n_in in (FEATURES, 2 * HIDDEN))
    return float(STEPS * 2 * per_step)


@pytest.mark.parametrize("which", ["gru_zip", "gru_nn"])
def test_gru_loops_are_read_with_their_bodies_and_trip_count(which: str, request: pytest.FixtureRequest) -> None:
    path = request.getfixturevalue(which)
    g = coreml.load(path)
    loops = [n for n in g.nodes if n.op_type in ("while_loop", "loop")]
    assert len(loops) == 4  # two layers, two directions
    assert all(n.attributes.get("trip_count") == STEPS for n in loops)
    body = [n for n in g.nodes if n.parent == loops[0].id and n.branch == "body"]
    assert sum(n.op_type in ("linear", "innerProduct") for n in body) == 6  # three gates, on x and on h
    assert all(n.namespace.startswith(f"{loops[0].id}/body") for n in body)
    # body weights count (all the GRU's are in the loops' bodies): fp16 in the ML Program, fp32 in the NN file
    params = 2 * sum(3 * HIDDEN * (n_in + HIDDEN) + 6 * HIDDEN for n_in in (FEATURES, 2 * HIDDEN))
    per = 2 if which == "gru_zip" else 4
    assert params * per <= g.weight_bytes < 1.1 * params * per + 4096


@pytest.mark.parametrize("which", ["gru_zip", "gru_nn"])
def test_gru_loop_work_per_inference_is_the_onnx_grus(which: str, request: pytest.FixtureRequest) -> None:
    macs, execs, notes = _macs_per_inference(request.getfixturevalue(which))
    assert macs == pytest.approx(_onnx_gru_macs(3))  # was 0: the loop's body was never read
    assert execs.max() == STEPS + 1  # each condition is checked once more than its body runs
    assert any("fixed in the file (10" in n for n in notes)


def test_bidirectional_lstm_is_costed_as_onnx_bidirectional(lstm_zip: Path) -> None:
    view = onnx_view(coreml.load(lstm_zip))
    lstms = [n for n in view.nodes if n.op_type == "LSTM"]
    assert len(lstms) == 2 and all(n.attributes.get("direction") == "bidirectional" for n in lstms)
    macs, _, _ = _macs_per_inference(lstm_zip)
    assert macs == pytest.approx(_onnx_gru_macs(4))  # was 0 MACs (bidirectional left as an op of no work)


def test_trip_counts_from_constants() -> None:
    assert trips(0, "<", 200, 1) == 200
    assert trips(0, "<=", 9, 1) == 10
    assert trips(10, ">", 0, -2) == 5
    assert trips(0, "!=", 7, 2) is None  # never meets the bound: not a count
    assert trips(5, "<", 3, 1) == 0
    assert trips(0, "<", 3, -1) is None  # runs forever
    assert trips(None, "<", 3, 1) is None
