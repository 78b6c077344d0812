"""The loop level: band compute, static placement and plans run as planned.

The three equalities of every plan that fits: the tiled output is the untiled
reference (int8 bit-exact, float32 to a relative 1e-5), the measured fast
peak is the planned peak (in an arena of exactly that size, within the
budget), and the measured slow peak, reads and writes are the planned ones.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import zoo
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import Builtin, ModuleOp, TensorType
from xdsl.dialects.func import Func
from xdsl.ir import Attribute, Block
from xdsl.parser import Parser

from tigris_ir.dialects import nn
from tigris_ir.frontend.onnx_import import import_model
from tigris_ir.interp import band_exec
from tigris_ir.interp.loop_ir import lower_plan, run_loop_module, run_plan
from tigris_ir.interp.run_stats import RunResult
from tigris_ir.loops.arena import FastArena
from tigris_ir.loops.schedule import Buffer, LineBufferGap, PlanRunError, schedule
from tigris_ir.plan.arena import Interval, live_peak, place
from tigris_ir.plan.band import BandError, band_slices
from tigris_ir.plan.ir import main_func
from tigris_ir.plan.nn_graph import build_view
from tigris_ir.plan.planner import Plan, plan
from tigris_ir.plan.tiling import RATIO, TRANSPOSED, WINDOW, map_range
from tigris_ir.reference.executor import run_function

# ---------------------------------------------------------------------------
# helpers


def f32(*shape: int) -> TensorType:
    return nn.tensor_type(shape, np.float32)


def q8(*shape: int, scale: float = 0.05, zp: int = 3) -> TensorType:
    return nn.tensor_type(shape, np.int8, nn.QuantAttr(scale, zp))


def op_on(
    cls: type[nn.NNOp],
    operands: list[TensorType],
    result: TensorType | None,
    props: dict[str, Attribute],
) -> nn.NNOp:
    """An op on block arguments; with no result type, the inferred f32 one."""
    block = Block(arg_types=operands)
    if result is None:
        probe = cls.create(operands=list(block.args), result_types=[f32(1)], properties=props)
        result = f32(*probe.infer_shapes()[0])
    op = cls.create(operands=list(block.args), result_types=[result], properties=props)
    block.add_op(op)
    op.verify()
    return op


def rand(t: TensorType, rng: np.random.Generator) -> np.ndarray:
    shape = nn.shape_of(t)
    dt = nn.dtype_of(t)
    if dt == np.float32:
        return rng.standard_normal(shape).astype(np.float32)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max + 1, shape).astype(dt)


def same(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype == np.float32:
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    else:
        np.testing.assert_array_equal(got, want)


def ints(*v: int) -> Attribute:
    return nn.ints_prop(v)


def conv(
    x: TensorType,
    cout: int,
    k: tuple[int, ...],
    *,
    s: int = 1,
    d: int = 1,
    pads: tuple[int, ...] = (),
    group: int = 1,
    out: TensorType | None = None,
) -> nn.NNOp:
    n = len(k)
    cin = nn.shape_of(x)[-1]
    quant = nn.quant_of(x) is not None
    w = nn.tensor_type((cout, *k, cin // group), np.int8 if quant else np.float32)
    b = nn.tensor_type((cout,), np.int32 if quant else np.float32)
    types = [x, w, b] + ([nn.tensor_type((cout,), np.float32)] if quant else [])
    props = {
        "kernel": ints(*k),
        "strides": ints(*(s,) * n),
        "dilations": ints(*(d,) * n),
        "pads": ints(*(pads or (0,) * (2 * n))),
        "group": nn.int_prop(group),
    }
    return op_on(nn.ConvOp, types, out, props)


def window_rows(op: nn.WindowOp, a: int, b: int, axis: int = 0) -> tuple[int, int]:
    k, s, d, p = op.kernel(), op.strides(), op.dilations(), op.pads()
    d = d if len(d) == len(k) else (1,) * len(k)
    size = nn.shape_of(op.operands[0])[1 + axis]
    return map_range((WINDOW, k[axis], s[axis], d[axis], p[axis]), a, b, size)


def check_bands(op: nn.NNOp, held_of, cols: bool = False, seed: int = 0) -> int:
    """Every band of one row, and a few of several rows (and columns), equals
    the same rows of the op's reference on the whole tensor."""
    rng = np.random.default_rng(seed)
    args = [rand(v.type, rng) for v in op.operands]  # type: ignore[arg-type]
    if isinstance(op, nn.ConvOp) and len(args) == 4:
        args[3] = np.abs(args[3]).astype(np.float32) * 0.01 + 0.001
    want = op.reference(args)[0]
    height = nn.shape_of(op.results[0])[1]
    bands = [(a, a + 1) for a in range(height)] + [(0, height), (1, max(2, height - 1))]
    checked = 0
    for a, b in bands:
        if b > height or a >= b:
            continue
        out = {1: (a, b)}
        held = {1: held_of(op, a, b)}
        colset = [None]
        if cols:
            width = nn.shape_of(op.results[0])[2]
            colset = [(c, min(c + 2, width)) for c in range(0, width, 2)]
        for c in colset:
            o = dict(out)
            h = dict(held)
            if c is not None:
                o[2] = c
                h[2] = held_of(op, c[0], c[1], axis=1)
            x = args[0][band_slices(h, args[0].ndim)]
            got = band_exec.compute(op, [x, *args[1:]], [h] + [{}] * (len(args) - 1), o)[0]
            same(got, want[band_slices(o, want.ndim)])
            checked += 1
    return checked


# ---------------------------------------------------------------------------
# band compute


def window_held(op: nn.NNOp, a: int, b: int, axis: int = 0) -> tuple[int, int]:
    assert isinstance(op, nn.WindowOp)
    return window_rows(op, a, b, axis)


@pytest.mark.parametrize(
    "k, s, d, pads, group",
    [
        ((3, 3), 1, 1, (1, 1, 1, 1), 1),
        ((3, 3), 2, 1, (1, 1, 1, 1), 1),
        ((5, 3), 1, 2, (4, 2, 1, 2), 1),
        ((3, 3), 2, 1, (0, 1, 2, 0), 4),  # depthwise, asymmetric pads
        ((7, 5), 2, 2, (6, 3, 6, 3), 2),
        ((1, 1), 2, 1, (0, 0, 3, 0), 1),  # rows of padding only at the end
    ],
)
@pytest.mark.parametrize("quant", [False, True])
def test_conv_bands_equal_the_reference_rows(k, s, d, pads, group, quant):
    x = q8(1, 11, 9, 4) if quant else f32(1, 11, 9, 4)
    h, w = nn.shape_of(conv(f32(1, 11, 9, 4), 4, k, s=s, d=d, pads=pads, group=group).output)[1:3]
    out = q8(1, h, w, 4, scale=0.2, zp=-2) if quant else f32(1, h, w, 4)
    op = conv(x, 4, k, s=s, d=d, pads=pads, group=group, out=out)
    assert check_bands(op, window_held, cols=True) > h


def test_conv1d_bands():
    op = conv(f32(1, 23, 3), 5, (5,), s=2, d=2, pads=(4, 1))
    assert check_bands(op, window_held) >= 9


@pytest.mark.parametrize("ceil", [0, 1])
@pytest.mark.parametrize("cip", [0, 1])
def test_pool_bands(ceil, cip):
    x = f32(1, 10, 7, 3)
    props = {
        "kernel": ints(3, 2),
        "strides": ints(2, 2),
        "pads": ints(1, 0, 1, 1),
        "ceil_mode": nn.int_prop(ceil),
    }
    for cls in (nn.MaxPoolOp, nn.AveragePoolOp):
        p = dict(props)
        if cls is nn.AveragePoolOp:
            p["count_include_pad"] = nn.int_prop(cip)
        op = op_on(cls, [x], None, p)
        assert check_bands(op, window_held, cols=True) > 0


def test_quantized_max_pool_bands_pad_with_the_lowest_value():
    x = q8(1, 9, 5, 2)
    props = {"kernel": ints(3, 3), "strides": ints(1, 1), "pads": ints(1, 1, 1, 1)}
    op = op_on(nn.MaxPoolOp, [x], x, props)
    assert check_bands(op, window_held, cols=True) > 9


def test_conv_transpose_bands():
    x = f32(1, 6, 5, 3)
    props = {
        "kernel": ints(3, 3),
        "strides": ints(2, 2),
        "pads": ints(1, 1, 1, 1),
        "output_padding": ints(1, 1),
        "group": nn.int_prop(1),
    }
    types = [x, f32(3, 3, 3, 4), f32(4)]
    op = op_on(nn.ConvTransposeOp, types, None, props)

    def held(o: nn.NNOp, a: int, b: int, axis: int = 0) -> tuple[int, int]:
        return map_range((TRANSPOSED, 3, 2, 1, 1), a, b, 6)

    assert check_bands(op, held) > 6


@pytest.mark.parametrize(
    "mode, ctm",
    [
        ("nearest", "asymmetric"),
        ("nearest", "half_pixel"),
        ("linear", "half_pixel"),
        ("linear", "align_corners"),
    ],
)
def test_resize_bands(mode, ctm):
    from xdsl.dialects.builtin import StringAttr

    x = f32(1, 5, 4, 2)
    props = {"mode": StringAttr(mode), "coordinate_transformation_mode": StringAttr(ctm)}
    op = op_on(nn.ResizeOp, [x], f32(1, 13, 8, 2), props)

    def held(o: nn.NNOp, a: int, b: int, axis: int = 0) -> tuple[int, int]:
        return map_range((RATIO, 5, 13, 0, 0), a, b, 5)

    assert check_bands(op, held) > 13


def test_reshape_band_is_a_contiguous_span():
    x = f32(1, 4, 3, 2)
    op = op_on(nn.FlattenOp, [x], f32(1, 24), {"axis": nn.int_prop(1)})
    op2 = op_on(nn.ReshapeOp, [f32(6, 4)], f32(3, 8), {})
    a = np.arange(24, dtype=np.float32).reshape(6, 4)
    got = band_exec.compute(op2, [a[2:4]], [{0: (2, 4)}], {0: (1, 2)})[0]
    np.testing.assert_array_equal(got, a.reshape(3, 8)[1:2])
    with pytest.raises(BandError, match="holds"):
        band_exec.compute(op2, [a[3:4]], [{0: (3, 4)}], {0: (1, 2)})
    assert op.tiling().value == "reshape"


def test_a_band_that_reads_rows_it_does_not_hold_is_an_error():
    op = conv(f32(1, 8, 4, 2), 2, (3, 3), pads=(1, 1, 1, 1), out=f32(1, 8, 4, 2))
    x = np.zeros((1, 2, 4, 2), np.float32)
    w, b = np.zeros((2, 3, 3, 2), np.float32), np.zeros(2, np.float32)
    with pytest.raises(BandError, match=r"reads input \[2, 5\) but the band holds \[3, 5\)"):
        band_exec.compute(op, [x, w, b], [{1: (3, 5)}, {}, {}], {1: (3, 4)})


def test_gap_accumulates_bands_into_the_mean():
    x = f32(1, 6, 5, 3)
    op = op_on(nn.GlobalAveragePoolOp, [x], f32(1, 1, 1, 3), {})
    assert isinstance(op, nn.GlobalAveragePoolOp)
    a = np.random.default_rng(1).standard_normal((1, 6, 5, 3)).astype(np.float32)
    acc = np.zeros((1, 1, 1, 3), np.float32)
    for r in range(0, 6, 2):
        band_exec.accumulate(op, a[:, r : r + 2], acc)
    np.testing.assert_allclose(band_exec.finish(op, acc), op.reference([a])[0], rtol=1e-6)


# ---------------------------------------------------------------------------
# placement and the arena


def test_alternating_ends_reach_the_live_peak():
    """A chain of tensors (each live for two ops) packs into the largest
    adjacent pair, which lowest-fit alone misses."""
    sizes = [3072, 4096, 4096, 2048, 12288, 3072, 1024]
    items = [Interval(f"t{i}", s, i, i + 1) for i, s in enumerate(sizes)]
    bound = live_peak(items)
    offsets, top = place(items, bound)
    assert top == bound == 15360
    for a in items:
        for b in items:
            if a.key < b.key and a.first <= b.last and b.first <= a.last:
                oa, ob = offsets[a.key], offsets[b.key]
                assert oa + a.size <= ob or ob + b.size <= oa


def test_arena_rejects_overlaps_and_overruns():
    arena = FastArena(64)
    arena.alloc(Buffer("a", (8,), np.dtype(np.float32), 0), "t")
    with pytest.raises(PlanRunError, match="overlaps live buffer 'a'"):
        arena.alloc(Buffer("b", (4,), np.dtype(np.float32), 16), "t")
    with pytest.raises(PlanRunError, match="outside the arena of 64 bytes"):
        arena.alloc(Buffer("c", (8,), np.dtype(np.float32), 48), "t")
    arena.free("a")
    arena.alloc(Buffer("b", (4,), np.dtype(np.float32), 16), "t")
    assert arena.peak == 32 and arena.high == 32


# ---------------------------------------------------------------------------
# plans of the zoo


@functools.cache
def zoo_case(
    name: str, int8: bool
) -> tuple[ModuleOp, dict[str, np.ndarray], list[np.ndarray], list[np.ndarray]]:
    imported = import_model(zoo.build(name, size="small", int8=int8))
    fn = main_func(imported.module)
    rng = np.random.default_rng(0)
    args = [rand(a.type, rng) for a in fn.body.block.args]  # type: ignore[arg-type]
    return imported.module, imported.weights, args, run_function(fn, imported.weights, args)


def assert_runs_as_planned(module: ModuleOp, weights, args, ref, p: Plan) -> None:
    """Plan `p` lowered to loop IR and run: the three equalities."""
    assert_measured_as_planned(run_plan(module, p, weights, args), ref, p)


def assert_measured_as_planned(res: RunResult, ref, p: Plan) -> None:
    """Outputs equal to the untiled reference `ref` (float32 to 1e-5, int8
    bit-exact), the measured fast peak the planned one in an arena of exactly
    that size, the measured slow peak, reads and writes the planned ones."""
    for r, y in zip(ref, res.outputs, strict=True):
        if r.dtype == np.float32:
            np.testing.assert_allclose(y, r, rtol=1e-5, atol=1e-5 * float(np.max(np.abs(r))))
        else:
            np.testing.assert_array_equal(y, r)
    s = res.stats
    assert s.arena_bytes == s.fast_peak == p.peak <= p.budget
    assert s.fast_high <= p.peak
    assert (s.slow_peak, s.slow_reads, s.slow_writes) == (p.slow_peak, p.slow_reads, p.slow_writes)
    assert s.tiles >= sum(st.num_tiles for st in p.stages if st.tiled and st.chain is None)


BUDGETS = (2048, 4096, 8192, 12288, 16384, 65536)

EXTRA = (("ds_cnn", False, 1024), ("mobilenet_v1_025", False, 3072))
"""Cases beside the zoo x BUDGETS grid: where a plain chain (no halo) still
forms, now that channel groups take most halo-free stages of the grid (and,
weighing the weights tiles read again, stage formation takes fewer)."""


@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("int8", [False, True], ids=["f32", "int8"])
@pytest.mark.parametrize("name", list(zoo.ZOO))
def test_zoo_plans_run_as_planned(name: str, int8: bool, budget: int):
    module, weights, args, ref = zoo_case(name, int8)
    p = plan(build_view(main_func(module)).graph, budget)
    if not p.fits:
        assert p.failed_node is not None and p.failed_min_budget is not None
        assert p.failed_min_budget > budget
        with pytest.raises(PlanRunError, match="does not fit, nothing runs"):
            schedule(build_view(main_func(module)), p)
        return
    assert_runs_as_planned(module, weights, args, ref, p)


@pytest.mark.parametrize(("name", "int8", "budget"), EXTRA)
def test_extra_zoo_plans_run_as_planned(name: str, int8: bool, budget: int):
    module, weights, args, ref = zoo_case(name, int8)
    p = plan(build_view(main_func(module)).graph, budget)
    assert p.fits
    assert_runs_as_planned(module, weights, args, ref, p)


def test_the_zoo_budgets_cover_every_strategy():
    """The budgets above force strips, grids, chains (line-buffered or not,
    recomputing a Concat), accumulations (sub-row too), resizes, expanded
    bands, channel groups, normal and in-place stages."""
    seen: set[str] = set()
    cases = [(n, q, b) for n in zoo.ZOO for q in (False, True) for b in BUDGETS]
    for name, int8, budget in [*cases, *EXTRA]:
        module = zoo_case(name, int8)[0]
        p = plan(build_view(main_func(module)).graph, budget)
        if not p.fits:
            continue
        for st in p.stages:
            if st.chain is None:
                sub = "-subrow" if st.strategy == "accumulate" and not st.tiles else ""
                seen.add(st.strategy + sub)
                if st.channel_group and st.tiles:
                    seen.add("channels")
        for c in p.chains:
            seen.add("chain-lb" if c.line_buffered else "chain")
            if c.recompute:
                seen.add("chain-recompute")
    want = {
        "normal",
        "inplace",
        "strips",
        "grid",
        "accumulate",
        "accumulate-subrow",
        "resize",
        "expanded",
        "chain",
        "chain-lb",
        "chain-recompute",
        "channels",
    }
    assert want <= seen


def test_full_size_mobilenet_strips_at_256k_run_as_planned():
    """One full-size plan: MobileNetV2 0.35 at 144, int8, 256K."""
    imported = import_model(zoo.build("mobilenet_v2_035", size="full", int8=True))
    fn = main_func(imported.module)
    args = [rand(a.type, np.random.default_rng(3)) for a in fn.body.block.args]  # type: ignore
    ref = run_function(fn, imported.weights, args)
    p = plan(build_view(fn).graph, 64 * 1024)
    assert p.fits and p.chains
    assert_runs_as_planned(imported.module, imported.weights, args, ref, p)


def test_nothing_runs_on_a_plan_that_does_not_fit():
    module = zoo_case("vgg", False)[0]
    view = build_view(main_func(module))
    p = plan(view.graph, 1024)
    assert not p.fits
    with pytest.raises(PlanRunError, match="does not fit, nothing runs"):
        schedule(view, p)


def test_a_wrong_input_is_refused():
    module, weights, args, _ = zoo_case("ds_cnn", False)
    lowered = lower_plan(module, plan(build_view(main_func(module)).graph, 8192))
    with pytest.raises(PlanRunError, match="must be float32 of shape"):
        run_loop_module(lowered, weights, [args[0].astype(np.float64)])
    with pytest.raises(PlanRunError, match="takes 1 input"):
        run_loop_module(lowered, weights, [])


# ---------------------------------------------------------------------------
# line buffers whose exact ranges are not monotone (dilated windows at the
# padded border)


LB_GAP = """
func.func @main(%x: tensor<1x8x2x8xf32>) -> tensor<1x4x1x1xf32> {
  %w = nn.weight "w" : tensor<1x2x3x8xf32>
  %b = nn.weight "b" : tensor<1xf32>
  %p = nn.average_pool %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>,
                           pads = array<i64: 1, 1, 1, 1>}
     : (tensor<1x8x2x8xf32>) -> tensor<1x5x2x8xf32>
  %y = nn.conv %p, %w, %b {kernel = array<i64: 2, 3>, dilations = array<i64: 2, 2>,
                           pads = array<i64: 1, 0, 0, 3>}
     : (tensor<1x5x2x8xf32>, tensor<1x2x3x8xf32>, tensor<1xf32>) -> tensor<1x4x1x1xf32>
  func.return %y : tensor<1x4x1x1xf32>
}
"""


LB_BACK = """
func.func @main(%x: tensor<1x6x2x4xf32>) -> tensor<1x3x7x4xf32> {
  %w = nn.weight "w" : tensor<4x5x1x1xf32>
  %b = nn.weight "b" : tensor<4xf32>
  %c = nn.conv %x, %w, %b {kernel = array<i64: 5, 1>, dilations = array<i64: 2, 2>,
                           pads = array<i64: 2, 3, 3, 2>, group = 4 : i64}
     : (tensor<1x6x2x4xf32>, tensor<4x5x1x1xf32>, tensor<4xf32>) -> tensor<1x3x7x4xf32>
  %y = nn.relu %c : (tensor<1x3x7x4xf32>) -> tensor<1x3x7x4xf32>
  func.return %y : tensor<1x3x7x4xf32>
}
"""


def _lb_module(text: str) -> ModuleOp:
    ctx = Context()
    for d in (Builtin, Func, nn.NN):
        ctx.load_dialect(d)
    return Parser(ctx, text).parse_module()


def _lb_view(text: str):
    fn = next(op for op in _lb_module(text).ops if isinstance(op, func.FuncOp))
    return build_view(fn)


def _lb_case(text: str, budget: int) -> Plan:
    """The plan of a line-buffered chain at `budget` runs as planned."""
    module = _lb_module(text)
    fn = next(op for op in module.ops if isinstance(op, func.FuncOp))
    view = build_view(fn)
    p = plan(view.graph, budget)
    assert p.fits and p.chains and p.chains[0].line_buffered
    rng = np.random.default_rng(0)
    weights = {
        op.ref.data: rng.standard_normal(nn.shape_of(op.result)).astype(np.float32)
        for op in fn.walk()
        if isinstance(op, nn.WeightOp)
    }
    args = [rand(a.type, rng) for a in fn.body.block.args]  # type: ignore[arg-type]
    assert_runs_as_planned(module, weights, args, run_function(fn, weights, args), p)
    return p


def test_line_buffered_chain_whose_ranges_go_back(monkeypatch: pytest.MonkeyPatch):
    """x is read by tiles over [0, 5), [1, 6), [0, 5): tile 2 reads row 0
    again, so the line buffer of x keeps it and holds all 6 rows (weighing
    the weights its tiles read again, a grid costs less here)."""
    from tigris_ir.plan import planner

    monkeypatch.setattr(planner, "WEIGH_REREADS", False)
    p = _lb_case(LB_BACK, 320)
    c = p.chains[0]
    assert c.band_rows["x"] == 6 and [t.rows["x"] for t in c.tiles] == [(0, 5), (0, 6), (0, 6)]


def test_line_buffered_chain_with_non_monotone_ranges():
    """p is read over [1, 2) and then [0, 3): the first tile computes row 0
    of p too (from rows [0, 3) of x), so no tile reads a row never computed."""
    p = _lb_case(LB_GAP, 400)
    c = p.chains[0]
    assert [t.rows["p"] for t in c.tiles] == [(0, 2), (0, 3), (1, 4), (2, 5)]
    assert c.slow_reads == 8 * 2 * 8 * 4  # every row of x loaded once


def test_a_line_buffer_reading_a_row_never_computed_is_refused():
    """The exact, non-monotone ranges of LB_GAP run as line buffers read row 0
    of p, which no tile computes: the loop level refuses such a schedule."""
    from dataclasses import replace

    from tigris_ir.plan.tiling import build_band

    view = _lb_view(LB_GAP)
    p = plan(view.graph, 400)
    c = p.chains[0]
    model = build_band(view.graph, c.start, c.stop)
    exact = model.tile_ranges(c.tile_h)
    tiles = tuple(
        replace(t, rows=dict(zip(model.names, r))) for t, r in zip(c.tiles, exact, strict=True)
    )
    assert [t.rows["p"] for t in tiles][:2] == [(1, 2), (0, 3)]
    bad = replace(p, chains=(replace(c, tiles=tiles),))
    with pytest.raises(LineBufferGap, match=r"row 0 is never computed"):
        schedule(view, bad)


# ---------------------------------------------------------------------------
# the loop IR: lowered, placed, verified and run


def lower(module: ModuleOp, budget: int) -> ModuleOp:
    from xdsl.context import Context

    from tigris_ir.passes.lower_gebp import tile_and_lower
    from tigris_ir.passes.lower_to_loops import LowerToLoopsPass
    from tigris_ir.passes.plan_arena import PlanArenaPass

    m = module.clone()
    LowerToLoopsPass(budget=budget).apply(Context(), m)
    tile_and_lower(m)
    PlanArenaPass().apply(Context(), m)
    m.verify()
    return m


@pytest.mark.parametrize("int8", [False, True], ids=["f32", "int8"])
@pytest.mark.parametrize("name", list(zoo.ZOO))
def test_the_pipelines_loop_ir_runs_as_planned(name: str, int8: bool):
    """Lowered by the passes a user types (lower-to-loops planning from the
    budget, gebp-tile, lower-gebp, plan-arena), verified and run, a plan
    computes the untiled reference and measures the figures of the plan
    the planner makes under that budget."""
    module, weights, args, ref = zoo_case(name, int8)
    view = build_view(main_func(module))
    p = next(q for q in (plan(view.graph, b) for b in (4096, 16384, 65536)) if q.fits)
    res = run_loop_module(lower(module, p.budget), weights, args)
    assert_measured_as_planned(res, ref, p)


def _loop_context() -> Context:
    from xdsl.dialects.arith import Arith
    from xdsl.dialects.linalg import Linalg
    from xdsl.dialects.memref import MemRef
    from xdsl.dialects.scf import Scf

    from tigris_ir.dialects.loop import Loop
    from tigris_ir.dialects.rtile import RTile

    ctx = Context()
    for d in (Builtin, Func, nn.NN, Loop, RTile, MemRef, Scf, Arith, Linalg):
        ctx.load_dialect(d)
    return ctx


def test_loop_ir_prints_and_parses_back():
    module = zoo_case("resnet", True)[0]
    m = lower(module, 2048)  # paced chains, an accumulated GlobalAveragePool
    text = str(m)
    again = Parser(_loop_context(), text).parse_module()
    again.verify()
    assert str(again) == text
    assert "loop.accumulate" in text and "loop.finish" in text and "scf.for" in text
    assert "rtile.kernel" in text and "rtile.micro" in text  # the kernels, printed and parsed


def test_the_arena_verifier_names_the_buffers():
    from xdsl.dialects import memref
    from xdsl.dialects.builtin import IntegerAttr, i64

    from tigris_ir.dialects.loop import OFFSET_ATTR
    from tigris_ir.passes.plan_arena import verify_arena

    module = zoo_case("vgg", False)[0]
    m = lower(module, 8192)
    assert verify_arena(m) == []
    assert verify_arena(m, budget=4096) == [
        "the fast arena of 8192 bytes exceeds the budget of 4096"
    ]
    fn = main_func(m)
    allocs = [
        op
        for op in fn.body.block.ops
        if isinstance(op, memref.AllocOp) and "fast" in str(op.memref.type)
    ]
    a, b = allocs[0], allocs[1]
    b.attributes[OFFSET_ATTR] = a.attributes[OFFSET_ATTR]
    problems = verify_arena(m)
    ta, tb = (x.attributes["loop.tensor"].data for x in (a, b))  # type: ignore[attr-defined]
    assert any(
        f"'{tb}'" in p and f"'{ta}'" in p and "overlap while both are live" in p for p in problems
    ), problems
    b.attributes[OFFSET_ATTR] = IntegerAttr(8, i64)
    assert any("not a multiple of 16" in p for p in verify_arena(m))


def test_the_plan_verifier_catches_a_band_reading_rows_never_loaded():
    from xdsl.dialects import memref

    from tigris_ir.loops.machine import LoopIRError, verify_plan

    module = zoo_case("vgg", False)[0]
    m = lower(module, 8192)
    verify_plan(m)
    # drop the first tile loop's loads: its first conv reads nothing loaded
    loop_op = next(op for op in main_func(m).body.block.ops if op.name == "scf.for")
    copies = [
        op
        for op in loop_op.walk()
        if isinstance(op, memref.CopyOp)
        and "slow" in str(op.source.type)
        and "fast" in str(op.destination.type)
    ]
    for c in copies:
        c.detach()
        c.erase()
    with pytest.raises(LoopIRError, match="which was never loaded or computed"):
        verify_plan(m)


def _conv_relu(budget: int) -> ModuleOp:
    """The lit tests' conv -> relu model (1x3x8x8), lowered and placed."""
    from pathlib import Path

    import onnx

    path = Path(__file__).parent / "lit" / "Inputs" / "conv_relu.onnx"
    return lower(import_model(onnx.load(str(path)), origin=str(path)).module, budget)


def _edited(m: ModuleOp, table: str, old: str, new: str) -> ModuleOp:
    """`m` with one tile table's text edited (the table named by its symbol)."""
    lines = str(m).splitlines()
    hits = [i for i, line in enumerate(lines) if f'sym_name = "{table}"' in line]
    assert len(hits) == 1 and old in lines[hits[0]], (table, old)
    lines[hits[0]] = lines[hits[0]].replace(old, new)
    return Parser(_loop_context(), "\n".join(lines)).parse_module()


def test_the_plan_verifier_names_a_gap_of_a_grid_tile_in_rows_and_columns(
    monkeypatch: pytest.MonkeyPatch,
):
    from tigris_ir.loops.verify import verify_arena
    from tigris_ir.plan import planner

    monkeypatch.setattr(planner, "COLUMN_BANDS", ())  # else a chain in column bands
    m = _conv_relu(384)  # a grid of 4 x 3 tiles, conv_0 and relu_1 in each
    assert verify_arena(m) == []
    gap = _edited(m, "stage0_out_relu1", "[6, 8, 6, 8]]", "[6, 8, 6, 7]]")
    (problem,) = verify_arena(gap)
    assert problem.startswith(
        "loop.band of 'relu_1' (stage 0) has not computed rows [6, 8) x columns [7, 8) of its "
        "output (stage 0 tile 11: the copy of 'conv_0' puts element 220 of 'conv_0' at"
    ), problem


def test_the_plan_verifier_refuses_a_slow_row_written_twice():
    from xdsl.dialects import memref, scf

    from tigris_ir.loops.verify import verify_arena

    m = _conv_relu(1024)  # a line-buffered chain of 3 tiles
    tile_loop = next(op for op in main_func(m).body.block.ops if isinstance(op, scf.ForOp))
    spill = [
        op
        for op in tile_loop.body.block.ops
        if isinstance(op, memref.CopyOp) and "slow" in str(op.destination.type)
    ][-1]
    spill.parent_block().insert_op_after(spill.clone(), spill)  # every tile spills twice
    (problem,) = verify_arena(m)
    assert problem.startswith("chain 0 tile 0: copying 'conv_0' writes slow 'relu_1'"), problem
    assert problem.endswith("a second time"), problem


def test_the_plan_verifier_refuses_a_normal_band_computed_twice():
    from tigris_ir.dialects import loop
    from tigris_ir.loops.verify import verify_arena

    m = _conv_relu(64 * 1024)  # no tile loop: one band op per node
    band = next(op for op in main_func(m).walk() if isinstance(op, loop.BandOp))
    band.parent_block().insert_op_after(band.clone(), band)
    (problem,) = verify_arena(m)
    assert problem.startswith(f"loop.band of '{band.attributes['loop.node'].data}'"), problem  # type: ignore[attr-defined]
    assert "of its output twice" in problem, problem


@functools.cache
def _unet_streamed() -> str:
    """The U-Net (small, int8) at 16K with its input and output streamed: its
    last chain is line-buffered, and a member stage of it holds a channel
    Concat (which recomputes its rows every tile), as placed loop IR text."""
    from tigris_ir.passes.lower_to_loops import LowerToLoopsPass
    from tigris_ir.passes.plan_arena import PlanArenaPass

    m = import_model(zoo.build("unet", size="small", int8=True)).module
    LowerToLoopsPass(budget=16384, stream_input=True, stream_output=True).apply(Context(), m)
    PlanArenaPass().apply(Context(), m)
    return str(m)


def _problems(text: str, *edits: tuple[str, str]) -> list[str]:
    """The plan verifier's findings on `text` with each (old, new) replaced once."""
    from tigris_ir.loops.verify import verify_arena

    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return verify_arena(Parser(_loop_context(), text).parse_module())


def test_a_line_buffered_concat_stage_recomputes_and_the_others_do_not():
    """In a line-buffered chain the ops of a member stage holding a channel
    Concat compute their whole range every tile (spec/tiling.md); every other
    op computes each row once, and a plan that recomputes one is refused, as
    is a recomputation claimed for a stage that holds no Concat or a Concat
    stripped of its claim."""
    text = _unet_streamed()
    assert 'loop.node = "concat_14", loop.recompute = "stage 3"' in text
    assert _problems(text) == []
    out15 = '"chain0_out_conv15", type = memref<8x2xindex>, initial_value = dense<[[0, 5], [5, 9]'
    again = out15.replace("[5, 9]", "[3, 9]")  # tile 1 recomputes conv_15's rows [3, 5)
    twice = "chain 0 tile 1: loop.band of 'conv_15' computes rows [3, 5) of its output twice"
    (problem,) = _problems(text, (out15, again))
    assert problem.startswith(twice), problem
    node15 = 'loop.node = "conv_15"}'
    forged = 'loop.node = "conv_15", loop.recompute = "stage 99"}'
    (problem,) = _problems(text, (out15, again), (node15, forged))
    assert problem.startswith(twice), problem
    (problem,) = _problems(text, (', loop.recompute = "stage 3"', ""))
    assert problem.startswith(
        "chain 0 tile 1: loop.band of 'concat_14' computes rows [2, 6) of its output twice"
    ), problem


def test_a_plan_with_no_arena_does_not_run():
    from xdsl.context import Context

    from tigris_ir.interp.loop_ir import LoopIRError
    from tigris_ir.passes.lower_to_loops import LowerToLoopsPass

    module, weights, args, _ = zoo_case("ds_cnn", True)
    m = module.clone()
    LowerToLoopsPass(budget=2048).apply(Context(), m)
    with pytest.raises(LoopIRError, match="run plan-arena first"):
        run_loop_module(m, weights, args)


# ---------------------------------------------------------------------------
# the other band kinds of the spec's table


KINDS = {
    "rows": """
func.func @main(%a: tensor<64x32xf32>) -> tensor<64x16xf32> {
  %w = nn.weight "w" : tensor<32x16xf32>
  %c = nn.weight "c" : tensor<16xf32>
  %y = nn.gemm %a, %w, %c : (tensor<64x32xf32>, tensor<32x16xf32>, tensor<16xf32>)
     -> tensor<64x16xf32>
  %r = nn.relu %y : (tensor<64x16xf32>) -> tensor<64x16xf32>
  func.return %r : tensor<64x16xf32>
}""",
    "whole_rows": """
func.func @main(%a: tensor<1x16x8x10xf32>) -> tensor<1x16x8x10xf32> {
  %y = nn.softmax %a {axis = 3 : i64} : (tensor<1x16x8x10xf32>) -> tensor<1x16x8x10xf32>
  func.return %y : tensor<1x16x8x10xf32>
}""",
    "reshape": """
func.func @main(%a: tensor<1x16x8x4xf32>) -> tensor<1x16x32xf32> {
  %r = nn.relu %a : (tensor<1x16x8x4xf32>) -> tensor<1x16x8x4xf32>
  %y = nn.reshape %r : (tensor<1x16x8x4xf32>) -> tensor<1x16x32xf32>
  func.return %y : tensor<1x16x32xf32>
}""",
    "axis": """
func.func @main(%a: tensor<1x8x16x4xf32>) -> tensor<1x16x8x4xf32> {
  %y = nn.transpose %a {perm = array<i64: 0, 2, 1, 3>}
     : (tensor<1x8x16x4xf32>) -> tensor<1x16x8x4xf32>
  func.return %y : tensor<1x16x8x4xf32>
}""",
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_matrix_rows_whole_rows_reshape_and_axis_bands(kind: str):
    ctx = Context()
    for d in (Builtin, Func, nn.NN):
        ctx.load_dialect(d)
    module = Parser(ctx, KINDS[kind]).parse_module()
    fn = main_func(module)
    view = build_view(fn)
    rng = np.random.default_rng(0)
    weights = {
        op.ref.data: rng.standard_normal(nn.shape_of(op.result)).astype(np.float32)
        for op in fn.walk()
        if isinstance(op, nn.WeightOp)
    }
    args = [rand(a.type, rng) for a in fn.body.block.args]  # type: ignore[arg-type]
    ref = run_function(fn, weights, args)
    p = plan(view.graph, 1024)
    assert kind in [st.strategy for st in p.stages]
    assert_runs_as_planned(module, weights, args, ref, p)
    assert_measured_as_planned(run_loop_module(lower(module, 1024), weights, args), ref, p)
