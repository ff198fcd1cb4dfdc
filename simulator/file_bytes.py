"""What each task adds to the file an option writes: its kernel's values in the option's format (with scales and
tables), its other constants, and the records the exporter adds for it.

Bytes, not time: the sweep's `weight_bytes` column and the size overhead of its bulk table. The records an ONNX
export adds per task are simulator.onnx_file's (charged per EVENTS); TFLite and Core ML files store compression in
place and are sized from the upload's own overhead.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from compiler.graph import Graph, Node
from compiler.opset import ORT_MIN_OPSET, declared_opset
from compiler.vocabulary.formats import BITS, lut_bits
from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import Target
from simulator.control_flow import written_in_body
from simulator.costs import WEIGHTED_KINDS, Work, base_kind
from simulator.folding import fold_constants
from simulator.kernel_path import Path
from simulator.onnx_file import EVENTS, ExportRecords, export_records, iter_events
from simulator.onnx_tools import static_keeps_float
from simulator.qdq import dq_weights, float_view, qdq_preset
from simulator.tflite_ops import hybrid_quant_bytes


_FLOAT_DTYPES = frozenset({"float32", "float16", "bfloat16", "float64"})  # as simulator.tflite_ops counts them
_HANDLES = frozenset({"resource", "variant"})
_INTEGER_DTYPES = frozenset({"int8", "uint8", "int4", "uint4"})


@dataclass(frozen=True)
class Stored:
    """Per task (arrays [n]): what it stores in the file whatever the option, as the sweep needs it per group."""

    kernel: np.ndarray  # elements of the kernel it stores (0: none, or one an earlier task stores)
    aux: np.ndarray  # elements of its other float constants, stored once
    rows: np.ndarray  # the kernel's output channels (one scale each)
    depth: np.ndarray  # the kernel's reduction length
    events: np.ndarray  # [n, len(EVENTS)]: bytes the exporter adds under each event
    as_is: np.ndarray  # bytes of a kernel the upload already stores quantized and the exporter keeps
    as_stored: np.ndarray  # bytes of a kernel a fully int8 upload stores int8 itself (kept under int8-static)
    other_dup: np.ndarray  # bytes of its non-float constants an earlier task stores (counted in its work, not stored)
    bias_copies: np.ndarray  # bytes of its own copy of a shared bias or tied kernel under static int8 (TFLite)
    name_len: np.ndarray  # bytes of its kernel's name
    biased: np.ndarray  # bool: its conv has a bias
    made: np.ndarray  # bytes of its float constants the upload makes at run time (ExportRecords.made): not in the
    # file as uploaded (the float state), in the export's once an option rewrites the file (ORT folds them)
    uploaded: np.ndarray  # bytes of a kernel an ONNX upload stores as integers itself (0: none): the file as uploaded
    rewritten: np.ndarray  # bytes of kernel-less tasks' made constants it carries where a weight-only option
    # rewrites the file (ORT folds them into it) while those tasks stay float (see _rewrite_share)
    int4_float: np.ndarray  # bool: int4 leaves its kernel float in an ONNX export (no MatMul reads it there)
    saved: np.ndarray  # bytes of the records a file ORT saves holds beyond a tiny upload (ExportRecords.beyond_upload):
    # in every file an option rewrites, not in the float state (which is the upload itself)

    def at(self, rows: np.ndarray) -> Stored:
        return Stored(**{k: getattr(self, k)[rows] for k in self.__dataclass_fields__})


def stored(t: Target, compiled: Graph, source: Graph | None, works: list[Work], folded: frozenset[str],
           records: ExportRecords | None) -> Stored:
    """What each task of `compiled` stores in `t`'s file (`records`: the ONNX exporter's, see export_records_for)."""
    k_store, aux_store = _stored_elements(works, _computed_at_run_time(source) if records is not None else frozenset())
    by_id = {nd.id: nd for nd in (source if source is not None else compiled).nodes}
    uploaded = _uploaded_integers(t, compiled, works, k_store)
    k_rows = np.array([w.kernel_out_channels for w in works], dtype=np.float64)
    k_depth = np.where(k_rows > 0, k_store / np.maximum(k_rows, 1), 0.0)
    if records is not None and records.unfolded is not None:
        aux_store = aux_store + records.unfolded
    if records is not None:
        # The file stores the source's kernels, once (the compiled graph may pad them, e.g. NCHWc channels,
        # or copy a shared one); tasks without an exported kernel keep the compiled figures.
        k_store = np.where(records.mapped, records.kernel[:, 0], k_store)
        k_rows = np.where(records.mapped, records.kernel[:, 1], k_rows)
        k_depth = np.where(records.mapped, records.kernel[:, 2], k_depth)
        # A kernel the runtime makes of an op that has none in the file (ORT's NCHWc BatchNormalization, or a Mul by
        # a per-channel constant, as a depthwise Conv): the file holds the op's constants, which its records size
        unmade = np.array([not m and _made_kernel(nd, by_id) for nd, m in zip(compiled.nodes, records.mapped)])
        k_store = np.where(unmade, 0.0, k_store)
    made = _made_per_task(t, records, k_store, aux_store, works, source if source is not None else compiled,
                          uploaded)
    made = _body_made_moved(made, k_store, written_in_body(t, compiled))
    saved = _saved_records(records, len(works))
    made = made + saved
    return Stored(kernel=k_store, aux=aux_store, rows=k_rows, depth=k_depth,
                  events=records.events if records is not None else np.zeros((len(works), len(EVENTS))),
                  as_is=_stored_as_is(t, compiled, folded, works), as_stored=_stored_int8(t, compiled, works, source),
                  other_dup=_shared_other_constants(compiled, folded, works),
                  bias_copies=_static_bias_copies(t, works),
                  name_len=np.array([len(w.kernel_name.encode()) for w in works], dtype=np.float64),
                  biased=_conv_biases(compiled, source),
                  made=made, uploaded=uploaded, rewritten=_rewrite_share(made, k_store),
                  int4_float=_flags(records.int4_float if records is not None else None, len(works)), saved=saved)


def _saved_records(records: ExportRecords | None, n: int) -> np.ndarray:
    """Per task, its share of the saved file's records beyond the upload (ExportRecords.beyond_upload): alike for
    every task, as ORT's opset list is no task's own."""
    if records is None or records.beyond_upload <= 0 or n == 0:
        return np.zeros(n)
    return np.full(n, records.beyond_upload / n)


# Source ops ORT's NCHWc transformer runs as a depthwise Conv whose kernel it makes at load (a BatchNormalization not
# after a Conv; a Mul or Add by a per-channel constant)
_MADE_DEPTHWISE = frozenset({"BatchNormalization", "Mul", "Add"})


def _made_kernel(nd: Node, by_id: dict[str, Node]) -> bool:
    """Whether a compiled task's kernel is one the runtime made of source ops that have none in the file: the
    onnx wheel's light_densenet121 under int8-static was sized +15.6%, its 124 such tasks as int8 kernels with
    per-channel scales besides their ops' own constants, which the exporter's records size (ORT's quantize_static
    writes a BatchNormalization's scale per tensor, a Mul's constant as uint8)."""
    ops = {by_id[s].op_type for s in nd.source_nodes if s in by_id}
    return bool(ops) and ops <= _MADE_DEPTHWISE


def _flags(a: np.ndarray | None, n: int) -> np.ndarray:
    return a if a is not None else np.zeros(n, dtype=bool)


def fp16_stored(g: Graph) -> bool:
    """Whether an ONNX file stores its float weights mostly as fp16 (an fp16 graph, or fp16 initializers behind
    Casts): by bytes, as compiler.optimize.onnx_fp16.fp16_weight_bytes counts them. Such a file is the fp16
    option's file as uploaded; every other option's export restores the weights to fp32 first."""
    if g.format != "onnx":
        return False
    by = {"float16": 0, "float32": 0}
    for v in g.values.values():
        if v.weight is not None and v.dtype in by:
            by[v.dtype] += v.weight.bytes
    return by["float16"] > by["float32"]


def _uploaded_integers(t: Target, g: Graph, works: list[Work], k_store: np.ndarray) -> np.ndarray:
    """Bytes of each task's kernel where an ONNX upload stores it as an integer tensor (a quantize_dynamic file's
    uint8 ConvInteger / MatMulInteger weights), which the file as uploaded holds at those bytes, not at 4 per
    element: ddddocr's old model (13.6 MB, 9.3 MB of uint8 kernels) was sized at 37.3 MB. 0 elsewhere (a float
    kernel, a kernel an earlier task stores, other formats)."""
    out = np.zeros(len(works))
    if t.export != "onnx" or g.format != "onnx":
        return out
    for i, w in enumerate(works):
        v = g.values.get(w.kernel_name) if w.kernel_elements and k_store[i] else None
        if v is not None and v.weight is not None and v.dtype in _INTEGER_DTYPES:
            out[i] = float(v.weight.bytes)
    return out


def _rewrite_share(made: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """Per task with a stored kernel, its share (by kernel elements) of the made bytes of the tasks without one. A
    weight-only option (int8-dynamic, int4, palettes, pruning) changes the kernels only, so those tasks keep their
    float combos, whose bytes are the file as uploaded (made constants left out), yet the exporter writes ORT's
    folded file, made constants included: CoAtNet-nano's relative-position biases (a table gathered by an index at
    run time, 3.8 MB folded) were missing from its int8-dynamic, int4 and palettized files (-17%, -6%, -25%). The
    kernels such an option changes carry them instead. An option that changes every task (int8-static, fp16) leaves
    no task in its float state: each carries its own."""
    lone = float(made[kernel <= 0].sum())
    total = float(kernel.sum())
    if lone == 0 or total <= 0:
        return np.zeros(len(made))
    return lone * kernel / total


def _made_per_task(t: Target, records: ExportRecords | None, k_store: np.ndarray, aux_store: np.ndarray,
                   works: list[Work], source: Graph | None, uploaded: np.ndarray) -> np.ndarray:
    """Per task, its bytes in ORT's folded file (the file every option but fp32 writes) less its share of the file as
    uploaded, which is the float state and the fp32 export (compiler.optimize.onnx_export writes the upload itself
    where every node stays float and nothing needs restoring: `writes_upload`). Each task keeps its stored bytes but
    those the upload makes at run time (ExportRecords.made); what the upload holds beyond the tasks and the folded
    file's records (`base`) goes to the tasks with made constants (the recipe: `ConstantOfShape` nodes and shapes,
    a table gathered by stored ids), else to the tasks with a kernel by their bytes (debug records, names). Negative where the
    upload holds more than ORT folds to: `testkit.modelzoo.bert_like`'s 512 x 128 position table, gathered by 32
    constant ids, folds to 32 x 128 (its float state was sized 3.79 MB, the folded file, against 4.03 uploaded)."""
    if records is None or source is None or not writes_upload(source, t):
        return np.zeros(len(works))
    # A kernel as the sweep sizes it: tasks of other kinds (a Concat the compiled graph gave a conv's weight) have none
    weighted = np.array([w.kind in WEIGHTED_KINDS for w in works], dtype=bool)
    own = (np.where(uploaded > 0, uploaded, k_store * 4 * weighted) + aux_store * 4
           + np.array([w.other_const_bytes for w in works], dtype=np.float64))
    made = records.made if records.made is not None else np.zeros(len(works))
    kept = own - np.minimum(made, own)
    body = max(float(source.metadata["file_size_bytes"]) - records.base, 0.0)
    rest = body - float(kept.sum())
    # The kernels take it where they are made (a kernel-less task's made bytes may be a constant the sweep does not
    # size as its own: light_inception_v2's Concats). Records no task's bytes explain (names, debug records) go to
    # the kernels, which every option that rewrites the file changes: given to every task, a kernel-less one (an
    # LSTM's, whose weights stay float) kept its share in its float state, which weight-only options take back from
    # the kernels (_rewrite_share), and torch/lstm-kws's one small head Gemm was sized -2.6 KB under int8-dynamic.
    kernels = k_store * weighted > 0
    takers = next((m for m in ((made > 0) & kernels, made > 0, kernels) if m.any()), np.ones(len(works), dtype=bool))
    share = kept[takers] if kept[takers].sum() > 0 else own[takers]
    if rest < 0 and kept.sum() > 0:
        # Constants the upload makes that the records miss (light_densenet121's Mul / Add constants, made by
        # `ConstantOfShape` + `Unsqueeze`, 67 KB of a 214 KB file) count as kept: every task gives up its share.
        kept *= body / float(kept.sum())
    elif share.sum() > 0:
        kept[takers] += rest * share / float(share.sum())
    return own - kept


def _body_made_moved(made: np.ndarray, kernel: np.ndarray, body: np.ndarray) -> np.ndarray:
    """`made` with the body tasks' part moved to the top-level tasks with a kernel, by kernel elements. ORT's
    quantizers do not enter If / Loop / Scan bodies, so body tasks keep their float combos under every option but
    fp16, whose bytes were the file as uploaded, yet every option rewrites the file as ORT folds it: the torch dynamo
    exporter's debug records (stack traces) on `torch/cond-while`'s body nodes, 11.5 KB of its 110 KB, which no
    written file keeps, sized its int8-dynamic, int8-static, int4 and palettized files +25%. A body task's float
    combo is now its bytes in the folded file; the file as uploaded differs from it in the float state of the
    top-level kernels, which every option that quantizes leaves. A model without one (all its weights in If branches:
    a voice-activity model's `Equal` on its sample rate, then the `If`) moves it to every top-level task alike: the
    exporter writes the upload itself only where they all stay float (its dynamo export's int8-static file +14.5%)."""
    if not body.any() or body.all():
        return made
    takers = np.where(body, 0.0, kernel)
    if takers.sum() <= 0:
        takers = (~body).astype(np.float64)
    return np.where(body, 0.0, made + float(made[body].sum()) * takers / float(takers.sum()))


def writes_upload(source: Graph, t: Target) -> bool:
    """Whether the fp32 export of an ONNX upload is the upload itself (compiler.optimize.onnx_export): its size is
    known, ORT runs its opset as it is, and it has no fp16 weights to restore to float first, nor a DequantizeLinear
    (a QDQ file's fp32 export is its float graph)."""
    if source.format != "onnx" or "file_size_bytes" not in source.metadata:
        return False
    if (declared_opset(source.metadata) or ORT_MIN_OPSET) < ORT_MIN_OPSET:  # none: ai.onnx.ml ops only
        return False
    return not any(nd.op_type == "DequantizeLinear" and not nd.parent for nd in source.nodes) and not any(
        v.weight is not None and v.dtype == "float16" for v in source.values.values())


def weight_bytes(t: Target, kind: str, s: Stored, other_const_bytes: np.ndarray, combos: list[Combo],
                 kernels: list[str], sparsity: np.ndarray, aux_file_b: np.ndarray, events: np.ndarray) -> np.ndarray:
    """File bytes [n, C] of a group of tasks of `kind` under each combo (`kernels`, `sparsity`: the kernel format
    and sparsity each runs at; `aux_file_b`: bytes per stored aux element; `events`: [C, EVENTS] the exporter
    steps each asked combo triggers)."""
    kern = np.zeros((len(s.kernel), len(combos)))
    cache: dict[tuple[str, int, bool], np.ndarray] = {}
    for j, (kf, sp, c) in enumerate(zip(kernels, sparsity, combos)):
        if kf == "-":
            continue
        static = c.input == "int8"
        key = (kf, int(sp), static)
        if key not in cache:
            cache[key] = storage_bytes_per_kernel(t, kf, int(sp), s.kernel, s.rows, static, kind, s.depth,
                                                  s.name_len, has_bias=s.biased)
        # LiteRT's int8-static restores a kernel stored int8 to fp32 and quantizes it afresh like the others
        # (compiler/optimize/litert_prepare.py): stored as is under every other option only.
        kept = s.as_is > 0 if not (static and t.export == "tflite") else np.zeros(len(s.as_is), dtype=bool)
        kern[:, j] = np.where(kept, s.as_is, cache[key]) + (s.bias_copies if static and kf == "int8" else 0.0)
        if kf == "int4":  # MatMulNBits replaces MatMuls only: a Gemm the exporter keeps (a shared weight) stays float
            kern[:, j] = np.where(s.int4_float, s.kernel * 4.0, kern[:, j])
        if static and kf == "int8" and s.as_stored.any():
            # A fully int8 upload is int8-static as it is: the exporter writes it as stored (litert_export), so
            # its int8 kernels keep their bytes (their scales are in the file's own overhead) and its biases;
            # so is an ONNX QDQ file on a target that runs its node units (simulator.qdq).
            kern[:, j] = np.where(s.as_stored > 0, s.as_stored, kern[:, j])
    # Records an exporter adds or rewrites (Q/DQ pairs, decode subgraphs, value_info) are file bytes too.
    # An If / Loop / Scan body's task is sized by the combo the sweep prices it in under each option, the one the
    # exporter writes it in (simulator.control_flow.body_preset): its weights float but under fp16.
    out = (kern + s.aux[:, None] * aux_file_b[None, :] + (other_const_bytes - s.other_dup[:, None]) + s.events @ events.T
           + s.saved[:, None])
    # The float state is the file as uploaded: constants it makes at run time are memory, not file bytes, and kernels
    # it stores as integers count as stored.
    # A task asked to change its kernel is sized as the folded file holds it, even where the runtime runs it float
    # (int4 on a Conv): that option's file is ORT's folded one.
    as_uploaded = np.array([c.input == c.output == "fp32" and kf in ("fp32", "-") and not sp
                            and (kf == "-" or c.kernel in ("fp32", "-"))
                            for kf, sp, c in zip(kernels, sparsity, combos)], dtype=bool)
    out = np.where(as_uploaded[None, :] & (s.uploaded[:, None] > 0), out - kern + s.uploaded[:, None], out)
    weight_only = np.array([c.input == c.output == "fp32" and (c.kernel not in ("fp32", "-") or bool(c.sparsity))
                            for c in combos], dtype=bool)
    out = out + s.rewritten[:, None] * weight_only[None, :]
    return np.where(as_uploaded[None, :], np.maximum(out - s.made[:, None], 0.0), out)


def made_at_run_time_bytes(records: ExportRecords | None) -> float:
    """Bytes of the constants the upload makes at run time (the runtime holds them: memory, not file size)."""
    return records.made_data if records is not None else 0.0


def size_overhead_bytes(t: Target, compiled: Graph, folded: frozenset[str], records: ExportRecords | None) -> float:
    """File bytes beyond every task's: the ONNX exporter's records, else the upload's own overhead."""
    if records is not None:
        return records.base
    if t.export == "onnx" and "onnx_overhead_bytes" in compiled.metadata:  # a .pt2's converted file's records
        return float(compiled.metadata["onnx_overhead_bytes"])
    return _size_overhead(compiled) - _fp16_restored_bytes(t, compiled, folded) - hybrid_quant_bytes(compiled)


def storage_bytes_per_kernel(target: Target, kernel: str, sparsity: int, elements: Any, rows: Any,
                             static: bool = False, kind: str = "conv", depth: Any = None, name_len: Any = 0,
                             has_bias: Any = True) -> Any:
    """File bytes of kernel tensors of `elements` values in `kernel` format (incl. scales, tables).
    `rows`: output channels (one scale each); `depth`: the reduction length (elements / rows if None);
    `kind`: the task's kind (simulator.costs.KINDS); `name_len`: bytes of the kernel tensor's name.
    Works elementwise on numpy arrays; tensors with 0 elements cost 0."""
    if kernel == "int4" and kind == "dwconv" and target.export == "tflite":
        # ai-edge-quantizer 0.10.0 has no 4-bit weight-only config for DEPTHWISE_CONV_2D (its default policy
        # lists BATCH_MATMUL, FULLY_CONNECTED, EMBEDDING_LOOKUP, CONV_2D): the kernel stays fp32.
        return elements * 4.0
    if target.export == "tflite" and kind == "layout" and (static or kernel == "fp32"):
        # A lookup table (Work.lookup_table): ai-edge-quantizer's static int8 recipe does not list EMBEDDING_LOOKUP,
        # whose table stays float32 (simulator.litert_paths.lookup_path)
        return elements * 4.0
    conv = base_kind(kind) in ("conv", "dwconv")
    bits = BITS[kernel]
    lb = lut_bits(kernel)
    onnx = target.export != "coreml"
    if lb is not None and onnx and lb == 6:
        bits = 8  # ORT export stores 6-bit indices one per byte (no 6-bit packing in ONNX)
    if target.sparse_storage and sparsity:
        nonzero = elements * (1 - sparsity / 100)
        body = nonzero * bits / 8 + elements / 8  # values + 1-bit mask
    else:
        body = elements * bits / 8
    has = elements > 0
    if lb is not None:
        body = body + has * (2 ** lb) * (4 if onnx else 2)  # the table (fp32 in ONNX, fp16 in Core ML)
    elif kernel in ("int8", "int4") and target.export == "tflite":
        # ai-edge-quantizer quantizes per output channel (int4 too): a float32 scale and an int64 zero
        # point per channel, plus the tensor's quantization table (~48 B in the flatbuffer). Static int8 also
        # turns the bias into int32 with the same per-channel parameters.
        body = body + has * (rows * 12 + 48) * (2 if static and kernel == "int8" else 1)
    elif kernel == "int8" and onnx and static:
        # QDQ per channel: weight scale fp32 + zero point int8, and a conv's int32 bias's scale + int32 zero
        # point where it has a bias (dynamo folds an untrained BatchNorm away and leaves none). A matrix's bias
        # is its own Add's constant after the exporter splits Gemm (per tensor).
        body = body + has * rows * (5 + 8 * (conv * np.asarray(has_bias)))
    elif kernel == "int8" and onnx:
        body = body + has * 5  # quantize_dynamic: one scale + zero point per tensor
    elif kernel == "int8":
        body = body + has * rows * 2  # Core ML: per-channel fp16 scale
    elif kernel == "int4" and onnx:
        # MatMulNBits, block 128 along K: each of the N columns pads K to whole blocks (64 B of 4-bit values),
        # one fp32 scale per block and the blocks' 4-bit zero points packed two per byte, per column.
        rows1 = np.maximum(rows, 1)
        blocks = np.ceil((elements / rows1 if depth is None else depth) / 128)
        body = has * rows1 * (blocks * (64 + 4) + np.ceil(blocks / 2))
    elif kernel == "int4":
        body = body + (elements / 32) * 2  # Core ML: block 32 with an fp16 scale
    if target.export == "tflite" and (kernel == "fp16" or (kernel == "int4" and not static)):
        # ai-edge-quantizer dequantizes fp16 and weight-only int4 kernels explicitly: a DEQUANTIZE operator
        # and a float32 tensor named `<w>_dequant`, 75 B in the flatbuffer besides that name (measured: one
        # kernel of tests/modelzoo.tflite_cnn cast to fp16 saves 104 B less than half its values; a longer
        # name costs byte for byte).
        body = body + has * (75 + name_len + len("_dequant"))
    return body


def stored_aux_bytes(target: Target, p: Path, asked: Combo, has_kernel: bool, op_type: str = "") -> float:
    """File bytes per float constant of a task (a bias; Add's constant, Gather's table, LayerNorm's gamma
    where the task has no kernel). An ONNX exporter stores a kernel-less task's as asked, whatever the
    runtime then runs (QDQ quantizes a LayerNorm the CPU EP runs in fp32), but for ops quantize_static does
    not quantize (a ScatterND's data: fp32); elsewhere they are stored as the path runs them, but for
    TFLite's fp16 biases."""
    if target.export == "tflite" and has_kernel and p.resolved.kernel == "fp16":
        return 4.0  # ai-edge-quantizer's fp16 casts the kernel only; the bias stays float32
    if has_kernel or target.export != "onnx":
        return p.aux_bytes
    if asked.input == "int8" and static_keeps_float(op_type):
        return 4.0
    return {"fp16": 2.0, "int8": 1.0}.get(asked.input, 4.0)


def export_events(target: Target, c: Combo) -> tuple[float, ...]:
    """1.0 for each of simulator.onnx_file.EVENTS the target's exporter performs on a task asked to run c.
    The exporter writes what is asked, whatever the runtime then falls back to; an option it cannot apply
    to an op (int4 on a Conv) finds no records to add there. Core ML and TFLite store compression in place."""
    if target.export != "onnx":
        return (0.0,) * len(EVENTS)
    on = set(iter_events(c.input, c.output, c.kernel, dynamic=c.kernel == "int8" and c.input != "int8"))
    return tuple(1.0 if e in on else 0.0 for e in EVENTS)


def _conv_biases(compiled: Graph, source: Graph | None) -> np.ndarray:
    """Per task: whether the conv the ONNX exporter writes for it has a bias (its source Conv reads one, or ORT
    folds a BatchNormalization into it, which makes one). Static int8 stores a scale and zero point per channel
    of that bias; dynamo exports fold untrained BatchNorms away and leave convs without one."""
    src = {n.id: n for n in source.nodes} if source is not None else {}
    out = np.ones(len(compiled.nodes), dtype=bool)
    if not src:
        return out
    for i, nd in enumerate(compiled.nodes):
        ns = [src[s] for s in nd.source_nodes if s in src]
        if any(n.op_type in ("Conv", "ConvTranspose") for n in ns):
            out[i] = any(n.op_type == "BatchNormalization" or (n.op_type in ("Conv", "ConvTranspose")
                                                                and len(n.inputs) > 2 and bool(n.inputs[2]))
                         for n in ns)
    return out



def _computed_at_run_time(source: Graph | None) -> frozenset[str]:
    """Values the source computes from its inputs' shapes at run time (Shape -> Range -> ... a detector's anchor
    grid): the compiled graph, optimized at fixed input shapes, holds them as constants, but the ONNX exporter
    writes the source's graph, which stores none of them (nudenet 320n at 640x640: 2 x 8400 anchors + 8400 strides,
    0.1 MB of a 3.2 MB int8-dynamic file)."""
    if source is None:
        return frozenset()
    view, _ = fold_constants(source)
    return frozenset(n for n, v in view.values.items() if v.weight is None)


def _stored_elements(works: list[Work], not_stored: frozenset[str] = frozenset()) -> tuple[np.ndarray, np.ndarray]:
    """(kernel, aux) elements each task stores: a weight read by several tasks is stored once, by the first;
    none of the aux values in `not_stored`."""
    seen: set[str] = set(not_stored)
    k_store = np.empty(len(works))
    aux_store = np.empty(len(works))
    for i, w in enumerate(works):
        # A lookup table (Work.lookup_table) is stored as the task's kernel, which an option quantizes
        k = dict(w.aux_weights).get(w.kernel_name, 0.0) if w.lookup_table else w.kernel_elements
        if w.kernel_name:
            if w.kernel_name in seen:
                k = 0.0
            seen.add(w.kernel_name)
        aux = 0.0
        for name, el in w.aux_weights:
            if name not in seen:
                aux += el
                seen.add(name)
        k_store[i], aux_store[i] = k, aux
    return k_store, aux_store



def export_records_for(t: Target, compiled: Graph, source: Graph | None, works: list[Work]) -> ExportRecords | None:
    """The ONNX exporter's records (simulator.onnx_file), where it writes this target's file from an ONNX
    model (the source; without one, the compiled graph taken as its own source); else None: Core ML and
    TFLite files are sized from the upload's own overhead."""
    src = source if source is not None else compiled
    if t.export != "onnx" or src.format != "onnx" or compiled.format != "onnx":
        return None
    weighted = [w.kind in WEIGHTED_KINDS and w.kernel_elements > 0 for w in works]
    # A QDQ upload's exports but its own int8-static start from its float graph (compiler.optimize.onnx_qdq): pairs
    # removed, weights dequantized into float initializers named as the DequantizeLinear outputs (the pairs' records
    # were 42 KB of torchvision's quantized MobileNetV2's fp32 file, +0.3%, on ort-cpu/host); the int8-static file is
    # the upload, sized as it (simulator.sweep)
    view, pairs = float_view(src)
    records = export_records(view, compiled, weighted, gone=pairs)
    if qdq_preset(src, t) == "int8-static":
        # A QDQ file is int8-static as it is: its Q/DQ records are the file's own (in `base`), none to add.
        records.events[:, EVENTS.index("static")] = 0.0
    return _beyond_upload(t, src, records)


def _beyond_upload(t: Target, src: Graph, records: ExportRecords) -> ExportRecords:
    """`records` with what the file ORT saves holds beyond the whole upload taken out of `base`, where the fp32
    export is the upload itself (`writes_upload`). `base` sizes ORT's saved file, whose records (every opset domain
    ORT lists, the default domain a model without one gets) can outweigh a tiny upload's: onnxruntime's 670-byte
    `logreg_iris` (ai.onnx.ml ops, coefficients in attributes) had its fp32 and int8-dynamic files, both the upload,
    sized 862 bytes (+28.7%). Those bytes belong to the files an option rewrites: Stored.saved charges them to the
    tasks, as constants made at run time are, and the float state leaves them out."""
    if not writes_upload(src, t):
        return records
    excess = records.base - float(src.metadata["file_size_bytes"])
    if excess <= 0:
        return records
    return dataclasses.replace(records, base=records.base - excess, beyond_upload=excess)



def _stored_as_is(t: Target, g: Graph, folded: frozenset[str], works: list[Work]) -> np.ndarray:
    """Bytes of each task's kernel where the upload already stores it quantized (an int8 tensor behind a
    DEQUANTIZE folded at load) and the target's exporter keeps it so: ai-edge-quantizer does not requantize
    it, nor does a float export expand it; int8-static is the exception (see weight_bytes). 0 elsewhere."""
    out = np.zeros(len(works))
    if t.export != "tflite":
        return out
    stored: dict[str, float] = {}
    for nd in g.nodes:
        if nd.id in folded and nd.op_type in ("DequantizeLinear", "DEQUANTIZE") and nd.inputs and nd.outputs:
            v = g.values.get(nd.inputs[0])
            if v is not None and v.weight is not None and v.dtype in ("int8", "uint8", "int4", "uint4"):
                stored[nd.outputs[0]] = float(v.weight.bytes)
    for i, w in enumerate(works):
        out[i] = stored.get(w.kernel_name, 0.0) if w.kernel_elements else 0.0
    return out



def _shared_other_constants(g: Graph, folded: frozenset[str], works: list[Work]) -> np.ndarray:
    """Per task of a TFLite graph: bytes of the non-float constants it reads (`Work.other_const_bytes`: shape and
    index tensors, int32 biases) that an earlier task already reads, so the file stores them once (microWakeWord's
    STRIDED_SLICEs share their begin / end / strides: 144 and 376 B of its files counted twice). Other formats:
    0 (an ONNX file is sized from its exporter's records)."""
    out = np.zeros(len(works))
    if g.format != "tflite":
        return out
    seen: set[str] = set()
    for i, (nd, w) in enumerate(zip(g.nodes, works)):
        if nd.id in folded or not w.other_const_bytes:
            continue
        for name in nd.inputs:
            v = g.values.get(name) if name else None
            if v is None or v.weight is None or name == w.kernel_name or v.dtype in _FLOAT_DTYPES | _HANDLES:
                continue
            if name in seen:
                out[i] += v.weight.bytes
            seen.add(name)
    return np.minimum(out, np.array([w.other_const_bytes for w in works]))


def _source_kernels(g: Graph, source: Graph, by_output: dict[str, float]) -> dict[str, str]:
    """{task id: the DequantizeLinear output its source op reads as its kernel}, for a compiled graph whose tasks
    renamed their kernels (ORT's NCHWc reorders them: `reorder_token_<n>` on ort-cpu/host)."""
    by_id = {nd.id: nd for nd in source.nodes}
    out: dict[str, str] = {}
    for nd in g.nodes:
        for s in (by_id.get(i) for i in nd.source_nodes):
            if s is not None and len(s.inputs) > 1 and s.inputs[1] in by_output:
                out[nd.id] = s.inputs[1]
                break
    return out


def _stored_int8(t: Target, g: Graph, works: list[Work], source: Graph | None = None) -> np.ndarray:
    """Bytes of each task's kernel where a fully int8 upload (compiler.frontends.tflite.fully_int8: int8 weights and
    activations, as microWakeWord's models are) stores it int8 itself: the file as stored is its int8-static state.
    Priced afresh (a float32 scale, an int64 zero point per channel, and the int32 bias's copy of them), its two
    models came out at +23% / +24% of their 56-81 KB files. 0 elsewhere."""
    out = np.zeros(len(works))
    src = source if source is not None else g
    if t.export == "onnx" and src.format == "onnx" and qdq_preset(src, t) == "int8-static":
        # An ONNX QDQ file: int8-static as it is, its kernels at their bytes, and the scales and zero points of its
        # int32 biases (whose values are priced as float constants, 4 B each).
        by_output = dq_weights(src)
        kernels = _source_kernels(g, src, by_output) if src is not g else {}
        return np.array([(by_output.get(kernels.get(nd.id, w.kernel_name), 0.0) if w.kernel_elements else 0.0)
                         + sum(by_output[a] - 4.0 * el for a, el in w.aux_weights if a in by_output)
                         for nd, w in zip(g.nodes, works)])
    if t.export != "tflite" or g.format != "tflite":
        return out
    from compiler.frontends.tflite import fully_int8

    if not fully_int8(g):
        return out
    for i, w in enumerate(works):
        v = g.values.get(w.kernel_name) if w.kernel_elements else None
        if v is not None and v.weight is not None and v.dtype == "int8":
            out[i] = float(v.weight.bytes)
    return out


def _static_bias_copies(t: Target, works: list[Work]) -> np.ndarray:
    """File bytes per task of its own copy of a float constant it shares with an earlier task (a bias that
    litert-torch deduplicated, such as the zeros of untrained BatchNorms), where static int8 needs one int32
    bias per operator, with that operator's scales: ai-edge-quantizer writes `<name>_duplicated_<n>`, its data
    (4 B per element) and a tensor record (75 B besides the name, as storage_bytes_per_kernel's). Measured:
    MobileNetV2 from litert-torch, 39 duplicated biases, 51 KB of int32 data. Other exporters: 0."""
    out = np.zeros(len(works))
    if t.export != "tflite":
        return out
    seen: set[str] = set()
    tables = {w.kernel_name for w in works if w.lookup_table}
    for i, w in enumerate(works):
        for name, el in w.aux_weights:
            if name in seen and w.kernel_elements:
                out[i] += el * 4 + 75 + len(name.encode()) + len("_duplicated_000")
            seen.add(name)
        if w.kernel_elements and w.kernel_name in tables:
            # A kernel that is also a lookup table (a language model's output layer tied to its word embedding):
            # the table stays float32 under static int8, so this operator gets an int8 copy of its own, with a scale
            # per row (measured: a Llama-style LM with 8000 x 256 tied weights, 2.05 MB more than the float table)
            out[i] += w.kernel_elements + w.kernel_out_channels * 12 + 48 + 75 + len(w.kernel_name.encode())
    return out



def _fp16_restored_bytes(t: Target, g: Graph, folded: frozenset[str]) -> float:
    """File bytes of the fp16 weights' DEQUANTIZE records that the LiteRT exporter removes: it restores fp16
    weights to the fp32 constants DEQUANTIZE computes before quantizing (compiler/optimize/litert_prepare.py),
    so each folded fp16 DEQUANTIZE loses its operator and its fp16 tensor: 75 B plus the tensor's name, as
    ai-edge-quantizer's own DEQUANTIZE records cost (storage_bytes_per_kernel). Measured: MobileNetV2 with 53
    fp16 weights (litert-torch names), every option written 44-45 KB smaller than the upload's records."""
    if t.export != "tflite":
        return 0.0
    out = 0.0
    for nd in g.nodes:
        if nd.id in folded and nd.op_type == "DEQUANTIZE" and len(nd.inputs) == 1:
            v = g.values.get(nd.inputs[0])
            if v is not None and v.weight is not None and v.dtype == "float16":
                out += 75 + len(nd.inputs[0].encode())
    return out



def _size_overhead(g: Graph) -> float:
    """File bytes beyond the weights: from the uploaded file's size when the frontend recorded it."""
    fs = g.metadata.get("file_size_bytes") or g.metadata.get("source_file_size_bytes")
    src_w = g.metadata.get("source_weight_bytes")
    if fs and src_w:
        return max(0.0, float(fs) - float(src_w))
    return 4096.0 + 120.0 * len(g.nodes)  # estimate: protobuf node records + header
