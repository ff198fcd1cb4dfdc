"""W8A8 Core ML exports on Linux: activation ranges measured on the torch program, Q/DQ pairs inserted as
coremltools inserts them.

coremltools' `linear_quantize_activations` calibrates by running the ML Program (`MLModel.predict`, macOS only)
with every intermediate var as an output, keeps each var's min / max (`_get_activation_calibration_stats`), then
runs two graph passes on those stats: `insert_prefix_quantize_dequantize_pair` puts a quantize / dequantize pair
on the non-constant inputs of every conv, linear, add (both inputs live), avg_pool and max_pool, and
`insert_suffix_quantize_dequantize_pair` one on the output of such an op (after the activation that follows it, if
one of its list does); `dequantize_quantize_pair_elimination` then drops the pairs that meet. We run the same
passes with the same kind of stats, measured where we can run the model: a `.pt2` is the ExportedProgram
Edgescope converted, so its FX graph is run on calibration inputs (torch.fx.Interpreter, in the sandbox) and each
FX node's range is the range of the MIL vars converted from it. coremltools names a MIL var after its FX node
plus a cast suffix (`relu_3` -> `relu_3_cast_fp16`; a fused BatchNorm's conv keeps the BatchNorm's name); vars of
ops that only move data (reshape, transpose, cast...) take their input's range. An op with an input no range
reaches is left float and named in the notes. An uploaded ML Program cannot be run here: it stays weight-only.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from compiler.sandbox import DEFAULT_MEMORY_LIMIT, Limits, run

# coremltools 9.0: insert_prefix_quantize_dequantize_pair.SUPPORTED_OP_TYPES and
# insert_suffix_quantize_dequantize_pair._allowed_activations (an activation right after such an op joins it).
QUANTIZED_OPS = frozenset({"conv", "linear", "add", "avg_pool", "max_pool"})
FOLLOWING_ACTIVATIONS = frozenset({"leaky_relu", "tanh", "scaled_tanh", "sigmoid", "hard_sigmoid", "relu", "relu6"})
_MIL_SUFFIXES = ("_cast_fp16", "_cast_fp32", "_to_fp16", "_to_fp32")
_RANGE_KEEPING = frozenset({"reshape", "transpose", "squeeze", "expand_dims", "identity", "cast", "flatten",
                            "reshape_like", "slice_by_index", "slice_by_size", "split"})
# The passes read ranges as fp16 (optimize._utils.get_min_and_max_values) and the suffix pass does not guard a zero
# scale: a range below 127 x the smallest normal fp16 gives scale 0 ("quantize op: scale cannot be 0", seen on a
# random-weight MobileNetV2 whose last activations are ~1e-8). Such tiny ranges are widened to it; huge ones
# clipped to the fp16 maximum.
_MIN_ABS = 127 * 2.0 ** -14
_FP16_MAX = 65504.0
CALIBRATION_SAMPLES = 8


@dataclass
class ActivationPlan:
    """What the activation passes will quantize: op name -> the vars that need a range, and what is missing."""

    stats: dict[str, dict[str, float]]
    quantized: list[str] = field(default_factory=list)  # MIL op names that get int8 activations
    uncalibrated: list[str] = field(default_factory=list)  # selected ops left float: an input has no range


def fx_ranges(pt2_path: str | os.PathLike[str], shapes: Mapping[str, list[int]] | None = None,
              values: Mapping[str, Any] | None = None, samples: int = CALIBRATION_SAMPLES, timeout_s: float = 600.0,
              memory_limit_bytes: int | None = DEFAULT_MEMORY_LIMIT) -> dict[str, list[float]]:
    """{FX node name: [min, max]} over `samples` generated inputs (at the analysis's shapes), in the sandbox."""
    from compiler.frontends.pt2 import Pt2Archive

    arc = Pt2Archive(pt2_path)
    try:
        arc.vet_pickles()
    finally:
        arc.close()
    return run("compiler.optimize.coreml_w8a8:_ranges_child",  # type: ignore[no-any-return]
               {"src": os.path.abspath(pt2_path), "shapes": dict(shapes or {}), "values": dict(values or {}),
                "samples": samples},
               Limits(timeout_s, memory_limit_bytes, what="calibrating activations on the .pt2 model"))


def _ranges_child(payload: dict[str, Any]) -> dict[str, list[float]]:
    from compiler.backends.pt2_onnx import load_vetted_program, quiet_conversion
    from compiler.errors import ModelRunError
    from compiler.frontends import pt2
    from compiler.inputs import generate_inputs

    with quiet_conversion("torch"):
        import torch

        graph = pt2.load(payload["src"])
        # The program coremltools converted (compiler.backends.coreml): decomposed the same way, same node names.
        ep = load_vetted_program(payload["src"]).run_decompositions({})
        gm = ep.module()
        ranges: dict[str, list[float]] = {}

        class Recorder(torch.fx.Interpreter):  # type: ignore[misc]
            def run_node(self, n: Any) -> Any:
                out = super().run_node(n)
                t = out[0] if isinstance(out, (tuple, list)) and out and isinstance(out[0], torch.Tensor) else out
                if isinstance(t, torch.Tensor) and t.is_floating_point() and t.numel():
                    lo, hi = float(t.min()), float(t.max())
                    was = ranges.get(n.name, [lo, hi])
                    ranges[n.name] = [min(was[0], lo), max(was[1], hi)]
                return out

        try:
            with torch.no_grad():
                for seed in range(int(payload["samples"])):
                    feeds = generate_inputs(graph, payload["shapes"], payload["values"], seed=seed)
                    Recorder(gm).run(*[torch.from_numpy(feeds[name]) for name in graph.inputs])
        except Exception as e:
            raise ModelRunError(f"the .pt2 model could not be run for activation calibration: "
                                f"{' '.join(str(e).split())[:500]}") from None
    return ranges


def _fx_name(var: str) -> str:
    for s in _MIL_SUFFIXES:
        if var.endswith(s):
            return var[: -len(s)]
    return var


def _stat(lo: float, hi: float) -> dict[str, float]:
    lo, hi = max(min(lo, 0.0), -_FP16_MAX), min(max(hi, 0.0), _FP16_MAX)
    if max(-lo, hi) < _MIN_ABS:
        hi = _MIN_ABS
    return {"rmin": lo, "rmax": hi}


def program(mlmodel: Any) -> Any:
    """The pymil Program of an MLModel (one loaded from disk has none attached: read from its spec)."""
    if getattr(mlmodel, "_mil_program", None) is not None:
        return mlmodel._mil_program
    from coremltools.converters.mil.frontend.milproto.load import load as mil_load

    spec = mlmodel.get_spec()
    return mil_load(spec, spec.specificationVersion, mlmodel.weights_dir)


def _ops(prog: Any) -> Iterable[Any]:
    for f in prog.functions.values():
        yield from f.operations


def plan_activations(prog: Any, ranges: Mapping[str, list[float]], selected: set[str] | None) -> ActivationPlan:
    """Each MIL var's range from its FX node (or the input of a data-moving op), and which of the `selected` ops
    (None: all) of the kinds coremltools quantizes get int8 activations: those whose live inputs all have one."""
    stats: dict[str, dict[str, float]] = {}
    for f in prog.functions.values():
        for name in f.inputs:
            if name in ranges:
                stats[name] = _stat(*ranges[name])
    for op in _ops(prog):
        if op.op_type == "const":
            continue
        for out in op.outputs:
            r = ranges.get(_fx_name(out.name))
            x = op.inputs.get("x")
            if r is not None:
                stats[out.name] = _stat(*r)
            elif op.op_type in _RANGE_KEEPING and x is not None and x.name in stats:
                stats[out.name] = stats[x.name]
    plan = ActivationPlan(stats)
    for op in _ops(prog):
        if op.op_type not in QUANTIZED_OPS or (selected is not None and op.name not in selected):
            continue
        live = [v for k, v in op.inputs.items() if k in ("x", "y") and (v.op is None or v.op.op_type != "const")]
        if op.op_type == "add" and len(live) < 2 or not live:
            continue  # a constant operand: coremltools leaves the op float
        outs = [op.outputs[0]]
        child = op.outputs[0].child_ops
        if len(child) == 1 and child[0].op_type in FOLLOWING_ACTIVATIONS:
            outs.append(child[0].outputs[0])
        if all(v.name in stats for v in [*live, *outs]):
            plan.quantized.append(op.name)
        else:
            plan.uncalibrated.append(op.name)
    return plan


def quantize_activations(mlmodel: Any, plan: ActivationPlan) -> Any:
    """The ML Program with int8 activations on `plan.quantized` (coremltools' own passes, our ranges)."""
    import coremltools.optimize.coreml as cto
    from coremltools.converters.mil.mil.passes.graph_pass import PassOption
    from coremltools.converters.mil.mil.passes.pass_registry import PASS_REGISTRY
    from coremltools.optimize.coreml import _post_training_quantization as ptq

    keep = set(plan.quantized)
    skip = {op.name: None for op in _ops(program(mlmodel)) if op.op_type in QUANTIZED_OPS and op.name not in keep}
    config = cto.OptimizationConfig(global_config=cto.OpLinearQuantizerConfig(mode="linear_symmetric", dtype="int8"),
                                    op_name_configs=skip)
    passes = []
    for name in ("compression::insert_prefix_quantize_dequantize_pair",
                 "compression::insert_suffix_quantize_dequantize_pair"):
        p = PASS_REGISTRY[name]
        p.set_options([PassOption("config", config)])
        p.set_options([PassOption("activation_stats", plan.stats)])
        passes.append(p)
    passes.append(PASS_REGISTRY["common::dequantize_quantize_pair_elimination"])
    return ptq._model_utils._apply_graph_pass(mlmodel, passes, spec_version=ptq._SPECIFICATION_VERSION_IOS_17,
                                             pymil_load_func=ptq._milproto_to_pymil.load, skip_model_load=True)


def ops_without_dequantized_input(spec: Any, names: Iterable[str]) -> list[str]:
    """Of the ML Program ops `names`, those whose `x` input is not the output of a `dequantize` op (the int8
    activation the W8A8 option promises), read from the saved spec."""
    dequantized: set[str] = set()
    x_of: dict[str, str] = {}
    for fn in spec.mlProgram.functions.values():
        for block in fn.block_specializations.values():
            for op in block.operations:
                if op.type == "dequantize":
                    dequantized.update(o.name for o in op.outputs)
                name = op.attributes.get("name")
                if name is not None and "x" in op.inputs and op.inputs["x"].arguments:
                    x_of[name.immediateValue.tensor.strings.values[0]] = op.inputs["x"].arguments[0].name
    return [n for n in names if x_of.get(n) not in dequantized]


def op_names_by_output(mlmodel: Any) -> dict[str, str]:
    """{first output var name (the analysis's task id): MIL op name}."""
    return {op.outputs[0].name: op.name for op in _ops(program(mlmodel)) if op.outputs}


def write_w8a8_note(plan: ActivationPlan, samples: int) -> str:
    left = (f"; {len(plan.uncalibrated)} left float (an input with no range from the torch program: "
            f"{', '.join(plan.uncalibrated[:4])}{' ...' if len(plan.uncalibrated) > 4 else ''})"
            if plan.uncalibrated else "")
    return (f"int8 activations on {len(plan.quantized)} conv / linear / add / pool ops (coremltools' Q/DQ passes), "
            f"ranges from running the .pt2 on {samples} generated inputs{left}")

