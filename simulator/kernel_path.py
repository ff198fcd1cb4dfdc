"""How a backend runs one task under one combo: the `Path` simulator.backends (and litert_paths, ort_int8, ...) plan
and simulator.roofline's formulas cost. Software behaviour as data: bytes per element, extra passes and kernels, the
efficiency key and the flags that switch a formula's term on; the figures themselves are the hardware profile's."""

from __future__ import annotations

from dataclasses import dataclass

from compiler.vocabulary.options import Combo


@dataclass(frozen=True, slots=True)
class Path:
    """How a backend runs one task under one combo (simulator.backends.plan): what simulator.roofline costs."""

    unit: int  # index into profile.units
    resolved: Combo  # the combo actually run (differs from the asked one on fallback)
    supported: bool  # False = the asked combo fell back to `resolved`
    compute: str  # key of unit.peak_ops_per_s
    tag: str  # efficiency key suffix: fp32, fp16, int8, int8dyn, int4w
    in_bytes: float  # per input activation element moved by the kernel
    out_bytes: float
    w_runtime_bytes: float  # per kernel element streamed per inference
    runtime_sparse: bool  # runtime weight traffic shrinks with sparsity (JIT sparse decode)
    aux_bytes: float  # per bias / gamma element stored
    extra_in_bytes: float  # extra traffic per input element (casts, on-the-fly quantization)
    extra_out_bytes: float  # extra traffic per output element (dequantize, unfused activation)
    extra_dispatches: int  # extra kernels launched
    decode_ops: float  # ops per kernel element to unpack weights on every run (MatMulNBits at fp32)
    eliminated: bool  # the task disappears (e.g. NCHWc reorders under int8)
    fp32_equivalent: bool  # runs exactly the fp32 kernel (a measured fp32 time applies)
    note: str = ""
    setup_per_channel: bool = False  # the fixed setup is paid per group (per channel if depthwise), not per task
    extra_ops_per_out: float = 0.0  # ops per output element of extra element-wise kernels (at that kind's rate)
    setup_per_pixel: bool = False  # also a fixed cost per output pixel (`<kind>.<tag>.pixel` in kind_overhead_s)
    im2col: bool = False  # a kernel > 1x1 is expanded (im2col) before a GEMM: `<kind>.<tag>.im2col` s per element
    repack: bool = False  # the weights are packed for the GEMM on every run: `<kind>.<tag>.weights` s per weight
    rate_kind: str = ""  # the kind whose efficiency and setup the path runs at, where not the task's own
    spill: bool = False  # output bytes beyond the core's L2 cost `<kind>.<tag>.spill` s each (Unit.l2_share_bytes)
    # a GEMM per group: `<kind>.<tag>.row` s per GEMM row, `.tap` per NHWC im2col copy (Work); ORT's fp32 Softmax
    # pays `.row` per row, `.tap` per row off a cache line (simulator.softmax_rows)
    qgemm: bool = False
    extra_ops_per_in: float = 0.0  # ops per input element of extra element-wise kernels (as extra_ops_per_out)
    extra_ops_format: str = ""  # the format the extra element-wise kernels compute in, where not the path's (fp32)
    # The GEMM's padding is paid: MLAS's SGEMM columns to the unit's block (Work.sgemm_columns), XNNPACK's int GEMMs'
    # input channels per tap and outputs to the unit's K and N blocks (Work.gemm_k), its fp32 ones' to f32_n_block
    padded_sgemm: bool = False
    # XNNPACK's F32 IGEMM: output channels in Unit.f32_igemm_n_block's blocks from that many on, f32_n_block's below
    # (with padded_sgemm; a TRANSPOSE_CONV's Subconv2D runs the same kernels, its K block 1 as an F32 conv's)
    igemm_blocks: bool = False
    # XNNPACK's fp32 depthwise tile: channels in whole tiles of Unit.f32_n_block (its dwconv configs' channel_tile
    # equals the F32 GEMM's nr on each ISA), a remainder at a whole tile's cost (simulator.litert_paths.DW_TILE25)
    dw_tiles: bool = False
    # ops per output element of extra kernels in fp32 beside an int8 kernel (ORT's DequantizeLinear, activation and
    # QuantizeLinear around one a static int8 Conv cannot fold) at the fp32 element-wise rate (extra_ops_per_out: int8)
    extra_fp32_ops_per_out: float = 0.0
    # of those, the FLOPs of the activation's own fp32 kernel, at that op's calibrated element-wise rate where the
    # profile has one (`elementwise.fp32.<extra_act_op>`: HardSigmoid)
    extra_act_flops_per_out: float = 0.0
    extra_act_op: str = ""
    # an element-wise kernel called once per this many output elements (a broadcast operand's length: ORT's QLinear
    # binary kernels over NHWC data with a per-channel operand), `<kind>.<tag>.span` s per call (0: not so)
    span_elements: float = 0.0
    span_key: str = ""  # the figure of that cost per call where not the path's own (`<kind>.<tag>.span`)
    # a fixed cost per output element (`<kind>.<tag>.out` s each): XNNPACK's QS8 GEMMs requantize and store every
    # output in the micro-kernel's epilogue, a cost the MACs do not carry (simulator.litert_paths.QS8_OUT)
    out_cost: bool = False
    # a fixed cost per output element and kernel tap (`<kind>.<tag>.igemm` s each, Work.igemm_taps): XNNPACK's
    # integer indirect GEMM loads each tap's row pointers and runs its reduction block by block, so a tap of few
    # input channels (an image stem's 3, padded to one block) costs its pointers and loop beside its MACs
    tap_cost: bool = False
    # extra bytes per input element moved at the cache rate whatever the task's size (a copy the task's kernel reads
    # back at once: XNNPACK's Constant Pad before a conv that does not fold it, simulator.litert_paths)
    cached_extra_in_bytes: float = 0.0
    # ORT's CPU ConvTranspose scatters its GEMM's columns into the output (Work.col2im_elements): `<kind>.<tag>.col2im`
    # s per column element (an fp16 path's Casts around the fp32 kernel: the fp32 figure)
    col2im: bool = False
    nhwc_input: bool = False  # an image input's uint8 NHWC Transpose ahead of it (NHWC_INPUT_KEY s per input element)
    # MLAS's generic u8 depthwise kernel: MACs in whole 16-lane blocks (Work.lane_macs) and `<kind>.<tag>.scalar` s per
    # tap of each channel past them (Work.scalar_taps; conv_work.generic_depthwise_lanes)
    lanes: bool = False
    call_elements: float = 0.0  # a copy kernel called once per this many output elements: `<kind>.<tag>.call` s each
