"""Static check of pickles before anything unpickles them: only tensor-rebuilding globals pass.

A pickle executes code only through the callables it names (GLOBAL / STACK_GLOBAL / INST,
then REDUCE / OBJ / NEWOBJ / BUILD); it cannot name one any other way except the copyreg
extension registry (EXT1/2/4). So reading the opcodes with `pickletools.genops` (which parses,
never executes) and requiring every named callable to be on `ALLOWED` is enough to know that
unpickling can do nothing but rebuild tensors and plain containers. STACK_GLOBAL takes its
module and name from the stack; we accept it only when the two preceding opcodes push them as
literal strings (what `torch.save` writes), or they come from the memo by a literal index.
"""

from __future__ import annotations

import io
import pickletools
import zipfile

from compiler.graph import ModelFormatError

# What torch.save writes for tensors, parameters, dicts of them and sample inputs; the set
# mirrors the spirit of torch's own weights_only allow-list, kept small on purpose.
ALLOWED: frozenset[tuple[str, str]] = frozenset({
    ("collections", "OrderedDict"), ("builtins", "set"), ("builtins", "frozenset"), ("builtins", "slice"),
    ("torch._utils", "_rebuild_tensor_v2"), ("torch._utils", "_rebuild_tensor_v3"),
    ("torch._utils", "_rebuild_parameter"), ("torch._utils", "_rebuild_parameter_with_state"),
    ("torch._utils", "_rebuild_sparse_tensor"), ("torch._utils", "_rebuild_device_tensor_from_numpy"),
    ("torch._utils", "_rebuild_meta_tensor_no_storage"), ("torch._utils", "_rebuild_qtensor"),
    ("torch._tensor", "_rebuild_from_type_v2"), ("torch", "Size"), ("torch", "device"),
    ("torch", "Tensor"), ("torch.nn.parameter", "Parameter"), ("torch.serialization", "_get_layout"),
    ("torch", "storage"),
}) | {("torch", f"{k}Storage") for k in (
    "Float", "Double", "Half", "BFloat16", "Long", "Int", "Short", "Char", "Byte", "Bool",
    "ComplexFloat", "ComplexDouble", "Untyped")} | {("torch", d) for d in (
    "float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool",
    "complex64", "complex128", "strided", "sparse_coo", "per_tensor_affine", "per_channel_affine",
    "contiguous_format", "channels_last")}

_STRING_OPS = {"SHORT_BINUNICODE", "BINUNICODE", "UNICODE", "BINUNICODE8", "SHORT_BINSTRING", "BINSTRING", "STRING"}
_REFUSED_OPS = {"EXT1", "EXT2", "EXT4"}
MAX_PICKLE_BYTES = 64 * 1024 * 1024  # pickles here hold metadata; tensor bytes live beside them


def check_pickle(data: bytes, where: str) -> None:
    """Raise ModelFormatError unless every callable the pickle names is on ALLOWED."""
    if len(data) > MAX_PICKLE_BYTES:
        raise ModelFormatError(f"{where}: pickle of {len(data)} bytes is too large to vet")
    memo: dict[int, str] = {}
    recent: list[str | None] = []  # values pushed by the last opcodes (None = not a string)
    try:
        for op, arg, _pos in pickletools.genops(io.BytesIO(data)):
            name = op.name
            if name in _REFUSED_OPS:
                raise ModelFormatError(f"{where}: pickle uses the copyreg extension registry ({name}); refused")
            if name in ("GLOBAL", "INST"):
                module, _, attr = str(arg).partition(" ")
                _require(module, attr, where)
            elif name == "STACK_GLOBAL":
                if len(recent) < 2 or recent[-1] is None or recent[-2] is None:
                    raise ModelFormatError(f"{where}: pickle builds a global from computed values; refused")
                _require(recent[-2], recent[-1], where)
            if name in _STRING_OPS:
                recent.append(str(arg) if not isinstance(arg, bytes) else arg.decode("latin-1"))
            elif name in ("BINGET", "LONG_BINGET", "GET"):
                recent.append(memo.get(int(arg)))
            elif name in ("BINPUT", "LONG_BINPUT", "PUT", "MEMOIZE"):
                key = int(arg) if name != "MEMOIZE" else len(memo)
                memo[key] = recent[-1] if recent else None  # type: ignore[assignment]
                continue  # memoizing does not push
            else:
                recent.append(None)
            del recent[:-2]
    except ModelFormatError:
        raise
    except Exception as e:  # ValueError from genops on garbage
        raise ModelFormatError(f"{where}: not a valid pickle ({e})") from None


def _require(module: str, attr: str, where: str) -> None:
    if (module, attr) not in ALLOWED:
        raise ModelFormatError(f"{where}: the file contains a pickle that calls '{module}.{attr}', which is not "
                               "a tensor-rebuilding function; refusing to load it (it could run arbitrary code)")


def check_member(name: str, data: bytes, where: str) -> None:
    """Vet one archive member that torch would unpickle: a torch.save zip (its `.pkl` entries are
    pickles; its other entries are raw storages, never unpickled) or else a raw pickle. The caller
    skips members known to be raw tensor bytes, JSON or text."""
    if data[:4] != b"PK\x03\x04":
        check_pickle(data, f"{where} ({name})")
        return
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as inner:
            for info in inner.infolist():
                if not info.filename.endswith(".pkl"):
                    continue
                if info.file_size > MAX_PICKLE_BYTES:
                    raise ModelFormatError(f"{where} ({name}/{info.filename}): pickle too large to vet")
                check_pickle(inner.read(info), f"{where} ({name}/{info.filename})")
    except zipfile.BadZipFile as e:
        raise ModelFormatError(f"{where} ({name}): corrupt nested archive ({e})") from None
