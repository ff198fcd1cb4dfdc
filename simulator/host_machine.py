"""This machine's CPU as Linux describes it (/proc/cpuinfo, sysfs caches) and the host profile's fixed facts it gives:
nominal peaks per microarchitecture, one core's L2 and last-level cache share (calibration reads them; moved out of
simulator/calibration_bench.py, which builds the timed models)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def llc_bytes(sysfs: Path = Path("/sys/devices/system/cpu/cpu0/cache")) -> tuple[int, int]:
    """(one core's share, the whole) of its last-level cache from Linux sysfs: the size of the highest-level
    data cache, over the number of CPUs sharing it for the share (this VM: a 32 MB L3 shared by 2 vCPUs).
    (0, 0) if unknown."""
    caches = _data_caches(sysfs)
    return caches[max(caches)] if caches else (0, 0)


def l2_bytes(sysfs: Path = Path("/sys/devices/system/cpu/cpu0/cache")) -> int:
    """One core's share of its level-2 data (or unified) cache from Linux sysfs, as llc_bytes reads it; 0 if
    unknown. (A Zen 3 VM: 512 KiB per core; this Zen 4 VM: 1 MiB.)"""
    return caches[2][0] if 2 in (caches := _data_caches(sysfs)) else 0


def l1_bytes(sysfs: Path = Path("/sys/devices/system/cpu/cpu0/cache")) -> int:
    """One core's level-1 data cache, whole (a timed kernel runs alone on its core), from Linux sysfs; 0 if unknown.
    (This Zen 4 VM: 32 KiB; an Emerald Rapids Xeon: 48 KiB.) LiteRT's calibration records it (`l1_bytes`)."""
    return caches[1][1] if 1 in (caches := _data_caches(sysfs)) else 0


def _data_caches(sysfs: Path) -> dict[int, tuple[int, int]]:
    """{level: (one CPU's share, the whole size)} of the data and unified caches sysfs lists for one CPU."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    out: dict[int, tuple[int, int]] = {}
    for idx in sysfs.glob("index*"):
        try:
            if (idx / "type").read_text().strip() == "Instruction":
                continue
            level = int((idx / "level").read_text())
            size = (idx / "size").read_text().strip()
            cpus = (idx / "shared_cpu_list").read_text().strip()
        except (OSError, ValueError):
            continue
        n = int(size[:-1]) * units[size[-1]] if size[-1:] in units and size[:-1].isdigit() else 0
        # "0-3,8-11": ranges and single CPUs.
        sharing = 0
        for part in filter(None, cpus.split(",")):
            first, _, last = part.partition("-")
            sharing += int(last or first) - int(first) + 1
        if n:
            out[level] = (n // max(1, sharing), n)
    return out


# Nominal peak per core and cycle by microarchitecture (fixed facts, not measured): fp32 FLOPs (FMA pipes x fp32
# lanes x 2) and int8 ops (multiply-adds x 2) of the widest path ORT's MLAS kernels use.
# - AMD Zen 2 / 3 / 4 (family 0x17 model >= 0x30, family 0x19): two 256-bit FMA pipes; Zen 4 runs a 512-bit op as
#   two 256-bit halves, so AVX-512 does not add FMA throughput: 32 FLOPs/cycle (AMD, "Software Optimization Guide
#   for the AMD Zen4 Microarchitecture", pub. 57647, "Floating-Point Unit"; 32 FLOPs/cycle for FMA-only code such
#   as GEMM: Stack Overflow answer 76195232). int8 VPDPBUSD on 256 bits (32 MACs) on the same two pipes: 128 ops.
# - Zen 5 (family 0x1A): a full 512-bit FP datapath, two 512-bit FMA pipes, 64 FLOPs/cycle and 256 int8 ops, as
#   the AVX-512 branch below counts (AMD, "Software Optimization Guide for the AMD Zen5 Microarchitecture", pub.
#   58455, "Floating-Point Unit"; the mobile parts' 256-bit datapath is not told apart here).
# - Zen 1 (family 0x17 model < 0x30): two 128-bit FMA pipes, 16 FLOPs/cycle (same guide, family 17h edition).
# - Intel with AVX-512: two 512-bit FMA ports on Xeon Scalable Gold / Platinum, 64 FLOPs/cycle; VPDPBUSD on 512
#   bits (64 MACs) on both, 256 ops (Intel 64 and IA-32 Architectures Optimization Reference Manual).
# - other x86 with AVX2 + FMA: two 256-bit FMA ports, 32 FLOPs/cycle; int8 without VNNI (VPMADDUBSW + VPMADDWD)
#   half the VNNI rate: 64 ops (estimate).
def peak_per_cycle(vendor: str, family: int, model: int, flags: frozenset[str]) -> tuple[int, int]:
    """(fp32 FLOPs, int8 ops) per core and cycle of the CPU /proc/cpuinfo describes (see the table above)."""
    vnni = "avx512_vnni" in flags or "avx_vnni" in flags
    if vendor == "AuthenticAMD" and family == 0x17 and model < 0x30:
        return 16, 32
    if vendor == "AuthenticAMD" and family in (0x17, 0x19):
        return 32, 128 if vnni else 64
    if "avx512f" in flags:
        return 64, 256 if "avx512_vnni" in flags else 128
    if "avx2" in flags and "fma" in flags:
        return 32, 128 if vnni else 64
    return 8, 16  # SSE: one 128-bit multiply and one add per cycle


def sgemm_column_block(flags: frozenset[str]) -> int:
    """The columns MLAS's fp32 SGEMM kernel computes in its last, partial block on this ISA: one vector register's
    floats, 16 where MLAS picks its AVX-512F kernel (ZMM), 8 for its AVX and FMA3 kernels (YMM: onnxruntime
    mlas/lib/x86_64/FgemmKernelFma3Common.h, ProcessCountM); 0 (not modelled) for SSE."""
    if "avx512f" in flags:
        return 16
    return 8 if "avx" in flags else 0


def f32_gemm_n_block(flags: frozenset[str] | None = None) -> int:
    """The output channels XNNPACK's fp32 GEMM / IGEMM micro-kernels compute at a time on this ISA (nr): 16 on x86
    with AVX (google/XNNPACK src/configs/gemm-config.c, init_f32_gemm_config: `7x16__avx512f_broadcast` with AVX-512F,
    `4x16s4__fma3_broadcast` on Zen FMA3, `5x16` AVX), 8 otherwise (SSE's `4x8`, Arm NEON's `4x8` / `6x8`); 0 without
    flags. LiteRT's calibration records it (`f32_n_block`). Its fp32 depthwise kernels' channel tile is the same on each
    (src/configs/dwconv-config.c: `25p16c` / `9p16c` with AVX-512F, FMA3, AVX; 8 with SSE and NEON), which the 25-tap
    tile's price reads (simulator.litert_paths.DW_TILE25)."""
    if flags is None:
        flags = cpu_facts()["flags"]
    return 16 if "avx" in flags else 8 if flags else 0


def f32_vector_floats(flags: frozenset[str] | None = None) -> int:
    """fp32 lanes of the vectors XNNPACK's fp32 depthwise kernels load each pixel's channels in on this ISA: 16 with
    AVX-512F (google/XNNPACK src/f32-dwconv/unipass-avx512.c.in: 64-byte `_mm512_loadu_ps`, a masked one for the
    remainder), 8 with AVX (two 32-byte loads per tile of 16), 4 otherwise (SSE, NEON); 0 without flags. Where a
    pixel's channels are not a whole number of vectors, the loads straddle cache lines at some pixels (an AVX-512 Xeon,
    2026-12-07: 5x5 depthwise convs of 24 channels 1.27x the time of 32; simulator.litert_paths.DW_TILE25). LiteRT's
    calibration records it (`f32_vector_floats`)."""
    if flags is None:
        flags = cpu_facts()["flags"]
    return 16 if "avx512f" in flags else 8 if "avx" in flags else 4 if flags else 0


def f32_igemm_n_block(flags: frozenset[str] | None = None) -> int:
    """The output channels XNNPACK's fp32 IGEMM kernels compute at a time from that many output channels on (below
    it, its `nr2` kernels at f32_gemm_n_block's): 32 with AVX-512F (measured on a Zen 4 with LiteRT 2.3: 3x3 convs of
    40-112 outputs at 40/64-112/128 of the rate of 32, 64, 128; simulator.litert_paths.XNN_CONV), else f32_gemm_n_block
    (not measured)."""
    if flags is None:
        flags = cpu_facts()["flags"]
    return 32 if "avx512f" in flags else f32_gemm_n_block(flags)


def int8_gemm_blocks(flags: frozenset[str] | None = None) -> tuple[int, int]:
    """(K, N) blocks of the integer GEMM / IGEMM micro-kernels XNNPACK picks on this ISA, for QS8 and QD8 alike (the
    kernels ai-edge-litert 2.3's XNNPACK holds, named mr x nr c kr): `7x16c8__avx512vnni` / `8x16c8__avx512skx` with
    AVX-512, `3x8c8__avx2` with AVX2, `4c8` SSE; with AMX-INT8 `16x64c4__avx512amx` (XNNPACK asks the kernel for the
    tile data permission when it prepares a model: bit 18 of ARCH_GET_XCOMP_PERM, seen on a Sapphire Rapids), whose
    tile multiply takes up to 64 bytes of the reduction at a time at one cost (google/XNNPACK
    src/qs8-gemm/c4-avx512amx.c.in: a tile per 64 of K, the last one narrower), so a tap of K channels costs 64:
    ResNet-18's int8 7x7 stem (3 channels) profiled 4.49 ms against 0.36 predicted with K blocks of 8.
    `flags`: this machine's (/proc/cpuinfo) by default. LiteRT's calibration records them (litert_calibration)."""
    if flags is None:
        flags = cpu_facts()["flags"]
    if "amx_int8" in flags and "avx512f" in flags:
        return 64, 64
    if "avx512f" in flags:
        return 8, 16
    return (8, 8) if "avx2" in flags else (8, 4)


def _uarch(vendor: str, family: int, model: int) -> str:
    """The microarchitecture's name where the family/model pair says it (AMD family 19h: models 00-0Fh Zen 3
    Milan, 10-1Fh Zen 4 Genoa, AMD's "Processor Programming Reference for AMD Family 19h" editions)."""
    if vendor == "AuthenticAMD" and family == 0x19:
        return "Zen 3" if model < 0x10 else "Zen 4" if model < 0x20 else ""
    if vendor == "AuthenticAMD" and family == 0x17:
        return "Zen 2" if model >= 0x30 else "Zen 1"
    if vendor == "AuthenticAMD" and family == 0x1A and model < 0x20:
        return "Zen 5"  # models 00-1Fh: EPYC 9005 Turin (AMD, "Processor Programming Reference for Family 1Ah")
    return ""


def cpu_facts(cpuinfo: Path = Path("/proc/cpuinfo"), cpus: Path = Path("/sys/devices/system/cpu")) -> dict[str, Any]:
    """This machine's CPU as Linux describes it: vendor, model name, family and model, ISA flags, the nominal clock
    (cpufreq's base frequency, else /proc/cpuinfo's "cpu MHz": the TSC rate in a VM), the CPU count and the
    caches (sysfs, as llc_bytes reads them). Empty fields where a file is missing."""
    first: dict[str, str] = {}
    n_cpus = 0
    try:
        for line in cpuinfo.read_text().splitlines():
            key, _, value = line.partition(":")
            key = key.strip()
            if key == "processor":
                n_cpus += 1
            if n_cpus <= 1 and key and key not in first:
                first[key] = value.strip()
    except OSError:
        pass

    def num(key: str, base: int = 10) -> int:
        try:
            return int(first.get(key, ""), base)
        except ValueError:
            return 0

    mhz = 0.0
    try:
        mhz = int((cpus / "cpu0" / "cpufreq" / "base_frequency").read_text()) / 1000
    except (OSError, ValueError):
        try:
            mhz = float(first.get("cpu MHz", "0"))
        except ValueError:
            pass
    caches = _data_caches(cpus / "cpu0" / "cache")
    return {"vendor": first.get("vendor_id", ""), "model_name": first.get("model name", ""),
            "family": num("cpu family"), "model": num("model"), "flags": frozenset(first.get("flags", "").split()),
            "mhz": mhz, "cpus": n_cpus, "caches": caches}


def _isa(flags: frozenset[str]) -> str:
    if "avx512f" in flags:
        extra = [name for flag, name in (("avx512_vnni", "VNNI"), ("avx512_bf16", "BF16")) if flag in flags]
        return "AVX-512" + (f" ({', '.join(extra)})" if extra else "")
    if "avx2" in flags:
        return "AVX2" + (" + FMA" if "fma" in flags else "") + (" + AVX-VNNI" if "avx_vnni" in flags else "")
    return "SSE" if "sse2" in flags else ""


def _mib(n: int) -> str:
    return f"{n / (1 << 20):g} MiB" if n >= 1 << 20 else f"{n // 1024} KiB"


def machine_overrides(facts: dict[str, Any] | None = None) -> dict[str, Any]:
    """The host profile's fixed facts for this machine (overrides for HardwareProfile.with_overrides): its
    description, the nominal fp32 / int8 peaks (clock x the per-cycle table above; fp16 and int4 run as fp32 on
    ORT's x86 CPU EP), one core's L2 as its own on-chip memory, the last-level cache and MLAS's SGEMM column block. Only what the machine
    tells: a fact it does not give keeps host-cpu.yaml's value."""
    f = cpu_facts() if facts is None else facts
    caches: dict[int, tuple[int, int]] = f["caches"]
    cpu: dict[str, Any] = {}
    if f["mhz"] > 0 and f["flags"]:
        fp32, int8 = peak_per_cycle(f["vendor"], f["family"], f["model"], f["flags"])
        hz = f["mhz"] * 1e6
        cpu["peak_ops_per_s"] = {"fp32": fp32 * hz, "fp16": fp32 * hz, "int4": fp32 * hz, "int8": int8 * hz}
    if 2 in caches:
        cpu["onchip_memory_bytes"] = float(caches[2][0])
    if f["flags"]:
        cpu["sgemm_column_block"] = float(sgemm_column_block(f["flags"]))
    if caches:
        cpu["llc_share_bytes"], cpu["llc_bytes"] = (float(x) for x in caches[max(caches)])
    over: dict[str, Any] = {"units": {"cpu": cpu}} if cpu else {}
    if f["model_name"]:
        uarch = _uarch(f["vendor"], f["family"], f["model"])
        parts = [f"family {f['family']} model {f['model']}" + (f", {uarch}" if uarch else "")]
        if "hypervisor" in f["flags"]:
            parts.append("virtual machine")
        if f["mhz"]:
            parts.append(f"{f['mhz'] / 1000:.2f} GHz")
        desc = f"{f['model_name']} ({', '.join(parts)}), 1 of {f['cpus'] or '?'} CPUs used, {_isa(f['flags'])}"
        if 2 in caches:
            desc += f", L2 {_mib(caches[2][0])} per core"
        if caches and max(caches) > 2:
            share, whole = caches[max(caches)]
            desc += f", L{max(caches)} {_mib(whole)} shared by {max(1, whole // max(share, 1))} CPUs"
        over["description"] = desc
    return over
