"""A graph's latency under one preset, planned once and evaluated for many profiles (the device fit's inner loop).

A sweep (simulator.sweep) costs every task under every option and builds the tables the UI reads: ~40 ms for a
300-task CNN. The device fit evaluates thousands of profiles that differ in figures only (efficiencies, bandwidths,
overheads; `HardwareProfile.with_overrides` keeps `plan_base`), never in what runs where. So `plan_latency` takes
what does not change with the figures once (each task's path as simulator.backends plans it, its counts, the edges
that convert or cross units), and `latency_ms` evaluates simulator.roofline's formulas on it per profile: the sweep's
bulk column plus the totals rule's edge conversions, summed in another order (equal to rounding; checked by
`check_against_sweep` and tests/unit/test_fast_latency.py). Graphs with control flow or measured times are not
planned (ValueError): the sweep handles those.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from compiler.graph import Graph
from compiler.vocabulary.formats import BITS, FLOAT_FORMATS
from compiler.vocabulary.options import Combo, parse_preset
from compiler.vocabulary.targets import Target, get_target
from simulator.backends import EPILOGUE_PASS_BACKENDS, plan, task_facts
from simulator.control_flow import executions
from simulator.costs import FOLDED, Work, takes_kernel_option
from simulator.file_bytes import stored
from simulator.ort_fp16 import fp16_shared_casts, fp16_unfused_norms
from simulator.profiles import HardwareProfile
from simulator.conversions import conversion_constants, conversion_ms
from simulator.crossings import crossing_bytes, crossing_constants, crossing_ms
from simulator.roofline import (
    Counts,
    Path,
    Rates,
    rates,
    residency,
    stack,
    task_cost,
)
from simulator.sweep import activation_edges, graph_facts, io_elements


@dataclass(frozen=True, slots=True)
class LatencyPlan:
    """What one preset runs on one graph, independent of the profile's figures."""

    target: str
    preset: str
    paths: tuple[tuple[Path, str], ...]  # the distinct (path, task kind) pairs
    index: np.ndarray  # [n] each task's entry in `paths`
    counts: Counts  # [n, 1]
    gone: np.ndarray  # [n] bool: folded at load, or eliminated by its path
    # Format conversions (graph I/O and edges between tasks that run different formats): per pair "a>b",
    # (conversions, elements converted).
    conversions: tuple[tuple[str, int, float], ...]
    crossings: tuple[int, float]  # edges between units, bytes they move
    weights_fp32_bytes: float  # the model's weights at fp32 (on-chip residency and the cache's share)
    works: tuple[Work, ...]  # the run's length (roofline.run_estimate_s) depends on the figures too
    units: np.ndarray  # [n] unit index of each task
    epilogue_pass: bool
    # [n] tasks that read and write float activations: the totals rule's float-graph term of a unit is paid where one
    # of them runs on it and takes time (its unit's `float_graph_run_s`, if set).
    float_tasks: np.ndarray | None = None

    @property
    def live(self) -> np.ndarray:
        return ~self.gone

    def tasks_on(self, unit: int) -> int:
        """Tasks (not folded) this preset places on unit index `unit`."""
        return int(((self.units == unit) & self.live).sum())


def plan_latency(compiled: Graph, target: str | Target, hw: HardwareProfile, preset: str,
                 source: Graph | None = None) -> LatencyPlan:
    """Plan `preset` on `compiled` for `target` with the paths of `hw` (its structure; figures come later)."""
    t = target if isinstance(target, Target) else get_target(target)
    g, works, folded, records = graph_facts(compiled, source, t)
    execs, _ = executions(g, works, None, None, t.name, None)
    if (execs != 1).any() or any(nd.parent for nd in g.nodes):
        raise ValueError("control flow: use simulator.sweep")
    base = hw.plan_base or hw
    fmt = t.float_format
    p = parse_preset(preset)
    shared = fp16_shared_casts(t, g, source)
    plain = fp16_unfused_norms(t, g)
    facts = task_facts(t, g)
    distinct: dict[tuple[Path, str], int] = {}
    index, gone, units = [], [], []
    for i, (nd, w) in enumerate(zip(g.nodes, works)):
        has_k = takes_kernel_option(w)
        path = plan(t, base, nd.op_type, w.kind, p.resolve(fmt, has_k), has_k, w.fused_activation, shared[i], plain[i],
                    facts[i])
        index.append(distinct.setdefault((path, w.kind), len(distinct)))
        gone.append(path.eliminated or w is FOLDED or w.kind == "folded")
        units.append(path.unit)
    paths = tuple(distinct)
    st = stored(t, g, source, works, folded, records)
    resolved = [paths[k][0].resolved for k in index]
    # As the totals rule reads the table: each task's combo and unit (and, in latency_ms, its time).
    float_tasks = np.array([r.input in FLOAT_FORMATS and r.output in FLOAT_FORMATS for r in resolved], dtype=bool)
    return LatencyPlan(
        target=t.name, preset=preset, paths=paths, index=np.array(index, dtype=np.int64),
        counts=Counts.of(works), gone=np.array(gone, dtype=bool),
        conversions=_conversions(g, folded, execs, resolved), crossings=_crossings(g, folded, execs, resolved, units),
        weights_fp32_bytes=float((st.kernel + st.aux).sum()) * 4 + sum(w.other_const_bytes for w in works),
        works=tuple(works), units=np.array(units, dtype=np.int64), epilogue_pass=t.backend in EPILOGUE_PASS_BACKENDS,
        float_tasks=float_tasks)


def _conversions(g: Graph, folded: frozenset[str], execs: np.ndarray, resolved: list[Combo]
                 ) -> tuple[tuple[str, int, float], ...]:
    """Conversions per format pair: the model's fp32 inputs and outputs to and from the formats their tasks run
    (charged by the sweep to the task), and each edge whose producer writes another format than its consumer
    reads (the totals rule)."""
    io_in, io_out = io_elements(g)
    pairs: dict[str, list[float]] = {}
    terms = [(f"fp32>{resolved[i].input}", io_in[i]) for i in np.flatnonzero(io_in > 0)]
    terms += [(f"{resolved[i].output}>fp32", io_out[i]) for i in np.flatnonzero(io_out > 0)]
    src, dst, el = activation_edges(g, folded, execs)
    terms += [(f"{resolved[s].output}>{resolved[d].input}", e) for s, d, e in zip(src, dst, el)
              if resolved[s].output != resolved[d].input]
    for pair, e in terms:
        if pair.split(">")[0] != pair.split(">")[1]:
            acc = pairs.setdefault(pair, [0, 0.0])
            acc[0] += 1
            acc[1] += float(e)
    return tuple((k, int(n), e) for k, (n, e) in sorted(pairs.items()))


def _crossings(g: Graph, folded: frozenset[str], execs: np.ndarray, resolved: list[Combo], units: list[int]
               ) -> tuple[int, float]:
    """Edges between tasks on different units (a partition crossing each) and the bytes they move."""
    src, dst, el = activation_edges(g, folded, execs)
    cross = [(s, e) for s, d, e in zip(src, dst, el) if units[s] != units[d]]
    return len(cross), float(sum(crossing_bytes(e, BITS[resolved[s].output] / 8) for s, e in cross))


def _task_rates(lp: LatencyPlan, hw: HardwareProfile) -> Rates:
    """Every task's rates [n, 1] under `hw`'s figures: the distinct paths' rates, spread to their tasks."""
    each = stack([rates(hw, p, kind, lp.epilogue_pass) for p, kind in lp.paths])
    return Rates(**{f.name: getattr(each, f.name)[lp.index][:, None] for f in fields(Rates)})


def _conversions_ms(lp: LatencyPlan, hw: HardwareProfile) -> float:
    conv = conversion_constants(hw)
    pe = conv["ms_per_element"]
    return sum(conversion_ms(conv["fixed_ms"] * n, pe[pair], e) for pair, n, e in lp.conversions)


def _crossings_ms(lp: LatencyPlan, hw: HardwareProfile) -> float:
    cross_c = crossing_constants(hw)
    n, moved = lp.crossings
    return 0.0 if cross_c is None or not n else float(crossing_ms(cross_c, moved, n))


def latency_ms(lp: LatencyPlan, hw: HardwareProfile) -> float:
    """The whole model's latency under `hw` (a profile with the structure `lp` was planned with)."""
    r = _task_rates(lp, hw)
    u0 = hw.units[0]
    res = residency(lp.works, lp.weights_fp32_bytes, u0)
    cost = task_cost(lp.counts, r, res)
    each = np.where(lp.gone[:, None], 0.0, cost.latency_s * 1e3)
    tasks = float(each.sum())
    float_graph = sum(u.float_graph_run_s for j, u in enumerate(hw.units) if u.float_graph_run_s > 0
                      and lp.float_tasks is not None and (lp.float_tasks & (lp.units == j) & (each[:, 0] > 0)).any()) * 1e3
    return (tasks + hw.units[0].run_overhead_s * 1e3 + float_graph + _conversions_ms(lp, hw)
            + _crossings_ms(lp, hw))


def check_against_sweep(lp: LatencyPlan, compiled: Graph, hw: HardwareProfile, source: Graph | None = None
                        ) -> float:
    """Relative difference between `latency_ms` and the sweep's total for the same preset and profile."""
    from simulator.sweep import sweep
    from simulator.totals import totals

    res = sweep(compiled, lp.target, source=source, hardware=hw, presets_only=[lp.preset])
    ref = totals(res.bulk, res.per_op, lp.preset, {})["latency_ms"]
    return abs(latency_ms(lp, hw) / ref - 1)
