"""`form-stages`: partition the graph into stages under the fast-memory budget."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from tigris_ir.plan.ir import form_stage_ops, planned_scopes, stages_in


@dataclass(frozen=True)
class FormStagesPass(ModulePass):
    """Cut the graph into stages (tile.stage) by dynamic programming on slow traffic.

    Each stage either fits the budget or tiles under it; among such partitions
    the cuts minimise slow-memory reads and writes (the runtime's cost model:
    stage inputs loaded, outputs allocated, freed at last use, outputs
    spilled). The budget is the option, else the module's `tile.budget`, else
    256K; it accepts 262144, 256K or 1M.

    An `nn.if` or `nn.loop` is one op of its stage, and each of its bodies is
    cut into stages of its own (`if0/then/s0`, ...) under what the budget
    leaves it (`tigris_ir.plan.ir.ScopePlan`).
    """

    name = "form-stages"

    budget: int | str = 0
    slow_budget: int | str = ""
    """Bytes of slow memory (empty: unbounded, else the module's `tile.slow_budget`;
    0: none, every tensor in the fast arena)."""
    stream_input: bool = False
    """The model inputs arrive in bands of rows through a callback (recorded
    on the module as `tile.stream_input`)."""
    stream_output: bool = False
    """The model outputs leave in bands of rows through a callback (recorded
    on the module as `tile.stream_output`)."""
    reread_input: bool = False
    """The streamed model inputs may be asked again, in windows of rows and
    columns (a frame buffer or flash); implies `stream_input` (recorded on
    the module as `tile.reread_input`)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for sc in planned_scopes(
            op,
            self.budget,
            self.slow_budget,
            self.stream_input,
            self.stream_output,
            self.reread_input,
        ):
            assert sc.plan is not None
            if not stages_in(sc.block):
                form_stage_ops(sc.block, sc.view, sc.plan, sc.prefix)
