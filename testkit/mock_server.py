"""A stand-in for `edgescope serve` that speaks docs/api.md with synthetic data.

For developing the web UI and for benchmarks/ui.py before (or without) the real server. Stdlib only.
Uploads: a JSON file `{"mock": {"n": 1000, "flat": false, "fail": null}}` makes a synthetic model of n tasks
(`flat` drops namespaces; `fail` names a stage to fail at); any other file that does not start with an ONNX-ish
byte is refused with 415, like the real server.

    python testkit/mock_server.py --port 8765 --dist web/dist [--preload 1000,10000:flat,200000:llm]

`N:llm` preloads a model of N tasks with a decoder's structure (benchmarks/pipeline.py's `llm_like`).
"""
from __future__ import annotations

import argparse
import email.parser
import email.policy
import json
import math
import mimetypes
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

STAGES = ["parse", "compile", "profile", "simulate", "store"]
TARGETS = ["ort-cpu/host", "coreml/apple-a17"]
ACT = ["fp32", "fp16", "int8"]
KERNELS = ["fp32", "fp16", "int8", "int4", "lut2", "lut4", "lut8"]
KBITS = {"fp32": 32, "fp16": 16, "int8": 8, "int4": 4, "lut2": 2, "lut4": 4, "lut8": 8, "-": 0}
ABYTES = {"fp32": 4, "fp16": 2, "int8": 1}
PRESETS = [
    ("fp32", "fp32", "fp32", "fp32", 0, "No optimization (the unoptimized model)."),
    ("fp16", "fp16", "fp16", "fp16", 0, "Half precision activations and weights."),
    ("int8-dynamic", "fp32", "fp32", "int8", 0, "int8 weights; activations quantized on the fly."),
    ("int8-static", "int8", "int8", "int8", 0, "int8 weights and activations, calibrated."),
    ("int4-weights", "fp32", "fp32", "int4", 0, "4-bit weights, float activations."),
    ("palettize-4bit", "fp32", "fp32", "lut4", 0, "Weights palettized to a 16-entry look-up table."),
    ("prune-50", "fp32", "fp32", "fp32", 50, "Half of the weights pruned."),
    ("prune-50+int8-static", "int8", "int8", "int8", 50, "Pruned 50%, then int8 static."),
]
MOCK_ME = {"user": {"id": "u1", "email": "dev@example.com", "name": "dev", "is_admin": True},
           "csrf_token": "mock", "allow_signup": True}
BLOCK_TYPES = ["FusedConv", "DepthwiseConv", "FusedConv", "Add"]


def _h(*xs) -> float:
    """Deterministic pseudo-random in [0, 1)."""
    v = 2166136261
    for ch in "|".join(map(str, xs)).encode():
        v = ((v ^ ch) * 16777619) & 0xFFFFFFFF
    return v / 2**32


def llm_layout(n: int) -> list[tuple[str, str, list[int]]]:
    """(type, namespace, input op indices) of n ops laid out as benchmarks/pipeline.py's `llm_like` writes a decoder:
    per layer RMSNorm, q/k/v projections split into heads, attention, o_proj and a residual Add, RMSNorm, a SwiGLU
    MLP and a residual Add, under `model/layers.{i}/...` as a Hugging Face export names them; a final norm."""
    ops: list[tuple[str, str, list[int]]] = []

    def op(kind: str, ins: list[int], scope: str) -> int:
        ops.append((kind, f"model/{scope}", [i for i in ins if i >= 0]))
        return len(ops) - 1

    def rms(x: int, scope: str) -> int:
        mean = op("ReduceMean", [op("Pow", [x], scope)], scope)
        r = op("Sqrt", [op("Add", [mean], scope)], scope)
        return op("Mul", [op("Div", [x, r], scope)], scope)

    x, layer = -1, 0
    while len(ops) < n - 45:
        at, mlp = f"layers.{layer}/self_attn", f"layers.{layer}/mlp"
        h = rms(x, f"layers.{layer}/input_layernorm")
        q, k, v = (op("Transpose", [op("Reshape", [op("MatMul", [h], f"{at}/{p}_proj")], at)], at) for p in "qkv")
        scores = op("Add", [op("Div", [op("MatMul", [q, op("Transpose", [k], at)], at)], at)], at)
        ctx = op("MatMul", [op("Softmax", [scores], at), v], at)
        merged = op("Reshape", [op("Transpose", [ctx], at)], at)
        x = op("Add", [x, op("MatMul", [merged], f"{at}/o_proj")], f"layers.{layer}")
        h = rms(x, f"layers.{layer}/post_attention_layernorm")
        gate = op("MatMul", [h], f"{mlp}/gate_proj")
        silu = op("Mul", [gate, op("Sigmoid", [gate], f"{mlp}/act_fn")], f"{mlp}/act_fn")
        up = op("MatMul", [h], f"{mlp}/up_proj")
        x = op("Add", [x, op("MatMul", [op("Mul", [silu, up], mlp)], f"{mlp}/down_proj")], f"layers.{layer}")
        layer += 1
    while len(ops) < n:
        x = rms(x, "norm") if len(ops) + 7 <= n else op("Mul", [x], "norm")
    return ops[:n]


class Synthetic:
    def __init__(self, n: int, flat: bool, seed: str, llm: bool = False):
        self.n, self.flat, self.seed = n, flat, seed
        self.ops, self.nodes, self.edges = [], [], []
        if llm:  # a decoder's structure (benchmarks/pipeline.py's llm_like), tiny tensors
            for i, (typ, ns, ins) in enumerate(llm_layout(n)):
                name = f"/{ns}/{typ}_{i}"
                weighted = typ == "MatMul" and "_proj" in ns
                lat = 0.002 + 0.02 * _h(seed, i, "lat") * (4 if weighted else 1)
                self.ops.append(dict(id=f"t{i}", index=i, name=name, type=typ, namespace=ns, weighted=weighted,
                                     elems=32, w32=(8 * 32 * 4 if weighted else 0), lat=lat))
                self.nodes.append(dict(id=f"t{i}", name=name, type=typ, namespace=ns, source_nodes=[name]))
                self.edges += [(a, i, 32) for a in ins]
            return
        block = 0
        for i in range(n):
            last = i == n - 1
            typ = "Gemm" if last else ("Conv" if i == 0 else BLOCK_TYPES[i % 4])
            block = i // 4
            stage = block // 16
            ns = "" if flat else f"stage{stage}/block{block % 16}"
            name = f"{typ}_{i}" if flat else f"/{ns}/{typ}_{i}"
            weighted = typ in ("Conv", "FusedConv", "DepthwiseConv", "Gemm")
            ch = 16 * (1 + stage % 8)
            hw = max(7, 112 >> min(4, stage))
            elems = ch * hw * hw
            w32 = (ch * ch * 9 * 4 if typ != "DepthwiseConv" else ch * 9 * 4) if weighted else 0
            lat = 0.01 + 0.3 * _h(seed, i, "lat") * (2.5 if typ == "FusedConv" else 1)
            self.ops.append(dict(id=f"t{i}", index=i, name=name, type=typ, namespace=ns, weighted=weighted,
                                 elems=elems, w32=w32, lat=lat))
            self.nodes.append(dict(id=f"t{i}", name=name, type=typ, namespace=ns, source_nodes=[name]))
            if i > 0:
                self.edges.append((i - 1, i, elems))
            if typ == "Add" and i >= 3:
                self.edges.append((i - 3, i, elems))

    def metric(self, i, inp, out, kernel, sp):
        op = self.ops[i]
        act_scale = (ABYTES[inp] + ABYTES[out]) / 8
        k_scale = KBITS[kernel] / 32 if op["weighted"] else 0
        dens = 1 - sp / 100
        jit = 0.9 + 0.2 * _h(self.seed, i, inp, out, kernel, sp)
        lat = op["lat"] * (0.35 + 0.4 * act_scale + (0.25 * (0.5 + k_scale) * (0.6 + 0.4 * dens) if op["weighted"] else 0.25)) * jit
        wb = (math.ceil(op["w32"] * k_scale * dens) + (4 * 2 ** KBITS[kernel] if kernel.startswith("lut") else 0)) if op["weighted"] else 0
        ab = op["elems"] * (ABYTES[inp] + ABYTES[out])
        return round(lat, 9), wb, ab, wb + ab + op["elems"] // 3

    def preset_combo(self, i, p):
        name, inp, out, kernel, sp, _ = p
        op = self.ops[i]
        if op["weighted"]:
            return f"{inp}/{out}/{kernel}/{sp}", True
        ok = name in ("fp32", "fp16", "int8-static", "int8-dynamic")
        return (f"{inp}/{out}/-/0" if ok or name.startswith("prune") else "fp32/fp32/-/0"), ok

    def options(self, target):
        m = {k: [] for k in ("latency_ms", "weight_bytes", "activation_bytes", "dram_bytes")}
        sup, combos = [], []
        for i in range(self.n):
            rows = [[], [], [], []]
            s, c = [], []
            for p in PRESETS:
                combo, ok = self.preset_combo(i, p)
                inp, out, k, sp = combo.split("/")
                for r, v in zip(rows, self.metric(i, inp, out, k, int(sp))):
                    r.append(v)
                s.append(ok)
                c.append(combo)
            for key, r in zip(m, rows):
                m[key].append(r)
            sup.append(s)
            combos.append(c)
        mpe = {f"{a}>{b}": 1e-7 * (1 + 0.3 * _h(a, b)) for a in ACT for b in ACT if a != b}
        # like an accelerator target: depthwise convs on the GPU, the classifier falling back to the CPU
        unit_names = ["cpu"] if target == TARGETS[0] else ["ane", "gpu", "cpu"]
        unit_of = {"Gemm": "cpu", "DepthwiseConv": "gpu"}
        units = [[unit_names[0] if len(unit_names) == 1 else unit_of.get(o["type"], "ane")] * len(PRESETS) for o in self.ops]
        return {"schema": 2, "target": target,
                "label": {"kind": "predicted", "profile": "mock-cpu", "error_pct_median": 7.2, "error_models": 14},
                "ops": [o["id"] for o in self.ops],
                "presets": [dict(zip(("name", "input", "output", "kernel", "sparsity", "description"), p)) for p in PRESETS],
                "metrics": m, "supported": sup, "combos": combos, "unit_names": unit_names, "units": units,
                "edges": {"src": [e[0] for e in self.edges], "dst": [e[1] for e in self.edges], "elements": [e[2] for e in self.edges]},
                "conversion": {"fixed_ms": 0.002, "ms_per_element": mpe},
                "constants": {"dram_pj_per_byte": 20.0, "size_overhead_bytes": 4096},
                "base": {"preset": "fp32", "latency_ms": 0, "peak_memory_bytes": 0, "memory_power_mw": 0, "size_bytes": 0}}

    def op_options(self, i):
        op = self.ops[i]
        t = {"op": op["id"], "combos": [], "supported": [], "latency_ms": [], "weight_bytes": [],
             "activation_bytes": [], "dram_bytes": [], "notes": []}
        for inp in ACT:
            for out in ACT:
                for k in (KERNELS if op["weighted"] else ["-"]):
                    for sp in ((0, 50) if op["weighted"] else (0,)):
                        v = self.metric(i, inp, out, k, sp)
                        t["combos"].append(f"{inp}/{out}/{k}/{sp}")
                        t["supported"].append(not (op["type"] == "DepthwiseConv" and k.startswith("lut")))
                        for key, x in zip(("latency_ms", "weight_bytes", "activation_bytes", "dram_bytes"), v):
                            t[key].append(x)
        if op["type"] == "DepthwiseConv":
            t["notes"].append("Palettized depthwise kernels are dequantized at load on this target.")
        return t

    def ops_table(self, target):
        fp = PRESETS[0]
        ops = []
        total = sum(self.metric(i, "fp32", "fp32", self.preset_combo(i, fp)[0].split("/")[2], 0)[0] for i in range(self.n))
        for i, o in enumerate(self.ops):
            combo = self.preset_combo(i, fp)[0].split("/")
            lat, wb, ab, _ = self.metric(i, "fp32", "fp32", combo[2], 0)
            ops.append(dict(id=o["id"], index=i, name=o["name"], type=o["type"], namespace=o["namespace"],
                            latency_ms=lat, p25_ms=lat * 0.97, p75_ms=lat * 1.04, share=lat / total, measured=True,
                            macs=int(o["elems"] * (o["w32"] // 4 or 1) // 16), weight_bytes=wb, activation_bytes=ab,
                            source_nodes=[o["name"]],
                            inputs=[{"name": f"x{i}", "shape": [1, 16, 8, 8], "dtype": "float32"}],
                            outputs=[{"name": f"x{i+1}", "shape": [1, 16, 8, 8], "dtype": "float32"}]))
        return {"target": target, "measured": True, "label": "measured: mock runtime", "latency_ms": total, "ops": ops}

    def graph(self):
        return {"view": "compiled", "nodes": self.nodes,
                "edges": [{"src": f"t{s}", "dst": f"t{d}", "value": f"x{s+1}", "shape": [1, el], "dtype": "float32"}
                          for s, d, el in self.edges],
                "inputs": ["input"], "outputs": ["logits"]}

    def graph_columns(self):
        return {"view": "compiled", "ids": [n["id"] for n in self.nodes], "names": [n["name"] for n in self.nodes],
                "types": [n["type"] for n in self.nodes], "namespaces": [n["namespace"] for n in self.nodes],
                "src": [e[0] for e in self.edges], "dst": [e[1] for e in self.edges]}


class Store:
    def __init__(self, stage_seconds: float):
        self.models: dict[str, dict] = {}
        self.synth: dict[str, Synthetic] = {}
        self.cache: dict[tuple, bytes] = {}
        self.stage_seconds = stage_seconds
        self.lock = threading.Lock()

    def add(self, name: str, size: int, n: int, flat: bool, fail: str | None, host: str, instant=False, llm=False) -> dict:
        mid = secrets.token_urlsafe(8)
        m = {"id": mid, "url": f"http://{host}/m/{mid}", "name": name, "format": "onnx", "size_bytes": size,
             "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "status": "queued", "stage": "parse",
             "progress": 0, "error": None, "stages": [{"name": s, "status": "pending", "seconds": None} for s in STAGES],
             "targets": TARGETS, "summary": None, "_t0": time.time() - (1e6 if instant else 0), "_fail": fail, "_n": n}
        self.models[mid] = m
        self.synth[mid] = Synthetic(n, flat, mid, llm)
        return m

    def view(self, m: dict) -> dict:
        el = (time.time() - m["_t0"]) / max(self.stage_seconds, 1e-9)
        done = int(el)
        for k, st in enumerate(m["stages"]):
            if m["_fail"] == st["name"] and done >= k:
                st["status"] = "failed"
                m["status"], m["stage"] = "failed", st["name"]
                m["error"] = f"{st['name']} failed: operator 'FancyOp' (node '/block3/FancyOp_7') is not supported by ort-cpu/host"
                break
            st["status"] = "done" if done > k else "running" if done == k else "pending"
            st["seconds"] = round(self.stage_seconds, 2) if done > k else None
        if m["status"] != "failed":
            if done >= len(STAGES):
                m["status"], m["stage"], m["progress"] = "ready", "done", 100
                if m["summary"] is None:
                    s = self.synth[m["id"]]
                    t = s.ops_table(TARGETS[0])
                    m["summary"] = {"source_op_count": s.n, "task_count": s.n, "weight_bytes": sum(o["w32"] for o in s.ops),
                                    "inputs": {"input": [1, 3, 224, 224]},
                                    "targets": [{"target": x, "latency_ms": t["latency_ms"], "latency_p90_ms": t["latency_ms"] * 1.07,
                                                 "peak_memory_bytes": 30_000_000, "measured": x == TARGETS[0],
                                                 "label": "measured: mock runtime" if x == TARGETS[0] else "predicted: mock"} for x in TARGETS]}
            else:
                m["status"] = "running" if done > 0 else "queued"
                m["stage"] = STAGES[min(done, len(STAGES) - 1)]
                m["progress"] = int(100 * el / len(STAGES))
        return {k: v for k, v in m.items() if not k.startswith("_")}


def make_handler(store: Store, dist: Path):
    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def send(self, code, body: bytes, ctype="application/json"):
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def json(self, code, obj):
            self.send(code, json.dumps(obj).encode())

        def err(self, code, msg, c):
            self.json(code, {"error": msg, "code": c})

        def do_GET(self):
            u = urlparse(self.path)
            q = {k: v[0] for k, v in parse_qs(u.query).items()}
            p = u.path.rstrip("/").split("/")
            if u.path.startswith("/api/"):
                with store.lock:
                    return self.api_get(p, q)
            f = dist / u.path.lstrip("/") if u.path.startswith("/assets/") else dist / "index.html"
            if not f.is_file():
                return self.send(404, b"not found", "text/plain")
            self.send(200, f.read_bytes(), mimetypes.guess_type(f.name)[0] or "application/octet-stream")

        def api_get(self, p, q):
            if p == ["", "api", "auth", "me"]:
                if "mock_session=1" not in (self.headers.get("Cookie") or ""):
                    return self.err(401, "Sign in first.", "sign_in_required")
                return self.json(200, MOCK_ME)
            if p == ["", "api", "models"]:
                ms = sorted(store.models.values(), key=lambda m: m["_t0"], reverse=True)
                return self.json(200, {"models": [store.view(m) for m in ms]})
            if len(p) < 4 or p[3] not in store.models:
                return self.err(404, "No such model.", "not_found")
            m = store.models[p[3]]
            v = store.view(m)
            if len(p) == 4:
                return self.json(200, v)
            if v["status"] != "ready":
                return self.err(409, f"Model is {v['status']}; results are not ready.", "not_ready")
            s = store.synth[m["id"]]
            target = q.get("target", TARGETS[0])
            if target not in TARGETS:
                return self.err(400, f"Unknown target {target!r}.", "bad_target")
            columns = q.get("format") == "columns"
            key = (m["id"], tuple(p[4:]), target, columns)
            if key not in store.cache:
                if p[4:] == ["ops"]:
                    obj = s.ops_table(target)
                elif p[4:] == ["graph"]:
                    obj = s.graph_columns() if columns else s.graph()
                elif p[4:] == ["options"]:
                    obj = s.options(target)
                elif len(p) == 7 and p[4] == "ops" and p[6] == "options":
                    idx = int(p[5][1:]) if p[5][1:].isdigit() else -1
                    if not 0 <= idx < s.n:
                        return self.err(404, "No such op.", "not_found")
                    obj = s.op_options(idx)
                else:
                    return self.err(404, "Not found.", "not_found")
                store.cache[key] = json.dumps(obj).encode()
            self.send(200, store.cache[key])

        def do_POST(self):
            if urlparse(self.path).path in ("/api/auth/login", "/api/auth/signup"):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                body = json.dumps(MOCK_ME).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Set-Cookie", "mock_session=1; Path=/; HttpOnly; SameSite=Lax")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                return self.wfile.write(body)
            if urlparse(self.path).path == "/api/auth/logout":
                return self.send(204, b"")
            if urlparse(self.path).path != "/api/models":
                return self.err(404, "Not found.", "not_found")
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
                f"Content-Type: {self.headers['Content-Type']}\r\n\r\n".encode() + body)
            files = {part.get_param("name", header="content-disposition"): part for part in msg.iter_parts()}
            f = files.get("file")
            if f is None:
                return self.err(400, "No file in the upload (form field 'file').", "no_file")
            data = f.get_payload(decode=True) or b""
            if not data:
                return self.err(400, "The uploaded file is empty.", "empty_file")
            spec = {"n": 60, "flat": False, "fail": None}
            if data[:1] == b"{":
                try:
                    spec.update(json.loads(data)["mock"])
                except (ValueError, KeyError):
                    return self.err(415, "Not a model format we read (supported: onnx, tflite, coreml, torch).", "unsupported_format")
            elif not data.startswith(b"\x08"):
                return self.err(415, "Not a model format we read (supported: onnx, tflite, coreml, torch).", "unsupported_format")
            with store.lock:
                m = store.add(f.get_filename() or "model.onnx", len(data), int(spec["n"]), bool(spec["flat"]), spec["fail"],
                              self.headers.get("Host", "localhost"))
                self.json(201, store.view(m))

        def do_DELETE(self):
            p = urlparse(self.path).path.split("/")
            with store.lock:
                if len(p) == 4 and store.models.pop(p[3], None):
                    return self.send(204, b"")
            self.err(404, "No such model.", "not_found")

    return H


def serve(port: int, dist: Path, stage_seconds=0.4, preload: str = "") -> ThreadingHTTPServer:
    store = Store(stage_seconds)
    for spec in filter(None, preload.split(",")):
        n, _, flag = spec.partition(":")  # N, N:flat (no namespaces) or N:llm (a decoder's structure)
        store.add(f"mock-{n}{'-' + flag if flag else ''}.onnx", 1000, int(n), flag == "flat", None, f"127.0.0.1:{port}",
                  instant=True, llm=flag == "llm")
    srv = ThreadingHTTPServer(("127.0.0.1", port), make_handler(store, dist))
    srv.store = store  # type: ignore[attr-defined]
    return srv


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--dist", default=str(Path(__file__).resolve().parents[1] / "web" / "dist"))
    ap.add_argument("--stage-seconds", type=float, default=0.4)
    ap.add_argument("--preload", default="")
    a = ap.parse_args()
    s = serve(a.port, Path(a.dist), a.stage_seconds, a.preload)
    print(f"mock edgescope on http://127.0.0.1:{a.port}", flush=True)
    s.serve_forever()
