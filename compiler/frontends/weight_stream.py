"""Weight statistics of a tensor read as a stream of byte chunks, so no weight is ever whole in memory.

Gives the same figures as `compiler.frontends.onnx.weight_stats` on the whole array (elements, bytes,
finite min and max, share of exact zeros): each is a fold over chunks. Used for weights inside archives
(`.pt2` raw weights, Core ML `weight.bin`), which can be as large as the upload limit allows.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator

import numpy as np

from compiler.graph import WeightStats

CHUNK_BYTES = 16 * 1024 * 1024


def aligned(chunks: Iterable[bytes], itemsize: int) -> Iterator[bytes]:
    """Re-cut chunks to whole elements (a zip stream's chunks need not be)."""
    rest = b""
    for chunk in chunks:
        data = rest + chunk
        cut = len(data) - len(data) % itemsize
        rest = data[cut:]
        if cut:
            yield data[:cut]


def stream_stats(chunks: Iterable[bytes], np_dtype: str, count: int, dtype: str) -> WeightStats:
    """Stats of the first `count` elements of `np_dtype` in the byte stream `chunks` (fewer if it ends)."""
    from compiler.graph import DTYPE_BYTES

    dt = np.dtype(np_dtype)
    lo, hi, zeros, seen = math.inf, -math.inf, 0, 0
    for chunk in aligned(chunks, dt.itemsize):
        arr = np.frombuffer(chunk, dtype=dt, count=min(len(chunk) // dt.itemsize, count - seen))
        if dtype == "bool":
            arr = arr.astype(bool)
        seen += arr.size
        zeros += arr.size - int(np.count_nonzero(arr))
        vals = np.abs(arr) if arr.dtype.kind == "c" else arr
        finite = vals[np.isfinite(vals)] if vals.dtype.kind == "f" else vals
        if finite.size:
            lo, hi = min(lo, float(finite.min())), max(hi, float(finite.max()))
        if seen >= count:
            break
    n = count
    nbytes = math.ceil(n * DTYPE_BYTES.get(dtype, dt.itemsize))
    if not math.isfinite(lo):
        lo = hi = 0.0
    return WeightStats(elements=n, bytes=nbytes, min=lo, max=hi, sparsity=zeros / n if n else 0.0)


def file_chunks(path: str, offset: int, length: int) -> Iterator[bytes]:
    """`length` bytes of a file from `offset`, in CHUNK_BYTES pieces."""
    with open(path, "rb") as fh:
        fh.seek(offset)
        left = length
        while left > 0:
            chunk = fh.read(min(CHUNK_BYTES, left))
            if not chunk:
                return
            left -= len(chunk)
            yield chunk


def skip(chunks: Iterable[bytes], nbytes: int) -> Iterator[bytes]:
    """The stream without its first `nbytes` bytes."""
    for chunk in chunks:
        if nbytes >= len(chunk):
            nbytes -= len(chunk)
            continue
        yield chunk[nbytes:]
        nbytes = 0
