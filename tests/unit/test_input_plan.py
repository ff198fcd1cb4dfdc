"""Input plans: role defaults, shared dims, values inside the tables ids index, overrides (pure, fast)."""

from __future__ import annotations

import numpy as np
import pytest

from compiler.errors import InputSpecError
from compiler.graph import Graph, Node, Value, WeightStats
from compiler.input_plan import (
    AUDIO_DEFAULT,
    IMAGE_DEFAULT,
    SEQ_DEFAULT,
    concrete_shapes,
    plan_inputs,
    stored_inputs,
    value_ranges,
)
from compiler.inputs import generate_inputs


def _w(shape: list[int], value: float = 0.0) -> Value:
    n = int(np.prod(shape)) if shape else 1
    return Value("w", shape, "float32", weight=WeightStats(n, n * 4, value, value, 0.0))


def graph(inputs: dict[str, tuple[list, str]], nodes: list[Node] = (), consts: dict[str, Value] | None = None,
          metadata: dict[str, str] | None = None) -> Graph:
    values = {n: Value(n, shape, dtype) for n, (shape, dtype) in inputs.items()}
    for name, v in (consts or {}).items():
        values[name] = Value(name, v.shape, v.dtype, weight=v.weight)
    for nd in nodes:
        for o in nd.outputs:
            values.setdefault(o, Value(o, None, "float32"))
    return Graph("g", "onnx", list(nodes), values, list(inputs), [nodes[-1].outputs[0]] if nodes else [],
                 metadata=metadata or {})


def test_image_defaults_by_layout_and_metadata() -> None:
    nchw = graph({"x": (["s77", 3, "s53", "s0"], "float32")})  # torch dynamo names every dim s<N>
    assert plan_inputs(nchw)["x"].shape == [1, 3, IMAGE_DEFAULT, IMAGE_DEFAULT]
    assert plan_inputs(nchw)["x"].role == "image"
    nhwc = graph({"img": (["N", "h", "w", 3], "float32")})
    assert plan_inputs(nhwc)["img"].shape == [1, IMAGE_DEFAULT, IMAGE_DEFAULT, 3]
    sized = graph({"x": (["b", 3, "H", "W"], "float32")}, metadata={"meta.image_size": "[480, 640]"})
    plan = plan_inputs(sized)["x"]
    assert plan.shape == [1, 3, 480, 640] and plan.defaulted == {"b": 1, "H": 480, "W": 640}
    one_side = graph({"x": (["b", 3, 48, "W"], "float32")})  # a text-line recognizer: height fixed
    assert plan_inputs(one_side)["x"].shape == [1, 3, 48, IMAGE_DEFAULT]


def test_ids_are_drawn_inside_the_tables_they_index() -> None:
    g = graph({"input_ids": (["batch", "seq"], "int64"), "token_type_ids": (["batch", "seq"], "int64"),
               "attention_mask": (["batch", "seq"], "int64")},
              [Node("e1", "e1", "Gather", inputs=["word", "input_ids"], outputs=["we"]),
               Node("c", "c", "Cast", inputs=["token_type_ids"], outputs=["tt64"], attributes={"to": 7}),
               Node("e2", "e2", "Gather", inputs=["types", "tt64"], outputs=["te"]),
               Node("a", "a", "Add", inputs=["we", "te"], outputs=["y"])],
              consts={"word": _w([30522, 8]), "types": _w([2, 8])})
    plans = plan_inputs(g)
    assert concrete_shapes(plans) == {n: [1, SEQ_DEFAULT] for n in g.inputs}
    assert (plans["input_ids"].low, plans["input_ids"].high) == (0, 30522)
    assert plans["token_type_ids"].high == 2 and plans["token_type_ids"].role == "ids"
    assert plans["attention_mask"].value == 1 and plans["attention_mask"].role == "mask"
    feeds = generate_inputs(g, ranges=value_ranges(plans))
    assert feeds["token_type_ids"].max() <= 1 and feeds["input_ids"].max() >= 100  # the whole vocabulary
    assert (feeds["attention_mask"] == 1).all()


def test_parameters_audio_and_sequences() -> None:
    g = graph({"audio": (["batch", "N"], "float32"), "sr": ([], "int64"), "k": ([1], "int64"),
               "mode": ([1], "int64"), "feats": (["batch", "T", 80], "float32")},
              [Node("eq", "eq", "Equal", inputs=["mode", "eight"], outputs=["is8"]),
               Node("r", "r", "Relu", inputs=["audio"], outputs=["y"])],
              consts={"eight": Value("eight", [], "int64", weight=WeightStats(1, 8, 8000.0, 8000.0, 0.0))})
    plans = plan_inputs(g)
    assert plans["audio"].shape == [1, AUDIO_DEFAULT] and plans["audio"].role == "audio"
    assert (plans["sr"].shape, plans["sr"].value) == ([], 16000)
    assert plans["mode"].value == 8000  # the constant the model compares it with
    assert plans["k"].value == 1
    assert plans["feats"].shape == [1, SEQ_DEFAULT, 80] and plans["feats"].role == "sequence"


def test_a_signal_beside_a_sample_rate_is_audio_whatever_its_name() -> None:
    """A voice-activity model's `input` [batch, samples] beside `sr`: one second of samples, not a 128-long sequence
    (shorter than its first convolution's window); frames of features and fixed-size state stay what they were."""
    g = graph({"input": (["batch", "N"], "float32"), "sr": ([], "int64"), "state": ([2, "batch", 128], "float32"),
               "frames": (["batch", "T", 80], "float32")},
              [Node("r", "r", "Relu", inputs=["input"], outputs=["y"])])
    plans = plan_inputs(g)
    assert plans["input"].shape == [1, AUDIO_DEFAULT] and plans["input"].role == "audio"
    assert plans["state"].shape == [2, 1, 128] and plans["frames"].shape == [1, SEQ_DEFAULT, 80]
    without_rate = graph({"input": (["batch", "N"], "float32")}, [Node("r", "r", "Relu", inputs=["input"],
                                                                        outputs=["y"])])
    assert plan_inputs(without_rate)["input"].shape == [1, SEQ_DEFAULT]


def test_a_kv_cache_leads_with_its_batch() -> None:
    """A decoder step's stacked KV cache [layers, batch, heads, past, head_dim] beside ids [batch, 1] (session 39
    sweep): dynamo shares the batch symbol between them, the TorchScript exporter names each input's axes on its
    own. Both planned batch 128 (one as the ids' first dim), so ids and cache disagreed and every task after the
    concat was of unknown work on device targets."""
    dyn = graph({"input_ids": (["s0", 1], "int64"), "past_key": ([4, "s0", 4, "s1", 64], "float32"),
                 "past_value": ([4, "s0", 4, "s1", 64], "float32")})
    assert concrete_shapes(plan_inputs(dyn)) == {"input_ids": [1, 1], "past_key": [4, 1, 4, SEQ_DEFAULT, 64],
                                                 "past_value": [4, 1, 4, SEQ_DEFAULT, 64]}
    ts = graph({"input_ids": (["input_ids_dim0", 1], "int64"),
                "past_key": ([4, "past_key_dim1", 4, "past_key_dim3", 64], "float32"),
                "cache": (["cache_dim0", 4, "cache_dim2", 64], "float32")})
    plans = plan_inputs(ts)
    assert plans["past_key"].shape == [4, 1, 4, SEQ_DEFAULT, 64] and plans["cache"].shape == [1, 4, SEQ_DEFAULT, 64]
    # Time-major frames [T, B, F] beside a mask [B, T]: T leads the frames only, so it is not taken for a batch of 1.
    tm = graph({"frames": (["T", "B", 80], "float32"), "mask": (["B", "T"], "bool")})
    assert plan_inputs(tm)["frames"].shape[0] == SEQ_DEFAULT


def test_an_edge_list_indexes_node_features_made_from_another_input() -> None:
    """A GNN at dynamic node and edge counts (session 39 sweep): x [nodes, 32] and edge_index [2, edges] whose rows
    index the node features (Gather of a computed [nodes, 64]). The node count was planned as a batch of 1 and the
    edges drawn from [0, 100): ONNX Runtime failed (index out of bounds) and the hint asked for x=1x32 again. The
    node count is a count of items (128), and indices stay below the rows they gather (the user's 50 too)."""
    g = graph({"x": (["x_dim0", 32], "float32"), "edge_index": ([2, "edge_index_dim1"], "int64")},
              [Node("fc", "fc", "MatMul", inputs=["x", "w"], outputs=["h"]),
               Node("src", "src", "Gather", inputs=["edge_index", "zero"], outputs=["s"]),
               Node("g", "g", "Gather", inputs=["h", "s"], outputs=["y"])],
              consts={"w": _w([32, 64]), "zero": _w([])})
    g.values["h"] = Value("h", ["x_dim0", 64], "float32")
    plans = plan_inputs(g)
    assert plans["x"].shape == [SEQ_DEFAULT, 32] and plans["edge_index"].role == "ids"
    assert plans["edge_index"].high <= SEQ_DEFAULT
    few = plan_inputs(g, {"x": [50, 32]})
    assert few["edge_index"].high == 50 and few["edge_index"].shape == [2, SEQ_DEFAULT]
    assert generate_inputs(g, concrete_shapes(few), ranges=value_ranges(few))["edge_index"].max() < 50
    # dynamo writes h[src] as GatherND with indices [edges, 1] (and index_put as ScatterND)
    nd = graph({"x": (["s77", 32], "float32"), "edge_index": ([2, "s43"], "int64")},
               [Node("fc", "fc", "MatMul", inputs=["x", "w"], outputs=["h"]),
                Node("src", "src", "Gather", inputs=["edge_index", "zero"], outputs=["s"]),
                Node("u", "u", "Unsqueeze", inputs=["s", "one"], outputs=["s1"]),
                Node("g", "g", "GatherND", inputs=["h", "s1"], outputs=["y"])],
               consts={"w": _w([32, 64]), "zero": _w([]), "one": _w([1])})
    nd.values["h"], nd.values["s1"] = Value("h", ["s77", 64], "float32"), Value("s1", ["s43", 1], "int64")
    assert plan_inputs(nd)["x"].shape == [SEQ_DEFAULT, 32]


def test_user_shapes_pin_shared_dims_and_are_checked() -> None:
    g = graph({"input_ids": (["batch", "seq"], "int64"), "mask": (["batch", "seq"], "bool")})
    assert concrete_shapes(plan_inputs(g, {"input_ids": [2, 7]})) == {"input_ids": [2, 7], "mask": [2, 7]}
    # TorchScript names each input's dynamic axes on its own: the same numbered axis is one dim.
    ts = graph({"input_ids": (["input_ids_dynamic_axes_1", "input_ids_dynamic_axes_2"], "int64"),
                "attention_mask": (["attention_mask_dynamic_axes_1", "attention_mask_dynamic_axes_2"], "int64")})
    assert plan_inputs(ts, {"input_ids": [1, 64]})["attention_mask"].shape == [1, 64]
    with pytest.raises(InputSpecError, match="dimension 'seq' is 8 in one override and 9"):
        plan_inputs(g, {"input_ids": [1, 8], "mask": [1, 9]})
    with pytest.raises(InputSpecError, match="has 2 dimensions"):
        plan_inputs(g, {"input_ids": [1, 8, 3]})
    with pytest.raises(InputSpecError, match="no input 'ids'; its inputs are: input_ids, mask"):
        plan_inputs(g, {"ids": [1, 8]})
    fixed = graph({"x": ([1, 3, 16, 16], "float32")})
    with pytest.raises(InputSpecError, match="fixed size 3 on axis 1"):
        plan_inputs(fixed, {"x": [1, 4, 16, 16]})


def test_stored_plan_round_trip() -> None:
    g = graph({"ids": (["b", "s"], "int64"), "sr": ([], "int64")},
              [Node("e", "e", "Gather", inputs=["t", "ids"], outputs=["y"])], consts={"t": _w([5, 2])})
    plans = plan_inputs(g, {"ids": [1, 9]}, {"sr": 8000})
    stored = stored_inputs([p.to_json() for p in plans.values()])
    assert stored == {"input_shapes": {"ids": [1, 9], "sr": []}, "input_values": {"sr": 8000},
                      "input_ranges": {"ids": [0, 5]}}
    assert plans["ids"].set_by == "user" and plans["sr"].set_by == "user"
