"""Pipeline figures: upload-to-ready and per-stage seconds, per-task timing spread, sum of task
medians vs whole-model median, and the server's peak resident memory (the process and its children: workers,
sandboxed parse/profile/export-check children), sampled every 50 ms. Prints figures; it is not a test.

    .venv/bin/python benchmarks/pipeline.py [--repeats 3] [--runs 30] [--scale 50000,200000] [--all-targets]

`--scale N,...` adds the scale models (issue 18 item 6): a chain of N elementwise nodes in namespaces
(testkit.modelzoo.large_chain; 50,000 is the target size) and, for N >= 100,000, a decoder-only LLM-like graph of N
primitive ops written in code (`llm_like`: RMSNorm, attention and SwiGLU MLP decomposed as an exporter writes them, tiny
dims so only the graph's size varies). `--all-targets` analyses for every default ONNX target instead of ort-cpu/host.

Uses a live `edgescope serve` on the embedded default in a temp dir (the same path a user takes).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from compiler.profile import FAST_ROUNDS  # noqa: E402
from simulator.litert_calibration import cache_path  # noqa: E402
from testkit import modelzoo  # noqa: E402
from testkit.live import LiveServer, start_server  # noqa: E402


def llm_like(path: Path, n_nodes: int = 200_000, hidden: int = 8, heads: int = 2, seq: int = 4) -> Path:
    """A decoder-only transformer as an ONNX exporter writes it, op by op, with layers added until `n_nodes`: names
    `/model/layers.{i}/self_attn/q_proj/MatMul` as in a Hugging Face export. Weights are shared small tensors."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    hd = hidden // heads
    nodes: list[onnx.NodeProto] = []
    counter = [0]

    def op(kind: str, ins: list[str], scope: str, **attrs: object) -> str:
        counter[0] += 1
        out = f"v{counter[0]}"
        nodes.append(helper.make_node(kind, ins, [out], name=f"/model/{scope}/{kind}_{counter[0]}", **attrs))
        return out

    def rms(x: str, scope: str) -> str:
        sq = op("Pow", [x, "two"], scope)
        mean = op("ReduceMean", [sq, "last_axis"], scope, keepdims=1)
        r = op("Sqrt", [op("Add", [mean, "eps"], scope)], scope)
        return op("Mul", [op("Div", [x, r], scope), "norm_w"], scope)

    def heads_of(x: str, scope: str) -> str:
        return op("Transpose", [op("Reshape", [x, "split_shape"], scope)], scope, perm=[0, 2, 1, 3])

    x, layer = "input", 0
    while counter[0] < n_nodes - 45:
        at, mlp = f"layers.{layer}/self_attn", f"layers.{layer}/mlp"
        h = rms(x, f"layers.{layer}/input_layernorm")
        q, k, v = (heads_of(op("MatMul", [h, "w_hh"], f"{at}/{p}_proj"), at) for p in ("q", "k", "v"))
        kt = op("Transpose", [k], at, perm=[0, 1, 3, 2])
        scores = op("Add", [op("Div", [op("MatMul", [q, kt], at), "sqrt_hd"], at), "mask"], at)
        ctx = op("MatMul", [op("Softmax", [scores], at, axis=-1), v], at)
        merged = op("Reshape", [op("Transpose", [ctx], at, perm=[0, 2, 1, 3]), "merge_shape"], at)
        x = op("Add", [x, op("MatMul", [merged, "w_hh"], f"{at}/o_proj")], f"layers.{layer}")
        h = rms(x, f"layers.{layer}/post_attention_layernorm")
        gate = op("MatMul", [h, "w_hf"], f"{mlp}/gate_proj")
        silu = op("Mul", [gate, op("Sigmoid", [gate], f"{mlp}/act_fn")], f"{mlp}/act_fn")
        up = op("MatMul", [h, "w_hf"], f"{mlp}/up_proj")
        x = op("Add", [x, op("MatMul", [op("Mul", [silu, up], mlp), "w_fh"], f"{mlp}/down_proj")], f"layers.{layer}")
        layer += 1
    out = rms(x, "norm")
    nodes[-1].output[0] = "logits"
    del out
    f32 = lambda a: np.asarray(a, np.float32)  # noqa: E731
    inits = [numpy_helper.from_array(f32(2.0), "two"), numpy_helper.from_array(f32(1e-6), "eps"),
             numpy_helper.from_array(np.array([-1], np.int64), "last_axis"),
             numpy_helper.from_array(f32(np.ones(hidden)), "norm_w"),
             numpy_helper.from_array(f32(np.full((hidden, hidden), 0.01)), "w_hh"),
             numpy_helper.from_array(f32(np.full((hidden, 4 * hidden), 0.01)), "w_hf"),
             numpy_helper.from_array(f32(np.full((4 * hidden, hidden), 0.01)), "w_fh"),
             numpy_helper.from_array(f32(np.sqrt(hd)), "sqrt_hd"),
             numpy_helper.from_array(f32(np.zeros((1, 1, seq, seq))), "mask"),
             numpy_helper.from_array(np.array([1, seq, heads, hd], np.int64), "split_shape"),
             numpy_helper.from_array(np.array([1, seq, hidden], np.int64), "merge_shape")]
    g = helper.make_graph(nodes, "llm_like", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, seq, hidden])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, seq, hidden])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), str(path))  # no checker: seconds at 200k
    return path


MODELS = {
    "mobilenet_v2_like": lambda p: modelzoo.mobilenet_v2_like(p, width=1.0, resolution=224),
    "bert_like_12": lambda p: modelzoo.bert_like(p, layers=12, hidden=256, heads=4, seq=128),
}


class PeakRss:
    """Peak resident memory of a process and all its children, sampled every 50 ms while in the `with` block."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self._run = pid, 0, False

    def _sample(self) -> None:
        import psutil

        root = psutil.Process(self.pid)
        while self._run:
            try:
                total = root.memory_info().rss + sum(c.memory_info().rss for c in root.children(recursive=True))
                self.peak = max(self.peak, total)
            except psutil.Error:  # a child ended between listing and reading
                pass
            time.sleep(0.05)

    def __enter__(self) -> PeakRss:
        self._run = True
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._run = False
        self._thread.join()


def cpu_seconds(pid: int) -> float:
    """CPU time of a process and its children that ended (the sandboxed parse, compile and profile children are
    waited for, so theirs counts): on a loaded machine the wall clock mostly measures the other tenants."""
    import psutil

    t = psutil.Process(pid).cpu_times()
    return t.user + t.system + t.children_user + t.children_system


TARGETS = ["ort-cpu/host"]


def _upload(server: LiveServer, path: Path) -> tuple[str, float, float]:
    """-> (model id, upload-to-ready seconds, slowest answer to a status poll meanwhile: the embedded worker shares
    the web process, so a long call holding the GIL there keeps readers waiting)."""
    t0 = time.perf_counter()
    with open(path, "rb") as f:
        r = server.http.post(f"{server.url}/api/models", files={"file": (path.name, f)},
                             data={"targets": json.dumps(TARGETS)}, timeout=600)
    r.raise_for_status()
    mid, slowest = r.json()["id"], 0.0
    while True:
        t = time.perf_counter()
        try:
            m = server.http.get(f"{server.url}/api/models/{mid}", timeout=600).json()
        finally:
            slowest = max(slowest, time.perf_counter() - t)
        if m["status"] in ("ready", "failed"):
            break
        time.sleep(0.1)
    if m["status"] != "ready":
        raise SystemExit(f"{path.name} failed: {m['error']}")
    return mid, time.perf_counter() - t0, slowest


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3, help="uploads per model (median reported)")
    ap.add_argument("--runs", type=int, default=30, help="profiled runs per upload")
    ap.add_argument("--scale", default="", help="scale model sizes, e.g. 50000,200000 (see the module's doc)")
    ap.add_argument("--all-targets", action="store_true", help="every default ONNX target, not only ort-cpu/host")
    ap.add_argument("--only-scale", action="store_true", help="only the --scale models")
    ap.add_argument("--calibration", type=Path, help="a host calibration cache to start from (skips ~100 s); "
                    "its LiteRT cache beside it is copied too")
    a = ap.parse_args()
    if a.all_targets:
        from compiler.vocabulary.targets import default_targets

        TARGETS[:] = default_targets("onnx")
    models = {} if a.only_scale else dict(MODELS)
    for n in filter(None, a.scale.split(",")):
        k = int(n)
        if k >= 100_000:
            models[f"llm_like_{k}"] = lambda p, k=k: llm_like(p, k)
        else:
            models[f"large_chain_{k}"] = lambda p, k=k: modelzoo.large_chain(p, n_nodes=k)

    with tempfile.TemporaryDirectory(prefix="edgescope-bench-") as d:
        tmp = Path(d)
        (tmp / "data").mkdir()
        if a.calibration:
            (tmp / "data" / "calibration").mkdir()
            shutil.copy(a.calibration, tmp / "data" / "calibration" / "host-cpu.json")
            # The server's warm-up calibrates LiteRT's kernels too (simulator.litert_calibration): in a thread of
            # the process that runs the job, so without its cache beside the host's it ran through the measured
            # analysis and took the CPU and the GIL from it (py-spy: ~70 s of that thread during a 50,000-node job).
            litert = cache_path(a.calibration)
            if litert.is_file():
                shutil.copy(litert, cache_path(tmp / "data" / "calibration" / "host-cpu.json"))
            else:
                print(f"no {litert.name} beside {a.calibration}: LiteRT calibrates during the figures", flush=True)
        # The live server of the tests: `edgescope serve` on the embedded default, signed in with a token.
        # The product's rounds of the fast CPU time (the tests' servers time none): part of a user's profile stage.
        server = start_server(tmp / "data", {"EDGESCOPE_PROFILE_RUNS": str(a.runs), "EDGESCOPE_PROFILE_WARMUP": "5",
                                             "EDGESCOPE_PROFILE_FAST_ROUNDS": str(FAST_ROUNDS)})
        try:
            # The first job calibrates the host once; keep it out of the figures.
            warm = tmp / "warm.onnx"
            modelzoo.tiny_cnn(warm)
            _upload(server, warm)
            print(f"targets: {', '.join(TARGETS)}")
            print(f"{'model':<20} {'MB':>6} {'tasks':>6} {'ready s':>8} {'parse':>6} {'compile':>7} {'profile':>7} "
                  f"{'simulate':>8} {'store':>6} {'CV med':>7} {'sum/whole':>9} {'peak GB':>7} {'CPU s':>6} {'poll s':>6}")
            for name, build in models.items():
                path = tmp / f"{name}.onnx"
                build(path)
                totals, stages, cvs, ratios, tasks, peaks, cpus, polls = [], {}, [], [], 0, [], [], []
                for _ in range(a.repeats):
                    cpu0 = cpu_seconds(server.proc.pid)
                    with PeakRss(server.proc.pid) as rss:
                        mid, secs, poll = _upload(server, path)
                    polls.append(poll)
                    cpus.append(cpu_seconds(server.proc.pid) - cpu0)
                    peaks.append(rss.peak / 1e9)
                    totals.append(secs)
                    m = server.get(f"/api/models/{mid}").json()
                    for st in m["stages"]:
                        stages.setdefault(st["name"], []).append(st["seconds"] or 0.0)
                    ops = server.get(f"/api/models/{mid}/ops").json()
                    tasks = len(ops["ops"])
                    timed = [o for o in ops["ops"] if o["measured"] and o["latency_ms"] > 0]
                    # Spread per task: IQR / median (a robust coefficient of variation).
                    cvs.append(statistics.median((o["p75_ms"] - o["p25_ms"]) / o["latency_ms"] for o in timed))
                    ratios.append(sum(o["latency_ms"] for o in timed) / ops["latency_ms"])
                med = statistics.median
                print(f"{name:<20} {path.stat().st_size / 1e6:6.1f} {tasks:6d} {med(totals):8.2f} "
                      f"{med(stages['parse']):6.2f} {med(stages['compile']):7.2f} {med(stages['profile']):7.2f} "
                      f"{med(stages['simulate']):8.2f} {med(stages['store']):6.2f} {med(cvs):7.1%} {med(ratios):9.3f} "
                      f"{max(peaks):7.2f} {med(cpus):6.1f} {max(polls):6.1f}", flush=True)
        finally:
            server.proc.terminate()
            server.proc.wait(20)
    print("\nCV med: median over tasks of IQR/median of the task's per-run times. "
          "sum/whole: sum of task medians / whole-model median (1.0 = agree). peak GB: the server's resident memory "
          "with all its children, highest over the repeats (the idle server's own included). CPU s: the server's CPU "
          "time with its children's from upload to ready (the seconds a loaded machine does not inflate). poll s: the "
          "slowest answer to a status request during the analysis.")


if __name__ == "__main__":
    main()
