"""Column bands: a line-buffered chain whose line buffers of whole rows do not
fit the fast budget (with slow memory) runs band by band of output columns,
each band a line-buffered run over every row holding only its columns, its
halo columns loaded and recomputed again by the neighbouring band.

Plans that take them are lowered, placed and run by the interpreter and as C,
checked against the untiled reference (int8 bit-exact) with the measured
figures (fast peak, slow peak, slow reads and writes) equal to the planned
ones.
"""

from __future__ import annotations

import numpy as np
import pytest
import zoo
from test_channel_groups import _same, run_as_planned
from test_planner_slow_budget import rand
from xdsl.context import Context

from tigris_ir.dialects import loop
from tigris_ir.frontend.onnx_import import import_model
from tigris_ir.interp.loop_ir import run_loop_module
from tigris_ir.passes.lower_gebp import tile_and_lower
from tigris_ir.passes.lower_to_loops import LowerToLoopsPass
from tigris_ir.passes.plan_arena import PlanArenaPass
from tigris_ir.plan import planner
from tigris_ir.plan.graph import GraphBuilder
from tigris_ir.plan.ir import main_func
from tigris_ir.plan.nn_graph import build_view
from tigris_ir.plan.planner import ChainPlan, Plan, min_single_budget, plan
from tigris_ir.reference.executor import run_function


def _banded(p: Plan) -> list[ChainPlan]:
    return [c for c in p.chains if c.tile_w]


def _check_bands(c: ChainPlan, width: int) -> None:
    """The bands partition the output's columns, outermost; each runs the
    same row tiles over every row."""
    bands: dict[tuple[int, int] | None, list[int]] = {}
    for t in c.tiles:
        bands.setdefault(t.cols, []).append(t.out[0])
    cols = sorted(b for b in bands if b is not None)
    assert len(cols) == len(bands) >= 2
    assert cols[0][0] == 0 and cols[-1][1] == width
    assert all(a[1] == b[0] for a, b in zip(cols, cols[1:]))
    assert max(b - a for a, b in cols) == c.tile_w
    rows = list(bands.values())
    assert all(r == rows[0] for r in rows)
    assert c.num_tiles == len(c.tiles)
    assert "column bands" in c.describe()


def _run_as_planned(
    imported, budget: int, args: list[np.ndarray], slow_budget: int | None = None, stream=False
) -> Plan:
    """Plan, lower and run `imported` at `budget` (and `slow_budget`, its
    input streamed or not) in the interpreter and as C: both equal the
    untiled reference and measure the planned figures."""
    fn = main_func(imported.module)
    ref = run_function(fn, imported.weights, args)
    g = build_view(fn).graph
    p = plan(g, budget, slow_budget=slow_budget, stream_input=stream)
    assert p.fits
    banded = _banded(p)
    assert banded, "the budget was chosen for column bands"
    for c in banded:
        _check_bands(c, g.tensors[c.outputs[0]].width)
    m = imported.module.clone()
    slow = "" if slow_budget is None else slow_budget
    LowerToLoopsPass(budget=budget, slow_budget=slow, stream_input=stream).apply(Context(), m)
    kinds = [
        str(op.attributes[loop.KIND_ATTR]) for op in m.walk() if loop.KIND_ATTR in op.attributes
    ]
    assert sum(loop.COLUMN_BANDS in k for k in kinds) == len(banded)
    tile_and_lower(m)
    PlanArenaPass().apply(Context(), m)
    s = run_as_planned(m, imported.weights, args, ref, p, budget)
    assert s.stream_rows == p.stream_rows
    return p


# (model, int8, budget): small zoo models at budgets where stage formation
# takes chains in column bands
CASES = [
    ("mobilenet_v2", False, 12 * 1024),
    ("mobilenet_v2", True, 3 * 1024),
    ("resnet", False, 2 * 1024),
    ("resnet", False, 4 * 1024),
    ("resnet", False, 6 * 1024),
]


@pytest.mark.parametrize(
    ("name", "int8", "budget"),
    CASES,
    ids=[f"{n}-{'int8' if q else 'f32'}-{b // 1024}K" for n, q, b in CASES],
)
def test_column_band_plans_run_as_planned(name: str, int8: bool, budget: int):
    imported = import_model(zoo.build(name, size="small", int8=int8))
    rng = np.random.default_rng(1)
    args = [rand(a.type, rng) for a in main_func(imported.module).body.block.args]
    _run_as_planned(imported, budget, args)


def test_mobilenet_v2_224_at_64k_runs_its_first_blocks_in_column_bands():
    """MobileNetV2-224 float32 at 64K with slow memory: the stem and the
    first inverted residual blocks (112 and 56 columns, up to 144 channels)
    hold three rows of their expansions only in bands of columns; as such a
    chain they spill no expansion to slow memory, which a grid of patches
    wrote and loaded with its halos (27.2 MB of slow traffic without column
    bands, 14.8 MB with them)."""
    imported = import_model(zoo.build("mobilenet_v2", size="full"))
    x = np.random.default_rng(5).standard_normal((1, 224, 224, 3)).astype(np.float32)
    p = _run_as_planned(imported, 64 * 1024, [x])
    g = build_view(main_func(imported.module)).graph
    first = p.chains[0]
    assert first.tile_w and first.stages[0] == 0
    assert g.tensors[first.outputs[0]].width == 56
    assert p.slow_reads + p.slow_writes < 15_000_000


def _conv_relu() -> GraphBuilder:
    b = GraphBuilder(elem_bytes=4)
    x = b.input("x", (1, 16, 16, 8))
    y = b.relu(b.conv(b.relu(b.conv(x, 16, 3)), 16, 3))
    b.graph_outputs.append(y)
    return b


def test_column_bands_only_where_whole_rows_do_not_fit():
    """x (16 x 16 x 8 float32, rows of 512 bytes) -> 3x3 conv -> relu -> 3x3
    conv -> relu: at 2.5K the first pair's line buffers of whole rows fit;
    at 1.5K only in two bands of 8 columns, which load each column of x once
    and the column on either side of their boundary a second time (16 rows
    of 32 bytes each)."""
    g = _conv_relu().build()
    p = plan(g, 2560)
    assert p.chains[0].inputs == ("x",) and not p.chains[0].tile_w
    p = plan(g, 1536)
    c = p.chains[0]
    assert c.inputs == ("x",) and c.tile_w == 8 and c in _banded(p)
    _check_bands(c, 16)
    assert c.slow_reads == g.tensors["x"].nbytes + 2 * 16 * 32
    assert c.peak <= 1536


# (model, int8, input streamed, column bands lower the smallest single SRAM):
# small zoo models whose plan at their smallest single SRAM takes a chain in
# column bands
SINGLE = [
    ("mobilenet_v2", False, False, True),
    ("mobilenet_v2", True, True, False),
    ("resnet", False, False, True),
]


@pytest.mark.parametrize(
    ("name", "int8", "stream", "lowers"),
    SINGLE,
    ids=[f"{n}-{'int8' if q else 'f32'}-{'stream' if s else 'resident'}" for n, q, s, _ in SINGLE],
)
def test_single_arena_column_bands_run_as_planned(
    name: str, int8: bool, stream: bool, lowers: bool, monkeypatch: pytest.MonkeyPatch
):
    """Without slow memory a chain whose line buffers of whole rows do not
    fit beside the resident tensors runs in column bands too: each band
    copies its columns of the chain's inputs from where they are resident
    and writes its columns of the outputs back (within the one arena). At
    the smallest single SRAM of these models a chain takes them, and the
    plan runs as planned (no slow memory, the planned fast peak and input
    rows), equal to the untiled reference; no band reads the streamed input.
    Without column bands the smallest single SRAM is never smaller (ResNet's:
    44,032 bytes against 33,824; MobileNetV2's float32: 21,744 against 21,664,
    its chains paced within their bands)."""
    imported = import_model(zoo.build(name, size="small", int8=int8))
    fn = main_func(imported.module)
    g = build_view(fn).graph
    budget = min_single_budget(g, stream_input=stream)
    rng = np.random.default_rng(2)
    args = [rand(a.type, rng) for a in fn.body.block.args]
    p = _run_as_planned(imported, budget, args, slow_budget=0, stream=stream)
    assert p.single_arena and p.slow_peak == 0
    assert not stream or not any(set(g.inputs) & set(c.inputs) for c in _banded(p))
    monkeypatch.setattr(planner, "COLUMN_BANDS", ())
    without = min_single_budget(g, stream_input=stream)
    assert without > budget if lowers else without == budget


def test_no_column_bands_when_switched_off(monkeypatch: pytest.MonkeyPatch):
    g = _conv_relu().build()
    budgets = [b for b in range(2048, 16 * 1024, 512) if _banded(plan(g, b))]
    assert budgets
    monkeypatch.setattr(planner, "COLUMN_BANDS", ())
    assert not any(_banded(plan(g, b)) for b in budgets)


def test_a_streamed_input_is_never_read_in_column_bands():
    """Column bands run every row once per band, and a streamed input's rows
    arrive once each: a chain reading it runs in whole rows. ResNet (small,
    float32) with its input streamed, at budgets where the chains after the
    stem take column bands: none reads the input, and the run asks for each
    input row once, as planned."""
    imported = import_model(zoo.build("resnet", size="small"))
    g = build_view(main_func(imported.module)).graph
    height = g.tensors[g.inputs[0]].shape[1]
    banded = 0
    for budget in range(2304, 6 * 1024, 512):
        p = plan(g, budget, stream_input=True)
        assert p.fits and p.stream_rows == height
        assert not any(g.inputs[0] in c.inputs for c in _banded(p))
        banded += len(_banded(p))
    assert banded
    budget = 3072  # the stem's chain took two bands here, asking for every row twice
    m = imported.module.clone()
    LowerToLoopsPass(budget=budget, stream_input=True).apply(Context(), m)
    tile_and_lower(m)
    PlanArenaPass().apply(Context(), m)
    x = rand(main_func(imported.module).body.block.args[0].type, np.random.default_rng(3))
    res = run_loop_module(m, imported.weights, [x])
    _same(res.outputs, run_function(main_func(imported.module), imported.weights, [x]))
    assert res.stats.stream_rows == plan(g, budget, stream_input=True).stream_rows == height


def test_a_streamed_input_that_fits_no_whole_row_is_named_with_its_smallest_budget():
    """Below the smallest budget of a stem reading whole streamed rows, the
    diagnostic names that budget (not that of a 1 x 1 tile, which a streamed
    input cannot take)."""
    imported = import_model(zoo.build("resnet", size="small"))
    g = build_view(main_func(imported.module)).graph
    p = plan(g, 2048, stream_input=True)
    assert not p.fits and p.failed_node == "conv_0"
    assert p.failure == planner.STREAMED_WHY
    assert p.failed_min_budget is not None and p.failed_min_budget > 2048
    assert plan(g, p.failed_min_budget, stream_input=True).fits
