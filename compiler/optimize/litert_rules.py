"""Which combos the LiteRT exporter (`compiler.optimize.litert_export`, ai-edge-quantizer) writes, and why not the
others. One source for the exporter (which refuses the rest before quantizing) and the option table (which marks
them not exportable, `simulator.exportable.mark_tflite`). No heavy imports and no simulator imports: the sweep
calls it for every task signature, and combos arrive as their four fields.

ai-edge-quantizer's recipes, one per operator:
- float (no quantization), fp16 weights (float casting: the activations stay float), int8 weights with float
  activations (dynamic), int4 weights (weight-only, dequantized to float);
- int8 activations with int8 weights (static): it quantizes every input and output of the operator, so int8 on
  one side only cannot be written;
- no palettization and no pruning recipe;
- no recipe for a custom operator: every preset leaves it float, its weights and its activations (int8-static puts
  a DEQUANTIZE / QUANTIZE around it); seen with MediaPipe's three (Convolution2DTransposeBias,
  MaxPoolingWithArgmax2D, MaxUnpooling2D) in a file built in code (tests/formats/test_tflite_mediapipe.py).
"""

from __future__ import annotations

FLOAT_FORMAT = "fp32"  # LiteRT CPU's float
SUPPORTED = ("fp32", "fp16", "int8-dynamic", "int8-static", "int4-weights")
# The quantizer's recipe kinds (compiler.optimize.litert_export._add).
RECIPES = ("float", "fp16", "dynamic8", "static8", "weights4")


def recipe_kind(input: str, output: str, kernel: str, sparsity: int) -> str | None:
    """The quantizer recipe for one combo, or None where ai-edge-quantizer has none (combo_reason says why)."""
    return None if combo_reason(input, output, kernel, sparsity) is not None else _recipe(input, kernel)


def _recipe(input: str, kernel: str) -> str:
    if input == "int8":
        return "static8"
    if kernel == "int8":
        return "dynamic8"
    if kernel == "int4":
        return "weights4"
    if kernel == "fp16" or (kernel == "-" and input == "fp16"):
        return "fp16"
    return "float"


def combo_reason(input: str, output: str, kernel: str, sparsity: int) -> str | None:
    """None if the exporter writes this combo on an operator; else one sentence saying why not."""
    name = f"{input}/{output}/{kernel}/{sparsity}"
    if sparsity or kernel.startswith("lut"):
        return (f"{name}: ai-edge-quantizer has no recipe for palettization or pruning. Supported: "
                f"{', '.join(SUPPORTED)} (or a combo of those formats with sparsity 0, e.g. int8/int8/int8/0)")
    if "int8" in (input, output) and input != output:
        return (f"{name}: ai-edge-quantizer's static int8 quantizes an operator's inputs and outputs together; "
                f"int8 activations on one side only cannot be written")
    if input == "int8" and kernel not in ("int8", "-"):
        return f"{name}: ai-edge-quantizer writes int8 activations with int8 weights only, not {kernel}"
    return None


def custom_left_float(input: str, output: str, kernel: str) -> bool:
    """Whether a preset asking this combo leaves a custom operator float (not written as asked): any but float."""
    return not (input == output == FLOAT_FORMAT and kernel in (FLOAT_FORMAT, "-"))


def custom_reason(name: str) -> str:
    """Why a per-op override cannot quantize the custom operator `name`."""
    return (f"{name} is a custom operator: ai-edge-quantizer has no recipe for it, so it is written float (fp32) "
            f"under every option and a per-op override cannot quantize it")


def model_reason(input: str, output: str, kernel: str, fully_int8: bool, bodies: bool) -> str | None:
    """combo_reason's model-wide part that depends on the file: None if the exporter writes the combo on this
    model; `fully_int8`: int8 weights and activations as stored (compiler.frontends.tflite.fully_int8); `bodies`:
    it has IF / WHILE bodies."""
    name = f"{input}/{output}/{kernel}/0"
    if fully_int8 and not (input == output == "int8" and kernel in ("int8", "-")):
        # microWakeWord's: the quantizer keeps int8 operators as they are, so fp32 / int8-dynamic / int4 wrote the
        # int8 file (+12..+137% against a float prediction) and fp16 one LiteRT refuses (a conv's filter unquantized).
        return (f"{name}: the model is fully int8 (int8 weights and activations); ai-edge-quantizer cannot make it "
                f"float again, so only int8-static (the file as stored) can be exported")
    if bodies and "int8" in (input, output):
        # openWakeWord's hey_jarvis: "Failed to get quantization parameters for tensor: arg0" (an IF body's input).
        return (f"{name}: ai-edge-quantizer's calibration does not reach the model's IF / WHILE bodies, so int8 "
                f"activations cannot be written; int8-dynamic quantizes the weights")
    return None
