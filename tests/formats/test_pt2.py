"""PyTorch .pt2: export with sources, safe loading (no unpickling), hierarchy, source locations,
ONNX conversion for ort-cpu/host, and hostile archives carrying pickle payloads."""

from __future__ import annotations

import io
import json
import os
import pickle
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from compiler import frontends, sources
from compiler.backends import ort, pt2_onnx
from compiler.frontends import pt2
from compiler.graph import ModelFormatError
from compiler.profile import ProfileSettings
from edgescope.commands.export_pt2 import commands, export_pt2
from testkit.live import QUICK_ROUNDS
from testkit.modelzoo import PT2_SRC

SRC = PT2_SRC


@pytest.fixture(scope="session")
def net_pt2(models) -> Path:
    return models.get("net.pt2", lambda p: export_pt2(f"{SRC / 'net.py'}:build", p)[0])


@pytest.fixture(scope="session")
def converted(net_pt2: Path, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    workdir = tmp_path_factory.mktemp("pt2-ort")
    source = frontends.load(net_pt2)
    compiled, path = pt2_onnx.compile_for_ort(net_pt2, workdir, source)
    return source, compiled, path


# -- frontend ---------------------------------------------------------------------------------

def test_graph_hierarchy_and_weights(net_pt2: Path) -> None:
    assert frontends.detect(net_pt2) == "pt2"
    g = frontends.load(net_pt2)
    assert g.format == "pt2" and g.inputs == ["x"] and g.outputs == ["linear"]
    assert [n.op_type for n in g.nodes] == ["aten.conv2d", "aten.conv2d", "aten.relu", "aten.add",
                                            "aten.conv2d", "aten.relu", "aten.add", "aten.mean", "aten.linear"]
    by_id = {n.id: n for n in g.nodes}
    assert by_id["conv2d"].namespace == "stem (Conv2d)"  # qualified module name and class, containers without
    assert pt2.module_path("blocks.0 (Block)") == "blocks.0"
    assert by_id["conv2d_1"].namespace == "blocks/blocks.0 (Block)/blocks.0.conv (Conv2d)"
    assert by_id["conv2d_2"].namespace == "blocks/blocks.1 (Block)/blocks.1.conv (Conv2d)"
    assert by_id["add"].namespace == "blocks/blocks.0 (Block)" and by_id["add"].attributes["overload"] == "Tensor"
    assert by_id["conv2d"].attributes["padding"] == [1, 1]
    assert by_id["conv2d_1"].inputs == ["conv2d", "blocks.0.conv.weight", "blocks.0.conv.bias"]
    w = g.values["blocks.0.conv.weight"]
    assert w.shape == [8, 8, 3, 3] and w.dtype == "float32" and w.weight is not None
    import torch

    from testkit.pt2src.net import build

    ref = build()[0].blocks[0].conv.weight.detach()
    assert w.weight.max == pytest.approx(float(ref.max())) and w.weight.min == pytest.approx(float(ref.min()))
    assert g.values["conv2d_1"].shape == [1, 8, 16, 16]
    assert torch.is_tensor(ref)


def test_source_locations_point_at_user_lines(net_pt2: Path) -> None:
    g = frontends.load(net_pt2)
    by_id = {n.id: n for n in g.nodes}
    stem, conv = by_id["conv2d"].location, by_id["conv2d_1"].location
    assert stem is not None and (stem.file, stem.line) == ("net.py", 17) and stem.code.startswith("x = self.stem(x)")
    assert conv is not None and (conv.file, conv.line) == ("layers.py", 14) and "self.conv(x)" in conv.code
    assert by_id["relu"].location.line == 15  # type: ignore[union-attr]


def test_sources_listed_and_read(net_pt2: Path, tmp_path: Path) -> None:
    files = sources.list_sources(net_pt2)
    assert [f.path for f in files] == ["layers.py", "net.py"] and all(f.bytes > 100 for f in files)
    assert sources.read_source(net_pt2, "layers.py") == (SRC / "layers.py").read_text()
    for bad in ("../net.py", "/etc/passwd", "pt2src/../../x", "missing.py", ""):
        with pytest.raises(sources.SourceNotFound):
            sources.read_source(net_pt2, bad)
    onnx_file = tmp_path / "m.onnx"
    onnx_file.write_bytes(b"\x08\x07")
    assert sources.list_sources(onnx_file) == []


def test_cli_command(tmp_path: Path) -> None:
    (cmd,) = commands
    out = tmp_path / "cli.pt2"
    result = CliRunner().invoke(cmd, [f"{SRC / 'net.py'}:build", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "2 source file(s)" in result.output and out.stat().st_size > 1000
    bad = CliRunner().invoke(cmd, [f"{SRC / 'net.py'}:nope", "--out", str(out)])
    assert bad.exit_code != 0 and "no function 'nope'" in bad.output


# -- ONNX conversion and ORT ----------------------------------------------------------------

def test_onnx_conversion_maps_tasks_to_fx_nodes(converted) -> None:  # type: ignore[no-untyped-def]
    source, compiled, path = converted
    ids = {n.id for n in source.nodes}
    covered = {s for n in compiled.nodes for s in n.source_nodes}
    assert covered | set(compiled.eliminated) == ids
    assert all(set(n.source_nodes) <= ids for n in compiled.nodes)
    fused = next(n for n in compiled.nodes if "relu" in n.source_nodes)
    assert "conv2d_1" in fused.source_nodes and fused.namespace.startswith("blocks/blocks.0 (Block)")
    prof = ort.profile(path, ProfileSettings(runs=5, warmup=1, **QUICK_ROUNDS))
    assert prof.latency_ms > 0 and set(prof.tasks) <= {n.id for n in compiled.nodes} and prof.tasks


# -- hostile archives -------------------------------------------------------------------------

class _Payload:
    """Unpickling this runs `touch <marker>`."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (os.system, (f"touch {self.marker}",))


def _replace(src: Path, dst: Path, rel: str, data: bytes, config: tuple[str, dict] | None = None) -> Path:
    """Copy the archive, putting `data` at `<archive>/<rel>` (and rewriting a config JSON)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        prefix = next(n for n in zin.namelist() if n.endswith("archive_format"))[: -len("archive_format")]
        for info in zin.infolist():
            name = info.filename[len(prefix):]
            if name == rel:
                continue
            if config and name == config[0]:
                zout.writestr(info, json.dumps(config[1]))
            else:
                zout.writestr(info, zin.read(info))
        zout.writestr(prefix + rel, data)
    return dst


def test_payload_is_real(tmp_path: Path) -> None:
    # The payload used below does run when unpickled naively: the tests that follow are meaningful.
    marker = tmp_path / "pwned-control"
    data = pickle.dumps(_Payload(marker), protocol=2)
    subprocess.run([sys.executable, "-c", "import pickle,sys; pickle.loads(sys.stdin.buffer.read())"],
                   input=data, check=True)
    assert marker.exists()


def _torch_zip_with(payload: bytes) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("archive/data.pkl", payload)
        z.writestr("archive/version", "3\n")
    return buf.getvalue()


@pytest.mark.parametrize("how", ["raw-constant", "torch-zip-sample-inputs", "pickled-weight", "stack-global",
                                 "decoy-config"])
def test_pickle_payload_refused_and_not_run(net_pt2: Path, tmp_path: Path, how: str) -> None:
    marker = tmp_path / f"pwned-{how}"
    evil = pickle.dumps(_Payload(marker), protocol=4 if how == "stack-global" else 2)
    bad = tmp_path / f"{how}.pt2"
    if how == "raw-constant":
        _replace(net_pt2, bad, "data/constants/custom_obj_0", evil)
    elif how in ("torch-zip-sample-inputs", "stack-global"):
        _replace(net_pt2, bad, "data/sample_inputs/model.pt", _torch_zip_with(evil))
    else:
        with zipfile.ZipFile(net_pt2) as z:
            cfg_name = next(n for n in z.namelist() if n.endswith("model_weights_config.json"))
            cfg = json.loads(z.read(cfg_name))
        key, first = next(iter(cfg["config"].items()))
        first["use_pickle"] = True
        if how == "decoy-config":  # one entry says the file is raw bytes, another pickles the same file
            cfg["config"][key + "_decoy"] = dict(first)
            first["use_pickle"] = False
        rel = f"data/weights/{first['path_name']}"
        _replace(net_pt2, bad, rel, _torch_zip_with(evil), ("data/weights/model_weights_config.json", cfg))
    with pytest.raises(ModelFormatError, match="posix.system|os.system|refusing|refused"):
        frontends.load(bad)
    with pytest.raises(ModelFormatError):
        pt2_onnx.to_onnx(bad, tmp_path / "out.onnx")
    assert not marker.exists()


def test_child_hardening_blocks_unpickling_even_without_the_scan(tmp_path: Path) -> None:
    # Defence in depth: in the conversion child, torch.load is weights_only whatever its caller asks.
    marker = tmp_path / "pwned-child"
    evil = tmp_path / "evil.pt"
    import torch

    torch.save({"x": _Payload(marker)}, evil)
    code = ("import sys, torch\nfrom compiler.backends.pt2_onnx import _harden_torch_loading\n"
            "_harden_torch_loading()\n"
            "try:\n    torch.load(sys.argv[1], weights_only=False)\nexcept Exception as e:\n    print('refused', type(e).__name__)\n")
    out = subprocess.run([sys.executable, "-c", code, str(evil)], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[2], check=True)
    assert "refused" in out.stdout and not marker.exists()


def test_not_an_export_archive(tmp_path: Path) -> None:
    p = tmp_path / "plain.pt2"
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("weights/data.pkl", b"\x80\x02}q\x00.")
    with pytest.raises(ModelFormatError, match="not a torch.export archive"):
        frontends.load(p)


def test_location_parser_handles_missing_code_lines() -> None:
    trace = ('File "<stdin>", line 6, in forward\n  File "/x/site-packages/torch/nn/modules/conv.py", line 5, in f\n'
             '    return self._conv_forward(x)')
    loc = pt2.location_from_trace(trace)
    assert loc is not None and (loc.file, loc.line, loc.code) == ("<stdin>", 6, "")


def test_malformed_program_json_is_a_format_error(net_pt2: Path, tmp_path: Path) -> None:
    """Fields deleted or retyped at random: a Graph or a ModelFormatError, never another exception."""
    import random

    with zipfile.ZipFile(net_pt2) as z:
        members = {n: z.read(n) for n in z.namelist()}
    program_name = next(n for n in members if n.endswith("models/model.json"))
    base = json.loads(members[program_name])

    def paths(o, pre=()):  # type: ignore[no-untyped-def]
        items = o.items() if isinstance(o, dict) else enumerate(o) if isinstance(o, list) else []
        for k, v in items:
            yield pre + (k,)
            yield from paths(v, pre + (k,))

    every = list(paths(base))
    rng = random.Random(0)
    errors = 0
    for trial in range(150):
        doc = json.loads(json.dumps(base))
        where = rng.choice(every)
        parent = doc
        for k in where[:-1]:
            parent = parent[k]
        parent[where[-1]] = rng.choice([None, 1, "x", [], {}, -5, 1e309, {"zzz": 1}])
        out = tmp_path / f"fuzz{trial}.pt2"
        with zipfile.ZipFile(out, "w") as zo:
            for n, data in members.items():
                zo.writestr(n, json.dumps(doc) if n == program_name else data)
        try:
            pt2.load(out)
        except ModelFormatError:
            errors += 1
        out.unlink()
    assert errors > 10  # the mutations do break things, and every break was a ModelFormatError
