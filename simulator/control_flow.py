"""How many times each task runs per inference: once at the top level; a task in an `If`, `Loop` or `Scan`
body as many times as its parent runs that body (0 for a branch not taken).

Where the count comes from, first found wins:
1. the profile of this target: ORT's profiler records every execution of a body node (`TaskTiming.calls`);
   a body task with no event did not run (a branch not taken, a loop of zero trips);
2. `observed`: executions per run of source nodes seen on another target's profiled run of the same model
   (the host run, handed to the predicted targets), by the task's source nodes;
3. the model itself: a Loop's constant trip count `M`, a Scan's sequence length, an If's constant condition;
4. a stated default: a Loop of unknown trip count runs its body `DEFAULT_TRIPS` times, an If of unknown
   condition runs its heavier branch (the larger bound of the two).
Each body task's note says which it was.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from compiler.graph import Graph, Node
from compiler.profile import Profile
from simulator.costs import Work

DEFAULT_TRIPS = 1
# A Loop's M at or above this is the "no limit" of a while loop (torch exports INT64_MAX), not a count.
_NO_LIMIT = 2**31 - 1


def executions(graph: Graph, works: Sequence[Work], profile: Profile | None = None,
               observed: Mapping[str, float] | None = None, target: str = "") -> tuple[np.ndarray, list[str]]:
    """(executions per inference of each task, a note per task: "" for top-level tasks)."""
    n = len(graph.nodes)
    count = np.ones(n)
    notes = [""] * n
    if not any(nd.parent for nd in graph.nodes):
        return count, notes
    index = {nd.id: i for i, nd in enumerate(graph.nodes)}
    timed = profile.tasks if profile is not None and profile.measured and profile.target == target else None
    trips: dict[tuple[str, str], tuple[float, str]] = {}  # (parent, branch) -> (runs per parent run, why)
    for i, nd in enumerate(graph.nodes):
        if not nd.parent or nd.parent not in index:
            continue
        p = index[nd.parent]
        if timed is not None and (nd.id in timed or nd.parent in timed):
            count[i] = timed[nd.id].calls if nd.id in timed else 0.0
            notes[i] = _observed_note(count[i], "in the profiled run")
            continue
        seen = [observed[s] for s in nd.source_nodes or [nd.id] if observed and s in observed]
        if seen:
            count[i] = max(seen)
            notes[i] = _observed_note(count[i], "in the profiled host run")
            continue
        key = (nd.parent, nd.branch)
        if key not in trips:
            trips[key] = _static_trips(graph.nodes[p], nd.branch, graph, works, index)
        per, why = trips[key]
        count[i] = count[p] * per
        notes[i] = f"runs {count[i]:g}x per inference: {why}"
    return count, notes


def _observed_note(calls: float, where: str) -> str:
    if calls == 0:
        return f"did not run {where} (branch not taken or no loop trips): costs nothing per inference"
    return f"runs {calls:g}x per inference, as observed {where}"


def _constant(graph: Graph, name: str) -> float | None:
    """The value of a one-element constant, else None (weights keep their min and max only)."""
    v = graph.values.get(name) if name else None
    if v is None or v.weight is None or v.weight.elements != 1 or v.weight.min != v.weight.max:
        return None
    return v.weight.min


def _static_trips(parent: Node, branch: str, graph: Graph, works: Sequence[Work],
                  index: Mapping[str, int]) -> tuple[float, str]:
    """(runs of `branch` per run of `parent`, why) from the model alone, else the default."""
    op = parent.op_type
    if op == "If":
        cond = _constant(graph, parent.inputs[0] if parent.inputs else "")
        if cond is not None:
            taken = "then_branch" if cond else "else_branch"
            return float(branch == taken), f"the If's condition is a constant ({taken} taken)"
        heavier = max(("then_branch", "else_branch"), key=lambda b: _branch_work(parent, b, graph, works, index))
        return float(branch == heavier), (f"the If's branch was not observed; its heavier branch ({heavier}) "
                                          "is costed (default)")
    if op == "Loop":
        m = _constant(graph, parent.inputs[0] if parent.inputs else "")
        cond = _constant(graph, parent.inputs[1] if len(parent.inputs) > 1 else "")
        if cond == 0:
            return 0.0, "the Loop's initial condition is false"
        if m is not None and m < _NO_LIMIT:
            return float(max(0, int(m))), f"the Loop's trip count is a constant ({int(m)}; it may stop earlier)"
        return float(DEFAULT_TRIPS), (f"the Loop's trip count depends on the data and was not observed: "
                                      f"{DEFAULT_TRIPS} trip costed (default)")
    if op == "Scan":
        length = _scan_length(parent, graph)
        if length is not None:
            return float(length), f"the Scan's sequence length ({length})"
        return float(DEFAULT_TRIPS), (f"the Scan's sequence length is not known: {DEFAULT_TRIPS} step costed "
                                      "(default)")
    return 1.0, f"{op} runs its {branch} once (assumed)"


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


def _scan_length(parent: Node, graph: Graph) -> int | None:
    n_scan = int(parent.attributes.get("num_scan_inputs", 0) or 0)
    if n_scan <= 0 or len(parent.inputs) < n_scan:
        return None
    first = parent.inputs[len(parent.inputs) - n_scan]
    v = graph.values.get(first)
    axes = parent.attributes.get("scan_input_axes") or [0] * n_scan
    if v is None or v.shape is None or not v.shape:
        return None
    d = v.shape[int(axes[0]) % len(v.shape)]
    return d if isinstance(d, int) else None


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
