"""How many times each task runs per inference: once at the top level; a task in an `If`, `Loop` or `Scan`
body as many times as its parent runs that body (0 for a branch not taken).

Where the count comes from, first found wins:
1. the profile of this target: ORT's profiler records every execution of a body node (`TaskTiming.calls`);
   a body task with no event did not run (a branch not taken, a loop of zero trips);
2. `observed`: executions per run of source nodes seen on another target's profiled run of the same model
   (the host run, handed to the predicted targets), by the task's source nodes;
3. the model itself (simulator.static_values): a Loop's trip count (`M`, or its body's condition worked out trip by
   trip) and an If's condition where they follow from constants, static shapes and the input values the user
   gave; a Scan's sequence length;
4. a stated default: a Loop of unknown trip count runs its body `DEFAULT_TRIPS` times, an If of unknown
   condition runs its heavier branch (the larger bound of the two).
Each body task's note says which it was.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from compiler.graph import Graph, Node
from compiler.optimize.onnx_rules import FLOAT_FORMAT
from compiler.profile import Profile
from compiler.vocabulary.options import Combo, Preset
from compiler.vocabulary.targets import Target
from simulator.costs import Work
from simulator.ort_fp16 import FP16_KERNELS
from simulator.profiles import HardwareProfile
from simulator.static_values import StaticValues, counted_trips

DEFAULT_TRIPS = 1
# TFLite's control-flow operators as their ONNX kin (compiler/frontends/tflite.py reads IF's `then_branch` /
# `else_branch` and WHILE's `cond` / `body`): IF takes its condition first, as If; WHILE's trip count is the data's.
_KIN = {"IF": "If", "WHILE": "Loop"}
# A Loop's M at or above this is the "no limit" of a while loop (torch exports INT64_MAX), not a count.
_NO_LIMIT = 2**31 - 1


def executions(graph: Graph, works: Sequence[Work], profile: Profile | None = None,
               observed: Mapping[str, float] | None = None, target: str = "",
               input_values: Mapping[str, float] | None = None) -> tuple[np.ndarray, list[str]]:
    """(executions per inference of each task, a note per task: "" for top-level tasks). `input_values`: graph
    inputs the user gave a value, which an If's condition or a Loop's trip count may be computed from."""
    n = len(graph.nodes)
    count = np.ones(n)
    notes = [""] * n
    if not any(nd.parent for nd in graph.nodes):
        return count, notes
    index = {nd.id: i for i, nd in enumerate(graph.nodes)}
    timed = profile.tasks if profile is not None and profile.measured and profile.target == target else None
    taken: dict[str, str] = {}  # If id -> the branch that runs (an If's result has that branch's shape)
    values = StaticValues(graph, input_values, branch_of=lambda node: taken.get(node.id))
    trips: dict[tuple[str, str], tuple[float, str]] = {}  # (parent, branch) -> (runs per parent run, why)
    for i, nd in enumerate(graph.nodes):
        if not nd.parent or nd.parent not in index:
            continue
        p = index[nd.parent]
        seen = [observed[s] for s in nd.source_nodes or [nd.id] if observed and s in observed]
        if timed:  # this target's own run: a body task without events did not run
            count[i] = timed[nd.id].calls if nd.id in timed else 0.0
            notes[i] = _observed_note(count[i], "in the profiled run")
        elif seen:
            count[i] = max(seen)
            notes[i] = _observed_note(count[i], "in the profiled host run")
        else:
            key = (nd.parent, nd.branch)
            if key not in trips:
                trips[key] = _static_trips(graph.nodes[p], nd.branch, values, works, index)
            per, why = trips[key]
            count[i] = count[p] * per
            notes[i] = f"runs {count[i]:g}x per inference: {why}"
        if count[i] > 0 and _KIN.get(graph.nodes[p].op_type, graph.nodes[p].op_type) == "If":
            taken.setdefault(nd.parent, nd.branch)
    return count, notes


def _observed_note(calls: float, where: str) -> str:
    if calls == 0:
        return f"did not run {where} (branch not taken or no loop trips): costs nothing per inference"
    return f"runs {calls:g}x per inference, as observed {where}"


def _static_trips(parent: Node, branch: str, values: StaticValues, works: Sequence[Work],
                  index: Mapping[str, int]) -> tuple[float, str]:
    """(runs of `branch` per run of `parent`, why) from the model alone, else the default."""
    op, graph = _KIN.get(parent.op_type, parent.op_type), values.graph
    stated = _stated(parent, op, branch)
    if stated is not None:
        return stated
    first = values.scalar(parent.inputs[0]) if parent.inputs else None
    if parent.op_type == "WHILE":
        return float(DEFAULT_TRIPS), (f"the WHILE's trip count depends on the data and was not observed: "
                                      f"{DEFAULT_TRIPS} trip costed (default)")
    if op == "If":
        if first is not None:
            taken = "then_branch" if first else "else_branch"
            return float(branch == taken), f"the If's condition is known before the run ({taken} taken)"
        heavier = max(("then_branch", "else_branch"), key=lambda b: _branch_work(parent, b, graph, works, index))
        return float(branch == heavier), (f"the If's branch was not observed; its heavier branch ({heavier}) "
                                          "is costed (default)")
    if op == "Loop":
        cond = values.scalar(parent.inputs[1]) if len(parent.inputs) > 1 else None
        if cond == 0:
            return 0.0, "the Loop's initial condition is false"
        counted = counted_trips(parent, values)
        if counted is not None and (first is None or counted != int(first)):
            return float(counted), (f"the Loop's trip count follows from constants ({counted}: its condition, "
                                    "worked out trip by trip)")
        if first is not None and first < _NO_LIMIT:
            return float(max(0, int(first))), (f"the Loop's trip count is known before the run ({int(first)}; "
                                               "it may stop earlier)")
        return float(DEFAULT_TRIPS), (f"the Loop's trip count depends on the data and was not observed: "
                                      f"{DEFAULT_TRIPS} trip costed (default)")
    if op == "Scan":
        length = _scan_length(parent, values)
        if length is not None:
            return float(length), f"the Scan's sequence length ({length})"
        return float(DEFAULT_TRIPS), (f"the Scan's sequence length is not known: {DEFAULT_TRIPS} step costed "
                                      "(default)")
    return 1.0, f"{op} runs its {branch} once (assumed)"


def _stated(parent: Node, op: str, branch: str) -> tuple[float, str] | None:
    """What a frontend read from the file itself: a Core ML loop's trip count (`trip_count`: its counter's start,
    bound and step are constants; compiler/frontends/coreml_control.py), whose condition block runs once more than
    its body, and the branch a conditional on a constant takes (`taken_branch`)."""
    n, taken = parent.attributes.get("trip_count"), parent.attributes.get("taken_branch")
    if op == "Loop" and isinstance(n, int) and not isinstance(n, bool):
        runs = n + 1 if branch == "cond" else n
        return float(runs), f"the loop's trip count is fixed in the file ({n}; its condition is checked {n + 1}x)"
    if op == "If" and taken in ("then_branch", "else_branch"):
        return float(branch == taken), f"the condition is a constant in the file ({taken} taken)"
    return None


def _branch_work(parent: Node, branch: str, graph: Graph, works: Sequence[Work], index: Mapping[str, int]) -> float:
    """Arithmetic and elements moved by a branch's tasks (nested bodies included), to rank the branches."""
    inside = {parent.id}
    total = 0.0
    for nd in graph.nodes:
        if nd.parent in inside and (nd.parent != parent.id or nd.branch == branch):
            inside.add(nd.id)
            w = works[index[nd.id]]
            total += 2 * w.macs + w.flops + w.in_elements + w.out_elements + 1.0
    return total


def _scan_length(parent: Node, values: StaticValues) -> int | None:
    n_scan = int(parent.attributes.get("num_scan_inputs", 0) or 0)
    if n_scan <= 0 or len(parent.inputs) < n_scan:
        return None
    shape = values.shape(parent.inputs[len(parent.inputs) - n_scan])
    axes = parent.attributes.get("scan_input_axes") or [0] * n_scan
    return shape[int(axes[0]) % len(shape)] if shape else None


def observed_executions(compiled: Graph, profile: Profile | None) -> dict[str, float]:
    """Executions per run of the source nodes in bodies, from a profiled run of `compiled` (0 for those whose
    task never ran): what the other targets of the same model take as observed."""
    if profile is None or not profile.measured or not profile.tasks:
        return {}
    out: dict[str, float] = {}
    for nd in compiled.nodes:
        if not nd.parent:
            continue
        calls = profile.tasks[nd.id].calls if nd.id in profile.tasks else 0.0
        for s in nd.source_nodes:
            out[s] = max(out.get(s, 0.0), calls)
    return out


def scale_by_executions(metrics: dict[str, np.ndarray], execs: np.ndarray) -> None:
    """Per-inference figures of tasks that run `execs` times (rows of `metrics`): time and DRAM traffic add up
    per execution, stored weights do not, and a task that never runs holds no activations."""
    if np.all(execs == 1):
        return
    e = execs[:, None]
    metrics["latency_ms"] = metrics["latency_ms"] * e
    metrics["dram_bytes"] = metrics["dram_bytes"] * e
    metrics["activation_bytes"] = np.where(e > 0, metrics["activation_bytes"], 0.0)


def discount_parents(graph: Graph, per_run_ms: np.ndarray, calls: np.ndarray, whole_ms: float) -> np.ndarray:
    """Measured times per run with the profiler's cost taken out of the control-flow nodes first.

    ORT's profiler records each body node's event between that node's kernels, inside the parent's span:
    the parent's exclusive time carries the recording of all its body's events (tens of microseconds in a
    loop of tiny kernels), which the un-profiled whole-model time does not. So the excess of the measured
    tasks over the whole is taken from the parents, in proportion to the events recorded in their bodies,
    down to a quarter of their measured time (the floor every measured task keeps)."""
    index = {nd.id: i for i, nd in enumerate(graph.nodes)}
    events = np.zeros(len(graph.nodes))
    for i, nd in enumerate(graph.nodes):
        if nd.parent in index and per_run_ms[i] > 0:
            events[index[nd.parent]] += calls[i]
    excess = float(per_run_ms.sum()) - whole_ms
    if excess <= 0 or not events.any():
        return per_run_ms
    room = np.where(events > 0, 0.75 * per_run_ms, 0.0)
    take = np.minimum(room, excess * events / events.sum())
    return per_run_ms - take


# A control-flow node's own cost in kernel dispatches of its unit: a fixed part per execution (ORT sets up the
# body's frame and feeds) and a part per Loop / Scan trip beyond the body's kernels (carried values handed on,
# Scan slices cut and stacked). Measured on this host with ORT 1.32, 1 thread, 5th percentile of 2,000 runs of
# Relu bodies against a chain of Relus (0.22 us per Relu): fixed 1.25 us for Loop and If, 2.5-2.7 us for Scan;
# per trip beyond the body's kernels 0-0.6 dispatches for Loop, 1.1-1.9 for Scan.
_FIXED_DISPATCHES = {"If": 6.0, "Loop": 6.0, "Scan": 12.0}
_TRIP_DISPATCHES = {"Loop": 0.5, "Scan": 1.5}
# A TFLite IF / WHILE's own cost per execution where the runtime's was calibrated (a CPU unit's kind_overhead_s):
# LiteRT's, 0.5 us here (simulator.litert_control), not six of its 0.22 us dispatches.
TFLITE_CONTROL_KEY = "control.tflite"


def control_dispatches(graph: Graph, execs: np.ndarray, tflite_s: float | None = None
                       ) -> tuple[np.ndarray, np.ndarray]:
    """(dispatches, seconds) per inference each If / Loop / Scan task costs beyond its own kernel (0 for other
    tasks). `tflite_s`: the runtime's calibrated cost of one execution of a TFLite IF / WHILE (LiteRT's CPU:
    simulator.litert_control), charged per execution in place of the fixed dispatches, where known."""
    index = {nd.id: i for i, nd in enumerate(graph.nodes)}
    trips = np.zeros(len(graph.nodes))
    for i, nd in enumerate(graph.nodes):
        p = index.get(nd.parent, -1) if nd.parent else -1
        if p >= 0:
            trips[p] = max(trips[p], execs[i])
    out, secs = np.zeros(len(graph.nodes)), np.zeros(len(graph.nodes))
    for i, nd in enumerate(graph.nodes):
        if _KIN.get(nd.op_type, nd.op_type) in _FIXED_DISPATCHES and any(b.get("graph") is not None for b in nd.attributes.values()
                                                   if isinstance(b, dict)):
            op = _KIN.get(nd.op_type, nd.op_type)
            own = tflite_s is not None and nd.op_type in _KIN
            secs[i] = (tflite_s or 0.0) * execs[i] if own else 0.0
            out[i] = (0.0 if own else _FIXED_DISPATCHES[op] * execs[i]) + _TRIP_DISPATCHES.get(op, 0.0) * trips[i]
    return out, secs


# What the ONNX exporter writes inside an If / Loop / Scan body (compiler/optimize/onnx_export.py): ORT's static and
# dynamic quantizers, its 4-bit MatMul quantizer and the exporter's own pruning and palettization act on the nodes
# it names, all of the top-level graph, so a body keeps its float ops under every option; ORT's fp16 converter
# converts bodies too.
BODY_EXPORT_NOTE = ("in an If / Loop / Scan body: the ONNX exporter writes it float under every option but fp16 "
                    "(ORT's quantizers act on the top-level graph), so each option prices it as written")


def written_in_body(t: Target, graph: Graph) -> np.ndarray:
    """[n] bool: task i runs in a body of an ONNX export, whose options leave it as `body_preset` says."""
    return np.array([t.export == "onnx" and bool(nd.parent) for nd in graph.nodes], dtype=bool)


def body_preset(preset: Preset) -> str:
    """The preset a body task is written in under `preset`: fp16 where the fp16 converter runs (unpruned: pruning is
    top-level too), else fp32."""
    return "fp16" if preset.resolve(FLOAT_FORMAT, True).input == "fp16" else "fp32"


def fp16_body_casts(t: Target, graph: Graph) -> list[tuple[float, ...]]:
    """Per task: the element counts of the float constants (its weight, bias, an Add's operand) it reads through a
    Cast ORT runs at every execution under fp16, () for none. ORT's x86 CPU EP runs an fp16 op without an fp16 kernel
    (simulator.ort_fp16.FP16_KERNELS) as fp32 between Casts it inserts; at the top level a Cast of an initializer
    is folded at load, but inside an If / Loop / Scan body it is not, whether the constant is the body's own or read
    from the outer scope: the corpus's greedy decoder's fp16 body casts its three weight matrices (768 x 256 twice,
    1000 x 256) and their biases back to fp32 on every trip (12 Casts in ORT's optimized body)."""
    native = FP16_KERNELS.get(t.backend)
    out: list[tuple[float, ...]] = [()] * len(graph.nodes)
    if native is None or t.export != "onnx":
        return out
    for i, nd in enumerate(graph.nodes):
        if not nd.parent or nd.op_type in native:
            continue
        vals = [graph.values.get(v) for v in dict.fromkeys(nd.inputs) if v]
        out[i] = tuple(float(v.weight.elements) for v in vals if v is not None and v.weight is not None
                       and v.dtype in ("float32", "float16") and v.weight.elements)
    return out


def body_cast_ms(hw: HardwareProfile, elements: float) -> float:
    """One run-time Cast of an fp16 constant of `elements` values in a body: a dispatch, the fp16 values read as
    weights are (streamed: a body that casts its weights every trip outgrows the L2 with their fp32 copies; the
    greedy decoder's 1.3 MB of fp16 weights and 2.6 MB of copies per trip) and the fp32 copy written to cache.
    Its Gemm then reads the copy hot, which its own figure ignores (the weight-streaming read is the net cost). The
    greedy decoder's fp16 export (thread CPU time, 300 runs, load 7): 3.66 ms against 2.19 for its fp32 export."""
    u = hw.units[0]
    return (u.dispatch_overhead_s + elements * (2.0 / hw.dram_bandwidth_bytes_per_s
                                                + 4.0 / u.cache_bandwidth_bytes_per_s)) * 1e3


def stores_fp16(c: Combo, has_kernel: bool) -> bool:
    """Whether the exporter writes a task's constants fp16 under combo `c` (the fp16 converter's work)."""
    return c.kernel == "fp16" if has_kernel else c.input == "fp16"


def body_casts_ms(casts: list[tuple[float, ...]], rows: list[int], combos: tuple[Combo, ...], has_k: bool,
                  hw: HardwareProfile, execs: np.ndarray) -> np.ndarray | float:
    """[len(rows), C] ms per inference of the Casts of fp16 constants body tasks run at every execution
    (fp16_body_casts), in the combos whose constants the exporter writes fp16; 0.0 if none."""
    if not any(casts[i] for i in rows):
        return 0.0
    each = np.array([sum(body_cast_ms(hw, e) for e in casts[i]) * execs[i] for i in rows])
    on = np.array([stores_fp16(c, has_k) for c in combos], dtype=np.float64)
    return each[:, None] * on[None, :]
