"""`plan-arena`: static offsets for every buffer of the loop IR, then checks.

Each fast buffer (a `"fast"` `memref.alloc`, or an argument of an in-place
plan) gets `loop.offset`, its byte offset in one arena, and the function
`loop.arena`, the arena's size; slow buffers likewise (`loop.slow_arena`).
A buffer is live from its allocation to its `memref.dealloc` (an argument:
to its last use), counted in top-level ops of the function, so the live sums
are exactly the planner's: a normal stage's buffers as its cost model frees
them, a tile loop's buffers for the whole loop. Offsets come from
`tigris_ir.loops.arena.place_lifetimes` (the planner's placement) within the live peak.

The verifier then rejects, naming the buffers: a buffer without an aligned
offset, two live buffers that overlap, a fast arena above the budget or other
than the planned peak; and, by a run of the loop IR that computes nothing
(`tigris_ir.loops.machine.verify_plan`), naming the band op, tile and rows: a
band that reads rows outside the band it holds, never loaded or computed, or
stale (another tile's); rows that are spilled or returned but never computed;
a row computed twice where the plan claims once; a slow element written twice.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IntegerAttr, ModuleOp, i64
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from tigris_ir.dialects import loop
from tigris_ir.loops.arena import Lifetime, body_scopes, lifetimes, offset_of, place_lifetimes
from tigris_ir.loops.verify import budget_for, is_lowered, verify_arena
from tigris_ir.plan.ir import main_func

__all__ = ["PlanArenaPass", "assign_offsets", "budget_for", "is_lowered", "verify_arena"]


def assign_offsets(fn: func.FuncOp) -> None:
    """Write `loop.offset` on every buffer and the arena sizes on `fn`."""
    lives = lifetimes(fn)
    offsets, sizes = place_lifetimes(lives)
    arg_attrs: list[dict[str, IntegerAttr]] = [{} for _ in fn.body.block.args]
    for lv in lives:
        off = IntegerAttr(offsets[lv.key], i64)
        if isinstance(lv.owner, Operation):
            lv.owner.attributes[loop.OFFSET_ATTR] = off
        else:
            arg_attrs[int(lv.key.removeprefix("arg"))][loop.OFFSET_ATTR] = off
    fn.arg_attrs = ArrayAttr([DictionaryAttr(dict(a)) for a in arg_attrs])
    _place_bodies(fn, lives)
    fn.attributes[loop.ARENA_ATTR] = IntegerAttr(sizes["fast"], i64)
    fn.attributes[loop.SLOW_ARENA_ATTR] = IntegerAttr(sizes["slow"], i64)


def _place_bodies(fn: func.FuncOp, lives: list[Lifetime]) -> None:
    """Each If / Loop body's buffers at offsets within its node's workspace
    (outer bodies first, so a nested workspace has its place)."""
    for sc in body_scopes(fn.body.block, lives):
        if not sc.lives:
            continue
        base = offset_of(sc.workspace, fn) if sc.workspace is not None else None
        if base is None:
            raise PassFailedException(f"plan-arena: {sc.path} has buffers but no workspace")
        offsets, sizes = place_lifetimes(sc.lives)
        if sizes["slow"]:
            raise PassFailedException(f"plan-arena: {sc.path} has buffers in slow memory")
        for lv in sc.lives:
            assert isinstance(lv.owner, Operation)
            lv.owner.attributes[loop.OFFSET_ATTR] = IntegerAttr(base + offsets[lv.key], i64)


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
