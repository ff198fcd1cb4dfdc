"""Small control-flow ONNX models built with onnx.helper (If, Loop, Scan, a Loop inside an If), and torch
models whose export gives them (TorchScript exporter on `torch.jit.script`), for the control-flow tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
OPSET = [helper.make_opsetid("", 17)]


def _w(name: str, *shape: int, seed: int = 0) -> onnx.TensorProto:
    return numpy_helper.from_array(np.random.default_rng(seed).standard_normal(shape).astype(np.float32), name)


def _const(out: str, value: np.ndarray, name: str = "") -> onnx.NodeProto:
    return helper.make_node("Constant", [], [out], name=name or out, value=numpy_helper.from_array(value))


def if_model(path: Path, cond: bool | None = None) -> Path:
    """x[1,8] -> If(sum(x) > 0 (or a constant `cond`)): then x @ Wt[8,8] (Wt a body initializer), else
    relu(x @ We[8,32]) @ W2[32,8] (outer weights) -> y. Both branches name a value `t`; Constant nodes at the
    top level (the zero) and in the else branch (a scale)."""
    then = helper.make_graph(
        [helper.make_node("MatMul", ["x", "Wt"], ["t"], name="then_mm"),
         helper.make_node("Identity", ["t"], ["then_out"], name="then_id")],
        "then", [], [helper.make_tensor_value_info("then_out", F, [1, 8])], [_w("Wt", 8, 8, seed=1)])
    other = helper.make_graph(
        [helper.make_node("MatMul", ["x", "We"], ["t"], name="else_mm"),
         helper.make_node("Relu", ["t"], ["r"], name="else_relu"),
         _const("scale", np.array(0.5, np.float32), name="else_scale"),
         helper.make_node("Mul", ["r", "scale"], ["rs"], name="else_mul"),
         helper.make_node("MatMul", ["rs", "W2"], ["else_out"], name="else_mm2")],
        "else", [], [helper.make_tensor_value_info("else_out", F, [1, 8])])
    if cond is None:
        pre = [_const("zero", np.array(0, np.float32), name="zero_const"),
               helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0, name="sum"),
               helper.make_node("Greater", ["s", "zero"], ["c"], name="gt")]
    else:
        pre = [_const("c", np.array(cond), name="cond_const")]
    g = helper.make_graph(
        pre + [helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other, name="if")],
        "with_if", [helper.make_tensor_value_info("x", F, [1, 8])], [helper.make_tensor_value_info("y", F, [1, 8])],
        [_w("We", 8, 32, seed=2), _w("W2", 32, 8, seed=3)])
    onnx.save(helper.make_model(g, opset_imports=OPSET), path)
    return path


def _loop_body(w: str = "Wl") -> onnx.GraphProto:
    """h' = tanh(h @ W); the condition passes through."""
    return helper.make_graph(
        [helper.make_node("MatMul", ["h_in", w], ["hm"], name="body_mm"),
         helper.make_node("Tanh", ["hm"], ["h_out"], name="body_tanh"),
         helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond")],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("h_in", F, None)],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []), helper.make_tensor_value_info("h_out", F, None)])


def loop_model(path: Path, trips: int | None = 3, width: int = 64) -> Path:
    """h[4,width] -> Loop(M, true, h) of h = tanh(h @ Wl) -> y. M is a constant (`trips`) or, with None, an
    int64 input `n` (the trip count depends on the data)."""
    init = [_w("Wl", width, width, seed=4), numpy_helper.from_array(np.array(True), "true")]
    inputs = [helper.make_tensor_value_info("h", F, [4, width])]
    if trips is None:
        inputs.append(helper.make_tensor_value_info("n", TensorProto.INT64, []))
    else:
        init.append(numpy_helper.from_array(np.array(trips, np.int64), "n"))
    g = helper.make_graph([helper.make_node("Loop", ["n", "true", "h"], ["y"], body=_loop_body(), name="loop")],
                          "with_loop", inputs, [helper.make_tensor_value_info("y", F, [4, width])], init)
    onnx.save(helper.make_model(g, opset_imports=OPSET), path)
    return path


def while_model(path: Path, steps: int | None = 4, width: int = 16) -> Path:
    """torch's `while_loop(lambda k, h: k < steps, lambda k, h: (k + 1, tanh(h @ Wl)), (0, h))` as dynamo writes
    it: M empty, the counter carried from a constant, the condition computed in the body from the counter and a
    constant bound (or, with None, the int64 input `n`: the data's)."""
    body = helper.make_graph(
        [helper.make_node("Add", ["k_in", "one"], ["k_out"], name="count"),
         helper.make_node("MatMul", ["h_in", "Wl"], ["hm"], name="body_mm"),
         helper.make_node("Tanh", ["hm"], ["h_out"], name="body_tanh"),
         helper.make_node("Less", ["k_out", "n"], ["cond_out"], name="body_less")],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("k_in", TensorProto.INT64, []),
                 helper.make_tensor_value_info("h_in", F, None)],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("k_out", TensorProto.INT64, []), helper.make_tensor_value_info("h_out", F, None)])
    init = [_w("Wl", width, width, seed=7), numpy_helper.from_array(np.array(True), "true"),
            numpy_helper.from_array(np.array(0, np.int64), "zero"), numpy_helper.from_array(np.array(1, np.int64), "one")]
    inputs = [helper.make_tensor_value_info("h", F, [2, width])]
    if steps is None:
        inputs.append(helper.make_tensor_value_info("n", TensorProto.INT64, []))
    else:
        init.append(numpy_helper.from_array(np.array(steps, np.int64), "n"))
    g = helper.make_graph([helper.make_node("Loop", ["", "true", "zero", "h"], ["k", "y"], body=body, name="loop")],
                          "with_while", inputs, [helper.make_tensor_value_info("k", TensorProto.INT64, []),
                                                 helper.make_tensor_value_info("y", F, [2, width])], init)
    onnx.save(helper.make_model(g, opset_imports=OPSET), path)
    return path


def scan_model(path: Path, steps: int = 5, width: int = 16) -> Path:
    """A Scan over xs[steps, 1, width]: state s = s + xs[t] @ Ws, each step's s also scanned out."""
    body = helper.make_graph(
        [helper.make_node("MatMul", ["x_t", "Ws"], ["xm"], name="scan_mm"),
         helper.make_node("Add", ["s_in", "xm"], ["s_out"], name="scan_add"),
         helper.make_node("Identity", ["s_out"], ["y_t"], name="scan_id")],
        "scan_body", [helper.make_tensor_value_info("s_in", F, None), helper.make_tensor_value_info("x_t", F, None)],
        [helper.make_tensor_value_info("s_out", F, None), helper.make_tensor_value_info("y_t", F, None)])
    g = helper.make_graph(
        [helper.make_node("Scan", ["s0", "xs"], ["s", "ys"], body=body, num_scan_inputs=1, name="scan")],
        "with_scan", [helper.make_tensor_value_info("s0", F, [1, width]),
                      helper.make_tensor_value_info("xs", F, [steps, 1, width])],
        [helper.make_tensor_value_info("s", F, [1, width]), helper.make_tensor_value_info("ys", F, [steps, 1, width])],
        [_w("Ws", width, width, seed=5)])
    onnx.save(helper.make_model(g, opset_imports=OPSET), path)
    return path


def nested_model(path: Path, trips: int = 4) -> Path:
    """If(constant true): then a Loop of `trips` trips over h = tanh(h @ Wl); else Identity."""
    init = [_w("Wl", 16, 16, seed=6), numpy_helper.from_array(np.array(True), "true"),
            numpy_helper.from_array(np.array(trips, np.int64), "n")]
    then = helper.make_graph([helper.make_node("Loop", ["n", "true", "h"], ["lo"], body=_loop_body(), name="inner")],
                             "then", [], [helper.make_tensor_value_info("lo", F, [2, 16])])
    other = helper.make_graph([helper.make_node("Identity", ["h"], ["eo"], name="pass")], "else", [],
                              [helper.make_tensor_value_info("eo", F, [2, 16])])
    g = helper.make_graph(
        [helper.make_node("If", ["true"], ["y"], then_branch=then, else_branch=other, name="outer")],
        "nested", [helper.make_tensor_value_info("h", F, [2, 16])], [helper.make_tensor_value_info("y", F, [2, 16])],
        init)
    onnx.save(helper.make_model(g, opset_imports=OPSET), path)
    return path


# -- torch models (TorchScript exporter on torch.jit.script) ---------------------------------------------

def torch_if(path: Path) -> Path:
    """A data-dependent `if` on the input's sum: a 64->64 Linear, or a 64->256->64 MLP."""
    import torch
    from torch import nn

    class IfNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = nn.Linear(64, 64)
            self.b = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 64))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if bool(x.sum() > 0):
                y = self.a(x)
            else:
                y = self.b(x)
            return y * 2

    _export(torch.jit.script(IfNet().eval()), (torch.randn(4, 64),), ["x"], path)
    return path


def torch_loop(path: Path) -> Path:
    """A loop of `n` (an input) steps h = tanh(cell(h))."""
    import torch
    from torch import nn

    class LoopNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.cell = nn.Linear(64, 64)

        def forward(self, x: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
            h = x
            for _ in range(int(n.item())):
                h = torch.tanh(self.cell(h))
            return h

    _export(torch.jit.script(LoopNet().eval()), (torch.randn(4, 64), torch.tensor(5)), ["x", "n"], path)
    return path


def torch_vad_like(path: Path) -> Path:
    """A stateful voice-activity-like model: an audio chunk, LSTM state `h`/`c` and the sample rate `sr` in; an
    STFT-like conv front end per sample rate (`if sr == 16000`, an If), an LSTM cell stepped over the frames (a
    Loop whose trip count follows the chunk's length), a speech probability and the new state out."""
    import torch
    from torch import nn

    class Branch(nn.Module):
        def __init__(self, win: int, hop: int) -> None:
            super().__init__()
            self.half = win // 2 + 1
            self.stft = nn.Conv1d(1, 2 * self.half, win, stride=hop, bias=False)
            self.enc = nn.Sequential(nn.Conv1d(self.half, 128, 3, padding=1), nn.ReLU(),
                                     nn.Conv1d(128, 64, 3, stride=2, padding=1), nn.ReLU(),
                                     nn.Conv1d(64, 64, 3, stride=2, padding=1), nn.ReLU(),
                                     nn.Conv1d(64, 128, 3, padding=1), nn.ReLU())

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            s = self.stft(x.unsqueeze(1))
            re, im = s[:, : self.half], s[:, self.half:]
            return self.enc(torch.sqrt(re * re + im * im))

    class VadLike(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.b16 = Branch(256, 128)
            self.b8 = Branch(128, 64)
            self.cell = nn.LSTMCell(128, 128)
            self.dec = nn.Linear(128, 1)

        def forward(self, x: torch.Tensor, h: torch.Tensor, c: torch.Tensor, sr: torch.Tensor):  # noqa: ANN201
            if bool(sr == 16000):
                f = self.b16(x)
            else:
                f = self.b8(x)
            for t in range(f.size(2)):
                h, c = self.cell(f[:, :, t], (h, c))
            return torch.sigmoid(self.dec(h)), h, c

    args = (torch.randn(1, 512), torch.zeros(1, 128), torch.zeros(1, 128), torch.tensor(16000))
    _export(torch.jit.script(VadLike().eval()), args, ["input", "h", "c", "sr"], path,
            outputs=["prob", "hn", "cn"], dynamic={"input": {1: "samples"}})
    return path


def vad_frames(samples: int) -> int:
    """LSTM steps of torch_vad_like at 16 kHz for a chunk of `samples`: STFT frames, then two stride-2 convs."""
    frames = (samples - 256) // 128 + 1
    for _ in range(2):
        frames = (frames - 1) // 2 + 1
    return frames


def _export(module, args, inputs: list[str], path: Path, outputs: list[str] | None = None,  # type: ignore[no-untyped-def]
            dynamic: dict | None = None) -> None:
    import warnings

    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation and RNN batch notices
        torch.onnx.export(module, args, str(path), input_names=inputs, output_names=outputs, dynamo=False,
                          opset_version=17, dynamic_axes=dynamic)


def rate_model(path: Path) -> Path:
    """The pattern of a stateful audio model: If(sr == 16000) picks a front end whose output length differs
    (then: x as it is, [1,4,32]; else: x twice along time, [1,4,64]); a Loop then steps h = tanh(h @ Wl) once per
    frame of that output (M = Shape(If's result)[2])."""
    then = helper.make_graph([helper.make_node("Identity", ["x"], ["fa"], name="front_a")], "then", [],
                             [helper.make_tensor_value_info("fa", F, [1, 4, 32])])
    other = helper.make_graph([helper.make_node("Concat", ["x", "x"], ["fb"], axis=2, name="front_b")], "else", [],
                              [helper.make_tensor_value_info("fb", F, [1, 4, 64])])
    g = helper.make_graph(
        [helper.make_node("Equal", ["sr", "rate"], ["is16"], name="eq"),
         helper.make_node("If", ["is16"], ["f"], then_branch=then, else_branch=other, name="front"),
         helper.make_node("Shape", ["f"], ["fs"], name="shape"),
         helper.make_node("Gather", ["fs", "two"], ["frames"], axis=0, name="frames"),
         helper.make_node("Loop", ["frames", "true", "h"], ["y"], body=_loop_body(), name="steps")],
        "rate", [helper.make_tensor_value_info("x", F, [1, 4, 32]), helper.make_tensor_value_info("h", F, [1, 64]),
                 helper.make_tensor_value_info("sr", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("y", F, [1, 64])],
        [_w("Wl", 64, 64, seed=7), numpy_helper.from_array(np.array(True), "true"),
         numpy_helper.from_array(np.array(16000, np.int64), "rate"), numpy_helper.from_array(np.array(2, np.int64), "two")])
    onnx.save(helper.make_model(g, opset_imports=OPSET), path)
    return path


def squeeze_if_model(path: Path, width: int = 64, classes: int = 512) -> Path:
    """What the TorchScript exporter writes for `x.squeeze(2)` at a dynamic height, as in a CRNN's head:
    x[1,8,h,w] -> Conv 8->width 3x3 -> If(Shape[2] == 1): then Squeeze(axis 2), else Identity -> Transpose(2,0,1)
    -> MatMul W[width,classes] -> y[w,1,classes]. At h = 1 the then branch runs; at a symbolic h, ORT's symbolic shape
    inference took the condition for a constant false."""
    then = helper.make_graph(
        [_const("axes", np.array([2], np.int64), name="then_axes"),
         helper.make_node("Squeeze", ["c", "axes"], ["sq"], name="then_squeeze")],
        "then", [], [helper.make_tensor_value_info("sq", F, None)])
    other = helper.make_graph([helper.make_node("Identity", ["c"], ["same"], name="else_id")],
                              "else", [], [helper.make_tensor_value_info("same", F, None)])
    nodes = [helper.make_node("Conv", ["x", "Wc", "bc"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("Shape", ["c"], ["shape"], name="shape"),
             _const("two", np.array(2, np.int64), name="two_const"),
             helper.make_node("Gather", ["shape", "two"], ["h"], axis=0, name="gather"),
             _const("one", np.array(1, np.int64), name="one_const"),
             helper.make_node("Equal", ["h", "one"], ["is_one"], name="equal"),
             helper.make_node("If", ["is_one"], ["s"], then_branch=then, else_branch=other, name="if"),
             helper.make_node("Transpose", ["s"], ["t"], perm=[2, 0, 1], name="transpose"),
             helper.make_node("MatMul", ["t", "Wm"], ["y"], name="fc")]
    g = helper.make_graph(
        nodes, "squeeze_if", [helper.make_tensor_value_info("x", F, [1, 8, "h", "w"])],
        [helper.make_tensor_value_info("y", F, ["w", 1, classes])],
        [_w("Wc", width, 8, 3, 3, seed=4), _w("bc", width, seed=5), _w("Wm", width, classes, seed=6)])
    onnx.save(helper.make_model(g, opset_imports=OPSET), path)
    return path
