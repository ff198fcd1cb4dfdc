"""Write the optimized ONNX model for a model-wide option plus per-op overrides.

Uses ONNX Runtime's own tools so the file is what a user would ship: `quantize_static` (QDQ, per-node
via nodes_to_quantize, calibrated on generated inputs), `quantize_dynamic`, `MatMulNBitsQuantizer`
(4-bit), onnxruntime.transformers' float16 converter (per-node block list). Pruning zeroes the
smallest-magnitude weights; palettization stores packed k-means indices + a table, with a small
decode subgraph ORT constant-folds at load (so the file shrinks and run time is fp32's).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.external_data_helper import uses_external_data

from compiler.frontends.onnx_scopes import all_bodies, name_by_id
from compiler.optimize.choices import Choice, node_choices, resolve_option
from compiler.optimize.onnx_prepare import (OPSET_DYNAMIC_INT8, OPSET_PALETTE, OPSET_STATIC_INT8, clear_value_info,
                                             drop_cast_pairs, named_copy, one_line, opset, quant_ready, read_in_bodies,
                                             topo_sort)
from compiler.optimize.onnx_qdq import activation_pairs, restore_float
from compiler.optimize.palette import palettize_nodes
from compiler.optimize.onnx_rules import (FLOAT_FORMAT, FP16_KEPT, STORED_INT8_OPS, as_written, combo_reason,
                                          left_float, rule_op)
from compiler.optimize.onnx_verify import check_ops, check_runs
from compiler.vocabulary.formats import lut_bits
from compiler.vocabulary.options import OptionError

WEIGHTED_OPS = frozenset({"Conv", "Gemm", "MatMul", "ConvTranspose"})
QDQ_OPS = ("QuantizeLinear", "DequantizeLinear")
QDQ_AS_UPLOADED = ("the upload is already quantized in QDQ form: its int8-static file is the upload as it is "
                   "(its own quantization)")
_NO_KINDS: dict[str, list[str]] = {"static": [], "dynamic": [], "fp16": [], "int4": [], "lut": []}


@dataclass
class ExportResult:
    path: Path
    size_bytes: int
    choices: dict[str, str]  # node name -> combo name applied
    notes: list[str] = field(default_factory=list)


def kernel_input(node: onnx.NodeProto, inits: Mapping[str, onnx.TensorProto]) -> str | None:
    """Name of the weight initializer an option acts on, or None."""
    if node.op_type in WEIGHTED_OPS and len(node.input) > 1 and node.input[1] in inits:
        t = inits[node.input[1]]
        if len(t.dims) >= 2 and t.data_type in (TensorProto.FLOAT, TensorProto.FLOAT16):
            return node.input[1]
    return None


def preprocess(src: str | os.PathLike[str], out: str | os.PathLike[str]) -> onnx.ModelProto:
    """ORT basic optimizations (constant folding, BatchNorm into Conv, Identity removal): the weights
    the runtime really has, and what the quantizers expect."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    so.optimized_model_filepath = os.fspath(out)
    so.intra_op_num_threads = 1
    # MatMul+Add stays MatMul + Add: MatMulNBits quantizes MatMul only, and ORT fuses again at load.
    ort.InferenceSession(os.fspath(src), so, providers=["CPUExecutionProvider"],
                         disabled_optimizers=["MatMulAddFusion"])
    model = onnx.load(os.fspath(out))
    if _gemm_to_matmul(model):
        onnx.save(model, os.fspath(out))
    return model


def _gemm_to_matmul(model: onnx.ModelProto) -> bool:
    """Rewrite Gemm(A, const B, C) as MatMul + Add: quantize_dynamic and MatMulNBits only handle MatMul,
    and ORT fuses MatMul + Add back into Gemm when it loads the fp32 parts. The MatMul keeps the
    Gemm's name, so per-op options keyed by it still apply."""
    inits = {t.name: t for t in model.graph.initializer}
    nodes: list[onnx.NodeProto] = []
    changed = False
    transposed: set[str] = set()
    transposed_by_other = {n.input[1] for n in model.graph.node if n.op_type == "Gemm" and len(n.input) > 1 and not
                           any(x.name == "transB" and helper.get_attribute_value(x) for x in n.attribute)}
    # A weight an If / Loop / Scan body reads too (a scripted decoder's output layer, run before and inside its
    # loop) keeps its layout: transposed here, the body's Gemm read it the wrong way round and no option exported.
    transposed_by_other |= read_in_bodies(model.graph)
    for n in model.graph.node:
        a = {x.name: helper.get_attribute_value(x) for x in n.attribute}
        if (n.op_type != "Gemm" or len(n.input) < 2 or n.input[1] not in inits or a.get("transA", 0)
                or a.get("alpha", 1.0) != 1.0 or a.get("beta", 1.0) != 1.0):
            nodes.append(n)
            continue
        b = inits[n.input[1]]
        if a.get("transB", 0) and b.name in transposed_by_other:
            nodes.append(n)  # a weight shared with a Gemm that reads it untransposed: leave as is
            continue
        if a.get("transB", 0) and b.name not in transposed:
            transposed.add(b.name)
            arr = numpy_helper.to_array(b).T.copy()
            b.CopyFrom(numpy_helper.from_array(arr, b.name))
        has_c = len(n.input) > 2 and n.input[2]
        mm_out = f"{n.output[0]}__matmul" if has_c else n.output[0]
        nodes.append(helper.make_node("MatMul", [n.input[0], n.input[1]], [mm_out], name=n.name))
        if has_c:
            nodes.append(helper.make_node("Add", [mm_out, n.input[2]], [n.output[0]], name=f"{n.name}/bias"))
        changed = True
    if changed:
        del model.graph.node[:]
        model.graph.node.extend(nodes)
    return changed


def _restore_float(model: onnx.ModelProto) -> bool:
    """A QDQ upload's float graph (compiler.optimize.onnx_qdq), its Gemms by weights it now holds as MatMuls as
    preprocess makes them (else quantize_dynamic renames them and the option misses them); False if not QDQ."""
    if not restore_float(model):
        return False
    _gemm_to_matmul(model)
    return True


def prune(w: np.ndarray, sparsity: int) -> np.ndarray:
    """Zero the `sparsity`% smallest-magnitude values of w (ties broken by order)."""
    if sparsity <= 0:
        return w
    flat = w.reshape(-1).copy()
    k = int(round(flat.size * sparsity / 100))
    if k:
        flat[np.argsort(np.abs(flat), kind="stable")[:k]] = 0
    return flat.reshape(w.shape)


class _RandomReader:
    """Calibration data for quantize_static: `samples` random batches shaped like the inputs, in each input's
    dtype; `values`: inputs set to one value (a sample rate), as the analysis ran them."""

    def __init__(self, model: onnx.ModelProto, samples: int = 8, shapes: Mapping[str, list[int]] | None = None,
                 values: Mapping[str, float] | None = None):
        rng = np.random.default_rng(0)
        inits = {t.name for t in model.graph.initializer}
        feeds = []
        for _ in range(samples):
            feed = {}
            for i in model.graph.input:
                if i.name in inits:
                    continue
                shape = list((shapes or {}).get(i.name) or [d.dim_value if d.dim_value > 0 else 1
                                                             for d in i.type.tensor_type.shape.dim])
                dt = np.dtype(helper.tensor_dtype_to_np_dtype(i.type.tensor_type.elem_type))
                if values and i.name in values:
                    feed[i.name] = np.full(shape, values[i.name], dt)
                elif dt == np.bool_:
                    feed[i.name] = rng.integers(0, 2, size=shape).astype(dt)
                elif np.issubdtype(dt, np.integer):
                    # Ids and indices: 0 and 1 stay inside any table they index; images in uint8 take any byte.
                    feed[i.name] = rng.integers(0, 256 if dt == np.uint8 else 2, size=shape).astype(dt)
                else:
                    feed[i.name] = rng.standard_normal(shape).astype(dt)
            feeds.append(feed)
        self._it = iter(feeds)

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._it, None)

    def rewind(self) -> None:  # pragma: no cover - API of CalibrationDataReader
        pass


def export_onnx(model_path: str | os.PathLike[str], out_path: str | os.PathLike[str], model_wide: str,
                overrides: Mapping[str, str] | None = None,
                input_shapes: Mapping[str, list[int]] | None = None, calibration_samples: int = 8,
                input_values: Mapping[str, float] | None = None, check: bool = True,
                upload: bool = True, _bound: bool = True) -> ExportResult:
    """Optimize `model_path` for ONNX Runtime CPU. Overrides are keyed by the analysis' node ids (a node's name
    where it is unique; compiler.frontends.onnx_scopes.assign_ids). The file written is checked (loads, runs,
    has the ops each option promises) before it is returned; every failure is an OptionError in one sentence.
    A QDQ upload's int8-static is the upload as it is (its own quantization, as predicted: simulator.qdq); every
    other option starts from its float graph (compiler.optimize.onnx_qdq), which is its fp32 export.
    `upload`: fp32 may write `model_path` itself (False: a file converted from the upload, such as a `.pt2`'s)."""
    out_path = Path(out_path)
    with tempfile.TemporaryDirectory() as td:
        tmp = Path(td)
        # The opset the option's ops need is known exactly once the options are resolved on the prepared model's
        # nodes; it is at most the one its combos need (_opset_bound), so the model is prepared at that one first:
        # preparing twice (load, convert, ORT's optimizations, save) took minutes on VGG-16's 528 MB opset-12 file.
        notes: list[str] = []
        base, bound = [0], (_opset_bound(model_wide, overrides or {}) if _bound else 0)
        try:
            pre = _prepared(model_path, tmp, bound, notes, base)
        except OptionError:  # the conversion failed: the option may need none (a QDQ upload's int8-static)
            notes, base, bound = [], [0], 0
            pre = _prepared(model_path, tmp, 0, notes, base)
        if upload and model_wide == "int8-static" and not overrides and activation_pairs(pre):
            return _checked(_write_upload(model_path, out_path), _NO_KINDS, {}, _choices(pre, model_wide, {}),
                            [QDQ_AS_UPLOADED], input_shapes, input_values, check)
        # A QDQ upload: its float graph, as it is predicted (compiler/optimize/onnx_qdq.py); int8-static with per-op
        # overrides too (quantize_static over the QDQ file left an op asked to stay float quantized as uploaded)
        restored = (model_wide != "int8-static" or bool(overrides)) and _restore_float(pre)
        if restored:
            notes.append("the upload's QDQ quantization was undone first (weights dequantized, activation pairs "
                         "removed): the option is applied to the float model")
        ch = _choices(pre, model_wide, overrides or {})
        if upload and not notes and not restored and all(_float(c) for c in ch.values()):
            # Every node stays float and the upload needs nothing restored (fp16 weights, QDQ pairs) or converted
            # (named_copy notes each): the file is the upload itself, as its float state is predicted
            # (simulator.file_bytes): ORT's folded file would hold the constants it makes at run time (the onnx
            # wheel's light_squeezenet: 3.7 MB for a 15.6 KB upload).
            return _checked(_write_upload(model_path, out_path), _NO_KINDS, {}, ch, notes, input_shapes,
                            input_values, check)
        need = max([OPSET_STATIC_INT8 if "int8" in (c.combo.input, c.combo.output) else 0 for c in ch.values()]
                   + [OPSET_DYNAMIC_INT8 if c.dynamic and c.combo.kernel == "int8" else 0 for c in ch.values()]
                   + [OPSET_PALETTE if lut_bits(c.combo.kernel) else 0 for c in ch.values()])
        if base[0] and bound > max(base[0], need):  # converted for nothing (every node asked left float): again as is
            return export_onnx(model_path, out_path, model_wide, overrides, input_shapes, calibration_samples,
                               input_values, check, upload, _bound=False)
        if need > opset(pre):  # unbounded: converted now
            named = named_copy(model_path, tmp / "named.onnx", need)
            pre = preprocess(named, tmp / "pre.onnx")
            if restored:
                _restore_float(pre)
            ch = _choices(pre, model_wide, overrides or {})
        if base[0] and need > base[0]:  # (a file without the default domain gets ORT's newest: none converted)
            notes.append(f"converted from ONNX opset {base[0]} to {need}, which the option's ops need")
        ops = {n.name: n.op_type for n in pre.graph.node}
        kept = sorted(n for n, c in ch.items() if c.combo.kernel == "int4" and ops[n] != "MatMul"
                      and ops[n] in WEIGHTED_OPS)
        if kept:
            notes.append(f"int4 applies to MatMul only on ORT; kept float: {', '.join(kept[:5])}"
                         + (" ..." if len(kept) > 5 else ""))
        kept16 = [f"{n} ({op.removesuffix(FP16_KEPT)})" for n, op in rule_ops(pre.graph).items()
                  if op.endswith(FP16_KEPT) and n not in (overrides or {})]
        if kept16 and any(c.combo.input == "fp16" for c in ch.values()):
            notes.append(f"fp16 keeps {len(kept16)} node(s) fp32 between Casts, which ONNX Runtime cannot load or "
                         f"run in fp16: {', '.join(kept16[:5])}" + (" ..." if len(kept16) > 5 else ""))
        res, kinds, kernels = _write(pre, tmp, ch, input_shapes, calibration_samples, input_values)
        out_path.parent.mkdir(parents=True, exist_ok=True)
        written = onnx.load(os.fspath(res), load_external_data=False)
        if any(uses_external_data(t) for t in written.graph.initializer):  # into the one file
            onnx.save(onnx.load(os.fspath(res)), os.fspath(out_path))
            written = None
        else:  # as written (loading and saving it again took ~10 s of each export of VGG-16)
            shutil.copyfile(res, out_path)
    return _checked(out_path, kinds, kernels, ch, notes, input_shapes, input_values, check, written)


@dataclass
class _Kept:
    """The prepared files reuse_preparation keeps: upload -> (its base opset, {opset prepared at: (file, named_copy's
    notes)})."""

    workdir: Path
    files: dict[str, tuple[int, dict[int, tuple[Path, list[str]]]]] = field(default_factory=dict)


_KEPT: _Kept | None = None


@contextlib.contextmanager
def reuse_preparation(workdir: Path) -> Iterator[None]:
    """Within: export_onnx prepares each upload once per opset, keeping the file in `workdir`, for the export check
    that writes every option of one upload (compiler.optimize.onnx_dry_run): each option prepared it again (named
    copy, fp16 restored, converted, ORT's optimizations, Gemms split: ~40 s of each on VGG-16's 528 MB)."""
    global _KEPT
    prev, _KEPT = _KEPT, _Kept(workdir)
    try:
        yield
    finally:
        for _, files in _KEPT.files.values():
            for keep, _ in files.values():
                keep.unlink(missing_ok=True)
        _KEPT = prev


def _prepared(model_path: str | os.PathLike[str], tmp: Path, min_opset: int, notes: list[str], base: list[int]
              ) -> onnx.ModelProto:
    """preprocess(named_copy(...)) (min_opset, notes, base: named_copy's), or the file reuse_preparation kept of the
    upload at the opset that gives (the file's own where it is min_opset or newer)."""
    key = os.fspath(Path(model_path).resolve())
    known = _KEPT.files.get(key) if _KEPT is not None else None
    if known is not None and (hit := known[1].get(max(known[0], min_opset) if known[0] else 0)) is not None:
        notes.extend(hit[1])
        base[:] = [known[0]]
        return onnx.load(os.fspath(hit[0]))
    n: list[str] = []
    pre = preprocess(named_copy(model_path, tmp / "named.onnx", min_opset, notes=n, base=base), tmp / "pre.onnx")
    if _KEPT is not None:
        files = _KEPT.files.setdefault(key, (base[0], {}))[1]
        keep = _KEPT.workdir / f"prepared-{sum(len(f) for _, f in _KEPT.files.values())}.onnx"
        shutil.copyfile(tmp / "pre.onnx", keep)
        files[max(base[0], min_opset) if base[0] else 0] = (keep, n)
    notes.extend(n)
    return pre


def _opset_bound(model_wide: str, overrides: Mapping[str, str]) -> int:
    """The opset export_onnx converts to if every node takes its option: the most any of the options' combos needs
    (13 for int8 activations, 11 for dynamic int8 weights, 18 for palettes); 0 for an option it cannot resolve."""
    need = 0
    for option in {model_wide, *overrides.values()}:
        for has_k in (False, True):
            try:
                c = resolve_option(option, FLOAT_FORMAT, has_k)
            except OptionError:
                return 0
            need = max(need, OPSET_STATIC_INT8 if "int8" in (c.combo.input, c.combo.output) else 0,
                       OPSET_DYNAMIC_INT8 if c.dynamic and c.combo.kernel == "int8" else 0,
                       OPSET_PALETTE if lut_bits(c.combo.kernel) else 0)
    return need


def _float(c: Choice) -> bool:
    return c.combo.input == c.combo.output == "fp32" and c.combo.kernel in ("fp32", "-") and not c.combo.sparsity


def _write_upload(model_path: str | os.PathLike[str], out_path: Path) -> Path:
    """The upload as it is (its external data, if any, written into the one file; repeated node names, which ORT
    refuses, assigned as named_copy assigns them)."""
    out_path.parent.mkdir(parents=True, exist_ok=True)
    head = onnx.load(os.fspath(model_path), load_external_data=False)
    names = [n.name for g in [head.graph, *all_bodies(head.graph)] for n in g.node if n.name]
    if len(set(names)) < len(names):
        model = onnx.load(os.fspath(model_path))
        name_by_id(model)
        onnx.save(model, os.fspath(out_path))
    elif any(uses_external_data(t) for t in head.graph.initializer):
        onnx.save(onnx.load(os.fspath(model_path)), os.fspath(out_path))
    else:
        shutil.copyfile(model_path, out_path)
    return out_path


def _checked(out_path: Path, kinds: Mapping[str, list[str]], kernels: Mapping[str, str], ch: Mapping[str, Choice],
             notes: list[str], input_shapes: Mapping[str, list[int]] | None, input_values: Mapping[str, float] | None,
             check: bool, written: onnx.ModelProto | None = None) -> ExportResult:
    """The written file checked (loads, runs, has the ops each option promises) unless `check` is False (a probe of
    ORT's own behaviour on the file, compiler.backends.ort, not an export). `written`: the file, loaded already."""
    if check:
        m = written if written is not None else onnx.load(os.fspath(out_path), load_external_data=False)
        check_ops(out_path, **kinds, kernels=kernels, model=m)
        check_runs(out_path, _RandomReader(m, samples=1, shapes=input_shapes, values=input_values).get_next() or {})
    return ExportResult(out_path, out_path.stat().st_size, {n: c.combo.name for n, c in ch.items()}, notes)


def _choices(model: onnx.ModelProto, model_wide: str, overrides: Mapping[str, str]) -> dict[str, Choice]:
    inits = {t.name: t for t in model.graph.initializer}
    # A kernel stored int8 is one too (its option decides whether it can be written as stored: combo_reason).
    has_k = [(n.name, kernel_input(n, inits) is not None or n.op_type in STORED_INT8_OPS) for n in model.graph.node]
    ch = node_choices(has_k, model_wide, overrides, FLOAT_FORMAT)
    rules = rule_ops(model.graph)
    for name, c in ch.items():
        op = rules[name]
        if name not in overrides and left_float(op, c.combo):
            ch[name] = c = Choice(as_written(c.combo), dynamic=False)  # the preset's tool leaves it float
        why = combo_reason(op, c.combo)
        if why is not None:
            raise OptionError(f"{why} ({name})")
    return ch


def _write(model: onnx.ModelProto, tmp: Path, ch: Mapping[str, Choice], input_shapes: Mapping[str, list[int]] | None,
           samples: int, values: Mapping[str, float] | None) -> tuple[Path, dict[str, list[str]], dict[str, str]]:
    """Apply the choices to the prepared model: (file written, weighted node names per kind of option, kernels).
    Each of ORT's tools runs on the previous one's file, in this order."""
    inits = {t.name: t for t in model.graph.initializer}
    by_name = {n.name: n for n in model.graph.node}
    kernels = {n: w for n in ch if (w := kernel_input(by_name[n], inits)) is not None}
    _rewrite_weights(model, ch, kernels)
    clear_value_info(model)
    current = tmp / "w.onnx"
    onnx.save(model, os.fspath(current))
    fp16 = [n for n, c in ch.items() if c.combo.input == "fp16"]
    if fp16:
        current = _to_fp16(current, tmp / "fp16.onnx", fp16)
    static = [n for n, c in ch.items() if c.combo.input == "int8"]
    if static and _static_ops().isdisjoint(by_name[n].op_type for n in static):
        static = []  # nothing quantize_static quantizes (scikit-learn's ai.onnx.ml ops): it failed on such files
    if static:
        current = _quantize_static(current, tmp, static, input_shapes, samples, values)
    dynamic = [n for n, c in ch.items() if c.dynamic and c.combo.kernel == "int8" and c.combo.input == "fp32"
               and by_name[n].op_type not in STORED_INT8_OPS]  # stored int8 already: written as stored
    if dynamic:
        current = _quantize_dynamic(current, tmp, dynamic)
    # 4-bit weights: MatMulNBits for MatMul with constant weights; other ops keep float weights (as predicted).
    matmuls = [n for n, c in ch.items() if c.combo.kernel == "int4" and by_name[n].op_type == "MatMul"
               and n in kernels]
    if matmuls:
        current = _to_int4(current, tmp / "int4.onnx", matmuls)
    weighted = lambda names: [n for n in names if n in kernels]  # noqa: E731
    kinds = {"static": weighted(static), "dynamic": weighted(dynamic), "int4": matmuls,
             "fp16": [n for n in weighted(fp16) if ch[n].combo.kernel == "fp16"],
             "lut": [n for n, c in ch.items() if n in kernels and lut_bits(c.combo.kernel)]}
    return current, kinds, kernels


def _rewrite_weights(model: onnx.ModelProto, ch: Mapping[str, Choice], kernels: Mapping[str, str]) -> None:
    """Pruning and palettization, once per initializer, in place: a palettized weight becomes its packed indices,
    its table and the decode nodes ORT constant-folds at load (put first, before the nodes reading the weight)."""
    inits = {t.name: t for t in model.graph.initializer}
    done: set[str] = set()
    decode_nodes: list[onnx.NodeProto] = []
    new_inits: dict[str, onnx.TensorProto | None] = {}
    for name, c in ch.items():
        w_name = kernels.get(name)
        if w_name is None or w_name in done:
            continue
        done.add(w_name)
        w = numpy_helper.to_array(inits[w_name]).astype(np.float32)
        w = prune(w, c.combo.sparsity)
        bits = lut_bits(c.combo.kernel)
        if bits:
            nodes, extra = palettize_nodes(w_name, w, bits)
            decode_nodes += nodes
            for t in extra:
                new_inits[t.name] = t
            new_inits[w_name] = None
        elif c.combo.sparsity:
            new_inits[w_name] = numpy_helper.from_array(w, w_name)
    if new_inits:
        keep = [t for t in model.graph.initializer if t.name not in new_inits]
        del model.graph.initializer[:]
        model.graph.initializer.extend(keep + [t for t in new_inits.values() if t is not None])
        nodes = decode_nodes + list(model.graph.node)
        del model.graph.node[:]
        model.graph.node.extend(nodes)


def _step(what: str, fn: Callable[[], None]) -> None:
    """Run one of ORT's tools: its failure on this file is the user's answer, as an OptionError."""
    try:
        fn()
    except OptionError:
        raise
    except Exception as e:  # noqa: BLE001 - ORT's tools failing on this file is the user's answer
        raise OptionError(f"{what} failed on this model ({one_line(e)})") from e


def _to_fp16(current: Path, out: Path, fp16: list[str]) -> Path:
    """fp16 per node, through the converter's block list (every other node)."""
    from onnxruntime.transformers.float16 import DEFAULT_OP_BLOCK_LIST, convert_float_to_float16

    def to_fp16() -> None:
        m = onnx.load(os.fspath(current))
        # the nodes fp16 keeps fp32 (onnx_rules.fp16_kept) are fp32 in `ch` already (_choices)
        block = [n.name for n in m.graph.node if n.name not in set(fp16)]
        # A quantized upload's Q / DQ keep their float32 scales (fp16 scales are ONNX opset 19+; converted, ORT
        # refuses the file: torchvision's quantized models exported by torch's TorchScript exporter, opset 17)
        m = convert_float_to_float16(m, keep_io_types=True, node_block_list=block,
                                     op_block_list=[*DEFAULT_OP_BLOCK_LIST, *QDQ_OPS])
        drop_cast_pairs(m)
        topo_sort(m.graph)  # its Casts come last: the quantizers that may follow need producers first
        onnx.save(m, os.fspath(out))

    _step("ORT's fp16 converter", to_fp16)
    return out


def rule_ops(g: onnx.GraphProto) -> dict[str, str]:
    """Node name -> the op type the exporter's rules read it as (onnx_rules.rule_op: FP16_KEPT on a node the fp16
    option keeps fp32, because ORT cannot load or run it in fp16)."""
    readers = {v for n in g.node if n.op_type == "MatMul" for v in n.input[:2]}
    out = {}
    for n in g.node:
        a = {x.name: helper.get_attribute_value(x) for x in n.attribute if x.name in ("reduction", "perm")}
        red = a.get("reduction", b"")
        out[n.name] = rule_op(n.op_type, red.decode() if isinstance(red, bytes) else str(red),
                              list(a.get("perm") or []), any(o in readers for o in n.output))
    return out


def _static_ops() -> frozenset[str]:
    """The op types quantize_static quantizes by default (its QDQ and QOperator registries)."""
    from onnxruntime.quantization.registry import QDQRegistry, QLinearOpsRegistry

    return frozenset(QDQRegistry) | frozenset(QLinearOpsRegistry)


def _quantize_static(current: Path, tmp: Path, static: list[str], input_shapes: Mapping[str, list[int]] | None,
                     samples: int, values: Mapping[str, float] | None) -> Path:
    """Static int8 (QDQ), calibrated on generated inputs at the analysis' shapes."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    ready = quant_ready(current, tmp / "ready.onnx")
    reader = _RandomReader(onnx.load(os.fspath(ready)), samples=samples, shapes=input_shapes, values=values)

    class Reader(CalibrationDataReader):
        def get_next(self):  # type: ignore[no-untyped-def]
            return reader.get_next()

    _step("ORT's static quantization", lambda: quantize_static(
        os.fspath(ready), os.fspath(tmp / "qdq.onnx"), Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, nodes_to_quantize=static))
    return tmp / "qdq.onnx"


def _quantize_dynamic(current: Path, tmp: Path, dynamic: list[str]) -> Path:
    """Dynamic int8: float activations, int8 weights."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    ready = quant_ready(current, tmp / "ready-dyn.onnx")
    # quantize_dynamic turns a Gemm the exporter kept (a weight a body reads in its layout) into `<name>_MatMul` + Add
    # before it quantizes, so a Gemm's name is asked under that name too: else it stayed float, failing the check
    names = [*dynamic, *(f"{n}_MatMul" for n in dynamic)]
    _step("ORT's dynamic quantization", lambda: quantize_dynamic(
        os.fspath(ready), os.fspath(tmp / "dyn.onnx"), nodes_to_quantize=names, weight_type=QuantType.QUInt8))
    return tmp / "dyn.onnx"


def _to_int4(current: Path, out: Path, matmuls: list[str]) -> Path:
    """MatMulNBits (4-bit blocks of 128) for the given MatMuls."""
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    def to_int4() -> None:
        m = onnx.load(os.fspath(current))
        # Its node list adds to the MatMuls it quantizes, it does not limit them: every other MatMul with a constant
        # weight, a body's too, was written 4-bit (an fp32 override on a MatMul was not honoured). Excluded by name.
        asked = set(matmuls)
        others = [n.name for g in [m.graph, *all_bodies(m.graph)] for n in g.node
                  if n.op_type == "MatMul" and n.name not in asked]
        q = MatMulNBitsQuantizer(m, block_size=128, is_symmetric=False, nodes_to_include=matmuls,
                                 nodes_to_exclude=others)
        q.process()
        q.model.save_model_to_file(os.fspath(out))

    _step("ORT's 4-bit MatMul quantizer", to_int4)
    return out


def exportable_names(model_path: str | os.PathLike[str]) -> set[str]:
    """Names of the nodes the exporter can take options for (analysis ids): those ORT's basic optimizations
    keep (a BatchNorm folded into its Conv has no node of its own left)."""
    with tempfile.TemporaryDirectory() as td:
        named = named_copy(model_path, Path(td) / "named.onnx")
        return {n.name for n in preprocess(named, Path(td) / "pre.onnx").graph.node}
