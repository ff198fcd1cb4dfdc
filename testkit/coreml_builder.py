"""Core ML models converted from small torch modules with coremltools on Linux (conversion works
there; prediction does not). `.mlpackage` folders are zipped the way users upload them."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import warnings
import zipfile
from pathlib import Path

import numpy as np


class SmallCnn:
    """Conv -> BN -> ReLU -> depthwise Conv -> mean -> Linear, as a torch module factory."""

    @staticmethod
    def build():  # type: ignore[no-untyped-def]
        import torch
        from torch import nn

        class Net(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU())
                self.dw = nn.Conv2d(16, 16, 3, padding=1, groups=16)
                self.head = nn.Linear(16, 10)

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                y = self.dw(self.stem(x))
                return self.head(y.mean((2, 3)))

        torch.manual_seed(0)
        return Net().eval(), (torch.randn(1, 3, 32, 32),)


def _block():  # type: ignore[no-untyped-def]
    """Pre-norm attention + MLP block written with plain ops (nn.TransformerEncoderLayer's fused
    fast path traces differently on each call)."""
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self, d: int = 32, heads: int = 4) -> None:
            super().__init__()
            self.heads = heads
            self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, t, d = 1, 16, 32  # static: traced shape arithmetic trips coremltools' int casts
            q, k, v = self.qkv(self.norm1(x)).reshape(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
            att = torch.softmax(q @ k.transpose(-2, -1) * (d // self.heads) ** -0.5, dim=-1)
            x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))
            return x + self.mlp(self.norm2(x))

    torch.manual_seed(1)
    return Block().eval(), (torch.randn(1, 16, 32),)


def _convert(module, args, convert_to: str):  # type: ignore[no-untyped-def]
    import torch

    logging.getLogger("coremltools").setLevel(logging.ERROR)
    sink = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        warnings.simplefilter("ignore")
        import coremltools as ct

        traced = torch.jit.trace(module, args)
        inputs = [ct.TensorType(name=f"x{i}" if i else "x", shape=a.shape) for i, a in enumerate(args)]
        kw = {"minimum_deployment_target": ct.target.iOS16} if convert_to == "mlprogram" else {}
        return ct.convert(traced, inputs=inputs, convert_to=convert_to, **kw)


def zip_dir(folder: Path, out: Path, top: str | None = None) -> Path:
    """Zip `folder` with its name as the top-level directory (as Finder's "Compress" does)."""
    top = top if top is not None else folder.name
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for root, _, files in os.walk(folder):
            for f in sorted(files):
                full = Path(root, f)
                z.write(full, str(Path(top, full.relative_to(folder))) if top else str(full.relative_to(folder)))
    return out


def mlpackage_zip(path: str | os.PathLike[str], which: str = "cnn") -> Path:
    """`which` = "cnn" | "block": an ML Program converted from torch, saved as .mlpackage, zipped."""
    module, args = SmallCnn.build() if which == "cnn" else _block()
    return mlpackage_from(module, args, path)


def mlpackage_from(module, args, path: str | os.PathLike[str]) -> Path:  # type: ignore[no-untyped-def]
    """Any torch module as a zipped ML Program (`path` ends in .mlpackage.zip)."""
    ml = _convert(module, args, "mlprogram")
    path = Path(path)
    pkg = path.with_name(path.name.removesuffix(".zip").removesuffix(".mlpackage") + ".mlpackage")
    ml.save(os.fspath(pkg))
    return zip_dir(pkg, path)


def mlmodel_nn(path: str | os.PathLike[str]) -> Path:
    """A NeuralNetwork `.mlmodel` (single file, weights inside) of the small CNN."""
    module, args = SmallCnn.build()
    ml = _convert(module, args, "neuralnetwork")
    ml.save(os.fspath(path))
    return Path(path)


def expected_stem_weight() -> np.ndarray:
    module, _ = SmallCnn.build()
    return module.stem[0].weight.detach().numpy()


def compressible_mlpackage_zip(path: str | os.PathLike[str]) -> Path:
    """Two convolutions and a Linear whose weights (18k, 37k, 524k elements) are over coremltools'
    compression threshold, as a zipped fp16 ML Program (about 1.2 MB): exports visibly shrink it."""
    import torch
    from torch import nn

    from compiler.optimize.coreml_export import convert

    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(),
                      nn.Flatten(), nn.Linear(64 * 8 * 8, 128))
    sink = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        warnings.simplefilter("ignore")
        ml = convert(m, [torch.randn(1, 32, 8, 8)])
    path = Path(path)
    pkg = path.with_name(path.name.removesuffix(".zip").removesuffix(".mlpackage") + ".mlpackage")
    ml.save(os.fspath(pkg))
    return zip_dir(pkg, path)


def mlpackage_int8_zip(path: str | os.PathLike[str]) -> Path:
    """The small CNN as users ship a weight-quantized one: converted at coremltools' defaults (iOS 15, fp16), then
    `linear_quantize_weights` (int8 per channel: iOS 16 `constexpr_affine_dequantize` ops), zipped. The threshold
    is 0 so the tiny kernels are quantized too (coremltools' default skips weights under 2048 values)."""
    import torch

    module, args = SmallCnn.build()
    sink = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        warnings.simplefilter("ignore")
        import coremltools as ct
        import coremltools.optimize.coreml as cto

        ml = ct.convert(torch.jit.trace(module, args), inputs=[ct.TensorType(name="x", shape=args[0].shape)])
        config = cto.OptimizationConfig(global_config=cto.OpLinearQuantizerConfig(weight_threshold=0))
        ml = cto.linear_quantize_weights(ml, config)
    path = Path(path)
    pkg = path.with_name(path.name.removesuffix(".zip").removesuffix(".mlpackage") + ".mlpackage")
    ml.save(os.fspath(pkg))
    return zip_dir(pkg, path)
