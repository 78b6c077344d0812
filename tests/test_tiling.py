"""The tiling formulas of spec/tiling.md against every number the spec states,
the band model against hand counts, and property tests against a direct
row-by-row computation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tigris_ir.plan.graph import BAND_AXIS, GraphBuilder, NodeInfo, PlanGraph, TensorInfo
from tigris_ir.plan.memory import ALIGN, align, format_bytes, parse_budget, tensor_bytes
from tigris_ir.plan.tiling import (
    COORDINATE_MODES,
    IDENT_MAP,
    RATIO,
    RESAMPLE,
    RESIZE_COORDINATES,
    RESIZE_MODE,
    RESIZE_NEAREST,
    TRANSPOSED,
    TileChoice,
    Window,
    band_bytes,
    band_kind,
    build_band,
    choose_tile_h,
    even_tile_h,
    halo,
    input_rows,
    largest_fitting,
    map_range,
    map_rows,
    node_band,
    num_tiles,
    output_size,
    overhead_bytes,
    receptive_field,
    resample_map,
    tile_bounds,
    union_length,
    window_input_range,
)
from tigris_ir.plan.tiling_class import TilingClass
from tigris_ir.reference import kernels

# ---------------------------------------------------------------------------
# graph helpers
# ---------------------------------------------------------------------------

Spec = tuple[str, int, int, int]  # (kind, kernel, stride, dilation)


def conv_chain(
    specs: list[Spec], h: int = 16, w: int = 12, c: int = 4, eb: int = 1, pad: str = "same"
) -> PlanGraph:
    """A chain of convs ("conv"), depthwise convs ("dw"), max pools ("pool")
    and relus ("relu") over an (1, h, w, c) input."""
    b = GraphBuilder(elem_bytes=eb)
    x = b.input("x", (1, h, w, c))
    for kind, k, s, d in specs:
        if kind == "conv":
            x = b.conv(x, c, k, s, d, pad)
        elif kind == "dw":
            x = b.dwconv(x, k, s, d, pad)
        elif kind == "pool":
            x = b.pool(x, k, s, pad=0)
        else:
            x = b.relu(x)
    b.output(x)
    return b.build()


def needed_rows(graph: PlanGraph, lo: int, hi: int, contiguous: bool = True) -> dict[str, set[int]]:
    """Row by row: which rows of every tensor output rows [lo, hi) of the last
    node need, walking each op's window back through the chain. A band is one
    contiguous span, so by default an op computes every row between the first
    and last its readers need (dilated windows can skip rows in between)."""
    last = graph.nodes[-1].outputs[0]
    need: dict[str, set[int]] = {last: set(range(lo, min(hi, graph.tensors[last].height)))}
    for node in reversed(graph.nodes):
        out = need.get(node.outputs[0], set())
        if contiguous and out:
            out = set(range(min(out), max(out) + 1))
        x = node.inputs[0]
        size = graph.tensors[x].height
        rows = need.setdefault(x, set())
        if node.tiling is TilingClass.HALO:
            k, s, d, pb, _ = node.window(0)
            for r in out:
                rows.update(r * s - pb + j * d for j in range(k) if 0 <= r * s - pb + j * d < size)
        else:
            rows.update(out)
    return need


# ---------------------------------------------------------------------------
# memory
# ---------------------------------------------------------------------------


def test_alignment_rounds_up_to_16_bytes():
    assert ALIGN == 16
    assert [align(n) for n in (0, 1, 15, 16, 17, 33)] == [0, 16, 16, 16, 32, 48]
    assert tensor_bytes((1, 96, 96, 64), 1) == 589824  # the spec's 576 KiB map
    assert format_bytes(tensor_bytes((1, 96, 96, 64), 1)) == "576 KiB"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("256K", 262144),
        ("1M", 1048576),
        ("262144", 262144),
        ("256k", 262144),
        ("256KiB", 262144),
        ("1MiB", 1048576),
        ("1mib", 1048576),
        (" 64 K ", 65536),
        (4096, 4096),
    ],
)
def test_parse_budget(text: str | int, value: int):
    assert parse_budget(text) == value


@pytest.mark.parametrize("text", ["0", "0K", "-1K", "-5", "abc", "", "1.5K", "12Q", "K"])
def test_parse_budget_rejects(text: str):
    with pytest.raises(ValueError, match="budget"):
        parse_budget(text)


def test_format_bytes():
    assert format_bytes(512) == "512 B"
    assert format_bytes(38400) == "37.5 KiB"
    assert format_bytes(262144) == "256 KiB"
    assert format_bytes(1 << 20) == "1 MiB"
    assert format_bytes(1541000) == "1.47 MiB"


# ---------------------------------------------------------------------------
# the spec's formulas
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ops", "rf", "h"),
    [
        ([(3, 1, 1)], 3, 2),  # 3x3 Conv
        ([(5, 1, 1)], 5, 4),  # 5x5 Conv
        ([(3, 2, 1)], 3, 2),  # 3x3 Conv, stride 2
        ([(3, 1, 1), (3, 1, 1)], 5, 4),  # 3x3 DWConv + 3x3 Conv
        ([(3, 1, 2)], 5, 4),  # 3x3 dilated Conv (d=2)
    ],
)
def test_receptive_field_table(ops: list[tuple[int, int, int]], rf: int, h: int):
    assert receptive_field(ops) == rf
    assert halo(ops) == h
    assert receptive_field([Window(*op) for op in ops]) == rf


def test_receptive_field_accumulates_strides():
    # the stride of an earlier op scales every later kernel
    assert receptive_field([(3, 2, 1), (3, 1, 1)]) == 1 + 2 + 2 * 2
    assert receptive_field([(3, 1, 1), (3, 2, 1)]) == 1 + 2 + 2


@pytest.mark.parametrize(
    ("out", "k", "s", "d", "rows"),
    [
        (4, 3, 1, 1, 6),
        (4, 3, 2, 1, 9),
        (4, 1, 2, 1, 8),
        (4, 3, 1, 2, 8),
        (1, 5, 1, 1, 5),
        (7, 2, 2, 1, 14),
    ],
)
def test_input_rows_is_the_back_propagation_formula(out: int, k: int, s: int, d: int, rows: int):
    assert input_rows(out, k, s, d) == rows
    assert rows == out * s + max((k - 1) * d + 1 - s, 0)


@given(
    out=st.integers(1, 40),
    k=st.integers(1, 7),
    s=st.integers(1, 3),
    d=st.integers(1, 3),
    start=st.integers(0, 50),
)
def test_input_rows_bounds_the_rows_a_band_reads(out: int, k: int, s: int, d: int, start: int):
    lo, hi = window_input_range(start, start + out, Window(k, s, d, 1, 1))
    assert hi - lo <= input_rows(out, k, s, d)
    if (k - 1) * d + 1 >= s:  # the formula is exact when windows overlap or touch
        assert hi - lo == input_rows(out, k, s, d)


def test_even_tile_height_spec_example():
    # H = 100 with tile_h 30: 4 tiles, evened out to 4 tiles of 25
    assert num_tiles(100, 30) == 4
    assert even_tile_h(100, 30) == 25
    assert tile_bounds(100, 25) == ((0, 25), (25, 50), (50, 75), (75, 100))


def test_choose_tile_h_searches_then_evens_out():
    choice = choose_tile_h(100, lambda r: 1000 * r, 30000)
    assert choice == TileChoice(tile_h=25, num_tiles=4, peak=25000)
    assert choose_tile_h(100, lambda r: 1000 * r, 999) is None
    assert choose_tile_h(100, lambda r: 1000 * r, 10**6) == TileChoice(100, 1, 100000)


def test_largest_fitting_is_a_binary_search():
    calls: list[int] = []

    def cost(r: int) -> int:
        calls.append(r)
        return 7 * r

    assert largest_fitting(cost, 1000, 700) == 100
    assert len(calls) <= 12
    assert largest_fitting(lambda r: r, 10, 0) == 0
    assert largest_fitting(lambda r: r, 20, 13, granule=4) == 12


def test_overhead_bytes():
    assert overhead_bytes(2, 100, 4) == 600
    assert overhead_bytes(4, 96 * 64, 3) == 4 * 96 * 64 * 2
    assert overhead_bytes(2, 100, 1) == 0


@given(h=st.integers(1, 300), t=st.integers(1, 300))
def test_tiles_cover_the_output_exactly(h: int, t: int):
    bounds = tile_bounds(h, t)
    assert bounds[0][0] == 0 and bounds[-1][1] == h
    assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:]))
    assert len(bounds) == num_tiles(h, t)
    even = even_tile_h(h, min(t, h))
    assert num_tiles(h, even) == num_tiles(h, min(t, h))
    assert h - (num_tiles(h, even) - 1) * even > 0  # no empty last tile


def test_window_input_range_clips_to_the_image():
    w = Window(3, 2, 1, 1, 1)
    assert window_input_range(0, 4, w) == (-1, 8)
    assert window_input_range(0, 4, w, size=9) == (0, 8)
    assert window_input_range(3, 5, w, size=9) == (5, 9)
    assert output_size(9, w) == 5
    # a dilated window at the top border reads rows 0 and 2 of output row 0
    assert window_input_range(0, 1, Window(3, 1, 2, 2, 2), size=10) == (0, 3)


# ---------------------------------------------------------------------------
# the band model
# ---------------------------------------------------------------------------


def test_band_bytes_of_one_conv_by_hand():
    g = conv_chain([("conv", 3, 1, 1)], h=16, w=16, c=4)
    # output 4 rows x 16 x 4 = 256 B; input 6 rows x 16 x 4 = 384 B
    assert band_bytes(g, 0, 1, 4) == 256 + 384
    model = build_band(g, 0, 1)
    assert model.kind == "strips"
    assert model.rows(4) == [4, 6]
    assert model.rows(100) == [16, 16]  # capped at the height


def test_band_bytes_align_every_buffer_with_its_own_element_size():
    b = GraphBuilder(elem_bytes=1)
    x = b.input("x", (1, 10, 3, 1))
    y = b.conv(x, 1, 3)  # int8
    z = b.node("nn.dequantize", TilingClass.POINTWISE, [y], [(1, 10, 3, 1)], elem_bytes=4)
    b.output(z[0])
    g = b.build()
    model = build_band(g, 0, 2)
    # rows: z 1 (12 B float32 -> 16), y 1 (3 B -> 16), x 3 (9 B -> 16)
    assert model.band_bytes(1) == 16 + 16 + 16
    # 2 rows: z 24 -> 32, y 6 -> 16, x 12 -> 16
    assert model.band_bytes(2) == 32 + 16 + 16


def test_back_propagation_through_a_chain():
    g = conv_chain(
        [("conv", 3, 1, 1), ("dw", 3, 2, 1), ("relu", 1, 1, 1), ("conv", 1, 1, 1)], h=32, w=8
    )
    model = build_band(g, 0, 4)
    rows = dict(zip(model.names, model.rows(4)))
    out = g.nodes[3].outputs[0]
    assert rows[out] == 4
    assert rows[g.nodes[2].outputs[0]] == 4  # relu, then the 1x1 conv: no halo
    assert rows[g.nodes[1].outputs[0]] == 4
    assert rows[g.nodes[0].outputs[0]] == input_rows(4, 3, 2) == 9
    assert rows["x"] == input_rows(9, 3, 1) == 11
    assert model.halo() == halo([(3, 1, 1), (3, 2, 1)]) == 4


def test_band_rule_rejects_a_branch_off_a_strided_conv_input():
    b = GraphBuilder()
    x = b.input("x", (1, 16, 16, 4))
    y = b.conv(x, 4, 3, 2)  # 8 rows
    z = b.relu(x)  # 16 rows of x: a branch off the strided conv's input
    b.output(y, z)
    g = b.build()
    with pytest.raises(ValueError, match="rows the band does not hold|heights"):
        build_band(g, 0, 2)
    # each op alone reads its band
    assert build_band(g, 0, 1).kind == "strips"
    assert build_band(g, 1, 2).kind == "strips"


def test_band_rule_rejects_two_rates_inside_a_stage():
    b = GraphBuilder()
    x = b.input("x", (1, 16, 16, 4))
    y = b.conv(x, 4, 3, 2)  # reads x at 2 rows per band row
    u = b.pool(x, 2, 2)  # reads x at 2 rows too: fine
    v = b.add(y, u)
    b.output(v)
    assert build_band(b.build(), 0, 3).kind == "strips"
    b2 = GraphBuilder()
    x = b2.input("x", (1, 16, 16, 4))
    y = b2.conv(x, 4, 3, 2)
    y2 = b2.conv(y, 4, 3, 1)
    s = b2.relu(x)  # reads x at 1 row per row of s, but s feeds no output of y2's height
    del s
    b2.output(y2)
    g2 = b2.build()
    with pytest.raises(ValueError):
        build_band(g2, 0, 3)


def test_band_kinds_follow_the_table():
    H, P, W, R = (
        TilingClass.HALO,
        TilingClass.POINTWISE,
        TilingClass.WHOLE_ROWS,
        TilingClass.RESIZE,
    )
    assert band_kind([H, P, W]) == "strips"
    assert band_kind([P]) == "strips"
    assert band_kind([W, P]) == "whole_rows"
    assert band_kind([R, P]) == "resize"
    assert band_kind([R, H]) is None  # no resize inside a halo band
    assert band_kind([TilingClass.EXPANDED, P]) == "expanded"
    assert band_kind([TilingClass.EXPANDED, W]) is None
    assert band_kind([TilingClass.ACCUMULATE, P]) == "accumulate"
    assert band_kind([TilingClass.MATRIX_ROWS, P, W]) == "rows"
    assert band_kind([TilingClass.RESHAPE]) == "reshape"
    assert band_kind([TilingClass.INDEPENDENT_AXIS, P]) == "axis"
    assert band_kind([TilingClass.WHOLE]) is None
    assert band_kind([H, TilingClass.MATRIX_ROWS]) is None


def test_row_maps_of_the_other_band_kinds():
    # resize 2x: output rows [4, 8) come from source rows [2, 4), widened by one
    m = (RATIO, 8, 16, 0, 0)
    assert map_range(m, 4, 8, 8) == (1, 5)
    assert map_rows(m, 4, 8) >= 5 - 1
    # ConvTranspose k=2 s=2: output rows [4, 8) come from input rows [2, 4)
    t = (TRANSPOSED, 2, 2, 1, 0)
    assert map_range(t, 4, 8, 8) == (2, 4)
    assert map_range(t, 3, 7, 8) == (1, 4)  # a band off the stride grid reads 3 rows
    assert map_rows(t, 4, 8) == 3  # the largest over band positions
    # k=3 s=2 p=1: output row o reads inputs i with o = 2 i - 1 + j
    t3 = (TRANSPOSED, 3, 2, 1, 1)
    lo, hi = map_range(t3, 3, 6, 100)
    direct = {i for o in range(3, 6) for i in range(100) for j in range(3) if o == 2 * i - 1 + j}
    assert (lo, hi) == (min(direct), max(direct) + 1)
    assert map_rows(t3, 3, 100) >= hi - lo
    assert map_range(IDENT_MAP, 3, 9, 20) == (3, 9)


RESIZE_MODES = [("linear", "round_prefer_floor")] + [
    ("nearest", nm) for nm in ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
]


def kernel_reads(n_in: int, n_out: int, mode: str, ctm: str, nearest: str) -> np.ndarray:
    """reads[o, i]: output row o of `kernels.resize` reads input row i. Input
    channel i is NaN on row i only; NaN survives a zero weight, so a linear
    tap of weight zero shows too."""
    x = np.zeros((1, n_in, n_in), np.float32)
    x[0, np.arange(n_in), np.arange(n_in)] = np.nan
    y = kernels.resize(
        x,
        out_spatial=(n_out,),
        mode=mode,
        coordinate_transformation_mode=ctm,
        nearest_mode=nearest,
    )
    return np.isnan(y[0])


@settings(max_examples=150, deadline=None)
@given(
    n_in=st.integers(1, 40),
    n_out=st.integers(1, 40),
    ctm=st.sampled_from(COORDINATE_MODES),
    modes=st.sampled_from(RESIZE_MODES),
    data=st.data(),
)
def test_exact_resize_map_is_what_the_kernel_reads(
    n_in: int,
    n_out: int,
    ctm: str,
    modes: tuple[str, str],
    data: st.DataObject,
):
    mode, nearest = modes
    m = resample_map(n_in, n_out, mode, ctm, nearest)
    assert m is not None and m[0] == RESAMPLE
    reads = kernel_reads(n_in, n_out, mode, ctm, nearest)
    ratio = (RATIO, n_in, n_out, 0, 0)
    lo = data.draw(st.integers(0, n_out - 1))
    hi = data.draw(st.integers(lo + 1, n_out))
    rows = np.flatnonzero(reads[lo:hi].any(axis=0))
    # the hull of the rows the kernel reads, no more
    assert map_range(m, lo, hi, n_in) == (rows.min(), rows.max() + 1)
    a, b = map_range(m, lo, hi, n_in)
    ra, rb = map_range(ratio, lo, hi, n_in)
    assert ra <= a and b <= rb  # never larger than the conservative map
    # map_rows is the most any band of that many rows reads, over positions
    r = hi - lo
    most = 0
    for start in range(n_out - r + 1):
        got = np.flatnonzero(reads[start : start + r].any(axis=0))
        most = max(most, int(got.max() - got.min() + 1))
    assert map_rows(m, r, n_in) == most
    assert map_rows(m, r, n_in) <= map_rows(ratio, r, n_in)


def test_unchanged_size_resize_reads_its_own_rows():
    m = resample_map(9, 9, "linear", "half_pixel", "round_prefer_floor")
    assert m is not None
    assert map_range(m, 2, 5, 9) == (2, 5)
    assert map_rows(m, 4, 9) == 4
    assert resample_map(4, 8, "cubic", "half_pixel", "floor") is None


def test_resize_row_map_follows_the_node_attrs():
    """Resize attrs (as nn_graph records them) give the exact map; without
    them (GraphBuilder) the map stays the conservative RATIO."""
    b = GraphBuilder()
    x = b.input("x", (1, 16, 16, 8))
    y = b.resize(x, 2)
    attrs = {RESIZE_MODE: "nearest", RESIZE_COORDINATES: "asymmetric", RESIZE_NEAREST: "floor"}
    (z,) = b.node("nn.resize", TilingClass.RESIZE, [x], [(1, 32, 32, 8)], attrs=attrs)
    b.output(y, z)
    g = b.build()
    conservative = node_band(g, 0).ins[0][1]
    exact = node_band(g, 1).ins[0][1]
    assert conservative == (RATIO, 16, 32, 0, 0)
    assert exact[0] == RESAMPLE
    assert map_range(exact, 4, 8, 16) == (2, 4)  # floor(o / 2)
    assert map_rows(exact, 1, 16) == 1 < map_rows(conservative, 1, 16)
    one = build_band(g, 1, 2)
    assert one.band_bytes(1) == align(32 * 8) + align(16 * 8)  # one source row


def test_independent_axis_band():
    b = GraphBuilder()
    x = b.input("x", (1, 8, 64, 16))
    (y,) = b.node(
        "nn.reduce_mean", TilingClass.INDEPENDENT_AXIS, [x], [(1, 8, 1, 16)], attrs={BAND_AXIS: 1}
    )
    b.output(y)
    model = build_band(b.build(), 0, 1)
    assert model.kind == "axis"
    assert model.rows(2) == [2, 2]
    assert model.band_bytes(2) == align(2 * 16) + align(2 * 64 * 16)


def test_reshape_band_has_a_granule():
    b = GraphBuilder()
    x = b.input("x", (1, 6, 4, 8))
    y = b.reshape(x, (1, 24, 8))  # 4 output rows per input row
    b.output(y)
    model = build_band(b.build(), 0, 1)
    assert model.kind == "reshape"
    assert model.granule == 4
    assert model.ranges(4, 12) == [(4, 12), (1, 3)]


def test_stats_bound_the_exact_ranges():
    g = conv_chain([("conv", 5, 1, 1), ("dw", 3, 2, 2), ("conv", 3, 1, 1)], h=29, w=9)
    model = build_band(g, 0, 3)
    for tile in (1, 2, 3, 5, 8):
        est = model.stats(tile)
        assert est is not None
        exact = model.tile_ranges(tile)
        for t in range(len(model.names)):
            seq = [r[t] for r in exact]
            assert est[t][0] >= sum(y - x for x, y in seq)
            assert est[t][1] >= max(y - x for x, y in seq)


# ---------------------------------------------------------------------------
# property tests over random conv chains
# ---------------------------------------------------------------------------

layer = st.tuples(
    st.sampled_from(["conv", "dw", "pool", "relu"]),
    st.integers(1, 7),
    st.integers(1, 2),
    st.integers(1, 3),
)


def _fits(specs: list[Spec], *dims: int) -> bool:
    """The chain's spatial sizes stay >= 1 (a pool is unpadded)."""
    for h in dims:
        for kind, k, s, _ in specs:
            if kind == "pool":
                if h < k:
                    return False
                h = (h - k) // s + 1
            elif kind != "relu":
                h = -(-h // s)
    return True


@settings(max_examples=60, deadline=None)
@given(
    specs=st.lists(layer, min_size=1, max_size=5),
    h=st.integers(4, 40),
    tile=st.integers(1, 12),
)
def test_back_propagation_matches_a_row_by_row_walk(specs: list[Spec], h: int, tile: int):
    if not _fits(specs, h, 8):
        return
    g = conv_chain(specs, h=h, w=8, c=2)
    model = build_band(g, 0, len(g.nodes))
    tile = min(tile, model.height)
    rows = model.rows(tile)
    seen_out: list[int] = []
    for lo, hi in tile_bounds(model.height, tile):
        seen_out.extend(range(lo, hi))
        got = dict(zip(model.names, model.ranges(lo, hi)))
        need = needed_rows(g, lo, hi)
        sparse = needed_rows(g, lo, hi, contiguous=False)
        for name, rset in need.items():
            x, y = got[name]
            if rset:
                assert (x, y) == (min(rset), max(rset) + 1), name
            assert all(x <= r < y for r in sparse[name])
            assert y - x <= rows[model.names.index(name)]  # the formula bounds the band
    assert seen_out == list(range(model.height))  # no gap, no overlap


@settings(max_examples=60, deadline=None)
@given(
    specs=st.lists(layer, min_size=1, max_size=4),
    h=st.integers(4, 40),
    budget=st.integers(64, 6000),
)
def test_tile_height_search_keeps_the_band_under_budget(specs: list[Spec], h: int, budget: int):
    if not _fits(specs, h, 8):
        return
    g = conv_chain(specs, h=h, w=8, c=3)
    model = build_band(g, 0, len(g.nodes))
    choice = choose_tile_h(model.height, model.band_bytes, budget)
    if choice is None:
        assert model.band_bytes(1) > budget
        return
    assert choice.peak == model.band_bytes(choice.tile_h) <= budget
    assert choice.num_tiles == num_tiles(model.height, choice.tile_h)
    fewer = choice.num_tiles - 1
    if fewer >= 1:  # one tile fewer would not fit
        assert model.band_bytes(-(-model.height // fewer)) > budget


def test_union_length():
    assert union_length([(0, 4), (2, 6), (8, 9)]) == 7
    assert union_length([]) == 0


def test_graph_validation():
    t = {
        "x": TensorInfo("x", (1, 4, 4, 1), 1, "input"),
        "y": TensorInfo("y", (1, 4, 4, 1), 1, "activation"),
    }
    relu = NodeInfo("r", "nn.relu", TilingClass.POINTWISE, ("y",), ("x",))
    with pytest.raises(ValueError):
        PlanGraph(t, (relu,), ("x",), ("x",))
    with pytest.raises(ValueError):
        TensorInfo("z", (1, 0), 1, "activation")
    with pytest.raises(ValueError):
        NodeInfo("c", "nn.conv", TilingClass.HALO, ("x",), ("y",))
    ok = PlanGraph(
        t, (NodeInfo("r", "nn.relu", TilingClass.POINTWISE, ("x",), ("y",)),), ("x",), ("y",)
    )
    assert ok.producer("y") == 0 and ok.consumers("x") == (0,)
    assert ok.last_use("y") == 1 and ok.last_use("x") == 0
    assert math.prod(ok.tensors["x"].shape) == 16
