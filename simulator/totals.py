"""The totals rule of docs/option-table.md, in Python. web/src/totals.ts implements the same rule;
both sum in op order, then edge order, in float64, so they agree to the last digit. The formulas it adds up
(conversions, crossings, memory power) are simulator.roofline's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from compiler.vocabulary.formats import BITS, FLOAT_FORMATS
from compiler.vocabulary.options import OptionError, parse_combo
from simulator.conversions import conversion_bytes, conversion_ms
from simulator.crossings import crossing_bytes, crossing_ms, memory_power_mw
from simulator.table_schema import float_graph_ms, per_inference_ms


def _per_op_entry(per_op: Sequence[Mapping[str, Any]] | Mapping[str, Mapping[str, Any]], ops: list[str],
                  op: str) -> Mapping[str, Any]:
    if isinstance(per_op, Mapping):
        return per_op[op]
    return per_op[ops.index(op)]


def edge_terms(bulk: Mapping[str, Any], p: int, s: int, d: int, elements: float, out_s: str, in_d: str,
               unit_s: str, unit_d: str, over_s: bool, over_d: bool) -> tuple[float, float, float, float]:
    """One edge's terms in a state, (conversion ms, conversion bytes, crossing ms, crossing bytes): rules 1, 4 and
    6 for producer `s` -> consumer `d` under preset index `p`. Zeros where a rule does not apply. The budget
    solver (simulator/solver/) prices a candidate change with this same function."""
    conv_ms = conv_b = cross_ms = cross_b = 0.0
    if out_s != in_d:
        conv = bulk["conversion"]
        conv_ms = conversion_ms(conv["fixed_ms"], conv["ms_per_element"][f"{out_s}>{in_d}"], elements)
        conv_b = conversion_bytes(elements, out_s, in_d)
    crossing = bulk.get("crossing")
    if crossing and (over_s or over_d):
        # An un-overridden consumer's bulk row already pays the preset's crossing on this edge (`was`);
        # an override's row pays none. Charge the difference to the crossing of the current state (`now`).
        units = bulk["units"]
        now = unit_s != unit_d
        was = not over_d and units[s][p] != units[d][p]
        now_b = crossing_bytes(elements, BITS[out_s] / 8) if now else 0.0
        was_b = crossing_bytes(elements, BITS[bulk["combos"][s][p].split("/")[1]] / 8) if was else 0.0
        cross_ms = (crossing_ms(crossing, now_b) if now else 0.0) - (crossing_ms(crossing, was_b) if was else 0.0)
        cross_b = now_b - was_b
    return conv_ms, conv_b, cross_ms, cross_b


def runs_float(combo: str) -> bool:
    """An op that reads and writes float activations (the input and output formats of its combo): on a unit with a
    float-graph term, one such op makes the unit's graph a float one."""
    inp, out = combo.split("/")[:2]
    return inp in FLOAT_FORMATS and out in FLOAT_FORMATS


def float_graph_terms(bulk: Mapping[str, Any], combos: Sequence[str], units: Sequence[str],
                      latency: Sequence[float]) -> list[float]:
    """The totals rule's float-graph terms of a state, one per unit of `constants.float_graph_ms` in its order: the
    unit's ms if an op of the state runs on it (`units`, per op) with float activations in and out (`combos`) and
    takes time there (`latency`, its chosen row's: a constant folded at load, 0.0, runs nowhere), else 0.0. [] for
    a table without the constant. web/src/totals.ts floatGraphTerms is the same rule."""
    fg = float_graph_ms(bulk)
    if not fg:
        return []
    on = {u for c, u, t in zip(combos, units, latency) if u in fg and t > 0 and runs_float(c)}
    return [ms if u in on else 0.0 for u, ms in fg.items()]


FORMATS: tuple[str, ...] = tuple(BITS)  # EdgeRule's format codes: indices into this


class EdgeRule:
    """`edge_terms` over arrays of edges at once, for the budget solver: the same formulas on the same operands, so
    each edge's four terms are edge_terms' to the bit. Formats are indices into FORMATS, units indices into the
    bulk table's unit_names; `j` the edges' indices in the bulk table."""

    def __init__(self, bulk: Mapping[str, Any], p: int):
        e = bulk["edges"]
        self.src, self.dst = np.asarray(e["src"], dtype=np.int64), np.asarray(e["dst"], dtype=np.int64)
        self.el = np.asarray(e["elements"], dtype=np.float64)
        conv = bulk["conversion"]
        self.fixed_ms = conv["fixed_ms"]
        code = {f: j for j, f in enumerate(FORMATS)}
        self.ms_per_element = np.full((len(FORMATS), len(FORMATS)), np.nan)  # nan: no such conversion
        for key, v in conv["ms_per_element"].items():
            a, b = key.split(">")
            if a in code and b in code:
                self.ms_per_element[code[a], code[b]] = v
        self.bpe = np.array([BITS[f] / 8 for f in FORMATS])
        self.crossing = bulk.get("crossing")
        if self.crossing:
            units, combos, n = bulk["units"], bulk["combos"], len(bulk["ops"])
            unit_p = [units[i][p] for i in range(n)]
            out_bpe = np.array([BITS[combos[i][p].split("/")[1]] / 8 for i in range(n)])
            self.was = np.array([unit_p[s] != unit_p[d] for s, d in zip(e["src"], e["dst"])], dtype=bool)
            self.was_bpe = out_bpe[self.src] if n else np.zeros(0)

    def terms(self, j: np.ndarray, out_s: np.ndarray, in_d: np.ndarray, unit_s: np.ndarray, unit_d: np.ndarray,
              over_s: np.ndarray, over_d: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(conversion ms, conversion bytes, crossing ms, crossing bytes) of edges j, as edge_terms gives each."""
        el = self.el[j]
        conv = out_s != in_d
        conv_ms = np.where(conv, conversion_ms(self.fixed_ms, self.ms_per_element[out_s, in_d], el), 0.0)
        conv_b = np.where(conv, el * (self.bpe[out_s] + self.bpe[in_d]), 0.0)  # conversion_bytes
        if not self.crossing:
            return conv_ms, conv_b, np.zeros(len(el)), np.zeros(len(el))
        on = over_s | over_d
        now = on & (unit_s != unit_d)
        was = on & ~over_d & self.was[j]
        now_b = np.where(now, crossing_bytes(el, self.bpe[out_s]), 0.0)
        was_b = np.where(was, crossing_bytes(el, self.was_bpe[j]), 0.0)
        cross_ms = (np.where(now, crossing_ms(self.crossing, now_b), 0.0)
                    - np.where(was, crossing_ms(self.crossing, was_b), 0.0))
        return conv_ms, conv_b, cross_ms, now_b - was_b


@dataclass(frozen=True, slots=True)
class Evaluation:
    """A state's figures per op (its chosen row) and its totals: web/src/totals.ts `evaluate`'s, in Python."""

    totals: dict[str, float]
    combo: list[str]
    unit: list[str] | None  # None: a table without units per op
    overridden: np.ndarray  # bool [n]
    latency_ms: np.ndarray
    weight_bytes: np.ndarray
    activation_bytes: np.ndarray
    dram_bytes: np.ndarray
    conversion_in_ms: np.ndarray  # conversions on each op's incoming edges (in the totals, not in the op's row)


def totals(bulk: Mapping[str, Any], per_op: Sequence[Mapping[str, Any]] | Mapping[str, Mapping[str, Any]],
           model_wide: str, overrides: Mapping[str, str]) -> dict[str, float]:
    """Totals for a model-wide preset plus per-op combo overrides {task id: "in/out/kernel/sparsity"}."""
    return evaluate(bulk, per_op, model_wide, overrides, name_units=False).totals


def peak_bytes(size: float, wb: np.ndarray, act: np.ndarray, names: Sequence[str], bulk: Mapping[str, Any]) -> float:
    """Peak memory (rule 3 of docs/option-table.md): the file, the runtime's own copies of the weights (XNNPACK's
    packed buffers), constants the upload makes at run time, then the larger of the load's peak (the library pages
    read at load and the copy of the largest weights made while loading) and the run's (all the runtime's own
    memory, the share of the weights packed at load it keeps, MLAS's MatMul / Gemm B and QLinearConv's filter, int8
    ones at their own share, and the arena: `arena_factor` times an op's activations plus its int8 kernel's scratch,
    at the op where that is largest), and the weights the runtime decodes at load (ORT CPU runs fp16 and palettized
    kernels on the fp32 weights). Packing follows loading: the load's copy is gone by then."""
    const = bulk["constants"]
    res = resident_weight_bytes(bulk, wb, names)
    act = act.copy()
    for i, cap in const.get("activation_caps", ()):  # recurrent ops: their tensors, not every step's traffic
        act[int(i)] = min(act[int(i)], cap)
    work = act * float(const.get("arena_factor", 1.0)) + _scratch(const, names)
    packed_float, packed_int8 = _prepacked(const, res, names)
    load = (float(const.get("load_copies", 0.0)) * (float(res.max()) if len(res) else 0.0)
            + float(const.get("load_runtime_bytes", 0.0)))
    run = (float(const.get("runtime_bytes", 0.0)) + float(const.get("prepack_share", 0.0)) * packed_float
           + float(const.get("prepack_share_int8", const.get("prepack_share", 0.0))) * packed_int8
           + (float(work.max()) if len(work) else 0.0))
    return (size + float(wb.sum()) * float(const.get("weight_copies", 0.0))
            + float(const.get("made_at_run_time_bytes", 0.0)) + max(load, run) + _in_order(res - wb))


def _prepacked(const: Mapping[str, Any], res: np.ndarray, names: Sequence[str]) -> tuple[float, float]:
    """The weights the runtime packs into buffers of its own at load, as held (`res`), each sum in op order: (those
    of float kernels, those of int8 kernels). Packed: the ops of `prepacked_ops` whose combo's kernel format is one
    of `prepacked_kernels`, and those of `prepacked_int8_ops` whose combo runs an int8 kernel on int8 activations
    (QLinearConv)."""
    kernels = set(const.get("prepacked_kernels", ()))
    on = np.zeros(len(names), dtype=bool)
    for i in const.get("prepacked_ops", ()):
        on[i] = names[i].split("/")[2] in kernels
    for i in const.get("prepacked_int8_ops", ()):
        f = names[i].split("/")
        on[i] = on[i] or (f[0] == "int8" and f[2] == "int8")
    int8 = np.array([c.split("/")[2] == "int8" for c in names], dtype=bool)
    return (_in_order(res[on & ~int8]) if (on & ~int8).any() else 0.0,
            _in_order(res[on & int8]) if (on & int8).any() else 0.0)


def _scratch(const: Mapping[str, Any], names: Sequence[str]) -> np.ndarray:
    """Each op's int8 scratch (`int8_scratch` rows [op, static bytes, dynamic bytes]) in the state: the static bytes
    where its combo runs an int8 kernel on int8 activations, the dynamic ones where on float activations, else 0."""
    out = np.zeros(len(names))
    for i, st, dyn in const.get("int8_scratch", ()):
        f = names[int(i)].split("/")
        if f[2] == "int8":
            out[int(i)] = st if f[0] == "int8" else dyn
    return out


def resident_weight_bytes(bulk: Mapping[str, Any], wb: np.ndarray, names: Sequence[str]) -> np.ndarray:
    """Each op's weights as the runtime holds them: preset `decoded_at_load.preset`'s (fp32) bytes where its combo's
    kernel format is one of `decoded_at_load.kernels`, formats the runtime decodes at load, else the file's (`wb`)."""
    decoded = bulk["constants"].get("decoded_at_load")
    if not decoded:
        return wb
    kernels = set(decoded["kernels"])
    p0 = [p["name"] for p in bulk["presets"]].index(decoded["preset"])
    base = _column(bulk["metrics"]["weight_bytes"], p0)
    return np.where(np.array([c.split("/")[2] in kernels for c in names], dtype=bool), base, wb)


def evaluate(bulk: Mapping[str, Any], per_op: Sequence[Mapping[str, Any]] | Mapping[str, Mapping[str, Any]],
             model_wide: str, overrides: Mapping[str, str], name_units: bool = True) -> Evaluation:
    """A state's figures: each op's chosen row and the totals (`totals`); `name_units`: name each op's unit too."""
    preset_names = [p["name"] for p in bulk["presets"]]
    if model_wide not in preset_names:
        raise OptionError(f"model-wide option {model_wide!r} is not in this table; "
                          f"choose one of {', '.join(preset_names)}")
    p = preset_names.index(model_wide)
    ops: list[str] = bulk["ops"]
    op_index = {o: i for i, o in enumerate(ops)}
    for op in overrides:
        if op not in op_index:
            raise OptionError(f"override names op {op!r}, which is not a task of this model")
    m = bulk["metrics"]
    n = len(ops)
    lat, wb = _column(m["latency_ms"], p), _column(m["weight_bytes"], p)
    act, dram = _column(m["activation_bytes"], p), _column(m["dram_bytes"], p)
    names: list[str] = [row[p] for row in bulk["combos"]]
    over = np.zeros(n, dtype=bool)
    # Crossings need units: the preset's from the bulk table, an override's from its per-op row.
    crossing = bulk.get("crossing")  # None: one unit, or a table from before per-op units
    by_unit = bool(crossing) or bool(float_graph_ms(bulk))  # the rule reads each op's unit
    unit: list[str] = [row[p] for row in bulk["units"]] if by_unit else []
    for i in sorted(op_index[o] for o in overrides):  # in op order, as the first error is reported
        op = ops[i]
        combo = overrides[op]
        entry = _per_op_entry(per_op, ops, op)
        combos: list[str] = entry["combos"]
        if combo not in combos:
            has_kernel = combos[0].split("/")[2] != "-"
            parse_combo(combo, has_kernel)  # raises a specific message for malformed combos
            raise OptionError(f"combo {combo!r} is not offered for op {op!r}")
        j = combos.index(combo)
        lat[i], wb[i] = entry["latency_ms"][j], entry["weight_bytes"][j]
        act[i], dram[i] = entry["activation_bytes"][j], entry["dram_bytes"][j]
        names[i] = combo  # the rule takes formats from the chosen combo as written (as web/src/totals.ts)
        over[i] = True
        if by_unit:
            if "unit" not in entry:
                raise OptionError(f"per-op options of {op!r} carry no units; re-run the sweep")
            unit[i] = bulk["unit_names"][entry["unit"][j]]
    distinct: dict[str, int] = {}
    of = np.array([distinct.setdefault(x, len(distinct)) for x in names], dtype=np.int64)
    codes = {f: j for j, f in enumerate(FORMATS)}
    parts = [x.split("/") for x in distinct]
    fin = np.array([codes[x[0]] for x in parts], dtype=np.int64)[of] if n else np.zeros(0, dtype=np.int64)
    fout = np.array([codes[x[1]] for x in parts], dtype=np.int64)[of] if n else np.zeros(0, dtype=np.int64)
    u = {x: j for j, x in enumerate(bulk["unit_names"])} if crossing else {}
    units = np.array([u[x] for x in unit], dtype=np.int64) if crossing else np.zeros(n, dtype=np.int64)
    # The edges' terms at once (EdgeRule: edge_terms to the bit), summed one after the other in the order of
    # docs/option-table.md: per edge, conversion, then crossing (an edge without a term adds 0.0, no change).
    rule = EdgeRule(bulk, p)
    s, d = rule.src, rule.dst
    conv_ms, conv_b, cross_ms, cross_b = rule.terms(np.arange(len(s)), fout[s], fin[d], units[s], units[d],
                                                    over[s], over[d])
    if np.isnan(conv_ms).any():  # a conversion the table has no figure for, as edge_terms' lookup fails
        e = int(np.flatnonzero(np.isnan(conv_ms))[0])
        raise KeyError(f"{FORMATS[fout[s[e]]]}>{FORMATS[fin[d[e]]]}")
    const = bulk["constants"]
    # The time per inference no task explains (runtime's fixed cost, measured time outside the tasks) comes first,
    # then each unit's float-graph term as the state has it.
    fixed = np.array([per_inference_ms(bulk), *float_graph_terms(bulk, names, unit, lat)], dtype=np.float64)
    latency = _in_order(fixed, lat, np.column_stack((conv_ms, cross_ms)).ravel())
    conv_bytes = _in_order(np.column_stack((conv_b, cross_b)).ravel())
    size = _in_order(wb, np.array([const["size_overhead_bytes"]], dtype=np.float64))
    dram_total = _in_order(dram, np.array([conv_bytes]))
    peak = peak_bytes(size, wb, act, names, bulk)
    power = memory_power_mw(dram_total, const["dram_pj_per_byte"], latency)
    tot = {"latency_ms": latency, "peak_memory_bytes": peak, "memory_power_mw": power, "size_bytes": size,
           "fps": 1000.0 / latency if latency > 0 else 0.0}
    unit_now = None
    if name_units and "units" in bulk:
        unit_now = [row[p] for row in bulk["units"]]
        for op, combo in overrides.items():
            entry = _per_op_entry(per_op, ops, op)
            if "unit" in entry:
                unit_now[op_index[op]] = bulk["unit_names"][entry["unit"][entry["combos"].index(combo)]]
    return Evaluation(tot, names, unit_now, over, lat, wb, act, dram,
                      np.bincount(d, conv_ms, n) if n else np.zeros(0))


def _column(rows: Any, p: int) -> np.ndarray:
    """Column p of a bulk [op][preset] metric as float64 (the same values; an array-backed table without a loop)."""
    if hasattr(rows, "__array__"):
        return np.array(np.asarray(rows, dtype=np.float64)[:, p]) if len(rows) else np.zeros(0)
    return np.array([row[p] for row in rows], dtype=np.float64)


def _in_order(*parts: np.ndarray) -> float:
    """0.0 + x0 + x1 + ... one term after the other, as a Python loop adds them (cumsum is sequential; numpy's
    sum is pairwise and could differ in the last digit)."""
    v = np.concatenate(parts)
    return float(np.cumsum(v)[-1]) if len(v) else 0.0
