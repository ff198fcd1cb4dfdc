"""Write the optimized `.tflite` for a LiteRT target with LiteRT's own quantizer, `ai-edge-quantizer`
(no TensorFlow). One recipe entry per choice: the model-wide option as regex `.*`, then one entry
per overridden operator, its regex the operator's scope (its output tensor names joined by ';',
as the quantizer names ops); the quantizer applies the last entry that matches an op.

Options the quantizer supports: fp32 (no quantization), fp16 weights (float casting), int8-dynamic
(int8 per-channel weights, activations quantized at run time), int8-static (int8 weights and
activations, calibrated on generated inputs) and int4-weights (int4 per-channel weights,
dequantized to float). Palettization and pruning are not in its recipes: refused with the list
(compiler/optimize/litert_rules.py, which the option table marks by too).

Before quantizing, fp16 weights behind DEQUANTIZE are restored to fp32 constants (the quantizer only
quantizes constant kernels) and, for int8-static, dynamic input dims are fixed at the analysis's shapes
(compiler/optimize/litert_prepare.py). After, the written file must run once in the LiteRT interpreter
and store what the option promises (compiler/optimize/litert_check.py); else the export failed.

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

from compiler.optimize import litert_rules
from compiler.optimize.choices import Choice, resolve_option
from compiler.optimize.litert_rules import FLOAT_FORMAT
from compiler.sandbox import DEFAULT_MEMORY_LIMIT, Limits, run
from compiler.vocabulary.options import OptionError

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
    None where ai-edge-quantizer has no recipe for it (compiler.optimize.litert_rules)."""
    k = c.combo
    return litert_rules.recipe_kind(k.input, k.output, k.kernel, k.sparsity)


def _unsupported(option: str, where: str, c: Choice) -> OptionError:
    k = c.combo
    why = litert_rules.combo_reason(k.input, k.output, k.kernel, k.sparsity)
    return OptionError(f"{option!r}{where} cannot be exported for LiteRT: {why}")


def check_options(model_wide: str, overrides: Mapping[str, str]) -> dict[str, str]:
    """{"*" or op: recipe kind}; raises OptionError naming the supported options."""
    c = resolve_option(model_wide, FLOAT_FORMAT, True)
    kind = recipe_kind(c)
    if kind is None:
        raise _unsupported(model_wide, "", c)
    out = {"*": kind}
    for op, option in overrides.items():
        # A combo with kernel "-" is an op without weights; anything else is read as a weighted op.
        c = resolve_option(option, FLOAT_FORMAT, option.split("/")[2:3] != ["-"])
        k = recipe_kind(c)
        if k is None:
            raise _unsupported(option, f" (override of {op})", c)
        out[op] = k
    return out


def op_index(task_id: str) -> int:
    """`CONV_2D_3` -> 3: the TFLite frontend names each operator `<OPCODE>_<index in subgraph 0>`."""
    if "/" in task_id:  # `IF_25/then_branch/ADD_2`: an operator of an IF / WHILE body
        raise OptionError(f"{task_id!r} is inside an IF or WHILE body: per-operator options apply to the model's "
                          f"main graph only (the model-wide option covers the bodies)")
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
    try:
        info = run("compiler.optimize.litert_export:_export_child",
                   {"src": os.path.abspath(src), "out": os.path.abspath(out_path), "model_wide": kinds["*"],
                    "option": model_wide,
                    "per_op": {str(i): k for i, k in per_op.items()}, "shapes": dict(input_shapes or {}),
                    "values": dict(input_values or {})},
                   Limits(timeout_s, memory_limit_bytes, what="quantizing with ai-edge-quantizer"))
    except BaseException:
        # A file written and then failed its check is no export: none is left where the export goes (it stayed
        # and a later reader took a file LiteRT refuses for one).
        Path(out_path).unlink(missing_ok=True)
        raise
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
    from ai_edge_litert import schema_py_generated as schema

    from compiler.optimize.litert_prepare import read, write

    if schema.Model.GetRootAs(model_bytes, 0).SignatureDefsLength():
        return model_bytes
    m = read(model_bytes)
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
    return write(m, len(model_bytes))


def _feeds(graph_path: str, shapes: dict[str, Any], values: dict[str, Any], seed: int) -> list[Any]:
    """Generated inputs at the analysis's concrete shapes, in subgraph input order."""
    from compiler.frontends import tflite
    from compiler.inputs import generate_inputs

    return list(generate_inputs(tflite.load(graph_path), shapes, values, seed=seed).values())


def _calibration_data(model_bytes: bytes, samples: list[list[Any]]) -> dict[str, list[dict[str, Any]]]:
    """{signature: [{signature input name: array}]}; a signature names each input's tensor by index."""
    from compiler.optimize.litert_prepare import read

    m = read(model_bytes)
    sig = next(s for s in m.signatureDefs if s.signatureKey.decode() == SIGNATURE_KEY)
    order = [int(i) for i in m.subgraphs[sig.subgraphIndex].inputs]
    by_tensor = {int(tm.tensorIndex): tm.name.decode() for tm in sig.inputs}
    names = [by_tensor[i] for i in order]
    return {SIGNATURE_KEY: [dict(zip(names, feeds)) for feeds in samples]}


def _quantizer(model: bytes, model_wide: str, per_op: dict[str, str]) -> Any:
    """A Quantizer for `model` with the recipe: model-wide `.*`, then each override by operator scope."""
    from ai_edge_quantizer import quantizer

    from compiler.errors import ModelRunError

    qt = quantizer.Quantizer(bytearray(model))
    _add(qt, ".*", model_wide)
    if per_op:
        from ai_edge_quantizer.utils import tfl_flatbuffer_utils as fu

        m = fu.read_model(bytearray(model))
        ops, tensors = m.subgraphs[0].operators, m.subgraphs[0].tensors
        for index, kind in per_op.items():
            i = int(index)
            if not 0 <= i < len(ops):
                raise ModelRunError(f"operator {i} is not in this model ({len(ops)} operators)")
            _add(qt, "^" + re.escape(fu.get_op_scope(ops[i], tensors)) + "$", kind)
    return qt


def _export_child(payload: dict[str, Any]) -> dict[str, Any]:
    import contextlib
    import io

    from compiler.errors import ModelRunError
    from compiler.optimize import litert_check, litert_prepare

    from ai_edge_litert import schema_py_generated as schema

    notes: list[str] = []
    raw = Path(payload["src"]).read_bytes()
    n_ops = schema.Model.GetRootAs(raw, 0).Subgraphs(0).OperatorsLength()
    bad = [i for i in payload["per_op"] if not 0 <= int(i) < n_ops]
    if bad:
        raise ModelRunError(f"operator {bad[0]} is not in this model ({n_ops} operators)")
    static = payload["model_wide"] == "static8" or "static8" in payload["per_op"].values()
    from compiler.frontends import tflite

    parsed = tflite.parse(raw)
    fully = tflite.fully_int8(parsed)
    _refuse_on_model(parsed, fully, payload["model_wide"], {int(i): k for i, k in payload["per_op"].items()})
    if payload["model_wide"] == "static8" and set(payload["per_op"].values()) <= {"static8"}:
        if fully:
            # Already int8-static (int8 weights and activations): quantizing it afresh would restore its weights to
            # float and re-calibrate them on generated inputs, a lossy round trip and a larger file (new per-channel
            # records: +23% on microWakeWord's 56-81 KB models). The file is written as stored.
            Path(payload["out"]).write_bytes(raw)
            litert_check.run_once(payload["out"], payload["shapes"], payload["values"])
            return {"notes": ["the file is already int8-static (int8 weights and activations): written as stored"]}
    model, n16, upload_index = litert_prepare.dequantize_fp16_weights(raw, int8_too=static)
    if n16:
        notes.append(f"{n16} {'fp16 or int8' if static else 'fp16'} weight(s) behind DEQUANTIZE were restored to "
                     f"fp32 first, so the quantizer starts from float weights")
    model, renamed = litert_prepare.unique_tensor_names(model)
    if renamed:
        notes.append(f"{renamed} repeated tensor name(s) made unique (the quantizer needs one name per tensor)")
    model = with_signature(model)
    # Overrides name the upload's operators; the DEQUANTIZEs removed above shift the indices.
    now = {old: new for new, old in enumerate(upload_index)}
    per_op = {now[int(i)]: k for i, k in payload["per_op"].items() if int(i) in now}
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink):
            qt = _quantizer(model, payload["model_wide"], per_op)
            calibration = None
            if qt.need_calibration:
                samples = [_feeds(payload["src"], payload["shapes"], payload["values"], seed)
                           for seed in range(CALIBRATION_SAMPLES)]
                # The quantizer allocates the interpreter at the file's input shapes, to calibrate and
                # again to quantize: dynamic dims (placeholders a VALID conv cannot prepare at) are fixed
                # at the analysis's shapes, which the written file then keeps.
                fixed = litert_prepare.freeze_inputs(model, [x.shape for x in samples[0]])
                if fixed is not model:
                    model = fixed
                    qt = _quantizer(model, payload["model_wide"], per_op)
                    notes.append("inputs fixed at " + ", ".join("x".join(map(str, x.shape)) for x in samples[0])
                                 + " (calibration and the int8 file need concrete shapes)")
                calibration = qt.calibrate(_calibration_data(model, samples), num_threads=1)
                notes.append(f"int8 activation ranges calibrated on {CALIBRATION_SAMPLES} generated inputs "
                             f"(random normal); calibrate on real data for accuracy")
            result = qt.quantize(calibration, enable_progress_report=False)
    except ModelRunError:
        raise
    except Exception as e:  # noqa: BLE001 - any quantizer failure is a failed export, said in one sentence
        msg = " ".join(f"{type(e).__name__}: {e}".split())[:600]
        raise ModelRunError(f"ai-edge-quantizer could not quantize the model ({msg})") from None
    written = bytes(result.quantized_model)
    Path(payload["out"]).write_bytes(written)
    litert_check.run_once(payload["out"], payload["shapes"], payload["values"])
    kinds = {"*": payload["model_wide"], **{f"{_name(model, i)}_{upload_index[i]}": k for i, k in per_op.items()}}
    litert_check.check_kinds(model, written, kinds, payload["option"], upload_index)
    from ai_edge_litert.interpreter import Interpreter

    ints = [d["name"] for d in Interpreter(model_path=payload["out"]).get_input_details()
            if d["dtype"].__name__ in ("int8", "int16")]
    if ints:
        notes.append(f"input(s) {', '.join(ints)} are now quantized integers: scale and zero point in the file")
    if payload["model_wide"] == "fp16":
        notes.append("fp16 weights, dequantized to fp32 at load: activations stay fp32 in the file")
    return {"notes": notes}


# Each recipe kind as the (input, output, kernel) formats it writes on a weighted operator.
_FORMATS = {"float": ("fp32", "fp32", "fp32"), "fp16": ("fp16", "fp16", "fp16"), "dynamic8": ("fp32", "fp32", "int8"),
            "static8": ("int8", "int8", "int8"), "weights4": ("fp32", "fp32", "int4")}


def _refuse_on_model(parsed: Any, fully_int8: bool, model_wide: str, per_op: dict[int, str]) -> None:
    """Raise ModelRunError (litert_rules.model_reason's sentence) where this file (`parsed`: its graph; fully int8 or
    not) cannot take the recipe `model_wide` or one of `per_op` ({operator index: recipe}), judged as the option
    table's mark_tflite judges it."""
    from compiler.errors import ModelRunError

    _refuse_custom_overrides(parsed, per_op)
    bodies = any(nd.parent for nd in parsed.nodes)  # IF / WHILE bodies
    for kind in sorted({model_wide, *per_op.values()}):
        why = litert_rules.model_reason(*_FORMATS[kind], fully_int8, bodies)
        if why is not None:
            raise ModelRunError(why)


def _refuse_custom_overrides(parsed: Any, per_op: dict[int, str]) -> None:
    """Raise ModelRunError where a per-op override asks a custom operator for a recipe: ai-edge-quantizer has none
    and would write it float (the option table offers it float only: exportable.mark_tflite)."""
    from compiler.errors import ModelRunError
    from compiler.frontends.tflite_custom import CUSTOM

    for nd in parsed.nodes:
        if not nd.parent and nd.attributes.get(CUSTOM) and per_op.get(op_index(nd.id), "float") != "float":
            raise ModelRunError(litert_rules.custom_reason(nd.id))


def _name(model: bytes, index: int) -> str:
    """The builtin operator name of subgraph 0's operator `index` (`CONV_2D`)."""
    from ai_edge_litert import schema_py_generated as schema

    from compiler.optimize.litert_prepare import opcode, read

    m = read(model)
    code = opcode(m, m.subgraphs[0].operators[index])
    return next(k for k, v in vars(schema.BuiltinOperator).items() if v == code)
