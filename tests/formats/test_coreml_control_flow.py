"""Core ML control flow as coremltools writes it: a GRU becomes counted `while_loop`s (ML Program) or `loop` layers
(NeuralNetwork); their bodies are read, nested under the loop, their weights counted, their trip count read from the
file, and the work per inference is the ONNX GRU's. A bidirectional `lstm` is ONNX's bidirectional LSTM."""

from __future__ import annotations

import contextlib
import io
import os
import warnings
from pathlib import Path

import numpy as np
import pytest

from compiler.frontends import coreml
from compiler.frontends.coreml_control import trips
from compiler.frontends.onnx_view import onnx_view
from simulator.control_flow import executions
from simulator.costs import work_of
from simulator.folding import fold_constants
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


@pytest.fixture(scope="module")
def lstm_nn(models) -> Path:  # type: ignore[no-untyped-def]
    return models.get("lstm-bi.mlmodel", lambda p: _nn_file("lstm", p))


@pytest.mark.parametrize("which", ["lstm_zip", "lstm_nn"])
def test_bidirectional_lstm_is_costed_as_onnx_bidirectional(which: str, request: pytest.FixtureRequest) -> None:
    path = request.getfixturevalue(which)
    view = onnx_view(coreml.load(path))
    lstms = [n for n in view.nodes if n.op_type == "LSTM"]
    assert len(lstms) == 2 and all(n.attributes.get("direction") == "bidirectional" for n in lstms)
    macs, _, _ = _macs_per_inference(path)
    assert macs == pytest.approx(_onnx_gru_macs(4))  # was 0 MACs (an ML Program's left as is, an NN layer unread)
    # every gate matrix and bias of both directions is still read once: the task's weights are the file's
    g = coreml.load(path)
    assert sum(view.values[v].weight.bytes for n in lstms for v in n.inputs if v and view.values[v].weight) \
        == sum(g.values[v].weight.bytes for n in g.nodes if "lstm" in n.op_type.lower() for v in n.inputs
               if v and g.values[v].weight)


def test_trip_counts_from_constants() -> None:
    assert trips(0, "<", 200, 1) == 200
    assert trips(0, "<=", 9, 1) == 10
    assert trips(10, ">", 0, -2) == 5
    assert trips(0, "!=", 7, 2) is None  # never meets the bound: not a count
    assert trips(5, "<", 3, 1) == 0
    assert trips(0, "<", 3, -1) is None  # runs forever
    assert trips(None, "<", 3, 1) is None


def _mil_control_flow(path: Path) -> Path:
    """A counted while_loop (5 trips) of a Linear, a while_loop bounded by an input, a cond on the data."""
    import coremltools as ct
    from coremltools.converters.mil import Builder as mb
    from coremltools.converters.mil.mil import types

    w, b = np.random.default_rng(0).random((16, 16), np.float32), np.zeros(16, np.float32)

    def body(i, y):  # type: ignore[no-untyped-def]
        return mb.add(x=i, y=np.int32([1])), mb.linear(x=y, weight=w, bias=b)

    @mb.program(input_specs=[mb.TensorSpec(shape=(1, 16)), mb.TensorSpec(shape=(1,), dtype=types.int32)],
                opset_version=ct.target.iOS16)
    def prog(x, n):  # type: ignore[no-untyped-def]
        _, y = mb.while_loop(_cond=lambda i, y: mb.less(x=i, y=np.int32([5])), _body=body, loop_vars=(np.int32([0]), x))
        _, z = mb.while_loop(_cond=lambda i, y: mb.less(x=i, y=n), _body=body, loop_vars=(np.int32([0]), y))
        p = mb.greater(x=mb.reduce_sum(x=z), y=0.0)
        return mb.cond(pred=p, _true_fn=lambda: mb.linear(x=z, weight=w, bias=b), _false_fn=lambda: mb.relu(x=z))

    with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        ml = ct.convert(prog, convert_to="mlprogram", minimum_deployment_target=ct.target.iOS16)
    pkg = path.with_name("cf.mlpackage")
    ml.save(os.fspath(pkg))
    return cb.zip_dir(pkg, path)


def test_counted_and_data_dependent_loops_and_a_branch(models) -> None:  # type: ignore[no-untyped-def]
    path = models.get("cf.mlpackage.zip", _mil_control_flow)
    g = coreml.load(path)
    counted, bounded = (n for n in g.nodes if n.op_type == "while_loop")
    assert counted.attributes.get("trip_count") == 5 and "trip_count" not in bounded.attributes
    assert "n" in bounded.inputs  # the bound the condition reads from outside is the loop's input
    view = onnx_view(g)
    works = [work_of(nd, view) for nd in view.nodes]
    execs, notes = executions(view, works)
    by = {nd.id: (e, note) for nd, e, note in zip(view.nodes, execs, notes)}
    lin = [nd for nd in view.nodes if nd.op_type == "Gemm"]
    assert [by[nd.id][0] for nd in lin] == [5, 1, 1]  # the data-dependent loop: one trip, said so; not zero
    assert "depends on the data" in by[lin[1].id][1]
    relu = next(nd for nd in view.nodes if nd.op_type == "Relu")
    assert by[relu.id][0] == 0 and "heavier branch (then_branch)" in by[lin[2].id][1]
    # each body's weights count once: three 16x16 Linears in fp16, plus biases
    assert g.weight_bytes >= 3 * 16 * 16 * 2
