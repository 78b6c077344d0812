"""`form-stages`: partition the graph into stages under the fast-memory budget."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from tigris_ir.plan_ir import form_stage_ops, planned, stages_in


@dataclass(frozen=True)
class FormStagesPass(ModulePass):
    """Cut the graph into stages (tile.stage) by dynamic programming on slow traffic.

    Each stage either fits the budget or tiles under it; among such partitions
    the cuts minimise slow-memory reads and writes (the runtime's cost model:
    stage inputs loaded, outputs allocated, freed at last use, outputs
    spilled). The budget is the option, else the module's `tile.budget`, else
    256K; it accepts 262144, 256K or 1M.
    """

    name = "form-stages"

    budget: int | str = 0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fn, view, plan = planned(op, self.budget)
        if not stages_in(fn):
            form_stage_ops(fn, view, plan)
