"""Generated GEBP kernels, compiled with gcc and run against numpy.

Every part of a cover is exercised: full passes, a column tail with a partial
last vector, a row band, both at once, sites narrower than one pass, several K
blocks, B read in place, bias and accumulation; float32 to 1e-5 relative to
sum |a||b|, int8 exactly. Compiled objects are cached per process by source.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from tigris_ir.backend.c import gebp as gc
from tigris_ir.rtile import model as rt
from tigris_ir.rtile.model import Geometry as G
from tigris_ir.rtile.targets import (
    Target,
    avx2,
    avx512,
    avx512_vnni,
    can_run,
    host_target,
    neon,
    sse,
)

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")

HOST = host_target()
X86 = HOST.arch == "x86_64"


def _operands(p: gc.Problem, seed: int):
    rng = np.random.default_rng(seed)
    if p.dtype == "float32":
        a = rng.standard_normal((p.m, p.k), dtype=np.float32)
        b = rng.standard_normal((p.k, p.n), dtype=np.float32)
        bias = rng.standard_normal(p.n).astype(np.float32)
        c0 = rng.standard_normal((p.m, p.n)).astype(np.float32)
    else:
        a = rng.integers(-128, 128, (p.m, p.k), dtype=np.int8)
        b = rng.integers(-128, 128, (p.k, p.n), dtype=np.int8)
        bias = rng.integers(-(2**20), 2**20, p.n).astype(np.int32)
        c0 = rng.integers(-(2**20), 2**20, (p.m, p.n)).astype(np.int32)
    return a, b, bias, c0


def run_and_compare(
    g: G | None,
    p: gc.Problem,
    target: Target,
    *,
    mode: gc.Mode = "vector",
    blocking: gc.Blocking | None = None,
    seed: int = 0,
) -> None:
    compare(gc.build(g, p, target, mode=mode, blocking=blocking), seed)


def compare(kernel: gc.GebpKernel, seed: int = 0) -> None:
    p = kernel.problem
    a, b, bias, c0 = _operands(p, seed)
    out = c0.copy() if p.accumulate else None
    got = kernel(a, b, bias if p.bias else None, out)
    if p.dtype == "float32":
        ref = a.astype(np.float64) @ b.astype(np.float64)
        scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
        if p.bias:
            ref, scale = ref + bias, scale + np.abs(bias)
        if p.accumulate:
            ref, scale = ref + c0, scale + np.abs(c0)
        assert got.dtype == np.float32
        assert np.all(np.abs(got - ref) <= 1e-5 * scale + 1e-30)
    else:
        ref = a.astype(np.int64) @ b.astype(np.int64)
        if p.bias:
            ref = ref + bias
        if p.accumulate:
            ref = ref + c0
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got, ref)


# (m, n, k, geometry): each cover case at least once.
F32_CASES = [
    (64, 48, 32, G(4, 3, 8)),  # full passes only
    (97, 83, 61, G(4, 3, 8)),  # column tail (8, 3) and a one-row band
    (99, 20, 17, G(4, 2, 8)),  # tail (4,) partial only, three-row band
    (3, 40, 9, G(3, 3, 8)),  # fewer rows than rm_cap
    (2, 8, 5, G(2, 1, 8)),  # one vector, no tail
    (7, 13, 11, G(4, 1, 8)),  # tail (5,) and band 3
    (6, 30, 23, G(4, 2, 4)),  # a 16-byte width on a 32-byte file
    (5, 9, 4, G(2, 2, 2)),  # an 8-byte width, tail (1,)
    (1, 1000, 40, G(1, 3, 8)),  # one row: B read in place, tail (8, 8)
    (2, 21, 33, G(1, 2, 8)),  # B in place with a partial tail vector
]


@pytest.mark.skipif(not X86, reason="x86 host only")
@pytest.mark.parametrize(("m", "n", "k", "g"), F32_CASES)
def test_f32_avx2_covers(m: int, n: int, k: int, g: G):
    assert rt.check(avx2, m, n, g) is None
    run_and_compare(g, gc.Problem(m, n, k), avx2)


@pytest.mark.skipif(not X86, reason="x86 host only")
@pytest.mark.parametrize(("bias", "accumulate"), [(True, False), (False, True), (True, True)])
def test_f32_bias_and_accumulate(bias: bool, accumulate: bool):
    p = gc.Problem(37, 29, 45, bias=bias, accumulate=accumulate)
    run_and_compare(G(4, 3, 8), p, avx2, seed=3)


@pytest.mark.skipif(not X86, reason="x86 host only")
@pytest.mark.parametrize("pack_b", [True, False])
def test_f32_several_k_blocks(pack_b: bool):
    # kc = 16 splits K = 61 into four blocks, the last partial; mc = 8 rows.
    p = gc.Problem(23, 35, 61, bias=True)
    run_and_compare(G(4, 2, 8), p, avx2, blocking=gc.Blocking(16, 8, pack_b))


@pytest.mark.skipif(not X86, reason="x86 host only")
def test_f32_default_geometry_and_blocking():
    run_and_compare(None, gc.Problem(130, 100, 140), avx2, seed=5)


@pytest.mark.skipif(not X86, reason="x86 host only")
def test_f32_sse_geometry():
    run_and_compare(rt.default(sse, 10, 18), gc.Problem(10, 18, 7), sse)


INT8_CASES = [
    (64, 48, 32, G(4, 3, 8)),
    (97, 83, 61, G(4, 3, 8)),  # odd K: the last int16 pair is half padding
    (7, 13, 10, G(4, 1, 8)),
    (5, 9, 3, G(2, 2, 4)),  # 16-byte int32 vectors
    (3, 7, 7, G(3, 2, 2)),  # 8-byte int32 vectors, tail (2, 1)
]


@pytest.mark.skipif(not X86, reason="x86 host only")
@pytest.mark.parametrize(("m", "n", "k", "g"), INT8_CASES)
def test_int8_widening_exact(m: int, n: int, k: int, g: G):
    run_and_compare(g, gc.Problem(m, n, k, "int8"), avx2)


@pytest.mark.skipif(not X86, reason="x86 host only")
def test_int8_bias_accumulate_and_k_blocks():
    p = gc.Problem(21, 19, 70, "int8", bias=True, accumulate=True)
    run_and_compare(G(4, 2, 8), p, avx2, blocking=gc.Blocking(16, 8, True))


# ---------------------------------------------------------------- AVX-512

AVX512_CASES = [
    (gc.Problem(97, 83, 61), G(4, 3, 16)),
    (gc.Problem(20, 100, 33, bias=True), G(4, 6, 16)),
    (gc.Problem(9, 24, 19, accumulate=True), G(4, 1, 16)),
    (gc.Problem(6, 40, 8), G(4, 4, 8)),  # the 32-byte rung of the ladder
    (gc.Problem(33, 50, 29, "int8"), G(4, 3, 16)),
]


@pytest.mark.skipif(not X86, reason="x86 host only")
@pytest.mark.parametrize("target", [avx512, avx512_vnni], ids=["avx512", "vnni"])
@pytest.mark.parametrize(("p", "g"), AVX512_CASES)
def test_avx512_kernels(target: Target, p: gc.Problem, g: G):
    # gcc compiles AVX-512 code on any x86 host; running it needs the ISA.
    source = gc.render(g, p, target)
    gc.compile_shared(source, target)
    why = can_run(target)
    if why is not None:
        pytest.skip(f"compiled only: {why} (host target {HOST.name}, isa {HOST.isa})")
    run_and_compare(g, p, target)


@pytest.mark.skipif(not X86, reason="x86 host only")
@pytest.mark.parametrize(("p", "g"), [c for c in AVX512_CASES if c[0].dtype == "float32"])
def test_avx512_float32_logic_on_generic_vectors(p: gc.Problem, g: G):
    # The float32 rendering is ISA-neutral: compiled for this CPU alone, gcc
    # lowers the 64-byte vectors to what it has, so the 16-lane covers (tails,
    # partial vectors, bands) run here even without AVX-512.
    source = gc.render(g, p, avx512)
    compare(gc.GebpKernel(gc.load_shared(source, None), "gebp", p, source))


@pytest.mark.skipif(not X86, reason="x86 host only")
def test_vnni_source_uses_dot_products_and_offset():
    source = gc.render(G(4, 3, 16), gc.Problem(32, 48, 64, "int8"), avx512_vnni)
    assert "_mm512_dpbusd_epi32" in source
    assert "128" in source  # the u8 offset and its column-sum correction
    plain = gc.render(G(4, 3, 16), gc.Problem(32, 48, 64, "int8"), avx512)
    assert "_mm512_madd_epi16" in plain and "dpbusd" not in plain


# ---------------------------------------------------------------- portable


@pytest.mark.parametrize(
    "p",
    [
        gc.Problem(13, 11, 7),
        gc.Problem(5, 9, 6, bias=True, accumulate=True),
        gc.Problem(9, 7, 13, "int8", bias=True),
    ],
)
def test_portable_loops(p: gc.Problem):
    run_and_compare(None, p, HOST, mode="portable")
    source = gc.render(None, p, HOST, mode="portable")
    assert "KEEP" not in source and "vector_size" not in source


# ---------------------------------------------------------------- source shape


def test_source_has_named_accumulators_and_b_barriers():
    source = gc.render(G(4, 3, 8), gc.Problem(97, 83, 61), avx2)
    assert "c3_2" in source and "vf c[" not in source
    assert "KEEP(b0)" in source and '"+v"' in source
    # Tail and band tiles, no scalar peel: every tile is a vector tile.
    for name in ("tile_4x3_8", "tile_4x2_3", "tile_1x3_8", "tile_1x2_3"):
        assert f"void {name}(" in source


def test_neon_renders_float32_with_its_barrier():
    source = gc.render(rt.default(neon, 16, 32), gc.Problem(16, 32, 8), neon)
    assert '"+w"' in source and "vector_size(16)" in source
    with pytest.raises(NotImplementedError, match="portable"):
        gc.render(G(4, 2, 4), gc.Problem(16, 32, 8, "int8"), neon)


def test_declined_geometry_names_the_rule():
    with pytest.raises(ValueError, match="register-budget"):
        gc.render(G(4, 4, 8), gc.Problem(64, 64, 8), avx2)
    with pytest.raises(ValueError, match="rows-fit"):
        gc.render(G(4, 2, 8), gc.Problem(3, 64, 8), avx2)
    with pytest.raises(ValueError, match="portable"):
        gc.render(None, gc.Problem(4, 7, 8), avx2)


def test_problem_validation():
    with pytest.raises(ValueError, match="positive"):
        gc.Problem(0, 4, 4)
    with pytest.raises(ValueError, match="dtype"):
        gc.Problem(4, 4, 4, "float16")  # type: ignore[arg-type]


@pytest.mark.skipif(not X86, reason="x86 host only")
def test_kernel_argument_checks():
    kernel = gc.build(G(4, 1, 8), gc.Problem(8, 8, 8, bias=True), avx2)
    a = np.zeros((8, 8), np.float32)
    with pytest.raises(ValueError, match="bias"):
        kernel(a, a)
    with pytest.raises(ValueError, match="expected"):
        kernel(a[:4], a, np.zeros(8, np.float32))
