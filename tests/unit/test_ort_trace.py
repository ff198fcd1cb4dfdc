"""ONNX Runtime's profiler trace read from its bytes (compiler.backends.ort.read_trace and trace_shapes): the
fast line reader keeps the Node kernel and model_run events, parses one event's args per node for its output
shapes, falls back to JSON for a name it cannot take as is, and to the whole document for another layout. The
trace here is written in ORT's layout, one event per line (an ORT-made trace: tests/compiler/test_ort_profile.py)."""

from __future__ import annotations

import json
from pathlib import Path

from compiler.backends.ort import read_trace, trace_shapes


def line(cat: str, name: str, ts: int, dur: int, args: dict | None = None) -> str:
    return (f'{{"cat" : "{cat}","pid" :7,"tid" :9,"dur" :{dur},"ts" :{ts},"ph" : "X","name" :"{name}",'
            f'"args" : {json.dumps(args or {})}}},')


def write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "trace.json"
    path.write_text("[\n" + "\n".join(lines) + "\n]\n")
    return path


def test_kernel_and_run_events_with_each_nodes_first_output_shapes(tmp_path: Path) -> None:
    conv_args = {"op_name": "Conv", "output_type_shape": [{"float": [1, 8, 4, 4]}]}
    path = write(tmp_path, [
        line("Session", "model_loading_uri", 0, 50),
        line("Node", "conv_fence_before", 100, 0),
        line("Node", "conv_kernel_time", 101, 30, conv_args),
        line("Node", "relu_kernel_time", 140, 5, {"output_type_shape": [{"int64_t": [2]}, {"float": "?"}]}),
        line("Session", "model_run", 90, 80),
        line("Node", "conv_kernel_time", 201, 40, {"output_type_shape": [{"float": [9]}]}),
        line("Session", "model_run", 190, 90),
    ])
    events, shapes = read_trace(path)
    assert [(e["name"], e["ts"], e["dur"]) for e in events] == [
        ("conv_kernel_time", 101, 30), ("relu_kernel_time", 140, 5), ("model_run", 90, 80),
        ("conv_kernel_time", 201, 40), ("model_run", 190, 90)]
    assert shapes == {"conv": [[[1, 8, 4, 4], "float32"]], "relu": [[[2], "int64"], None]}  # the first event's


def test_a_name_with_an_escape_is_read_as_json(tmp_path: Path) -> None:
    path = write(tmp_path, [line("Node", 'a\\"b_kernel_time', 5, 12, {"output_type_shape": [{"double": [3]}]})])
    events, shapes = read_trace(path)
    assert [(e["name"], e["dur"]) for e in events] == [('a"b_kernel_time', 12)]
    assert shapes == {'a"b': [[[3], "float64"]]}


def test_another_layout_is_parsed_whole(tmp_path: Path) -> None:
    # An event spread over two lines: its first line is no JSON object of its own.
    path = tmp_path / "trace.json"
    path.write_text('[\n{"cat" : "Node","name" :"mm_kernel_time","ts" :1,"dur" :2,\n"args" : {}}\n]\n')
    assert read_trace(path) == ([{"cat": "Node", "name": "mm_kernel_time", "ts": 1, "dur": 2, "args": {}}], {})


def test_output_shapes_by_element_type() -> None:
    args = {"output_type_shape": [{"bfloat16": [1, 2]}, {"uint8_t": []}, {"float": [1, -1]}, {"a": 1, "b": 2}]}
    assert trace_shapes(args) == [([1, 2], "bfloat16"), ([], "uint8"), None, None]
    assert trace_shapes({}) == []
