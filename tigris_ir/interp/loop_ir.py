"""The interpreter of the loop level the pipeline produces below the tile IR
(`lower-to-loops`, `gebp-tile`, `lower-gebp`, `plan-arena`), run by xDSL's
interpreter framework on numpy: the one executor of plans.

It is the loop machine of `tigris_ir.loops.machine` (one functions class per
dialect, memrefs as numpy views of the fast and slow arenas, the traffic
counters as state) with the compute added, one hook per band op: `loop.band`
evaluates its `nn` op on the band with one vectorised numpy call
(`band_exec`, one kernel per `nn` op kind); the matrix product of a
register-tiled convolution runs the loops of its `rtile.kernel`
(`rtile_exec`: row blocks, K blocks, panels, micro and edge tiles), a
register-tiled Gemm or MatMul its `nn` op's semantics; `loop.accumulate` and
`loop.finish` are the two halves of an accumulated GlobalAveragePool. The
measured fast peak, slow peak, reads and writes are the arenas' and the
copies' own figures. A plan runs after `plan-arena` verified it, so this run
tracks nothing.

`run_plan` runs a plan the planner made (`tigris_ir.plan.planner.plan`): the
pipeline tigris-run takes (`lower-to-loops` of that plan, `gebp-tile`,
`lower-gebp`, `plan-arena`), then the machine.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from tigris_ir.dialects import nn
from tigris_ir.interp import band_exec
from tigris_ir.interp.run_stats import RunResult, RunStats
from tigris_ir.loops.machine import LoopIRError, Machine, Ref
from tigris_ir.loops.schedule import PlanRunError, schedule
from tigris_ir.passes.lower_gebp import tile_and_lower
from tigris_ir.passes.lower_to_loops import lower_program
from tigris_ir.passes.plan_arena import PlanArenaPass
from tigris_ir.plan.band import Band
from tigris_ir.plan.ir import main_func
from tigris_ir.plan.nn_graph import build_view
from tigris_ir.plan.planner import Plan

__all__ = ["Interpreting", "LoopIRError", "lower_plan", "run_loop_module", "run_plan"]


class Interpreting(Machine):
    """The loop machine that computes."""

    def __init__(
        self, module: ModuleOp, weights: Mapping[str, np.ndarray], plan: bool = True
    ):
        super().__init__(module, weights, tracked=False, plan=plan)

    def band(
        self, nn_op: nn.NNOp, ins: list[Ref], outs: list[Ref], held: list[Band], out: Band
    ) -> None:
        res = band_exec.compute(nn_op, [r.data for r in ins], held, out)
        for r, v in zip(outs, res):
            r.data[...] = v

    def accumulate(self, nn_op: nn.NNOp, band: Ref, acc: Ref) -> None:
        assert isinstance(nn_op, nn.GlobalAveragePoolOp)
        band_exec.accumulate(nn_op, band.data, acc.data)

    def finish(self, nn_op: nn.NNOp, acc: Ref, out: Ref) -> None:
        assert isinstance(nn_op, nn.GlobalAveragePoolOp)
        out.data[...] = band_exec.finish(nn_op, acc.data)


# ---------------------------------------------------------------------------
# entry points


def run_loop_module(
    module: ModuleOp,
    weights: Mapping[str, np.ndarray],
    inputs: Sequence[np.ndarray],
) -> RunResult:
    """Run a lowered, arena-planned module on internal-layout inputs."""
    m = Interpreting(module, weights)
    outs = m.run(inputs)
    stats = RunStats(
        m.fast.peak,
        m.fast.high,
        m.fast.size,
        m.slow.peak,
        m.reads,
        m.writes,
        m.tiles,
        m.stream_rows,
        m.stream_bytes,
        m.out_rows,
        m.stream_rows_by,
        m.out_rows_by,
    )
    return RunResult(outs, stats)


def lower_plan(module: ModuleOp, p: Plan, target: str = "host") -> ModuleOp:
    """A copy of `module` whose main function is plan `p` as loop IR, as the
    pipeline makes it: `lower-to-loops` of that plan (its schedule; a
    `PlanRunError` if it does not fit or its line buffers read rows never
    computed), `gebp-tile=target=TARGET` and `lower-gebp`, then `plan-arena`,
    which places the buffers and verifies the plan (a `PassFailedException`
    naming what it reads or writes wrongly)."""
    m = module.clone()
    fn = main_func(m)
    if any(isinstance(op, nn.ControlFlowOp) for op in fn.walk()):
        raise PlanRunError(
            "a function with If or Loop bodies is lowered from the plans of all its bodies: "
            "run lower-to-loops on the module"
        )
    view = build_view(fn)
    lower_program(schedule(view, p), view, m, fn)
    tile_and_lower(m, target=target)
    PlanArenaPass().apply(Context(), m)
    return m


def run_plan(
    module: ModuleOp,
    p: Plan,
    weights: Mapping[str, np.ndarray],
    inputs: Sequence[np.ndarray],
) -> RunResult:
    """Run plan `p` of `module`'s main function on internal-layout inputs at
    the loop level (`lower_plan`, then the machine): outputs and measured
    figures."""
    return run_loop_module(lower_plan(module, p), weights, inputs)
