"""`.pt2` -> ONNX, so ONNX Runtime targets (`ort-cpu/host`) can compile and profile an ExportedProgram.

`to_onnx` vets the archive in the caller (`Pt2Archive.vet_pickles`: every pickle may only name
tensor-rebuilding globals), then converts in a sandboxed child: there `torch.load` is forced to
`weights_only=True` and `pickle.loads` inside torch's archive reader refuses, so even a pickle
the scan missed cannot run code; then `torch.export.load` and `torch.onnx.export(ep, dynamo=True)`.
The ONNX file keeps the FX node names as value names (`conv2d_1`) and state-dict keys as
initializer names (`blocks.0.conv.weight`), which is what lets `compile_for_ort` hand the
*.pt2 graph* to the ORT backend as the source: provenance maps ORT's tasks straight back to
the FX nodes, with their namespaces and source locations.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from compiler.errors import ModelRunError
from compiler.graph import Graph, ModelFormatError
from compiler.sandbox import DEFAULT_MEMORY_LIMIT, Limits, run


def convert_vetted(child: str, pt2_path: str | os.PathLike[str], out_path: str | os.PathLike[str], what: str,
                   timeout_s: float = 600.0, memory_limit_bytes: int | None = DEFAULT_MEMORY_LIMIT,
                   python: str | None = None, options: dict[str, Any] | None = None) -> Any:
    """Run a conversion child (`module:function`, given {"src", "out", **options}) on a .pt2 whose pickles were
    vetted here first, before any interpreter that could unpickle sees the file. Returns the child's result."""
    from compiler.frontends.pt2 import Pt2Archive

    arc = Pt2Archive(pt2_path)
    try:
        arc.vet_pickles()
    finally:
        arc.close()
    from compiler import conversion_cache

    payload = {**(options or {}), "src": os.path.abspath(pt2_path), "out": os.path.abspath(out_path)}
    limits = Limits(timeout_s, memory_limit_bytes, what=f"converting the .pt2 model to {what}")
    return conversion_cache.converted(child, Path(pt2_path), Path(out_path), python,
                                      lambda: run(child, payload, limits, python=python),
                                      json.dumps(options, sort_keys=True) if options else "")


def to_onnx(pt2_path: str | os.PathLike[str], out_path: str | os.PathLike[str], timeout_s: float = 600.0,
            memory_limit_bytes: int | None = DEFAULT_MEMORY_LIMIT) -> Path:
    convert_to_onnx(pt2_path, out_path, timeout_s, memory_limit_bytes)
    return Path(out_path)


def convert_to_onnx(pt2_path: str | os.PathLike[str], out_path: str | os.PathLike[str], timeout_s: float = 600.0,
                    memory_limit_bytes: int | None = DEFAULT_MEMORY_LIMIT) -> dict[str, Any]:
    """Write the ONNX file; returns the child's result, with the converted program's module stacks
    (`pt2_modules.program_modules`)."""
    result = convert_vetted("compiler.backends.pt2_onnx:_convert_child", pt2_path, out_path, "ONNX", timeout_s,
                            memory_limit_bytes)
    return result if isinstance(result, dict) else {}


def compile_for_ort(src: Path, workdir: Path, source: Graph, opt_level: str = "all") -> tuple[Graph, Path]:
    """What `OrtCpu.compile` should do for a `.pt2` source: convert, then ORT-compile against the
    pt2 graph (so compiled tasks point at FX node ids)."""
    from compiler.backends import ort

    from compiler.backends.pt2_modules import name_unscoped_tasks, rename_onnx_values

    onnx_path = workdir / "source.onnx"
    modules = convert_to_onnx(src, onnx_path).get("modules") or {}
    aliases = {str(k): str(v) for k, v in (modules.get("aliases") or {}).items()}
    rename_onnx_values(onnx_path, aliases)  # decomposed names back to the .pt2's, so provenance finds its heads
    fix_dynamic_inputs(onnx_path, source)
    out = workdir / "ort-cpu.onnx"
    compiled = ort.compile(onnx_path, out, source, opt_level=opt_level)
    name_unscoped_tasks(compiled, modules, aliases, ort.NAME_SUFFIXES)
    compiled.metadata["converted_from"] = "pt2 (torch.onnx.export, dynamo)"
    compiled.metadata["onnx_overhead_bytes"] = str(onnx_overhead_bytes(onnx_path))
    return compiled, out


def onnx_overhead_bytes(onnx_path: Path) -> int:
    """Bytes of the converted file beyond its initializers' values, without the exporter's per-node debug records,
    which the ONNX export drops (compiler.optimize.onnx_prepare.named_copy): the records of every ONNX file written
    from this `.pt2`. The `.pt2`'s own (its program JSON, pickles, archive) sized torch/index-ops's files +22% and
    NFNet-L0's -18%."""
    import onnx

    model = onnx.load(os.fspath(onnx_path), load_external_data=False)
    for t in model.graph.initializer:
        for f in ("raw_data", "float_data", "int32_data", "int64_data", "double_data", "uint64_data"):
            t.ClearField(f)
    for n in model.graph.node:
        del n.metadata_props[:]
        n.doc_string = ""
    return model.ByteSize()


def fix_dynamic_inputs(onnx_path: Path, source: Graph) -> None:
    """A `.pt2` exported with a `torch.export.Dim` converts to ONNX inputs with symbolic dims (`s77`); the source's
    inputs already carry the shapes the user set (or their defaults). The converted file takes those, and every
    shape inference derives from them, as an uploaded ONNX file does (`concrete.apply_plan`): without them each
    convolution of a dynamic-batch .pt2 was a task of unknown work on every ORT target. In place."""
    import onnx

    from compiler.concrete import fix_onnx_inputs

    model = onnx.load(os.fspath(onnx_path), load_external_data=False)
    symbolic = [vi.name for vi in model.graph.input if vi.type.HasField("tensor_type")
                and any(not d.HasField("dim_value") for d in vi.type.tensor_type.shape.dim)]
    shapes = {n: list(source.values[n].shape or []) for n in symbolic
              if n in source.values and source.values[n].is_static}
    if shapes:
        fix_onnx_inputs(onnx_path, onnx_path, shapes)


def _harden_torch_loading() -> None:
    """In the child only: no unpickling beyond weights_only, whatever torch's archive reader asks."""
    import types

    import torch
    from torch.export.pt2_archive import _package

    real_load = torch.load

    def weights_only_load(*args: Any, **kwargs: Any) -> Any:
        kwargs["weights_only"] = True
        return real_load(*args, **kwargs)

    def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise ModelFormatError("the .pt2 archive holds a pickled custom object; Edgescope does not unpickle those")

    torch.load = weights_only_load  # type: ignore[assignment]
    _package.torch.load = weights_only_load  # same module object; explicit for readers
    _package.pickle = types.SimpleNamespace(loads=refuse, load=refuse, dumps=_package.pickle.dumps)  # type: ignore[attr-defined]
    torch._C._pickle_load_obj = refuse  # torchbind objects


def load_vetted_program(src: str) -> Any:
    """torch.export.load in a conversion child, only after every pickle in the archive was vetted
    again (the child trusts nothing it was handed) and torch's loaders were hardened.
    Call inside the child's output-silencing block."""
    from compiler.frontends.pt2 import Pt2Archive

    arc = Pt2Archive(src)
    try:
        arc.vet_pickles()
    finally:
        arc.close()
    _harden_torch_loading()
    import torch

    try:
        return torch.export.load(src)
    except ModelFormatError:
        raise
    except Exception as e:
        raise ModelFormatError(f"torch cannot load the .pt2 archive: {str(e).strip()[:500]}") from None


@contextlib.contextmanager
def quiet_conversion(logger: str) -> Iterator[None]:
    """Converters print progress, warnings and logs; the child's output is for its result only."""
    logging.getLogger(logger).setLevel(logging.ERROR)
    sink = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        warnings.simplefilter("ignore")
        yield


def _convert_child(payload: dict[str, Any]) -> dict[str, Any]:
    import torch

    from compiler.backends.pt2_modules import program_modules

    with quiet_conversion("torch.onnx"):
        ep = load_vetted_program(payload["src"])
        names = {n.name for n in ep.graph.nodes}
        try:
            program = torch.onnx.export(ep, (), dynamo=True, verbose=False, optimize=True)
            program.save(payload["out"], external_data=False)
        except Exception as e:
            raise ModelRunError(f"the .pt2 model could not be converted to ONNX: {str(e).strip()[:800]}") from None
        decomposed = getattr(program, "exported_program", None)
        modules = program_modules(decomposed, names) if decomposed is not None else {}
    return {"torch": torch.__version__, "modules": modules}
