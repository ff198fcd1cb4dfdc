"""Module stacks of a converted `.pt2`: what lets tasks compiled from the converted file keep the `.pt2`'s groups.

Converters decompose the program before lowering it (`torch.onnx.export` runs the core-ATen decompositions:
`batch_norm` becomes `_native_batch_norm_legit_no_training` and a `getitem`, `hardswish_` becomes `hardswish`), so
the converted file's values are named after FX nodes the uploaded `.pt2` does not have, and provenance, which maps
tasks back by value name, lost most of them (MobileNetV3-small on `ort-cpu/host`: 62 of 114 tasks without a source
node, so without a namespace). torch keeps, on every decomposed node, the node it came from (`meta["from_node"]`)
and its module stack (`meta["nn_module_stack"]`). The conversion child reads both (`program_modules`) and returns:

- `aliases`: decomposed node name -> the `.pt2` node it stands for, for the one node of each decomposition whose
  result leaves it (`getitem` -> `batch_norm`); `rename_onnx_values` renames the converted file's values (and the
  `node_<name>` node names) to them before ORT compiles it, so provenance finds its heads;
- `scopes` and `scope_of`: each decomposed node's namespace from its own module stack (the `.pt2` frontend's
  `namespace_from_stack`), for tasks provenance still leaves without a source node.

The child imports this module; `compiler.conversion_cache` keys conversions on its source.
"""

from __future__ import annotations

import os
from collections import deque
from typing import Any

from compiler.graph import Graph


def program_modules(decomposed: Any, original_names: set[str]) -> dict[str, Any]:
    """`aliases`, `scopes` and `scope_of` (see module doc) of a decomposed ExportedProgram whose nodes came from a
    program with FX node names `original_names`."""
    from compiler.frontends.pt2 import namespace_from_stack

    nodes = [n for n in decomposed.graph.nodes if n.op == "call_function"]
    origin = {n.name: o for n in nodes if (o := _origin(n, original_names))}
    results: dict[str, list[str]] = {}
    for n in nodes:
        o = origin.get(n.name)
        if o is None or n.name == o:
            continue
        if any(u.op == "output" or origin.get(u.name) != o for u in n.users):
            results.setdefault(o, []).append(n.name)
    aliases = {names[0]: o for o, names in results.items() if len(names) == 1}
    scopes: list[str] = []
    index: dict[str, int] = {}
    scope_of: dict[str, int] = {}
    for n in nodes:
        ns = namespace_from_stack(_stack_text(n.meta.get("nn_module_stack") or {}))
        if ns:
            scope_of[n.name] = index.setdefault(ns, len(scopes))
            if index[ns] == len(scopes):
                scopes.append(ns)
    return {"aliases": aliases, "scopes": scopes, "scope_of": scope_of}


def _origin(node: Any, original_names: set[str]) -> str | None:
    """The nearest node of the original program in the node's `from_node` chain (breadth first)."""
    queue = deque(node.meta.get("from_node") or [])
    seen = 0
    while queue and seen < 64:
        src = queue.popleft()
        seen += 1
        name = getattr(src, "name", None)
        if name in original_names:
            return str(name)
        queue.extend(getattr(src, "from_node", None) or [])
    return node.name if node.name in original_names else None


def _stack_text(stack: dict[str, Any]) -> str:
    """An in-memory `nn_module_stack` ({key: (path, class)}) as the serialized `key,path,class;...` the frontend
    reads, so both sides name modules by one function."""
    def cls(t: Any) -> str:
        return t if isinstance(t, str) else f"{getattr(t, '__module__', '')}.{getattr(t, '__qualname__', t)}"

    return ";".join(f"{k},{v[0]},{cls(v[1])}" for k, v in stack.items() if isinstance(v, tuple | list) and len(v) >= 2)


def rename_onnx_values(path: str | os.PathLike[str], aliases: dict[str, str]) -> int:
    """Rename the converted ONNX file's values (and nodes named `node_<value>`) by `aliases`, in place, where the new
    name is free. All at once, so swapped names (`relu` -> `relu_`, `relu_1` -> `relu`) stay apart. Returns how many
    values were renamed."""
    import onnx

    model = onnx.load(os.fspath(path), load_external_data=False)
    g = model.graph
    names = {v for n in g.node for v in (*n.input, *n.output) if v}
    names |= {i.name for i in g.input} | {o.name for o in g.output} | {t.name for t in g.initializer}
    ren = {a: b for a, b in aliases.items() if a in names}
    targets: dict[str, int] = {}
    for b in ren.values():
        targets[b] = targets.get(b, 0) + 1
    ren = {a: b for a, b in ren.items() if targets[b] == 1}
    # A new name must be free of every name that stays: dropping one rename keeps its old name, which may be
    # another's new one (view_17 -> view_14 dropped as view_14 stays, so view_26 -> view_17 must go too).
    while True:
        kept = names - set(ren)
        dropped = {a for a, b in ren.items() if b in kept}
        if not dropped:
            break
        ren = {a: b for a, b in ren.items() if a not in dropped}
    if not ren:
        return 0
    for n in g.node:
        n.input[:] = [ren.get(v, v) for v in n.input]
        n.output[:] = [ren.get(v, v) for v in n.output]
        if n.name.startswith("node_") and n.name[5:] in ren:
            n.name = "node_" + ren[n.name[5:]]
    # Initializers too: a view the exporter folded into a constant (EfficientFormerV2's attention-bias `view_26`)
    # is read under its new name, so it must be stored under it (ORT refused the file: "not a graph input,
    # initializer, or output of a previous node").
    for seq in (g.input, g.output, g.value_info, g.initializer):
        for v in seq:
            v.name = ren.get(v.name, v.name)
    for sp in g.sparse_initializer:
        sp.values.name = ren.get(sp.values.name, sp.values.name)
    onnx.save(model, os.fspath(path))
    return len(ren)


def name_unscoped_tasks(compiled: Graph, modules: dict[str, Any], aliases: dict[str, str],
                        suffixes: tuple[str, ...] = ()) -> int:
    """Give each task without a namespace the module of the converted node behind it: its outputs', else its
    name's (`<value>_nchwc`). Returns how many tasks got one."""
    scopes, scope_of = modules.get("scopes", []), modules.get("scope_of", {})
    back = {b: a for a, b in aliases.items()}  # renamed value -> the converted node's name

    def scope(value: str) -> str:
        i = scope_of.get(back.get(value, value))
        return scopes[i] if isinstance(i, int) and 0 <= i < len(scopes) else ""

    named = 0
    for task in compiled.nodes:
        if task.namespace:
            continue
        stem = task.name.removeprefix("node_")
        for s in suffixes:
            stem = stem.removesuffix(s)
        for v in (*task.outputs, stem):
            ns = scope(v)
            if ns:
                task.namespace, named = ns, named + 1
                break
    return named
