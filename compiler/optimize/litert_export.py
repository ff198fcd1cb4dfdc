"""Write the optimized `.tflite` for a LiteRT target with LiteRT's own quantizer, `ai-edge-quantizer`
(no TensorFlow). One recipe entry per choice: the model-wide option as regex `.*`, then one entry
per overridden operator, its regex the operator's scope (its output tensor names joined by ';',
as the quantizer names ops); the quantizer applies the last entry that matches an op.

Options the quantizer supports: fp32 (no quantization), fp16 weights (float casting), int8-dynamic
(int8 per-channel weights, activations quantized at run time), int8-static (int8 weights and
activations, calibrated on generated inputs) and int4-weights (int4 per-channel weights,
dequantized to float). Palettization and pruning are not in its recipes: refused with the list.

Quantization runs in the sandbox (it parses the untrusted flatbuffer and, for int8-static, runs it
in the LiteRT interpreter to calibrate).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compiler.optimize.choices import Choice, resolve_option
from compiler.sandbox import DEFAULT_MEMORY_LIMIT, Limits, run
from simulator.options import OptionError

FLOAT_FORMAT = "fp32"  # LiteRT CPU's float
SUPPORTED = ("fp32", "fp16", "int8-dynamic", "int8-static", "int4-weights")
CALIBRATION_SAMPLES = 8
SIGNATURE_KEY = "serving_default"  # the quantizer calibrates through a signature runner


@dataclass
class LiteRtExport:
    path: Path
    size_bytes: int
    choices: dict[str, str]  # task id ("CONV_2D_0") or "*" -> recipe applied
    notes: list[str] = field(default_factory=list)


def recipe_kind(c: Choice) -> str | None:
    """The quantizer recipe for one choice: "float" | "fp16" | "dynamic8" | "static8" | "weights4", or
    None where ai-edge-quantizer has no recipe for it."""
    k = c.combo
    if k.sparsity or k.kernel.startswith("lut"):
        return None
    if k.input == "int8":
        return "static8" if k.kernel in ("int8", "-") else None
    if k.kernel == "int8":
        return "dynamic8"
    if k.kernel == "int4":
        return "weights4"
    if k.kernel == "fp16" or (k.kernel == "-" and k.input == "fp16"):
        return "fp16"
    return "float"


def _unsupported(option: str, where: str) -> OptionError:
    return OptionError(f"{option!r}{where} cannot be exported for LiteRT: ai-edge-quantizer has no recipe for "
                       f"palettization or pruning. Supported: {', '.join(SUPPORTED)} (or a combo of those "
                       f"formats with sparsity 0, e.g. int8/int8/int8/0)")


def check_options(model_wide: str, overrides: Mapping[str, str]) -> dict[str, str]:
    """{"*" or op: recipe kind}; raises OptionError naming the supported options."""
    kind = recipe_kind(resolve_option(model_wide, FLOAT_FORMAT, True))
    if kind is None:
        raise _unsupported(model_wide, "")
    out = {"*": kind}
    for op, option in overrides.items():
        # A combo with kernel "-" is an op without weights; anything else is read as a weighted op.
        k = recipe_kind(resolve_option(option, FLOAT_FORMAT, option.split("/")[2:3] != ["-"]))
        if k is None:
            raise _unsupported(option, f" (override of {op})")
        out[op] = k
    return out


def op_index(task_id: str) -> int:
    """`CONV_2D_3` -> 3: the TFLite frontend names each operator `<OPCODE>_<index in subgraph 0>`."""
    try:
        return int(task_id.rsplit("_", 1)[1])
    except (IndexError, ValueError):
        raise OptionError(f"{task_id!r} is not a TFLite operator id (like CONV_2D_0)") from None


def export_tflite(src: str | os.PathLike[str], out_path: str | os.PathLike[str], model_wide: str,
                  overrides: Mapping[str, str] | None = None, input_shapes: Mapping[str, list[int]] | None = None,
                  input_values: Mapping[str, Any] | None = None, timeout_s: float = 600.0,
                  memory_limit_bytes: int | None = DEFAULT_MEMORY_LIMIT) -> LiteRtExport:
    """Quantize `src` into `out_path`. Overrides: {operator id: option}."""
    kinds = check_options(model_wide, dict(overrides or {}))
    per_op = {op_index(op): k for op, k in kinds.items() if op != "*"}
    info = run("compiler.optimize.litert_export:_export_child",
               {"src": os.path.abspath(src), "out": os.path.abspath(out_path), "model_wide": kinds["*"],
                "per_op": {str(i): k for i, k in per_op.items()}, "shapes": dict(input_shapes or {}),
                "values": dict(input_values or {})},
               Limits(timeout_s, memory_limit_bytes, what="quantizing with ai-edge-quantizer"))
    out = Path(out_path)
    return LiteRtExport(out, out.stat().st_size, kinds, info["notes"])


def _add(qt: Any, regex: str, kind: str) -> None:
    from ai_edge_quantizer import qtyping
    from ai_edge_quantizer.algorithm_manager import AlgorithmName

    if kind == "float":
        qt.update_quantization_recipe(regex, "*", None, AlgorithmName.NO_QUANTIZE)
    elif kind == "fp16":
        fp16 = qtyping.OpQuantizationConfig(
            weight_tensor_config=qtyping.TensorQuantizationConfig(num_bits=16, dtype=qtyping.TensorDataType.FLOAT),
            compute_precision=qtyping.ComputePrecision.FLOAT, explicit_dequantize=True)
        qt.update_quantization_recipe(regex, "*", fp16, AlgorithmName.FLOAT_CASTING)
    elif kind == "dynamic8":
        qt.add_dynamic_config(regex, "*", 8)
    elif kind == "static8":
        qt.add_static_config(regex, "*", activation_num_bits=8, weight_num_bits=8)
    elif kind == "weights4":
        # Channelwise: the quantizer's blockwise int4 leaves CONV_2D weights float on LiteRT 2.3.
        qt.add_weight_only_config(regex, "*", 4)
    else:  # pragma: no cover - recipe_kind lists the kinds
        raise ValueError(kind)


def with_signature(model_bytes: bytes) -> bytes:
    """The model with a `serving_default` signature over subgraph 0's inputs and outputs (files
    written without one, e.g. by hand, cannot be calibrated otherwise)."""
    import flatbuffers
    from ai_edge_litert import schema_py_generated as schema

    m = schema.ModelT.InitFromObj(schema.Model.GetRootAs(model_bytes, 0))
    if m.signatureDefs:
        return model_bytes
    sg = m.subgraphs[0]

    def maps(indices: Any) -> list[Any]:
        out = []
        for i in indices:
            tm = schema.TensorMapT()
            tm.name, tm.tensorIndex = sg.tensors[int(i)].name, int(i)
            out.append(tm)
        return out

    sig = schema.SignatureDefT()
    sig.inputs, sig.outputs = maps(sg.inputs), maps(sg.outputs)
    sig.signatureKey, sig.subgraphIndex = SIGNATURE_KEY.encode(), 0
    m.signatureDefs = [sig]
    b = flatbuffers.Builder(len(model_bytes) + 1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def _calibration_data(model_bytes: bytes, graph_path: str, shapes: dict[str, Any], values: dict[str, Any]
                      ) -> dict[str, list[dict[str, Any]]]:
    from ai_edge_litert.interpreter import Interpreter

    from compiler.frontends import tflite
    from compiler.inputs import generate_inputs

    graph = tflite.load(graph_path)
    runner = Interpreter(model_content=model_bytes).get_signature_runner(SIGNATURE_KEY)
    names = list(runner.get_input_details())  # signature input names, in subgraph input order
    samples = []
    for seed in range(CALIBRATION_SAMPLES):
        feeds = generate_inputs(graph, shapes, values, seed=seed)
        samples.append({n: a for n, a in zip(names, feeds.values())})
    return {SIGNATURE_KEY: samples}


def _export_child(payload: dict[str, Any]) -> dict[str, Any]:
    import contextlib
    import io

    from ai_edge_quantizer import quantizer

    from compiler.errors import ModelRunError

    src = Path(payload["src"]).read_bytes()
    notes: list[str] = []
    model = with_signature(src)
    qt = quantizer.Quantizer(bytearray(model))
    _add(qt, ".*", payload["model_wide"])
    if payload["per_op"]:
        from ai_edge_quantizer.utils import tfl_flatbuffer_utils as fu

        m = fu.read_model(bytearray(model))
        ops, tensors = m.subgraphs[0].operators, m.subgraphs[0].tensors
        for index, kind in payload["per_op"].items():
            i = int(index)
            if not 0 <= i < len(ops):
                raise ModelRunError(f"operator {i} is not in this model ({len(ops)} operators)")
            _add(qt, "^" + re.escape(fu.get_op_scope(ops[i], tensors)) + "$", kind)
    calibration = None
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink):
            if qt.need_calibration:
                data = _calibration_data(model, payload["src"], payload["shapes"], payload["values"])
                calibration = qt.calibrate(data, num_threads=1)
                notes.append(f"int8 activation ranges calibrated on {CALIBRATION_SAMPLES} generated inputs "
                             f"(random normal); calibrate on real data for accuracy")
            result = qt.quantize(calibration, enable_progress_report=False)
    except (ValueError, RuntimeError, KeyError) as e:
        raise ModelRunError(f"ai-edge-quantizer could not quantize the model: {str(e).strip()[:800]}") from None
    Path(payload["out"]).write_bytes(bytes(result.quantized_model))
    from ai_edge_litert.interpreter import Interpreter

    ints = [d["name"] for d in Interpreter(model_path=payload["out"]).get_input_details()
            if d["dtype"].__name__ in ("int8", "int16")]
    if ints:
        notes.append(f"input(s) {', '.join(ints)} are now quantized integers: scale and zero point in the file")
    if payload["model_wide"] == "fp16":
        notes.append("fp16 weights, dequantized to fp32 at load: activations stay fp32 in the file")
    return {"notes": notes}
