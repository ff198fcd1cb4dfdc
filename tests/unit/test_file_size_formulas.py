"""File bytes of one kernel tensor per format and exporter (simulator.file_bytes.storage_bytes_per_kernel), on
numbers small enough to follow: 1024 values in 16 output channels. Each expectation is the layout the comment
in the formula names (scales, zero points, tables, masks); tests/simulator/test_file_size.py checks the same
formula against files the exporters really write."""

from __future__ import annotations

import numpy as np
import pytest

from compiler.vocabulary.targets import get_target
from simulator.file_bytes import storage_bytes_per_kernel

ORT, LITERT, COREML = (get_target(t) for t in ("ort-cpu/host", "litert-cpu/host", "coreml/apple-a17"))
N, ROWS = 1024, 16


@pytest.mark.parametrize("kernel,static,kind,expected", [
    ("fp32", False, "conv", N * 4),
    ("fp16", False, "conv", N * 2),
    ("int8", False, "conv", N + 5),  # quantize_dynamic: one scale + zero point per tensor
    ("int8", True, "conv", N + ROWS * 13),  # QDQ per channel, with the int32 bias's scale and zero point
    ("int8", True, "gemm", N + ROWS * 5),  # a matrix's bias is its own Add's constant
    ("lut4", False, "conv", N // 2 + 16 * 4),  # 4-bit indices + an fp32 table of 16 entries
    ("lut6", False, "conv", N + 64 * 4),  # ONNX has no 6-bit packing: one index per byte
    ("int4", False, "gemm", ROWS * (68 + 1)),  # MatMulNBits: K = 64 pads to one 128-block per column
])
def test_onnx_exports(kernel: str, static: bool, kind: str, expected: int) -> None:
    assert storage_bytes_per_kernel(ORT, kernel, 0, N, ROWS, static, kind) == expected


def test_matmulnbits_blocks_follow_the_reduction_length() -> None:
    # K = 300: three blocks of 128 per column, 64 B of values + a 4 B scale each, zero points two per byte
    assert storage_bytes_per_kernel(ORT, "int4", 0, N, ROWS, kind="gemm", depth=300) == ROWS * (3 * 68 + 2)


@pytest.mark.parametrize("kernel,static,kind,expected", [
    ("int8", False, "conv", N + ROWS * 12 + 48),  # per channel: fp32 scale + int64 zero point, ~48 B table
    ("int8", True, "conv", N + (ROWS * 12 + 48) * 2),  # the int32 bias gets the same parameters
    ("fp16", False, "conv", N * 2 + 75 + 5 + len("_dequant")),  # DEQUANTIZE + float32 `<name>_dequant`
    ("int4", False, "dwconv", N * 4),  # no 4-bit depthwise recipe in ai-edge-quantizer: stays fp32
])
def test_tflite_exports(kernel: str, static: bool, kind: str, expected: int) -> None:
    assert storage_bytes_per_kernel(LITERT, kernel, 0, N, ROWS, static, kind, name_len=5) == expected


def test_core_ml_tables_are_fp16_and_pruned_weights_are_stored_sparse() -> None:
    assert storage_bytes_per_kernel(COREML, "lut4", 0, N, ROWS) == N // 2 + 16 * 2
    # 50% pruned: the 512 kept 4-bit indices, a 1-bit mask over all 1024 values, the table
    assert storage_bytes_per_kernel(COREML, "lut4", 50, N, ROWS) == 512 // 2 + N // 8 + 16 * 2
    assert storage_bytes_per_kernel(ORT, "lut4", 50, N, ROWS) == N // 2 + 16 * 4  # ONNX stores zeros as values


def test_elementwise_on_arrays_and_empty_tensors_cost_nothing() -> None:
    got = storage_bytes_per_kernel(ORT, "lut4", 0, np.array([0.0, N]), np.array([0.0, ROWS]))
    assert got.tolist() == [0.0, N // 2 + 16 * 4]
