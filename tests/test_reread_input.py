"""Streamed inputs that may be read again (`reread_input`, `--reread-input`).

A streamed input read once runs its readers in bands of whole rows. One that
can be read again (a frame buffer, flash) lets them tile in 2D and in column
bands, each window of rows and columns asked of `tigris_input_window`.
Checked against the untiled reference (int8 bit-exact) with the measured
figures equal to the planned ones (fast peak, slow traffic, rows and bytes
asked of the stream): in the loop-level interpreter, the host C and under
QEMU on a Cortex-M55.
"""

from __future__ import annotations

import numpy as np
import pytest
import zoo
from ops_oracle import boundary_reference
from test_channel_groups import run_as_planned
from xdsl.context import Context

from tigris_ir.backend.c import cortex
from tigris_ir.backend.c.network import print_network
from tigris_ir.frontend.onnx_import import Imported, import_model
from tigris_ir.passes.boundary import set_int8_boundary
from tigris_ir.passes.lower_gebp import tile_and_lower
from tigris_ir.passes.lower_to_loops import LowerToLoopsPass
from tigris_ir.passes.plan_arena import PlanArenaPass
from tigris_ir.plan.ir import REREAD_INPUT_ATTR, STREAM_INPUT_ATTR, main_func
from tigris_ir.plan.nn_graph import build_view
from tigris_ir.plan.planner import Plan, min_single_budget, plan
from tigris_ir.reference.executor import run_function
from tigris_ir.rtile import targets as tg

MISSING = cortex.tools_available()


def _model(name: str, int8: bool) -> Imported:
    imported = import_model(zoo.build(name, size="small", int8=int8))
    if int8:
        set_int8_boundary(imported.module)
    return imported


def _args(module) -> list[np.ndarray]:
    rng = np.random.default_rng(11)
    out = []
    for a in main_func(module).body.block.args:
        t = a.type
        shape = tuple(t.get_shape())  # type: ignore[attr-defined]
        if "i8" in str(t.get_element_type()):  # type: ignore[attr-defined]
            out.append(rng.integers(-128, 128, shape).astype(np.int8))
        else:
            out.append(rng.standard_normal(shape).astype(np.float32))
    return out


def _lowered(imported: Imported, budget: int, slow: int | None, cpu: str | None = None):
    m = imported.module.clone()
    LowerToLoopsPass(
        budget=budget, slow_budget="" if slow is None else slow, reread_input=True
    ).apply(Context(), m)
    assert REREAD_INPUT_ATTR in m.attributes and STREAM_INPUT_ATTR in m.attributes
    tile_and_lower(m, target=cpu) if cpu else tile_and_lower(m)
    PlanArenaPass().apply(Context(), m)
    return m


def _windows(g, p: Plan) -> int:
    """Rows of the input asked more than once, or in windows of columns:
    the rows and bytes asked beyond one pass over the whole input."""
    (x,) = g.inputs
    t = g.tensors[x]
    assert p.stream_bytes != t.nbytes or p.stream_rows != t.shape[1]
    return p.stream_rows - t.shape[1]


# (model, int8, slow budget, fast budget; None: the smallest single SRAM)
CASES = [
    ("mobilenet_v2", True, 0, None),
    ("mobilenet_v2", False, 0, None),
    ("resnet", True, 0, None),
    ("resnet", False, None, 3000),
]


@pytest.mark.parametrize(
    ("name", "int8", "slow", "budget"),
    CASES,
    ids=[f"{n}-{'int8' if q else 'f32'}-{'one-arena' if s == 0 else 'slow'}" for n, q, s, _ in
         CASES],
)
def test_an_input_read_again_runs_as_planned(
    name: str, int8: bool, slow: int | None, budget: int | None
):
    """Where the input may be read again, the units reading it tile it in
    windows (column bands here): in one SRAM the smallest budget is below
    the one of an input read once; the plan runs as planned in the
    interpreter and as C (its header declaring the window callback), equal
    to the untiled reference, the rows and bytes asked of the stream the
    planned ones."""
    imported = _model(name, int8)
    fn = main_func(imported.module)
    g = build_view(fn).graph
    if budget is None:
        budget = min_single_budget(g, stream_input=True, reread_input=True)
        assert budget < min_single_budget(g, stream_input=True)
    p = plan(g, budget, slow_budget=slow, stream_input=True, reread_input=True)
    assert p.fits and p.reread_input and p.peak <= budget
    assert _windows(g, p) >= 0
    assert any(c.tile_w for c in p.chains if g.inputs[0] in c.inputs)
    once = plan(g, budget, slow_budget=slow, stream_input=True)
    assert not once.fits or once.stream_rows == g.tensors[g.inputs[0]].shape[1]
    m = _lowered(imported, budget, slow)
    args = _args(m)
    ref = run_function(fn, imported.weights, args)
    s = run_as_planned(m, imported.weights, args, ref, p, budget)
    assert (s.stream_rows, s.stream_bytes) == (p.stream_rows, p.stream_bytes)
    assert s.stream_rows_by == (p.stream_rows,)
    source = print_network(m, weights=imported.weights)
    assert "_input_window(int input, int first_row, int rows, int first_col" in source.h


def test_an_input_read_once_asks_no_window():
    """Without `reread_input` the same model reads each row of its input
    once, in whole rows, and its C declares no window callback."""
    imported = _model("mobilenet_v2", True)
    g = build_view(main_func(imported.module)).graph
    budget = min_single_budget(g, stream_input=True)
    p = plan(g, budget, slow_budget=0, stream_input=True)
    (x,) = g.inputs
    assert (p.stream_rows, p.stream_bytes) == (g.tensors[x].shape[1], g.tensors[x].nbytes)
    m = imported.module.clone()
    LowerToLoopsPass(budget=budget, slow_budget=0, stream_input=True).apply(Context(), m)
    tile_and_lower(m)
    PlanArenaPass().apply(Context(), m)
    assert REREAD_INPUT_ATTR not in m.attributes
    assert "_input_window" not in print_network(m, weights=imported.weights).h


@pytest.mark.skipif(MISSING is not None, reason=f"no Cortex-M cross tools here: {MISSING}")
def test_an_input_read_again_on_the_board():
    """The same plan for a Cortex-M55, its input in the harness's frame
    buffer asked for in windows: bit-exact, the planned fast peak, the rows
    and bytes asked the planned ones."""
    imported = _model("mobilenet_v2", True)
    g = build_view(main_func(imported.module)).graph
    budget = min_single_budget(g, stream_input=True, reread_input=True)
    p = plan(g, budget, slow_budget=0, stream_input=True, reread_input=True)
    m = _lowered(imported, budget, 0, "cortex-m55")
    source = print_network(m, weights=imported.weights)
    x = _args(m)
    ref = boundary_reference(m, imported.weights, x)
    run = cortex.run_on_target(source, tg.get_target("cortex-m55"), x, stats=True)
    assert run.outputs[0].tobytes() == ref[0].tobytes()
    assert run.stats is not None and run.stats.fast_peak == p.peak
    assert (run.stats.stream_rows, run.stats.stream_bytes) == (p.stream_rows, p.stream_bytes)


@pytest.mark.parametrize("flag", ["--stream-input", "--reread-input", "--stream-output"])
def test_a_planning_option_without_a_budget_is_a_diagnostic(flag: str, tmp_path, capsys):
    """tigris-run without -m runs the reference: an option that shapes a plan
    is named, with what to give, exit status 1 (not silently ignored)."""
    from tigris_ir.tools.tigris_run import main

    path = tmp_path / "m.onnx"
    zoo.write("mobilenet_v2", path, size="small", int8=True)
    assert main([str(path), flag, "--random-input", "0"]) == 1
    err = capsys.readouterr().err
    assert f"{flag} shapes a plan: give -m BUDGET" in err
    assert "Traceback" not in err


def test_a_budget_that_fits_only_an_input_read_again_says_so():
    """A single-arena plan of an input streamed once that does not fit names
    the smallest budget beside the one of an input read again, and the
    option that gives it; a plan already reading it again does not."""
    imported = _model("mobilenet_v2", True)
    g = build_view(main_func(imported.module)).graph
    once = min_single_budget(g, stream_input=True)
    again = min_single_budget(g, stream_input=True, reread_input=True)
    assert again < once
    p = plan(g, again, slow_budget=0, stream_input=True)
    assert not p.fits and p.min_single == once and p.min_single_reread == again
    assert f"({again} bytes, " in p.message
    assert "if the input can be read again: --reread-input" in p.message
    q = plan(g, again - 16, slow_budget=0, stream_input=True, reread_input=True)
    assert not q.fits and q.min_single == again and q.min_single_reread is None
