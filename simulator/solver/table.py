"""The option table in the solver's arrays: independent of the state and the budget, so a server builds it once
per stored analysis and target and answers every solve from it."""

from __future__ import annotations

import gc
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from compiler.vocabulary.formats import FLOAT_FORMATS

METRIC_KEYS = ("latency_ms", "weight_bytes", "activation_bytes", "dram_bytes")  # an op's own row, in this order


def is_float_combo(combo: str) -> bool:
    """Activations and kernel in a float format and no pruning: what 'keep this op float' allows."""
    inp, out, kernel, sp = combo.split("/")
    return inp in FLOAT_FORMATS and out in FLOAT_FORMATS and (kernel == "-" or kernel in FLOAT_FORMATS) and sp == "0"


@dataclass(slots=True)
class ComboClass:
    """Ops sharing one combo list and units (one sweep group): their arrays stacked, signatures found once."""
    combos: list[str]
    fin: list[str]
    fout: list[str]
    unit: list[str]
    flt: np.ndarray  # [K] bool: float combo
    groups: list[tuple[bool, np.ndarray]]  # (float, indices) per (in, out, unit, float) signature
    members: list[int]
    m: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 4)))  # [members, K, 4]
    # Edges see a choice's (input format, unit) on in-edges and (output format, unit) on out-edges only:
    # each signature's index into the distinct pairs of either kind.
    in_pairs: list[tuple[str, str]] = field(default_factory=list)
    out_pairs: list[tuple[str, str]] = field(default_factory=list)
    g_in: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    g_out: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    # Per combo, as plain Python values for the search's scalar paths: (in, out, unit, overridden) and non-float.
    attrs: list[tuple[str, str, str, bool]] = field(default_factory=list)
    non_float: list[bool] = field(default_factory=list)


@dataclass(slots=True)
class OpRows:
    cls: ComboClass
    pos: int  # row in cls.m

    @property
    def combos(self) -> list[str]:
        return self.cls.combos

    @property
    def m(self) -> np.ndarray:
        return self.cls.m[self.pos]


@dataclass(slots=True)
class SolverTable:
    """The option table in the solver's arrays; independent of state and budget (servers cache it)."""
    bulk: Mapping[str, Any]
    per_op: Any
    rows: list[OpRows]
    classes: list[ComboClass]
    ins: list[list[int]]  # edge indices into each op
    outs: list[list[int]]
    src: list[int]
    dst: list[int]
    el: list[float]


@contextmanager
def gc_paused() -> Iterator[None]:
    """The search allocates millions of small tuples and no reference cycles: the collector's passes over a
    server's heap (every cached table) would cost a solve 10-15% for nothing. Reference counting still frees them."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _combo_class(combos: list[str], unit: list[str]) -> ComboClass:
    parts = [x.split("/") for x in combos]
    fin, fout = [x[0] for x in parts], [x[1] for x in parts]
    flt = np.array([is_float_combo(x) for x in combos], dtype=bool)
    sig: dict[tuple[str, str, str, bool], list[int]] = {}
    for k in range(len(combos)):
        sig.setdefault((fin[k], fout[k], unit[k], bool(flt[k])), []).append(k)
    c = ComboClass(list(combos), fin, fout, unit, flt, [(f[3], np.array(ix)) for f, ix in sig.items()], [])
    c.attrs = [(fin[k], fout[k], unit[k], True) for k in range(len(combos))]
    c.non_float = [not bool(x) for x in flt]
    sigs = list(sig)
    c.in_pairs = sorted({(f[0], f[2]) for f in sigs})
    c.out_pairs = sorted({(f[1], f[2]) for f in sigs})
    c.g_in = np.array([c.in_pairs.index((f[0], f[2])) for f in sigs], dtype=np.int64)
    c.g_out = np.array([c.out_pairs.index((f[1], f[2])) for f in sigs], dtype=np.int64)
    return c


def prepare(bulk: Mapping[str, Any], per_op: Sequence[Mapping[str, Any]] | Mapping[str, Mapping[str, Any]]
            ) -> SolverTable:
    ops: list[str] = bulk["ops"]
    names = bulk["unit_names"]
    classes: dict[tuple[tuple[str, ...], tuple[int, ...]], ComboClass] = {}
    stacks: dict[int, list[np.ndarray]] = {}
    if hasattr(per_op, "classes") and hasattr(per_op, "cells"):
        # simulator.sweep.PerOpTable: the shared part once per signature group and each op's metric rows as
        # arrays (the same float64 values), instead of building every op's dict of Python lists
        shared, of = per_op.classes()
        keys = [(tuple(sh["combos"]), tuple(sh["unit"])) for sh in shared]
        for i in range(len(ops)):
            key = keys[of[i]]
            c = classes.get(key)
            if c is None:
                c = classes[key] = _combo_class(list(key[0]), [names[u] for u in key[1]])
                stacks[id(c)] = []
            c.members.append(i)
            stacks[id(c)].append(np.array(per_op.cells(i)[0], dtype=np.float64).T)
    else:
        for i, op in enumerate(ops):
            e = per_op[op] if isinstance(per_op, Mapping) else per_op[i]
            combos = e["combos"]
            units = tuple(e["unit"]) if "unit" in e else (0,) * len(combos)
            key = (tuple(combos), units)
            c = classes.get(key)
            if c is None:
                c = classes[key] = _combo_class(combos, [names[u] for u in units])
                stacks[id(c)] = []
            c.members.append(i)
            stacks[id(c)].append(np.array([e[k] for k in METRIC_KEYS], dtype=np.float64).T)
    for c in classes.values():
        c.m = np.stack(stacks[id(c)])
    return assemble(bulk, per_op, list(classes.values()))


def combo_class(combos: list[str], unit: list[str], members: list[int], m: np.ndarray) -> ComboClass:
    """A class of ops from its combo list, each combo's unit name, its ops and their rows [members, K, 4]."""
    c = _combo_class(combos, unit)
    c.members, c.m = members, m
    return c


def assemble(bulk: Mapping[str, Any], per_op: Any, classes: list[ComboClass]) -> SolverTable:
    """The table from its classes (each op's rows) and the bulk table's edges."""
    ops: list[str] = bulk["ops"]
    rows: list[OpRows | None] = [None] * len(ops)
    for c in classes:
        for pos, i in enumerate(c.members):
            rows[i] = OpRows(c, pos)
    e = bulk["edges"]
    ins: list[list[int]] = [[] for _ in ops]
    outs: list[list[int]] = [[] for _ in ops]
    for j, (s, d) in enumerate(zip(e["src"], e["dst"])):
        outs[s].append(j)
        ins[d].append(j)
    return SolverTable(bulk, per_op, rows, classes, ins, outs, list(e["src"]),  # type: ignore[arg-type]
                       list(e["dst"]), list(e["elements"]))
