"""Results in other tools' formats: the op table as CSV, per-op figures as Model Explorer node data.

Model Explorer (google-ai-edge/model-explorer) overlays "node data" on a graph it builds itself from the model
file: {graph id: {"results": {node id: {"value": number}}, "gradient": [...]}} (its
`model_explorer.node_data_builder.ModelNodeData.to_json_string`). Its node ids are its adapters' own:
the ONNX adapter (model-explorer-onnx) keys a node by its name in the file and the graph by the graph's name;
the built-in TFLite adapter keys an operator by its index in the subgraph and the graph by the subgraph's
name. Our task ids are kept apart from those, so the ids are rebuilt here from the uploaded file's facts.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from typing import Any

NODE_DATA_METRICS: tuple[str, ...] = ("latency_ms", "share", "macs", "weight_bytes", "activation_bytes")

CSV_COLUMNS: tuple[str, ...] = ("index", "id", "name", "type", "namespace", "latency_ms", "p25_ms", "p75_ms",
                                "measured", "share", "macs", "weight_bytes", "activation_bytes", "executions",
                                "work_unknown", "parent", "source_nodes", "kernels")


class NodeDataError(ValueError):
    """The model's format has no Model Explorer adapter whose ids we can reproduce. User-facing."""


# A state's table: each task's row under the state (its option, unit, the option table's figures; `share` of the
# state's task times) beside the unoptimized time of GET /ops (`measured` says whether that one was measured here).
STATE_CSV_COLUMNS: tuple[str, ...] = ("index", "id", "name", "type", "namespace", "combo", "unit", "overridden",
                                      "latency_ms", "conversion_in_ms", "share", "weight_bytes", "activation_bytes",
                                      "dram_bytes", "unoptimized_latency_ms", "measured", "macs", "executions",
                                      "work_unknown", "parent", "source_nodes", "kernels")


def ops_csv(ops_doc: Mapping[str, Any], header: Sequence[str] = (),
            state: Mapping[str, Mapping[str, Any]] | None = None) -> str:
    """One row per task of GET /ops, in execution order; lists joined with ';', missing figures empty. `header`:
    lines written first, each after "# " (what the file holds). `state`: per task id, its figures under a state
    (combo, unit, overridden, latency_ms, conversion_in_ms, weight_bytes, activation_bytes, dram_bytes)."""
    out = io.StringIO()
    for line in header:
        out.write("# " + " ".join(line.split()) + "\n")  # one line each, whatever a name holds
    w = csv.writer(out, lineterminator="\n")
    columns = CSV_COLUMNS if state is None else STATE_CSV_COLUMNS
    w.writerow(columns)
    rows = ops_doc["ops"] if state is None else _state_rows(ops_doc["ops"], state)
    for row in rows:
        cells = []
        for c in columns:
            v = row.get(c)
            if isinstance(v, list):
                v = ";".join(str(x) for x in v)
            elif isinstance(v, bool):
                v = "true" if v else "false"
            elif v is None:
                v = ""
            elif isinstance(v, float):
                v = repr(v)  # every digit: a spreadsheet or pandas reads back the same float
            cells.append(v)
        w.writerow(cells)
    return out.getvalue()


def _state_rows(ops: Sequence[Mapping[str, Any]], state: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    rows = [{**o, "unoptimized_latency_ms": o.get("latency_ms"), **state.get(o["id"], {})} for o in ops]
    total = sum(r.get("latency_ms") or 0.0 for r in rows)
    for r in rows:
        r["share"] = (r.get("latency_ms") or 0.0) / total if total > 0 else 0.0
    return rows


def _node_ids(source_ir: Mapping[str, Any]) -> tuple[str, dict[str, str]]:
    """(graph id, our source node id -> Model Explorer node id) for the top-level graph of the upload."""
    fmt = source_ir["format"]
    nodes = [n for n in source_ir["nodes"] if not n.get("parent")]
    if fmt == "onnx":
        # Named nodes keep their name as our id too (compiler/frontends/onnx_scopes.assign_ids); a node
        # without a name has no id in Model Explorer's ONNX adapter and is left out.
        return source_ir["name"], {n["id"]: n["name"] for n in nodes if n.get("name")}
    if fmt == "tflite":
        # Our TFLite ids are `<BUILTIN>_<operator index>` (compiler/frontends/tflite.py).
        return source_ir["name"], {n["id"]: n["id"].rsplit("_", 1)[1] for n in nodes}
    if fmt == "pt2":
        # Model Explorer's ExportedProgram adapter names each node by its FX name, as our .pt2 ids are, in one graph
        # `graph`; it groups them by their nn_module_stack itself.
        return "graph", {n["id"]: n["id"] for n in nodes}
    raise NodeDataError(f"Model Explorer node data is written for ONNX, TFLite and .pt2 models; this one is {fmt}")


def model_explorer_node_data(ops_doc: Mapping[str, Any], source_ir: Mapping[str, Any], metric: str
                             ) -> dict[str, Any]:
    """Node data of one metric. A task fused from several source nodes puts its figure on the first of them and
    0 on the others, so Model Explorer's sums over a layer stay the model's; source nodes no task runs (folded
    at load) get 0, so every operator Model Explorer draws has a value."""
    graph_id, ids = _node_ids(source_ir)
    results: dict[str, dict[str, float]] = {}
    for row in ops_doc["ops"]:
        if row.get("parent"):
            continue  # control-flow bodies are graphs of their own in Model Explorer
        value = row.get(metric)
        members = [ids[s] for s in row.get("source_nodes") or [] if s in ids]
        for k, node in enumerate(members):
            # Several tasks from one source node (a layout change the runtime inserted) add up on it.
            prev = results.get(node, {"value": 0.0})["value"]
            results[node] = {"value": prev + (float(value or 0.0) if k == 0 else 0.0)}
    for node in ids.values():
        # Source nodes no task runs (constants folded at load, Identity on weights) cost nothing at run time.
        results.setdefault(node, {"value": 0.0})
    return {graph_id: {"results": results,
                       "gradient": [{"stop": 0, "bgColor": "#f7fbff"}, {"stop": 1, "bgColor": "#d94801"}]}}
