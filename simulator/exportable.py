"""Which options of the option table the exporter can write for this model (docs/option-table.md).

ONNX (`mark_onnx`):

A task's combo is exported on every source node it implements (a fused Relu takes the Conv's activation formats
without its kernel: compiler.optimize.choices), so a combo is exportable for a task when the exporter's rule
(compiler.optimize.onnx_rules) accepts it on each of them. A preset is exportable when every task's combo is.
Failures only a real file shows (opset conversion, ORT's quantizer) are added by a dry run at analysis time
(compiler.optimize.onnx_dry_run.dry_run).

LiteRT (`mark_tflite`): ai-edge-quantizer's recipes (compiler.optimize.litert_rules), the same rule its exporter
refuses by: no palettization, no pruning, int8 activations on both sides with int8 weights. A preset is judged
as the exporter resolves it (on a weighted op), whatever ops the model has.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from compiler.frontends.tflite_custom import CUSTOM
from compiler.graph import Graph, Node
from compiler.optimize import litert_rules
from compiler.optimize.onnx_rules import FLOAT_FORMAT, STORED_INT8_OPS, as_written, combo_reason, left_float, rule_op
from compiler.vocabulary.options import Combo, Preset, all_combos, parse_preset
from compiler.vocabulary.targets import Target
from simulator.control_flow import body_preset
from simulator.costs import Work, takes_kernel_option

# Source op types whose second input the exporter treats as a kernel (compiler.optimize.onnx_export.WEIGHTED_OPS),
# and those whose kernel a file stores int8 already (judged with the option's kernel: only some keep it as stored).
_KERNEL_OPS = frozenset({"Conv", "Gemm", "MatMul", "ConvTranspose"}) | STORED_INT8_OPS
_LITERT_CUSTOM = "custom:"  # left_float_ops' mark of a TFLite custom operator


def _on_source(has_kernel: bool, c: Combo) -> Combo:
    if c.kernel != "-" and not has_kernel:
        return Combo(c.input, c.output, "-", 0)
    return c


def _reasons(sources: tuple[str, ...], has_k: bool) -> list[str | None]:
    out: list[str | None] = []
    for c in all_combos(has_k):
        why = None
        for op in sources:
            why = combo_reason(op, _on_source(has_k and op in _KERNEL_OPS, c))
            if why is not None:
                break
        out.append(why)
    return out


def _rule_ops(g: Graph | None) -> dict[str, str]:
    """Node id -> the op type the exporter's rules read it as (onnx_rules.rule_op: a node fp16 keeps fp32 marked so;
    compiler.optimize.onnx_export.rule_ops, on the source graph)."""
    if g is None:
        return {}
    readers = {v for n in g.nodes if n.op_type == "MatMul" for v in n.inputs[:2]}
    return {n.id: rule_op(n.op_type, n.text("reduction"), [int(p) for p in n.attributes.get("perm") or []],  # type: ignore[union-attr]
                          any(o in readers for o in n.outputs)) for n in g.nodes}


def _source_ops(nd: Node, src_ops: dict[str, str]) -> tuple[str, ...]:
    """The source op types a compiled task implements as the rules read them (its own where the source is not known)."""
    return tuple(sorted({src_ops[s] for s in nd.source_nodes if s in src_ops})) or (src_ops.get(nd.id, nd.op_type),)


def _left(ops: tuple[str, ...], has_k: bool, c: Combo) -> bool:
    """Whether the preset's tool leaves a task of source ops `ops` float where the preset asks `c` (left_float; a
    TFLite custom operator, marked _LITERT_CUSTOM: litert_rules.custom_left_float)."""
    return any(litert_rules.custom_left_float(c.input, c.output, c.kernel) if op.startswith(_LITERT_CUSTOM)
               else left_float(op, _on_source(has_k and op in _KERNEL_OPS, c)) for op in ops)


def _litert_custom(nd: Node) -> bool:
    return bool(nd.attributes.get(CUSTOM))


def left_float_ops(t: Target, compiled: Graph, source: Graph | None, works: Sequence[Work]) -> list[tuple[str, ...]]:
    """Per task of an ONNX export, the source op types it implements if a preset's tool may leave one of them float
    (a ConvTranspose under int8-dynamic, an LSTM under int8-static, a batch Transpose into a MatMul under fp16:
    onnx_rules.left_float); of a LiteRT export, a custom operator's code marked _LITERT_CUSTOM; () elsewhere."""
    if t.export == "tflite":  # ai-edge-quantizer leaves a custom operator float under every preset
        return [(_LITERT_CUSTOM + nd.op_type,) if _litert_custom(nd) else () for nd in compiled.nodes]
    if t.export != "onnx":
        return [()] * len(works)
    src_ops = _rule_ops(source if source is not None else compiled)
    probes = [parse_preset(p).resolve(FLOAT_FORMAT, True) for p in ("int8-dynamic", "int8-static", "fp16")]
    out: list[tuple[str, ...]] = []
    for nd, w in zip(compiled.nodes, works):
        has_k = takes_kernel_option(w)
        ops = _source_ops(nd, src_ops)
        out.append(ops if any(_left(ops, has_k, c) for c in probes) else ())
    return out


def written_combo(p: Preset, float_format: str, has_k: bool, body: bool, left_ops: tuple[str, ...]) -> Combo:
    """The combo the ONNX exporter writes a task in under model-wide preset `p`: a body's as control_flow.body_preset
    says, a task whose op the preset's tool leaves float (left_float_ops) float, else as the preset asks."""
    if body:
        return parse_preset(body_preset(p)).resolve(float_format, has_k)
    c = p.resolve(float_format, has_k)
    return as_written(c, float_format) if left_ops and _left(left_ops, has_k, c) else c


def mark_onnx(compiled: Graph, source: Graph | None, works: Sequence[Work], presets: Sequence[Preset],
              bulk: dict[str, Any]) -> list[np.ndarray]:
    """Per task, a bool per combo of its per-op table; sets bulk["exportable"] / bulk["export_reasons"] per preset."""
    src_ops = _rule_ops(source if source is not None else compiled)
    cache: dict[tuple[tuple[str, ...], bool], tuple[np.ndarray, list[str | None]]] = {}
    per_task: list[np.ndarray] = []
    preset_why: list[str | None] = [None] * len(presets)
    # Column of each preset's combo in a task's per-op table, with and without a kernel.
    cols = {k: [{c: j for j, c in enumerate(all_combos(k))}[p.resolve(FLOAT_FORMAT, k)] for p in presets]
            for k in (False, True)}
    for nd, w in zip(compiled.nodes, works):
        has_k = takes_kernel_option(w)
        ops = _source_ops(nd, src_ops)
        key = (ops, has_k)
        if key not in cache:
            why = _reasons(ops, has_k)
            cache[key] = (np.array([r is None for r in why]), why)
        ok, why = cache[key]
        if nd.parent:
            # The exporter's quantizers work on the main graph: an If / Loop / Scan body keeps its float ops
            # under any preset, and a per-op override cannot reach a body node.
            per_task.append(np.zeros_like(ok))
            continue
        per_task.append(ok)
        for p, j in enumerate(cols[has_k]):
            r = None if _left(ops, has_k, presets[p].resolve(FLOAT_FORMAT, has_k)) else why[j]
            if r is not None and preset_why[p] is None:
                preset_why[p] = f"{r} on {nd.name or nd.id}"
    bulk["exportable"] = [r is None for r in preset_why]
    bulk["export_reasons"] = preset_why
    return per_task


def mark_tflite(works: Sequence[Work], presets: Sequence[Preset], bulk: dict[str, Any],
                compiled: Graph | None = None, source: Graph | None = None) -> list[np.ndarray]:
    """mark_onnx for a LiteRT target: a bool per combo of each task; bulk["exportable"] / ["export_reasons"].
    With the model: a preset its file cannot take (fully int8, IF / WHILE bodies: litert_rules.model_reason)."""
    from compiler.frontends.tflite import fully_int8

    int8 = fully_int8(source or compiled) if compiled is not None else False
    bodies = compiled is not None and any(nd.parent for nd in compiled.nodes)
    masks = {k: np.array([litert_rules.combo_reason(c.input, c.output, c.kernel, c.sparsity) is None
                          for c in all_combos(k)]) for k in (False, True)}
    reasons = []
    for p in presets:
        c = p.resolve(litert_rules.FLOAT_FORMAT, True)
        reasons.append(litert_rules.combo_reason(c.input, c.output, c.kernel, c.sparsity)
                       or litert_rules.model_reason(c.input, c.output, c.kernel, int8, bodies))
    bulk["exportable"] = [r is None for r in reasons]
    bulk["export_reasons"] = reasons
    # a per-op override cannot quantize a custom operator (the model-wide presets leave it float: written_combo)
    floats = {k: masks[k] & np.array([not litert_rules.custom_left_float(c.input, c.output, c.kernel)
                                      for c in all_combos(k)]) for k in (False, True)}
    nodes = compiled.nodes if compiled is not None else [None] * len(works)
    return [(floats if nd is not None and _litert_custom(nd) else masks)[takes_kernel_option(w)]
            for nd, w in zip(nodes, works)]
