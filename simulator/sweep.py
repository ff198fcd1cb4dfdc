"""The precomputed option table: every task x every combo (per-op table) and every preset (bulk).

Vectorised: tasks are grouped by signature (op type, kind, weights, fused activation); the backend
path of each combo is planned once per signature, turned into coefficient arrays, and broadcast
against the group's per-task work arrays. Output shapes are those of docs/option-table.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from compiler.graph import Graph
from compiler.profile import Profile
from simulator.backends import (
    EPILOGUE_PASS_BACKENDS,
    export_events,
    fp16_shared_casts,
    fp16_unfused_norms,
    plan,
    storage_bytes_per_kernel,
    stored_aux_bytes,
)
from simulator.control_flow import control_dispatches, executions, scale_by_executions
from simulator.costs import FOLDED, WEIGHTED_KINDS, Work, fold_constants, work_of
from simulator.formats import BITS
from simulator.onnx_file import EVENTS, ExportRecords, export_records
from simulator.options import BULK_PRESETS, Combo, all_combos, parse_preset
from simulator.shapes import fill_shapes
from simulator.measured import measured_ms, total_scale, unexplained_ms
from simulator.profiles import HardwareProfile, load_profile
from simulator.labels import label_text
from simulator.published import heldout
from simulator.roofline import (
    Counts,
    Path,
    Rates,
    conversion_constants,
    conversion_ms,
    crossing_bytes,
    crossing_constants,
    crossing_ms,
    dram_bytes,
    io_bytes,
    rates,
    stack,
    task_cost,
)
from simulator.targets import Target, get_target

SCHEMA = 1
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
           combos: tuple[Combo, ...], shared_cast: bool, plain_norm: bool) -> tuple[Path, ...]:
    return tuple(plan(target, hw, op_type, kind, c, has_kernel, fused, shared_cast, plain_norm) for c in combos)


@lru_cache(maxsize=4096)
def _coeffs(target: Target, hw: HardwareProfile, op_type: str, kind: str, has_kernel: bool, fused: bool,
            combos: tuple[Combo, ...], shared_cast: bool = False, plain_norm: bool = False) -> _Coeffs:
    # Paths depend on the profile's structure only: a profile with fitted figures shares its base's.
    paths = _paths(target, hw.plan_base or hw, op_type, kind, has_kernel, fused, combos, shared_cast, plain_norm)
    epilogue_pass = target.backend in EPILOGUE_PASS_BACKENDS
    return _Coeffs(
        combos=list(combos), names=[c.name for c in combos],
        supported=np.array([p.supported for p in paths]), resolved=[p.resolved.name for p in paths],
        notes=[p.note for p in paths], unit=np.array([p.unit for p in paths], dtype=np.int64),
        rates=stack([rates(hw, p, kind, epilogue_pass) for p in paths]),
        aux_file_b=np.array([stored_aux_bytes(target, p, c, has_kernel) for p, c in zip(paths, combos)]),
        export_events=np.array([export_events(target, c) for c in combos], dtype=np.float64),
        kernel=[p.resolved.kernel for p in paths],
        sparsity=np.array([p.resolved.sparsity for p in paths], dtype=np.float64),
    )


@dataclass
class _Group:
    rows: np.ndarray  # op indices
    co: _Coeffs
    metrics: dict[str, np.ndarray] = field(default_factory=dict)  # [n, C]


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


@dataclass
class SweepResult:
    bulk: dict[str, Any]
    per_op: PerOpTable
    works: list[Work]
    executions: list[float] = field(default_factory=list)  # runs per inference of each task (bodies: trips)


# (id(compiled), id(source), target) -> (compiled, source, graph-only facts); used by presets_only sweeps only.
_FACTS: dict[tuple[int, int, str], tuple[Any, Any, tuple[Any, ...]]] = {}


def sweep(compiled: Graph, target: str | Target, profile: Profile | None = None, *,
          hardware: HardwareProfile | None = None,
          source: Graph | None = None, observed: Mapping[str, float] | None = None,
          input_values: Mapping[str, float] | None = None,
          presets_only: Sequence[str] | None = None) -> SweepResult:
    """Predict every op x every option on `target`.

    `profile`: a measured Profile of the same compiled graph on this target (its task medians become
    the fp32 baseline). `hardware`: the device's figures (for the host, calibrated: calibration.hardware_for);
    else the target's YAML profile as it is. `source`: the
    source graph, whose shapes fill activation shapes the compiled graph lacks (ORT NCHWc / contrib ops).
    `observed`: executions per run of body source nodes seen on the host run, `input_values`: values the user
    gave graph inputs (both for control flow: simulator.control_flow). `presets_only`: a bulk table of these
    presets (and fp32) only, whose per-op table holds only their combos (the device fit's many quick runs)."""
    t = target if isinstance(target, Target) else get_target(target)
    hw = hardware or load_profile(t.profile, t.backend)
    given = (compiled, source)
    facts = _FACTS.get((id(compiled), id(source), t.name)) if presets_only is not None else None
    if facts is not None and facts[0] is given[0] and facts[1] is given[1]:
        compiled, works, folded, view, records = facts[2]
    elif compiled.format == "tflite":
        # TFLite's own layouts, and its weights behind DEQUANTIZE / DENSIFY (simulator/tflite_ops.py).
        from simulator.tflite_ops import tflite_works
        works, folded, view = tflite_works(compiled)
    else:
        if compiled.format != "onnx":
            # Core ML / aten ops in ONNX vocabulary and layouts (same ids), so the cost model
            # recognises convs and matmuls and reads their kernels.
            from compiler.frontends.onnx_view import onnx_view
            compiled = onnx_view(compiled)
        compiled = fill_shapes(compiled, source)
        view, folded = fold_constants(compiled)
        works = [FOLDED if nd.id in folded else work_of(nd, view) for nd in compiled.nodes]
    nodes = compiled.nodes
    n = len(nodes)
    ops = [nd.id for nd in nodes]
    execs, cf_notes = executions(compiled, works, profile, observed, t.name, input_values)
    control = control_dispatches(compiled, execs)
    k_store, aux_store = _stored_elements(works)
    k_rows = np.array([w.kernel_out_channels for w in works], dtype=np.float64)
    k_depth = np.where(k_rows > 0, k_store / np.maximum(k_rows, 1), 0.0)
    if facts is None or facts[0] is not given[0] or facts[1] is not given[1]:
        records = _export_records(t, compiled, source, works)
        if presets_only is not None:  # the device fit sweeps the same graphs with many profiles: keep what
            if len(_FACTS) > 256:     # depends on the graph alone (shapes, work, the exporter's records)
                _FACTS.clear()
            _FACTS[(id(given[0]), id(given[1]), t.name)] = (*given, (compiled, works, folded, view, records))
    if records is not None:
        # The file stores the source's kernels, once (the compiled graph may pad them, e.g. NCHWc channels,
        # or copy a shared one); tasks without an exported kernel keep the compiled figures.
        k_store = np.where(records.mapped, records.kernel[:, 0], k_store)
        k_rows = np.where(records.mapped, records.kernel[:, 1], k_rows)
        k_depth = np.where(records.mapped, records.kernel[:, 2], k_depth)
    events = records.events if records is not None else np.zeros((n, len(EVENTS)))
    as_is = _stored_as_is(t, compiled, folded, works)
    bias_copies = _static_bias_copies(t, works)
    name_len = np.array([len(w.kernel_name.encode()) for w in works], dtype=np.float64)
    biased = _conv_biases(compiled, source)
    names = BULK_PRESETS if presets_only is None else tuple(dict.fromkeys(("fp32", *presets_only)))
    presets = [parse_preset(p) for p in names]
    conv = conversion_constants(hw)
    measured = measured_ms(compiled, t, profile, hw.units[0].profiler_overhead_s, hw.units[0].run_overhead_s)

    # Elements each op reads from graph inputs / writes to graph outputs (the model's I/O stays fp32).
    # A graph input is converted once, by (and charged to) its first consumer.
    gin, gout = set(compiled.inputs), set(compiled.outputs)
    io_in = np.zeros(n)
    io_out = np.zeros(n)
    seen_in: set[str] = set()
    for i, nd in enumerate(nodes):
        for v in dict.fromkeys(nd.inputs):
            if v in gin and v not in seen_in:
                seen_in.add(v)
                io_in[i] += _el(compiled, v)
        io_out[i] = sum(_el(compiled, v) for v in nd.outputs if v in gout)

    # Weights stay on chip between inferences only if all of them fit (else each run streams them).
    total_w = float((k_store + aux_store).sum()) * 4 + sum(w.other_const_bytes for w in works)
    weights_resident = total_w <= hw.units[0].onchip_memory_bytes
    # Group ops by signature.
    # Convs that fp16 leaves in NCHW behind a run-time Cast of a shared constant (backends.fp16_shared_casts).
    shared_cast = fp16_shared_casts(t, compiled, source)
    # SkipLayerNormalizations ORT does not form in the fp16 graph (backends.fp16_unfused_norms).
    plain_norm = fp16_unfused_norms(t, compiled)
    sig_rows: dict[tuple[str, str, bool, bool, bool, bool], list[int]] = {}
    for i, (nd, w) in enumerate(zip(nodes, works)):
        has_k = w.kind in WEIGHTED_KINDS and w.kernel_elements > 0
        sig = (nd.op_type, w.kind, has_k, w.fused_activation, shared_cast[i], plain_norm[i])
        sig_rows.setdefault(sig, []).append(i)
    where: list[tuple[_Group, int]] = [None] * n  # type: ignore[list-item]
    bulk_m = {m: np.zeros((n, len(presets))) for m in METRICS}
    bulk_supported = np.zeros((n, len(presets)), dtype=bool)
    bulk_combo = np.empty((n, len(presets)), dtype=object)
    bulk_unit = np.zeros((n, len(presets)), dtype=np.int64)
    bulk_in = np.empty((n, len(presets)), dtype=object)
    bulk_out = np.empty((n, len(presets)), dtype=object)
    for (op_type, kind, has_k, fused, shared, plain), rows in sig_rows.items():
        combos = tuple(all_combos(has_k)) if presets_only is None else \
            tuple(dict.fromkeys(p.resolve(t.float_format, has_k) for p in presets))
        co = _coeffs(t, hw, op_type, kind, has_k, fused, combos, shared, plain)
        g = _Group(np.array(rows), co)
        g.metrics = _metrics(t, kind, [works[i] for i in rows], co, conv, io_in[rows], io_out[rows],
                             measured[rows], weights_resident, total_w, k_store[rows], aux_store[rows],
                             k_rows[rows], k_depth[rows], events[rows], as_is[rows], name_len[rows], biased[rows],
                             bias_copies[rows])
        scale_by_executions(g.metrics, execs[rows])
        # An If / Loop / Scan's own set-up and trips, where its time is predicted (not measured here).
        predicted = ~((measured[rows] > 0)[:, None] & co.rates.fp32_equiv[None, :])
        g.metrics["latency_ms"] += control[rows][:, None] * co.rates.dispatch_s[None, :] * 1e3 * predicted
        for r, i in enumerate(rows):
            where[i] = (g, r)
        # Bulk columns: each preset picks one combo column of the group (plus fallback via the path).
        idx = {c: j for j, c in enumerate(combos)}
        cols = np.array([idx[p.resolve(t.float_format, has_k)] for p in presets])
        for m in METRICS:
            bulk_m[m][rows] = g.metrics[m][:, cols]
        bulk_supported[rows] = co.supported[cols]
        names = np.array(co.resolved, dtype=object)[cols]
        bulk_combo[rows] = names
        bulk_unit[rows] = co.unit[cols]
        bulk_in[rows] = np.array([s.split("/")[0] for s in names], dtype=object)
        bulk_out[rows] = np.array([s.split("/")[1] for s in names], dtype=object)

    # The runtime's fixed cost per inference (InferenceSession.run, Core ML predict) is charged to the
    # first task in every column, so the totals rule needs no extra term; so is the part of a measured whole
    # model its measured tasks do not explain (time between kernels, other load), so every view shows the whole.
    run_ms = hw.units[0].run_overhead_s * 1e3
    _charge_first(where, bulk_m, run_ms)
    gap_ms = unexplained_ms(profile, measured, bulk_m["latency_ms"], presets)
    _charge_first(where, bulk_m, gap_ms)

    src, dst, elements = _edges(compiled, folded, execs)
    # Partition crossings, charged to the consumer in the bulk columns. Per-op rows carry none (they depend on
    # the neighbours' choices): the totals rule charges them from `crossing` and the units of the state.
    cross_c = crossing_constants(hw)
    if cross_c is not None and len(src):
        cross = bulk_unit[src] != bulk_unit[dst]  # [E, P]
        act_b = np.vectorize(lambda f: BITS[f] / 8)(bulk_out[src]).astype(np.float64)
        moved = crossing_bytes(elements[:, None], act_b)
        # Elements already count every execution of a body consumer; so does the sync (`execs[dst]`).
        cost_ms = crossing_ms(cross_c, moved, execs[dst][:, None])
        np.add.at(bulk_m["latency_ms"], dst, np.where(cross, cost_ms, 0.0))
        np.add.at(bulk_m["dram_bytes"], dst, np.where(cross, moved, 0.0))

    # A measured whole-model time without per-task timings (LiteRT): every latency of this target is
    # scaled by measured / predicted fp32 total, so the fp32 ops sum to the measurement and options keep
    # their predicted ratios to it.
    scale = total_scale(t, profile, measured, bulk_m["latency_ms"], presets)
    if scale is not None:
        bulk_m["latency_ms"] *= scale
        for g in {id(g): g for g, _ in where}.values():
            g.metrics["latency_ms"] = g.metrics["latency_ms"] * scale
        conv = {"fixed_ms": conv["fixed_ms"] * scale,
                "ms_per_element": {k: v * scale for k, v in conv["ms_per_element"].items()}}
        if cross_c is not None:
            cross_c = {"fixed_s": cross_c["fixed_s"] * scale, "bytes_per_s": cross_c["bytes_per_s"] / scale}

    unit_names = [u.name for u in hw.units]
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
    label["text"] = label_text(label)
    bulk: dict[str, Any] = {
        "schema": SCHEMA, "target": t.name, "label": label, "ops": ops,
        "presets": [_preset_json(p, t) for p in presets],
        "metrics": {m: bulk_m[m].tolist() for m in METRICS},
        "supported": bulk_supported.tolist(),
        "combos": bulk_combo.tolist(),
        # The unit that runs each op under each preset (by name; `unit_names` lists the target's units in
        # placement order, the last being the CPU / CPU-EP fallback) so the UI can colour fallbacks.
        "unit_names": unit_names,
        "units": [[unit_names[u] for u in row] for row in bulk_unit.tolist()],
        "edges": {"src": src.tolist(), "dst": dst.tolist(), "elements": elements.tolist()},
        "conversion": conv,
        "crossing": cross_c,
        "constants": {"dram_pj_per_byte": hw.dram_energy_pj_per_byte,
                      "size_overhead_bytes": records.base if records is not None
                      else _size_overhead(compiled) - _fp16_restored_bytes(t, compiled, folded)},
    }
    exportable = None
    if t.export == "onnx":
        from simulator.exportable import mark_onnx

        exportable = mark_onnx(compiled, source, works, presets, bulk)
    elif t.export == "tflite":
        from simulator.exportable import mark_tflite

        exportable = mark_tflite(works, presets, bulk)
    notes = [list(w.notes) + ([cf] if cf else []) for w, cf in zip(works, cf_notes)]
    if n:
        notes[0].append(f"latency includes the runtime's fixed cost per inference ({run_ms:.4f} ms)"
                        + (f" and {gap_ms:.4f} ms of the measured whole model outside its tasks' kernel times"
                           if gap_ms > 0 else ""))
    per_op = PerOpTable(ops, where, notes, exportable)
    from simulator.totals import totals  # late import: totals reads the same structures
    base = totals(bulk, per_op, "fp32", {})
    bulk["base"] = {"preset": "fp32", **base}
    return SweepResult(bulk=bulk, per_op=per_op, works=works, executions=execs.tolist())


def _conv_biases(compiled: Graph, source: Graph | None) -> np.ndarray:
    """Per task: whether the conv the ONNX exporter writes for it has a bias (its source Conv reads one, or ORT
    folds a BatchNormalization into it, which makes one). Static int8 stores a scale and zero point per channel
    of that bias; dynamo exports fold untrained BatchNorms away and leave convs without one."""
    src = {n.id: n for n in source.nodes} if source is not None else {}
    out = np.ones(len(compiled.nodes), dtype=bool)
    if not src:
        return out
    for i, nd in enumerate(compiled.nodes):
        ns = [src[s] for s in nd.source_nodes if s in src]
        if any(n.op_type in ("Conv", "ConvTranspose") for n in ns):
            out[i] = any(n.op_type == "BatchNormalization" or (n.op_type in ("Conv", "ConvTranspose")
                                                                and len(n.inputs) > 2 and bool(n.inputs[2]))
                         for n in ns)
    return out


def _stored_elements(works: list[Work]) -> tuple[np.ndarray, np.ndarray]:
    """(kernel, aux) elements each task stores: a weight read by several tasks is stored once, by the first."""
    seen: set[str] = set()
    k_store = np.empty(len(works))
    aux_store = np.empty(len(works))
    for i, w in enumerate(works):
        k = w.kernel_elements
        if w.kernel_name:
            if w.kernel_name in seen:
                k = 0.0
            seen.add(w.kernel_name)
        aux = 0.0
        for name, el in w.aux_weights:
            if name not in seen:
                aux += el
                seen.add(name)
        k_store[i], aux_store[i] = k, aux
    return k_store, aux_store


def _preset_json(p: Any, t: Target) -> dict[str, Any]:
    c = p.resolve(t.float_format, True)
    return {"name": p.name, "input": c.input, "output": c.output, "kernel": c.kernel, "sparsity": c.sparsity,
            "description": p.description}


def _el(g: Graph, name: str) -> float:
    v = g.values.get(name)
    e = v.elements if v is not None else None
    return float(e or 0)


def _edges(g: Graph, folded: frozenset[str] = frozenset(), execs: np.ndarray | None = None
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Activation edges, once per (producer, consumer, value); constant-folded producers carry weights. An edge
    into a body task moves its tensor once per execution of that task (none if it never runs)."""
    index = {nd.id: i for i, nd in enumerate(g.nodes)}
    seen: set[tuple[int, int, str]] = set()
    src, dst, el = [], [], []
    for s, d, v in g.edges():
        if s in folded:
            continue
        key = (index[s], index[d], v)
        runs = 1.0 if execs is None else float(execs[key[1]]) if execs[key[0]] > 0 else 0.0
        if key in seen or runs == 0:
            continue
        seen.add(key)
        src.append(key[0])
        dst.append(key[1])
        el.append(_el(g, v) * runs)
    return np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64), np.array(el, dtype=np.float64)


def _export_records(t: Target, compiled: Graph, source: Graph | None, works: list[Work]) -> ExportRecords | None:
    """The ONNX exporter's records (simulator.onnx_file), where it writes this target's file from an ONNX
    model (the source; without one, the compiled graph taken as its own source); else None: Core ML and
    TFLite files are sized from the upload's own overhead."""
    src = source if source is not None else compiled
    if t.export != "onnx" or src.format != "onnx" or compiled.format != "onnx":
        return None
    weighted = [w.kind in WEIGHTED_KINDS and w.kernel_elements > 0 for w in works]
    return export_records(src, compiled, weighted)


def _stored_as_is(t: Target, g: Graph, folded: frozenset[str], works: list[Work]) -> np.ndarray:
    """Bytes of each task's kernel where the upload already stores it quantized (an int8 tensor behind a
    DEQUANTIZE folded at load) and the target's exporter keeps it so: ai-edge-quantizer does not requantize
    it, nor does a float export expand it; int8-static is the exception (see _metrics). 0 elsewhere."""
    out = np.zeros(len(works))
    if t.export != "tflite":
        return out
    stored: dict[str, float] = {}
    for nd in g.nodes:
        if nd.id in folded and nd.op_type in ("DequantizeLinear", "DEQUANTIZE") and nd.inputs and nd.outputs:
            v = g.values.get(nd.inputs[0])
            if v is not None and v.weight is not None and v.dtype in ("int8", "uint8", "int4", "uint4"):
                stored[nd.outputs[0]] = float(v.weight.bytes)
    for i, w in enumerate(works):
        out[i] = stored.get(w.kernel_name, 0.0) if w.kernel_elements else 0.0
    return out


def _static_bias_copies(t: Target, works: list[Work]) -> np.ndarray:
    """File bytes per task of its own copy of a float constant it shares with an earlier task (a bias that
    litert-torch deduplicated, such as the zeros of untrained BatchNorms), where static int8 needs one int32
    bias per operator, with that operator's scales: ai-edge-quantizer writes `<name>_duplicated_<n>`, its data
    (4 B per element) and a tensor record (75 B besides the name, as storage_bytes_per_kernel's). Measured:
    MobileNetV2 from litert-torch, 39 duplicated biases, 51 KB of int32 data. Other exporters: 0."""
    out = np.zeros(len(works))
    if t.export != "tflite":
        return out
    seen: set[str] = set()
    for i, w in enumerate(works):
        for name, el in w.aux_weights:
            if name in seen and w.kernel_elements:
                out[i] += el * 4 + 75 + len(name.encode()) + len("_duplicated_000")
            seen.add(name)
    return out


def _fp16_restored_bytes(t: Target, g: Graph, folded: frozenset[str]) -> float:
    """File bytes of the fp16 weights' DEQUANTIZE records that the LiteRT exporter removes: it restores fp16
    weights to the fp32 constants DEQUANTIZE computes before quantizing (compiler/optimize/litert_prepare.py),
    so each folded fp16 DEQUANTIZE loses its operator and its fp16 tensor: 75 B plus the tensor's name, as
    ai-edge-quantizer's own DEQUANTIZE records cost (storage_bytes_per_kernel). Measured: MobileNetV2 with 53
    fp16 weights (litert-torch names), every option written 44-45 KB smaller than the upload's records."""
    if t.export != "tflite":
        return 0.0
    out = 0.0
    for nd in g.nodes:
        if nd.id in folded and nd.op_type == "DEQUANTIZE" and len(nd.inputs) == 1:
            v = g.values.get(nd.inputs[0])
            if v is not None and v.weight is not None and v.dtype == "float16":
                out += 75 + len(nd.inputs[0].encode())
    return out


def _size_overhead(g: Graph) -> float:
    """File bytes beyond the weights: from the uploaded file's size when the frontend recorded it."""
    fs = g.metadata.get("file_size_bytes") or g.metadata.get("source_file_size_bytes")
    src_w = g.metadata.get("source_weight_bytes")
    if fs and src_w:
        return max(0.0, float(fs) - float(src_w))
    return 4096.0 + 120.0 * len(g.nodes)  # estimate: protobuf node records + header


def _charge_first(where: list[tuple[_Group, int]], bulk_m: dict[str, np.ndarray], ms: float) -> None:
    """Add `ms` to the first task's latency in every column (bulk and per-op)."""
    if where and ms > 0:
        g0, r0 = where[0]
        g0.metrics["latency_ms"][r0] += ms
        bulk_m["latency_ms"][0] += ms


def _metrics(t: Target, kind: str, works: list[Work], co: _Coeffs, conv: dict[str, Any], io_in: np.ndarray,
             io_out: np.ndarray, measured: np.ndarray, weights_resident: bool, weights_fp32_bytes: float,
             k_store: np.ndarray,
             aux_store_el: np.ndarray, rows: np.ndarray, depth: np.ndarray, events: np.ndarray,
             as_is: np.ndarray, name_len: np.ndarray, biased: np.ndarray,
             bias_copies: np.ndarray) -> dict[str, np.ndarray]:
    w = Counts.of(works)
    r = co.rates
    cost = task_cost(w, r, weights_resident, weights_fp32_bytes)
    gone = r.eliminated | (kind == "folded")
    lat_ms = np.where(gone, 0.0, cost.latency_s * 1e3)
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

    # Storage: kernel bytes per combo depend on the kernel tensor's size and rows.
    aux_store = aux_store_el[:, None]
    kern = np.zeros((len(works), len(co.combos)))
    cache: dict[tuple[str, int, bool], np.ndarray] = {}
    for j, (kf, sp, c) in enumerate(zip(co.kernel, co.sparsity, co.combos)):
        if kf == "-":
            continue
        static = c.input == "int8"
        key = (kf, int(sp), static)
        if key not in cache:
            cache[key] = storage_bytes_per_kernel(t, kf, int(sp), k_store, rows, static, kind, depth, name_len,
                                                  has_bias=biased)
        # LiteRT's int8-static restores a kernel stored int8 to fp32 and quantizes it afresh like the others
        # (compiler/optimize/litert_prepare.py): stored as is under every other option only.
        kept = as_is > 0 if not (static and t.export == "tflite") else np.zeros(len(as_is), dtype=bool)
        kern[:, j] = np.where(kept, as_is, cache[key]) + (bias_copies if static and kf == "int8" else 0.0)
    # Records an exporter adds or rewrites (Q/DQ pairs, decode subgraphs, value_info) are file bytes too.
    weight_bytes = kern + aux_store * co.aux_file_b + w.other_const_bytes + events @ co.export_events.T
    dram = dram_bytes(w, r, cost, weights_resident) + io_bytes(io_in, io_out)[:, None]
    dram = np.where(gone, 0.0, dram)
    act = np.where(gone, 0.0, cost.activation_bytes)
    return {"latency_ms": lat_ms, "weight_bytes": weight_bytes, "activation_bytes": act, "dram_bytes": dram}
