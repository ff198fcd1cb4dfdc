"""Per-node choices from a model-wide option plus per-op overrides (shared by the exporters)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from compiler.vocabulary.options import Combo, OptionError, parse_combo, parse_preset


@dataclass(frozen=True, slots=True)
class Choice:
    combo: Combo
    dynamic: bool  # float activations + int8 kernel means on-the-fly activation quantization (ORT)


def resolve_option(option: str, float_format: str, has_kernel: bool) -> Choice:
    """A preset name (`int8-static`, `prune-50+int8-static`) or a combo (`int8/int8/int8/50`)."""
    if "/" in option:
        parts = option.split("/")
        # A task's combo applies to every source node it implements: a fused Relu takes the Conv's
        # activation formats without its kernel, and a weighted node given "-" keeps float weights.
        if len(parts) == 4 and not has_kernel and parts[2] != "-":
            option = f"{parts[0]}/{parts[1]}/-/0"
        elif len(parts) == 4 and has_kernel and parts[2] == "-":
            option = f"{parts[0]}/{parts[1]}/{float_format if parts[0] != 'int8' else float_format}/0"
        c = parse_combo(option, has_kernel)
        return Choice(c, dynamic=c.kernel == "int8" and c.input != "int8")
    p = parse_preset(option)
    return Choice(p.resolve(float_format, has_kernel), p.dynamic)


def node_choices(nodes: Iterable[tuple[str, bool]], model_wide: str, overrides: Mapping[str, str],
                 float_format: str) -> dict[str, Choice]:
    """{node name: Choice} for nodes given as (name, has_kernel); overrides keyed by node name."""
    nodes = list(nodes)
    names = {n for n, _ in nodes}
    unknown = [k for k in overrides if k not in names]
    if unknown:
        raise OptionError(f"--op names {unknown[0]!r}, which is not a node of this model "
                          f"(use a node name or task id from `edgescope predict --json`)")
    out = {}
    for name, has_k in nodes:
        out[name] = resolve_option(overrides.get(name, model_wide), float_format, has_k)
    return out
