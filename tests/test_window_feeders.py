"""Window feeders: a 1x1 op read only through a window (MobileNetV2's
expansion before its depthwise) recomputed in pixel blocks.

Where a single-arena plan fits no other way, a chain may recompute such an
op every tile for the rows its window reads and every pixel block for the
window's columns behind the block, so that it holds one block's window of
the op's many channels instead of line buffers of them. Checked against the
untiled reference (int8 bit-exact) with the measured figures equal to the
planned ones: in the loop-level interpreter, the host C and under QEMU on a
Cortex-M55; and the plan verifier refuses a feeder stripped of its claim.
"""

from __future__ import annotations

import numpy as np
import pytest
import zoo
from ops_oracle import boundary_reference
from test_channel_groups import run_as_planned
from test_loop_level import _problems
from xdsl.context import Context

from tigris_ir.backend.c import cortex
from tigris_ir.backend.c.network import print_network
from tigris_ir.dialects import loop
from tigris_ir.frontend.onnx_import import Imported, import_model
from tigris_ir.interp.loop_ir import run_loop_module
from tigris_ir.passes.boundary import set_int8_boundary
from tigris_ir.passes.lower_gebp import tile_and_lower
from tigris_ir.passes.lower_to_loops import LowerToLoopsPass
from tigris_ir.passes.plan_arena import PlanArenaPass
from tigris_ir.plan.ir import main_func
from tigris_ir.plan.nn_graph import build_view
from tigris_ir.plan.planner import _Ctx, min_single_budget, plan
from tigris_ir.plan.scratch import block_cols, fed_recomputed, run_blocks, window_feeders
from tigris_ir.plan.tiling import GraphTables, map_range
from tigris_ir.reference.executor import run_function
from tigris_ir.rtile import targets as tg

MISSING = cortex.tools_available()

SMALL_BUDGET = 2560
"""MobileNetV2-0.35 (small, int8, input streamed once) fits one SRAM of this
many bytes only with a window feeder (3232 without)."""


def _model(size: str) -> Imported:
    imported = import_model(zoo.build("mobilenet_v2_035", size=size, int8=True))
    set_int8_boundary(imported.module)
    return imported


def _args(module) -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    shape = tuple(main_func(module).body.block.args[0].type.get_shape())  # type: ignore[attr-defined]
    return [rng.integers(-128, 128, shape).astype(np.int8)]


def _lowered(imported: Imported, budget: int, cpu: str | None = None, **kw):
    m = imported.module.clone()
    LowerToLoopsPass(budget=budget, slow_budget=0, stream_input=True, **kw).apply(Context(), m)
    tile_and_lower(m, target=cpu) if cpu else tile_and_lower(m)
    PlanArenaPass().apply(Context(), m)
    return m


def test_the_feeders_are_the_expansions_and_hold_their_window():
    """In the band from the input to MobileNetV2's first 9 x 9 block, the
    feeders are the six 1x1 expansions, each read by a 3x3 depthwise (the
    first convolution reads the input through a window: not one). A
    blocked feeder holds the window's columns behind a block's, any other
    blocked buffer the block's; the MACs a feeder recomputes follow from the
    blocks' windows (by hand here for one)."""
    g = build_view(main_func(_model("full").module)).graph
    names = [n.name for n in g.nodes]
    part = g.part(0, names.index("conv_24"))
    model = _Ctx(part, GraphTables(part), 1 << 30).band(0, len(part.nodes))
    assert not isinstance(model, str)
    feeders = window_feeders(model)
    assert sorted(part.nodes[k].name for k in feeders) == sorted(
        ["conv_3", "conv_6", "conv_10", "conv_13", "conv_17", "conv_21"]
    )
    ids = {n: t for t, n in enumerate(model.names)}
    window = {t: c for _, _, ins in model.ops for t, _, c in ins}
    s2, s1 = window[ids["conv_3"]], window[ids["conv_6"]]  # read by a stride-2 and a stride-1
    assert (s2[1], s2[2], s1[1], s1[2]) == (3, 2, 3, 1)
    assert block_cols(model, ids["conv_3"], 4, s2) == 9
    assert block_cols(model, ids["conv_6"], 4, s1) == 6
    assert block_cols(model, ids["conv_4"], 4) == 4
    assert block_cols(model, ids["conv_21"], 8, window[ids["conv_21"]]) == 17  # of 18 columns
    # conv_6 (36 x 36, 8 -> 48 channels) computing every row once, in blocks of 4
    rows = list(model.heights)
    k6 = next(k for k, outs, _ in model.ops if outs == (ids["conv_6"],))
    cols = sum(b - a for x, y in run_blocks(0, 36, 4) for a, b in (map_range(s1, x, y, 36),))
    assert cols == 36 + 2 * 8  # each inner block edge read again on both sides
    macs = part.nodes[k6].macs
    assert fed_recomputed(model, frozenset([k6]), 4, rows) == macs * (36 * cols - 36 * 36) // (
        36 * 36
    )


def test_mobilenet_v2_035_int8_fits_8_kib_with_its_input_read_again():
    """The issue's target: MobileNetV2-0.35-144 int8 (full size, input read
    again) in one SRAM of 8 KiB. Its first chain, from the input to the
    first 9 x 9 block, runs its six expansions as window feeders in column
    bands; the plan runs as planned in the interpreter, equal to the
    untiled reference; at the old smallest budget the plan has no feeder."""
    imported = _model("full")
    g = build_view(main_func(imported.module)).graph
    budget = 8 * 1024
    p = plan(g, budget, slow_budget=0, stream_input=True, reread_input=True)
    assert p.fits and p.peak <= budget
    c = p.chains[0]
    assert len(c.feeders) == 6 and c.tile_w and c.pixel_block
    assert g.nodes[c.stop - 1].name == "conv_23"
    assert not plan(g, budget, slow_budget=0, stream_input=True).fits  # read once: no
    old = plan(g, 12240, slow_budget=0, stream_input=True, reread_input=True)
    assert old.fits and not any(c.feeders for c in old.chains)
    m = _lowered(imported, budget, reread_input=True)
    x = _args(m)
    ref = run_function(main_func(imported.module), imported.weights, x)
    res = run_loop_module(m, imported.weights, x)
    np.testing.assert_array_equal(res.outputs[0], ref[0])
    assert res.stats.fast_peak == res.stats.arena_bytes == p.peak
    assert (res.stats.stream_rows, res.stats.stream_bytes) == (p.stream_rows, p.stream_bytes)


def test_a_plan_with_feeders_runs_as_planned_in_c():
    """The small model, input streamed once, at the budget only a feeder
    fits (a whole-row chain, blocks of one column): the interpreter and the
    host C both equal the untiled reference and measure the planned peak;
    the lowered IR shows the decision (the feeder's claim, first in its
    block loop, and a block buffer of the window's columns)."""
    imported = _model("small")
    fn = main_func(imported.module)
    g = build_view(fn).graph
    p = plan(g, SMALL_BUDGET, slow_budget=0, stream_input=True)
    assert p.fits and any(c.feeders for c in p.chains)
    m = _lowered(imported, SMALL_BUDGET)
    x = _args(m)
    run_as_planned(m, imported.weights, x, run_function(fn, imported.weights, x), p, SMALL_BUDGET)
    blocks = [
        op
        for op in m.walk()
        if op.name == "scf.for" and loop.PIXEL_BLOCK_ATTR in op.attributes
    ]
    claims = [
        [
            o.attributes.get(loop.RECOMPUTE_ATTR)
            for o in b.body.block.ops
            if isinstance(o, loop.BandOp)
        ]
        for b in blocks
    ]
    fed = [c for c in claims if c and c[0] is not None]
    assert fed and all(c[0].data == loop.FEEDER and not any(c[1:]) for c in fed)  # type: ignore[union-attr]
    (chain,) = [c for c in p.chains if c.feeders]
    shapes = {
        op.attributes[loop.TENSOR_ATTR].data: op.results[0].type.get_shape()  # type: ignore[attr-defined]
        for op in m.walk()
        if op.name == "memref.alloc" and loop.TENSOR_ATTR in op.attributes
    }
    for k in chain.feeders:
        o = g.nodes[k].outputs[0]
        assert o in chain.blocked and shapes[o][2] == chain.blocked_cols[o] < g.tensors[o].width


def test_a_feeder_stripped_of_its_claim_is_refused():
    """The plan verifier takes a feeder's recomputation only where the plan
    claims it: without the claim, the feeder's columns computed again by the
    next block are refused."""
    imported = _model("small")
    m = imported.module.clone()
    LowerToLoopsPass(budget=SMALL_BUDGET, slow_budget=0, stream_input=True).apply(Context(), m)
    PlanArenaPass().apply(Context(), m)
    text = str(m)
    claim = f', loop.recompute = "{loop.FEEDER}"'
    assert text.count(claim) == 1 and _problems(text) == []
    (problem,) = _problems(text, (claim, ""))[:1]
    assert "twice" in problem, problem


def test_feeders_only_below_the_budgets_that_fit_without():
    """The search with feeders runs only where the plan without them does not
    fit: at the smallest budget of the small model without them the plan is
    the same with or without, and one byte less takes a feeder."""
    g = build_view(main_func(_model("small").module)).graph
    low = min_single_budget(g, stream_input=True)
    assert low == SMALL_BUDGET
    p = plan(g, 3232, slow_budget=0, stream_input=True)
    assert p.fits and not any(c.feeders for c in p.chains)
    q = plan(g, 3231, slow_budget=0, stream_input=True)
    assert q.fits and any(c.feeders for c in q.chains)


@pytest.mark.skipif(MISSING is not None, reason=f"no Cortex-M cross tools here: {MISSING}")
def test_feeders_on_the_board_equal_the_untiled_reference():
    """The same plan built for a Cortex-M55 (fixed-point requantization), its
    input streamed by the harness: bit-exact, the planned fast peak."""
    imported = _model("small")
    g = build_view(main_func(imported.module)).graph
    p = plan(g, SMALL_BUDGET, slow_budget=0, stream_input=True)
    m = _lowered(imported, SMALL_BUDGET, "cortex-m55")
    source = print_network(m, weights=imported.weights)
    x = _args(m)
    ref = boundary_reference(m, imported.weights, x)
    run = cortex.run_on_target(source, tg.get_target("cortex-m55"), x, stats=True)
    assert run.outputs[0].tobytes() == ref[0].tobytes()
    assert run.stats is not None and run.stats.fast_peak == p.peak
