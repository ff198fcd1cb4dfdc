"""`edgescope export-pt2 model.py:factory --out model.pt2`: torch.export a model and save it with
the source files its ops came from, so the server's code browser can show them.

`factory` is a function in `model.py` returning `(module, example_args)` (a tuple of tensors),
or a module with an `example_inputs` attribute. Sources saved: `model.py` and every other `.py`
file under its folder that a node's stack trace names (layout: `compiler/sources.py`).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import click

MAX_FILE_BYTES = 1024 * 1024
MAX_FILES = 200


def load_factory(spec: str) -> tuple[Any, tuple[Any, ...], Path]:
    """`path/to/model.py:factory` -> (module, example args, model.py path). Runs the user's own file."""
    file, sep, func = spec.rpartition(":")
    if not sep or not file or not func:
        raise click.BadParameter("write MODEL.py:FUNCTION, e.g. net.py:build", param_hint="SPEC")
    path = Path(file).resolve()
    if not path.is_file():
        raise click.BadParameter(f"{file} does not exist", param_hint="SPEC")
    sys.path.insert(0, str(path.parent))  # the model's own imports of sibling files
    mod_spec = importlib.util.spec_from_file_location(f"edgescope_user_{path.stem}", path)
    assert mod_spec is not None and mod_spec.loader is not None
    mod = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(mod)
    factory = getattr(mod, func, None)
    if not callable(factory):
        raise click.BadParameter(f"{path.name} has no function '{func}'", param_hint="SPEC")
    made = factory()
    if isinstance(made, tuple) and len(made) == 2:
        module, args = made
    else:
        module, args = made, getattr(made, "example_inputs", None)
    if args is None:
        raise click.ClickException(f"{func}() must return (module, example_args) or a module with example_inputs")
    return module, tuple(args) if isinstance(args, (tuple, list)) else (args,), path


def source_files(ep: Any, root: Path, model_file: Path) -> list[str]:
    """Relative paths of the .py files under `root` that produced ops (plus the model file)."""
    from compiler.frontends.pt2 import TRACEBACK_FRAME

    found = {model_file.resolve()}
    for node in ep.graph.nodes:
        for line in (node.meta.get("stack_trace") or "").splitlines():
            m = TRACEBACK_FRAME.match(line)
            if m:
                p = Path(m["file"])
                if p.suffix == ".py" and p.is_file() and root in p.resolve().parents:
                    found.add(p.resolve())
    rel = sorted(str(p.relative_to(root)).replace("\\", "/") for p in found if p.stat().st_size <= MAX_FILE_BYTES)
    return rel[:MAX_FILES]


def export_pt2(spec: str, out: Path) -> tuple[Path, list[str]]:
    """Export the factory's model to `out` with its sources; returns (out, saved source paths)."""
    import torch

    module, args, model_file = load_factory(spec)
    if hasattr(module, "eval"):
        module.eval()
    ep = torch.export.export(module, args)
    root = model_file.parent
    files = source_files(ep, root, model_file)
    extra = {f"edgescope_sources/{f}": (root / f).read_text("utf-8", "replace") for f in files}
    extra["edgescope_sources.json"] = json.dumps({"root": str(root), "files": files})
    torch.export.save(ep, str(out), extra_files=extra)
    return out, files


@click.command("export-pt2")
@click.argument("spec", metavar="MODEL.py:FACTORY")
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Where to write the .pt2 archive.")
def export_pt2_command(spec: str, out: Path) -> None:
    """torch.export the model FACTORY() returns and save it with its source files."""
    path, files = export_pt2(spec, out)
    click.echo(f"wrote {path} ({path.stat().st_size} bytes) with {len(files)} source file(s): {', '.join(files)}")


commands: list[click.Command] = [export_pt2_command]
