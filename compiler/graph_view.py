"""The graph documents the API serves (`GET /graph`, docs/api.md): a graph's nodes and edges as JSON, and the
same column by column. The worker stores both with every analysis; the server rebuilds the columns of results
stored before they existed. Pure functions of the graph, below both."""

from __future__ import annotations

from typing import Any

from compiler.graph import Graph


def graph_view(g: Graph, view: str) -> dict[str, Any]:
    """`g` as the API's graph document; `view` is "source" or "compiled"."""
    nodes = [{"id": n.id, "name": n.name, "type": n.op_type, "namespace": n.namespace,
              "source_nodes": n.source_nodes} for n in g.nodes]
    edges = []
    # Body results drawn into their If / Loop / Scan node: a body's group then leads somewhere.
    for src, dst, value in g.edges() + g.body_results():
        v = g.values.get(value)
        edges.append({"src": src, "dst": dst, "value": value,
                      "shape": v.shape if v else None, "dtype": v.dtype if v else "unknown"})
    return {"view": view, "nodes": nodes, "edges": edges, "inputs": g.inputs, "outputs": g.outputs}


def graph_columns(view: dict[str, Any]) -> dict[str, Any]:
    """A graph_view document column by column, as the graph view of the UI reads it (GET /graph?format=columns):
    no object per node to parse and edges as node indices, a third of the JSON at 50,000 tasks."""
    nodes = view["nodes"]
    index = {n["id"]: i for i, n in enumerate(nodes)}
    edges = [(index[e["src"]], index[e["dst"]]) for e in view["edges"] if e["src"] in index and e["dst"] in index]
    return {"view": view["view"], "ids": [n["id"] for n in nodes], "names": [n["name"] for n in nodes],
            "types": [n["type"] for n in nodes], "namespaces": [n["namespace"] for n in nodes],
            "src": [a for a, _ in edges], "dst": [b for _, b in edges]}
