"""A weight read both by a top-level Gemm and inside a Loop body (a scripted greedy decoder's output layer, run
before its step loop and at every step): the exporter's Gemm -> MatMul rewrite must not transpose it under the
body's feet. It did, and no option of the corpus's torch/greedy-decoder exported (the body's Gemm no longer
type-checked: "Dimension mismatch in unification between 1000 and 256")."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from compiler.optimize.onnx_export import export_onnx

F = TensorProto.FLOAT


def _shared_gemm_model(path: Path) -> Path:
    """x[1,8] -> Gemm(x, W[4,8], transB) = y0; Loop(2) of h += Gemm(x, W, transB) from y0 -> y."""
    body = helper.make_graph(
        [helper.make_node("Gemm", ["x", "W", "b"], ["g"], name="body_gemm", transB=1),
         helper.make_node("Add", ["h_in", "g"], ["h_out"], name="body_add"),
         helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond")],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("h_in", F, [1, 4])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_out", F, [1, 4])])
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((4, 8)).astype(np.float32), "W"),
             numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b"),
             numpy_helper.from_array(np.array(2, np.int64), "n"), numpy_helper.from_array(np.array(True), "true")]
    g = helper.make_graph([helper.make_node("Gemm", ["x", "W", "b"], ["y0"], name="top_gemm", transB=1),
                           helper.make_node("Loop", ["n", "true", "y0"], ["y"], body=body, name="loop")],
                          "shared", [helper.make_tensor_value_info("x", F, [1, 8])],
                          [helper.make_tensor_value_info("y", F, [1, 4])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_a_weight_a_loop_body_shares_keeps_its_layout(tmp_path: Path) -> None:
    src = _shared_gemm_model(tmp_path / "shared.onnx")
    x = {"x": np.random.default_rng(1).standard_normal((1, 8)).astype(np.float32)}
    want = ort.InferenceSession(str(src), providers=["CPUExecutionProvider"]).run(None, x)[0]
    for option in ("fp32", "fp16"):
        res = export_onnx(src, tmp_path / f"{option}.onnx", option)
        got = ort.InferenceSession(str(res.path), providers=["CPUExecutionProvider"]).run(None, x)[0]
        assert np.allclose(got, want, rtol=0.02, atol=0.02), option
