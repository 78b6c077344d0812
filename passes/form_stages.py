"""`form-stages`: partition the graph into stages under the fast-memory budget."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from tigris_ir.plan.ir import PlanOptions, form_stage_ops, stages_in


@dataclass(frozen=True)
class FormStagesPass(PlanOptions, ModulePass):
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

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for sc in self.scopes(op):
            assert sc.plan is not None
            if not stages_in(sc.block):
                form_stage_ops(sc.block, sc.view, sc.plan, sc.prefix)
