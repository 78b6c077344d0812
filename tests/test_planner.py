"""The planner: stage formation, strategies, chains and the plan's figures."""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tigris_ir.plan import planner
from tigris_ir.plan.graph import BAND_AXIS, GraphBuilder, PlanGraph
from tigris_ir.plan.memory import align
from tigris_ir.plan.planner import (
    _INF,
    ChainPlan,
    Plan,
    StagePlan,
    TileRows,
    _Ctx,
    _form,
    chain_members,
    chain_rules_hold,
    find_chains,
    form_stages,
    min_band_bytes,
    min_budget,
    normal_peak,
    plan,
    tile_band,
)
from tigris_ir.plan.scratch import scratch_bytes
from tigris_ir.plan.tiling import (
    ACC_DTYPE,
    GraphTables,
    build_band,
    in_place_source,
    input_rows,
    num_tiles,
    overhead_bytes,
    paced_floor,
    tile_bounds,
)
from tigris_ir.plan.tiling_class import TilingClass

# ---------------------------------------------------------------------------
# graph helpers
# ---------------------------------------------------------------------------


def chain_graph(
    specs: list[tuple[str, int, int]], h: int = 32, w: int = 16, c: int = 8, eb: int = 1
) -> PlanGraph:
    """conv / dw / pool / relu layers (kind, kernel, stride) over (1, h, w, c)."""
    b = GraphBuilder(elem_bytes=eb)
    x = b.input("x", (1, h, w, c))
    for kind, k, s in specs:
        if kind == "conv":
            x = b.conv(x, c, k, s)
        elif kind == "dw":
            x = b.dwconv(x, k, s)
        elif kind == "pool":
            x = b.pool(x, k, s)
        else:
            x = b.relu(x)
    b.output(x)
    return b.build()


def block(b: GraphBuilder, x: str, expand: int, stride: int = 1) -> str:
    """A MobileNetV2 inverted residual block (residual Add when it can)."""
    cin = b.shape(x)[-1]
    y = b.relu(b.conv(x, cin * expand, 1))
    y = b.relu(b.dwconv(y, 3, stride))
    y = b.conv(y, cin, 1)
    return b.add(x, y) if stride == 1 else y


def mobilenet_like(eb: int = 1, res: int = 96, extra: bool = False) -> PlanGraph:
    """A MobileNetV2-shaped network; `extra` adds a second pointwise op after
    every activation (about 150 nodes at res 224)."""
    b = GraphBuilder(elem_bytes=eb)
    x = b.input("x", (1, res, res, 3))
    x = b.relu(b.conv(x, 32, 3, 2))
    cin = 32
    table = [
        (1, 16, 1, 1),
        (6, 24, 2, 2),
        (6, 32, 3, 2),
        (6, 64, 4, 2),
        (6, 96, 3, 1),
        (6, 160, 3, 2),
        (6, 320, 1, 1),
    ]
    for t, c, n, s in table:
        for i in range(n):
            stride = s if i == 0 else 1
            y = x
            if t != 1:
                y = b.relu(b.conv(y, cin * t, 1))
                y = b.pointwise("nn.clip", y) if extra else y
            y = b.relu(b.dwconv(y, 3, stride))
            y = b.pointwise("nn.clip", y) if extra else y
            y = b.conv(y, c, 1)
            if stride == 1 and cin == c:
                y = b.add(x, y)
            x, cin = y, c
    x = b.relu(b.conv(x, 1280, 1))
    x = b.gemm(b.flatten(b.global_avg_pool(x)), 1000)
    b.output(x)
    return b.build()


def singletons(graph: PlanGraph) -> tuple[tuple[int, int], ...]:
    return tuple((k, k + 1) for k in range(len(graph.nodes)))


def check_plan(graph: PlanGraph, p: Plan) -> None:
    """Invariants of every plan: budget, partition, tiles covering the output."""
    assert [s.start for s in p.stages] == [0] + [s.stop for s in p.stages[:-1]]
    assert p.stages[-1].stop == len(graph.nodes)
    if not p.fits:
        return
    assert p.peak <= p.budget
    for s in p.stages:
        assert s.peak <= p.budget
    units = [s for s in p.stages if s.tiled and s.chain is None] + list(p.chains)
    for u in units:
        tiles = u.tiles
        if not tiles:
            continue  # sub-row bands of an accumulation
        rows = sorted({t.out for t in tiles})
        assert rows[0][0] == 0
        assert all(a[1] == b[0] for a, b in zip(rows, rows[1:]))
        line_buffered = getattr(u, "line_buffered", False)
        for t in tiles:
            for name, (lo, hi) in t.rows.items():
                info = g_tensor = graph.tensors[name]
                assert 0 <= lo <= hi <= g_tensor.height
                if not line_buffered:  # the band holds every tile's range
                    assert hi - lo <= u.band_rows[name], (name, info)
        if line_buffered:  # line buffers: new rows and history only, one per owner
            held: dict[str, int] = {}
            for x, r in u.band_rows.items():
                owner = u.shared.get(x, x)
                held[owner] = max(held.get(owner, 0), r)
            size = {x: align(r * graph.tensors[x].row_bytes) for x, r in held.items()}
            for x, cols in getattr(u, "band_cols", {}).items():  # column bands: their columns
                if x in size:
                    info = graph.tensors[x]
                    size[x] = align(held[x] * info.row_bytes // info.width * cols)
            for x in u.blocked:  # a pixel run's scratch: one block's columns of a row
                w = graph.tensors[x].width
                size[x] = align(held[x] * graph.tensors[x].row_bytes // w * min(u.pixel_block, w))
            # scratch buffers (no row kept between tiles) share one workspace by
            # lifetime; inputs read where they are resident hold no buffer
            scratch, off = u.scratch, u.scratch_offsets
            own = sum(b for x, b in size.items() if x not in scratch and x not in u.in_place)
            assert u.peak == own + u.scratch_bytes
            steps = {a for a, _ in scratch.values()}
            live = [sum(size[x] for x, (a, b) in scratch.items() if a <= k <= b) for k in steps]
            assert u.scratch_bytes == max(live, default=0)
            for x, (a, b) in scratch.items():
                assert 0 <= off[x] and off[x] + size[x] <= u.scratch_bytes
                for y, (c, d) in scratch.items():
                    if x < y and a <= d and c <= b:  # live at once: disjoint bytes
                        assert off[x] + size[x] <= off[y] or off[y] + size[y] <= off[x]
            # a tile's rows are the new rows it computes; a paced run's steps
            # record only those, and its buffers add the history its readers'
            # windows keep (an unpaced tile's range already spans the window)
            paced = getattr(u, "pace", 0)
            for name, r in u.band_rows.items():
                extra = u.history_rows.get(name, 0) if paced else 0
                assert r <= max(t.rows[name][1] - t.rows[name][0] for t in tiles) + extra
    for c in p.chains:
        assert [p.stages[s].chain for s in c.stages] == [c.index] * len(c.stages)
        assert list(c.stages) == list(range(c.stages[0], c.stages[-1] + 1))


# ---------------------------------------------------------------------------
# normal stages
# ---------------------------------------------------------------------------


def test_normal_peak_frees_at_last_use_and_keeps_outputs():
    b = GraphBuilder()
    x = b.input("x", (1, 4, 4, 4))  # 64 B
    a = b.relu(x)
    c = b.relu(a)
    d = b.add(a, c)
    b.output(d)
    g = b.build()
    # op0: x + a; x freed; op1: a + c; op2: a + c + d
    assert normal_peak(g, 0, 3) == 192
    b = GraphBuilder()
    x = b.input("x", (1, 4, 4, 4))
    a = b.relu(x)
    c = b.relu(a)
    d = b.relu(c)
    b.output(a, d)  # a leaves the stage: it stays until the stage ends
    g = b.build()
    assert normal_peak(g, 0, 3) == 192
    assert normal_peak(g, 1, 3) == 128  # a is an input here: freed after its last use


def test_single_stage_runs_in_place():
    g = chain_graph([("conv", 3, 1), ("relu", 1, 1)], h=8, w=8, c=4)
    p = plan(g, 1 << 20)
    assert p.fits and p.in_place
    assert [s.strategy for s in p.stages] == ["inplace"]
    assert p.slow_reads == p.slow_writes == p.slow_peak == 0
    assert p.peak == normal_peak(g, 0, 2) == 2 * 256  # x is freed after the conv


# ---------------------------------------------------------------------------
# tiled stages
# ---------------------------------------------------------------------------


def test_strips_stage_figures():
    g = chain_graph([("conv", 3, 1)], h=40, w=1, c=128)  # rows of 128 B, no width to cut
    p = plan(g, 2000)
    check_plan(g, p)
    (s,) = p.stages
    assert s.strategy == "strips" and s.halo == 2
    model = build_band(g, 0, 1)
    # band_bytes(rows) = 128 rows + 128 (rows + 2) = 256 rows + 256 <= 2000: 6 rows,
    # 7 tiles, evened out to ceil(40 / 7) = 6
    assert (s.tile_h, s.num_tiles) == (6, 7)
    assert s.peak == model.band_bytes(6) == 1792
    assert s.band_rows["x"] == input_rows(6, 3) == 8 and s.band_rows[g.nodes[0].name] == 6
    reads = sum(t.rows["x"][1] - t.rows["x"][0] for t in s.tiles) * 128
    assert p.slow_reads == s.slow_reads == reads
    assert reads == 40 * 128 + overhead_bytes(2, 128, 7)  # the halo is re-read
    assert s.recomputed_macs == 0


def test_grid_when_no_strip_fits():
    g = chain_graph([("conv", 3, 1)], h=20, w=200, c=16)  # one output row is 3200 B
    model = build_band(g, 0, 1)
    budget = 4000
    assert model.band_bytes(1) > budget
    p = plan(g, budget)
    check_plan(g, p)
    (s,) = p.stages
    assert s.strategy == "grid"
    m = re.fullmatch(r"(\d+) tiles of (\d+) x (\d+), halo (\d+)", s.describe())
    assert m is not None
    tiles, th, tw, h = map(int, m.groups())
    assert (tiles, th, tw, h) == (s.num_tiles, s.tile_h, s.tile_w, 2)
    assert tiles == math.ceil(20 / th) * math.ceil(200 / tw)
    cells = {(t.out, t.cols) for t in s.tiles}
    assert len(cells) == tiles
    assert sum((a[1] - a[0]) * (c[1] - c[0]) for a, c in cells if c) == 20 * 200
    assert s.peak == model.grid_bytes(th, tw) <= budget


def test_grid_when_it_loads_fewer_bytes_than_strips():
    g = chain_graph([("conv", 7, 1)], h=64, w=64, c=4)
    model = build_band(g, 0, 1)
    budget = 8000
    from tigris_ir.plan.planner import _strips

    strips = _strips(model, budget)
    assert strips is not None  # a strip fits ...
    chosen = tile_band(model, budget)
    assert chosen is not None and chosen.strategy == "grid"  # ... but the grid loads less
    assert chosen.reads < strips.reads
    p = plan(g, budget)
    assert p.stages[0].strategy == "grid" and p.slow_reads == chosen.reads


def test_accumulated_global_average_pool_bands():
    b = GraphBuilder()
    x = b.input("x", (1, 16, 16, 64))
    y = b.global_avg_pool(b.relu(x))
    b.output(y)
    g = b.build()
    p = plan(g, 4096)
    check_plan(g, p)
    (s,) = p.stages
    assert s.strategy == "accumulate" and s.tile_h >= 1
    # one partial sum per channel (float64) and the output stay whole
    assert s.peak == 2 * align(s.tile_h * 16 * 64) + align(64) + align(64 * ACC_DTYPE.itemsize)
    # below one row: runs of positions, then groups of channels
    p = plan(g, 1000)
    assert p.fits and p.stages[-1].strategy == "accumulate" and p.stages[-1].tile_w < 16
    p = plan(g, 400)
    assert p.fits and p.stages[-1].channel_group
    assert "channels" in p.stages[-1].describe()
    # the smallest plan: the Relu cut into channel groups as a stage of its
    # own, then the pool's smallest band, one position of one channel, its
    # output and partial sum
    least = align(1) + align(ACC_DTYPE.itemsize) + align(1)
    assert min_budget(g) == least
    assert plan(g, least).stages[0].channel_group
    assert plan(g, least).fits and not plan(g, least - 1).fits


def run_channel_groups(x: np.ndarray, s: StagePlan) -> tuple[np.ndarray, int, int, int]:
    """Run relu + GlobalAveragePool over int8 `x` (1, H, W, C) as the module
    doc orders a channel-group record: groups outermost, then bands of
    tile_h rows, then runs of tile_w positions; only the group's partial sums
    live. Returns (the mean, bytes loaded, tiles, the most bytes held)."""
    _, h, w, c = x.shape
    g, th, tw = s.channel_group, s.tile_h, s.tile_w
    out = np.zeros(c)
    loaded = tiles = held = 0
    for c0 in range(0, c, g):
        acc = np.zeros(min(g, c - c0), np.int64)  # g partial sums
        for r0 in range(0, h, th):
            for p0 in range(0, w, tw):
                block = x[0, r0 : r0 + th, p0 : p0 + tw, c0 : c0 + g]
                loaded += block.nbytes
                tiles += 1
                relu = np.maximum(block, 0)
                acc += relu.sum(axis=(0, 1), dtype=np.int64)
                acc_bytes = align(ACC_DTYPE.itemsize * g)
                held = max(held, align(g) + acc_bytes + 2 * align(block.nbytes))
        out[c0 : c0 + g] = acc / (h * w)
    return out, loaded, tiles, held


def test_global_average_pool_in_channel_groups_below_one_position():
    """Below one position of every channel, the channels go in groups over
    bands of positions with only the group's partial sums: every input byte
    is loaded once, the peak is the group's buffers, and the record has the
    fewest tiles of every sub-row band that fits."""
    b = GraphBuilder()
    h, w, c = 6, 5, 96
    x = b.input("x", (1, h, w, c))
    y = b.global_avg_pool(b.relu(x))
    b.output(y)
    g = b.build()
    one_position = 2 * align(c) + align(c) + align(ACC_DTYPE.itemsize * c)  # every channel
    for budget in (one_position - 1, 400, 250, 100):
        p = plan(g, budget)
        check_plan(g, p)
        (s,) = p.stages
        assert p.fits and s.strategy == "accumulate" and s.channel_group
        grp, th, tw = s.channel_group, s.tile_h, s.tile_w
        assert th == 1 or tw == w  # runs within a row, or bands of whole rows
        acc = align(ACC_DTYPE.itemsize * grp)
        assert s.peak == align(grp) + acc + 2 * align(th * tw * grp) <= budget
        assert s.num_tiles == num_tiles(c, grp) * num_tiles(h, th) * num_tiles(w, tw)
        assert s.slow_reads == p.slow_reads == h * w * c and p.slow_writes == c
        assert s.band_rows == {x: th, "relu0": th} and s.band_cols == {x: tw, "relu0": tw}
        data = np.random.default_rng(budget).integers(-128, 128, (1, h, w, c), dtype=np.int8)
        mean, loaded, tiles, held = run_channel_groups(data, s)
        np.testing.assert_allclose(mean, np.maximum(data, 0).mean(axis=(0, 1, 2)))
        assert (loaded, tiles, held) == (s.slow_reads, s.num_tiles, s.peak)
        fewest = min(
            num_tiles(c, gg) * num_tiles(h, rr) * num_tiles(w, ww)
            for gg in range(1, c + 1)
            for rr in range(1, h + 1)
            for ww in ([w] if rr > 1 else range(1, w + 1))
            if align(gg) + align(ACC_DTYPE.itemsize * gg) + 2 * align(rr * ww * gg) <= budget
        )
        assert s.num_tiles == fewest
    assert "x 5 positions x" in plan(g, 400).stages[0].describe()


def test_full_unet_min_budget_with_exact_resize_rows():
    """The zoo U-Net's nearest 2x resize (64 -> 128 rows): a one-row band reads
    one source row, so the model fits one output row plus one input row; the
    conservative map (no resize attrs) needs four source rows."""
    import zoo

    from tigris_ir.frontend.onnx_import import import_model
    from tigris_ir.plan.ir import main_func
    from tigris_ir.plan.nn_graph import build_view

    g = build_view(main_func(import_model(zoo.build("unet", size="full")).module)).graph
    (k,) = [k for k, n in enumerate(g.nodes) if n.tiling is TilingClass.RESIZE]
    node = g.nodes[k]
    src, out = g.tensors[node.inputs[0]], g.tensors[node.outputs[0]]
    assert (src.height, out.height) == (64, 128) and node.attrs["mode"] == "nearest"
    assert min_budget(g) == align(out.row_bytes) + align(src.row_bytes)
    assert plan(g, min_budget(g)).fits
    bare = PlanGraph(
        g.tensors,
        tuple(replace(n, attrs={}) if i == k else n for i, n in enumerate(g.nodes)),
        g.inputs,
        g.outputs,
    )
    assert min_budget(bare) == align(out.row_bytes) + align(4 * src.row_bytes)


def test_matrix_row_bands():
    b = GraphBuilder(elem_bytes=4)
    x = b.input("x", (64, 256))
    y = b.relu(b.gemm(x, 128))
    b.output(y)
    g = b.build()
    p = plan(g, 40000)
    check_plan(g, p)
    (s,) = p.stages
    assert s.strategy == "rows" and s.halo == 0
    assert s.shared == {"relu1": "gemm0"}  # the Relu overwrites the product in place
    assert s.peak == s.tile_h * (256 + 128) * 4
    assert p.slow_reads == 64 * 256 * 4  # rows are read once; the weights live in flash


def test_resize_and_transposed_conv_bands():
    b = GraphBuilder()
    x = b.input("x", (1, 16, 16, 8))
    y = b.relu(b.resize(x, 2))
    b.output(y)
    g = b.build()
    p = plan(g, 2000)
    check_plan(g, p)
    assert p.stages[0].strategy == "resize"
    b = GraphBuilder()
    x = b.input("x", (1, 16, 16, 8))
    y = b.conv(b.relu(b.conv_transpose(x, 8, 2, 2)), 8, 3)
    b.output(y)
    g = b.build()
    p = plan(g, 3000)
    check_plan(g, p)
    assert p.stages[0].strategy == "expanded"
    assert all(0 not in c.stages for c in p.chains)  # ConvTranspose never chains


def test_reshape_and_independent_axis_bands():
    b = GraphBuilder()
    x = b.input("x", (1, 32, 16, 8))
    y = b.reshape(x, (1, 512, 8))
    b.output(y)
    g = b.build()
    p = plan(g, 3000)
    check_plan(g, p)
    assert p.stages[0].strategy == "reshape" and p.stages[0].tile_h % 16 == 0
    b = GraphBuilder()
    x = b.input("x", (1, 32, 64, 8))
    (y,) = b.node(
        "nn.reduce_max", TilingClass.INDEPENDENT_AXIS, [x], [(1, 32, 1, 8)], attrs={BAND_AXIS: 1}
    )
    b.output(y)
    p = plan(b.build(), 3000)
    assert p.fits and p.stages[0].strategy == "axis"


# ---------------------------------------------------------------------------
# chains
# ---------------------------------------------------------------------------


def _ctx(g: PlanGraph, budget: int, chain_1d: bool = False) -> _Ctx:
    return _Ctx(g, GraphTables(g), budget, (3, 4) if chain_1d else (4,))


def test_chain_rule_1_height_tileable_without_resize():
    g = chain_graph([("conv", 3, 1), ("relu", 1, 1), ("conv", 3, 1)], h=16)
    assert chain_rules_hold(_ctx(g, 4000), singletons(g))
    b = GraphBuilder()
    x = b.input("x", (1, 16, 16, 8))
    y = b.conv(b.resize(b.conv(x, 8, 3), 2), 8, 3)
    b.output(y)
    g = b.build()
    ctx = _ctx(g, 4000)
    assert not ctx.chainable(1, 2)
    assert not chain_rules_hold(ctx, singletons(g))
    assert all(1 not in c for c in find_chains(g, singletons(g), 4000))


def test_chain_rule_2_rank_4_feature_maps():
    b = GraphBuilder()
    x = b.input("x", (1, 64, 8))
    y = b.conv(b.pool(b.conv(x, 8, 5), 2), 8, 3)
    b.output(y)
    g = b.build()
    assert find_chains(g, singletons(g), 600) == ()
    assert find_chains(g, singletons(g), 600, chain_1d=True) == ((0, 1, 2),)
    p = plan(g, 600, chain_1d=True)
    check_plan(g, p)
    assert len(p.chains) == 1 and p.slow_reads == 64 * 8  # read once


def test_chain_rule_3_one_output_read_by_the_next_stage():
    b = GraphBuilder()
    x = b.input("x", (1, 16, 16, 8))
    u = b.conv(x, 8, 3)
    v = b.conv(x, 8, 1)  # the stage [u, v] has two outputs
    w = b.add(u, v)
    b.output(w)
    g = b.build()
    ctx = _ctx(g, 1 << 20)
    assert not chain_rules_hold(ctx, ((0, 2), (2, 3)))
    assert chain_rules_hold(ctx, ((0, 2), (2, 3))) is False
    # the next stage reading something from outside the chain
    b = GraphBuilder()
    x = b.input("x", (1, 16, 16, 8))
    y = b.input("y", (1, 16, 16, 8))
    w = b.add(b.conv(x, 8, 3), y)
    b.output(w)
    g = b.build()
    assert not chain_rules_hold(_ctx(g, 1 << 20), singletons(g))
    b = GraphBuilder()
    x = b.input("x", (1, 16, 16, 8))
    w = b.add(b.conv(x, 8, 3), b.relu(b.conv(x, 8, 1)))
    b.output(w)
    g = b.build()
    assert chain_rules_hold(_ctx(g, 1 << 20), ((0, 1), (1, 4))) is False
    assert chain_rules_hold(_ctx(g, 1 << 20), ((0, 3), (3, 4))) is False


def test_chain_rule_4_nothing_leaves_but_the_last_output():
    b = GraphBuilder()
    x = b.input("x", (1, 16, 16, 8))
    a = b.conv(x, 8, 3)
    c = b.relu(b.conv(a, 8, 3))
    d = b.add(c, b.relu(a))  # a is read after the chain [conv a, conv, relu]
    b.output(d)
    g = b.build()
    ctx = _ctx(g, 1 << 20)
    assert not chain_rules_hold(ctx, ((0, 1), (1, 2), (2, 3)))
    b = GraphBuilder()
    x = b.input("x", (1, 16, 16, 8))
    a = b.conv(x, 8, 3)
    c = b.conv(a, 8, 3)
    b.output(a, c)  # a model output inside the chain
    g = b.build()
    assert not chain_rules_hold(_ctx(g, 1 << 20), singletons(g))
    assert chain_rules_hold(_ctx(g, 1 << 20), ((0, 1),)) is True  # trivially, alone


def test_residual_add_chains_and_branch_off_a_strided_conv_does_not():
    b = GraphBuilder()
    x = b.input("x", (1, 32, 32, 8))
    x1 = b.relu(b.conv(x, 16, 3))
    y = block(b, x1, 4)  # the Add reads x1, which an earlier member produced
    b.output(y)
    g = b.build()
    members = chain_members(_ctx(g, 1 << 20), 0, len(g.nodes))
    assert members is not None and len(members) >= 4
    assert chain_rules_hold(_ctx(g, 1 << 20), members)
    model = build_band(g, 0, len(g.nodes))
    p = plan(g, model.band_bytes(2) + 16)
    check_plan(g, p)
    assert len(p.chains) == 1 and p.chains[0].stages == tuple(range(len(p.stages)))
    assert p.slow_reads == 32 * 32 * 8  # the chain's input, read once
    # a branch off the input of a strided conv: that stage holds no band
    b = GraphBuilder()
    x = b.input("x", (1, 32, 32, 8))
    t = b.conv(x, 8, 3)
    y = b.conv(t, 8, 3, 2)
    z = b.relu(t)
    b.output(y, z)
    g = b.build()
    ctx = _ctx(g, 1 << 20)
    why = ctx.band(1, 3)
    assert isinstance(why, str) and "band" in why
    assert not ctx.chainable(1, 3)
    p = plan(g, 6000)
    check_plan(g, p)
    assert all(not (s.start <= 1 < 2 < s.stop) or not s.tiled for s in p.stages)


def lb_bytes(g: PlanGraph, start: int, stop: int, tile: int) -> int:
    """Line-buffer bytes of ops [start, stop) for tiles of `tile` rows."""
    model = build_band(g, start, stop)
    rows = model.lb_rows(tile)
    assert rows is not None
    return model.bytes_of_rows(rows)


def least_lb_bytes(g: PlanGraph, start: int, stop: int) -> int:
    """The least line-buffer bytes of ops [start, stop): one-row tiles or a
    paced run of one input row a step, whichever holds less."""
    model = build_band(g, start, stop)
    held, _, _ = model.paced_buffer(1)
    return min(lb_bytes(g, start, stop, 1), model.bytes_of_rows(held))


def test_chain_that_does_not_fit_is_split_into_chains_that_do():
    g = chain_graph([("conv", 5, 1)] * 6, h=48, w=16, c=8)
    budget = least_lb_bytes(g, 0, 6) - 1
    chains = find_chains(g, singletons(g), budget)
    assert len(chains) >= 2
    assert [s for c in chains for s in c] == sorted(s for c in chains for s in c)
    for c in chains:
        assert least_lb_bytes(g, c[0], c[-1] + 1) <= budget
    p = plan(g, budget)
    check_plan(g, p)
    assert p.fits and len(p.chains) >= 2


def test_line_buffered_chain_reads_its_input_once():
    g = chain_graph([("conv", 3, 1), ("relu", 1, 1), ("conv", 3, 1), ("conv", 3, 1)], h=64)
    budget = 4000
    p = plan(g, budget)
    check_plan(g, p)
    (c,) = p.chains
    assert c.line_buffered and not c.recompute
    assert p.slow_reads == c.slow_reads == 64 * 16 * 8  # every input row once
    assert c.recomputed_macs == 0 == p.recomputed_macs
    out = g.nodes[-1].outputs[0]
    assert c.history_rows["x"] == 2 and c.history_rows[out] == 0  # kernel - stride
    # the same ops as one strip-tiled stage re-read and recompute their halos
    strips = tile_band(build_band(g, 0, 4), budget)
    assert strips is not None and strips.reads > p.slow_reads and strips.recomputed > 0


def test_chain_tile_height_is_the_largest_that_fits():
    g = chain_graph([("conv", 3, 1), ("dw", 3, 2), ("relu", 1, 1), ("conv", 1, 1)], h=64, w=16, c=8)
    budget = 6000
    p = plan(g, budget)
    check_plan(g, p)
    (c,) = p.chains
    model = build_band(g, c.start, c.stop)
    assert c.line_buffered and c.peak <= budget
    if c.num_tiles > 1:  # one tile fewer would not fit
        assert lb_bytes(g, c.start, c.stop, math.ceil(model.height / (c.num_tiles - 1))) > budget
    # line buffers hold (kernel - stride) history rows plus the new rows
    t = c.tile_h
    names = [n.name for n in g.nodes]
    assert c.history_rows[names[0]] == 3 - 2  # read by the stride-2 depthwise conv
    assert c.history_rows["x"] == 3 - 1
    assert c.band_rows[names[3]] == t
    # height back-propagation: every op's band rows (the spec's formula)
    assert c.op_rows[names[3]] == t and c.op_rows[names[2]] == t
    assert c.op_rows[names[1]] == t
    assert c.op_rows[names[0]] == input_rows(t, 3, 2)
    # the same chain without line buffers: the spec's sum of every band
    assert model.band_bytes(t) > c.peak


def test_stage_holding_a_concat_recomputes_in_a_line_buffered_chain():
    b = GraphBuilder()
    x = b.input("x", (1, 32, 16, 8))
    y = b.conv(x, 8, 3)
    z = b.conv(b.concat(b.conv(y, 8, 3), b.conv(y, 8, 1)), 8, 3)
    b.output(z)
    g = b.build()
    members = chain_members(_ctx(g, 1 << 20), 0, len(g.nodes))
    assert members == ((0, 1), (1, 4), (4, 5))
    # recomputing is free here, so one chain beats spilling the concat's inputs
    p = plan(g, lb_bytes(g, 0, len(g.nodes), 2) + 512, mac_weight=0)
    check_plan(g, p)
    (c,) = p.chains
    assert c.line_buffered and c.recompute and c.recomputed_macs > 0
    assert p.stages[1].recomputed_macs == c.recomputed_macs
    assert p.slow_reads == 32 * 16 * 8  # still read once


# ---------------------------------------------------------------------------
# whole plans
# ---------------------------------------------------------------------------


def test_a_node_that_fits_in_no_way_is_named_with_its_budget():
    b = GraphBuilder()
    x = b.input("x", (1, 16, 16, 8))
    y = b.whole("nn.nms", b.relu(x), (1, 100))
    b.output(y)
    g = b.build()
    p = plan(g, 1000)
    assert not p.fits and p.failed_node == g.nodes[1].name
    assert p.failed_min_budget == normal_peak(g, 1, 2) == 2048 + 112
    assert "runs whole" in p.message and "2160" in p.message
    assert min_budget(g) == 2160 and plan(g, 2160).fits
    # a window whose 1 x 1 tile is too big
    g = chain_graph([("conv", 3, 1)], h=8, w=8, c=512, eb=4)
    need = min_band_bytes(build_band(g, 0, 1))
    assert need == 3 * 3 * 512 * 4 + 512 * 4
    p = plan(g, need - 1)
    assert not p.fits and p.failed_min_budget == need and "1 x 1" in p.message
    assert plan(g, need).fits and min_budget(g) == need


@pytest.mark.parametrize("eb", [1, 4])
def test_mobilenet_like_plans(eb: int):
    g = mobilenet_like(eb, res=96)
    low = min_budget(g)
    assert plan(g, low).fits and not plan(g, low - 1).fits
    for budget in (low, 4 * low, max(low, 32 * 1024)):
        p = plan(g, budget)
        check_plan(g, p)
        assert p.fits
        # every op in a stage of its own reading its inputs once would read this:
        once = sum(
            g.tensors[x].nbytes for n in g.nodes for x in n.inputs if not g.tensors[x].is_const
        )
        assert p.slow_reads < once
        assert p.macs == g.total_macs and p.recomputed_macs < p.macs // 10


def test_form_stages_and_find_chains_rebuild_the_plan():
    g = mobilenet_like(1, res=64)
    budget = 8192
    cuts = form_stages(g, budget)
    p = plan(g, budget)
    assert tuple((s.start, s.stop) for s in p.stages) == cuts
    assert find_chains(g, cuts, budget) == tuple(c.stages for c in p.chains)


# ---------------------------------------------------------------------------
# properties
# ---------------------------------------------------------------------------

layers = st.lists(
    st.tuples(
        st.sampled_from(["conv", "dw", "pool", "relu", "res"]), st.integers(1, 5), st.integers(1, 2)
    ),
    min_size=1,
    max_size=6,
)


def random_graph(specs: list[tuple[str, int, int]], h: int, eb: int) -> PlanGraph:
    b = GraphBuilder(elem_bytes=eb)
    x = b.input("x", (1, h, 12, 4))
    for kind, k, s in specs:
        size = b.shape(x)[1]
        if kind == "conv":
            x = b.conv(x, 4, k, s)
        elif kind == "dw":
            x = b.dwconv(x, k, s)
        elif kind == "pool" and size >= 2 and b.shape(x)[2] >= 2:
            x = b.pool(x, 2, 2)
        elif kind == "res":
            x = b.add(x, b.relu(b.dwconv(x, k, 1)))
        else:
            x = b.relu(x)
    b.output(x)
    return b.build()


@settings(max_examples=40, deadline=None)
@given(specs=layers, h=st.integers(4, 40), eb=st.sampled_from([1, 4]), budget=st.integers(64, 8000))
def test_plans_keep_the_budget_and_cover_the_output(
    specs: list[tuple[str, int, int]], h: int, eb: int, budget: int
):
    g = random_graph(specs, h, eb)
    p = plan(g, budget)
    check_plan(g, p)
    assert p.fits == (budget >= min_budget(g))


def _partitions(ctx: _Ctx) -> list[tuple[int, int]]:
    """(cost, cut activations) of every partition, each stage weighed as the
    dynamic programme weighs it (normal, chain or tiled estimate); an
    activation is cut when it may overwrite its input (`in_place_source`)
    and a stage boundary lies between it and that input's producer."""
    graph, budget = ctx.graph, ctx.budget
    n = len(graph.nodes)

    def cost(i: int, j: int) -> int:
        best = _INF
        if normal_peak(graph, i, j, ctx.tables) <= budget:
            best = 0 if (i, j) == (0, n) else ctx.traffic(i, j)
        members = chain_members(ctx, i, j)
        chain = None if members is None else ctx.chain(members, exact=False)
        if chain is not None:
            once = sum(graph.tensors[x].nbytes for x in ctx.io(i, j)[0])
            best = min(best, ctx.traffic(i, j) + ctx.chain_cost(chain, once))
        return min(best, ctx.tiled_cost(i, j))

    def cut(i: int, j: int) -> int:
        sources = (in_place_source(graph, k) for k in range(i, j))
        return sum(1 for x in sources if x is not None and (graph.producer(x) or 0) < i)

    keys: list[tuple[int, int]] = []
    for mask in itertools.product([False, True], repeat=n - 1):
        cuts = [0] + [k + 1 for k, m in enumerate(mask) if m] + [n]
        segments = list(zip(cuts, cuts[1:]))
        keys.append((sum(cost(a, b) for a, b in segments), sum(cut(a, b) for a, b in segments)))
    return keys


@settings(max_examples=25, deadline=None)
@given(
    specs=st.lists(
        st.tuples(
            st.sampled_from(["conv", "dw", "relu", "res"]), st.integers(1, 3), st.integers(1, 2)
        ),
        min_size=2,
        max_size=5,
    ),
    budget=st.integers(200, 4000),
    eb=st.sampled_from([1, 4]),
)
def test_stage_cuts_are_optimal(specs: list[tuple[str, int, int]], budget: int, eb: int):
    """Stage formation finds the least cost of all partitions and, among the
    partitions of that cost, the fewest activations cut off their producer."""
    g = random_graph(specs, 16, eb)
    if len(g.nodes) > 8:
        return
    ctx = _ctx(g, budget * eb)
    if not all(
        normal_peak(g, k, k + 1) <= budget * eb
        or not isinstance(ctx.band(k, k + 1), str)
        and min_band_bytes(ctx.band(k, k + 1)) <= budget * eb  # type: ignore[arg-type]
        for k in range(len(g.nodes))
    ):
        return
    _, (cost, cut, _) = _form(ctx)
    assert (cost, cut) == min(_partitions(_ctx(g, budget * eb)))


def test_an_activation_stays_with_its_producer_among_equal_cuts(monkeypatch: pytest.MonkeyPatch):
    """conv -> relu -> GlobalAveragePool at 1K: cutting before the Relu or
    after it moves the same bytes (the two tensors have one size); the Relu
    stays in the convolution's stage, where it overwrites the conv's rows.
    (Without column bands: conv and relu as a chain in column bands cost
    less than either cut.)"""
    monkeypatch.setattr(planner, "COLUMN_BANDS", ())
    b = GraphBuilder(elem_bytes=4)
    x = b.input("x", (1, 16, 16, 8))
    r = b.relu(b.conv(x, 8, 3))
    b.output(b.gemm(b.flatten(b.global_avg_pool(r)), 4))
    g = b.build()
    p = plan(g, 1024)
    check_plan(g, p)
    assert p.fits
    (relu,) = (k for k, node in enumerate(g.nodes) if node.op == "nn.relu")
    unit = [s.chain if s.chain is not None else -1 - s.index for s in p.stages]
    stage_of = {k: s.index for s in p.stages for k in range(s.start, s.stop)}
    assert unit[stage_of[relu]] == unit[stage_of[relu - 1]]
    # a tie: the least cost is also reached by cutting the Relu off
    keys = _partitions(_ctx(g, 1024))
    least = min(keys)
    assert least[1] == 0 and min(k for k in keys if k[1] > 0)[0] == least[0]
    assert _form(_ctx(g, 1024))[1][:2] == least


def test_rows_of_every_tile_follow_the_spec_formula():
    g = chain_graph([("conv", 3, 2), ("conv", 3, 1)], h=33, w=8, c=4)
    model = build_band(g, 0, 2)
    for lo, hi in tile_bounds(model.height, 4):
        ranges = dict(zip(model.names, model.ranges(lo, hi)))
        pad = g.nodes[1].window(0)[3]
        mid = g.nodes[0].outputs[0]
        assert ranges[mid][0] == max(lo - pad, 0)
        k, s, _, pt, _ = g.nodes[0].window(0)
        assert ranges["x"][0] == max(ranges[mid][0] * s - pt, 0)


def _window_rows(graph: PlanGraph, k: int, x: str, r: int) -> set[int]:
    """Rows of input x that output row r of node k reads (straight from the
    node's window, not through the planner's row maps)."""
    node = graph.nodes[k]
    size = graph.tensors[x].height
    if node.tiling is TilingClass.HALO and x == node.inputs[0]:
        kk, s, d, pb, _ = node.window(0)
        return {r * s - pb + j * d for j in range(kk) if 0 <= r * s - pb + j * d < size}
    return {r} if size > 1 else {0}


def simulate_line_buffers(graph: PlanGraph, chain: ChainPlan) -> None:
    """Run a line-buffered chain row by row: each tile computes (or loads)
    the rows of every tensor from the previous tile's end up to the end of its
    range; a row leaves its buffer once no later tile reads it (a paced run's
    stride-2 reader waits a step for its second new row). Check that every
    row an op reads is there and not yet evicted, that no buffer holds more
    rows than allocated, and the loads and outputs. A chain in column bands
    runs each band so, over every row, loading the band's columns."""
    bands: dict[object, list[TileRows]] = {}
    for tile in chain.tiles:
        bands.setdefault(tile.cols, []).append(tile)
    assert len(bands) == 1 or chain.tile_w
    loaded = sum(_simulate_band(graph, chain, tiles) for tiles in bands.values())
    assert loaded == chain.slow_reads


def _simulate_band(graph: PlanGraph, chain: ChainPlan, tiles: list[TileRows]) -> int:
    """`simulate_line_buffers` over one column band's tiles: the bytes loaded."""
    nodes = range(chain.start, chain.stop)
    produced = {o for k in nodes for o in graph.nodes[k].outputs}
    done: dict[str, int] = {}
    loaded = 0
    out_rows = 0
    news: list[dict[str, range]] = []
    reads: list[dict[str, set[int]]] = []
    lows: list[dict[str, int]] = []
    for tile in tiles:
        need_low: dict[str, int] = {}
        new: dict[str, range] = {}
        for name, (lo, hi) in tile.rows.items():
            start = max(done.get(name, lo), lo)
            new[name] = range(start, max(hi, start))
            need_low[name] = start
        for name in chain.outputs:
            need_low[name] = min(need_low[name], tile.out[0])
        read: dict[str, set[int]] = {}
        for k in nodes:
            node = graph.nodes[k]
            for r in new[node.outputs[0]]:
                for x in node.inputs:
                    if graph.tensors[x].is_const:
                        continue
                    rows = _window_rows(graph, k, x, r)
                    if rows:
                        need_low[x] = min(need_low[x], min(rows))
                    read.setdefault(x, set()).update(rows)
        for name, (_, hi) in tile.rows.items():
            if name not in produced:
                info = graph.tensors[name]
                c = (tile.col_ranges or {}).get(name, (0, info.width))
                loaded += len(new[name]) * info.row_bytes // info.width * (c[1] - c[0])
            done[name] = max(done.get(name, 0), hi)
        out_rows += len(new[chain.outputs[0]])
        news.append(new)
        reads.append(read)
        lows.append(need_low)
    for i in range(len(lows) - 2, -1, -1):  # held until the last tile reading it
        for name in lows[i]:
            lows[i][name] = min(lows[i][name], lows[i + 1][name])
    floor: dict[str, int] = {}
    top: dict[str, int] = {}
    for tile, read, need_low in zip(tiles, reads, lows, strict=True):
        for name in tile.rows:
            top[name] = max(top.get(name, 0), tile.rows[name][1])
        for x, rows in read.items():
            for q in rows:  # computed (or loaded) by now, and not evicted
                assert floor.get(x, 0) <= q < top[x]
        for name in tile.rows:
            first = min((nw[name].start for nw in news if len(nw[name])), default=0)
            held = top[name] - max(need_low[name], first)
            assert held <= chain.band_rows[name], (name, held, chain.band_rows[name])
            assert need_low[name] >= floor.get(name, 0)  # never needs an evicted row
            floor[name] = need_low[name]
    assert out_rows == graph.tensors[chain.outputs[0]].height  # each output row once
    return loaded


@settings(max_examples=40, deadline=None)
@given(
    specs=st.lists(
        st.tuples(
            st.sampled_from(["conv", "dw", "relu", "res", "pool"]),
            st.integers(1, 5),
            st.integers(1, 2),
        ),
        min_size=2,
        max_size=6,
    ),
    h=st.integers(6, 40),
    budget=st.integers(300, 6000),
)
# a paced run whose 5x5 reader keeps four rows of history of a one-row step
@example(specs=[("conv", 1, 1), ("conv", 1, 1), ("res", 5, 1)], h=6, budget=384)
def test_line_buffered_chains_run_row_by_row(
    specs: list[tuple[str, int, int]], h: int, budget: int
):
    g = random_graph(specs, h, 1)
    p = plan(g, budget)
    check_plan(g, p)
    for c in p.chains:
        if c.line_buffered and not c.recompute:
            simulate_line_buffers(g, c)


def test_line_buffers_of_a_mobilenet_block_run_row_by_row():
    b = GraphBuilder()
    x = b.input("x", (1, 40, 20, 8))
    x1 = b.relu(b.conv(x, 16, 3, 2))
    y = block(b, block(b, x1, 4), 4, 2)
    b.output(y)
    g = b.build()
    for budget in (3000, 6000, 20000):
        p = plan(g, budget)
        check_plan(g, p)
        assert p.chains
        for c in p.chains:
            simulate_line_buffers(g, c)


# ---------------------------------------------------------------------------
# paced line-buffered runs
# ---------------------------------------------------------------------------


def _two_strides() -> PlanGraph:
    """x 16 rows -> pointwise -> depthwise 3x3 stride 2 -> pointwise ->
    depthwise 3x3 stride 2 (4 rows), rows of 16, 32, 32, 16 and 16 bytes."""
    b = GraphBuilder(elem_bytes=1)
    x = b.input("x", (1, 16, 4, 4))
    y = b.dwconv(b.conv(x, 8, 1), 3, 2)
    b.output(b.dwconv(b.conv(y, 4, 1), 3, 2))
    return b.build()


def test_a_paced_run_holds_each_window_once():
    """One input row a step: a tensor a 3x3 window reads holds its three
    rows, one read pointwise a single row, and every row is computed once;
    a tile of one output row holds the four new rows of each 16-row tensor
    beside its history (7), and more bytes in all."""
    g = _two_strides()
    m = build_band(g, 0, 4)
    assert m.names == ("conv3", "conv2", "conv1", "conv0", "x")
    held, done, hist = m.paced_buffer(1)
    assert held == [1, 3, 1, 3, 1] == m.paced_rows()
    assert done == list(m.heights) and hist == [0, 2, 0, 2, 0]
    assert len(m.paced_ranges(1)) == 16  # the last input row completes every output row
    tile1, _, _ = m.line_buffer(m.lb_tile_ranges(1))
    assert tile1 == [1, 3, 3, 7, 7]
    assert m.bytes_of_rows(held) == 176 < m.bytes_of_rows(tile1) == 432
    assert m.max_pace() == 4  # input rows behind one output row
    paced = [m.bytes_of_rows(m.paced_buffer(p)[0]) for p in range(1, 5)]
    assert paced == sorted(paced)  # a faster pace holds more


def test_paced_floor_is_history_plus_one_row():
    assert paced_floor(2, 0, 16) == 3  # a 3x3 window at stride 1: two rows of history
    assert paced_floor(0, 0, 16) == 1
    assert paced_floor(5, -3, 4) == 4  # never more than the tensor


def test_a_paced_chain_is_chosen_where_no_output_band_fits(monkeypatch: pytest.MonkeyPatch):
    # weighing the weights tiles read again, a chain of two-row tiles wins here
    monkeypatch.setattr(planner, "WEIGH_REREADS", False)
    g = _two_strides()
    m = build_band(g, 0, 4)
    held, _, hist = m.paced_buffer(1)
    least = scratch_bytes(m, held, hist)  # the scratch shared (plan.scratch)
    assert least < m.bytes_of_rows(held)
    held1, _, hist1 = m.line_buffer(m.lb_tile_ranges(1))
    tile1 = scratch_bytes(m, held1, hist1)
    for budget in (least, (least + tile1) // 2):
        p = plan(g, budget)
        check_plan(g, p)
        assert p.fits and len(p.chains) == 1 and p.chains[0].pace >= 1
        (c,) = p.chains
        assert c.peak <= budget and c.recomputed_macs == 0
        assert c.num_tiles == len(m.paced_ranges(c.pace))
        assert "steps of" in c.describe()
        simulate_line_buffers(g, c)
    p = plan(g, least - 1)
    assert not any((c.start, c.stop) == (0, 4) for c in p.chains)  # split, or none
    p = plan(g, tile1)
    assert p.fits and [c.pace for c in p.chains] == [0]  # a band of output rows fits
