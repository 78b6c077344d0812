"""Planner regressions: line buffers over non-monotone ranges, chains whose
estimates fit but whose exact tiles do not, the accumulator of an int8
GlobalAveragePool, and pointwise ops of rank 2 banding along their last axis.
Every plan here runs at the loop level with measured == planned."""

from __future__ import annotations

import math

import numpy as np
import pytest
from onnx import ModelProto, TensorProto, helper, numpy_helper
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp, TensorType
from xdsl.ir import Block, Region

from tigris_ir.dialects import nn
from tigris_ir.frontend.onnx_import import import_model
from tigris_ir.interp import band_exec
from tigris_ir.interp.loop_ir import run_plan
from tigris_ir.plan.ir import main_func
from tigris_ir.plan.memory import align
from tigris_ir.plan.nn_graph import build_view
from tigris_ir.plan.planner import Plan, plan
from tigris_ir.plan.tiling import build_band, monotone_ranges
from tigris_ir.reference.executor import run_function

# ---------------------------------------------------------------------------
# helpers


def runs_as_planned(module: ModuleOp, weights: dict[str, np.ndarray], p: Plan, seed: int = 0):
    """The plan's outputs equal the untiled reference (float32 to 1e-5, ints
    exactly) and its measured memory and traffic equal the planned figures."""
    fn = main_func(module)
    rng = np.random.default_rng(seed)
    args = []
    for a in fn.body.block.args:
        shape, dt = nn.shape_of(a), nn.dtype_of(a)
        if dt == np.float32:
            args.append(rng.standard_normal(shape).astype(np.float32))
        else:
            args.append(rng.integers(-128, 128, shape).astype(dt))
    ref = run_function(fn, weights, args)
    res = run_plan(module, p, weights, args)
    for r, y in zip(ref, res.outputs, strict=True):
        if r.dtype == np.float32:
            np.testing.assert_allclose(y, r, rtol=1e-5, atol=1e-5 * float(np.max(np.abs(r))))
        else:
            np.testing.assert_array_equal(y, r)
    s = res.stats
    assert s.arena_bytes == s.fast_peak == p.peak <= p.budget
    assert (s.slow_peak, s.slow_reads, s.slow_writes) == (p.slow_peak, p.slow_reads, p.slow_writes)
    return res


def conv_model(shape: tuple[int, ...], layers: list[tuple]) -> ModelProto:
    """A float32 ONNX chain of Convs: (cout, (kh, kw), stride, dilation, pads)."""
    rng = np.random.default_rng(0)
    nodes, inits = [], []
    cin, x = shape[1], "x"
    for i, (cout, (kh, kw), s, d, pads) in enumerate(layers):
        w = rng.standard_normal((cout, cin, kh, kw)).astype(np.float32)
        b = rng.standard_normal(cout).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        nodes.append(
            helper.make_node(
                "Conv",
                [x, f"w{i}", f"b{i}"],
                [f"y{i}"],
                kernel_shape=[kh, kw],
                strides=[s, s],
                dilations=[d, d],
                pads=list(pads),
            )
        )
        x, cin = f"y{i}", cout
    graph = helper.make_graph(
        nodes,
        "convs",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, None)],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


# ---------------------------------------------------------------------------
# line buffers over non-monotone ranges


def test_monotone_ranges():
    # starts that come back down: the earlier tiles read from the lowest start on
    assert monotone_ranges([(1, 2), (0, 3), (1, 4), (2, 5)]) == [(0, 2), (0, 3), (1, 4), (2, 5)]
    # a range that goes back: rows read again stay, the end never drops
    assert monotone_ranges([(0, 5), (1, 6), (0, 5)]) == [(0, 5), (0, 6), (0, 6)]
    # empty ranges need nothing; one between reads of the same rows holds them
    assert monotone_ranges([(0, 0), (0, 0), (0, 1), (1, 2), (2, 2)]) == [
        (0, 0),
        (0, 0),
        (0, 1),
        (1, 2),
        (2, 2),
    ]
    assert monotone_ranges([(0, 3), (5, 5), (2, 4)]) == [(0, 3), (2, 3), (2, 4)]


def test_a_reader_of_no_rows_reads_nothing():
    """Output rows of a conv that only read its input's padding: the ops
    upstream compute nothing for that tile (an empty range), not the rows
    the window would span."""
    module = import_model(conv_model((1, 5, 9, 4), CRASH_LAYERS)).module
    g = build_view(main_func(module)).graph
    model = build_band(g, 0, 3)
    first = dict(zip(model.names, model.tile_ranges(1)[0]))
    assert first["conv_1"][0] == first["conv_1"][1]
    assert first["conv_0"][0] == first["conv_0"][1] and first["x"][0] == first["x"][1]


# ---------------------------------------------------------------------------
# a chain whose estimate fits but whose exact line buffers do not

CRASH_LAYERS = [
    (5, (1, 1), 1, 1, (1, 0, 3, 0)),
    (4, (5, 3), 2, 3, (0, 0, 2, 3)),
    (4, (1, 3), 1, 1, (2, 1, 1, 3)),
]
"""Conv 1x1 pads (1, 0, 3, 0), Conv 5x3 stride 2 dilation 3 pads (0, 0, 2, 3),
Conv 1x3 pads (2, 1, 1, 3) on a 9 x 4 map of 5 channels (1x9x4x5 channels-last)."""


def test_a_chain_whose_exact_tiles_do_not_fit_is_planned_otherwise():
    """At 1744 bytes the line buffers estimated from the affine offsets fit
    (x: 8 rows) but the exact run holds all 9 rows of x: stage formation
    rules the chain out and searches the cuts again (it used to assert)."""
    imported = import_model(conv_model((1, 5, 9, 4), CRASH_LAYERS))
    g = build_view(main_func(imported.module)).graph
    p = plan(g, 1744)
    assert p.fits and p.peak <= 1744
    runs_as_planned(imported.module, imported.weights, p)


@pytest.mark.parametrize("budget", [1600, 1744, 1900, 2100, 2600])
def test_dilated_padded_convs_run_as_planned_at_several_budgets(budget: int):
    imported = import_model(conv_model((1, 5, 9, 4), CRASH_LAYERS))
    p = plan(build_view(main_func(imported.module)).graph, budget)
    if p.fits:
        runs_as_planned(imported.module, imported.weights, p)
    else:
        assert p.failed_min_budget is not None and p.failed_min_budget > budget


# ---------------------------------------------------------------------------
# the accumulator of an int8 GlobalAveragePool


def q8(shape: tuple[int, ...], scale: float, zp: int = 0) -> TensorType:
    return nn.tensor_type(shape, np.int8, nn.QuantAttr(scale, zp))


def gap_module(x: TensorType, y: TensorType) -> tuple[ModuleOp, nn.GlobalAveragePoolOp]:
    block = Block(arg_types=[x])
    op = nn.GlobalAveragePoolOp.create(operands=[block.args[0]], result_types=[y])
    block.add_op(op)
    block.add_op(func.ReturnOp(op.results[0]))
    fn = func.FuncOp("main", FunctionType.from_lists([x], [y]), Region(block))
    return ModuleOp([fn]), op


def tie_inputs(rng: np.random.Generator, h: int, c: int) -> np.ndarray:
    """int8 columns of h rows whose integer mean is k + 1/2: the quantized mean
    (at the input's scale) sits on a rounding tie."""
    a = rng.integers(60, 128, (1, h, 1, c)).astype(np.int64)
    tot = a.sum(axis=(1, 2))
    a[0, 0, 0] += ((tot // h) * h + h // 2 - tot)[0]
    return np.clip(a, -128, 127).astype(np.int8)


def test_a_float64_accumulator_is_exact_at_the_bound():
    """2^21 - 4096 positions of the extreme values 255 and +-1 steps, banded
    unevenly: the float64 partial sums are the exact multiple of ulp(scale)
    (`band_exec.accumulate`), so the mean is the reference's, bit for bit."""
    h, w = 1020, 2052  # 2,093,040 < 2^21 positions
    scale = float(np.float32(0.1))  # 24 significant bits: every product rounds
    op = gap_module(q8((1, h, w, 2), scale, -128), q8((1, 1, 1, 2), scale / 3, 5))[1]
    rng = np.random.default_rng(0)
    a = rng.choice(np.array([127, -127, -128], np.int8), (1, h, w, 2))
    acc = np.zeros((1, 1, 1, 2), np.float64)
    bounds = [0, 1, 300, 301, 777, h]
    for lo, hi in zip(bounds, bounds[1:]):
        band_exec.accumulate(op, a[:, lo:hi], acc)
    x = (a.astype(np.int64) + 128).astype(np.float32) * np.float32(scale)
    u = math.ulp(scale) * 2.0**29  # the ulp of the float32 scale
    units = (x.astype(np.float64) / u).astype(np.int64)
    assert np.array_equal(units.astype(np.float64) * u, x.astype(np.float64))  # multiples of u
    exact = units.sum(axis=(1, 2), keepdims=True)
    assert int(np.abs(exact).max()) < 2**53
    assert np.array_equal(acc, exact.astype(np.float64) * u)
    np.testing.assert_array_equal(band_exec.finish(op, acc), op.reference([a])[0])


def test_a_float64_accumulator_matches_the_reference_at_ties():
    rng = np.random.default_rng(1)
    for _ in range(40):
        s = float(np.float32(rng.uniform(0.01, 0.2)))
        op = gap_module(q8((1, 32, 1, 64), s), q8((1, 1, 1, 64), s))[1]
        a = tie_inputs(rng, 32, 64)
        acc = np.zeros((1, 1, 1, 64), np.float64)
        for lo in range(0, 32, 7):
            band_exec.accumulate(op, a[:, lo : lo + 7], acc)
        np.testing.assert_array_equal(band_exec.finish(op, acc), op.reference([a])[0])


def test_an_accumulated_int8_mean_at_ties_equals_the_reference():
    rng = np.random.default_rng(1)
    for _ in range(20):
        s = float(np.float32(rng.uniform(0.01, 0.2)))
        module, op = gap_module(q8((1, 32, 1, 64), s), q8((1, 1, 1, 64), s))
        view = build_view(main_func(module))
        p = plan(view.graph, 1024)
        if p.stages[0].strategy != "accumulate" or p.stages[0].num_tiles < 2:
            raise RuntimeError(f"expected accumulated bands: {p.describe()}")
        a = tie_inputs(rng, 32, 64)
        res = run_plan(module, p, {}, [a])
        np.testing.assert_array_equal(res.outputs[0], op.reference([a])[0])


# ---------------------------------------------------------------------------
# pointwise ops on a row vector band along its last axis


def lowered_run(module: ModuleOp, weights: dict[str, np.ndarray], budget: int, args):
    """The loop IR of the plan at `budget`, placed and run."""
    from xdsl.context import Context

    from tigris_ir.interp.loop_ir import run_loop_module
    from tigris_ir.passes.lower_gebp import tile_and_lower
    from tigris_ir.passes.lower_to_loops import LowerToLoopsPass
    from tigris_ir.passes.plan_arena import PlanArenaPass

    m = module.clone()
    LowerToLoopsPass(budget=budget).apply(Context(), m)
    tile_and_lower(m)
    PlanArenaPass().apply(Context(), m)
    return run_loop_module(m, weights, args)


def test_a_row_vector_dequantize_bands_along_its_last_axis():
    x = q8((1, 1000), 0.05, 3)
    y = nn.tensor_type((1, 1000), np.float32)
    block = Block(arg_types=[x])
    op = nn.DequantizeOp.create(operands=[block.args[0]], result_types=[y])
    block.add_op(op)
    block.add_op(func.ReturnOp(op.results[0]))
    module = ModuleOp([func.FuncOp("main", FunctionType.from_lists([x], [y]), Region(block))])
    g = build_view(main_func(module)).graph
    assert plan(g, 4096).fits  # a whole run needs 1008 + 4000 bytes
    p = plan(g, 1024)
    (st,) = p.stages
    assert st.strategy == "strips" and st.num_tiles > 1
    assert all(t.out[1] - t.out[0] <= st.tile_h for t in st.tiles)
    runs_as_planned(module, {}, p)
    a = np.random.default_rng(0).integers(-128, 128, (1, 1000)).astype(np.int8)
    res = lowered_run(module, {}, 1024, [a])
    np.testing.assert_array_equal(res.outputs[0], op.reference([a])[0])
    assert res.stats.fast_peak == p.peak and res.stats.slow_reads == p.slow_reads


def test_the_trailing_dequantize_no_longer_sets_mobilenet_int8_min_budget():
    """MobileNetV2 0.35 int8 ends in a float32 DequantizeLinear of its 1 x 1000
    logits: run whole it needs 1008 + 4000 bytes, banded along the 1000 it
    needs a few rows, and the smallest budget drops below the whole run."""
    import zoo

    from tigris_ir.plan.planner import min_budget

    imported = import_model(zoo.build("mobilenet_v2_035", size="full", int8=True))
    g = build_view(main_func(imported.module)).graph
    last = g.nodes[-1]
    assert last.op == "nn.dequantize" and g.tensors[last.outputs[0]].shape == (1, 1000)
    whole = sum(align(g.tensors[x].nbytes) for x in (*last.inputs, *last.outputs))
    low = min_budget(g)
    assert low < whole
    p = plan(g, low)
    assert p.fits and p.stages[-1].tiled and p.stages[-1].num_tiles > 1


# ---------------------------------------------------------------------------
# activations computed in place


def conv_relu_chain(h: int = 16, w: int = 8, c: int = 4, extra_reader: bool = False):
    """x -> conv 3x3 -> relu -> conv 3x3 -> relu, float32 (1, h, w, c); with
    `extra_reader` the first conv's output is also a second output."""
    from tigris_ir.plan.graph import GraphBuilder

    b = GraphBuilder(elem_bytes=4)
    x = b.input("x", (1, h, w, c))
    a = b.conv(x, c, 3, 1)
    y = b.relu(b.conv(b.relu(a), c, 3, 1))
    if extra_reader:
        b.output(y, a)
    else:
        b.output(y)
    return b.build()


def test_an_activation_shares_its_input_buffer():
    g = conv_relu_chain()
    row = 8 * 4 * 4
    p = plan(g, 8 * row)
    assert p.fits and len(p.chains) == 1
    c = p.chains[0]
    assert c.line_buffered and c.tile_h == 1
    assert c.shared == {"relu1": "conv0", "relu3": "conv2"}
    # x: 3 rows; conv0 and relu1: one buffer of 3 rows (relu1 keeps 2 for conv2);
    # conv2 and relu3: one buffer of 1 row
    assert c.band_rows["relu1"] == c.band_rows["conv0"] == 3
    assert c.band_rows["relu3"] == c.band_rows["conv2"] == 1
    assert c.peak == (3 + 3 + 1) * row


def test_no_buffer_is_shared_with_a_tensor_read_elsewhere():
    g = conv_relu_chain(extra_reader=True)
    for budget in (2048, 4096, 8192):
        p = plan(g, budget)
        for u in (*p.stages, *p.chains):
            assert "relu1" not in u.shared


@pytest.mark.parametrize("budget", [2048, 6144])
def test_in_place_activations_run_as_planned(budget: int):
    """conv, relu and Add chains of the zoo's ResNet (small): plans with shared
    buffers run as loop IR with measured == planned, lowered from the plan
    and by lower-to-loops from the budget alike."""
    import zoo

    imported = import_model(zoo.build("resnet", size="small", int8=False))
    fn = main_func(imported.module)
    p = plan(build_view(fn).graph, budget)
    assert p.fits
    assert any(u.shared for u in (*p.stages, *p.chains))
    planned = runs_as_planned(imported.module, imported.weights, p)
    rng = np.random.default_rng(0)  # the inputs runs_as_planned draws
    args = [rng.standard_normal(nn.shape_of(a)).astype(np.float32) for a in fn.body.block.args]
    # the pipeline's own lower-to-loops (planning from the budget) runs the same plan
    res = lowered_run(imported.module, imported.weights, budget, args)
    np.testing.assert_array_equal(res.outputs[0], planned.outputs[0])
    assert (res.stats.fast_peak, res.stats.slow_reads) == (p.peak, p.slow_reads)
