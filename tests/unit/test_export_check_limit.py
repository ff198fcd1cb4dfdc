"""The export check's size limit (worker/pipeline.py): runs up to EXPORT_CHECK_MAX_NODES source nodes, and says why
it did not above."""
from __future__ import annotations

from compiler.graph import Graph, Node
from worker.pipeline import EXPORT_CHECK_MAX_NODES, export_check_skipped


def _graph(n: int) -> Graph:
    return Graph(name="g", format="onnx", nodes=[Node(id=f"n{i}", name="", op_type="Relu") for i in range(n)],
                 values={}, inputs=[], outputs=[])


def test_export_check_runs_up_to_the_limit_and_says_why_not_above() -> None:
    assert export_check_skipped(_graph(EXPORT_CHECK_MAX_NODES)) is None
    why = export_check_skipped(_graph(EXPORT_CHECK_MAX_NODES + 1))
    assert why is not None and "not checked before export" in why and "20,001 nodes" in why
