"""The decoder-structured synthetic model benchmarks/ui.py measures at 200,000 tasks (testkit/mock_server.py N:llm)."""
from __future__ import annotations

from collections import Counter

from testkit.mock_server import Synthetic, llm_layout


def test_llm_layout_is_a_decoder_of_exactly_n_ops() -> None:
    ops = llm_layout(2000)
    assert len(ops) == 2000
    layers = {ns.split("/")[1] for _, ns, _ in ops if ns.startswith("model/layers.")}
    assert len(layers) == 52  # 38 ops a layer (1,976), the last 24 a final norm
    first = [(t, ns) for t, ns, _ in ops[:38]]
    assert {ns for _, ns, _ in ops[1976:]} == {"model/norm"}
    assert ("MatMul", "model/layers.0/self_attn/q_proj") in first and ("Softmax", "model/layers.0/self_attn") in first
    assert ("MatMul", "model/layers.0/mlp/down_proj") in first
    # every input comes from an earlier op; the residual Adds join the stream and a branch
    assert all(i < k for k, (_, _, ins) in enumerate(ops) for i in ins)
    residual = [ins for t, ns, ins in ops if t == "Add" and ns.count("/") == 1 and ns.startswith("model/layers.")]
    assert len(residual) == 2 * 52 and all(len(ins) == 2 for ins in residual[1:])


def test_synthetic_llm_model_names_ops_as_an_export_does() -> None:
    s = Synthetic(500, False, "seed", llm=True)
    assert len(s.ops) == len(s.nodes) == 500
    assert s.ops[3]["name"] == f"/{s.ops[3]['namespace']}/{s.ops[3]['type']}_3"
    assert Counter(o["weighted"] for o in s.ops)[True] == 7 * 12  # q, k, v, o, gate, up, down in each of 12 layers
    assert all(a < b for a, b, _ in s.edges)
