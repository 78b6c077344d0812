"""Channel tiling: bands of channel-local ops (depthwise convolutions, pools,
elementwise ops) also cut along the channels, where no spatial tile fits or
where the groups load fewer input bytes. Plans that take channel groups are
lowered, placed and run by the interpreter and as C, checked against the
untiled reference (int8 bit-exact) with the measured figures equal to the
planned ones."""

from __future__ import annotations

import numpy as np
import pytest
import zoo
from xdsl.context import Context

from tigris_ir.dialects import nn
from tigris_ir.frontend.onnx_import import import_model
from tigris_ir.interp.loop_ir import run_loop_module
from tigris_ir.passes.lower_gebp import tile_and_lower
from tigris_ir.passes.lower_to_loops import LowerToLoopsPass
from tigris_ir.passes.plan_arena import PlanArenaPass
from tigris_ir.plan import planner
from tigris_ir.plan.graph import GraphBuilder
from tigris_ir.plan.ir import main_func
from tigris_ir.plan.memory import align
from tigris_ir.plan.nn_graph import build_view
from tigris_ir.plan.planner import Plan, StagePlan, min_budget, plan
from tigris_ir.plan.tiling import ACC_DTYPE, GraphTables
from tigris_ir.reference.executor import run_function


def _rand(t, rng: np.random.Generator) -> np.ndarray:
    shape, dt = nn.shape_of(t), nn.dtype_of(t)
    if dt == np.float32:
        return rng.standard_normal(shape).astype(np.float32)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max + 1, shape).astype(dt)


_CASES: dict[tuple[str, bool], tuple] = {}


def _case(name: str, int8: bool):
    if (name, int8) not in _CASES:
        imported = import_model(zoo.build(name, size="small", int8=int8))
        fn = main_func(imported.module)
        rng = np.random.default_rng(0)
        args = [_rand(a.type, rng) for a in fn.body.block.args]  # type: ignore[arg-type]
        ref = run_function(fn, imported.weights, args)
        _CASES[(name, int8)] = (imported.module, imported.weights, args, ref)
    return _CASES[(name, int8)]


def _grouped(p: Plan) -> list[StagePlan]:
    return [s for s in p.stages if s.channel_group and s.strategy != "accumulate"]


def _lowered(module, budget: int):
    m = module.clone()
    LowerToLoopsPass(budget=budget).apply(Context(), m)
    tile_and_lower(m)
    PlanArenaPass().apply(Context(), m)
    return m


def _same(got, want) -> None:
    for r, y in zip(want, got, strict=True):
        if r.dtype == np.float32:
            np.testing.assert_allclose(y, r, rtol=1e-5, atol=1e-5 * float(np.max(np.abs(r))))
        else:
            np.testing.assert_array_equal(y, r)


def _check_tiles(g, st: StagePlan) -> None:
    """The groups partition the channels, outermost, each over the same
    spatial tiles, and the stage's tile count counts them all."""
    chans = {g.tensors[t].shape[-1] for t in st.band_rows}
    assert len(chans) == 1
    (c,) = chans
    groups = list(dict.fromkeys(t.chans for t in st.tiles))
    assert groups[0] == (0, st.channel_group)
    assert [lo for lo, _ in groups[1:]] == [hi for _, hi in groups[:-1]]
    assert groups[-1] is not None and groups[-1][1] == c
    per = len(st.tiles) // len(groups)
    assert len(st.tiles) == st.num_tiles == per * len(groups)
    for i, t in enumerate(st.tiles):
        assert t.chans == groups[i // per]
        assert t.rows == st.tiles[i % per].rows


# (model, int8, budget; 0: the smallest that fits): MobileNetV2 0.5 at 32 x 32
# and DS-CNN, where their depthwise stages cut their channels.
CASES = [
    ("mobilenet_v2", False, 0),
    ("mobilenet_v2", False, 11 * 1024),
    ("mobilenet_v2", True, 0),
    ("mobilenet_v2", True, 3 * 1024),
    ("ds_cnn", False, 0),
    ("ds_cnn", True, 128),
]


def _budget(name: str, int8: bool, budget: int) -> int:
    module = _case(name, int8)[0]
    return budget or min_budget(build_view(main_func(module)).graph)


@pytest.mark.parametrize(
    ("name", "int8", "budget"),
    CASES,
    ids=[f"{n}-{'int8' if q else 'f32'}-{b or 'min'}" for n, q, b in CASES],
)
def test_channel_grouped_plans_run_as_planned(
    name: str, int8: bool, budget: int, monkeypatch: pytest.MonkeyPatch
):
    # column bands (a line-buffered chain run band by band) take MobileNetV2's
    # depthwise stages at these budgets where they are offered: here they are not
    monkeypatch.setattr(planner, "COLUMN_BANDS", ())
    module, weights, args, ref = _case(name, int8)
    budget = _budget(name, int8, budget)
    g = build_view(main_func(module)).graph
    p = plan(g, budget)
    assert p.fits
    grouped = _grouped(p)
    assert grouped, "the budget was chosen to cut channels"
    for st in grouped:
        assert st.strategy in ("strips", "grid") and st.chain is None
        _check_tiles(g, st)
    res = run_loop_module(_lowered(module, budget), weights, args)
    _same(res.outputs, ref)
    s = res.stats
    assert s.arena_bytes == s.fast_peak == p.peak <= budget
    assert (s.slow_peak, s.slow_reads, s.slow_writes) == (p.slow_peak, p.slow_reads, p.slow_writes)


@pytest.mark.parametrize("int8", [False, True], ids=["f32", "int8"])
def test_channel_grouped_c_runs_as_planned(int8: bool):
    """The printed C of a plan with channel groups computes the reference's
    output and counts the interpreter's figures."""
    from tigris_ir.backend.c.build import run_c
    from tigris_ir.reference.executor import module_layouts, to_boundary, to_internal

    module, weights, args, ref = _case("ds_cnn", int8)
    budget = 2 * _budget("ds_cnn", int8, 0)
    p = plan(build_view(main_func(module)).graph, budget)
    assert _grouped(p)
    m = _lowered(module, budget)
    res = run_loop_module(m, weights, args)
    in_lay, out_lay = module_layouts(main_func(m))
    x = to_boundary(args[0], in_lay[0])
    got, stats = run_c(m, weights, [x], variant=("bounds", "stats"), strict=True)
    _same([to_internal(got[0], out_lay[0])], ref)
    assert stats == res.stats
    assert stats is not None and stats.fast_peak == p.peak


def test_channel_groups_lower_the_smallest_budget(monkeypatch):
    """An inverted residual block (1 x 1 expansion, 3 x 3 depthwise, 1 x 1
    projection): without channel groups a 1 x 1 tile of the depthwise stage
    bounds the smallest budget; with them it is lower, and the plan there
    cuts the depthwise stage's channels and fits."""
    b = GraphBuilder(elem_bytes=4)
    x = b.input("x", (1, 8, 8, 16))
    e = b.relu(b.conv(x, 96, 1))
    d = b.relu(b.dwconv(e, 3))
    y = b.conv(d, 16, 1)
    b.graph_outputs.append(y)
    g = b.build()
    with_groups = min_budget(g)
    monkeypatch.setattr(planner, "channel_count", lambda model: 0)
    without = min_budget(g)
    monkeypatch.undo()
    assert with_groups < without
    assert not plan(g, with_groups - 1).fits
    p = plan(g, with_groups)
    assert p.fits and p.peak <= with_groups and _grouped(p)


def _dw_relu(c: int, h: int = 8) -> GraphBuilder:
    b = GraphBuilder(elem_bytes=4)
    x = b.input("x", (1, h, h, c))
    y = b.relu(b.dwconv(x, 3))
    b.graph_outputs.append(y)
    return b


def test_groups_win_where_they_load_fewer_bytes():
    """A depthwise band whose strips fit but reload halo rows: groups of
    channels over the whole map load every input byte once, and win."""
    g = _dw_relu(64, 16).build()
    x = g.tensors["x"].nbytes
    model = planner._Ctx(g, GraphTables(g), 40 * 1024).band(0, 2)  # noqa: SLF001
    assert not isinstance(model, str)
    strips = planner._strips(model, 40 * 1024)  # noqa: SLF001
    assert strips is not None and strips.tiles > 1 and strips.reads > x
    t = planner.tile_band(model, 40 * 1024)
    assert t is not None and t.channel_group and t.tile_h == 16
    assert t.reads == x and t.peak <= 40 * 1024


def test_only_channel_local_bands_cut_channels():
    """A full convolution mixes channels: its band never takes groups, and
    where no spatial tile fits the stage does not fit."""
    b = GraphBuilder(elem_bytes=4)
    x = b.input("x", (1, 8, 8, 64))
    y = b.conv(x, 64, 3)
    b.graph_outputs.append(y)
    g = b.build()
    tables = GraphTables(g)
    ctx = planner._Ctx(g, tables, 2048)  # noqa: SLF001
    model = ctx.band(0, 1)
    assert not isinstance(model, str) and planner.channel_count(model) == 0
    assert not plan(g, 2048).fits
    dw = _dw_relu(64).build()
    dmodel = planner._Ctx(dw, GraphTables(dw), 2048).band(0, 2)  # noqa: SLF001
    assert not isinstance(dmodel, str) and planner.channel_count(dmodel) == 64
    p = plan(dw, 2048)
    assert p.fits and _grouped(p)


def test_channel_groups_prefer_whole_vectors(monkeypatch):
    """Among channel groups loading the same bytes, the planner takes a
    multiple of `CHANNEL_GROUP_ALIGN` channels: MobileNetV2-224 float32 at 64K
    splits 576 channels evenly into groups of 39 without the preference (a
    partial vector in every pixel), into 32 with it, at the same slow traffic
    (without column bands, which take those stages into chains)."""
    monkeypatch.setattr(planner, "COLUMN_BANDS", ())
    g = build_view(main_func(import_model(zoo.build("mobilenet_v2", size="full")).module)).graph
    budget, align = 64 * 1024, planner.CHANNEL_GROUP_ALIGN
    assert align == 16
    aligned = plan(g, budget)
    monkeypatch.setattr(planner, "CHANNEL_GROUP_ALIGN", 1)
    even = plan(g, budget)
    assert aligned.fits and even.fits
    assert (aligned.slow_reads, aligned.slow_writes) == (even.slow_reads, even.slow_writes)
    assert aligned.recomputed_macs == even.recomputed_macs and aligned.peak <= budget
    sizes = [s.channel_group for s in _grouped(aligned)]
    assert sizes and all(n % align == 0 for n in sizes)
    assert any(s.channel_group % align for s in _grouped(even))


def _conv_head(int8: bool):
    """A 3 x 3 convolution of stride 2, a 1 x 1 convolution to 160 channels,
    ReLUs, GlobalAveragePool, Flatten, Gemm: the classifier tail of a
    MobileNetV2 (its 1 x 1 convolution to 1,280 channels before the pool)."""
    g = zoo._Graph(7)  # noqa: SLF001
    x = g.relu(g.conv("input", 3, 16, (3, 3), stride=2))
    x = g.relu(g.conv(x, 16, 160, (1, 1)))
    model = g.model("conv_head", (1, 3, 12, 12), g.head(x, 160, 10))
    return import_model(zoo.quantize(model, seed=0) if int8 else model)


def run_as_planned(m, weights, args, ref, p: Plan, budget: int):
    """Run the lowered and placed module `m` in the interpreter and as C:
    both give the reference outputs `ref` and measure the figures of plan
    `p` (fast peak, slow peak and traffic); the measured statistics."""
    res = run_loop_module(m, weights, args)
    _same(res.outputs, ref)
    s = res.stats
    assert s.arena_bytes == s.fast_peak == p.peak <= budget
    assert (s.slow_peak, s.slow_reads, s.slow_writes) == (p.slow_peak, p.slow_reads, p.slow_writes)
    got, stats = _run_c(m, weights, args)
    _same(got, ref)
    assert stats == s
    return s


def _run_c(m, weights, args):
    from tigris_ir.backend.c.build import run_c
    from tigris_ir.reference.executor import module_layouts, to_boundary, to_internal

    in_lay, out_lay = module_layouts(main_func(m))
    xs = [to_boundary(a, lay) for a, lay in zip(args, in_lay, strict=True)]
    got, stats = run_c(m, weights, xs, variant=("bounds", "stats"), strict=True)
    return [to_internal(y, lay) for y, lay in zip(got, out_lay, strict=True)], stats


@pytest.mark.parametrize("int8", [False, True], ids=["f32", "int8"])
@pytest.mark.parametrize("single", [True, False], ids=["one-arena", "slow-memory"])
def test_accumulation_groups_the_channels_of_a_1x1_convolution(
    int8: bool, single: bool, monkeypatch: pytest.MonkeyPatch
):
    """An accumulated band that opens with a 1 x 1 convolution of one group
    cuts that convolution's result channels: each group holds every channel
    of the convolution's input over its positions (loaded again per group)
    and only its own channels of the rest. In one arena, at the smallest
    budget, the pool's stage starts with the convolution and takes groups,
    and without such groups the smallest budget is larger; with slow memory,
    at the first budget from the smallest where the stage does. Either plan
    runs as planned in the interpreter and as C (fast peak, and with slow
    memory the traffic the groups load again), equal to the untiled
    reference."""
    from tigris_ir.plan.planner import min_single_budget

    imported = _conv_head(int8)
    fn = main_func(imported.module)
    g = build_view(fn).graph
    slow = 0 if single else None

    def grouped_conv(p: Plan) -> StagePlan | None:
        acc = next(s for s in p.stages if s.strategy == "accumulate")
        return acc if acc.channel_group and g.nodes[acc.start].is_channel_dense else None

    if single:
        budget = min_single_budget(g)
        monkeypatch.setattr(planner, "group_whole_channels", lambda graph, start, stop: None)
        assert min_single_budget(g) > budget
        monkeypatch.undo()
    else:
        low = min_budget(g)
        budget = next(
            b for b in range(low, 4 * low, 16) if grouped_conv(plan(g, b, slow_budget=slow))
        )
    p = plan(g, budget, slow_budget=slow)
    acc = grouped_conv(p)
    assert p.fits and acc is not None
    x = g.tensors[g.nodes[acc.start].inputs[0]]
    chans = g.tensors[g.nodes[acc.start].outputs[0]].shape[-1]
    if not single:  # every group loads the convolution's input again
        assert acc.slow_reads == -(-chans // acc.channel_group) * x.nbytes
    gap = g.tensors[g.nodes[acc.stop - 1].outputs[0]]
    area, grp = acc.tile_h * acc.tile_w, acc.channel_group
    cut = [
        align(area * grp * g.tensors[t].elem_bytes)
        for k in range(acc.start, acc.stop - 1)
        for t in g.nodes[k].outputs
    ]
    assert acc.peak == (
        sum(cut)
        + align(area * x.shape[-1] * x.elem_bytes)
        + align(grp * gap.elem_bytes)
        + align(grp * ACC_DTYPE.itemsize)
    )
    rng = np.random.default_rng(2)
    args = [_rand(a.type, rng) for a in fn.body.block.args]  # type: ignore[arg-type]
    ref = run_function(fn, imported.weights, args)
    m = imported.module.clone()
    LowerToLoopsPass(budget=budget, slow_budget="" if slow is None else slow).apply(Context(), m)
    tile_and_lower(m)
    PlanArenaPass().apply(Context(), m)
    run_as_planned(m, imported.weights, args, ref, p, budget)
