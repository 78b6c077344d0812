"""The register-tile model against every number spec/register_tile.md states."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tigris_ir.rtile import kernel as rk
from tigris_ir.rtile import model as rt
from tigris_ir.rtile.model import Geometry as G
from tigris_ir.rtile.targets import (
    Target,
    avx2,
    avx512,
    avx512_vnni,
    cpu_model_name,
    detect_target,
    get_target,
    label,
    neon,
    sse,
    zen4,
)

PRESETS = (avx512, avx2, sse, neon)
few_regs = dataclasses.replace(sse, name="tiny", vector_registers=5)


# ---------------------------------------------------------------- geometry


def test_show_is_the_display_form():
    assert rt.show(G(4, 2, 8)) == "rm4 rn2 lanes8"
    assert str(G(1, 6, 16)) == "rm1 rn6 lanes16"


def test_columns_live_registers_resident_floor():
    g = G(4, 3, 8)
    assert rt.columns(g) == 24
    assert rt.live_registers(g) == 4 * 3 + 4 + 3 == 19
    assert rt.resident_floor(g) == 12 + 3 + 1 == 16
    assert rt.live_registers(G(4, 6, 16)) == 34
    assert rt.resident_floor(G(4, 6, 16)) == 29
    # The floor holds the smaller operand set: rows when rm < rn.
    assert rt.resident_floor(G(2, 5, 8)) == 10 + 2 + 1


# ---------------------------------------------------------------- ladders


@pytest.mark.parametrize(
    ("vector_bytes", "elt_bytes", "ladder"),
    [
        (64, 4, [16, 8]),
        (32, 4, [8]),
        (16, 4, [4]),
        (64, 8, [8, 4]),
        (32, 8, [4]),
        (16, 8, [2]),
        (64, 1, [64, 32]),
        (32, 1, [32]),
        (16, 1, [16]),
        (8, 4, [2]),
        (16, 16, []),  # one lane: dropped
        (4, 1, []),  # no rendering file is narrower than 8 bytes
    ],
)
def test_simd_lane_ladder(vector_bytes: int, elt_bytes: int, ladder: list[int]):
    assert rt.simd_lane_ladder(vector_bytes, elt_bytes) == ladder


@pytest.mark.parametrize(
    ("vector_bytes", "elt_bytes", "lanes"),
    [
        (64, 4, [16, 8, 4, 2]),
        (32, 4, [8, 4, 2]),
        (16, 4, [4, 2]),
        (64, 1, [64, 32, 16, 8]),
        (16, 8, [2]),
    ],
)
def test_renderable_lanes_include_every_narrower_file(
    vector_bytes: int, elt_bytes: int, lanes: list[int]
):
    assert rt.renderable_lanes(vector_bytes, elt_bytes) == lanes


def test_a_16_byte_geometry_renders_on_wider_files():
    for target in (avx2, avx512):
        assert rt.check(target, 8, 16, G(4, 2, 4)) is None


# ---------------------------------------------------------------- caps


def test_rn_cap_keyed_on_register_count_not_width():
    assert rt.rn_cap(avx512) == 6
    assert rt.rn_cap(neon) == 6  # 16-byte file, 32 registers
    assert rt.rn_cap(avx2) == 3
    assert rt.rn_cap(sse) == 3  # 16-byte file, 16 registers: not NEON's 6
    assert rt.rn_cap(few_regs) == 0


def test_rn_cap_is_the_largest_resident_pass():
    for target in PRESETS:
        cap = rt.rn_cap(target)
        regs = target.vector_registers
        assert rt.resident_floor(G(rt.rm_cap, cap, 1)) <= regs
        assert rt.resident_floor(G(rt.rm_cap, cap + 1, 1)) > regs


def test_budget_and_rm_cap():
    assert rt.rm_cap == 4
    assert rt.budget(avx2) == rt.budget(sse) == 19
    assert rt.budget(avx512) == rt.budget(neon) == 34
    # Both exceed the register count; the floors do not.
    assert rt.resident_floor(G(4, 3, 8)) == 16 <= avx2.vector_registers
    assert rt.resident_floor(G(4, 6, 16)) == 29 <= avx512.vector_registers


# ---------------------------------------------------------------- cover


def test_cover_with_partial_last_vector_and_row_band():
    c = rt.cover(G(4, 3, 8), 97, 83)
    assert c == rt.Cover(m_full=96, n_full=72, tail_widths=(8, 3), band_rows=1)
    assert c.n_tail == 11


def test_cover_tail_free_site():
    assert rt.cover(G(4, 3, 8), 3136, 24) == rt.Cover(3136, 24, (), 0)


def test_cover_partial_only_tail():
    assert rt.cover(G(4, 6, 16), 100, 100).tail_widths == (4,)
    assert rt.cover(G(4, 4, 16), 100, 100).tail_widths == (16, 16, 4)


# ---------------------------------------------------------------- pricing


def test_price_is_the_exact_scaled_integer():
    # ceil(n / lanes) * (rm + 1) + rm * ceil(n / (rn * lanes))
    assert rt.price(28, 4, 8, 2) == 4 * 5 + 4 * 2 == 28
    assert rt.price(28, 4, 8, 3) == 4 * 5 + 4 * 2 == 28
    assert rt.price(1000, 1, 16, 6) == 63 * 2 + 11
    assert isinstance(rt.price(97, 3, 8, 3), int)


def test_price_at_one_width_differs_only_by_passes():
    n, rm, lanes = 200, 4, 8
    cols = [rt.price(n, rm, lanes, rn) - rm * -(-n // (rn * lanes)) for rn in (1, 2, 3)]
    assert len(set(cols)) == 1


def test_default_four_rows_where_m_affords_them():
    assert rt.default(avx2, 3136, 24) == G(4, 3, 8)
    assert rt.default(avx2, 3, 24) == G(3, 3, 8)
    assert rt.default(avx2, 1, 1000) == G(1, 3, 8)


def test_default_tail_free_4x6_on_avx512():
    # The A/B sites of gh-ocannl-1285: tail-free, 4 x 6 with no tie involved.
    for n in (96, 192, 384):
        assert rt.default(avx512, 256, n) == G(4, 6, 16)


def test_tie_goes_to_tail_free_tile():
    # n = 128 at 16 lanes: rn 4, 5, 6 all take two passes; only rn 4 is tail-free.
    prices = {rn: rt.price(128, 4, 16, rn) for rn in (4, 5, 6)}
    assert len(set(prices.values())) == 1
    assert rt.default(avx512, 128, 128) == G(4, 4, 16)


def test_tie_between_tail_bearing_tiles_goes_to_smaller():
    # gh-ocannl-1180: AVX2 n = 28, 4x2 over 4x3 at equal price.
    assert rt.price(28, 4, 8, 2) == rt.price(28, 4, 8, 3)
    assert rt.default(avx2, 4, 28) == G(4, 2, 8)


def test_wider_vector_breaks_a_price_tie():
    # The key ranks price, then width: an equal price goes to the wider vector.
    wide, narrow = G(4, 1, 16), G(4, 2, 8)
    kw, kn = rt.rank_key(wide, 64), rt.rank_key(narrow, 64)
    assert kw[1:] < kn[1:]
    # And the model prefers the wider width on the AVX-512 common shapes.
    assert rt.default(avx512, 3136, 24) == G(4, 1, 16)


def test_equal_prices_are_not_decided_by_rounding():
    # gh-ocannl-947: at rm = 3 on a 16-byte file the tail-free rn 4 ties the
    # tail-bearing rn 5 and 6; integers make it a real tie, and tail-free wins.
    assert rt.price(32, 3, 4, 4) == rt.price(32, 3, 4, 5) == rt.price(32, 3, 4, 6)
    assert rt.default(neon, 3, 32) == G(3, 4, 4)


def test_default_none():
    assert rt.default(avx2, 0, 8) is None
    assert rt.default(avx2, 4, 0) is None
    assert rt.default(avx2, 4, 7) is None  # the narrowest width exceeds n
    assert rt.default(few_regs, 4, 64) is None


# ---------------------------------------------------------------- check


@pytest.mark.parametrize(
    ("target", "m", "n", "g", "rule"),
    [
        (avx2, 8, 64, G(0, 2, 8), "degenerate"),
        (avx2, 8, 64, G(4, 2, 16), "renderable-lanes"),
        (avx2, 8, 64, G(4, 2, 3), "renderable-lanes"),
        (avx2, 8, 6, G(4, 1, 8), "n-fills-lanes"),
        (few_regs, 8, 64, G(4, 1, 4), "register-file"),
        (avx2, 3, 64, G(4, 2, 8), "rows-fit"),
        (avx2, 8, 20, G(4, 3, 8), "columns-fit"),
        (avx2, 8, 64, G(4, 4, 8), "register-budget"),
        (avx512, 8, 256, G(4, 7, 16), "register-budget"),
    ],
)
def test_check_names_the_violated_rule(target: Target, m: int, n: int, g: G, rule: str):
    error = rt.check(target, m, n, g)
    assert error is not None
    assert error.startswith(rule + ":")
    assert rt.show(g) in error
    assert rule in rt.CHECK_RULES


def test_check_accepts_the_budget_edge():
    assert rt.check(avx2, 8, 64, G(4, 3, 8)) is None
    assert rt.check(avx2, 8, 64, G(2, 5, 8)) is None  # 10 + 2 + 5 = 17 <= 19
    assert rt.check(avx512, 8, 256, G(4, 6, 16)) is None


# ---------------------------------------------------------------- alternatives


def test_alternatives_common_shapes():
    assert rt.alternatives(avx2, 256, 256) == [G(4, 2, 8)]  # the tail-free tile
    assert rt.alternatives(avx2, 3136, 24) == []  # the width divides n
    assert rt.alternatives(avx512, 64, 64) == []


def test_alternatives_tied_larger_tile():
    # gh-ocannl-1180: the 4x3 side of the AVX2 n = 28 tie is timed.
    assert rt.alternatives(avx2, 4, 28) == [G(4, 3, 8)]


def test_alternatives_at_four_rows_at_most_two():
    # Tail-free 4x3 and the budget cap 4x6 (which is also the tied tile).
    assert rt.default(avx512, 4, 144) == G(4, 5, 16)
    assert rt.alternatives(avx512, 4, 144) == [G(4, 3, 16), G(4, 6, 16)]


def test_alternatives_budget_cap_with_one_vector_tail():
    # gh-ocannl-614-like: n = 80 on AVX2 at one row: tail-free rn 5, cap rn 9.
    assert rt.default(avx2, 1, 80) == G(1, 3, 8)
    assert rt.alternatives(avx2, 1, 80) == [G(1, 5, 8), G(1, 9, 8)]


def test_alternatives_three_below_four_rows():
    # Reached on a 64-register file: tail-free, budget cap and the tied tile.
    wide = dataclasses.replace(avx512, name="x64", vector_registers=64)
    dflt = rt.default(wide, 2, 400)
    alts = rt.alternatives(wide, 2, 400)
    assert dflt == G(2, 13, 16)
    assert alts == [G(2, 5, 16), G(2, 24, 16), G(2, 14, 16)]


def test_alternatives_counts_over_preset_sites():
    for target in PRESETS:
        for m in range(1, 7):
            for n in range(1, 200):
                alts = rt.alternatives(target, m, n)
                assert len(alts) <= (2 if min(m, 4) == 4 else 3)


# ---------------------------------------------------------------- rm_twin


def test_rm_twin_only_under_its_key():
    on = rt.TileConfig(autotune_register_tile_rm_twin=True)
    assert rt.rm_twin(avx2, 256, 256) is None
    assert rt.rm_twin(avx2, 256, 256, on) == G(2, 5, 8)  # 10 + 2 + 5 = 17 <= 19
    assert rt.rm_twin(avx512, 256, 256, on) == G(2, 10, 16)
    assert rt.rm_twin(avx512, 256, 24, on) == G(2, 1, 16)  # capped by n / lanes
    assert rt.rm_twin(avx2, 3, 256, on) is None  # the default has fewer rows


def test_seeds_default_first_no_repeats():
    on = rt.TileConfig(autotune_register_tile_rm_twin=True)
    s = rt.seeds(avx2, 256, 256, on)
    assert s == [G(4, 3, 8), G(4, 2, 8), G(2, 5, 8)]
    assert rt.seeds(avx2, 256, 256) == [G(4, 3, 8), G(4, 2, 8)]


# ---------------------------------------------------------------- properties

targets = st.sampled_from(PRESETS)
extents = st.integers(min_value=1, max_value=600)


@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, 4),
    st.integers(1, 8),
    st.sampled_from([2, 4, 8, 16]),
    extents,
    extents,
)
def test_cover_partitions_the_site(rm: int, rn: int, lanes: int, m: int, n: int):
    g = G(rm, rn, lanes)
    c = rt.cover(g, m, n)
    assert c.m_full % rm == 0 and c.n_full % rt.columns(g) == 0
    assert 0 <= c.band_rows < rm and c.m_full + c.band_rows == m
    assert c.n_full + c.n_tail == n
    assert all(0 < w <= lanes for w in c.tail_widths)
    assert all(w == lanes for w in c.tail_widths[:-1])
    assert len(c.tail_widths) <= rn
    # Full passes, column tail and row band cover every element once.
    area = c.m_full * c.n_full + c.m_full * c.n_tail + c.band_rows * n
    assert area == m * n


@settings(max_examples=300, deadline=None)
@given(targets, extents, extents)
def test_default_passes_check(target: Target, m: int, n: int):
    g = rt.default(target, m, n)
    if g is None:
        assert n < min(rt.simd_lane_ladder(target.vector_bytes, target.elt_bytes))
    else:
        assert rt.check(target, m, n, g) is None
        assert g.rm == min(rt.rm_cap, m) and g.rn <= rt.rn_cap(target)
        assert g.lanes in rt.simd_lane_ladder(target.vector_bytes, target.elt_bytes)


@settings(max_examples=300, deadline=None)
@given(targets, extents, extents)
def test_default_is_the_cheapest_price(target: Target, m: int, n: int):
    g = rt.default(target, m, n)
    if g is None:
        return
    for rn in range(1, rt.rn_cap(target) + 1):
        for lanes in rt.simd_lane_ladder(target.vector_bytes, target.elt_bytes):
            if rn * lanes <= n:
                assert rt.price(n, g.rm, g.lanes, g.rn) <= rt.price(n, g.rm, lanes, rn)


@settings(max_examples=300, deadline=None)
@given(targets, extents, extents)
def test_alternatives_exclude_default_and_pass_check(target: Target, m: int, n: int):
    dflt = rt.default(target, m, n)
    alts = rt.alternatives(target, m, n)
    assert dflt not in alts
    assert len(set(alts)) == len(alts)
    for g in alts:
        assert rt.check(target, m, n, g) is None
        assert dflt is not None and g.rm == dflt.rm
    twin = rt.rm_twin(target, m, n, rt.TileConfig(autotune_register_tile_rm_twin=True))
    if twin is not None:
        assert twin != dflt and twin not in alts
        assert rt.check(target, m, n, twin) is None


@settings(max_examples=200, deadline=None)
@given(targets, extents, extents, st.integers(1, 8), st.integers(1, 12))
def test_check_agrees_with_its_rules(target: Target, m: int, n: int, rm: int, rn: int):
    for lanes in rt.renderable_lanes(target.vector_bytes, target.elt_bytes):
        g = G(rm, rn, lanes)
        ok = (
            lanes <= n and rm <= m and rn * lanes <= n and rt.live_registers(g) <= rt.budget(target)
        )
        assert (rt.check(target, m, n, g) is None) == ok


# ---------------------------------------------------------------- targets


def test_target_presets():
    assert (avx512.vector_bytes, avx512.vector_registers) == (64, 32)
    assert (avx2.vector_bytes, avx2.vector_registers) == (32, 16)
    assert (sse.vector_bytes, sse.vector_registers) == (16, 16)
    assert (neon.vector_bytes, neon.vector_registers) == (16, 32)
    assert get_target("avx2") is avx2
    assert get_target("host").name == "host"


def test_unknown_target_lists_the_known_names():
    known = "avx512, avx512-vnni, zen4, avx2, sse, neon, cortex-m4, cortex-m7, cortex-m55, host"
    with pytest.raises(ValueError, match=known):
        get_target("avx1024")


@pytest.mark.parametrize(
    ("flags", "machine", "isa", "vnni"),
    [
        ("fpu sse sse2 avx avx2 fma avx512f avx512bw avx512_vnni", "x86_64", "avx512", True),
        ("fpu sse sse2 avx avx2 fma avx512f avx512bw", "x86_64", "avx512", False),
        ("fpu sse sse2 avx avx2 fma", "x86_64", "avx2", False),
        ("fpu sse sse2", "x86_64", "sse", False),
        ("", "aarch64", "neon", False),
    ],
)
def test_detect_target_from_cpuinfo(flags: str, machine: str, isa: str, vnni: bool):
    t = detect_target(f"processor\t: 0\nflags\t\t: {flags}\n", machine)
    assert (t.name, t.isa, t.vnni) == ("host", isa, vnni)
    assert rt.rn_cap(t) == (6 if t.vector_registers == 32 else 3)


def _cpuinfo(vendor: str, family: int, flags: str) -> str:
    return (
        f"processor\t: 0\nvendor_id\t: {vendor}\ncpu family\t: {family}\n"
        f"model name\t: a CPU\nflags\t\t: {flags}\n"
    )


_AVX512_VNNI = "fpu sse sse2 avx avx2 fma avx512f avx512bw avx512vl avx512_vnni"


@pytest.mark.parametrize(
    ("vendor", "family", "flags", "preset"),
    [
        ("AuthenticAMD", 25, _AVX512_VNNI, "zen4"),  # Zen 4: family 19h with AVX-512
        ("AuthenticAMD", 25, "fpu sse sse2 avx avx2 fma", "avx2"),  # Zen 3: the same family
        ("AuthenticAMD", 26, _AVX512_VNNI, "avx512-vnni"),  # Zen 5: full-width FMA
        ("GenuineIntel", 6, _AVX512_VNNI, "avx512-vnni"),
    ],
)
def test_zen4_is_detected_by_vendor_and_family(vendor: str, family: int, flags: str, preset: str):
    t = detect_target(_cpuinfo(vendor, family, flags), "x86_64")
    assert t.name == "host"
    assert label(t) == preset


def test_zen4_fits_float_tiles_to_its_fma_width_and_int8_to_its_registers():
    """Zen 4 executes a 512-bit FMA as two 256-bit halves: its float32 tiles are
    fitted to a 32-byte file of its 32 registers, the spec's model unchanged
    there (the avx512 presets keep the 64-byte file); VNNI keeps zmm."""
    f = zen4.float_file()
    assert (f.vector_bytes, f.vector_registers) == (32, 32)
    assert avx512.float_file() is avx512 and avx512_vnni.float_file() is avx512_vnni
    assert rt.rn_cap(f) == 6 and rt.budget(f) == rt.budget(avx512)
    # 3136x24 (MobileNetV2's 1x1 conv): the 16-lane default has a half-empty
    # column tail; the 32-byte file's default covers it with three 8-lane vectors
    assert rt.default(avx512, 3136, 24) == rt.Geometry(4, 1, 16)
    assert rt.default(f, 3136, 24) == rt.Geometry(4, 3, 8)
    assert rt.default(f, 256, 256) == rt.Geometry(4, 6, 8)
    i = zen4.int8_file()
    assert (i.vector_bytes, zen4.int8_dot) == (64, "vpdpbusd")


def test_the_cpu_model_name_is_read_from_cpuinfo():
    text = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\nflags\t: fpu\n"
    assert cpu_model_name(text) == "AMD EPYC 7B13"
    assert cpu_model_name("processor\t: 0\nflags\t: fpu\n") == ""


@pytest.mark.parametrize(
    ("name", "dot", "lanes"),
    [("avx512-vnni", "vpdpbusd", 16), ("avx512", "pmaddwd", 8), ("avx2", "pmaddwd", 8),
     ("sse", "none", 4), ("cortex-m7", "smlad", 2), ("cortex-m55", "vmladava", 2)],
)
def test_the_int8_instruction_is_the_targets(name: str, dot: str, lanes: int):
    """VNNI targets multiply int8 in u8 x s8 groups of four into zmm int32
    lanes; the kernel plan packs k to that group, one byte per step."""
    t = get_target(name)
    assert t.int8_dot == dot
    file = t.int8_file()
    g = rt.default(file, 64, 64)
    assert g is not None and g.lanes == lanes
    p = rk.plan(t, g, 27, True, "rows")
    assert p.dot == dot and p.kp == -(-27 // rk.dot_group(dot)) * rk.dot_group(dot)
    assert p.scratch == p.mc * p.kp * rk.PACKED_BYTES[dot]
