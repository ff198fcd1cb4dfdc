"""Task graphs built directly, without a model file: the sweep's scale test and benchmarks/sweep.py time them."""

from __future__ import annotations

from compiler.graph import Graph, Node, Value, WeightStats


def chain(n_ops: int, hidden: int = 256) -> Graph:
    """MatMul, Add, Relu repeated: `n_ops` tasks on [1, hidden] activations."""
    values: dict[str, Value] = {"x": Value("x", [1, hidden], "float32")}
    nodes: list[Node] = []
    cur = "x"
    for i in range(n_ops):
        out = f"v{i}"
        values[out] = Value(out, [1, hidden], "float32")
        kind = i % 3
        if kind == 0:
            w = f"w{i}"
            values[w] = Value(w, [hidden, hidden], "float32",
                              weight=WeightStats(hidden * hidden, hidden * hidden * 4, -1.0, 1.0, 0.0))
            nodes.append(Node(f"t{i}", f"MatMul_{i}", "MatMul", inputs=[cur, w], outputs=[out]))
        elif kind == 1:
            b = f"b{i}"
            values[b] = Value(b, [hidden], "float32", weight=WeightStats(hidden, hidden * 4, -1.0, 1.0, 0.0))
            nodes.append(Node(f"t{i}", f"Add_{i}", "Add", inputs=[cur, b], outputs=[out]))
        else:
            nodes.append(Node(f"t{i}", f"Relu_{i}", "Relu", inputs=[cur], outputs=[out]))
        cur = out
    return Graph("chain", "onnx", nodes, values, ["x"], [cur])
