"""Op matching between two versions of a network (compiler/matching.py), on torchvision models built in code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from compiler.graph import Graph
from compiler.matching import OpNode, match_ops, ops_from_documents


def _nodes(g: Graph) -> list[OpNode]:
    prod = g.producers()
    return [OpNode(n.id, n.name, n.op_type, n.namespace, tuple(prod[v] for v in n.inputs if v in prod))
            for n in g.nodes]


@pytest.fixture(scope="module")
def nets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Graph]:
    import corpus  # noqa: F401  (before torchvision)
    import torch
    import torchvision

    from compiler.frontends import load

    root: Path = tmp_path_factory.mktemp("matching")
    out = {}
    for name, net in (("r18", torchvision.models.resnet18()), ("r34", torchvision.models.resnet34()),
                      ("r18_wrapped", torch.nn.Sequential(torchvision.models.resnet18()))):
        path = root / f"{name}.onnx"
        torch.onnx.export(net.eval(), (torch.randn(1, 3, 64, 64),), str(path), dynamo=False, opset_version=17,
                          input_names=["x"])
        out[name] = load(path)
    return out


def test_resnet18_vs_resnet34(nets: dict[str, Graph]) -> None:
    a, b = nets["r18"], nets["r34"]
    m = match_ops(_nodes(a), _nodes(b))
    by_a = {n.id: n for n in a.nodes}
    by_b = {n.id: n for n in b.nodes}
    matched = [p for p in m.pairs if p.a and p.b]
    assert len(matched) == len(a.nodes)  # resnet34 contains every op of resnet18
    for p in matched:
        x, y = by_a[p.a], by_b[p.b]  # type: ignore[index]
        assert x.op_type == y.op_type
        if p.how == "name":
            assert x.name == y.name and x.namespace == y.namespace
    # every named op of resnet18 found under its own name
    assert {by_a[p.a].name for p in matched if p.how == "name"} == {  # type: ignore[index]
        n.name for n in a.nodes if n.name.startswith("/")}
    added = [by_b[p.b] for p in m.pairs if p.how == "added"]  # type: ignore[index]
    assert len(added) == len(b.nodes) - len(a.nodes)
    blocks_a = {mm.group(0) for n in a.nodes if (mm := re.search(r"layer\d\.\d+", n.name))}
    for n in added:  # only the blocks resnet34 adds (layer1.2, layer3.5, ...) and their weight copies
        block = re.search(r"layer\d\.\d+", n.name)
        assert (block and block.group(0) not in blocks_a) or n.op_type == "Identity", n.name
    assert not [p for p in m.pairs if p.how == "removed"]
    # pairs follow a's execution order
    order = {n.id: i for i, n in enumerate(a.nodes)}
    seq = [order[p.a] for p in m.pairs if p.a]
    assert seq == sorted(seq)


def test_renamed_graph_matches_by_structure(nets: dict[str, Graph]) -> None:
    """A wrapper module renames every op ('/0/layer1/...'); the structure pass still pairs each op with its twin."""
    a, b = nets["r18"], nets["r18_wrapped"]
    m = match_ops(_nodes(a), _nodes(b))
    by_a = {n.id: n for n in a.nodes}
    by_b = {n.id: n for n in b.nodes}
    assert m.counts()["added"] == m.counts()["removed"] == 0
    assert m.counts()["structure"] > 40
    for p in m.pairs:
        x, y = by_a[p.a], by_b[p.b]  # type: ignore[index]
        if x.name.startswith("/"):
            assert y.name == "/0" + x.name, (x.name, y.name)


def test_order_pass_and_documents() -> None:
    """A changed op in a chain: its neighbours match by name, the renamed op by structure, a replaced type is
    removed + added; ops_from_documents reads ops rows and edges as the server stores them."""
    ops_a = [{"id": "a0", "name": "/stem/Conv", "type": "Conv", "namespace": "stem"},
             {"id": "a1", "name": "/stem/Relu", "type": "Relu", "namespace": "stem"},
             {"id": "a2", "name": "/head/x", "type": "Gemm", "namespace": "head"},
             {"id": "a3", "name": "/head/Softmax", "type": "Softmax", "namespace": "head"}]
    ops_b = [{"id": "b0", "name": "/stem/Conv", "type": "Conv", "namespace": "stem"},
             {"id": "b1", "name": "/stem/act", "type": "Relu", "namespace": "stem"},
             {"id": "b2", "name": "/head/x", "type": "MatMul", "namespace": "head"},
             {"id": "b3", "name": "/head/Softmax", "type": "Softmax", "namespace": "head"}]
    chain = [("0", "1"), ("1", "2"), ("2", "3")]
    m = match_ops(ops_from_documents(ops_a, [("a" + s, "a" + d) for s, d in chain]),
                  ops_from_documents(ops_b, [("b" + s, "b" + d) for s, d in chain]))
    got = {(p.a, p.b, p.how) for p in m.pairs}
    assert got == {("a0", "b0", "name"), ("a1", "b1", "structure"), ("a2", None, "removed"),
                   (None, "b2", "added"), ("a3", "b3", "name")}
    # without edges (and one more Relu in b, so the graph-input seeding cannot pair them), the leftovers of a
    # namespace align by type in execution order
    extra = {"id": "b4", "name": "/stem/act2", "type": "Relu", "namespace": "stem"}
    m2 = match_ops(ops_from_documents(ops_a, []), ops_from_documents([*ops_b[:2], extra, *ops_b[2:]], []))
    got2 = {(p.a, p.b, p.how) for p in m2.pairs}
    assert ("a1", "b1", "order") in got2 and (None, "b4", "added") in got2
