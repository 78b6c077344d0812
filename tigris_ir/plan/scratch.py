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

Pixel blocks. Where even that does not fit, a chain may run runs of its ops
in blocks of `PIXEL_BLOCK` output columns (`pixel_runs`): a run starts with
an op whose output is scratch and goes on through the ops that read a tensor
of the run at the same rows and columns (a 1x1 convolution of stride 1, an
Add, an activation); each block computes its columns of every op of the run
before the next block starts. A scratch tensor read only inside its run
then needs a buffer of one block's columns, not of the whole width
(`blocked`), and every scratch buffer the run touches is live over the
whole run.

Through a window. A 1x1 op whose only reader is a window op (MobileNetV2's
expansion before its depthwise) holds rows of many channels that the window
keeps as history. It may instead be a feeder (`window_feeders`): recomputed
every tile (its rows: those the window reads) and every block (its columns:
the window's columns behind the block's, `block_cols`), it starts a pixel
run that the window op joins, and its buffer holds one block's window of
rows and columns; its own input, few channels, keeps the history instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from tigris_ir.plan.arena import Interval, live_peak, place
from tigris_ir.plan.graph import PlanGraph
from tigris_ir.plan.memory import ALIGN
from tigris_ir.plan.tiling import WINDOW, BandModel, RowMap, map_range, same_place

PIXEL_BLOCK = 8
"""Output columns a block of a pixel run computes (`pixel_runs`)."""


@dataclass(frozen=True)
class Scratch:
    """Scratch buffers of a chain by owner tensor: their node steps (first,
    last; `stop` for a chain output) and offsets in a workspace of `size`."""

    live: Mapping[str, tuple[int, int]]
    offsets: Mapping[str, int]
    size: int
    block: int = 0
    """Columns of a pixel block (0: no pixel runs)."""
    runs: tuple[tuple[int, ...], ...] = ()
    """The pixel runs: node indices, in order (`pixel_runs`)."""
    blocked: tuple[str, ...] = ()
    """Scratch buffers holding one block's columns (by owner tensor)."""
    blocked_cols: Mapping[str, int] = field(default_factory=dict[str, int])
    """The columns each blocked buffer holds (`block_cols`)."""


@dataclass(frozen=True)
class ChainForm:
    """How a line-buffered chain holds its tensors beyond a band buffer of
    whole rows each (all off by default): the inputs it reads `in_place`
    where they are resident in the fast arena (`in_place_inputs`), the
    outputs it writes `direct` into their resident tensors (`direct_outputs`;
    both in a single arena only), and pixel runs in blocks of `block`
    columns (`pixel_runs`; 0: none)."""

    in_place: frozenset[int] = frozenset()
    direct: frozenset[int] = frozenset()
    block: int = 0
    feeders: frozenset[int] = frozenset()
    """Ops (node indices) recomputed in pixel blocks for the window op reading
    them (`window_feeders`); they belong to the chain's recompute set too."""


WHOLE_ROWS = ChainForm()
"""A chain with a band buffer of whole rows for every tensor."""


def _aligned(rows: int, row_bytes: int) -> int:
    return -(-rows * row_bytes // ALIGN) * ALIGN


def pixel_runs(
    model: BandModel,
    candidates: set[int],
    recompute: frozenset[int],
    feeders: frozenset[int] = frozenset(),
) -> tuple[tuple[tuple[int, ...], ...], frozenset[int]]:
    """The pixel runs of a band and the scratch owners held in blocks.

    `candidates`: scratch owners (tensor ids). A run starts at an op whose
    output is a candidate (not recomputed, or a feeder: `feeders`, node
    indices) and takes each next op that is not recomputed and reads a
    tensor computed in the run, every such read at its own rows and columns
    (`same_place`) or through a window from a feeder of the run; the ops of
    a run but its feeder compute outputs of one width. A candidate is
    blocked when the run of its producer holds every reader of it, the run
    has more than one op and no tensor held in its buffer is an output of
    the band (spilled whole rows). Runs are op positions, in order."""
    memo = model._memo.setdefault(("pixel runs", 0), {})  # noqa: SLF001
    key = (frozenset(candidates), recompute, feeders)
    if key not in memo:
        memo[key] = _pixel_runs(model, candidates, recompute, feeders)
    return memo[key]


def window_feeders(model: BandModel) -> frozenset[int]:
    """The ops of a band (node indices) that may feed a window op in pixel
    blocks: one rank-4 output, computed in the band, neither an output of it
    nor read whole nor sharing a buffer, read by exactly one op and through a
    window of more than one column; every input read at the op's own rows and
    columns (a 1x1 convolution, an activation)."""
    memo = model._memo.setdefault(("window feeders", 0), {})  # noqa: SLF001
    if 0 in memo:
        return memo[0]
    share = model.share or tuple(range(len(model.names)))
    shared = {o for t, o in enumerate(share) if o != t}
    readers: dict[int, list[tuple[RowMap, RowMap]]] = {}
    for _, _, ins in model.ops:
        for t, m, c in ins:
            readers.setdefault(t, []).append((m, c))
    roots = set(model.roots)
    found = set()
    for k, outs, ins in model.ops:
        if len(outs) != 1:
            continue
        o = outs[0]
        reads = readers.get(o, [])
        if (
            model.graph.tensors[model.names[o]].rank == 4
            and o not in roots
            and o not in model.inputs
            and not model.whole[o]
            and share[o] == o
            and o not in shared
            and len(reads) == 1
            and reads[0][1][0] == WINDOW
            and reads[0][1][1] > 1
            and all(same_place(m) and same_place(c) for _, m, c in ins)
        ):
            found.add(k)
    memo[0] = frozenset(found)
    return memo[0]


def block_cols(model: BandModel, t: int, block: int, window: RowMap | None = None) -> int:
    """The columns a buffer of tensor `t` held in blocks of `block` output
    columns holds: the block's, or read through `window` (a feeder's output)
    the window's columns behind them; at most the columns the band holds."""
    cols = model.row_bytes[t] // model.cells[t]
    if window is None:
        return min(block, cols)
    return min((block - 1) * window[2] + (window[1] - 1) * window[3] + 1, cols)


def feeder_windows(model: BandModel, feeders: frozenset[int]) -> dict[int, RowMap]:
    """Per feeder's output (tensor id) the column map its window reader reads
    it by (`window_feeders`)."""
    outs = {outs[0] for k, outs, _ in model.ops if k in feeders}
    return {t: c for _, _, ins in model.ops for t, _, c in ins if t in outs}


REREAD_SHARE = 8
"""Stage formation counts a weight byte a pixel run reads again as
1/`REREAD_SHARE` of a slow-memory byte: it comes from a cache (the host's
L1/L2, a microcontroller's flash cache), not from the slow memory."""


def const_bytes(graph: PlanGraph, nodes: Iterable[int]) -> int:
    """The bytes of the constants (weights) the nodes read, each once."""
    names = {n for k in nodes for n in graph.nodes[k].inputs}
    consts = (graph.tensors[n] for n in names if n in graph.tensors)
    return sum(t.nbytes for t in consts if t.is_const)


def reread_bytes(graph: PlanGraph, runs: Sequence[tuple[int, ...]], block: int) -> int:
    """The weight bytes the pixel runs `runs` (node indices) read again: each
    op of a run reads its constants once per block of `block` columns
    instead of once per row."""
    total = 0
    for run in runs:
        for k in run:
            out = graph.tensors[graph.nodes[k].outputs[0]]
            total += const_bytes(graph, (k,)) * (-(-out.width // block) - 1) * out.height
    return total


def may_run_in_pixels(model: BandModel) -> bool:
    """Whether any scratch tensor of the band could be held in pixel blocks
    (`pixel_runs` over every tensor computed in the band but its outputs):
    a chain tries pixel runs only then."""
    inner = {t for t in range(len(model.names)) if t not in model.inputs}
    return bool(pixel_runs(model, inner - set(model.roots), frozenset())[1])


def run_blocks(lo: int, hi: int, block: int) -> list[tuple[int, int]]:
    """The blocks of a pixel run over output columns [lo, hi): `block`
    columns each, the last what is left."""
    return [(a, min(a + block, hi)) for a in range(lo, hi, block)]


def fed_recomputed(
    model: BandModel,
    feeders: frozenset[int],
    block: int,
    rows: Sequence[int],
    bands: Sequence[Sequence[tuple[int, int]]] | None = None,
) -> int:
    """The MACs the feeders (`window_feeders`) recompute: each computes `rows`
    rows (per tensor, over a run's tiles, in every column band) of the
    window's columns behind each block of its reader's columns (per column
    band `bands[b][t]`, else the whole width), against computing each output
    element once."""
    graph = model.graph
    windows = feeder_windows(model, feeders)
    reader = {t: outs[0] for _, outs, ins in model.ops for t, _, _ in ins if t in windows}
    total = 0
    for k, outs, _ in model.ops:
        if k not in feeders or not graph.nodes[k].macs:
            continue
        o = outs[0]
        ro, width = reader[o], model.widths[o]
        spans = [b[ro] for b in bands] if bands else [(0, model.widths[ro])]
        cols = sum(
            b - a
            for lo, hi in spans
            for x, y in run_blocks(lo, hi, block)
            for a, b in (map_range(windows[o], x, y, width),)
        )
        area = model.heights[o] * width
        total += graph.nodes[k].macs * (rows[o] * cols - area) // area
    return total


def _pixel_runs(
    model: BandModel, candidates: set[int], recompute: frozenset[int], feeders: frozenset[int]
) -> tuple[tuple[tuple[int, ...], ...], frozenset[int]]:
    share = model.share or tuple(range(len(model.names)))
    rank4 = {
        t for t in range(len(model.names)) if model.graph.tensors[model.names[t]].rank == 4
    }
    owner_ok = {o: True for o in candidates}
    roots = set(model.roots)  # spilled (or streamed) whole rows: not in blocks
    for t, o in enumerate(share):
        if o in owner_ok and (
            t not in rank4 or t in roots or model.widths[t] != model.widths[o]
        ):
            owner_ok[o] = False
    cand = {o for o, ok in owner_ok.items() if ok}
    members_of: dict[int, list[int]] = {}
    for t, o in enumerate(share):
        members_of.setdefault(o, []).append(t)
    read_at: dict[int, set[int]] = {}  # tensor id -> positions of the ops reading it
    for i, (_, _, ins) in enumerate(model.ops):
        for t, _, _ in ins:
            read_at.setdefault(t, set()).add(i)
    fed = {outs[0] for k, outs, _ in model.ops if k in feeders}
    while True:
        runs: list[list[int]] = []
        run_of: dict[int, int] = {}  # tensor id -> run index (computed in it)
        current: list[int] | None = None
        width = 0  # the output width of the current run's ops but its feeder
        for i, (k, outs, ins) in enumerate(model.ops):
            inside = [(t, m, c) for t, m, c in ins if run_of.get(t) == len(runs) - 1]
            joins = (
                current is not None
                and k not in recompute
                and len(outs) == 1
                and bool(inside)
                and any(share[t] in cand for t, _, _ in inside)
                and all(
                    (same_place(m) and same_place(c)) or t in fed for t, m, c in inside
                )
                and width in (0, model.widths[outs[0]])
            )
            if joins:
                assert current is not None
                current.append(i)
                width = model.widths[outs[0]]
            elif len(outs) == 1 and share[outs[0]] in cand and (
                k not in recompute or k in feeders
            ):
                current = [i]
                runs.append(current)
                width = 0 if k in feeders else model.widths[outs[0]]
            else:
                current = None
            if current is not None:
                for o in outs:
                    run_of[o] = len(runs) - 1
        bad: set[int] = set()
        for o in cand:
            members = members_of.get(o, [])
            homes = {run_of.get(t) for t in members}
            if len(homes) != 1 or None in homes:
                bad.add(o)
                continue
            (home,) = homes
            assert home is not None
            if len(runs[home]) < 2:
                bad.add(o)
                continue
            run = set(runs[home])
            if any(not read_at.get(t, run) <= run for t in members):
                bad.add(o)
        if not bad:
            break
        cand -= bad
    used = {run_of[t] for t in range(len(model.names)) if share[t] in cand and t in run_of}
    kept = tuple(tuple(r) for j, r in enumerate(runs) if j in used)
    return kept, frozenset(cand)


@dataclass(frozen=True)
class _Frame:
    """What of a band's scratch depends on its ops alone (`_scratch_frame`):
    per buffer owner whether its tensors may be scratch whatever the rows
    (`ok`), the tensors that decide it with the rows (`candidates`), and
    the first and last op using the owner's buffer."""

    ok: dict[int, bool]
    candidates: tuple[int, ...]
    first: dict[int, int]
    last: dict[int, int]


def _scratch_frame(
    model: BandModel, recompute: frozenset[int], feeders: frozenset[int] = frozenset()
) -> _Frame:
    memo = model._memo.setdefault(("scratch frame", 0), {})  # noqa: SLF001
    if (recompute, feeders) in memo:
        return memo[(recompute, feeders)]
    n = len(model.names)
    share = model.share or tuple(range(n))
    produced_by: dict[int, int] = {}
    readers: dict[int, int] = {}
    rec_out: set[int] = set()
    for k, outs, ins in model.ops:
        for o in outs:
            produced_by[o] = k
            if k in recompute and k not in feeders:
                rec_out.add(o)
        for t, _, _ in ins:
            readers[t] = max(readers.get(t, k), k)
    inputs, roots = set(model.inputs), set(model.roots)
    ok: dict[int, bool] = {}
    candidates: list[int] = []
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for t in range(n):
        o = share[t]
        good = (
            t not in inputs
            and t in produced_by
            and t not in rec_out
            and not model.whole[t]
        )
        ok[o] = ok.get(o, True) and good
        if good:
            candidates.append(t)
        if t in produced_by:
            first[o] = min(first.get(o, produced_by[t]), produced_by[t])
        end = model.stop if t in roots else readers.get(t, produced_by.get(t, 0))
        last[o] = max(last.get(o, end), end)
    memo[(recompute, feeders)] = frame = _Frame(ok, tuple(candidates), first, last)
    return frame


def chain_scratch(
    model: BandModel,
    rows: Sequence[int],
    history: Sequence[int],
    recompute: frozenset[int] = frozenset(),
    form: ChainForm = WHOLE_ROWS,
) -> Scratch | None:
    """The scratch of a line-buffered band (`BandModel`) whose buffers hold
    `rows` with `history` rows kept at most; None when none saves bytes.
    The outputs the chain writes `form.direct` into their resident tensors
    (no buffer of the band) are no scratch buffer; with `form.block` > 0 the
    band runs its pixel runs in blocks of that many columns."""
    direct, block, feeders = form.direct, form.block, form.feeders
    n = len(model.names)
    share = model.share or tuple(range(n))
    ext = model.shared_extents(rows) if model.share else list(rows)
    frame = _scratch_frame(model, recompute, feeders)
    windows = feeder_windows(model, feeders)  # a feeder's rows are recomputed: no history
    ok = dict(frame.ok)
    for t in frame.candidates:
        if t in direct or (history[t] != 0 and t not in windows) or rows[t] <= 0:
            ok[share[t]] = False
    first, last = frame.first, frame.last
    owners = [o for o in sorted(ok) if ok[o] and o in first]
    runs: tuple[tuple[int, ...], ...] = ()
    blocked: frozenset[int] = frozenset()
    if block > 0:
        runs, blocked = pixel_runs(model, set(owners), recompute, feeders)
    spans = [(model.ops[r[0]][0], model.ops[r[-1]][0]) for r in runs]
    items = []
    for o in owners:
        lo, hi = first[o], last[o]
        for a, b in spans:  # a run's blocks interleave its ops: live over all of it
            if lo <= b and hi >= a:
                lo, hi = min(lo, a), max(hi, b)
        size = model.row_bytes[o]
        if o in blocked:
            size = model.cells[o] * block_cols(model, o, block, windows.get(o))
        items.append(Interval(model.names[o], _aligned(ext[o], size), lo, hi))
    full = sum(_aligned(ext[o], model.row_bytes[o]) for o in owners)
    if not blocked and len(items) < 2:
        return None
    peak = live_peak(items)
    if peak >= full:
        return None
    offsets, top = place(items, peak)
    if top != peak:
        return None
    return Scratch(
        {i.key: (i.first, i.last) for i in items},
        offsets,
        peak,
        block if blocked else 0,
        tuple(tuple(model.ops[i][0] for i in r) for r in runs) if blocked else (),
        tuple(model.names[o] for o in sorted(blocked)),
        {
            model.names[o]: block_cols(model, o, block, windows.get(o))
            for o in sorted(blocked)
        },
    )


def scratch_bytes(
    model: BandModel,
    rows: Sequence[int],
    history: Sequence[int],
    recompute: frozenset[int] = frozenset(),
    form: ChainForm = WHOLE_ROWS,
) -> int:
    """The chain's buffers with its scratch shared (`model.bytes_of_rows`
    when it has none), less the inputs it reads in place and the outputs it
    writes direct (`form`: no buffer of their own)."""
    total = model.bytes_of_rows(rows)
    ext = model.shared_extents(rows) if model.share else list(rows)
    total -= sum(_aligned(ext[t], model.row_bytes[t]) for t in form.in_place | form.direct)
    s = chain_scratch(model, rows, history, recompute, form)
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
