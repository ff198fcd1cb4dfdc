"""Hardware profiles: YAML data in simulator/hardware/<name>.yaml, loaded into frozen records.

Every figure in the YAML is `{value, source}`; the loader refuses a figure without a source so the
files stay the single documented source of truth. Calibration results (host only) are applied as
overrides on top (`with_overrides`), never written back into the YAML.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

HARDWARE_DIR = Path(__file__).parent / "hardware"


class ProfileError(ValueError):
    """A hardware profile file is missing or malformed. Message is user-facing."""


# eq=False: hashed by identity, so the sweep can cache paths per loaded profile.
@dataclass(frozen=True, slots=True, eq=False)
class Unit:
    name: str
    ops: frozenset[str] | None  # None = every op type
    ops_except: frozenset[str]
    peak_ops_per_s: dict[str, float]  # per compute dtype; one MAC = 2 ops
    cache_bandwidth_bytes_per_s: float
    onchip_memory_bytes: float
    dispatch_overhead_s: float
    run_overhead_s: float
    activation_formats: frozenset[str]
    activation_formats_via_cast: frozenset[str]
    # Float formats the unit accepts but computes in another (HTP runs fp32 graphs at fp16; the ANE is fp16 only):
    # such a task runs on this unit at the other format's rate and bytes, no CPU fallback.
    activation_formats_as: dict[str, str]
    int8_kinds: frozenset[str]
    kernel_formats_native: frozenset[str]
    kernel_formats_jit: frozenset[str]
    weight_only_fused: dict[str, frozenset[str]]  # kernel format -> kinds with a fused decode kernel
    dynamic_int8: bool
    sparse: str  # "none" | "jit"
    efficiency: dict[str, float]  # "<kind>.<path>" | "<kind>" | "default" -> share of peak
    bandwidth_efficiency: float
    profiler_overhead_s: float = 0.0  # time ORT's profiler adds to each recorded task (calibrated)
    roofline_overlap: float = 0.0  # 0 = compute and memory overlap fully (classic roofline), 1 = not at all
    llc_share_bytes: float = 0.0  # one core's share of the last-level cache: weights up to it overlap the compute
    llc_bytes: float = 0.0  # the whole last-level cache: weights beyond it do not overlap at all
    # Weights up to `llc_keep_bytes` stay in that cache between runs, none beyond `llc_gone_bytes` (linear between;
    # calibrated: simulator.calibration_llc; 0: a step at llc_bytes).
    llc_keep_bytes: float = 0.0
    llc_gone_bytes: float = 0.0
    # One core's share of its level-2 cache: a path with a spill cost (Path.spill) pays it on the bytes of its working
    # set beyond this (0: not modelled; LiteRT's calibration reads it from sysfs).
    l2_share_bytes: float = 0.0
    # A last-level cache shared with other cores and tenants keeps a weight only so long after its last read
    # (simulator.roofline.evicted_share): all of them up to `llc_hold_s`, none after `llc_evict_s`; evicted ones
    # come back from memory at `evicted_bandwidth_bytes_per_s` (0: not modelled, they all stay).
    llc_hold_s: float = 0.0
    llc_evict_s: float = 0.0
    # ... and only so many bytes of the run's own traffic beyond the core's L2 (activations spilling into the shared
    # cache): all of them up to `llc_spill_hold_bytes`, none after `llc_spill_evict_bytes` (0: not modelled).
    llc_spill_hold_bytes: float = 0.0
    llc_spill_evict_bytes: float = 0.0
    evicted_bandwidth_bytes_per_s: float = 0.0
    # Share of a task's weight traffic from memory that shows in its latency (simulator.roofline.task_cost): 1 = the
    # task reads its weights in its own time (a roofline per task); below 1, the rest streams in ahead, while
    # earlier tasks compute (the ANE fetches weights off the critical path).
    weights_exposed_share: float = 1.0
    # The rate a kind's activations move at on this unit whatever their size ({kind: bytes/s}; "default": every kind
    # without its own; none: the cache or memory rate by size): the ANE moves every task's activations through memory
    # at one rate, its chains of element-wise ops at another (apple-a17.yaml). `<kind>.<tag>`: a path's own rate, only
    # while its task's bytes fit in the L2 (simulator.roofline.Rates.own_bw; LiteRT's fp32 element-wise ops).
    kind_bandwidth_bytes_per_s: dict[str, float] = dataclasses.field(default_factory=dict)
    kind_overhead_s: dict[str, float] = dataclasses.field(default_factory=dict)  # fixed cost per task of a kind
    # Op types that, with a constant weight in a quantized model (int8 weights or activations), the runtime leaves
    # to the fallback unit whatever their formats (QNN EP: a MatMul with per-channel int8 weights).
    quantized_ops_except: frozenset[str] = frozenset()
    # A fixed cost per run of a graph that computes in a float format on this unit (the totals rule's float-graph
    # term, `constants.float_graph_ms`): paid once per inference when any task on the unit reads and writes float
    # activations (AI Hub's float TFLite jobs on the HTP run ~0.2-0.3 ms slower per run than w8a8 ones).
    float_graph_run_s: float = 0.0
    # The columns MLAS's fp32 SGEMM kernel computes at a time in its last block, so a GEMM's columns are padded to a
    # multiple of it (simulator.conv_work.sgemm_columns): one vector register's floats, 16 with AVX-512F, 8 with
    # AVX2 (a fact of the ISA, host_machine.sgemm_column_block; 0: not modelled).
    sgemm_column_block: float = 0.0
    # XNNPACK's integer GEMM / IGEMM micro-kernel blocks on this CPU (QS8 and QD8): each kernel tap's input channels are
    # packed rounded up to the K block, the output channels computed in blocks of N (host_machine.int8_gemm_blocks).
    # Without a figure: the K block of its x86 and Arm c8 kernels, 8, and no N block.
    int8_k_block: float = 8.0
    int8_n_block: float = 0.0
    # XNNPACK's fp32 GEMM / IGEMM micro-kernels' output-channel block on this CPU (host_machine.f32_gemm_n_block: 16 on
    # x86 with AVX, 8 on Arm NEON): a LiteRT fp32 conv computes its output channels in whole blocks (0: not modelled).
    f32_n_block: float = 0.0
    # ... and its F32 IGEMM's (a conv other than 1x1 stride 1), from that many output channels on: XNNPACK switches to
    # the `nr2` kernels (f32_n_block) only where the IGEMM's nr exceeds the output channels (host_machine; 0: f32_n_block)
    f32_igemm_n_block: float = 0.0
    # fp32 lanes of the vectors its depthwise kernels load a pixel's channels in (host_machine.f32_vector_floats: 16
    # with AVX-512F): channels not a whole number of them run at `<kind>.<tag>split` where calibrated (0: not modelled)
    f32_vector_floats: float = 0.0
    # its level-1 data cache (host_machine.l1_bytes): an fp32 depthwise tile whose pixel's weights and inputs outgrow
    # it reads its weights again from the L2 for every output pixel (litert_paths.DW_PIXEL_BYTES; 0: not modelled)
    l1_bytes: float = 0.0

    def runs(self, op_type: str) -> bool:
        if op_type in self.ops_except:
            return False
        return self.ops is None or op_type in self.ops


@dataclass(frozen=True, slots=True, eq=False)
class HardwareProfile:
    name: str
    description: str
    dram_bandwidth_bytes_per_s: float
    dram_energy_pj_per_byte: float
    partition_crossing_s: float
    units: tuple[Unit, ...]
    calibrated: bool = False
    error_pct_median: float | None = None  # measured prediction error on models not used to fit
    error_models: int = 0
    error_target: str | None = None  # the target the error was measured on (None: any)
    # ONNX Runtime execution providers on this device: backend -> its published op list, the units that
    # run those ops and the CPU EP fallback unit (`execution_providers:` in the YAML; see for_backend).
    execution_providers: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    # The CPU's speed the calibrated rates stand for (compiler.speed_probe, GFLOP/s; None: not calibrated, or before
    # calibrations recorded a probe): compiler.speed_probe.fastest_of.
    speed_gflops: float | None = None
    # The CPU's typical speed on this machine: the median of the probes its profiles and calibrations took
    # (simulator.speed_history; None: too few yet). A prediction made without a profile is made at it
    # (simulator.measured.typical_factor).
    typical_gflops: float | None = None
    # The profile this one was derived from by changing figures only (with_overrides): the backend's paths
    # (simulator.backends.plan) depend on the units' formats and op lists, not on figures, so they are shared.
    plan_base: HardwareProfile | None = None

    def for_backend(self, backend: str) -> HardwareProfile:
        """The profile as `backend` sees it. Without an `execution_providers` entry for it: unchanged.
        With one: each listed unit runs only the EP's ops (`own`: its own list intersected with the EP's;
        `ep`: the EP's list), the `fallback` unit (ORT's CPU EP) runs the rest, other units are dropped."""
        ep = self.execution_providers.get(backend)
        if ep is None:
            return self
        ep_ops = frozenset(ep["ops"])
        units = []
        for u in self.units:
            mode = ep["units"].get(u.name)
            if mode == "own":
                units.append(dataclasses.replace(u, ops=ep_ops if u.ops is None else u.ops & ep_ops))
            elif mode == "ep":
                units.append(dataclasses.replace(u, ops=ep_ops))
            elif u.name == ep["fallback"]:
                units.append(u)
        return dataclasses.replace(self, units=tuple(units),
                                   partition_crossing_s=ep.get("partition_crossing_s", self.partition_crossing_s))

    def structure(self) -> str:
        """The fields that decide which path a task takes (units, op lists, formats), not the figures: a cache of
        planned paths is valid for every profile with the same structure."""
        def norm(v: Any) -> Any:
            return sorted(map(str, v)) if isinstance(v, frozenset) else v

        return repr([(u.name, [(f, norm(getattr(u, f))) for f in sorted(_STRUCTURAL)]) for u in self.units])

    def with_overrides(self, overrides: dict[str, Any]) -> HardwareProfile:
        """Apply fitted values: {"dram_bandwidth_bytes_per_s": x, "units": {"cpu": {field: value,
        "efficiency": {key: value}}}, "error_pct_median": e, "error_models": n}."""
        units = []
        structural = False
        for u in self.units:
            o = dict(overrides.get("units", {}).get(u.name, {}))
            structural |= bool(_STRUCTURAL & o.keys())
            new_eff = o.pop("efficiency", {})
            # The planner tests some efficiency keys' presence (simulator.backends: the fp16 NCHW path takes
            # `<kind>.cast16nchw` only where it is fitted): a new one of those changes a path, a new figure does not.
            structural |= any(k.rsplit(".", 1)[-1] in PATH_EFFICIENCY_TAGS or k in PATH_EFFICIENCY_KEYS
                              for k in new_eff.keys() - u.efficiency.keys())
            eff = {**u.efficiency, **new_eff}
            new_kov = o.pop("kind_overhead_s", {})
            # A path exists only where its cost is known (the NCHW depthwise path needs
            # `conv.cast16nchw.im2col`): a key the base lacks changes which paths are planned.
            structural |= bool(new_kov.keys() - u.kind_overhead_s.keys())
            kov = {**u.kind_overhead_s, **new_kov}
            units.append(dataclasses.replace(u, efficiency=eff, kind_overhead_s=kov, **o))
        # The machine's description (calibration reads it from Linux) and fitted whole-device figures.
        top = {k: v for k, v in overrides.items() if k in ("description", "dram_bandwidth_bytes_per_s",
                                                           "error_pct_median", "error_models", "error_target",
                                                           "dram_energy_pj_per_byte")}
        return dataclasses.replace(self, units=tuple(units), calibrated=True,
                                   plan_base=None if structural else (self.plan_base or self), **top)


# Efficiency tags whose key's presence decides a path (simulator.backends), not only its cost: the fp16 NCHW
# depthwise path runs at `<kind>.cast16nchw` where calibration fitted it, else at the fp32 NCHW figures.
CAST16NCHW = "cast16nchw"
TILE25 = "tile25"  # LiteRT's fp32 5x5 depthwise convs take `dwconv.tile25` only where fitted (simulator.litert_paths)
HYBRID25 = "hybrid25"  # ... and its dynamic int8 ones (TFLite's hybrid kernel) `dwconv.hybrid25` (litert_paths)
PATH_EFFICIENCY_TAGS = frozenset({CAST16NCHW, TILE25, HYBRID25})
# Whole efficiency keys whose presence decides a path: a Gelu under static int8 is one int8 task where calibration
# timed the quantizer's split of it (simulator.backends._INT8_OWN_RATE), else the fp32 split between Q/DQ.
INT8_GELU = "elementwise.int8.Gelu"
# LiteRT's channel CONCATENATION runs at its own rate where LiteRT's calibration fitted it (simulator.litert_paths
# .CONCAT_CHANNELS), else at the layout rate.
CONCAT_INTERLEAVE = "layout.interleave.CONCATENATION"
# ... and its fp32 TRANSPOSE at XNNPACK's figures (simulator.litert_paths.XNN_TRANSPOSE) where fitted.
XNN_TRANSPOSE_KEY = "layout.transpose.TRANSPOSE"
PATH_EFFICIENCY_KEYS = frozenset({INT8_GELU, CONCAT_INTERLEAVE, XNN_TRANSPOSE_KEY})
# s per input element of the uint8 NCHW -> NHWC Transpose of an image input under static int8
# (kernel_path.Path.nhwc_input, simulator/ort_int8.py ORT_INT8_INPUT_NHWC)
NHWC_INPUT_KEY = "layout.int8.nhwc"

# Unit fields that change which path a task takes (not only its figures).
_STRUCTURAL = frozenset({"name", "ops", "ops_except", "activation_formats", "activation_formats_via_cast",
                         "activation_formats_as", "int8_kinds", "kernel_formats_native", "kernel_formats_jit",
                         "weight_only_fused", "dynamic_int8", "sparse", "quantized_ops_except"})


def _figure(d: Any, where: str) -> float:
    if not isinstance(d, dict) or "value" not in d or not str(d.get("source", "")).strip():
        raise ProfileError(f"{where}: every figure needs {{value, source}}")
    return float(d["value"])


def _figures(d: dict[str, Any], where: str) -> dict[str, float]:
    return {k: _figure(v, f"{where}.{k}") for k, v in d.items()}


def _formats_as(d: dict[str, Any], where: str) -> dict[str, str]:
    m = d.get("activation_formats_as") or {}
    if m and not str(d.get("activation_formats_as_source", "")).strip():
        raise ProfileError(f"{where}.activation_formats_as: needs activation_formats_as_source")
    bad = [f"{k}->{v}" for k, v in m.items() if v not in d["activation_formats"]]
    if bad:
        raise ProfileError(f"{where}.activation_formats_as: {', '.join(bad)} maps to a format the unit lacks")
    return {str(k): str(v) for k, v in m.items()}


def _quantized_except(d: dict[str, Any], where: str) -> frozenset[str]:
    ops = d.get("quantized_ops_except") or []
    if ops and not str(d.get("quantized_ops_except_source", "")).strip():
        raise ProfileError(f"{where}.quantized_ops_except: needs quantized_ops_except_source")
    return frozenset(ops)


def _unit(d: dict[str, Any], where: str) -> Unit:
    ops = d.get("ops", "*")
    return Unit(
        name=d["name"],
        ops=None if ops == "*" else frozenset(ops),
        ops_except=frozenset(d.get("ops_except", [])),
        peak_ops_per_s=_figures(d["peak_ops_per_s"], f"{where}.peak_ops_per_s"),
        cache_bandwidth_bytes_per_s=_figure(d["cache_bandwidth_bytes_per_s"], f"{where}.cache_bandwidth"),
        onchip_memory_bytes=_figure(d["onchip_memory_bytes"], f"{where}.onchip_memory_bytes"),
        dispatch_overhead_s=_figure(d["dispatch_overhead_s"], f"{where}.dispatch_overhead_s"),
        run_overhead_s=_figure(d["run_overhead_s"], f"{where}.run_overhead_s"),
        activation_formats=frozenset(d["activation_formats"]),
        activation_formats_via_cast=frozenset(d.get("activation_formats_via_cast", [])),
        activation_formats_as=_formats_as(d, where),
        int8_kinds=frozenset(d.get("int8_kinds", [])),
        kernel_formats_native=frozenset(d["kernel_formats_native"]),
        kernel_formats_jit=frozenset(d.get("kernel_formats_jit", [])),
        weight_only_fused={k: frozenset(v) for k, v in (d.get("weight_only_fused") or {}).items()},
        dynamic_int8=bool(d.get("dynamic_int8", False)),
        sparse=str(d.get("sparse", "none")),
        efficiency=_figures(d.get("efficiency", {}), f"{where}.efficiency"),
        bandwidth_efficiency=_figure(d["bandwidth_efficiency"], f"{where}.bandwidth_efficiency"),
        profiler_overhead_s=_figure(d["profiler_overhead_s"], f"{where}.profiler_overhead_s")
        if "profiler_overhead_s" in d else 0.0,
        kind_overhead_s=_figures(d.get("kind_overhead_s", {}), f"{where}.kind_overhead_s"),
        kind_bandwidth_bytes_per_s=_figures(d.get("kind_bandwidth_bytes_per_s", {}),
                                            f"{where}.kind_bandwidth_bytes_per_s"),
        roofline_overlap=_figure(d["roofline_overlap"], f"{where}.roofline_overlap") if "roofline_overlap" in d else 0.0,
        llc_share_bytes=_figure(d["llc_share_bytes"], f"{where}.llc_share_bytes") if "llc_share_bytes" in d else 0.0,
        llc_bytes=_figure(d["llc_bytes"], f"{where}.llc_bytes") if "llc_bytes" in d else 0.0,
        l2_share_bytes=_figure(d["l2_share_bytes"], f"{where}.l2_share_bytes") if "l2_share_bytes" in d else 0.0,
        **{k: _figure(d[k], f"{where}.{k}") for k in ("llc_hold_s", "llc_evict_s", "llc_spill_hold_bytes",
                                                     "llc_keep_bytes", "llc_gone_bytes",
                                                     "llc_spill_evict_bytes", "evicted_bandwidth_bytes_per_s",
                                                     "weights_exposed_share", "float_graph_run_s", "sgemm_column_block",
                                                     "int8_k_block", "int8_n_block", "f32_n_block",
                                                     "f32_igemm_n_block", "f32_vector_floats", "l1_bytes")
           if k in d},
        quantized_ops_except=_quantized_except(d, where),
    )


def _execution_providers(data: dict[str, Any], units: tuple[Unit, ...], where: str) -> dict[str, dict[str, Any]]:
    names = {u.name: u for u in units}
    out: dict[str, dict[str, Any]] = {}
    for backend, d in (data or {}).items():
        w = f"{where}.execution_providers.{backend}"
        if not isinstance(d, dict) or not d.get("ops") or not str(d.get("ops_source", "")).strip():
            raise ProfileError(f"{w}: needs `ops` (the EP's published op list) and `ops_source`")
        modes = d.get("units") or {}
        bad = [f"{n}: {m}" for n, m in modes.items() if n not in names or m not in ("own", "ep")]
        if bad:
            raise ProfileError(f"{w}.units: unknown unit or mode (own | ep): {', '.join(bad)}")
        fb = names.get(d.get("fallback", ""))
        if fb is None or fb.ops is not None or fb.name in modes:
            raise ProfileError(f"{w}.fallback: must name a catch-all unit (ops: \"*\") not in `units`")
        ep = {"ops": list(d["ops"]), "ops_source": d["ops_source"], "units": dict(modes), "fallback": fb.name}
        if "partition_crossing_s" in d:
            ep["partition_crossing_s"] = _figure(d["partition_crossing_s"], f"{w}.partition_crossing_s")
        out[backend] = ep
    return out


def parse_profile(data: dict[str, Any], where: str = "profile") -> HardwareProfile:
    try:
        units = tuple(_unit(u, f"{where}.units.{u.get('name')}") for u in data["units"])
        return HardwareProfile(
            name=data["name"], description=data.get("description", ""),
            dram_bandwidth_bytes_per_s=_figure(data["dram_bandwidth_bytes_per_s"], f"{where}.dram_bandwidth"),
            dram_energy_pj_per_byte=_figure(data["dram_energy_pj_per_byte"], f"{where}.dram_energy"),
            partition_crossing_s=_figure(data["partition_crossing_s"], f"{where}.partition_crossing_s"),
            units=units,
            execution_providers=_execution_providers(data.get("execution_providers"), units, where),
        )
    except KeyError as e:
        raise ProfileError(f"{where}: missing key {e}") from None


def list_profiles() -> list[str]:
    return sorted(p.stem for p in HARDWARE_DIR.glob("*.yaml"))


@lru_cache(maxsize=None)
def load_profile(name: str, backend: str | None = None) -> HardwareProfile:
    """The profile `name`; with `backend`, as that backend sees it (HardwareProfile.for_backend)."""
    if backend is not None:
        return load_profile(name).for_backend(backend)
    path = HARDWARE_DIR / f"{name}.yaml"
    if not path.exists():
        raise ProfileError(f"unknown hardware profile {name!r}; known: {', '.join(list_profiles())}")
    return parse_profile(yaml.safe_load(path.read_text()), where=path.name)
