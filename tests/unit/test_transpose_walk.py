"""Transposes ORT walks element by element (kind `walk`, its own calibrated rate) against the blocked ones."""

from __future__ import annotations

import pytest

from simulator.costs import kind_of
from simulator.profiles import load_profile
from tests.simulator.helpers import host_fp32_ms, transpose_graph


# (shape, perm, walked): each timed as a single-op model on this host (ORT 1.32, CPU time per element walked 2.2-2.6 ns,
# blocked 0.10-0.22 ns): size-1 axes are not dropped, axes that stay side by side merge.
PERMS = [
    ([1, 196, 1, 4, 32], [2, 0, 3, 4, 1], True),  # XCiT's q/k/v: 2.25 ns
    ([1, 196, 1, 4, 32], [0, 2, 3, 4, 1], False),  # one axis moved inwards after merging: 0.15
    ([1, 196, 4, 32], [0, 2, 3, 1], False),
    ([1, 196, 1, 128], [0, 3, 2, 1], True),  # the same data movement as [2, 3, 0, 1], which merges to a 2-D transpose
    ([1, 196, 1, 128], [2, 3, 0, 1], False),
    ([4, 8, 16, 32], [1, 0, 3, 2], True),
    ([8, 32, 64], [2, 1, 0], True),
    ([1, 196, 3, 4, 32], [2, 0, 3, 1, 4], False),  # innermost axis in place: blocks copied
    ([8, 16, 32, 4], [0, 3, 1, 2], False),
    ([8, 16, 32, 4], [1, 3, 0, 2], True),
    ([196, 128], [1, 0], False),
]


@pytest.mark.parametrize(("shape", "perm", "walked"), PERMS)
def test_which_transposes_ort_walks(shape: list[int], perm: list[int], walked: bool) -> None:
    g = transpose_graph(shape, perm)
    assert kind_of(g.nodes[0], g) == ("walk" if walked else "layout")


def test_a_walked_transpose_takes_its_own_rate_and_falls_back_to_layouts() -> None:
    base = load_profile("host-cpu")
    lay = base.with_overrides({"units": {"cpu": {"efficiency": {"layout.fp32": 0.2}}}})
    own = base.with_overrides({"units": {"cpu": {"efficiency": {"layout.fp32": 0.2, "walk.fp32": 0.02}}}})
    walked = transpose_graph([16, 196, 1, 4, 32], [2, 0, 3, 4, 1])
    blocked = transpose_graph([16, 196, 1, 4, 32], [0, 2, 3, 4, 1])
    # Uncalibrated, a walked transpose costs as any other layout task; with its figure (10x slower per element moved;
    # the bytes it reads and writes are the same), several times slower.
    assert host_fp32_ms(walked, lay) == pytest.approx(host_fp32_ms(blocked, lay))
    assert host_fp32_ms(blocked, own) == pytest.approx(host_fp32_ms(blocked, lay))
    assert host_fp32_ms(walked, own) > 3 * host_fp32_ms(walked, lay)
