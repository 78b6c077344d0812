"""The verification of a placed loop-level plan: the arena's checks
(`tigris_ir.loops.arena.arena_problems`) and, when they pass, the compute-free
run of the loop machine (`tigris_ir.loops.machine.verify_plan`). `plan-arena`
runs it, and so do `tigris-run` and the C printer before anything runs or
prints.
"""

from __future__ import annotations

from xdsl.dialects import func, memref
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.utils.exceptions import PassFailedException

from tigris_ir.dialects import loop
from tigris_ir.loops.arena import arena_problems, int_attr, planned
from tigris_ir.loops.machine import verify_plan
from tigris_ir.loops.schedule import PlanRunError
from tigris_ir.plan.ir import BUDGET_ATTR, SLOW_BUDGET_ATTR, main_func
from tigris_ir.plan.memory import parse_budget


def budget_for(module: ModuleOp, fn: func.FuncOp, option: int | str | None) -> int | None:
    """The option, else the module's `tile.budget`, else the plan's."""
    if option not in (None, "", 0):
        try:
            return parse_budget(option)  # type: ignore[arg-type]
        except ValueError as e:
            raise PassFailedException(str(e)) from None
    attr = module.attributes.get(BUDGET_ATTR)
    if isinstance(attr, IntegerAttr):
        return int(attr.value.data)
    return planned(fn).get("budget")


def verify_arena(module: ModuleOp, budget: int | None = None) -> list[str]:
    """Every problem of a planned loop module (empty when it may run)."""
    fn = main_func(module)
    problems = arena_problems(fn, budget if budget is not None else budget_for(module, fn, None))
    slow_budget = module.attributes.get(SLOW_BUDGET_ATTR)
    slow = int_attr(fn, loop.SLOW_ARENA_ATTR)
    if isinstance(slow_budget, IntegerAttr) and slow is not None:
        if slow > slow_budget.value.data:
            problems.append(
                f"the slow arena of {slow} bytes exceeds the slow budget of "
                f"{slow_budget.value.data}"
            )
    if problems:
        return problems
    try:
        verify_plan(module)
    except PlanRunError as e:
        return [str(e)]
    return []


def is_lowered(fn: func.FuncOp) -> bool:
    return any(isinstance(op, loop.BandComputeOp | memref.AllocOp) for op in fn.walk()) or any(
        loop.space_of(a.type) for a in fn.body.block.args
    )
