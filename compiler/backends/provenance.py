"""Which source nodes each compiled task implements, rebuilt from two graphs alone.

Runtimes rarely record provenance, so we infer it. Vocabulary: a *head* is a source node whose
result a compiled node produces; a *helper* is a layout/reshape node the backend inserted
(ORT's ReorderInput/ReorderOutput, the Reshapes around a fused Gemm); a *principal* is any
other compiled node.

1. Heads by value name: backends keep the graph's value names for most fusions (FusedConv writes
   the Relu's output). A helper's named output credits the principal feeding it.
2. Heads by node name: fused nodes are often named after a source node or value
   (`/x/MatMul/MatMulAddFusion`, `<value>_nchwc`); the caller passes the suffixes to strip.
3. Groups, principals in execution order: from its heads walk *back* through source values the
   compiled graph no longer has, stopping at the principal's own inputs (translated to source
   values), constants and nodes already owned; then walk *forward* over nodes that read only the
   group's results and the principal's inputs (an Add fused into a Conv as its `Sum`). A renamed
   output of the principal then corresponds to the group's last result, so later principals
   can translate their inputs.
   Source nodes identical to a head (same op, inputs, attributes) were merged into it (CSE).
4. Helpers take the principal they serve: the one feeding them, else the one they feed.
5. Left-over source nodes are constant-folded (constants, shape arithmetic on static shapes,
   results the compiled graph holds as initializers), removed no-ops, or absorbed by the task
   owning their consumer. Every source node ends up in a task or in `Graph.eliminated`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from compiler.graph import Graph, Node, Value

HELPER_OPS = frozenset({"ReorderInput", "ReorderOutput", "Reshape", "Transpose", "Squeeze", "Unsqueeze",
                        "Flatten", "Identity", "Cast"})
NO_OPS = frozenset({"Identity", "Dropout"})


def map_provenance(source: Graph, compiled: Graph, name_suffixes: Sequence[str] = (),
                   helper_ops: Collection[str] = HELPER_OPS, name_prefixes: Sequence[str] = ()) -> dict[str, str]:
    """Fill `source_nodes` of every compiled node and `compiled.eliminated`, in place. Returns
    the correspondence of renamed compiled values to the source values they stand for."""
    m = _Mapping(source, compiled, helper_ops)
    m.find_heads(name_suffixes, name_prefixes)  # 1 and 2
    for c in compiled.nodes:  # 3, in execution order
        m.grow_group(c)
    m.credit_helpers()  # 4
    eliminated = m.fold_or_remove()  # 5
    m.absorb(eliminated)
    m.write_back(eliminated)
    return m.corr


class _Mapping:
    """The two graphs indexed, and the mapping as it is built: which task owns each source node (`owner`), each
    task's heads and group, and the correspondence of renamed compiled values to source values (`corr`)."""

    def __init__(self, source: Graph, compiled: Graph, helper_ops: Collection[str]) -> None:
        self.source, self.compiled = source, compiled
        self.s_nodes = {n.id: n for n in source.nodes}
        self.s_index = {n.id: i for i, n in enumerate(source.nodes)}
        self.s_prod = source.producers()
        self.s_names: dict[str, str] = {}
        for n in source.nodes:
            if n.name:
                self.s_names.setdefault(n.name, n.id)
        self.s_consumers = _consumers(source)
        self.s_values = set(self.s_prod) | set(source.inputs)
        self.c_prod = compiled.producers()
        self.c_consumers = _consumers(compiled)
        self.c_weights = {k for k, v in compiled.values.items() if v.weight is not None}
        self.c_nodes = {n.id: n for n in compiled.nodes}
        self.const = _constant_values(source)
        self.const_nodes = {n.id for n in source.nodes if n.outputs and all(o in self.const for o in n.outputs)}
        self.folded = {v for v in self.c_weights if v in self.s_prod}  # results ORT turned into initializers
        self.boundary = {v for v in self.s_values if v in self.c_prod or v in compiled.inputs}
        self.helpers = {c.id for c in compiled.nodes if self._is_helper(c, helper_ops)}
        self.owner: dict[str, str] = {}  # source node id -> compiled node id
        self.heads: dict[str, list[str]] = {c.id: [] for c in compiled.nodes}
        self.hint_head: dict[str, str] = {}
        self.groups: dict[str, list[str]] = {}
        self.corr: dict[str, str] = {}  # compiled value name -> source value name
        self.corr_targets: set[str] = set()

    def _is_helper(self, c: Node, helper_ops: Collection[str]) -> bool:
        if c.op_type not in helper_ops or c.name in self.s_names:
            return False
        acts = [v for v in c.inputs + c.outputs if v and v not in self.c_weights]
        return any(v not in self.s_values for v in acts)

    def principal_upstream(self, c: Node) -> str | None:
        seen = set()
        while c.id in self.helpers and c.id not in seen:
            seen.add(c.id)
            acts = [v for v in c.inputs if v and v not in self.c_weights and v in self.c_prod]
            if not acts:
                return None
            c = self.c_nodes[self.c_prod[acts[0]]]
        return None if c.id in self.helpers else c.id

    def claim(self, c_id: str, s_id: str) -> None:
        if s_id not in self.owner:
            self.owner[s_id] = c_id
            self.heads[c_id].append(s_id)

    def find_heads(self, name_suffixes: Sequence[str], name_prefixes: Sequence[str]) -> None:
        """Steps 1 and 2: heads by value name, then by node name, then the source nodes CSE merged into a head."""
        for c in self.compiled.nodes:
            for o in c.outputs:
                if o in self.s_prod and o not in self.const:
                    target = c.id if c.id not in self.helpers else self.principal_upstream(c)
                    if target:
                        self.claim(target, self.s_prod[o])
        for c in self.compiled.nodes:
            if c.id in self.helpers:
                continue
            s_id = _hint(c.name, name_suffixes, self.s_names, self.s_prod, name_prefixes)
            if s_id and s_id not in self.const_nodes:
                self.hint_head[c.id] = s_id
                self.claim(c.id, s_id)
        # Common-subexpression elimination: a source node identical to a head (same op, inputs and
        # attributes) was merged into that head's task.
        signature = {_signature(self.s_nodes[s]): c_id for c_id, hs in self.heads.items() for s in hs}
        for n in self.source.nodes:
            if n.id not in self.owner and n.id not in self.const_nodes:
                c_id = signature.get(_signature(n))
                if c_id:
                    self.claim(c_id, n.id)
        self.groups = {c.id: list(self.heads[c.id]) for c in self.compiled.nodes}

    def to_source(self, v: str) -> str:
        return v if v in self.s_values else self.corr.get(v, "")

    def grow_group(self, c: Node) -> None:
        """Step 3 for one compiled node: a helper passes its input's source value on to its renamed outputs; a
        principal's group grows back from its heads, then forward, and its renamed output stands for the last."""
        acts_in = [v for v in c.inputs if v and v not in self.c_weights]
        if c.id in self.helpers:
            if acts_in:
                for o in c.outputs:
                    if o not in self.s_values and self.to_source(acts_in[0]):
                        self.corr[o] = self.to_source(acts_in[0])
                        self.corr_targets.add(self.corr[o])
            return
        group = self.groups[c.id]
        if not group:
            return
        inputs_src = {self.to_source(v) for v in acts_in} - {""}
        self._grow_back(c.id, group, inputs_src)
        self._grow_forward(c.id, group, inputs_src)
        group.sort(key=self.s_index.__getitem__)
        renamed = [o for o in c.outputs if o and o not in self.s_values]
        if renamed:
            self.corr[renamed[0]] = self.s_nodes[group[-1]].outputs[0]
            self.corr_targets.add(self.corr[renamed[0]])

    def _grow_back(self, c_id: str, group: list[str], inputs_src: set[str]) -> None:
        """Through source values the compiled graph no longer has, up to the principal's own inputs, constants,
        values already accounted for and nodes already owned."""
        stack = list(group)
        while stack:
            for u in self.s_nodes[stack.pop()].inputs:
                if not u or u in inputs_src or u in self.boundary or u in self.const or u in self.folded \
                        or u in self.corr_targets or u not in self.s_prod:
                    continue
                p = self.s_prod[u]
                if p in self.owner:
                    continue
                self.owner[p] = c_id
                group.append(p)
                stack.append(p)

    def _grow_forward(self, c_id: str, group: list[str], inputs_src: set[str]) -> None:
        """Over nodes that read only the group's results and the principal's inputs, to a fixed point: ops fused
        onto the result (Conv + Add as Sum)."""
        changed = True
        while changed:
            changed = False
            outs = {o for g in group for o in self.s_nodes[g].outputs}
            for v in list(outs):
                for n_id in self.s_consumers.get(v, []):
                    n = self.s_nodes[n_id]
                    if n_id in self.owner or any(o in self.boundary for o in n.outputs if o not in outs):
                        continue
                    live = [u for u in n.inputs if u and u not in self.const]
                    if live and all(u in outs or u in inputs_src for u in live) \
                            and any(u in inputs_src for u in live):
                        self.owner[n_id] = c_id
                        group.append(n_id)
                        changed = True

    def credit_helpers(self) -> None:
        """Step 4: each helper takes the principal it serves."""
        for h in self.helpers:
            c = self.c_nodes[h]
            downstream = next((d for o in c.outputs for d in self.c_consumers.get(o, []) if d not in self.helpers),
                              None)
            upstream = self.principal_upstream(c)
            # A helper writing a source value finishes its producer's work (ReorderOutput); one
            # writing a new value prepares its consumer's input (ReorderInput, Gemm's input Reshape).
            writes_source = any(o in self.s_values for o in c.outputs)
            order = (upstream, downstream) if writes_source else (downstream, upstream)
            served = next((p for p in order if p and self.groups.get(p)), None)
            if served and self.groups.get(served):
                self.groups[h] = _primary(self.c_nodes[served], self.groups[served], self.hint_head.get(served),
                                          self.s_nodes)

    def fold_or_remove(self) -> dict[str, str]:
        """Step 5, first half: {source node id: why} for the unowned nodes constant-folded or removed."""
        eliminated: dict[str, str] = {}
        for n in reversed(self.source.nodes):  # consumers first, so folding spreads upstream
            if n.id in self.owner:
                continue
            outs = [o for o in n.outputs if o]
            users = [u for o in outs for u in self.s_consumers.get(o, [])]
            if all(o in self.const or o in self.folded for o in outs) \
                    or (users and all(u in eliminated and eliminated[u] == "constant-folded" for u in users)):
                eliminated[n.id] = "constant-folded"
            elif not users and not any(o in self.source.outputs for o in outs):
                eliminated[n.id] = "removed (result unused)"
            elif n.op_type in NO_OPS:
                eliminated[n.id] = "removed (no-op)"
        return eliminated

    def absorb(self, eliminated: dict[str, str]) -> None:
        """Step 5, second half: the task owning a neighbour implements what is left; else it was removed."""
        for n in self.source.nodes:
            if n.id in self.owner or n.id in eliminated:
                continue
            near = [self.owner.get(u) for o in n.outputs for u in self.s_consumers.get(o, [])]
            near += [self.owner.get(self.s_prod.get(u, "")) for u in n.inputs]
            target = next((t for t in near if t), None)
            if target:
                self.owner[n.id] = target
                self.groups[target].append(n.id)
                self.groups[target].sort(key=self.s_index.__getitem__)
            else:
                eliminated[n.id] = "removed"

    def write_back(self, eliminated: dict[str, str]) -> None:
        """Each task's source nodes and namespace (their common one), and the eliminated nodes, on `compiled`."""
        control_flow = {n.parent for n in self.source.nodes if n.parent}
        for c in self.compiled.nodes:
            c.source_nodes = list(dict.fromkeys(self.groups.get(c.id, [])))
            ns = _common_namespace([self.s_nodes[s].namespace for s in c.source_nodes])
            # An If / Loop / Scan task stays at the head of its bodies' group, whatever it absorbed.
            ns = next((self.s_nodes[s].namespace for s in c.source_nodes if s in control_flow), ns)
            if c.source_nodes:
                c.namespace = ns
        self.compiled.eliminated = eliminated


def _consumers(graph: Graph) -> dict[str, list[str]]:
    """Value name -> ids of the nodes reading it, in execution order."""
    out: dict[str, list[str]] = {}
    for n in graph.nodes:
        for v in n.inputs:
            out.setdefault(v, []).append(n.id)
    return out


def fill_shapes_from_source(source: Graph, compiled: Graph, corr: dict[str, str]) -> int:
    """Give compiled activations with unknown shapes the logical shape of the source value they
    stand for (ORT's shape inference stops at contrib ops such as NCHWc). Layout helpers change
    shapes, so their outputs are skipped, except the 2-D flattening ORT puts around a Gemm made
    from a 3-D MatMul. Returns how many values were filled."""
    prod = compiled.producers()
    consumers: dict[str, list[Node]] = {}
    for n in compiled.nodes:
        for v in n.inputs:
            consumers.setdefault(v, []).append(n)
    by_id = {n.id: n for n in compiled.nodes}
    filled = 0

    def known(v: str) -> list | None:
        cv = compiled.values.get(v)
        return cv.shape if cv is not None and cv.shape is not None else None

    def put(v: str, shape: list, dtype: str) -> None:
        nonlocal filled
        old = compiled.values.get(v)
        compiled.values[v] = Value(name=v, shape=list(shape), dtype=dtype if not old or old.dtype == "unknown" else old.dtype,
                                   weight=old.weight if old else None, quant=old.quant if old else None)
        filled += 1

    def from_source(renamed: bool) -> None:
        for n in compiled.nodes:
            for v in n.inputs + n.outputs:
                if not v or known(v) is not None:
                    continue
                if not renamed:
                    sv = source.values.get(v)
                elif v in prod and by_id[prod[v]].op_type in HELPER_OPS:
                    continue  # a helper's output has its own layout
                else:
                    sv = source.values.get(corr.get(v, ""))
                if sv is not None and sv.shape is not None and sv.weight is None:
                    put(v, sv.shape, sv.dtype)

    from_source(renamed=False)
    for n in compiled.nodes:  # Reshape -> Gemm -> Reshape around a 3-D MatMul + Add
        if n.op_type != "Gemm":
            continue
        a, out = n.inputs[0], n.outputs[0]
        if known(a) is None and a in prod and by_id[prod[a]].op_type == "Reshape" and known(by_id[prod[a]].inputs[0]):
            put(a, _flatten2d(known(by_id[prod[a]].inputs[0])), compiled.values[by_id[prod[a]].inputs[0]].dtype)
        nxt = [c for c in consumers.get(out, []) if c.op_type == "Reshape"]
        if known(out) is None and nxt and known(nxt[0].outputs[0]):
            put(out, _flatten2d(known(nxt[0].outputs[0])), compiled.values[nxt[0].outputs[0]].dtype)
    from_source(renamed=True)
    return filled


def _flatten2d(shape: list) -> list:
    lead = shape[:-1]
    if all(isinstance(d, int) for d in lead):
        first: int | str = 1
        for d in lead:
            first *= d  # type: ignore[operator]
    else:
        first = "*".join(str(d) for d in lead)
    return [first, shape[-1]]


def _signature(n: Node) -> tuple:
    return (n.domain, n.op_type, tuple(n.inputs), repr(sorted(n.attributes.items())))


def _constant_values(source: Graph) -> set[str]:
    """Values a runtime can compute once at load: weights, Constant results, anything computed
    only from those, and Shape/Size of statically shaped tensors."""
    const = {k for k, v in source.values.items() if v.weight is not None}
    outer = _body_reads(source)
    for n in source.nodes:
        # An If / Loop / Scan reads what its bodies read from outside them too: an If whose condition alone is
        # constant (a TorchScript `squeeze(2)` at a dynamic height, `If(H == 1)`, at a concrete H) still runs on the
        # activation its branch reads. Taken as constant, every task after it lost its source nodes (a CRNN's LSTMs
        # and classifier "constant-folded"), and its int8-dynamic file was sized +119%.
        live = [u for u in n.inputs if u] + sorted(outer.get(n.id, ()))
        if n.op_type in ("Shape", "Size") and live and source.values.get(live[0]) is not None \
                and source.values[live[0]].is_static:
            const.update(n.outputs)
        elif live and all(u in const for u in live):
            const.update(n.outputs)
        elif not live and n.op_type == "Constant":
            const.update(n.outputs)
    return const


def _body_reads(source: Graph) -> dict[str, set[str]]:
    """Per If / Loop / Scan node, the values its bodies (at any depth) read that no node inside them makes."""
    kids: dict[str, list[Node]] = {}
    for n in source.nodes:
        if n.parent:
            kids.setdefault(n.parent, []).append(n)
    reads: dict[str, set[str]] = {}
    for parent in kids:
        made, read, stack = set(), set(), [parent]
        while stack:
            for k in kids.get(stack.pop(), []):
                made.update(k.outputs)
                read.update(u for u in k.inputs if u)
                stack.append(k.id)
        reads[parent] = read - made
    return reads


def _hint(name: str, suffixes: Sequence[str], s_names: dict[str, str], s_prod: dict[str, str],
          prefixes: Sequence[str] = ()) -> str | None:
    """Source node id named by a compiled node's name, or None."""
    if not name:
        return None
    candidates = [name] + [name[: -len(s)] for s in suffixes if s and name.endswith(s)]
    for rest in [name[len(p):] for p in prefixes if p and name.startswith(p)]:
        candidates += [rest] + [rest[: -len(s)] for s in suffixes if s and rest.endswith(s)]
    parts = name.rstrip("/").split("/")
    candidates += ["/".join(parts[:k]) for k in range(len(parts) - 1, 1, -1)]
    for cand in candidates:
        if cand in s_names:
            return s_names[cand]
        if cand in s_prod:
            return s_prod[cand]
    return None


def _primary(principal: Node, group: list[str], hint: str | None, s_nodes: dict[str, Node]) -> list[str]:
    """The source nodes a helper is credited with: those of the principal's own kind (the Conv of
    an NCHWc Conv), else its named head, else its whole group."""
    same = [s for s in group if s_nodes[s].op_type == principal.op_type]
    if same:
        return same
    return [hint] if hint else list(group)


def _common_namespace(namespaces: list[str]) -> str:
    if not namespaces:
        return ""
    split = [ns.split("/") if ns else [] for ns in namespaces]
    common = []
    for parts in zip(*split):
        if len(set(parts)) != 1:
            break
        common.append(parts[0])
    return "/".join(common)
