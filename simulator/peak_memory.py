"""The peak-memory constants of the totals rule (rule 3 of docs/option-table.md) per target: what a runtime holds
beside the file's weights and one op's working set. Measured as the growth of the profiling child's resident-set
high-water mark (VmHWM, compiler/host.py); the figures and how they were fitted are in README.md, "Memory"."""

from __future__ import annotations

from typing import Any

from compiler.graph import Graph

# Copies of the weights a runtime holds beside the file's (`weight_copies`). LiteRT on the host keeps the model file
# mapped (its weights read at load) and XNNPACK packs every weight it runs into buffers of its own, at the precision
# it runs them; measured with VmHWM growth: MobileNetV2 fp32 (14 MB of weights) 47 MB, BirdNET's metadata model
# (26.7 MB at fp32, stored fp16, also unpacked to fp32 before packing) 61-73 MB, against 14 / 30 MB predicted with
# the file's weights alone.
WEIGHT_COPIES: dict[str, float] = {"litert-cpu/host": 1.0}

# ONNX Runtime 1.32 CPU EP on the host, one session as the profiling child opens it (compiler/backends/ort.py).
# - runtime_bytes: the runtime's own growth for a one-Relu model (its libraries' pages, the thread pool, the first
#   run): 14.7 MB, measured (2026-12-04, Sapphire Rapids VM); per ORT version and machine.
# - load_copies: a weight is copied once while the session loads it (the parsed file and the initializer's tensor):
#   one 64 MB MatMul / Gemm weight grows the peak by 142 MB, prepacking on or off (session.disable_prepacking);
#   16 MatMuls of 4 MB, 79 MB without prepacking: the file, the runtime's 8 MB at load and the largest weight once.
# - prepack_share: MLAS packs the constant B of MatMul / Gemm into buffers of its own at load (onnxruntime
#   core/framework/session_state.cc PrepackConstantInitializedTensors: the original is released once no kernel
#   uses it, so only part of the copies add to the peak): the share of those ops' weights the peak grows by. The
#   rule takes the larger of it and the load copy: packing follows loading, the two transients do not add up
#   (AlexNet: its 151 MB fc6 copied at load explains its peak, 404 MB, with its 235 MB of Gemm weights packed after).
# - arena_factor: the activations' arena over the largest working set of one op (ORT's BFC arena grows by powers
#   of two, kNextPowerOfTwo, and holds the first run's blocks beside the memory pattern's one block of later runs).
#   prepack_share and arena_factor are fitted (least relative squares) on 36 fp32 corpus models (README "Memory").
# - decoded_at_load: kernels the CPU EP does not run as stored: the compiled file of an fp16 or palettized export
#   holds fp32 weights (ORT casts fp16 and folds the palette decode), so they are resident at fp32.
ORT_HOST: dict[str, Any] = {
    "runtime_bytes": 14.7e6, "load_copies": 1.0, "prepack_share": 0.58, "arena_factor": 2.9,
    "decoded_at_load": {"kernels": ["fp16", "lut1", "lut2", "lut4", "lut6", "lut8"], "preset": "fp32"},
    "prepacked_kernels": ["fp32", "fp16", "int8", "lut1", "lut2", "lut4", "lut6", "lut8"],
}
# MLAS packs the constant 2-D B of these ops: SGEMM's (MatMul, Gemm) and, for int8 weights, the quantized GEMM's
# (core/providers/cpu/quantization/matmul_integer_base.h: MatMulInteger, DynamicQuantizeMatMul, QLinearMatMul).
PREPACKED_OPS = frozenset({"MatMul", "Gemm", "FusedGemm", "FusedMatMul"})


def memory_constants(target: str, compiled: Graph) -> dict[str, Any]:
    """The bulk table's peak-memory constants for `target`: `weight_copies`, and ONNX Runtime's terms on the host."""
    if target != "ort-cpu/host":
        return {"weight_copies": WEIGHT_COPIES.get(target, 0.0)}
    ops = [i for i, n in enumerate(compiled.nodes) if n.op_type in PREPACKED_OPS]
    return {"weight_copies": 0.0, **ORT_HOST, "prepacked_ops": ops}
