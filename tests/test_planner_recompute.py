"""Recomputation as a choice: stages of patches (2D grids spanning several
window ops, each patch recomputing the overlap of its cone with its
neighbours') beside line-buffered chains, chosen by the planner's cost
(`planner` module docstring). The cost's figures on a case computed by hand;
on zoo models, plans whose patches lower the single-SRAM peak run in the
loop-level interpreter and the C with the planned figures and the untiled
reference's output (int8 bit-exact)."""

from __future__ import annotations

import numpy as np
import pytest
import zoo
from test_planner_slow_budget import _case, _check
from xdsl.context import Context

from tigris_ir.plan import planner
from tigris_ir.plan.graph import GraphBuilder
from tigris_ir.plan.ir import main_func
from tigris_ir.plan.nn_graph import build_view
from tigris_ir.plan.planner import (
    PATCH_WINDOWS,
    _Ctx,
    _grid,
    _strips,
    _windows,
    min_single_budget,
    plan,
)
from tigris_ir.plan.scratch import REREAD_SHARE
from tigris_ir.plan.tiling import GraphTables, build_band


def _two_convs():
    """x (1, 4, 4, 16) int8 -> 3x3 conv -> 3x3 conv (same padding, 16
    channels): each conv 4 * 4 * 16 * 9 * 16 = 36864 MACs."""
    b = GraphBuilder(elem_bytes=1)
    x = b.input("x", (1, 4, 4, 16))
    y = b.conv(x, 16, 3, 1)
    b.output(b.conv(y, 16, 3, 1))
    return b.build()


def test_the_cost_of_recomputing_halos_on_a_hand_computed_case():
    g = _two_convs()
    assert [n.macs for n in g.nodes] == [36864, 36864]
    model = build_band(g, 0, 2)
    # strips of one output row (a 600-byte budget): output row r reads the
    # first conv's rows [r-1, r+2) clipped to [0, 4): 2 + 3 + 3 + 2 = 10 rows
    # computed for 4 distinct, so 36864 * (10 - 4) / 4 MACs recomputed; its
    # input rows [r-2, r+3) clipped: 3 + 4 + 4 + 3 = 14 rows of 64 bytes.
    s = _strips(model, 600)
    assert s is not None and (s.tile_h, s.tiles) == (1, 4)
    assert s.recomputed == 36864 * (10 - 4) // 4 == 55296
    assert s.reads == 14 * 64 == 896
    # two patches of 4 rows x 2 columns (an 800-byte budget): the first conv
    # computes columns [0, 3) and [1, 4) over 4 rows, 24 cells for 16, and
    # each patch loads input columns [0, 4), 16 cells of 16 bytes.
    p = _grid(model, 800)
    assert p is not None and (p.tile_h, p.tile_w, p.tiles) == (4, 2, 2)
    assert p.recomputed == 36864 * (24 - 16) // 16 == 18432
    assert p.reads == 2 * 16 * 16 == 512
    # the cost stage formation weighs a tiled stage at: bytes loaded, the
    # 256 output bytes written once, mac_weight bytes per recomputed MAC, and
    # the weights of both convolutions (2 x 2304 bytes) the 3 tiles after the
    # first read again, at 1/REREAD_SHARE (1/8) of a byte each
    assert REREAD_SHARE == 8
    for w in (1, 2):
        ctx = _Ctx(g, GraphTables(g), 600, mac_weight=w)
        assert ctx.tiled_cost(0, 2) == 896 + 256 + w * 55296 + 3 * 2 * 2304 // 8


def _patch_windows(g, p) -> int:
    """The most window ops one 2D stage of the plan spans."""
    return max(
        (_windows(build_band(g, s.start, s.stop)) for s in p.stages if s.strategy == "grid"),
        default=0,
    )


@pytest.mark.parametrize(
    ("name", "int8"),
    [("mobilenet_v2_035", True), ("vgg", True), ("mobilenet_v2_035", False)],
    ids=["mobilenet_v2_035-int8", "vgg-int8", "mobilenet_v2_035-f32"],
)
def test_patches_lower_the_single_sram_and_run_as_planned(
    name: str, int8: bool, monkeypatch: pytest.MonkeyPatch
):
    """With the input resident, patches spanning several window ops fit a
    single SRAM smaller than the line-buffered plans of whole rows can (the
    choice picks them: recomputed MACs > 0); the loop IR runs the plan at its
    planned figures with the reference's output, and at the line-buffered
    plans' smallest budget the choice still recomputes no more than they do.
    (Column bands and window feeders are switched off: they reach these
    budgets too, and the choice would take them.)"""
    module, weights, args, ref = _case(name, int8)
    g = build_view(main_func(module)).graph
    monkeypatch.setattr(planner, "WINDOW_FEEDERS", False)
    with_bands = min_single_budget(g)
    monkeypatch.setattr(planner, "COLUMN_BANDS", ())
    least = min_single_budget(g)
    lined = min_single_budget(g, patch_windows=1)
    assert with_bands <= least < lined
    p, s = _check(module, weights, args, ref, least, 0)
    assert p.fits and s is not None and p.recomputed_macs > 0
    assert 2 <= _patch_windows(g, p) <= PATCH_WINDOWS
    assert not plan(g, least, slow_budget=0, patch_windows=1).fits
    q, s = _check(module, weights, args, ref, lined, 0)
    assert q.fits and s is not None
    assert q.recomputed_macs <= plan(g, lined, slow_budget=0, patch_windows=1).recomputed_macs


def test_patch_plans_run_as_planned_in_the_c(monkeypatch: pytest.MonkeyPatch):
    """The C of a plan of patches over several window ops (MobileNetV2-0.35
    int8, small, at its smallest single SRAM) gives the reference output bit
    for bit with the interpreter's measured figures, and tigris-analyze
    reports the recomputed MACs the plan counts."""
    from tigris_ir.backend.c.build import run_c
    from tigris_ir.interp.loop_ir import run_loop_module
    from tigris_ir.passes.lower_gebp import tile_and_lower
    from tigris_ir.passes.lower_to_loops import LowerToLoopsPass
    from tigris_ir.passes.plan_arena import PlanArenaPass
    from tigris_ir.reference.executor import module_layouts, to_boundary, to_internal

    monkeypatch.setattr(planner, "COLUMN_BANDS", ())  # they would win at this budget
    monkeypatch.setattr(planner, "WINDOW_FEEDERS", False)  # as would window feeders
    module, weights, args, ref = _case("mobilenet_v2_035", True)
    g = build_view(main_func(module)).graph
    budget = min_single_budget(g)
    p = plan(g, budget, slow_budget=0)
    assert _patch_windows(g, p) >= 2 and p.recomputed_macs > 0
    m = module.clone()
    LowerToLoopsPass(budget=budget, slow_budget=0).apply(Context(), m)
    tile_and_lower(m)
    PlanArenaPass().apply(Context(), m)
    res = run_loop_module(m, weights, args)
    np.testing.assert_array_equal(res.outputs[0], ref[0])
    assert res.stats.fast_peak == p.peak
    in_lay, out_lay = module_layouts(main_func(m))
    got, stats = run_c(
        m, weights, [to_boundary(args[0], in_lay[0])], variant=("bounds", "stats"), strict=True
    )
    np.testing.assert_array_equal(to_internal(got[0], out_lay[0]), ref[0])
    assert stats == res.stats


def test_analyze_reports_the_macs_patches_recompute(capsys, tmp_path, monkeypatch):
    """tigris-analyze --json at the smallest single SRAM with the input
    resident (chains in whole rows: no column bands nor window feeders, so
    that stages of patches set it): the stages of patches carry the recomputed MACs, which
    add up with the chains' to the plan's total."""
    import json

    from tigris_ir.frontend.onnx_import import import_model
    from tigris_ir.plan import planner
    from tigris_ir.tools import tigris_analyze

    monkeypatch.setattr(planner, "COLUMN_BANDS", ())
    monkeypatch.setattr(planner, "WINDOW_FEEDERS", False)
    model = zoo.build("vgg", size="small", int8=True)
    g = build_view(main_func(import_model(model).module)).graph
    budget = min_single_budget(g)
    p = plan(g, budget, slow_budget=0)
    assert p.recomputed_macs > 0
    f = tmp_path / "m.onnx"
    f.write_bytes(model.SerializeToString())
    assert tigris_analyze.run([str(f), "-m", str(budget), "--slow-budget", "0", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    chained = {s["name"] for s in r["stages"] if s["chain"]}
    own = sum(s["recompute_macs"] for s in r["stages"] if s["name"] not in chained)
    assert own + sum(c["recompute_macs"] for c in r["chains"]) == r["recompute_macs"]
    assert r["recompute_macs"] == p.recomputed_macs
    grids = [s for s in p.stages if s.strategy == "grid" and s.recomputed_macs]
    assert grids and own >= sum(s.recomputed_macs for s in grids)


def test_the_smallest_sram_search_caps_the_recomputed_macs():
    """min_single_budget(max_recompute=f) counts a plan as fitting only if it
    recomputes at most a fraction f of the MACs: with no recomputation
    allowed its plan recomputes nothing and needs more SRAM than the search
    at any MAC cost, whose plan recomputes."""
    module, _, _, _ = _case("vgg", True)
    g = build_view(main_func(module)).graph
    least = min_single_budget(g)
    capped = min_single_budget(g, max_recompute=0.0)
    assert least < capped
    free = plan(g, least, slow_budget=0)
    none = plan(g, capped, slow_budget=0)
    assert free.recomputed_macs > 0 and none.fits and none.recomputed_macs == 0
