"""The ways users turn a torch module into a deployable file, one function per exporter name.

| name | file | how |
|---|---|---|
| `dynamo` | .onnx | `torch.onnx.export(..., dynamo=True)`, static shapes, the exporter's default opset |
| `dynamo-dyn` | .onnx | the same with dynamic batch and H/W (sequence length for sequences) |
| `ts` | .onnx | the TorchScript exporter (`dynamo=False`), opset 17, static shapes |
| `ts-dyn` | .onnx | the TorchScript exporter with `dynamic_axes` on batch and H/W (or length) |
| `ts-op12` | .onnx | the TorchScript exporter at opset 12, as older deployment stacks still ask |
| `pt2` | .pt2 | `torch.export.export` then `torch.export.save` |
| `tflite` | .tflite | the `.pt2` through litert-torch, in the converter venv (`compiler.backends.pt2_tflite.to_tflite`) |
| `tflite-fp16` | .tflite | that `.tflite` with fp16 weights behind DEQUANTIZE (ai-edge-quantizer, as `edgescope optimize`) |
| `tflite-int8` | .tflite | that `.tflite` with int8 weights, activations quantized at run time (ai-edge-quantizer) |
| `coreml` | .mlpackage.zip | `coremltools.convert` of a `torch.jit.trace`d module, its defaults: ML Program, iOS 15, fp16 compute |
| `coreml-ep` | .mlpackage.zip | the same from `torch.export.export(...).run_decompositions({})` (coremltools' beta path) |
| `coreml-nn` | .mlmodel | the traced module as a NeuralNetwork (`convert_to="neuralnetwork"`: fp32 weights) |
| `coreml-w8` | .mlpackage.zip | the `coreml` package with int8 weights (`coremltools.optimize.coreml.linear_quantize_weights`) |

coremltools recommends the `torch.jit.trace` path and calls the `torch.export` one beta (docs-guides
`convert-pytorch-workflow.html`); an ML Program's default precision is fp16 (`convert-to-ml-program.html`).
A package is uploaded as one zip file (the directory zipped, stored, as `compiler.backends.coreml.zip_package`).
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import warnings
from dataclasses import dataclass
from pathlib import Path

TS_OPSET = 17


@dataclass(frozen=True)
class Exporter:
    name: str
    suffix: str
    needs: str | None  # the exporter whose file this one converts (None: built from the torch module)
    dynamic: bool = False


EXPORTERS: dict[str, Exporter] = {x.name: x for x in (
    Exporter("dynamo", ".onnx", None),
    Exporter("dynamo-dyn", ".onnx", None, dynamic=True),
    Exporter("ts", ".onnx", None),
    Exporter("ts-dyn", ".onnx", None, dynamic=True),
    Exporter("ts-op12", ".onnx", None),
    Exporter("pt2", ".pt2", None),
    Exporter("tflite", ".tflite", "pt2"),
    Exporter("tflite-fp16", ".tflite", "tflite"),
    Exporter("tflite-int8", ".tflite", "tflite"),
    Exporter("coreml", ".mlpackage.zip", None),
    Exporter("coreml-ep", ".mlpackage.zip", None),
    Exporter("coreml-nn", ".mlmodel", None),
    Exporter("coreml-w8", ".mlpackage.zip", "coreml"),
)}


@contextlib.contextmanager
def _quiet():  # type: ignore[no-untyped-def]
    """Exporters print pages of warnings and progress; the record keeps the one-line reason of a failure."""
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)
    sink = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        warnings.simplefilter("ignore")
        yield


def export_torch(built, exporter: str, out: Path) -> None:  # type: ignore[no-untyped-def]
    """Write `built` (corpus.builders.Built) with one of the torch exporters."""
    import torch

    x = EXPORTERS[exporter]
    names = dict(input_names=built.input_names, output_names=built.output_names)
    # No torch.no_grad(): under it nn.TransformerEncoderLayer takes its fused fast path, which the TorchScript
    # exporter cannot export (aten::_transformer_encoder_layer_fwd); users export with grad enabled.
    with _quiet():
        if exporter in ("dynamo", "dynamo-dyn"):
            dyn = None
            if x.dynamic:
                dyn = tuple({d: torch.export.Dim.DYNAMIC for d in built.dynamic_dims[n]} for n in built.input_names)
            torch.onnx.export(built.module, built.args, os.fspath(out), dynamo=True, dynamic_shapes=dyn,
                              external_data=False, **names)
        elif exporter in ("ts", "ts-dyn", "ts-op12"):
            axes = None
            if x.dynamic:
                axes = {n: {d: f"{n}_dim{d}" for d in built.dynamic_dims[n]} for n in built.input_names}
            module = torch.jit.script(built.module) if built.script else built.module
            torch.onnx.export(module, built.args, os.fspath(out), dynamo=False, dynamic_axes=axes,
                              opset_version=12 if exporter == "ts-op12" else TS_OPSET, do_constant_folding=True,
                              **names)
        elif exporter == "pt2":
            ep = torch.export.export(built.module, built.args)
            torch.export.save(ep, os.fspath(out))
        elif exporter.startswith("coreml"):
            _export_coreml(built, exporter, out)
        else:
            raise ValueError(f"{exporter} is not a torch exporter")


def _export_coreml(built, exporter: str, out: Path) -> None:  # type: ignore[no-untyped-def]
    """coremltools from torch as its guide shows: named inputs at the export shapes, everything else default."""
    import coremltools as ct
    import torch

    inputs = [ct.TensorType(name=n, shape=tuple(a.shape)) for n, a in zip(built.input_names, built.args)]
    module = built.module.eval()
    if exporter == "coreml-ep":
        model = torch.export.export(module, built.args).run_decompositions({})
    else:
        model = torch.jit.trace(module, built.args)
    mlmodel = ct.convert(model, inputs=inputs, convert_to="neuralnetwork" if exporter == "coreml-nn" else "mlprogram")
    _save_coreml(mlmodel, out)


def _save_coreml(mlmodel, out: Path) -> None:  # type: ignore[no-untyped-def]
    """An .mlmodel as is; a package as one zip of its directory (the upload format)."""
    import tempfile

    if out.suffix == ".mlmodel":
        mlmodel.save(os.fspath(out))
        return
    from compiler.backends.coreml import zip_package

    with tempfile.TemporaryDirectory(prefix="corpus-coreml-") as d:
        pkg = Path(d) / "model.mlpackage"
        mlmodel.save(os.fspath(pkg))
        zip_package(pkg, out)


def _quantize_coreml(src: Path, out: Path) -> None:
    """int8 per-channel weights on an ML Program, as coremltools' optimization guide ships them."""
    import tempfile
    import zipfile

    import coremltools as ct
    import coremltools.optimize.coreml as cto

    with _quiet(), tempfile.TemporaryDirectory(prefix="corpus-coreml-") as d:
        with zipfile.ZipFile(src) as z:
            z.extractall(d)
        pkg = next(Path(d).glob("*.mlpackage"))
        mlmodel = ct.models.MLModel(os.fspath(pkg), skip_model_load=True)
        config = cto.OptimizationConfig(global_config=cto.OpLinearQuantizerConfig(mode="linear_symmetric"))
        _save_coreml(cto.linear_quantize_weights(mlmodel, config), out)


def convert(exporter: str, src: Path, out: Path, timeout_s: float) -> None:
    """Write the file of an exporter that converts another export (`tflite*`)."""
    if exporter == "tflite":
        from compiler.backends.pt2_tflite import converter_python, to_tflite

        python = converter_python()
        if python is None:
            raise RuntimeError("the litert-torch converter venv is missing (make converter, or "
                               "EDGESCOPE_LITERT_TORCH_PYTHON)")
        to_tflite(src, out, python, timeout_s=timeout_s)
    elif exporter in ("tflite-fp16", "tflite-int8"):
        from compiler.optimize.litert_export import export_tflite

        export_tflite(src, out, "fp16" if exporter == "tflite-fp16" else "int8-dynamic", timeout_s=timeout_s)
    elif exporter == "coreml-w8":
        _quantize_coreml(src, out)
    else:
        raise ValueError(f"{exporter} converts nothing")

