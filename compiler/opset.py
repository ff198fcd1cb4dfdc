"""The ONNX opset a file must have for ONNX Runtime and its tools, and onnx.version_converter's conversion to it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# ONNX Runtime runs only opset 7 and later of the default domain (it refuses the opset-6 files of the onnx wheel's
# pytorch-converted tests: "Could not find an implementation for AveragePool(1)"); older files are converted to it.
ORT_MIN_OPSET = 7


def opset(model: Any) -> int:
    """The model's default-domain opset (0 when it imports none, as a file of ai.onnx.ml ops only)."""
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)


def declared_opset(metadata: Mapping[str, str]) -> int | None:
    """The default-domain opset a Graph's `metadata["opsets"]` declares (as compiler.frontends.onnx writes it:
    "ai.onnx:17,ai.onnx.ml:3"); None where it names none (not an ONNX graph, or ai.onnx.ml ops only)."""
    for item in metadata.get("opsets", "").split(","):
        domain, _, version = item.rpartition(":")
        if domain in ("ai.onnx", "") and version.isdigit():
            return int(version)
    return None


def upgrade_opset(model: Any) -> Any:
    """`model` converted to ORT_MIN_OPSET (onnx.version_converter) when its default-domain opset is older;
    unchanged when it is not or the conversion fails (then ONNX Runtime's own error says why it cannot load)."""
    have = opset(model) or ORT_MIN_OPSET
    if have >= ORT_MIN_OPSET:
        return model
    try:
        return convert_opset(model, ORT_MIN_OPSET)
    except Exception:  # noqa: BLE001 - the runtime reports the old opset it cannot load
        return model


def convert_opset(model: Any, version: int) -> Any:
    """onnx.version_converter's conversion. The converter takes an initializer that is no graph input for an
    undefined value ("Input w is undefined!"), as IR < 4 required them listed; they are listed while it runs."""
    import onnx
    from onnx import version_converter

    have = opset(model) or version
    if have < 7 <= version:
        model = _channel_slopes(model)
    listed = {vi.name for vi in model.graph.input}
    extra = [i for i in model.graph.initializer if i.name not in listed]
    if not extra:
        return version_converter.convert_version(model, version)

    work = onnx.ModelProto()
    work.CopyFrom(model)
    work.graph.input.extend(onnx.helper.make_tensor_value_info(i.name, i.data_type, list(i.dims)) for i in extra)
    out = version_converter.convert_version(work, version)
    names = {i.name for i in extra}
    kept = [vi for vi in out.graph.input if vi.name not in names]
    del out.graph.input[:]
    out.graph.input.extend(kept)
    return out


def _channel_slopes(model: Any) -> Any:
    """A copy of an opset-6 `model` whose PRelu slopes of shape [C] read [C, 1, ...]: opset 6 applies a [C] slope per
    channel (axis 1), opset 7 broadcasts it from the right, and the converter leaves it as it is (the onnx wheel's
    PReLU_*_multiparam files then failed in ORT: "PRelu ... broadcast")."""
    import onnx

    inits = {i.name: i for i in model.graph.initializer}
    nodes = [n for n in model.graph.node if n.op_type == "PRelu" and len(n.input) > 1 and n.input[1] in inits]
    if not nodes:
        return model
    try:
        typed = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001 - without ranks the slopes stay as they are
        return model
    ranks = {vi.name: len(vi.type.tensor_type.shape.dim) for vi in
             [*typed.graph.input, *typed.graph.value_info, *typed.graph.output]
             if vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape")}
    out = onnx.ModelProto()
    out.CopyFrom(model)
    slopes = {i.name: i for i in out.graph.initializer}
    for n in nodes:
        slope, rank = slopes[n.input[1]], ranks.get(n.input[0], 0)
        if len(slope.dims) == 1 and slope.dims[0] > 1 and rank > 2:
            slope.dims[:] = [slope.dims[0]] + [1] * (rank - 2)
            for vi in out.graph.input:  # IR 3 lists the slope as a graph input too
                if vi.name == slope.name:
                    vi.CopyFrom(onnx.helper.make_tensor_value_info(slope.name, slope.data_type, list(slope.dims)))
    return out
