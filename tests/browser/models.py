"""Small models the browser tests need beyond testkit/modelzoo.py."""
from __future__ import annotations

from pathlib import Path

import numpy as np


def frames_of_48(path: Path) -> Path:
    """Audio-like model whose input `samples` [1, n_samples] is cut into frames of 48: it runs only when n_samples
    is a multiple of 48, so it fails at the default of an audio input (16000 samples, no multiple of 48) and runs
    once the user sets it."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)
    g = helper.make_graph(
        [helper.make_node("Reshape", ["samples", "frame_shape"], ["frames"], name="/frames/Reshape"),
         helper.make_node("MatMul", ["frames", "proj"], ["feats"], name="/encoder/MatMul"),
         helper.make_node("Relu", ["feats"], ["act"], name="/encoder/Relu"),
         helper.make_node("ReduceMean", ["act", "axis1"], ["pooled"], keepdims=0, name="/head/ReduceMean"),
         helper.make_node("MatMul", ["pooled", "head"], ["logits"], name="/head/MatMul")],
        "frames_of_48",
        [helper.make_tensor_value_info("samples", TensorProto.FLOAT, [1, "n_samples"])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 4])],
        [numpy_helper.from_array(np.array([1, -1, 48], np.int64), "frame_shape"),
         numpy_helper.from_array(rng.standard_normal((48, 32)).astype(np.float32), "proj"),
         numpy_helper.from_array(np.array([1], np.int64), "axis1"),
         numpy_helper.from_array(rng.standard_normal((32, 4)).astype(np.float32), "head")],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    onnx.checker.check_model(m, full_check=True)
    onnx.save(m, str(path))
    return path
