"""Check a written ONNX file before it is called an export: it loads and runs in ONNX Runtime, and its ops are
what the options promise on the nodes they were asked for. A failed check is an OptionError in one sentence."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto

from compiler.optimize.onnx_prepare import crash_sentence, one_line
from compiler.vocabulary.options import OptionError

_DYNAMIC_OPS = frozenset({"ConvInteger", "MatMulInteger", "DynamicQuantizeMatMul", "MatMulIntegerToFloat"})


def check_runs(path: Path, feed: Mapping[str, np.ndarray]) -> None:
    """The written file loads and runs in ONNX Runtime, in a sandboxed child: ORT can crash on a file it should
    refuse (the fp16 export of a CRNN's LSTM segfaulted in InferenceSession, taking `edgescope optimize` and the
    server's embedded worker down with it); a crash is then an OptionError like any refusal."""
    import tempfile

    from compiler import sandbox
    from compiler.errors import SandboxError

    if os.environ.get(sandbox.IN_CHILD):  # already in a child (the analysis' export check)
        return run_here(path, feed)
    with tempfile.TemporaryDirectory(prefix="edgescope-check-", dir=sandbox.scratch()) as d:
        f = Path(d) / "feed.npz"
        np.savez(f, **dict(feed))
        payload = {"model": os.fspath(Path(path).resolve()), "feed": os.fspath(f)}
        try:
            why = sandbox.run("compiler.optimize.onnx_verify:check_child", payload,
                              sandbox.Limits(timeout_s=600, what="the written file's check run"))
        except SandboxError as e:
            raise OptionError(crash_sentence("the written file", e)) from e
    if why:
        raise OptionError(why)


def check_child(payload: dict[str, str]) -> str | None:
    """Sandbox child of check_runs: None, or why the file does not load or run."""
    with np.load(payload["feed"]) as z:
        feed = {k: z[k] for k in z.files}
    try:
        run_here(Path(payload["model"]), feed)
    except OptionError as e:
        return str(e)
    return None


def run_here(path: Path, feed: Mapping[str, np.ndarray]) -> None:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    try:
        s = ort.InferenceSession(os.fspath(path), so, providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001 - ORT's refusal is the finding
        raise OptionError(f"the written file does not load in ONNX Runtime ({one_line(e)})") from e
    names = {i.name for i in s.get_inputs()}
    try:
        s.run(None, {k: v for k, v in feed.items() if k in names})
    except Exception as e:  # noqa: BLE001
        raise OptionError(f"the written file loads but does not run in ONNX Runtime ({one_line(e)})") from e


def check_ops(path: Path, static: list[str], dynamic: list[str], fp16: list[str], int4: list[str],
              lut: list[str], kernels: Mapping[str, str], model: onnx.ModelProto | None = None) -> None:
    """`static` ... `lut`: node names asked for each kind of option that have a weight (`kernels`: node name ->
    its weight initializer in the prepared model). Raises naming the first node the file does not honour.
    `model`: the file at `path`, loaded already (without its external data)."""
    m = model if model is not None else onnx.load(os.fspath(path), load_external_data=False)
    producer = {o: n for n in m.graph.node for o in n.output}
    inits = {t.name: t for t in m.graph.initializer}
    by_name = {n.name: n for n in m.graph.node}
    dyn_ops = sum(n.op_type in _DYNAMIC_OPS for n in m.graph.node)
    nbits = sum(n.op_type == "MatMulNBits" for n in m.graph.node)

    def fail(name: str, what: str) -> None:
        raise OptionError(f"the written file does not have what the option promises: {name} {what}")

    for name in static:
        n = by_name.get(name)
        if n is None or len(n.input) < 2:
            fail(name, "is missing after static quantization")
        w = producer.get(n.input[1])
        x = producer.get(n.input[0])
        if w is None or w.op_type != "DequantizeLinear" or x is None or x.op_type != "DequantizeLinear":
            fail(name, "is not between QuantizeLinear/DequantizeLinear pairs (int8-static)")
    if len({kernels[n] for n in dynamic}) > dyn_ops:
        left = [n for n in dynamic if n in by_name and by_name[n].op_type in ("Conv", "MatMul", "Gemm")]
        fail(left[0] if left else dynamic[0], "kept float weights (no ConvInteger / MatMulInteger for it)")
    for name in fp16:
        n = by_name.get(name)
        w = inits.get(n.input[1]) if n is not None and len(n.input) > 1 else None
        if w is None or w.data_type != TensorProto.FLOAT16:
            fail(name, "has no fp16 weight initializer")
    if len({kernels[n] for n in int4}) > nbits:
        fail(int4[0], "has no MatMulNBits (int4 weights)")
    for name in lut:
        if not any(t.startswith(f"{kernels[name]}__lut") for t in inits):
            fail(name, "has no palette table and indices")
