"""The interpreter of the loop level the pipeline produces below the tile IR
(`lower-to-loops`, `gebp-tile`, `lower-gebp`, `plan-arena`), run by xDSL's
interpreter framework on numpy.

It is the loop machine of `tigris_ir.loops.machine` (one functions class per
dialect, memrefs as numpy views of the fast and slow arenas, the traffic
counters as state) with the compute added: a band op evaluates its `nn` op on
the band with one vectorised numpy call (`band_exec`); the matrix product of a
register-tiled convolution runs the loops of its `rtile.kernel`
(`rtile_exec`: row blocks, K blocks, panels, micro and edge tiles), a
register-tiled Gemm or MatMul its `nn` op's semantics. The measured fast peak, slow peak,
reads and writes are the arenas' and the copies' own figures. A plan runs
after `plan-arena` verified it, so this run tracks nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from tigris_ir.dialects import loop, nn
from tigris_ir.interp import band_exec
from tigris_ir.interp.program import RunResult, RunStats
from tigris_ir.loops.machine import LoopIRError, Machine, Ref
from tigris_ir.plan.band import Band

__all__ = ["LoopIRError", "Interpreting", "run_loop_module"]


class Interpreting(Machine):
    """The loop machine that computes."""

    def __init__(
        self, module: ModuleOp, weights: Mapping[str, np.ndarray], plan: bool = True
    ):
        super().__init__(module, weights, tracked=False, plan=plan)

    def compute(
        self,
        op: loop.BandComputeOp,
        nn_op: nn.NNOp,
        ins: list[Ref],
        outs: list[Ref],
        held: list[Band],
        out: Band,
    ) -> None:
        if isinstance(op, loop.FinishOp):
            assert isinstance(nn_op, nn.GlobalAveragePoolOp)
            outs[0].data[...] = band_exec.finish(nn_op, ins[0].data)
        elif isinstance(op, loop.AccumulateOp):
            assert isinstance(nn_op, nn.GlobalAveragePoolOp)
            band_exec.accumulate(nn_op, ins[0].data, outs[0].data)
        else:
            res = band_exec.compute(nn_op, [r.data for r in ins], held, out)
            for r, v in zip(outs, res):
                r.data[...] = v


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
    )
    return RunResult(outs, stats)
