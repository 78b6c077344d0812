"""`plan-arena`: static offsets for every buffer of the loop IR, then checks.

Each fast buffer (a `"fast"` `memref.alloc`, or an argument of an in-place
plan) gets `loop.offset`, its byte offset in one arena, and the function
`loop.arena`, the arena's size; slow buffers likewise (`loop.slow_arena`).
A buffer is live from its allocation to its `memref.dealloc` (an argument:
to its last use), counted in top-level ops of the function, so the live sums
are exactly the planner's: a normal stage's buffers as its cost model frees
them, a tile loop's buffers for the whole loop. Offsets come from
`loop_run.place` (the interpreter's own placement) within the live peak.

The verifier then rejects, naming the buffers: a buffer without an aligned
offset, two live buffers that overlap, a fast arena above the budget or other
than the planned peak, and (by a dry run of the loop IR that computes
nothing) a band that reads rows outside the band it holds or rows never
loaded or computed.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IntegerAttr, ModuleOp, i64
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from tigris_ir.dialects import loop
from tigris_ir.interp.loop_ir import dry_run
from tigris_ir.loops.arena import (
    ARENA_ATTR,
    OFFSET_ATTR,
    SLOW_ARENA_ATTR,
    arena_problems,
    int_attr,
    lifetimes,
    place_lifetimes,
    planned,
)
from tigris_ir.loops.schedule import PlanRunError
from tigris_ir.plan.ir import BUDGET_ATTR, SLOW_BUDGET_ATTR, main_func
from tigris_ir.plan.memory import parse_budget


def assign_offsets(fn: func.FuncOp) -> None:
    """Write `loop.offset` on every buffer and the arena sizes on `fn`."""
    lives = lifetimes(fn)
    offsets, sizes = place_lifetimes(lives)
    arg_attrs: list[dict[str, IntegerAttr]] = [{} for _ in fn.body.block.args]
    for lv in lives:
        off = IntegerAttr(offsets[lv.key], i64)
        if isinstance(lv.owner, Operation):
            lv.owner.attributes[OFFSET_ATTR] = off
        else:
            arg_attrs[int(lv.key.removeprefix("arg"))][OFFSET_ATTR] = off
    fn.arg_attrs = ArrayAttr([DictionaryAttr(dict(a)) for a in arg_attrs])
    fn.attributes[ARENA_ATTR] = IntegerAttr(sizes["fast"], i64)
    fn.attributes[SLOW_ARENA_ATTR] = IntegerAttr(sizes["slow"], i64)


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
    slow = int_attr(fn, SLOW_ARENA_ATTR)
    if isinstance(slow_budget, IntegerAttr) and slow is not None:
        if slow > slow_budget.value.data:
            problems.append(
                f"the slow arena of {slow} bytes exceeds the slow budget of "
                f"{slow_budget.value.data}"
            )
    if problems:
        return problems
    try:
        dry_run(module)
    except PlanRunError as e:
        return [str(e)]
    return []


def is_lowered(fn: func.FuncOp) -> bool:
    return any(isinstance(op, loop.BandComputeOp | memref.AllocOp) for op in fn.walk()) or any(
        loop.space_of(a.type) for a in fn.body.block.args
    )


@dataclass(frozen=True)
class PlanArenaPass(ModulePass):
    """Give every fast and slow buffer a static offset, then verify the arena.

    Needs loop IR (run lower-to-loops first). The budget is the option, else
    the module's `tile.budget`, else the one the plan was made for.
    """

    name = "plan-arena"

    budget: int | str = 0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fn = main_func(op)
        if not is_lowered(fn):
            raise PassFailedException("plan-arena needs loop IR: run lower-to-loops first")
        assign_offsets(fn)
        problems = verify_arena(op, budget_for(op, fn, self.budget))
        if problems:
            raise PassFailedException(
                "plan-arena: the arena does not verify:\n  " + "\n  ".join(problems)
            )
