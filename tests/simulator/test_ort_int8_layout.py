"""Static int8 on ONNX Runtime's CPU: what becomes of the fp32 graph's layout work (simulator/ort_int8.py). An NCHWc
reorder next to a reshape stays as a uint8 Transpose (ShuffleNet's channel shuffles), one next to plain-layout ops
only does not (GhostNet's Concats and Slices); a Concat runs QLinearConcat, a table lookup per element. Integration
tier: the graphs are compiled by ONNX Runtime."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.backends import plan
from simulator.ort_int8 import CONCAT_LOOKUP_KEY, ORT_INT8_CONCAT, ORT_INT8_REORDER, ORT_INT8_WALK, ort_task_facts
from simulator.profiles import HardwareProfile, load_profile

HOST = get_target("ort-cpu/host")
STATIC, FP32 = Combo("int8", "int8", "int8", 0), Combo("fp32", "fp32", "fp32", 0)


def _blocks(path: Path, shuffle: bool, ch: int = 20) -> Path:
    """Two `ch`-channel Convs concatenated, then a channel shuffle (Reshape -> Transpose -> Reshape) or nothing, then a
    Conv. 20 channels are off NCHWc's blocks (8 wide on AVX2, 16 on AVX-512): ORT reorders before the Concat. 24 are
    on AVX2's but not AVX-512's: on AVX2 ORT concatenates in NCHWc and reorders after. The int8 file is the same."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((ch, 32, 1, 1)).astype(np.float32), f"w{i}") for i in "ab"]
    inits += [numpy_helper.from_array(rng.standard_normal((32, 2 * ch, 1, 1)).astype(np.float32), "wc"),
              numpy_helper.from_array(np.array([1, 2, ch, 14, 14], np.int64), "s5"),
              numpy_helper.from_array(np.array([1, 2 * ch, 14, 14], np.int64), "s4")]
    nodes = [helper.make_node("Conv", ["x", "wa"], ["a"], name="ca"), helper.make_node("Conv", ["x", "wb"], ["b"],
                                                                                         name="cb"),
             helper.make_node("Concat", ["a", "b"], ["cat"], name="cat", axis=1)]
    last = "cat"
    if shuffle:
        nodes += [helper.make_node("Reshape", ["cat", "s5"], ["r5"], name="r5"),
                  helper.make_node("Transpose", ["r5"], ["t5"], name="t5", perm=[0, 2, 1, 3, 4]),
                  helper.make_node("Reshape", ["t5", "s4"], ["r4"], name="r4")]
        last = "r4"
    nodes.append(helper.make_node("Conv", [last, "wc"], ["y"], name="cc"))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 14, 14])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, 14, 14])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_reorders_stay_as_transposes_next_to_a_reshape_only(tmp_path: Path) -> None:
    from simulator.model import compile_for

    kept = {}
    for shuffle in (True, False):
        source, g, _ = compile_for(_blocks(tmp_path / f"b{shuffle}.onnx", shuffle), HOST.name, tmp_path / f"w{shuffle}")
        facts = ort_task_facts(g, source)
        reorders = [f for nd, f in zip(g.nodes, facts) if nd.op_type in ("ReorderInput", "ReorderOutput")]
        assert len(reorders) >= 3, [nd.op_type for nd in g.nodes]  # both Convs' outputs, the last Conv's input
        kept[shuffle] = sum(ORT_INT8_REORDER in f for f in reorders)
        assert [f"{ORT_INT8_CONCAT}2" in f for nd, f in zip(g.nodes, facts) if nd.op_type == "Concat"] == [True]
        # The shuffle of two Convs' outputs: ORT merges the NHWC pass's Transposes into it (walked).
        assert [ORT_INT8_WALK in f for nd, f in zip(g.nodes, facts) if nd.op_type == "Transpose"] == \
            ([True] if shuffle else [])
    assert kept[True] >= 3 and kept[False] == 0, kept



def test_a_shuffle_of_branches_joined_in_nchwc_is_walked_too(tmp_path: Path) -> None:
    """24 channels: on AVX2 the fp32 graph joins the branches in NCHWc and reorders after the Concat (on AVX-512,
    before it); the int8 file walks the shuffle's Transpose on both."""
    from simulator.model import compile_for

    source, g, _ = compile_for(_blocks(tmp_path / "b.onnx", True, ch=24), HOST.name, tmp_path / "w")
    facts = ort_task_facts(g, source)
    assert [ORT_INT8_WALK in f for nd, f in zip(g.nodes, facts) if nd.op_type == "Transpose"] == [True]

def _fp32_ignores(hw: HardwareProfile, op: str, fact: frozenset[str]) -> None:
    """The int8 layout facts are static int8's: an fp32 plan is the same with or without them."""
    assert plan(HOST, hw, op, "layout", FP32, False, False, facts=fact) == plan(HOST, hw, op, "layout", FP32, False, False)


def test_a_kept_reorder_costs_a_uint8_transpose_under_static_int8_only() -> None:
    hw = load_profile("host-cpu")
    fact = frozenset({ORT_INT8_REORDER})
    assert plan(HOST, hw, "ReorderOutput", "layout", STATIC, False, False).eliminated  # no fact: pushed away
    p = plan(HOST, hw, "ReorderOutput", "layout", STATIC, False, False, facts=fact)
    assert not p.eliminated and p.in_bytes == p.out_bytes == 1.0 and "Transpose" in p.note
    _fp32_ignores(hw, "ReorderOutput", fact)


def test_qlinearconcat_looks_up_all_inputs_but_one() -> None:
    hw = load_profile("host-cpu")
    fact = frozenset({f"{ORT_INT8_CONCAT}2"})
    p = plan(HOST, hw, "Concat", "layout", STATIC, False, False, facts=fact)
    assert p.span_key == CONCAT_LOOKUP_KEY and p.span_elements == 2.0 and "QLinearConcat" in p.note
    assert plan(HOST, hw, "Concat", "layout", STATIC, False, False).span_key == ""
    _fp32_ignores(hw, "Concat", fact)


def test_a_merged_shuffle_is_walked_at_the_walk_rate_under_static_int8_only() -> None:
    hw = load_profile("host-cpu")
    fact = frozenset({ORT_INT8_WALK})
    p = plan(HOST, hw, "Transpose", "layout", STATIC, False, False, facts=fact)
    assert p.rate_kind == "walk" and (p.compute, p.tag) == ("fp32", "fp32") and "walked" in p.note
    _fp32_ignores(hw, "Transpose", fact)
