"""The arena of loop-level IR: buffer lifetimes read off the IR, their static
placement, the checks of a placed plan (bounds, overlaps, budget), and the
byte arena a run allocates its buffers in.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import func, scf
from xdsl.dialects import memref as mr
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    StringAttr,
)
from xdsl.ir import Attribute, Block, Operation

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

    def suspend(self, key: str) -> tuple[int, int]:
        """Take a live buffer out of the live set (a workspace while the body
        that lies in it runs); `resume` puts it back."""
        span = self.live.pop(key)
        self.now -= span[1] - span[0]
        return span

    def resume(self, key: str, span: tuple[int, int]) -> None:
        self.live[key] = span
        self.now += span[1] - span[0]

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
        if not a.uses:
            continue  # an input nothing reads (its Shape was folded): no storage
        uses = [top[id(u.operation)] for u in a.uses]
        returned = any(isinstance(u.operation, func.ReturnOp) for u in a.uses)
        last = end if returned else max(uses, default=0)
        out.append(Lifetime(f"arg{i}", names[i], space, _memref_bytes(a.type), 0, last, a))
    return out + block_lifetimes(fn.body.block)


def block_lifetimes(block: Block, prefix: str = "") -> list[Lifetime]:
    """The `memref.alloc`s of one block (a function's, or an If / Loop body's),
    each from its position to its `memref.dealloc` (or the block's end)."""
    ops = list(block.ops)
    top: dict[int, int] = {}
    for pos, op in enumerate(ops):
        for inner in op.walk():
            top[id(inner)] = pos
    end = len(ops)
    out: list[Lifetime] = []
    for pos, op in enumerate(ops):
        if not isinstance(op, mr.AllocOp):
            continue
        space = loop.space_of(op.memref.type)
        if not space or space == loop.STREAM.data:
            continue  # a streamed output: no storage
        last = end
        for u in op.memref.uses:
            if isinstance(u.operation, mr.DeallocOp) and id(u.operation) in top:
                last = top[id(u.operation)]
        tensor = op.attributes.get(loop.TENSOR_ATTR)
        name = tensor.data if isinstance(tensor, StringAttr) else f"buffer{pos}"
        out.append(
            Lifetime(
                f"{prefix}alloc{pos}", name, space, _memref_bytes(op.memref.type), pos, last, op
            )
        )
    return out


@dataclass(frozen=True)
class BodyScope:
    """The buffers of one If / Loop body: they lie in the workspace buffer its
    node's stage holds (`loop.workspace`) and peak at its plan's peak."""

    op: Operation
    """The `scf.if` / `scf.while`."""
    block: Block
    path: str
    planned: int
    workspace: Lifetime | None
    lives: tuple[Lifetime, ...]


def body_blocks(op: Operation) -> list[Block]:
    """The blocks of an If / Loop's bodies: then and else, or the loop's trip."""
    if isinstance(op, scf.WhileOp):
        return [op.after_region.block]
    return [r.block for r in op.regions if r.blocks]


def body_scopes(block: Block, lives: Sequence[Lifetime], prefix: str = "") -> list[BodyScope]:
    """Every body under `block` (depth first), with its workspace among `lives`
    (the enclosing block's lifetimes)."""
    out: list[BodyScope] = []
    for op in block.ops:
        bodies = op.attributes.get(loop.BODIES_ATTR)
        if not isinstance(bodies, ArrayAttr):
            continue
        ws_attr = op.attributes.get(loop.WORKSPACE_ATTR)
        ws_name = ws_attr.data if isinstance(ws_attr, StringAttr) else None
        ws = next((lv for lv in lives if lv.tensor == ws_name), None)
        for j, (b, info) in enumerate(zip(body_blocks(op), bodies.data)):
            assert isinstance(info, DictionaryAttr)
            path = info.data["path"]
            peak = info.data["peak"]
            assert isinstance(path, StringAttr) and isinstance(peak, IntegerAttr)
            key = f"{prefix}{len(out)}.{j}:"
            inner = block_lifetimes(b, key)
            out.append(BodyScope(op, b, path.data, int(peak.value.data), ws, tuple(inner)))
            out.extend(body_scopes(b, inner, key))
    return out


def all_lifetimes(fn: func.FuncOp) -> list[Lifetime]:
    """The function's buffers and those of every If / Loop body in it."""
    lives = lifetimes(fn)
    return lives + [lv for sc in body_scopes(fn.body.block, lives) for lv in sc.lives]


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
    problems += _body_problems(fn, lives)
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




def _body_problems(fn: func.FuncOp, lives: Sequence[Lifetime]) -> list[str]:
    """A body's buffers: fast, placed, within its workspace, not overlapping
    while live, and peaking at the body plan's peak."""
    problems: list[str] = []
    for sc in body_scopes(fn.body.block, lives):
        offs: dict[str, int] = {}
        for lv in sc.lives:
            off = offset_of(lv, fn)
            if lv.space != "fast":
                problems.append(f"{sc.path}: buffer '{lv.tensor}' is in {lv.space} memory")
            elif off is None:
                problems.append(f"{sc.path}: buffer '{lv.tensor}' has no {OFFSET_ATTR}")
            else:
                offs[lv.key] = off
        ws = sc.workspace
        ws_off = offset_of(ws, fn) if ws is not None else None
        if sc.lives and (ws is None or ws_off is None):
            problems.append(f"{sc.path}: the body has buffers but its node no placed workspace")
            continue
        for lv in sc.lives:
            off = offs.get(lv.key)
            if off is None or ws is None or ws_off is None:
                continue
            if off < ws_off or off + lv.size > ws_off + ws.size:
                problems.append(
                    f"{sc.path}: buffer '{lv.tensor}' [{off}, {off + lv.size}) lies outside "
                    f"the workspace '{ws.tensor}' [{ws_off}, {ws_off + ws.size})"
                )
        group = [lv for lv in sc.lives if lv.key in offs]
        for i, a in enumerate(group):
            for b in group[i + 1 :]:
                a0, b0 = offs[a.key], offs[b.key]
                live = a.first <= b.last and b.first <= a.last
                if live and a0 < b0 + b.size and b0 < a0 + a.size:
                    problems.append(
                        f"{sc.path}: buffers '{a.tensor}' [{a0}, {a0 + a.size}) and "
                        f"'{b.tensor}' [{b0}, {b0 + b.size}) overlap while both are live"
                    )
        peak = live_peak([Interval(lv.key, lv.size, lv.first, lv.last) for lv in sc.lives])
        if peak != sc.planned:
            problems.append(
                f"{sc.path}: the body's buffers peak at {peak} bytes but its plan's peak is "
                f"{sc.planned}"
            )
    return problems
