"""The records of an ONNX file written from a `.pt2` are its converted file's, without the exporter's per-node debug
records (compiler.backends.pt2_onnx.onnx_overhead_bytes), not the `.pt2` archive's: torch/index-ops's files were
sized +22%, its fp16 file +41%."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from compiler.backends.pt2_onnx import onnx_overhead_bytes
from compiler.graph import Graph
from compiler.vocabulary.targets import get_target
from simulator.file_bytes import size_overhead_bytes


def test_the_converted_files_records_without_debug_records(tmp_path: Path) -> None:
    w = numpy_helper.from_array(np.ones((100, 10), np.float32), "w")
    node = helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")
    node.metadata_props.add(key="pkg.torch.onnx.stack_trace", value="x" * 2000)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 100])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], [w])
    path = tmp_path / "source.onnx"
    onnx.save(helper.make_model(g), path)
    oh = onnx_overhead_bytes(path)
    # the file less its 4,000 B of weights and its 2 KB debug record, within the records' length prefixes
    assert 0 < path.stat().st_size - 4000 - 2000 - oh < 64
    compiled = Graph(name="g", format="onnx", nodes=[], values={}, inputs=[], outputs=[],
                     metadata={"onnx_overhead_bytes": str(oh), "file_size_bytes": "90000", "source_weight_bytes": "1"})
    assert size_overhead_bytes(get_target("ort-cpu/host"), compiled, frozenset(), None) == oh
