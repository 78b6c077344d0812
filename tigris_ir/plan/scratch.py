"""The scratch of a line-buffered chain: buffers no tile keeps rows of.

In a line-buffered chain most buffers carry history rows from one tile to
the next (a window's kernel - stride rows), but a tensor whose every tile
holds only the rows that tile computes (a 1x1 convolution's output read by
a 1x1 convolution, a depthwise output, an Add) carries nothing: its buffer
is needed only from its producer to its last reader within one tile. Such
buffers share one workspace of the chain, each placed by its lifetime over
the tile's ops (`tigris_ir.plan.arena.place`), so that the chain holds its
history buffers plus the largest set of scratch buffers alive at once
instead of the sum of every buffer.

A buffer is scratch when, for every tensor it holds (an in-place
activation's buffer holds several): the tensor is computed in the band
(not a chain input, which loads rows), keeps no history row in any tile,
is not recomputed whole every tile (a channel Concat's member stage) and
is not read whole. It lives over the node steps [first producer, last
reader]; a chain output until the tile's spills (step `stop`), unless a
single-arena chain writes it where it is resident (`direct_outputs`: no
buffer of the chain at all). The workspace is used only when the
placement reaches the live peak (so the measured peak equals the planned
one) and saves bytes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tigris_ir.plan.arena import Interval, live_peak, place
from tigris_ir.plan.memory import ALIGN
from tigris_ir.plan.tiling import BandModel


@dataclass(frozen=True)
class Scratch:
    """Scratch buffers of a chain by owner tensor: their node steps (first,
    last; `stop` for a chain output) and offsets in a workspace of `size`."""

    live: Mapping[str, tuple[int, int]]
    offsets: Mapping[str, int]
    size: int


def _aligned(rows: int, row_bytes: int) -> int:
    return -(-rows * row_bytes // ALIGN) * ALIGN


def chain_scratch(
    model: BandModel,
    rows: Sequence[int],
    history: Sequence[int],
    recompute: frozenset[int] = frozenset(),
    direct: frozenset[int] = frozenset(),
) -> Scratch | None:
    """The scratch of a line-buffered band (`BandModel`) whose buffers hold
    `rows` with `history` rows kept at most; None when none saves bytes.
    The outputs written `direct` into their resident tensors (no buffer of
    the band, `direct_outputs`) are no scratch buffer."""
    n = len(model.names)
    share = model.share or tuple(range(n))
    ext = model.shared_extents(rows) if model.share else list(rows)
    produced_by: dict[int, int] = {}
    readers: dict[int, int] = {}
    rec_out: set[int] = set()
    for k, outs, ins in model.ops:
        for o in outs:
            produced_by[o] = k
            if k in recompute:
                rec_out.add(o)
        for t, _, _ in ins:
            readers[t] = max(readers.get(t, k), k)
    inputs, roots = set(model.inputs), set(model.roots)
    ok: dict[int, bool] = {}
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for t in range(n):
        o = share[t]
        good = (
            t not in inputs
            and t not in direct
            and t in produced_by
            and t not in rec_out
            and history[t] == 0
            and not model.whole[t]
            and rows[t] > 0
        )
        ok[o] = ok.get(o, True) and good
        if t in produced_by:
            first[o] = min(first.get(o, produced_by[t]), produced_by[t])
        end = model.stop if t in roots else readers.get(t, produced_by.get(t, 0))
        last[o] = max(last.get(o, end), end)
    items = [
        Interval(model.names[o], _aligned(ext[o], model.row_bytes[o]), first[o], last[o])
        for o in sorted(ok)
        if ok[o] and o in first
    ]
    if len(items) < 2:
        return None
    peak = live_peak(items)
    if peak >= sum(i.size for i in items):
        return None
    offsets, top = place(items, peak)
    if top != peak:
        return None
    return Scratch({i.key: (i.first, i.last) for i in items}, offsets, peak)


def scratch_bytes(
    model: BandModel,
    rows: Sequence[int],
    history: Sequence[int],
    recompute: frozenset[int] = frozenset(),
    in_place: frozenset[int] = frozenset(),
    direct: frozenset[int] = frozenset(),
) -> int:
    """The chain's buffers with its scratch shared (`model.bytes_of_rows`
    when it has none), less the inputs it reads `in_place` and the outputs
    it writes `direct` (no buffer of their own)."""
    total = model.bytes_of_rows(rows)
    ext = model.shared_extents(rows) if model.share else list(rows)
    total -= sum(_aligned(ext[t], model.row_bytes[t]) for t in in_place | direct)
    s = chain_scratch(model, rows, history, recompute, direct)
    if s is None:
        return total
    ids = {name: t for t, name in enumerate(model.names)}
    own = sum(_aligned(ext[ids[name]], model.row_bytes[ids[name]]) for name in s.live)
    return total - own + s.size


def in_place_inputs(model: BandModel, resident: frozenset[str]) -> frozenset[int]:
    """The chain inputs a single-arena chain reads where they are resident
    in the fast arena (`resident`: names), with no band buffer of their own:
    those whose buffer no other tensor of the band shares."""
    share = model.share or tuple(range(len(model.names)))
    return frozenset(
        t
        for t in model.inputs
        if model.names[t] in resident
        and share[t] == t
        and not any(o == t and u != t for u, o in enumerate(share))
    )


def direct_outputs(model: BandModel, resident: frozenset[str]) -> frozenset[int]:
    """The outputs a single-arena line-buffered chain writes straight into
    their tensors resident in the fast arena (`resident`: names), with no
    band buffer and no spill: those spilled (read after the chain) that no
    op of the band reads and whose buffer no other tensor shares. Each row
    of a line-buffered chain's output is computed once, into its place."""
    share = model.share or tuple(range(len(model.names)))
    read = {t for _, _, ins in model.ops for t, _, _ in ins}
    return frozenset(
        t
        for t in model.spilled
        if model.names[t] in resident
        and t not in read
        and not model.whole[t]
        and share[t] == t
        and not any(o == t and u != t for u, o in enumerate(share))
    )


def estimated_history(model: BandModel, recompute: frozenset[int] = frozenset()) -> list[int]:
    """History rows per tensor as the affine offsets estimate them (`ext -
    low`, as `BandModel.paced_rows`); every tensor keeps some when the band
    is not affine (then nothing counts as scratch)."""
    off, low = model.offsets, model.lb_low(recompute)
    if off is None or low is None:
        return [1] * len(model.names)
    return [max(0, x - lw) for (_, x), lw in zip(off, low)]
