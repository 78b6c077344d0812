"""The network's GEBP on its own (`backend.c.gebp`): the kernel the benchmark and
the autotuner time is the row driver the network prints, built with its flags.

Results against float64 (float32, relative 1e-5) and against the integer product
requantized in numpy (int8, bit for bit), on geometries with column tails,
row tails and K blocks.
"""

from __future__ import annotations

import numpy as np
import pytest

from tigris_ir.backend.c import gebp
from tigris_ir.backend.c.build import REQUIRED_FLAGS
from tigris_ir.rtile import autotune
from tigris_ir.rtile import model as rt
from tigris_ir.rtile.model import Geometry as G
from tigris_ir.rtile.targets import can_run, get_target, host_target

F32_CASES = [
    (13, 19, 9, G(4, 2, 8)),
    (7, 40, 700, G(3, 1, 8)),  # several K blocks
    (64, 24, 144, G(4, 3, 8)),
    (5, 16, 33, G(2, 1, 16)),
    (9, 3, 5, G(4, 1, 4)),  # one partial vector
]


def _runs(g: G) -> bool:
    return host_target().unit(g.lanes) is not None


@pytest.mark.parametrize(("m", "n", "k", "g"), F32_CASES, ids=str)
def test_float32_equals_float64(m: int, n: int, k: int, g: G):
    if not _runs(g):
        pytest.skip(f"{rt.show(g)} needs a wider vector unit than this CPU's")
    p = gebp.Problem(m, n, k)
    kernel = gebp.build(g, p)
    a, b, bias, _ = autotune.operands(p, seed=m)
    call, y = autotune.call_of(kernel, a, b, bias, None)
    call()
    ref = a.astype(np.float64) @ b + bias
    assert float(np.abs(y - ref).max()) <= 1e-5 * max(1.0, float(np.abs(ref).max()))


@pytest.mark.parametrize("name", ["avx2", "avx512-vnni"])
@pytest.mark.parametrize(
    ("m", "n", "k"), [(13, 21, 9), (70, 40, 33), (4, 8, 1), (9, 50, 130), (66, 16, 4)]
)
def test_int8_is_bit_exact(m: int, n: int, k: int, name: str):
    """int16 pairs (pmaddwd) and u8 x s8 groups of four with the offset
    corrected in the bias (vpdpbusd), k of every remainder, column tails."""
    reason = can_run(get_target(name))
    if reason:
        pytest.skip(reason)
    target = get_target(name).int8_file()
    g = rt.default(target, m, n)
    assert g is not None
    p = gebp.Problem(m, n, k, "int8")
    kernel = gebp.build(g, p, target)
    assert kernel.plan.dot == get_target(name).int8_dot
    a, b, bias, mult = autotune.operands(p, seed=k)
    assert mult is not None
    call, y = autotune.call_of(kernel, a, b, bias, mult)
    call()
    acc = a.astype(np.int32) @ b.astype(np.int32) + bias
    want = np.clip(np.rint(acc.astype(np.float32) * mult), -128, 127).astype(np.int8)
    np.testing.assert_array_equal(y, want)


def test_the_kernel_is_built_with_the_network_flags():
    assert gebp.compile_flags()[: len(REQUIRED_FLAGS)] == REQUIRED_FLAGS
    assert "-ffp-contract=off" in gebp.compile_flags()


def test_the_geometry_is_the_code():
    """Two geometries of one problem print different micro-kernels, each of its
    own rows x vectors and lane width."""
    p = gebp.Problem(64, 24, 144)
    t = host_target()
    wide, _, _ = gebp.source(gebp.kernel_op(G(4, 1, 16), p, t), p, t)
    narrow, _, _ = gebp.source(gebp.kernel_op(G(4, 3, 8), p, t), p, t)
    assert "tg_fmk16_4x1_16" in wide and "tg_fmk8_4x3_8" not in wide
    assert "tg_fmk8_4x3_8" in narrow and "tg_v8 c0_0, c0_1, c0_2" in narrow
