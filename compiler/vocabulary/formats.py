"""Tensor and kernel formats the option table speaks about, and their storage cost.

These are encodings, not hardware figures: bits per element are fixed by the format.
"""

from __future__ import annotations

ACTIVATION_FORMATS: tuple[str, ...] = ("fp32", "fp16", "int8")
KERNEL_FORMATS: tuple[str, ...] = ("fp32", "fp16", "int8", "int4", "lut1", "lut2", "lut4", "lut6", "lut8")
SPARSITIES: tuple[int, ...] = (0, 25, 50, 75, 90)
FLOAT_FORMATS: frozenset[str] = frozenset({"fp32", "fp16"})

# Bits per stored element.
BITS: dict[str, int] = {
    "fp32": 32, "fp16": 16, "int8": 8, "int4": 4,
    "lut1": 1, "lut2": 2, "lut4": 4, "lut6": 6, "lut8": 8,
}

# Compute dtype names used as keys of the hardware profiles' peak_ops_per_s.
COMPUTE_DTYPE: dict[str, str] = {"fp32": "fp32", "fp16": "fp16", "int8": "int8", "int4": "int4"}

ONNX_DTYPE_FORMAT: dict[str, str] = {"float32": "fp32", "float16": "fp16", "int8": "int8", "uint8": "int8",
                                     "int4": "int4", "uint4": "int4", "bfloat16": "fp16"}


def bytes_per_element(fmt: str) -> float:
    return BITS[fmt] / 8.0


def lut_bits(fmt: str) -> int | None:
    """4 for 'lut4', None for non-palettized formats."""
    return int(fmt[3:]) if fmt.startswith("lut") else None


def combo_name(inp: str, out: str, kernel: str, sparsity: int) -> str:
    return f"{inp}/{out}/{kernel}/{sparsity}"
