"""The precomputed option table: every task x every combo (per-op table) and every preset (bulk).

Vectorised: tasks are grouped by signature (op type, kind, weights, fused activation); the backend
path of each combo is planned once per signature, turned into coefficient arrays, and broadcast
against the group's per-task work arrays. Output shapes are those of docs/option-table.md.
"""

from __future__ import annotations

import dataclasses

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from compiler.graph import Graph
from compiler.profile import Profile
from compiler.vocabulary.formats import BITS
from compiler.vocabulary.options import BULK_PRESETS, Combo, all_combos, parse_preset
from simulator.backends import EPILOGUE_PASS_BACKENDS, plan, task_facts
from simulator.control_flow import (BODY_EXPORT_NOTE, TFLITE_CONTROL_KEY, control_dispatches, executions,
                                    body_casts_ms, fp16_body_casts, scale_by_executions, written_in_body)
from simulator.costs import FOLDED, Work, takes_kernel_option, work_of
from simulator.exportable import left_float_ops, mark_onnx, mark_tflite, written_combo
from simulator.folding import fold_constants
from simulator.file_bytes import (
    Stored,
    export_events,
    export_records_for,
    fp16_stored,
    made_at_run_time_bytes,
    size_overhead_bytes,
    stored,
    stored_aux_bytes,
    weight_bytes,
)
from simulator.onnx_file import ExportRecords
from simulator.conversions import conversion_constants, conversion_ms
from simulator.peak_memory import memory_constants
from simulator.shapes import fill_shapes
from simulator.sweep_edges import activation_edges, io_elements
from simulator.ort_fp16 import fp16_shared_casts, fp16_unfused_norms
from simulator.measured import (baseline_speed, fast_scale, measured_ms, option_factor, own_whole_ms, total_scale,
                                typical_factor, unexplained_ms)
from simulator.profiles import HardwareProfile, load_profile
from simulator.qdq import QDQ_FUSED, float_view, qdq_preset, qdq_view
from simulator.labels import label_text
from simulator.published import heldout
from simulator.crossings import crossing_bytes, crossing_constants, crossing_ms
from simulator.roofline import (
    Counts,
    Path,
    Rates,
    Residency,
    dram_bytes,
    io_bytes,
    rates,
    residency,
    stack,
    task_cost,
)
from compiler.vocabulary.targets import Target, get_target
from simulator.table_schema import SCHEMA
from simulator.totals import totals

METRICS = ("latency_ms", "weight_bytes", "activation_bytes", "dram_bytes")


@dataclass(frozen=True, slots=True)
class _Coeffs:
    """One signature's paths as arrays over its combos: the figures the cost formulas read (`rates`), and what the
    tables and the file size need besides."""

    combos: list[Combo]
    names: list[str]
    supported: np.ndarray  # bool [C]
    resolved: list[str]
    notes: list[str]
    unit: np.ndarray  # int [C]
    rates: Rates  # arrays [C] (simulator.roofline)
    aux_file_b: np.ndarray  # file bytes per aux element (as the exporter stores the asked combo)
    export_events: np.ndarray  # [C, len(onnx_file.EVENTS)]: exporter steps each asked combo triggers
    kernel: list[str]
    sparsity: np.ndarray


@lru_cache(maxsize=8192)
def _paths(target: Target, hw: HardwareProfile, op_type: str, kind: str, has_kernel: bool, fused: bool,
           combos: tuple[Combo, ...], shared_cast: bool, plain_norm: bool, facts: frozenset[str]) -> tuple[Path, ...]:
    return tuple(plan(target, hw, op_type, kind, c, has_kernel, fused, shared_cast, plain_norm, facts)
                 for c in combos)


@lru_cache(maxsize=4096)
def _coeffs(target: Target, hw: HardwareProfile, op_type: str, kind: str, has_kernel: bool, fused: bool,
            combos: tuple[Combo, ...], shared_cast: bool = False, plain_norm: bool = False,
            facts: frozenset[str] = frozenset()) -> _Coeffs:
    # Paths depend on the profile's structure only: a profile with fitted figures shares its base's.
    paths = _paths(target, hw.plan_base or hw, op_type, kind, has_kernel, fused, combos, shared_cast, plain_norm,
                   facts)
    epilogue_pass = target.backend in EPILOGUE_PASS_BACKENDS
    return _Coeffs(
        combos=list(combos), names=[c.name for c in combos],
        supported=np.array([p.supported for p in paths]), resolved=[p.resolved.name for p in paths],
        notes=[p.note for p in paths], unit=np.array([p.unit for p in paths], dtype=np.int64),
        rates=stack([rates(hw, p, kind, epilogue_pass, op_type) for p in paths]),
        aux_file_b=np.array([stored_aux_bytes(target, p, c, has_kernel, op_type) for p, c in zip(paths, combos)]),
        export_events=np.array([export_events(target, c) for c in combos], dtype=np.float64),
        kernel=[p.resolved.kernel for p in paths],
        sparsity=np.array([p.resolved.sparsity for p in paths], dtype=np.float64),
    )


@dataclass
class _Group:
    rows: np.ndarray  # op indices
    co: _Coeffs
    metrics: dict[str, np.ndarray] = field(default_factory=dict)  # [n, C]
    pick: np.ndarray | None = None  # per preset, the combo column its bulk cells take


class PerOpTable(Sequence[dict[str, Any]]):
    """The per-op tables (one dict per op, docs/option-table.md), built on access: 10k ops x 405 combos
    as Python lists would dominate the sweep's time, and the server reads one op at a time."""

    def __init__(self, ops: list[str], where: list[tuple[_Group, int]], notes: list[list[str]],
                 exportable: list[np.ndarray] | None = None):
        self._ops, self._where, self._notes, self._exportable = ops, where, notes, exportable

    def __len__(self) -> int:
        return len(self._ops)

    def __getitem__(self, i: int) -> dict[str, Any]:  # type: ignore[override]
        g, r = self._where[i]
        co = g.co
        d: dict[str, Any] = {"op": self._ops[i], "combos": co.names, "supported": co.supported.tolist(),
                             "resolved": co.resolved, "unit": co.unit.tolist()}
        for m in METRICS:
            d[m] = g.metrics[m][r].tolist()
        d["notes"] = self._notes[i] + [f"{n}: {t}" for n, t in zip(co.names, co.notes) if t]
        if self._exportable is not None:
            d["exportable"] = self._exportable[i].tolist()
        return d

    def index_of(self, op_id: str) -> int:
        return self._ops.index(op_id)

    def classes(self) -> tuple[list[dict[str, Any]], list[int]]:
        """What every op of a signature group shares in its table (combos, supported, resolved, unit, the combos'
        notes), once per group, and each op's group: a store keeps those once, not in every op's record."""
        ids: dict[int, int] = {}
        shared: list[dict[str, Any]] = []
        of: list[int] = []
        for g, _ in self._where:
            k = ids.get(id(g))
            if k is None:
                k = ids[id(g)] = len(shared)
                co = g.co
                shared.append({"combos": co.names, "supported": co.supported.tolist(), "resolved": co.resolved,
                               "unit": co.unit.tolist(),
                               "notes": [f"{n}: {t}" for n, t in zip(co.names, co.notes) if t]})
            of.append(k)
        return shared, of

    def cells(self, i: int) -> tuple[list[np.ndarray], list[str], np.ndarray | None]:
        """Op i's own part of its table: a row per metric (METRICS order), its notes, its exportable mask."""
        g, r = self._where[i]
        return ([g.metrics[m][r] for m in METRICS], self._notes[i],
                None if self._exportable is None else self._exportable[i])


@dataclass
class SweepResult:
    bulk: dict[str, Any]
    per_op: PerOpTable
    works: list[Work]
    executions: list[float] = field(default_factory=list)  # runs per inference of each task (bodies: trips)


def sweep(compiled: Graph, target: str | Target, profile: Profile | None = None, *,
          hardware: HardwareProfile | None = None,
          source: Graph | None = None, observed: Mapping[str, float] | None = None,
          input_values: Mapping[str, float] | None = None,
          presets_only: Sequence[str] | None = None) -> SweepResult:
    """Predict every op x every option on `target`.

    `profile`: a measured Profile of the same compiled graph on this target (its task medians become
    the fp32 baseline). `hardware`: the device's figures (for the host, calibrated: calibrated.hardware_for);
    else the target's YAML profile as it is. `source`: the source graph, whose shapes fill activation shapes
    the compiled graph lacks (ORT NCHWc / contrib ops).
    `observed`: executions per run of body source nodes seen on the host run, `input_values`: values the user
    gave graph inputs (both for control flow: simulator.control_flow). `presets_only`: a bulk table of these
    presets (and fp32) only, whose per-op table holds only their combos (the device fit's many quick runs)."""
    t = target if isinstance(target, Target) else get_target(target)
    hw = hardware or load_profile(t.profile, t.backend)
    compiled, works, folded, records = _graph_facts(compiled, source, t, presets_only is not None)
    n = len(compiled.nodes)
    execs, cf_notes = executions(compiled, works, profile, observed, t.name, input_values)
    names = BULK_PRESETS if presets_only is None else tuple(dict.fromkeys(("fp32", *presets_only)))
    presets = [parse_preset(p) for p in names]
    conv = conversion_constants(hw)
    measured = measured_ms(compiled, t, profile, hw.units[0].profiler_overhead_s, hw.units[0].run_overhead_s)
    cols = _Columns.empty(n, len(presets))
    base = native_preset(t, source or compiled, names)
    where = _groups(t, hw, compiled, source, works, stored(t, compiled, source, works, folded, records), presets,
                    presets_only is not None, measured, execs, conv, cols, _measured_state(t, compiled, base),
                    baseline_speed(profile, hw.speed_gflops), typical_factor(hw) if profile is None else None)
    # Time per inference that is no task's: the runtime's fixed cost (InferenceSession.run, Core ML predict) and the
    # part of a measured whole model its measured tasks do not explain (time between kernels, other load). The
    # totals rule adds it once (`constants.per_inference_ms`); every op keeps its own time.
    _size_as_uploaded(t, source, base, names, cols, where, size_overhead_bytes(t, compiled, folded, records))
    run_ms = hw.units[0].run_overhead_s * 1e3
    gap_ms = unexplained_ms(profile, measured, cols.metrics["latency_ms"], presets, run_ms)
    src, dst, elements = activation_edges(compiled, folded, execs, bodies_on_cpu=t.backend == "coreml")
    cross_c = crossing_constants(hw)
    _charge_crossings(cols, cross_c, src, dst, elements, execs)
    # A measured whole-model time without per-task timings (LiteRT): every latency of this target is
    # scaled by measured / predicted fp32 total, so the fp32 ops sum to the measurement and options keep
    # their predicted ratios to it.
    scale = total_scale(t, profile, measured, cols.metrics["latency_ms"], presets, run_ms + gap_ms, base)
    if scale is not None:
        conv, cross_c = _scaled(scale, cols, where, conv, cross_c)
    unit_names = [u.name for u in hw.units]
    bulk: dict[str, Any] = {
        "schema": SCHEMA, "target": t.name,
        "label": _label(t, hw, profile, measured, scale, compiled.metadata.get("fallback")),
        "ops": [nd.id for nd in compiled.nodes], "presets": [_preset_json(p, t) for p in presets],
        "metrics": {m: cols.metrics[m].tolist() for m in METRICS},
        "supported": cols.supported.tolist(), "combos": cols.combo.tolist(),
        # The unit that runs each op under each preset (by name; `unit_names` lists the target's units in
        # placement order, the last being the CPU / CPU-EP fallback) so the UI can colour fallbacks.
        "unit_names": unit_names, "units": [[unit_names[u] for u in row] for row in cols.unit.tolist()],
        "edges": {"src": src.tolist(), "dst": dst.tolist(), "elements": elements.tolist()},
        "conversion": conv, "crossing": cross_c,
        "constants": {"dram_pj_per_byte": hw.dram_energy_pj_per_byte,
                      "size_overhead_bytes": size_overhead_bytes(t, compiled, folded, records),
                      **memory_constants(t.name, compiled),  # what the runtime holds beside them (peak memory)
                      # the totals rule's per-inference term, scaled with the table's latencies
                      "per_inference_ms": (run_ms + gap_ms) * (scale or 1.0) if n else 0.0},
    }
    # Units with a fixed cost per run of a float graph on them: the totals rule pays it in a state where one of their
    # ops runs float (simulator.totals.float_graph_terms); absent where no unit has one (the tables stay as they were).
    fg = {u.name: u.float_graph_run_s * 1e3 * (scale or 1.0) for u in hw.units if u.float_graph_run_s > 0}
    if fg and n:
        bulk["constants"]["float_graph_ms"] = fg
    # Constants the upload makes at run time (ONNX zoo "light" files): not in its size, in its peak memory.
    if (made := made_at_run_time_bytes(records)) > 0:
        bulk["constants"]["made_at_run_time_bytes"] = made
    exportable = None
    if t.export == "onnx":
        exportable = mark_onnx(compiled, source, works, presets, bulk)
    elif t.export == "tflite":
        exportable = mark_tflite(works, presets, bulk, compiled, source)
    per_op = PerOpTable(bulk["ops"], where, _op_notes(t, compiled, works, cf_notes), exportable)
    bulk["base"] = {"preset": base, **totals(bulk, per_op, base, {})}
    return SweepResult(bulk=bulk, per_op=per_op, works=works, executions=execs.tolist())


def _size_as_uploaded(t: Target, source: Graph | None, base: str, names: Sequence[str], cols: _Columns,
                      where: list[tuple[_Group, int]], overhead: float) -> None:
    """A QDQ upload's int8-static file is the upload itself (compiler.optimize.onnx_export): its cells are sized to
    the file's bytes, the difference shared by each task's bytes (the records of its Constant-node scales, Casts and
    zero points made at run time, which the QDQ sizing of simulator.file_bytes does not count one by one: torchvision's
    quantized MobileNetV2, TorchScript-exported, was sized 2.2% under its 3.71 MB on ort-cpu/host)."""
    if source is None or t.export != "onnx" or base != "int8-static" or base not in names \
            or qdq_preset(source, t) != base or "file_size_bytes" not in source.metadata:
        return
    i = list(names).index(base)
    wb = cols.metrics["weight_bytes"]
    total = float(wb[:, i].sum())
    gap = float(source.metadata["file_size_bytes"]) - total - overhead
    if total <= 0 or gap == 0:
        return
    share = gap * wb[:, i] / total
    for g in {id(g): g for g, _ in where}.values():
        j = g.pick[i]
        g.metrics["weight_bytes"][:, j] += share[g.rows]
        wb[g.rows] += np.where(g.pick[None, :] == j, share[g.rows][:, None], 0.0)


def _op_notes(t: Target, compiled: Graph, works: list[Work], cf_notes: list[str]) -> list[list[str]]:
    """Each task's own notes: its work's, its executions' (control_flow) and, in an exported body, how it is written."""
    body = written_in_body(t, compiled)
    return [list(w.notes) + ([cf] if cf else []) + ([BODY_EXPORT_NOTE] if b else [])
            for w, cf, b in zip(works, cf_notes, body)]


# (id(compiled), id(source), target) -> (compiled, source, graph-only facts); used by presets_only sweeps only.
_FACTS: dict[tuple[int, int, str], tuple[Any, Any, tuple[Any, ...]]] = {}


def _graph_facts(compiled: Graph, source: Graph | None, t: Target, keep: bool
                 ) -> tuple[Graph, list[Work], frozenset[str], ExportRecords | None]:
    """(the compiled graph with its shapes filled, each task's work, the constant-folded tasks, the ONNX
    exporter's records): what the sweep needs of the graphs alone. `keep`: remember them for the next sweep of
    the same graphs (the device fit sweeps the same graphs with many profiles)."""
    given = (compiled, source)
    facts = _FACTS.get((id(compiled), id(source), t.name)) if keep else None
    if facts is not None and facts[0] is given[0] and facts[1] is given[1]:
        return facts[2]
    if compiled.format == "tflite":
        # TFLite's own layouts, and its weights behind DEQUANTIZE / DENSIFY (simulator/tflite_ops.py).
        from simulator.tflite_ops import tflite_works
        works, folded, _ = tflite_works(compiled)
    else:
        if compiled.format != "onnx":
            # Core ML / aten ops in ONNX vocabulary and layouts (same ids), so the cost model
            # recognises convs and matmuls and reads their kernels.
            from compiler.frontends.onnx_view import onnx_view
            compiled = onnx_view(compiled)
        compiled = fill_shapes(compiled, source)
        # An uploaded QDQ file on a device target: its float graph, the Q/DQ pairs inside node units (simulator/qdq.py)
        compiled, fused = qdq_view(compiled, t)
        view, folded = fold_constants(compiled, static_shapes=True)
        folded = folded | fused
        works = [QDQ_FUSED if nd.id in fused else FOLDED if nd.id in folded else work_of(nd, view)
                 for nd in compiled.nodes]
    out = (compiled, works, folded, export_records_for(t, compiled, source, works))
    if keep:
        if len(_FACTS) > 256:
            _FACTS.clear()
        _FACTS[(id(given[0]), id(given[1]), t.name)] = (*given, out)
    return out


@dataclass
class _Columns:
    """The bulk table under construction: per metric [n, presets], and what runs each cell."""

    metrics: dict[str, np.ndarray]
    supported: np.ndarray
    combo: np.ndarray
    unit: np.ndarray
    out: np.ndarray  # the output activation format

    @staticmethod
    def empty(n: int, p: int) -> _Columns:
        return _Columns({m: np.zeros((n, p)) for m in METRICS}, np.zeros((n, p), dtype=bool),
                        np.empty((n, p), dtype=object), np.zeros((n, p), dtype=np.int64), np.empty((n, p), dtype=object))

    def fill(self, g: _Group, pick: np.ndarray) -> None:
        """Each preset's cells of the group's tasks: combo column `pick[preset]` of its per-op table."""
        rows = g.rows
        for m in METRICS:
            self.metrics[m][rows] = g.metrics[m][:, pick]
        self.supported[rows] = g.co.supported[pick]
        names = np.array(g.co.resolved, dtype=object)[pick]
        self.combo[rows] = names
        self.unit[rows] = g.co.unit[pick]
        self.out[rows] = np.array([s.split("/")[1] for s in names], dtype=object)


def _measured_state(t: Target, compiled: Graph, base: str) -> str:
    """The preset whose combos a measured profile's task times are: the file as ORT runs it, so fp16 for an ONNX
    file stored fp16 on ORT's CPU EP (they went to fp32, the exporter's restored file, and fp16 was predicted)."""
    return "fp16" if base == "fp16" and t.backend == "ort-cpu" and compiled.format == "onnx" else "fp32"


def _groups(t: Target, hw: HardwareProfile, compiled: Graph, source: Graph | None, works: list[Work], st: Stored,
            presets: list[Any], presets_only: bool, measured: np.ndarray, execs: np.ndarray, conv: dict[str, Any],
            cols: _Columns, own: str = "fp32", speed: float | None = None, typical: float | None = None
            ) -> list[tuple[_Group, int]]:
    """Cost every task under every combo, signature by signature, and fill the bulk columns; (group, row) per task.
    `own`: the preset whose combos the measured times are (fp32, or fp16 for an fp16 ONNX upload); `speed`: the
    CPU's speed then against calibration's (measured.speed_factor); `typical`: without a profile, the CPU's typical
    speed against calibration's (measured.typical_factor), which every task's time is scaled by."""
    io_in, io_out = io_elements(compiled)
    casts = fp16_body_casts(t, compiled)
    control, control_s = control_dispatches(compiled, execs, hw.units[0].kind_overhead_s.get(TFLITE_CONTROL_KEY))
    # Weights stay on chip between inferences only if all of them fit (else each run streams them).
    total_w = float((st.kernel + st.aux).sum()) * 4 + sum(w.other_const_bytes for w in works)
    u0 = hw.units[0]
    res = residency(works, total_w, u0)
    where: list[tuple[_Group, int]] = [None] * len(works)  # type: ignore[list-item]
    i32 = [p.name for p in presets].index(own if own in [p.name for p in presets] else "fp32")
    pure32 = np.zeros(len(works))  # each task's fp32 time as predicted (per call), for option_factor
    built: list[tuple[_Group, np.ndarray]] = []
    for (op_type, kind, has_k, fused, shared, plain, facts, (body, left)), rows in _signatures(t, compiled, source,
                                                                                               works).items():
        asked = [p.resolve(t.float_format, has_k) for p in presets]
        # Each preset's bulk cells: the combo the exporter writes the task in (a body's, or an op the preset's tool
        # leaves, stays float: exportable.written_combo)
        state = [written_combo(p, t.float_format, has_k, body, left) for p in presets]
        combos = tuple(dict.fromkeys(asked + state)) if presets_only else tuple(all_combos(has_k))
        co = _coeffs(t, hw, op_type, kind, has_k, fused, combos, shared, plain, facts)
        if own == "fp16":  # the measured times are those of each task's fp16 combo, the others predicted (a copy:
            # _coeffs is cached)
            co = dataclasses.replace(co, rates=dataclasses.replace(co.rates, fp32_equiv=np.array(
                [c.input == c.output == "fp16" and c.kernel in ("fp16", "-") and not c.sparsity for c in combos])))
        idx = {c: j for j, c in enumerate(combos)}
        pick = np.array([idx[c] for c in state])
        g = _Group(np.array(rows), co, pick=pick)
        g.metrics, pure32[rows] = _metrics(t, kind, [works[i] for i in rows], co, conv, io_in[rows], io_out[rows],
                                           measured[rows], res, st.at(rows), int(pick[i32]))
        scale_by_executions(g.metrics, execs[rows])
        g.metrics["latency_ms"] += body_casts_ms(casts, rows, combos, has_k, hw, execs)
        # An If / Loop / Scan's own set-up and trips, where its time is predicted (not measured here).
        predicted = ~((measured[rows] > 0)[:, None] & co.rates.fp32_equiv[None, :])
        g.metrics["latency_ms"] += (control[rows][:, None] * co.rates.dispatch_s[None, :]
                                    + control_s[rows][:, None]) * 1e3 * predicted
        for r, i in enumerate(rows):
            where[i] = (g, r)
        built.append((g, pick))
    # ORT's measured tasks: the other kernels of each such task run at the CPU speed they were measured at
    # (simulator.measured.option_factor). LiteRT's operator times are XNNPACK's own and stay as they are.
    f = option_factor(measured, pure32, execs, speed) if t.backend == "ort-cpu" and measured.any() else 1.0
    for g, pick in built:
        if f != 1.0:
            m = (measured[g.rows] > 0)[:, None] & ~g.co.rates.fp32_equiv[None, :]
            g.metrics["latency_ms"] = np.where(m, g.metrics["latency_ms"] * f, g.metrics["latency_ms"])
        if typical:
            g.metrics["latency_ms"] = g.metrics["latency_ms"] * typical
        # Bulk columns: each preset picks one combo column of the group (plus fallback via the path).
        cols.fill(g, pick)
    return where


# op type, kind, has a kernel, fused activation, two fp16 facts, task facts, (in a body, ops a tool may leave float)
_Signature = tuple[str, str, bool, bool, bool, bool, frozenset[str], tuple[bool, tuple[str, ...]]]


def _signatures(t: Target, compiled: Graph, source: Graph | None, works: list[Work]
                ) -> dict[_Signature, list[int]]:
    """Tasks by what their paths depend on: op type, kind, weights, fused activation, two fp16 facts of ORT's
    (a Conv behind a run-time Cast of a shared constant, ort_fp16.fp16_shared_casts; a SkipLayerNormalization not
    formed in the fp16 graph, ort_fp16.fp16_unfused_norms) and a device runtime's own (backends.task_facts); and
    whether the exporter writes the task as the presets ask (a body of an ONNX export stays float: control_flow; so
    does an op a preset's tool leaves: exportable.left_float_ops)."""
    # a QDQ upload's ops read as in its float graph, the one ort-cpu/host compiles, weights dequantized (an input
    # pair and a weight DequantizeLinear hid the stem conv of torchvision's quantized MobileNetV2)
    if source is not None and source.format == "onnx" and any(nd.op_type == "DequantizeLinear" for nd in source.nodes):
        source = fold_constants(float_view(source)[0], static_shapes=True)[0]
    shared_cast = fp16_shared_casts(t, compiled, source)
    plain_norm = fp16_unfused_norms(t, compiled)
    facts = task_facts(t, compiled, source)
    body, left = written_in_body(t, compiled), left_float_ops(t, compiled, source, works)
    sig_rows: dict[_Signature, list[int]] = {}
    for i, (nd, w) in enumerate(zip(compiled.nodes, works)):
        has_k = takes_kernel_option(w)
        sig = (nd.op_type, w.kind, has_k, w.fused_activation, shared_cast[i], plain_norm[i], facts[i],
               (bool(body[i]), left[i]))
        sig_rows.setdefault(sig, []).append(i)
    return sig_rows


def _charge_crossings(cols: _Columns, cross_c: dict[str, float] | None, src: np.ndarray, dst: np.ndarray,
                      elements: np.ndarray, execs: np.ndarray) -> None:
    """Partition crossings, charged to the consumer in the bulk columns. Per-op rows carry none (they depend on
    the neighbours' choices): the totals rule charges them from `crossing` and the units of the state."""
    if cross_c is None or not len(src):
        return
    cross = cols.unit[src] != cols.unit[dst]  # [E, P]
    act_b = np.vectorize(lambda f: BITS[f] / 8)(cols.out[src]).astype(np.float64)
    moved = crossing_bytes(elements[:, None], act_b)
    # Elements already count every execution of a body consumer; so does the sync (`execs[dst]`).
    cost_ms = crossing_ms(cross_c, moved, execs[dst][:, None])
    np.add.at(cols.metrics["latency_ms"], dst, np.where(cross, cost_ms, 0.0))
    np.add.at(cols.metrics["dram_bytes"], dst, np.where(cross, moved, 0.0))


def _scaled(scale: float, cols: _Columns, where: list[tuple[_Group, int]], conv: dict[str, Any],
            cross_c: dict[str, float] | None) -> tuple[dict[str, Any], dict[str, float] | None]:
    """Scale every latency (bulk and per-op) by `scale`, and the conversion and crossing figures with them."""
    cols.metrics["latency_ms"] *= scale
    for g in {id(g): g for g, _ in where}.values():
        g.metrics["latency_ms"] = g.metrics["latency_ms"] * scale
    conv = {"fixed_ms": conv["fixed_ms"] * scale,
            "ms_per_element": {k: v * scale for k, v in conv["ms_per_element"].items()}}
    if cross_c is not None:
        cross_c = {"fixed_s": cross_c["fixed_s"] * scale, "bytes_per_s": cross_c["bytes_per_s"] / scale}
    return conv, cross_c


def _label(t: Target, hw: HardwareProfile, profile: Profile | None, measured: np.ndarray, scale: float | None,
           fallback: str | None = None) -> dict[str, Any]:
    """What the figures are: predicted from which profile, their baseline, the error to expect, and why they are of
    the upload's own graph where the target's converter could not convert it (`fallback`)."""
    # The held-out error is that of the target it was measured on (benchmarks/fidelity.py: ort-cpu/host).
    err_applies = hw.error_target is None or hw.error_target == t.name
    # A device's error: the held-out figures of the last fit to published measurements (benchmarks/device_fit.py
    # writes simulator/published/heldout.json); None where the device has no public data.
    held = None if t.measurable else heldout(t.name)
    label = {
        "kind": "predicted", "profile": hw.name, "calibrated": hw.calibrated or held is not None,
        "error_pct_median": held.get("median_pct") if held else hw.error_pct_median if err_applies else None,
        "error_models": held.get("n_models", 0) if held else hw.error_models if err_applies else 0,
        "heldout": held,
        "baseline": ("measured" if measured.any() else
                     "predicted, scaled to measured total" if scale is not None else "predicted"),
        "measured_runtime": profile.runtime if profile is not None and (measured.any() or scale is not None)
        else None,
    }
    if scale is not None:
        label["scale"] = scale
    if fallback:
        label["fallback"] = fallback
    if profile is None and (f := typical_factor(hw)) is not None:  # every time scaled by it (_groups)
        label["typical_speed"] = {"gflops": hw.typical_gflops, "rates_gflops": hw.speed_gflops, "factor": f}
    if measured.any() and profile is not None and own_whole_ms(profile) != profile.latency_ms:
        label["baseline_cpu_time"] = True
    if measured.any() and (fast := fast_scale(profile)) is not None:  # the baseline in the fast state (CPU time)
        label["baseline_fast_cpu_ms"] = own_whole_ms(profile) * fast
    label["text"] = label_text(label)
    return label


def native_preset(t: Target, g: Graph, names: tuple[str, ...] | list[str]) -> str:
    """The preset nearest the uploaded file as it is (its unoptimized state), for a .tflite by how most of its weight
    bytes are stored: fp16 behind DEQUANTIZE (TFLite's float16 quantization: LiteRT's fp16 export keeps them so, its
    fp32 export restores them to fp32 and writes a file twice the size) -> fp16; int8 with int8 activations (a fully
    quantized model) -> int8-static; else fp32. An ONNX file: its QDQ preset, else fp16 where its weights are
    mostly fp16 (simulator.file_bytes.fp16_stored), else fp32."""
    if t.export == "coreml" and g.format == "coreml":
        return coreml_native(g, names)
    if t.export != "tflite":
        # An ONNX file stored fp16 (an fp16 graph, or fp16 weights behind Casts) is the fp16 export's file: the
        # exporter restores the weights to fp32 for every other option (compiler/optimize/onnx_fp16.py).
        fp16 = t.export == "onnx" and "fp16" in names and fp16_stored(g)
        return qdq_preset(g, t) or ("fp16" if fp16 else "fp32")
    from compiler.frontends.tflite import fully_int8

    by_dtype = {"float16": 0, "float32": 0, "int8": 0}
    for v in g.values.values():
        if v.weight is not None and v.dtype in by_dtype:
            by_dtype[v.dtype] += v.weight.bytes
    # A fully int8 file is written as stored under int8-static (compiler/optimize/litert_export.py); int8 weights
    # with float activations are ai-edge-quantizer's dynamic int8 (hybrid kernels, int8 lookup tables): priced as
    # fp32, its int8-dynamic export was sized at its float weights' bytes (an LM's 10.3 MB file at 27.3).
    most = max(by_dtype, key=by_dtype.__getitem__)
    native = "int8-static" if fully_int8(g) else {"float16": "fp16", "int8": "int8-dynamic"}.get(most, "fp32")
    return native if native in names else "fp32"


def coreml_native(g: Graph, names: tuple[str, ...] | list[str]) -> str:
    """A Core ML file's preset by how most of its weight bytes are stored: an ML Program converted at coremltools'
    default precision holds fp16 weights (fp16), one with `linear_quantize_weights` int8 ones (Core ML's weight-only
    int8 is `int8-dynamic`), a NeuralNetwork or an fp32 program fp32 ones. Priced as fp32, an fp16 package was
    sized at twice its file."""
    by_dtype = {"float16": 0, "float32": 0, "int8": 0}
    for v in g.values.values():
        if v.weight is not None:
            d = "int8" if v.dtype == "uint8" else v.dtype
            if d in by_dtype:
                by_dtype[d] += v.weight.bytes
    native = {"float16": "fp16", "int8": "int8-dynamic", "float32": "fp32"}[max(by_dtype, key=by_dtype.__getitem__)]
    return native if native in names else "fp32"


def _preset_json(p: Any, t: Target) -> dict[str, Any]:
    c = p.resolve(t.float_format, True)
    return {"name": p.name, "input": c.input, "output": c.output, "kernel": c.kernel, "sparsity": c.sparsity,
            "description": p.description}


def _metrics(t: Target, kind: str, works: list[Work], co: _Coeffs, conv: dict[str, Any], io_in: np.ndarray,
             io_out: np.ndarray, measured: np.ndarray, res: Residency,
             st: Stored, fp32_col: int) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Every metric [n, C] of a group of tasks of one signature (`st`: what they store), and the predicted time
    of combo column `fp32_col` (fp32) before any measurement replaces it."""
    w = Counts.of(works)
    r = co.rates
    cost = task_cost(w, r, res)
    gone = r.eliminated | (kind == "folded")
    lat_ms = np.where(gone, 0.0, cost.latency_s * 1e3)
    pure = lat_ms[:, fp32_col].copy()
    if measured.any():
        # Measured fp32 task time replaces the prediction wherever the same kernel runs.
        m = measured[:, None]
        lat_ms = np.where((m > 0) & r.fp32_equiv, m, lat_ms)
    # Graph input / output conversions stay with the op (the model's I/O is fp32).
    pe = conv["ms_per_element"]
    # At the formats the path runs (a fallback's, e.g. Core ML's int8-static with fp16 activations), not the asked.
    ran = [c.split("/") for c in co.resolved]
    in_conv = np.array([pe.get(f"fp32>{f[0]}", 0.0) for f in ran])
    out_conv = np.array([pe.get(f"{f[1]}>fp32", 0.0) for f in ran])
    lat_ms = lat_ms + (io_in[:, None] > 0) * (in_conv > 0) * conversion_ms(conv["fixed_ms"], in_conv, io_in[:, None])
    lat_ms = lat_ms + (io_out[:, None] > 0) * (out_conv > 0) * conversion_ms(conv["fixed_ms"], out_conv,
                                                                             io_out[:, None])
    dram = dram_bytes(w, r, cost, res) + io_bytes(io_in, io_out)[:, None]
    return {"latency_ms": lat_ms,
            "weight_bytes": weight_bytes(t, kind, st, w.other_const_bytes, co.combos, co.kernel, co.sparsity,
                                         co.aux_file_b, co.export_events),
            "activation_bytes": np.where(gone, 0.0, cost.activation_bytes),
            "dram_bytes": np.where(gone, 0.0, dram)}, pure


# The device fit plans a graph's latency once and evaluates it per profile (simulator/published/latency.py), from
# the same graph facts, I/O elements and edges as a sweep.
def graph_facts(compiled: Graph, source: Graph | None, t: Target
                ) -> tuple[Graph, list[Work], frozenset[str], ExportRecords | None]:
    return _graph_facts(compiled, source, t, False)

