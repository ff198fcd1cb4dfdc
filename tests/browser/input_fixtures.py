"""Model files for the browser's input reader (web/src/inputs/) and what each declares, read with the formats' own
libraries (onnx; LiteRT's flatbuffer schema), so the TypeScript walker is checked against them.

    .venv/bin/python -m tests.browser.input_fixtures web/tests/fixtures/inputs   # rewrites the shipped fixtures
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

TFLITE_DTYPES = ["float32", "float16", "int32", "uint8", "int64", "string", "bool", "int16", "complex64", "int8",
                 "float64", "complex128", "uint64", "resource", "variant", "uint32", "uint16", "int4", "bfloat16"]


def declared_inputs(path: Path) -> list[dict[str, Any]]:
    """name, dtype and shape (int, symbolic name, or None) of each model input, by the format's own library."""
    if path.suffix == ".tflite":
        from ai_edge_litert import schema_py_generated as schema

        m = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(path.read_bytes(), 0))
        sg = m.subgraphs[0]
        out = []
        for i in sg.inputs:
            t = sg.tensors[int(i)]
            dims = t.shapeSignature if t.shapeSignature is not None and len(t.shapeSignature) else t.shape
            out.append({"name": t.name.decode(), "dtype": TFLITE_DTYPES[t.type],
                        "shape": None if dims is None else [None if int(d) < 0 else int(d) for d in dims]})
        return out
    import onnx
    from onnx import helper

    g = onnx.load(str(path), load_external_data=False).graph
    weights = {t.name for t in g.initializer}
    out = []
    for v in g.input:
        if v.name in weights:
            continue
        tt = v.type.tensor_type
        shape = None
        if tt.HasField("shape"):
            shape = [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tt.shape.dim]
        out.append({"name": v.name, "dtype": helper.tensor_dtype_to_np_dtype(tt.elem_type).name if tt.elem_type != 9
                    else "bool", "shape": shape})
    return out


def _ir3_initializers_as_inputs(path: Path) -> Path:
    """Old-style ONNX (IR 3): the weight is listed among the graph inputs, and one dim has neither value nor name."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.ones((4, 3), np.float32), "weight")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 4])
    g = helper.make_graph([helper.make_node("MatMul", ["x", "weight"], ["y"])], "ir3", [
        x, helper.make_tensor_value_info("weight", TensorProto.FLOAT, [4, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 3])], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 9)])
    m.ir_version = 3
    onnx.save(m, str(path))
    return path


def _tflite_dynamic_hw(path: Path) -> Path:
    """The test zoo's TFLite CNN with a dynamic height and width in its input's shape_signature."""
    from ai_edge_litert import schema_py_generated as schema
    import flatbuffers

    from testkit import tflite_builder

    tflite_builder.cnn(path, resolution=16, width=8)
    m = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(path.read_bytes(), 0))
    t = m.subgraphs[0].tensors[int(m.subgraphs[0].inputs[0])]
    t.shapeSignature = np.array([1, -1, -1, int(t.shape[3])], dtype=np.int32)
    b = flatbuffers.Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    path.write_bytes(bytes(b.Output()))
    return path


def write_fixtures(out: Path) -> list[dict[str, Any]]:
    from testkit import modelzoo

    out.mkdir(parents=True, exist_ok=True)
    files = [modelzoo.dynamic_dims(out / "dynamic_dims.onnx"), _ir3_initializers_as_inputs(out / "ir3_weights_as_inputs.onnx"),
             _tflite_dynamic_hw(out / "cnn_dynamic_hw.tflite")]
    expected = [{"file": f.name, "inputs": declared_inputs(f)} for f in files]
    (out / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")
    return expected


if __name__ == "__main__":
    print(json.dumps(write_fixtures(Path(sys.argv[1])), indent=1))
