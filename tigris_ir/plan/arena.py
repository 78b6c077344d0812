"""Static placement of buffers in an arena: intervals of steps, first fit,
then a bounded search when first fit exceeds the capacity (shared by the
schedule, `plan-arena` and the interpreters)."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tigris_ir.plan.memory import ALIGN

# ---------------------------------------------------------------------------
# Static placement (shared with plan-arena)


@dataclass(frozen=True)
class Interval:
    """A buffer to place: `size` aligned bytes, live over steps [first, last]."""

    key: str
    size: int
    first: int
    last: int


def _greedy(items: Sequence[Interval]) -> tuple[dict[str, int], int]:
    """Each buffer at the lowest offset free over its whole lifetime."""
    placed: list[tuple[Interval, int]] = []
    offsets: dict[str, int] = {}
    top = 0
    for it in items:
        busy = sorted(
            (off, off + p.size) for p, off in placed if p.first <= it.last and it.first <= p.last
        )
        off = 0
        for lo, hi in busy:
            if off + it.size <= lo:
                break
            off = max(off, hi)
        placed.append((it, off))
        offsets[it.key] = off
        top = max(top, off + it.size)
    return offsets, top


def live_peak(items: Sequence[Interval]) -> int:
    """The largest sum of sizes live at one step: no placement needs less."""
    steps = sorted({i.first for i in items})
    return max((sum(i.size for i in items if i.first <= s <= i.last) for s in steps), default=0)


def place(items: Sequence[Interval], capacity: int) -> tuple[dict[str, int], int]:
    """Static offsets (multiples of ALIGN) for buffers with lifetimes, within
    `capacity` bytes when the search finds them.

    The sum of live sizes is a lower bound that fragmentation can make
    unreachable, so this is a search, in three tries until one fits:
    buffers in order of birth, each tried at the top of the highest free
    gap, at the bottom of the lowest and at both ends of the tightest
    (alternating ends is how a chain of tensors reaches the bound), with
    backtracking under a node limit; then the largest buffers first, each
    tried at both ends of every free gap, tightest gap first (the order that
    packs many long-lived buffers of a few sizes); then best fit in largest-
    first orders with sizes perturbed by a seeded generator (`SHUFFLES`
    orders, the same every run); then in order of birth again, the buffers
    living longest from the top of the arena down and the others from the
    bottom up, with backtracking (`TWO_ENDED`: long-lived tensors resident
    across many units kept out of the way of the units' own buffers). Past
    those, greedy lowest-fit orders. Returns the offsets and the highest
    byte used (the best found, above `capacity` when nothing fits)."""
    if any(i.size % ALIGN for i in items):
        raise ValueError("place: sizes must be multiples of ALIGN")
    found = (
        _search(items, capacity)
        or _search(items, capacity, largest_first=True)
        or _shuffled_best_fit(items, capacity)
        or _two_ended(items, capacity)
    )
    if found is not None:
        return found, max((found[i.key] + i.size for i in items), default=0)
    orders = (
        sorted(items, key=lambda i: (-i.size, i.first, i.key)),
        sorted(items, key=lambda i: (i.first, -i.size, i.key)),
        sorted(items, key=lambda i: (-(i.last - i.first), -i.size, i.key)),
    )
    return min((_greedy(o) for o in orders), key=lambda r: r[1])


def _free_gaps(busy: list[tuple[int, int]], capacity: int) -> list[tuple[int, int]]:
    out = []
    pos = 0
    for lo, hi in sorted(busy):
        if lo > pos:
            out.append((pos, lo))
        pos = max(pos, hi)
    if capacity > pos:
        out.append((pos, capacity))
    return out


Gap = tuple[int, int]


def _search(
    items: Sequence[Interval], capacity: int, limit: int = 200000, largest_first: bool = False
) -> dict[str, int] | None:
    """Depth-first placement within `capacity` (None past `limit` nodes): in
    order of birth, or with `largest_first` by size, trying every gap's ends."""

    def every_end(it: Interval, fits: list[Gap]) -> list[int]:
        return [e for g in sorted(fits, key=_gap_key) for e in (g[0], g[1] - it.size)]

    def ends(it: Interval, fits: list[Gap]) -> list[int]:
        tight = min(fits, key=lambda g: g[1] - g[0])
        return [fits[-1][1] - it.size, fits[0][0], tight[0], tight[1] - it.size]

    if largest_first:
        order = sorted(items, key=lambda i: (-i.size, i.first, i.key))
        return _depth_first(order, capacity, limit, every_end)
    order = sorted(items, key=lambda i: (i.first, -i.size, i.key))
    return _depth_first(order, capacity, limit, ends)


def _depth_first(
    order: Sequence[Interval],
    capacity: int,
    limit: int,
    ends: Callable[[Interval, list[Gap]], list[int]],
) -> dict[str, int] | None:
    """Place the buffers in `order`, each at the offsets `ends` names among
    the free gaps of its lifetime wide enough (in that order), backtracking;
    None when nothing fits or past `limit` nodes."""
    placed: list[tuple[Interval, int]] = []
    offsets: dict[str, int] = {}
    nodes = 0

    def rec(i: int) -> bool:
        nonlocal nodes
        if i == len(order):
            return True
        nodes += 1
        if nodes > limit:
            return False
        it = order[i]
        busy = [(o, o + q.size) for q, o in placed if q.first <= it.last and it.first <= q.last]
        fits = [g for g in _free_gaps(busy, capacity) if g[1] - g[0] >= it.size]
        if not fits:
            return False
        for c in dict.fromkeys(ends(it, fits)):
            placed.append((it, c))
            offsets[it.key] = c
            if rec(i + 1):
                return True
            placed.pop()
        return False

    return dict(offsets) if rec(0) else None


def _gap_key(g: tuple[int, int]) -> tuple[int, int]:
    """Tightest gap first, then the lowest."""
    return g[1] - g[0], g[0]


SHUFFLES = 3000
"""How many perturbed largest-first orders `place` tries by best fit."""


def _shuffled_best_fit(items: Sequence[Interval], capacity: int) -> dict[str, int] | None:
    """Best fit (each buffer in the tightest free gap, at its bottom) in
    largest-first orders, each size scaled by a factor drawn in [0.5, 1.5)
    from a generator seeded the same every run: the first within `capacity`."""
    rng = random.Random(0)
    for _ in range(SHUFFLES):
        order = sorted(items, key=lambda i: -i.size * rng.uniform(0.5, 1.5))
        placed: list[tuple[Interval, int]] = []
        for it in order:
            busy = [(o, o + q.size) for q, o in placed if q.first <= it.last and it.first <= q.last]
            fits = [g for g in _free_gaps(busy, capacity) if g[1] - g[0] >= it.size]
            if not fits:
                break
            placed.append((it, min(fits, key=_gap_key)[0]))
        else:
            return {it.key: o for it, o in placed}
    return None


TWO_ENDED = (2, 4, 8, 16)
"""`_two_ended` tries as long-lived these many of the longest-lived buffers."""


def _two_ended(
    items: Sequence[Interval], capacity: int, limit: int = 20000
) -> dict[str, int] | None:
    """Depth-first placement in order of birth within `capacity`: each of the
    k longest-lived buffers (k in `TWO_ENDED`, in turn) tried at the top of
    each free gap, highest first, the others at the bottom of each, lowest
    first (None past `limit` nodes for every k)."""
    if not items:
        return {}
    order = sorted(items, key=lambda i: (i.first, -i.size, i.key))
    spans = sorted(i.last - i.first for i in items)
    for k in TWO_ENDED:
        if k >= len(spans):
            break
        found = _two_ended_at(order, capacity, spans[-k - 1], limit)
        if found is not None:
            return found
    return None


def _two_ended_at(
    order: Sequence[Interval], capacity: int, threshold: int, limit: int
) -> dict[str, int] | None:
    """`_two_ended` with the buffers living longer than `threshold` steps
    placed from the top."""

    def ends(it: Interval, fits: list[Gap]) -> list[int]:
        if it.last - it.first > threshold:
            return [g[1] - it.size for g in reversed(fits)] + [g[0] for g in fits]
        return [g[0] for g in fits] + [g[1] - it.size for g in fits]

    return _depth_first(order, capacity, limit, ends)
