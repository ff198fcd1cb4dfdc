"""Write valid `.tflite` flatbuffers without TensorFlow: the few operators Edgescope's LiteRT calibration and
its tests need.

Uses the object API of the schema module LiteRT ships (`ai_edge_litert.schema_py_generated`): fill `ModelT` /
`SubGraphT` / `TensorT` / `OperatorT`, then `Pack` into a flatbuffers Builder. litert-torch would convert from
PyTorch instead, but it pulls in JAX and an older typing_extensions (it lives in its own venv). Every model the
tests write runs in `ai_edge_litert.interpreter.Interpreter` (they check that).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

_NP_TYPE = {np.dtype("float32"): 0, np.dtype("float16"): 1, np.dtype("int32"): 2, np.dtype("int8"): 9,
            np.dtype("int64"): 4, np.dtype("complex64"): 8, np.dtype("bool"): 6}


def _schema() -> Any:
    from ai_edge_litert import schema_py_generated as schema

    return schema


@dataclass
class TfliteWriter:
    """Accumulates tensors, buffers and operators of one subgraph; `save` writes the file."""

    description: str = "edgescope"
    tensors: list[Any] = field(default_factory=list)
    buffers: list[Any] = field(default_factory=list)
    operators: list[Any] = field(default_factory=list)
    codes: dict[int | str, int] = field(default_factory=dict)  # builtin code or custom name -> operator code index
    bodies: list[Any] = field(default_factory=list)  # further subgraphs (an IF's branches, a WHILE's cond and body)

    def __post_init__(self) -> None:
        s = _schema()
        self.s = s
        self.buffers.append(s.BufferT())  # buffer 0 is the empty buffer by convention

    def tensor(self, name: str, shape: list[int], dtype: str = "float32", data: np.ndarray | None = None,
               quant: tuple[list[float], list[int], int] | None = None, signature: list[int] | None = None) -> int:
        """`signature`: the shape signature, -1 for a dynamic dim (`shape` then holds its placeholder)."""
        t = self.s.TensorT()
        t.name = name.encode()
        t.shape = np.array(shape, dtype=np.int32)
        if signature is not None:
            t.shapeSignature = np.array(signature, dtype=np.int32)
        t.type = _NP_TYPE[np.dtype(dtype)]
        t.buffer = 0
        if data is not None:
            b = self.s.BufferT()
            b.data = np.frombuffer(np.ascontiguousarray(data, dtype=dtype).tobytes(), dtype=np.uint8)
            self.buffers.append(b)
            t.buffer = len(self.buffers) - 1
        if quant is not None:
            q = self.s.QuantizationParametersT()
            q.scale, q.zeroPoint, q.quantizedDimension = list(quant[0]), list(quant[1]), quant[2]
            t.quantization = q
        self.tensors.append(t)
        return len(self.tensors) - 1

    def const(self, name: str, arr: np.ndarray) -> int:
        return self.tensor(name, list(arr.shape), str(arr.dtype), data=arr)

    def sparse_const(self, name: str, dense: np.ndarray) -> int:
        """A 2-D constant stored as TFLite sparse (row-major, rows dense, columns CSR): the buffer holds only
        the non-zero values, read through DENSIFY or by FULLY_CONNECTED's sparse kernel."""
        rows, cols = dense.shape
        segments, indices, values = [0], [], []
        for r in range(rows):
            nz = np.flatnonzero(dense[r])
            indices += nz.tolist()
            values += dense[r, nz].tolist()
            segments.append(len(indices))
        idx = self.tensor(name, [rows, cols], str(dense.dtype), data=np.array(values, dtype=dense.dtype))
        s = self.s
        sp = s.SparsityParametersT()
        sp.traversalOrder = [0, 1]
        d0, d1 = s.DimensionMetadataT(), s.DimensionMetadataT()
        d0.format, d0.denseSize = s.DimensionType.DENSE, rows
        d1.format = s.DimensionType.SPARSE_CSR
        seg, ind = s.Int32VectorT(), s.Int32VectorT()
        seg.values, ind.values = segments, indices
        d1.arraySegmentsType = d1.arrayIndicesType = s.SparseIndexVector.Int32Vector
        d1.arraySegments, d1.arrayIndices = seg, ind
        sp.dimMetadata = [d0, d1]
        self.tensors[idx].sparsity = sp
        return idx

    def op(self, code_name: str, inputs: list[int], outputs: list[int], options: Any = None,
           options_type: str | None = None, custom: bool = False) -> None:
        """A builtin operator (`ADD`), or with `custom=True` a custom one whose code is `code_name`."""
        code: int | str = code_name if custom else getattr(self.s.BuiltinOperator, code_name)
        if code not in self.codes:
            self.codes[code] = len(self.codes)
        o = self.s.OperatorT()
        o.opcodeIndex = self.codes[code]
        o.inputs = np.array(inputs, dtype=np.int32)
        o.outputs = np.array(outputs, dtype=np.int32)
        if options is not None:
            o.builtinOptionsType = getattr(self.s.BuiltinOptions, options_type or type(options).__name__[:-1])
            o.builtinOptions = options
        self.operators.append(o)

    def options(self, kind: str, **fields: Any) -> Any:
        obj = getattr(self.s, kind + "T")()
        for k, v in fields.items():
            setattr(obj, k, v)
        return obj

    def subgraph(self, name: str, build: Callable[[TfliteWriter], tuple[list[int], list[int]]]) -> int:
        """A further subgraph (an IF's branch, a WHILE's body): `build` fills a writer that shares this one's
        buffers and operator codes and returns its (inputs, outputs). Returns the subgraph's index."""
        sub = TfliteWriter(self.description)
        sub.buffers, sub.codes = self.buffers, self.codes
        ins, outs = build(sub)
        sg = self.s.SubGraphT()
        sg.tensors, sg.operators, sg.name = sub.tensors, sub.operators, name.encode()
        sg.inputs, sg.outputs = np.array(ins, dtype=np.int32), np.array(outs, dtype=np.int32)
        self.bodies.append(sg)
        return len(self.bodies)

    def save(self, path: str | os.PathLike[str], inputs: list[int], outputs: list[int]) -> Path:
        import flatbuffers

        s = self.s
        sg = s.SubGraphT()
        sg.tensors, sg.operators, sg.name = self.tensors, self.operators, b"main"
        sg.inputs, sg.outputs = np.array(inputs, dtype=np.int32), np.array(outputs, dtype=np.int32)
        m = s.ModelT()
        m.version = 3
        m.description = self.description.encode()
        m.subgraphs, m.buffers = [sg, *self.bodies], self.buffers
        m.operatorCodes = []
        for code in sorted(self.codes, key=self.codes.__getitem__):
            oc = s.OperatorCodeT()
            if isinstance(code, str):
                oc.customCode = code.encode()
                code = s.BuiltinOperator.CUSTOM
            oc.builtinCode = code
            oc.deprecatedBuiltinCode = min(code, 127)  # the int8 field; 127 = "see builtin_code"
            oc.version = 1
            m.operatorCodes.append(oc)
        b = flatbuffers.Builder(1024)
        b.Finish(m.Pack(b), file_identifier=b"TFL3")
        Path(path).write_bytes(bytes(b.Output()))
        return Path(path)
