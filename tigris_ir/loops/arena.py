"""The arena of loop-level IR: buffer lifetimes read off the IR, their static
placement, the checks of a placed plan (bounds, overlaps, budget), and the
byte arena a run allocates its buffers in.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import func
from xdsl.dialects import memref as mr
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    StringAttr,
)
from xdsl.ir import Attribute, Operation

from tigris_ir.dialects import loop
from tigris_ir.dialects.loop import ARENA_ATTR, OFFSET_ATTR, SLOW_ARENA_ATTR
from tigris_ir.loops.schedule import Buffer, PlanRunError
from tigris_ir.plan.arena import Interval, live_peak, place
from tigris_ir.plan.memory import ALIGN, align


@dataclass
class FastArena:
    """One byte buffer; views at static offsets; the live set is checked."""

    size: int
    mem: np.ndarray = field(init=False)
    live: dict[str, tuple[int, int]] = field(default_factory=dict[str, tuple[int, int]])
    peak: int = 0
    high: int = 0
    now: int = 0

    def __post_init__(self) -> None:
        self.mem = np.zeros(self.size, dtype=np.uint8)

    def alloc(self, buf: Buffer, where: str) -> np.ndarray:
        lo, hi = buf.offset, buf.offset + buf.size
        if buf.offset % ALIGN or hi > self.size:
            raise PlanRunError(
                f"{where}: buffer '{buf.key}' [{lo}, {hi}) is outside the arena of "
                f"{self.size} bytes"
            )
        for key, (a, b) in self.live.items():
            if a < hi and lo < b:
                raise PlanRunError(
                    f"{where}: buffer '{buf.key}' [{lo}, {hi}) overlaps live buffer '{key}' "
                    f"[{a}, {b})"
                )
        self.live[buf.key] = (lo, hi)
        self.now += buf.size
        self.peak = max(self.peak, self.now)
        self.high = max(self.high, hi)
        return self.view(buf)

    def view(self, buf: Buffer) -> np.ndarray:
        raw = self.mem[buf.offset : buf.offset + buf.nbytes]
        return raw.view(buf.dtype).reshape(buf.shape)

    def free(self, key: str) -> None:
        lo, hi = self.live.pop(key)
        self.now -= hi - lo

    def reset(self) -> None:
        self.live.clear()
        self.now = 0


@dataclass(frozen=True)
class Lifetime:
    """A buffer of the loop IR: its memory space, aligned size and the
    top-level op positions it is live over (function arguments too)."""

    key: str
    tensor: str
    space: str
    size: int
    first: int
    last: int
    owner: object


def _memref_bytes(t: Attribute) -> int:
    assert isinstance(t, MemRefType)
    dt = numpy_dtype(t.element_type)
    return align(math.prod(t.get_shape()) * dt.itemsize)


def numpy_dtype(elt: Attribute) -> np.dtype:
    if isinstance(elt, IndexType):
        return np.dtype(np.int64)
    return loop.element_dtype(elt)


def lifetimes(fn: func.FuncOp) -> list[Lifetime]:
    """Every fast and slow buffer of a lowered function: `memref.alloc` from
    its position to its `memref.dealloc` (or the end), an argument from the
    start to its last use. Positions count the function body's top-level ops,
    so a buffer used inside a tile loop is live over the whole loop."""
    ops = list(fn.body.block.ops)
    top: dict[int, int] = {}
    for pos, op in enumerate(ops):
        for inner in op.walk():
            top[id(inner)] = pos
    end = len(ops)
    out: list[Lifetime] = []
    names = arg_names(fn)
    for i, a in enumerate(fn.body.block.args):
        space = loop.space_of(a.type)
        if not space or space == loop.STREAM.data:
            continue  # a constant, or a streamed input: no storage
        uses = [top[id(u.operation)] for u in a.uses]
        returned = any(isinstance(u.operation, func.ReturnOp) for u in a.uses)
        last = end if returned else max(uses, default=0)
        out.append(Lifetime(f"arg{i}", names[i], space, _memref_bytes(a.type), 0, last, a))
    for pos, op in enumerate(ops):
        if not isinstance(op, mr.AllocOp):
            continue
        space = loop.space_of(op.memref.type)
        if not space or space == loop.STREAM.data:
            continue  # a streamed output: no storage
        last = end
        for u in op.memref.uses:
            if isinstance(u.operation, mr.DeallocOp):
                last = top[id(u.operation)]
        tensor = op.attributes.get(loop.TENSOR_ATTR)
        name = tensor.data if isinstance(tensor, StringAttr) else f"buffer{pos}"
        out.append(
            Lifetime(f"alloc{pos}", name, space, _memref_bytes(op.memref.type), pos, last, op)
        )
    return out


def arg_names(fn: func.FuncOp) -> list[str]:
    a = fn.attributes.get("nn.input_names")
    n = len(fn.body.block.args)
    if isinstance(a, ArrayAttr) and len(a.data) == n:
        return [x.data if isinstance(x, StringAttr) else f"arg{i}" for i, x in enumerate(a.data)]
    return [f"arg{i}" for i in range(n)]


def _components(items: Sequence[Interval]) -> list[list[Interval]]:
    """Groups of buffers whose lifetimes chain together (units never share one)."""
    out: list[list[Interval]] = []
    end = -1
    for it in sorted(items, key=lambda i: (i.first, i.last)):
        if not out or it.first > end:
            out.append([])
        out[-1].append(it)
        end = max(end, it.last)
    return out


def place_lifetimes(lives: Sequence[Lifetime]) -> tuple[dict[str, int], dict[str, int]]:
    """Static offsets per buffer key, and the arena size per space: each
    space's buffers placed within its live peak (the planner's accounting)."""
    offsets: dict[str, int] = {}
    sizes: dict[str, int] = {}
    for space in ("fast", "slow"):
        items = [Interval(lv.key, lv.size, lv.first, lv.last) for lv in lives if lv.space == space]
        peak = live_peak(items)
        top = 0
        for group in _components(items):
            got, hi = place(group, peak)
            offsets.update(got)
            top = max(top, hi)
        sizes[space] = top
    return offsets, sizes


def offset_of(lv: Lifetime, fn: func.FuncOp) -> int | None:
    if isinstance(lv.owner, Operation):
        a = lv.owner.attributes.get(OFFSET_ATTR)
        return int(a.value.data) if isinstance(a, IntegerAttr) else None
    i = int(lv.key.removeprefix("arg"))
    attrs = fn.arg_attrs
    if isinstance(attrs, ArrayAttr) and i < len(attrs.data):
        d = attrs.data[i]
        if isinstance(d, DictionaryAttr):
            a = d.data.get(OFFSET_ATTR)
            if isinstance(a, IntegerAttr):
                return int(a.value.data)
    return None


def int_attr(fn: func.FuncOp, key: str) -> int | None:
    a = fn.attributes.get(key)
    return int(a.value.data) if isinstance(a, IntegerAttr) else None


def planned(fn: func.FuncOp) -> dict[str, int]:
    """The plan's figures recorded on a lowered function (`loop.plan`)."""
    a = fn.attributes.get(loop.PLAN_ATTR)
    if not isinstance(a, DictionaryAttr):
        return {}
    return {k: int(v.value.data) for k, v in a.data.items() if isinstance(v, IntegerAttr)}


def arena_problems(fn: func.FuncOp, budget: int | None) -> list[str]:
    """What is wrong with a planned arena: buffers without an aligned offset,
    live buffers that overlap, an arena above the budget or not the planned
    peak. Empty when the arena is sound."""
    lives = lifetimes(fn)
    problems: list[str] = []
    where: dict[str, int] = {}
    for lv in lives:
        off = offset_of(lv, fn)
        if off is None:
            problems.append(
                f"{lv.space} buffer '{lv.tensor}' has no {OFFSET_ATTR} (run plan-arena)"
            )
        elif off % ALIGN or off < 0:
            problems.append(
                f"{lv.space} buffer '{lv.tensor}' is at offset {off}, not a multiple of {ALIGN}"
            )
        else:
            where[lv.key] = off
    for space, attr in (("fast", ARENA_ATTR), ("slow", SLOW_ARENA_ATTR)):
        size = int_attr(fn, attr)
        group = [lv for lv in lives if lv.space == space and lv.key in where]
        for i, a in enumerate(group):
            a0 = where[a.key]
            if size is not None and a0 + a.size > size:
                problems.append(
                    f"{space} buffer '{a.tensor}' [{a0}, {a0 + a.size}) ends "
                    f"past the {space} arena of {size} bytes"
                )
            for b in group[i + 1 :]:
                b0 = where[b.key]
                if (
                    a.first <= b.last
                    and b.first <= a.last
                    and a0 < b0 + b.size
                    and b0 < a0 + a.size
                ):
                    problems.append(
                        f"{space} buffers '{a.tensor}' [{a0}, {a0 + a.size}) and '{b.tensor}' "
                        f"[{b0}, {b0 + b.size}) overlap while both are live"
                    )
    fast = int_attr(fn, ARENA_ATTR)
    plan_figs = planned(fn)
    items = [Interval(lv.key, lv.size, lv.first, lv.last) for lv in lives if lv.space == "fast"]
    peak = live_peak(items)
    if fast is None:
        problems.append(f"the function has no {ARENA_ATTR} (run plan-arena)")
    else:
        if budget is not None and fast > budget:
            problems.append(f"the fast arena of {fast} bytes exceeds the budget of {budget}")
        if "peak" in plan_figs and peak != plan_figs["peak"]:
            problems.append(
                f"the buffers' live peak is {peak} bytes but the plan's is {plan_figs['peak']}"
            )
        if fast > peak:
            problems.append(
                f"no static placement fits the live peak of {peak} bytes: the arena needs {fast}"
            )
    return problems


