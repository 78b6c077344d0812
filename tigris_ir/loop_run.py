"""The loop level, run on numpy: a plan stops being a claim.

`schedule(view, plan)` turns a `Plan` into a `Program`: per unit (a normal
stage, a tiled stage or a chain) the fast buffers with their static arena
offsets and, per tile, what to load from slow memory, which rows each op
computes, what a line buffer keeps and what to spill. `lower-to-loops`
prints exactly this schedule as loop IR; `run_program` executes it:

* the fast arena is ONE numpy byte buffer of exactly the planned peak;
  every buffer is a view of it at its static offset (`place`, shared with
  `plan-arena`), and the arena checks at every allocation that the buffer
  lies inside it and overlaps no live buffer;
* slow memory holds the model inputs and every tensor crossing a unit
  boundary; every load and spill is counted in bytes;
* each band op is one vectorised numpy computation (`band_exec`).

It measures the fast peak (the largest sum of live aligned buffers, the
planner's definition, and the highest byte in use), the slow peak and the
slow reads and writes, which the tests hold equal to the plan.
`run_loop_module` runs the loop IR itself (`tigris-run`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import arith, func, scf
from xdsl.dialects import memref as mr
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
)
from xdsl.dialects.linalg.ops import FillOp
from xdsl.ir import Attribute, Operation, SSAValue

from tigris_ir import band_exec
from tigris_ir.band_exec import Band, BandError, Range
from tigris_ir.dialects import loop, nn
from tigris_ir.memory import ALIGN, align
from tigris_ir.nn_graph import GraphView, build_view
from tigris_ir.plan_graph import PlanGraph
from tigris_ir.plan_ir import main_func
from tigris_ir.planner import ChainPlan, Plan, StagePlan, TileRows, plan
from tigris_ir.tiling import (
    ACC_DTYPE,
    IDENT,
    IDENT_MAP,
    WHOLE,
    GraphTables,
    LbOp,
    LineBufferGapError,
    RowMap,
    line_buffer_run,
)
from tigris_ir.tiling_class import TilingClass


class PlanRunError(Exception):
    """A plan that cannot run as planned; the message names the unit and figures."""


class UnsupportedBand(PlanRunError):
    """A band kind the loop level does not run yet."""


class PlanDiscrepancy(PlanRunError):
    """The plan's schedule cannot run as its figures say (a planner bug)."""


class LineBufferGap(PlanDiscrepancy):
    """A line-buffered chain whose tile ranges go back or skip rows (dilated
    windows under the image padding): its planned line buffers would read
    rows no tile computed or that it already dropped."""


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
    unreachable, so this is a search: buffers in order of birth, each tried
    at the top of the highest free gap, at the bottom of the lowest and at
    both ends of the tightest (alternating ends is how a chain of tensors
    reaches the bound), with backtracking under a node limit; then greedy
    lowest-fit orders. Returns the offsets and the highest byte used (the
    best found, above `capacity` when nothing fits)."""
    if any(i.size % ALIGN for i in items):
        raise ValueError("place: sizes must be multiples of ALIGN")
    found = _search(items, capacity)
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


def _search(items: Sequence[Interval], capacity: int, limit: int = 20000) -> dict[str, int] | None:
    """Depth-first placement within `capacity` (None past `limit` nodes)."""
    order = sorted(items, key=lambda i: (i.first, -i.size, i.key))
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
        tight = min(fits, key=lambda g: g[1] - g[0])
        cands: list[int] = []
        for c in (fits[-1][1] - it.size, fits[0][0], tight[0], tight[1] - it.size):
            if c not in cands:
                cands.append(c)
        for c in cands:
            placed.append((it, c))
            offsets[it.key] = c
            if rec(i + 1):
                return True
            placed.pop()
        return False

    return dict(offsets) if rec(0) else None


# ---------------------------------------------------------------------------
# The program


@dataclass(frozen=True)
class Buffer:
    """A fast buffer: a tensor (or its band) at a static offset of the arena."""

    key: str
    shape: tuple[int, ...]
    dtype: np.dtype
    offset: int

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize

    @property
    def size(self) -> int:
        return align(self.nbytes)


@dataclass(frozen=True)
class OpStep:
    """Compute node `node` over `out` (the band of its results)."""

    node: int
    out: Band


@dataclass(frozen=True)
class Tile:
    """One tile: per tensor the band its buffer holds once the tile has run
    (`held`; the buffer's row 0 is the held band's first row), the rows kept
    from the previous tile (a line buffer moves them to the buffer's start),
    the bands loaded from slow memory, the op steps and the bands spilled."""

    index: int
    held: Mapping[str, Band]
    keep: Mapping[str, Range]
    loads: tuple[tuple[str, Band], ...]
    ops: tuple[OpStep, ...]
    spills: tuple[tuple[str, Band], ...]
    accumulate: Band | None = None


@dataclass(frozen=True)
class NormalUnit:
    """A stage run whole: load inputs, run ops, free at last use, spill outputs."""

    index: int
    stage: StagePlan
    in_place: bool
    buffers: Mapping[str, Buffer]
    events: tuple[tuple[str, str | int], ...]
    """("load", tensor) ("alloc", tensor) ("op", node) ("free", tensor) ("spill", tensor)."""
    planned_peak: int

    @property
    def name(self) -> str:
        return f"stage {self.stage.index}"


@dataclass(frozen=True)
class TiledUnit:
    """A tiled stage or a chain: buffers allocated once, a loop over tiles."""

    index: int
    name: str
    kind: str
    nodes: tuple[int, ...]
    axes: Mapping[str, int]
    buffers: Mapping[str, Buffer]
    once: tuple[str, ...]
    """Inputs loaded once before the tiles (whole reads of a sub-row band)."""
    tiles: tuple[Tile, ...]
    line_buffered: bool
    gap: int | None
    acc_groups: tuple[Range, ...]
    """A GlobalAveragePool's channel groups, outermost over the tiles (each
    holds its own partial sums and outputs, written when it ends); one group
    of every channel when not cut."""
    planned_peak: int
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


Unit = NormalUnit | TiledUnit


@dataclass(frozen=True)
class Program:
    """The schedule of a plan: units in order, slow-memory lifetimes, the arena."""

    plan: Plan
    graph: PlanGraph
    units: tuple[Unit, ...]
    arena_bytes: int
    slow_birth: Mapping[str, int]
    slow_death: Mapping[str, int]
    dtypes: Mapping[str, np.dtype]


def _axes(graph: PlanGraph, tables: GraphTables, nodes: Sequence[int]) -> dict[str, int]:
    """The axis bands cut, per non-constant tensor the nodes touch."""
    axes: dict[str, int] = {}
    for k in nodes:
        nb = tables.node_bands[k]
        for o in graph.nodes[k].outputs:
            axes[o] = nb.out_axis
        for name, _, axis, _ in nb.ins:
            axes.setdefault(name, axis)
    return axes


def _maps(tables: GraphTables, k: int) -> dict[str, tuple[RowMap, RowMap | None]]:
    return {name: (m, col) for name, m, _, col in tables.node_bands[k].ins}


def _normal_unit(
    graph: PlanGraph,
    dt: Mapping[str, np.dtype],
    index: int,
    st: StagePlan,
    in_place: bool,
    capacity: int,
) -> NormalUnit:
    """Lifetimes as the planner's cost model has them, offsets by `place`."""
    start, stop = st.start, st.stop
    last: dict[str, int] = {}
    first: dict[str, int] = {}
    for name in st.inputs:
        first[name] = start
    for k in range(start, stop):
        node = graph.nodes[k]
        for name in node.inputs:
            if not graph.tensors[name].is_const:
                last[name] = k
        for name in node.outputs:
            first[name] = k
    outs = set(st.outputs)
    items = []
    for name, f in first.items():
        end = stop - 1 if name in outs else last.get(name, f)
        items.append(Interval(name, align(graph.tensors[name].nbytes), f, end))
    offsets, top = place(items, capacity)
    if top > capacity:
        raise PlanDiscrepancy(
            f"stage {st.index}: no static placement of its buffers fits the arena of "
            f"{capacity} bytes (the best found reaches {top}; the live sum peaks at "
            f"{live_peak(items)})"
        )
    buffers = {
        i.key: Buffer(i.key, graph.tensors[i.key].shape, dt[i.key], offsets[i.key]) for i in items
    }
    events: list[tuple[str, str | int]] = [("load", x) for x in st.inputs]
    ends = {i.key: i.last for i in items}
    for k in range(start, stop):
        for o in graph.nodes[k].outputs:
            events.append(("alloc", o))
        events.append(("op", k))
        for name, e in ends.items():
            if e == k and name not in outs:
                events.append(("free", name))
    for o in st.outputs:
        events.append(("spill", o))
    return NormalUnit(index, st, in_place, buffers, tuple(events), st.peak)


def view_dtypes(view: GraphView) -> dict[str, np.dtype]:
    """The numpy dtype of every tensor of the graph."""
    return {name: nn.dtype_of(v) for name, v in view.values.items()}


def _nonempty(band: Band) -> bool:
    return all(hi > lo for lo, hi in band.values())


def _band_of(axis: int, rows: Range, cols: Range | None, shape: Sequence[int]) -> dict[int, Range]:
    """A band of a tensor; an empty range the planner puts past the tensor's
    end (a clipped column range) is moved to the end, where it is a valid
    empty slice."""

    def clip(r: Range, size: int) -> Range:
        return (min(r[0], size), min(r[1], size))

    band = {axis: clip(rows, shape[axis])}
    if cols is not None and len(shape) == 4 and axis == 1:
        band[2] = clip(cols, shape[2])
    return band


def _tiled_unit(
    graph: PlanGraph,
    dt: Mapping[str, np.dtype],
    tables: GraphTables,
    index: int,
    name: str,
    kind: str,
    start: int,
    stop: int,
    band_rows: Mapping[str, int],
    band_cols: Mapping[str, int],
    tiles: Sequence[TileRows],
    line_buffered: bool,
    recompute: frozenset[int],
    inputs: Sequence[str],
    outputs: Sequence[str],
    planned_peak: int,
    tile_hw: tuple[int, int],
    shared: Mapping[str, str] | None = None,
) -> TiledUnit:
    """A tiled stage or chain: its buffers (one per tensor, except that a
    tensor an in-place activation overwrites is held in that activation's
    buffer: `shared`, and `buffers` maps it to that Buffer) and its tiles."""
    shared = shared or {}
    nodes = tuple(range(start, stop))
    axes = _axes(graph, tables, nodes)
    produced = {o for k in nodes for o in graph.nodes[k].outputs}
    gap = next((k for k in nodes if graph.nodes[k].tiling is TilingClass.ACCUMULATE), None)
    grid = bool(tiles) and tiles[0].cols is not None
    buffers: dict[str, Buffer] = {}
    offset = 0
    extent: dict[str, list[int]] = {}
    for t, rows in band_rows.items():
        owner = shared.get(t, t)
        if dt[t] != dt[owner] or graph.tensors[t].shape != graph.tensors[owner].shape:
            raise PlanDiscrepancy(f"{name}: '{t}' cannot share the buffer of '{owner}'")
        info = graph.tensors[t]
        shape = list(info.shape)
        shape[axes[t]] = rows
        if grid and info.rank == 4 and axes[t] == 1 and t in band_cols:
            shape[2] = band_cols[t]
        old = extent.get(owner)
        extent[owner] = shape if old is None else [max(a, b) for a, b in zip(old, shape)]
    for t in band_rows:
        owner = shared.get(t, t)
        if owner not in buffers:
            buffers[owner] = Buffer(owner, tuple(extent[owner]), dt[owner], offset)
            offset += buffers[owner].size
    for t in band_rows:
        buffers[t] = buffers[shared.get(t, t)]
    if gap is not None:
        out = graph.nodes[gap].outputs[0]
        shape = graph.tensors[out].shape
        buffers[out] = Buffer(out, shape, dt[out], offset)
        offset += buffers[out].size
        acc = out + ".acc"
        buffers[acc] = Buffer(acc, shape, ACC_DTYPE, offset)
        offset += buffers[acc].size
    loaded = [t for t in band_rows if t not in produced]
    spilled = [t for t in outputs if t in band_rows and t in produced]
    acc_groups: tuple[Range, ...] = ()
    if gap is not None:
        out_t = graph.nodes[gap].outputs[0]
        acc_groups = ((0, graph.tensors[out_t].shape[-1]),)
    try:
        steps = _tile_steps(
            graph,
            tables,
            nodes,
            axes,
            tiles,
            loaded,
            spilled,
            line_buffered,
            recompute,
            gap,
            tile_hw,
            shared,
        )
    except PlanDiscrepancy as e:
        raise type(e)(f"{name}: {e}") from None
    _check_capacity(name, steps, buffers)
    return TiledUnit(
        index,
        name,
        kind,
        nodes,
        axes,
        buffers,
        (),
        tuple(steps),
        line_buffered,
        gap,
        acc_groups,
        planned_peak,
        tuple(inputs),
        tuple(outputs),
    )


def _lb_rows(
    graph: PlanGraph,
    tables: GraphTables,
    nodes: Sequence[int],
    axes: Mapping[str, int],
    tiles: Sequence[TileRows],
    recompute: frozenset[int],
    shared: Mapping[str, str],
) -> tuple[list[dict[str, Range]], list[dict[str, Range]]]:
    """Per tile of a line-buffered chain: the new rows of every tensor and the
    rows its buffer holds, by `line_buffer_run`, the run the planner sized
    the buffers with. A read of a row no tile has computed or loaded so far
    is a `LineBufferGap`."""
    names = list(tiles[0].rows)
    ids = {t: i for i, t in enumerate(names)}
    produced = {o for k in nodes for o in graph.nodes[k].outputs}
    stop = nodes[-1] + 1
    roots = [ids[t] for t in names if t in produced and tables.is_root(t, stop)]
    ops: list[LbOp] = []
    for k in nodes:
        outs = tuple(ids[o] for o in graph.nodes[k].outputs if o in ids)
        ins = tuple((ids[t], m) for t, (m, _) in _maps(tables, k).items())
        ops.append((k, outs, ins))
    heights = [graph.tensors[t].shape[axes[t]] for t in names]
    ranges = [[tile.rows[t] for t in names] for tile in tiles]
    try:
        share = [ids[shared.get(t, t)] for t in names] if shared else []
        run = line_buffer_run(heights, roots, ops, ranges, recompute, share)
    except LineBufferGapError as e:
        t = names[e.tensor]
        seen = ", ".join(f"[{a}, {b})" for a, b in (tr.rows[t] for tr in tiles[: e.tile + 1]))
        raise LineBufferGap(
            f"line-buffered tile {e.tile}: '{graph.nodes[e.node].name}' reads rows "
            f"[{e.rows[0]}, {e.rows[1]}) of '{t}', but row {e.missing} is never computed or "
            f"loaded (the ranges of '{t}' in tiles 0..{e.tile} are {seen}: a tile computes "
            "only from the previous tile's end on)"
        ) from None
    news = [dict(zip(names, new)) for new in run.new]
    helds = [dict(zip(names, held)) for held in run.held]
    return news, helds


def _shared_hull(rows: Mapping[str, Range], shared: Mapping[str, str]) -> dict[str, Range]:
    """Per tensor the rows its buffer holds: tensors sharing one hold the hull."""
    if not shared:
        return dict(rows)
    hull: dict[str, Range] = {}
    for t, (a, b) in rows.items():
        o = shared.get(t, t)
        h = hull.get(o)
        hull[o] = (a, b) if h is None else (min(h[0], a), max(h[1], b))
    return {t: hull[shared.get(t, t)] for t in rows}


def _tile_bounds(
    tiles: Sequence[TileRows], tile_hw: tuple[int, int]
) -> tuple[list[Range], list[Range] | None]:
    """Each tile's own output rows (and columns): the tiles partition the
    band's output, so spilling exactly these writes every row once."""
    tile_h, tile_w = tile_hw
    if not tiles or tile_h <= 0:
        return [t.out for t in tiles], [t.cols for t in tiles if t.cols] or None
    first = tiles[0]
    height = max(t.out[1] for t in tiles)
    rows = [(a, min(a + tile_h, height)) for a in range(0, height, tile_h)]
    if first.cols is None or tile_w <= 0:
        return [rows[i] for i in range(len(tiles))], None
    width = max(t.cols[1] for t in tiles if t.cols)
    cols = [(a, min(a + tile_w, width)) for a in range(0, width, tile_w)]
    return (
        [rows[i // len(cols)] for i in range(len(tiles))],
        [cols[i % len(cols)] for i in range(len(tiles))],
    )


def _check_capacity(name: str, tiles: Sequence[Tile], buffers: Mapping[str, Buffer]) -> None:
    """Every band a tile holds fits its buffer (allocated once, at the plan's rows)."""
    for tile in tiles:
        for t, band in tile.held.items():
            cap = buffers[t].shape
            for ax, (lo, hi) in band.items():
                if hi - lo > cap[ax]:
                    raise PlanDiscrepancy(
                        f"{name} tile {tile.index}: '{t}' must hold [{lo}, {hi}) along axis "
                        f"{ax} ({hi - lo} rows) but the plan allocates {cap[ax]}"
                    )


def _tile_steps(
    graph: PlanGraph,
    tables: GraphTables,
    nodes: Sequence[int],
    axes: Mapping[str, int],
    tiles: Sequence[TileRows],
    loaded: Sequence[str],
    spilled: Sequence[str],
    line_buffered: bool,
    recompute: frozenset[int],
    gap: int | None,
    tile_hw: tuple[int, int] = (0, 0),
    shared: Mapping[str, str] | None = None,
) -> list[Tile]:
    """Per tile: held bands, kept rows, loads, op bands and spills, as the
    planner's cost model runs them. A line buffer evicts a row only when no
    later tile reads it again: rows below the first one computed are never
    held, and a row a later tile needs stays (a dilated window's clipped
    ranges do not grow monotonically at the top border)."""
    names = list(tiles[0].rows) if tiles else []
    shapes = {t: graph.tensors[t].shape for t in names}
    gap_in = graph.nodes[gap].inputs[0] if gap is not None else None
    shared = shared or {}
    if line_buffered:
        news, helds = _lb_rows(graph, tables, nodes, axes, tiles, recompute, shared)
    else:
        news = [dict(tile.rows) for tile in tiles]
        helds = [_shared_hull(tile.rows, shared) for tile in tiles]
    out_rows, out_cols = _tile_bounds(tiles, tile_hw)
    out: list[Tile] = []
    for i, (tile, new, hold) in enumerate(zip(tiles, news, helds)):
        rng = tile.rows
        cols = tile.col_ranges

        def band(t: str, r: Range, cols: Mapping[str, Range] | None = cols) -> Band:
            return _band_of(axes[t], r, cols[t] if cols is not None else None, shapes[t])

        held: dict[str, Band] = {}
        keep: dict[str, Range] = {}
        held_cols = _shared_hull(cols, shared) if cols is not None else None
        for t in names:
            lo, y = hold[t]
            held[t] = band(t, (lo, y), held_cols)
            if t in shared:
                continue  # its buffer's owner keeps the rows
            fresh = min(new[m][0] for m in names if shared.get(m, m) == t)
            if line_buffered and i > 0 and fresh > lo:
                keep[t] = (lo, fresh)
        loads = tuple((t, band(t, new[t])) for t in loaded if _nonempty(band(t, new[t])))
        ops: list[OpStep] = []
        for k in nodes:
            if k == gap:
                continue
            outs = [o for o in graph.nodes[k].outputs if o in rng]
            if not outs:
                continue
            ranges = {rng[o] if k in recompute or not line_buffered else new[o] for o in outs}
            if len(ranges) != 1:
                raise UnsupportedBand(
                    f"'{graph.nodes[k].name}': results with different row ranges in one tile"
                )
            (r,) = ranges
            b = band(outs[0], r)
            if _nonempty(b):
                ops.append(OpStep(k, b))
        spills = []
        for t in spilled:
            r = new[t]
            c = cols[t] if cols is not None else None
            if not line_buffered:  # a root read with a halo: spill the tile's own rows once
                r = (max(r[0], out_rows[tile.index][0]), min(r[1], out_rows[tile.index][1]))
                if c is not None and out_cols is not None:
                    ci = out_cols[tile.index]
                    c = (max(c[0], ci[0]), min(c[1], ci[1]))
            b = _band_of(axes[t], r, c, shapes[t])
            if _nonempty(b):
                spills.append((t, b))
        acc = _band_of(axes[gap_in], rng[gap_in], None, shapes[gap_in]) if gap_in else None
        out.append(Tile(tile.index, held, keep, loads, tuple(ops), tuple(spills), acc))
    return out


def _subrow_tiles(
    graph: PlanGraph, tables: GraphTables, st: StagePlan
) -> tuple[dict[str, tuple[int, ...]], list[Tile], list[str], tuple[Range, ...]]:
    """The sub-row bands of an accumulation (the planner records no ranges):
    with no channel group, runs of `tile_w` positions of one row, rows
    outermost; with groups of `channel_group` channels, the groups outermost,
    each over bands of `tile_h` rows x `tile_w` positions. Whole reads are
    loaded once. Returns the buffer shapes, the tiles, the inputs loaded
    once and the channel groups."""
    nodes = tuple(range(st.start, st.stop))
    gap = nodes[-1]
    x = graph.nodes[gap].inputs[0]
    xs = graph.tensors[x].shape
    rank = len(xs)
    height = xs[1]
    positions = math.prod(xs[2:-1]) if rank >= 3 else 1
    chans = xs[-1]
    produced = {o for k in nodes for o in graph.nodes[k].outputs}
    whole: list[str] = []
    for k in nodes[:-1]:
        for name, m, _, _ in tables.node_bands[k].ins:
            if m[0] == WHOLE and name not in whole:
                whole.append(name)
    touched = [
        n
        for k in nodes
        for n in (*graph.nodes[k].inputs, *graph.nodes[k].outputs)
        if not graph.tensors[n].is_const
    ]
    out_t = graph.nodes[gap].outputs[0]
    banded = [n for n in dict.fromkeys(touched) if n not in whole and n != out_t]
    g = st.channel_group
    th, tw = (st.tile_h, st.tile_w) if g else (1, st.tile_w)
    tw = min(max(tw, 1), positions)
    groups = [(c0, min(c0 + g, chans)) for c0 in range(0, chans, g)] if g else [(0, chans)]
    shapes: dict[str, tuple[int, ...]] = {}
    for t in banded:
        shape = list(graph.tensors[t].shape)
        shape[1] = th
        if rank == 4:
            shape[2] = tw
        if g:
            shape[-1] = g
        shapes[t] = tuple(shape)
    for t in whole:
        shapes[t] = graph.tensors[t].shape
    bands: list[dict[int, Range]] = []
    for c0, c1 in groups:
        for r0 in range(0, height, th):
            for p0 in range(0, positions, tw):
                b = {1: (r0, min(r0 + th, height))}
                if rank == 4:
                    b[2] = (p0, min(p0 + tw, positions))
                if g:
                    b[rank - 1] = (c0, c1)
                bands.append(b)
    loaded = [t for t in banded if t not in produced]
    spilled = [t for t in banded if t in produced and t in st.outputs]
    tiles = []
    for i, b in enumerate(bands):
        held: dict[str, Band] = {t: dict(b) for t in banded}
        held.update({t: {} for t in whole})
        ops = tuple(OpStep(k, dict(b)) for k in nodes[:-1])
        loads = tuple((t, dict(b)) for t in loaded)
        spills = tuple((t, dict(b)) for t in spilled)
        tiles.append(Tile(i, held, {}, loads, ops, spills, dict(b)))
    once = [t for t in whole if t not in produced]
    return shapes, tiles, once, tuple(groups)


def schedule(view: GraphView, p: Plan) -> Program:
    """The program of a plan: every unit's buffers, offsets and tile steps."""
    if not p.fits:
        raise PlanRunError(f"the plan does not fit, nothing runs: {p.message}")
    graph = view.graph
    dt = view_dtypes(view)
    tables = GraphTables(graph)
    units: list[Unit] = []
    chain_of = {s: c for c in p.chains for s in c.stages}
    done_chains: set[int] = set()
    for st in p.stages:
        if st.index in chain_of:
            c = chain_of[st.index]
            if c.index in done_chains:
                continue
            done_chains.add(c.index)
            units.append(_chain_unit(graph, dt, tables, len(units), c, p))
        elif not st.tiled:
            units.append(_normal_unit(graph, dt, len(units), st, p.in_place, p.peak))
        else:
            units.append(_stage_unit(graph, dt, tables, len(units), st))
    birth: dict[str, int] = {}
    death: dict[str, int] = {}
    if not p.in_place:
        unit_of = {}
        for u in units:
            for k in _unit_nodes(u):
                unit_of[k] = u.index
        last = len(units) - 1
        for name, info in graph.tensors.items():
            if info.is_const:
                continue
            prod = graph.producer(name)
            readers = {unit_of[k] for k in graph.consumers(name)}
            b = 0 if prod is None else unit_of[prod]
            keep = name in graph.outputs or (
                readers if prod is None else any(r != b for r in readers)
            )
            if not keep:
                continue
            birth[name] = b
            death[name] = last if name in graph.outputs else max(readers)
    return Program(p, graph, tuple(units), p.peak, birth, death, dt)


def _unit_nodes(u: Unit) -> range | tuple[int, ...]:
    return range(u.stage.start, u.stage.stop) if isinstance(u, NormalUnit) else u.nodes


def _stage_unit(
    graph: PlanGraph, dt: Mapping[str, np.dtype], tables: GraphTables, index: int, st: StagePlan
) -> TiledUnit:
    name = f"stage {st.index}"
    if st.strategy == "accumulate" and not st.tiles:
        nodes = tuple(range(st.start, st.stop))
        axes = _axes(graph, tables, nodes)
        shapes, tiles, once, groups = _subrow_tiles(graph, tables, st)
        buffers: dict[str, Buffer] = {}
        offset = 0
        for t, shape in shapes.items():
            buffers[t] = Buffer(t, shape, dt[t], offset)
            offset += buffers[t].size
        gap = nodes[-1]
        out = graph.nodes[gap].outputs[0]
        oshape = list(graph.tensors[out].shape)
        oshape[-1] = max(b - a for a, b in groups)
        buffers[out] = Buffer(out, tuple(oshape), dt[out], offset)
        offset += buffers[out].size
        buffers[out + ".acc"] = Buffer(out + ".acc", tuple(oshape), ACC_DTYPE, offset)
        return TiledUnit(
            index,
            name,
            "accumulate",
            nodes,
            axes,
            buffers,
            tuple(once),
            tuple(tiles),
            False,
            gap,
            groups,
            st.peak,
            st.inputs,
            st.outputs,
        )
    if st.strategy not in (
        "strips",
        "grid",
        "accumulate",
        "rows",
        "resize",
        "axis",
        "whole_rows",
        "reshape",
        "expanded",
    ):
        raise UnsupportedBand(f"{name}: strategy '{st.strategy}' has no loop-level runner")
    if not st.tiles:
        raise UnsupportedBand(f"{name}: strategy '{st.strategy}' carries no tile ranges")
    return _tiled_unit(
        graph,
        dt,
        tables,
        index,
        name,
        st.strategy,
        st.start,
        st.stop,
        st.band_rows,
        st.band_cols,
        st.tiles,
        False,
        frozenset(),
        st.inputs,
        st.outputs,
        st.peak,
        (st.tile_h, st.tile_w),
        st.shared,
    )


def _chain_unit(
    graph: PlanGraph,
    dt: Mapping[str, np.dtype],
    tables: GraphTables,
    index: int,
    c: ChainPlan,
    p: Plan,
) -> TiledUnit:
    recompute: set[int] = set()
    for s in c.stages:
        st = p.stages[s]
        if any(graph.nodes[k].is_channel_concat for k in range(st.start, st.stop)):
            recompute.update(range(st.start, st.stop))
    return _tiled_unit(
        graph,
        dt,
        tables,
        index,
        f"chain {c.index}",
        "chain",
        c.start,
        c.stop,
        c.band_rows,
        {},
        c.tiles,
        c.line_buffered,
        frozenset(recompute),
        c.inputs,
        c.outputs,
        c.peak,
        (c.tile_h, 0),
        c.shared,
    )


# ---------------------------------------------------------------------------
# Memories


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


@dataclass
class SlowMemory:
    """Named arrays with byte counters: reads as loaded, writes as spilled."""

    arrays: dict[str, np.ndarray] = field(default_factory=dict[str, np.ndarray])
    sizes: dict[str, int] = field(default_factory=dict[str, int])
    reads: int = 0
    writes: int = 0
    now: int = 0
    peak: int = 0

    def alloc(self, name: str, shape: tuple[int, ...], dtype: np.dtype) -> None:
        self.arrays[name] = np.zeros(shape, dtype=dtype)
        size = align(math.prod(shape) * dtype.itemsize)
        self.sizes[name] = size
        self.now += size
        self.peak = max(self.peak, self.now)

    def free(self, name: str) -> None:
        self.arrays.pop(name)
        self.now -= self.sizes.pop(name)

    def load(self, name: str, band: Band) -> np.ndarray:
        a = self.arrays[name]
        part = a[band_exec.band_slices(band, a.ndim)]
        self.reads += part.nbytes
        return part

    def store(self, name: str, band: Band, value: np.ndarray) -> None:
        a = self.arrays[name]
        a[band_exec.band_slices(band, a.ndim)] = value
        self.writes += value.nbytes


@dataclass(frozen=True)
class RunStats:
    """What a run measured, in bytes."""

    fast_peak: int
    fast_high: int
    arena_bytes: int
    slow_peak: int
    slow_reads: int
    slow_writes: int
    tiles: int

    def lines(self) -> list[str]:
        return [
            f"fast peak: {self.fast_peak}",
            f"slow peak: {self.slow_peak}",
            f"slow reads: {self.slow_reads}",
            f"slow writes: {self.slow_writes}",
        ]


@dataclass(frozen=True)
class RunResult:
    outputs: list[np.ndarray]
    stats: RunStats


# ---------------------------------------------------------------------------
# Execution


class _Runner:
    def __init__(self, prog: Program, view: GraphView, consts: Mapping[str, np.ndarray]):
        self.prog = prog
        self.view = view
        self.graph = prog.graph
        self.consts = consts
        self.arena = FastArena(prog.arena_bytes)
        self.slow = SlowMemory()
        self.tiles = 0
        self.ops: dict[int, nn.NNOp] = {}
        for k, node in enumerate(self.graph.nodes):
            op = view.ops[node.name]
            assert isinstance(op, nn.NNOp)
            self.ops[k] = op
        self.tables = GraphTables(self.graph)

    def _slow_alloc(self, name: str) -> None:
        info = self.graph.tensors[name]
        self.slow.alloc(name, info.shape, self.prog.dtypes[name])

    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        graph, prog = self.graph, self.prog
        if prog.plan.in_place:
            unit = prog.units[0]
            assert isinstance(unit, NormalUnit)
            return self._normal(unit, dict(zip(graph.inputs, inputs)))
        for name, x in zip(graph.inputs, inputs):
            if name in prog.slow_birth:
                self._slow_alloc(name)
                self.slow.arrays[name][...] = x
        for u in prog.units:
            for name, b in prog.slow_birth.items():
                if b == u.index and graph.producer(name) is not None:
                    self._slow_alloc(name)
            if isinstance(u, NormalUnit):
                self._normal(u, {})
            else:
                self._tiled(u)
            self.arena.reset()
            for name, d in prog.slow_death.items():
                if d == u.index and name not in graph.outputs and name in self.slow.arrays:
                    self.slow.free(name)
        return [self.slow.arrays[o].copy() for o in graph.outputs]

    def _args(self, k: int, views: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        return [
            self.consts[n] if self.graph.tensors[n].is_const else views[n]
            for n in self.graph.nodes[k].inputs
        ]

    def _normal(self, u: NormalUnit, given: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        views: dict[str, np.ndarray] = {}
        graph = self.graph
        for ev, what in u.events:
            if ev == "load":
                assert isinstance(what, str)
                views[what] = self.arena.alloc(u.buffers[what], u.name)
                if u.in_place:
                    views[what][...] = given[what]
                else:
                    views[what][...] = self.slow.load(what, {})
            elif ev == "alloc":
                assert isinstance(what, str)
                views[what] = self.arena.alloc(u.buffers[what], u.name)
            elif ev == "op":
                assert isinstance(what, int)
                res = self.ops[what].reference(self._args(what, views))
                for o, r in zip(graph.nodes[what].outputs, res):
                    views[o][...] = r
            elif ev == "free":
                assert isinstance(what, str)
                self.arena.free(what)
            else:
                assert isinstance(what, str)
                if not u.in_place:
                    self.slow.store(what, {}, views[what])
        if u.in_place:
            return [views[o].copy() for o in graph.outputs]
        return []

    def _tiled(self, u: TiledUnit) -> None:
        graph = self.graph
        views: dict[str, np.ndarray] = {}
        for key, buf in u.buffers.items():
            if buf.key == key:
                views[key] = self.arena.alloc(buf, u.name)
        for key, buf in u.buffers.items():
            if buf.key != key:  # held in the buffer an in-place activation writes
                views[key] = views[buf.key]
        for t in u.once:
            views[t][...] = self.slow.load(t, {})
        base: dict[str, Band] = {}
        if u.gap is None:
            for tile in u.tiles:
                self.tiles += 1
                self._tile(u, tile, views, base)
            return
        gap_op = self.ops[u.gap]
        assert isinstance(gap_op, nn.GlobalAveragePoolOp)
        x = graph.nodes[u.gap].inputs[0]
        out = graph.nodes[u.gap].outputs[0]
        acc, res = views[out + ".acc"], views[out]
        per = len(u.tiles) // len(u.acc_groups)
        last = graph.tensors[out].rank - 1
        for gi, (c0, c1) in enumerate(u.acc_groups):
            acc[...] = 0
            n = c1 - c0
            for tile in u.tiles[gi * per : (gi + 1) * per]:
                self.tiles += 1
                self._tile(u, tile, views, base)
                band = tile.accumulate
                assert band is not None
                src = self._read(u, x, views, base, band, band)
                band_exec.accumulate(gap_op, src, acc[..., :n])
            res[..., :n] = band_exec.finish(gap_op, acc[..., :n])
            cut = {last: (c0, c1)} if n != graph.tensors[out].shape[-1] else {}
            self.slow.store(out, cut, res[..., :n])

    def _tile(
        self, u: TiledUnit, tile: Tile, views: dict[str, np.ndarray], base: dict[str, Band]
    ) -> None:
        # a line buffer keeps its history rows: move them to the buffer's start
        for t, (lo, hi) in tile.keep.items():
            old = base.get(t)
            ax = u.axes[t]
            if old is None or ax not in old or old[ax][0] > lo or old[ax][1] < hi:
                raise PlanRunError(
                    f"{u.name} tile {tile.index}: '{t}' must keep rows [{lo}, {hi}) but "
                    f"holds {dict(old) if old else 'nothing'}"
                )
            src = lo - old[ax][0]
            v = views[t]
            idx_dst = [slice(None)] * v.ndim
            idx_src = [slice(None)] * v.ndim
            idx_dst[ax] = slice(0, hi - lo)
            idx_src[ax] = slice(src, src + hi - lo)
            if src:
                v[tuple(idx_dst)] = v[tuple(idx_src)]
        for t, band in tile.held.items():
            base[t] = band
        for t, band in tile.loads:
            self._write(u, t, views, base, band, self.slow.load(t, band))
        for step in tile.ops:
            self._op(u, step, views, base)
        for t, band in tile.spills:
            self.slow.store(t, band, self._read(u, t, views, base, band, band))

    def _index(
        self, u: TiledUnit, t: str, base: Mapping[str, Band], band: Band, ndim: int
    ) -> tuple[slice, ...]:
        held = base[t]
        idx = [slice(None)] * ndim
        for ax, (lo, hi) in band.items():
            if ax not in held:
                if held:
                    raise BandError(f"{u.name}: '{t}' is not cut along axis {ax}")
                idx[ax] = slice(lo, hi)
                continue
            h0, h1 = held[ax]
            if lo < h0 or hi > h1:
                raise BandError(
                    f"{u.name}: '{t}' rows [{lo}, {hi}) along axis {ax} are not in the "
                    f"band it holds, [{h0}, {h1})"
                )
            idx[ax] = slice(lo - h0, hi - h0)
        return tuple(idx)

    def _write(
        self,
        u: TiledUnit,
        t: str,
        views: dict[str, np.ndarray],
        base: Mapping[str, Band],
        band: Band,
        value: np.ndarray,
    ) -> None:
        v = views[t]
        v[self._index(u, t, base, band, v.ndim)] = value

    def _read(
        self,
        u: TiledUnit,
        t: str,
        views: dict[str, np.ndarray],
        base: Mapping[str, Band],
        band: Band,
        _: Band,
    ) -> np.ndarray:
        v = views[t]
        return v[self._index(u, t, base, band, v.ndim)]

    def _op(
        self, u: TiledUnit, step: OpStep, views: dict[str, np.ndarray], base: Mapping[str, Band]
    ) -> None:
        graph = self.graph
        k = step.node
        node = graph.nodes[k]
        args: list[np.ndarray] = []
        held: list[Band] = []
        for name in node.inputs:
            if graph.tensors[name].is_const:
                args.append(self.consts[name])
                held.append({})
                continue
            v = views[name]
            src = operand_source(self.tables, u, k, name, base[name])
            if src is None:
                shape = graph.tensors[name].shape
                if v.shape != shape:
                    raise BandError(
                        f"{u.name}: '{name}' is read whole but its buffer "
                        f"holds {v.shape} of {shape}"
                    )
                args.append(v)
                held.append({})
                continue
            want = {
                a: (base[name][a] if kind == "held" else step.out[ax])
                for a, (kind, ax) in src.items()
            }
            args.append(v[self._index(u, name, base, want, v.ndim)])
            held.append(want)
        res = band_exec.compute(self.ops[k], args, held, step.out)
        for o, r in zip(node.outputs, res):
            if o in views:
                self._write(u, o, views, base, step.out, r)


def operand_source(
    tables: GraphTables, u: TiledUnit, k: int, name: str, held: Band
) -> dict[int, tuple[str, int]] | None:
    """Which band op `k` reads of its operand `name` whose buffer holds
    `held`: None for the whole tensor; else per held axis ("held", axis) for
    the rows the buffer holds (a window reads its halo from them) or ("out",
    output axis) for exactly the op's output band (an elementwise read)."""
    m, col = _maps(tables, k)[name]
    if not held or m[0] == WHOLE:
        return None
    out_axis = tables.node_bands[k].out_axis
    ax = u.axes[name]
    src: dict[int, tuple[str, int]] = {}
    for a in held:
        if a == ax:
            src[a] = ("out", out_axis) if m[0] == IDENT else ("held", a)
        else:
            cm = col if a == 2 and col is not None else IDENT_MAP
            src[a] = ("out", a) if cm[0] == IDENT else ("held", a)
    return src


def weight_ref(view: GraphView, name: str) -> str:
    """The weight-table key of a constant tensor (its `nn.weight` reference)."""
    owner = view.values[name].owner
    ref = owner.properties.get("ref") if isinstance(owner, Operation) else None
    if (
        owner is None
        or getattr(owner, "name", "") != "nn.weight"
        or not isinstance(ref, StringAttr)
    ):
        raise PlanRunError(f"constant '{name}' is not an nn.weight")
    return ref.data


def tensor_consts(view: GraphView, weights: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Constant tensors by graph name, from the module's weight table."""
    out: dict[str, np.ndarray] = {}
    for name, info in view.graph.tensors.items():
        if not info.is_const:
            continue
        ref = weight_ref(view, name)
        if ref not in weights:
            raise PlanRunError(f"weight '{ref}' is not in the weight table")
        out[name] = weights[ref]
    return out


def untiled_reference(
    fn: func.FuncOp, weights: Mapping[str, np.ndarray], inputs: Sequence[np.ndarray]
) -> list[np.ndarray]:
    """The untiled oracle on internal-layout inputs: every `nn` op once, on
    whole tensors, in order (through stages and chains if the function has
    them)."""
    view = build_view(fn)
    graph = view.graph
    consts = tensor_consts(view, weights)
    env: dict[str, np.ndarray] = dict(zip(graph.inputs, inputs))
    for node in graph.nodes:
        op: nn.NNOp = view.ops[node.name]  # type: ignore[assignment]
        res = op.reference([consts[n] if n in consts else env[n] for n in node.inputs])
        env.update(zip(node.outputs, res))
    return [env[o] for o in graph.outputs]


def run_program(
    prog: Program, view: GraphView, weights: Mapping[str, np.ndarray], inputs: Sequence[np.ndarray]
) -> RunResult:
    """Run a program on internal-layout inputs; outputs and measured figures."""
    graph = view.graph
    if len(inputs) != len(graph.inputs):
        raise PlanRunError(f"the model takes {len(graph.inputs)} input(s), got {len(inputs)}")
    for name, x in zip(graph.inputs, inputs):
        info = graph.tensors[name]
        dt = prog.dtypes[name]
        if tuple(x.shape) != info.shape or x.dtype != dt:
            raise PlanRunError(
                f"input '{name}' must be {dt} of shape {'x'.join(map(str, info.shape))}, got "
                f"{x.dtype} of shape {'x'.join(map(str, x.shape))}"
            )
    runner = _Runner(prog, view, tensor_consts(view, weights))
    outs = runner.run(inputs)
    a, s = runner.arena, runner.slow
    stats = RunStats(a.peak, a.high, a.size, s.peak, s.reads, s.writes, runner.tiles)
    return RunResult(outs, stats)


def run_plan(
    fn: func.FuncOp,
    weights: Mapping[str, np.ndarray],
    inputs: Sequence[np.ndarray],
    budget: int,
    p: Plan | None = None,
) -> RunResult:
    """Plan `fn` under `budget` (or take `p`) and run it on internal-layout inputs."""
    view = build_view(fn)
    if p is None:
        p = plan(view.graph, budget)
    prog = schedule(view, p)
    return run_program(prog, view, weights, inputs)


# ---------------------------------------------------------------------------
# The loop IR: lifetimes, the arena check and the interpreter

OFFSET_ATTR = "loop.offset"
ARENA_ATTR = "loop.arena"
SLOW_ARENA_ATTR = "loop.slow_arena"


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
    dt = _numpy_dtype(t.element_type)
    return align(math.prod(t.get_shape()) * dt.itemsize)


def _numpy_dtype(elt: Attribute) -> np.dtype:
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
    names = _arg_names(fn)
    for i, a in enumerate(fn.body.block.args):
        space = loop.space_of(a.type)
        if not space:
            continue
        uses = [top[id(u.operation)] for u in a.uses]
        returned = any(isinstance(u.operation, func.ReturnOp) for u in a.uses)
        last = end if returned else max(uses, default=0)
        out.append(Lifetime(f"arg{i}", names[i], space, _memref_bytes(a.type), 0, last, a))
    for pos, op in enumerate(ops):
        if not isinstance(op, mr.AllocOp):
            continue
        space = loop.space_of(op.memref.type)
        if not space:
            continue
        last = end
        for u in op.memref.uses:
            if isinstance(u.operation, mr.DeallocOp):
                last = top[id(u.operation)]
        tensor = op.attributes.get("loop.tensor")
        name = tensor.data if isinstance(tensor, StringAttr) else f"buffer{pos}"
        out.append(
            Lifetime(f"alloc{pos}", name, space, _memref_bytes(op.memref.type), pos, last, op)
        )
    return out


def _arg_names(fn: func.FuncOp) -> list[str]:
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


def _offset_of(lv: Lifetime, fn: func.FuncOp) -> int | None:
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


def _int_attr(fn: func.FuncOp, key: str) -> int | None:
    a = fn.attributes.get(key)
    return int(a.value.data) if isinstance(a, IntegerAttr) else None


def planned(fn: func.FuncOp) -> dict[str, int]:
    """The plan's figures recorded on a lowered function (`loop.plan`)."""
    a = fn.attributes.get("loop.plan")
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
        off = _offset_of(lv, fn)
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
        size = _int_attr(fn, attr)
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
    fast = _int_attr(fn, ARENA_ATTR)
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


class LoopIRError(PlanRunError):
    """The loop IR does something the plan forbids (a dry run names it)."""


@dataclass
class MemRef:
    """A memref at run time: a numpy view, which of its elements hold data
    (loaded, computed or written), its memory space and buffer name."""

    data: np.ndarray
    valid: np.ndarray | None
    space: str
    name: str


class LoopRunner:
    """Runs a lowered function (`lower-to-loops`, `plan-arena`) on numpy.

    Fast buffers are views of one byte arena of `loop.arena` bytes at their
    static offsets; slow ones of a second arena. Every copy between the
    spaces is counted, and the arenas check every allocation (inside, no
    overlap with a live buffer). With `compute=False` (a dry run, what
    `plan-arena` verifies) no band is computed, but every element's state is
    tracked: each band reads only rows that were loaded or computed and lie
    in the band it holds. A verified plan then runs without that tracking."""

    def __init__(self, module: ModuleOp, weights: Mapping[str, np.ndarray], compute: bool = True):
        self.module = module
        self.fn = main_func(module)
        self.weights = weights
        self.compute = compute
        fast = _int_attr(self.fn, ARENA_ATTR)
        slow = _int_attr(self.fn, SLOW_ARENA_ATTR)
        if fast is None or slow is None:
            raise LoopIRError("the loop IR has no arena: run plan-arena first")
        self.fast = FastArena(fast)
        self.slow = FastArena(slow)
        self.reads = 0
        self.writes = 0
        self.tiles = 0
        self.slots: dict[SSAValue, int] = {}
        self.vals: list[object] = []
        self.globals = {op.sym_name.data: op for op in module.ops if isinstance(op, mr.GlobalOp)}
        self.lives = {id(lv.owner): lv for lv in lifetimes(self.fn)}
        self.ends: dict[int, list[Lifetime]] = {}
        for lv in self.lives.values():
            if not isinstance(lv.owner, Operation):
                self.ends.setdefault(lv.last, []).append(lv)
        self.where = ""

    # ---- memory ---------------------------------------------------------

    def _alloc(self, lv: Lifetime, t: Attribute) -> MemRef:
        assert isinstance(t, MemRefType)
        off = _offset_of(lv, self.fn)
        if off is None:
            raise LoopIRError(f"{lv.space} buffer '{lv.tensor}' has no offset: run plan-arena")
        buf = Buffer(lv.key, tuple(t.get_shape()), _numpy_dtype(t.element_type), off)
        arena = self.fast if lv.space == "fast" else self.slow
        data = arena.alloc(buf, f"{lv.space} memory")
        valid = np.zeros(data.shape, dtype=bool) if not self.compute else None
        return MemRef(data, valid, lv.space, lv.tensor)

    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        block = self.fn.body.block
        if len(inputs) != len(block.args):
            raise PlanRunError(f"the model takes {len(block.args)} input(s), got {len(inputs)}")
        names = _arg_names(self.fn)
        for i, (a, x) in enumerate(zip(block.args, inputs)):
            t = a.type
            lv = self.lives.get(id(a))
            assert isinstance(t, MemRefType)
            shape, dt = tuple(t.get_shape()), _numpy_dtype(t.element_type)
            if tuple(x.shape) != shape or x.dtype != dt:
                raise PlanRunError(
                    f"input '{names[i]}' must be {dt} of shape {'x'.join(map(str, shape))}, got "
                    f"{x.dtype} of shape {'x'.join(map(str, x.shape))}"
                )
            if lv is None:
                self.vals[self._slot(a)] = MemRef(np.array(x), None, "", names[i])
                continue
            m = self._alloc(lv, t)
            m.data[...] = x
            if m.valid is not None:
                m.valid[...] = True
            self.vals[self._slot(a)] = m
        for pos, op in enumerate(block.ops):
            if isinstance(op, func.ReturnOp):
                return [self._mem(v).data.copy() for v in op.arguments]
            self._compile(op)()
            for lv in self.ends.get(pos, []):
                (self.fast if lv.space == "fast" else self.slow).free(lv.key)
        raise LoopIRError("the function has no func.return")

    def _slot(self, v: SSAValue) -> int:
        """The index of an SSA value's run-time value in `vals` (no hashing of
        SSA values in the tile loop)."""
        i = self.slots.get(v)
        if i is None:
            i = self.slots[v] = len(self.vals)
            self.vals.append(None)
        return i

    def _mem(self, v: SSAValue) -> MemRef:
        m = self.vals[self._slot(v)]
        assert isinstance(m, MemRef)
        return m

    def _int(self, v: SSAValue) -> int:
        x = self.vals[self._slot(v)]
        assert isinstance(x, int)
        return x

    # ---- ops ----------------------------------------------------------------

    def _compile(self, op: Operation) -> Callable[[], None]:
        """A thunk running `op` on `self.vals`, its static operands resolved
        once (the tile loop runs it many times)."""
        vals, slot = self.vals, self._slot
        if isinstance(op, arith.ConstantOp):
            v = op.value
            if isinstance(v, IntegerAttr):
                val: object = int(v.value.data)
            elif isinstance(v, FloatAttr):
                val = float(v.value.data)
            else:
                raise LoopIRError(f"arith.constant {v} is not a scalar")
            res = slot(op.result)
            return lambda: vals.__setitem__(res, val)
        if isinstance(op, arith.SubiOp | arith.AddiOp | arith.MuliOp):
            a, b, res = slot(op.lhs), slot(op.rhs), slot(op.result)
            if isinstance(op, arith.SubiOp):
                return lambda: vals.__setitem__(res, vals[a] - vals[b])  # type: ignore[operator]
            if isinstance(op, arith.AddiOp):
                return lambda: vals.__setitem__(res, vals[a] + vals[b])  # type: ignore[operator]
            return lambda: vals.__setitem__(res, vals[a] * vals[b])  # type: ignore[operator]
        if isinstance(op, mr.LoadOp):
            src, idx, res = slot(op.memref), tuple(slot(i) for i in op.indices), slot(op.res)
            if len(idx) == 2:  # a tile table: [tile, column]
                i0, i1 = idx

                def load2() -> None:
                    vals[res] = int(vals[src].data[vals[i0], vals[i1]])  # type: ignore[union-attr]

                return load2

            def load() -> None:
                m = vals[src]
                assert isinstance(m, MemRef)
                vals[res] = int(m.data[tuple(vals[i] for i in idx)])  # type: ignore[index]

            return load
        if isinstance(op, mr.GetGlobalOp):
            sym, res = op.name_.root_reference.data, slot(op.memref)
            return lambda: vals.__setitem__(res, self._global(sym))
        if isinstance(op, mr.AllocOp):
            lv, t, res = self.lives[id(op)], op.memref.type, slot(op.memref)
            return lambda: vals.__setitem__(res, self._alloc(lv, t))
        if isinstance(op, mr.DeallocOp):
            lv = self.lives[id(op.memref.owner)]
            return lambda: (self.fast if lv.space == "fast" else self.slow).free(lv.key)
        if isinstance(op, mr.SubviewOp):
            return self._subview(op)
        if isinstance(op, mr.CopyOp):
            src, dst = slot(op.source), slot(op.destination)
            return lambda: self._copy(vals[src], vals[dst])  # type: ignore[arg-type]
        if isinstance(op, FillOp):
            vin, vout = slot(op.inputs[0]), slot(op.outputs[0])

            def fill() -> None:
                m = vals[vout]
                assert isinstance(m, MemRef)
                m.data[...] = vals[vin]
                if m.valid is not None:
                    m.valid[...] = True

            return fill
        if isinstance(op, scf.ForOp):
            return self._for(op)
        if isinstance(op, loop.BandComputeOp):
            return self._band(op)
        raise LoopIRError(f"the loop interpreter cannot run '{op.name}'")

    def _for(self, op: scf.ForOp) -> Callable[[], None]:
        vals = self.vals
        lb, ub, step = op.lb, op.ub, op.step
        unit = op.attributes.get("loop.unit")
        name = unit.data if isinstance(unit, StringAttr) else "loop"
        tiles = "loop.kind" in op.attributes  # a tile loop (not a loop of channel groups)
        body = op.body.block
        iv = self._slot(body.args[0])
        thunks = [self._compile(inner) for inner in body.ops if not isinstance(inner, scf.YieldOp)]

        def run() -> None:
            for i in range(self._int(lb), self._int(ub), self._int(step)):
                self.tiles += tiles
                self.where = f"{name} {'tile' if tiles else 'group'} {i}"
                vals[iv] = i
                for t in thunks:
                    t()
            self.where = ""

        return run

    def _global(self, sym: str) -> MemRef:
        g = self.globals.get(sym)
        if g is None:
            raise LoopIRError(f"no memref.global @{sym}")
        t = g.type
        assert isinstance(t, MemRefType)
        init = g.initial_value
        if isinstance(init, DenseIntOrFPElementsAttr):
            arr = np.array(init.get_values(), dtype=_numpy_dtype(t.element_type))
            return MemRef(arr.reshape(tuple(t.get_shape())), None, "", sym)
        ref = g.attributes.get("loop.ref")
        key = ref.data if isinstance(ref, StringAttr) else sym
        if key not in self.weights:
            raise LoopIRError(f"weight '{key}' (@{sym}) is not in the weight table")
        w = self.weights[key]
        shape, dt = tuple(t.get_shape()), _numpy_dtype(t.element_type)
        if tuple(w.shape) != shape or w.dtype != dt:
            raise LoopIRError(
                f"weight '{key}' is {w.dtype}{list(w.shape)}, the IR says {dt}{list(shape)}"
            )
        return MemRef(w, None, "", key)

    def _subview(self, op: mr.SubviewOp) -> Callable[[], None]:
        """Static offsets and sizes as ints, dynamic ones as (slot,) tuples."""
        vals = self.vals
        src_v, res = self._slot(op.source), self._slot(op.result)
        offs: list[int | tuple[int]] = []
        dyn = iter(op.offsets)
        for v in op.static_offsets.get_values():
            offs.append((self._slot(next(dyn)),) if v == DYNAMIC_INDEX else int(v))
        sizes: list[int | tuple[int]] = []
        dyn = iter(op.sizes)
        for v in op.static_sizes.get_values():
            sizes.append((self._slot(next(dyn)),) if v == DYNAMIC_INDEX else int(v))

        static = [
            slice(o, o + n) if isinstance(o, int) and isinstance(n, int) else None
            for o, n in zip(offs, sizes)
        ]
        src_t = op.source.type
        assert isinstance(src_t, MemRefType)
        for ax, (sl, dim) in enumerate(zip(static, src_t.get_shape())):
            if sl is not None and dim != DYNAMIC_INDEX and (sl.start < 0 or sl.stop > dim):
                raise LoopIRError(
                    f"a subview takes [{sl.start}, {sl.stop}) along axis {ax} of {dim}"
                )
        dynamic = [(ax, o, n) for ax, (o, n) in enumerate(zip(offs, sizes)) if static[ax] is None]

        def subview() -> None:
            src = vals[src_v]
            assert isinstance(src, MemRef)
            index = list(static)
            shape = src.data.shape
            for ax, o, n in dynamic:
                o = o if isinstance(o, int) else vals[o[0]]
                n = n if isinstance(n, int) else vals[n[0]]
                assert isinstance(o, int) and isinstance(n, int)
                if o < 0 or n < 0 or o + n > shape[ax]:
                    raise LoopIRError(
                        f"{self.where}: a subview of '{src.name}' takes [{o}, {o + n}) along "
                        f"axis {ax} of {shape[ax]}"
                    )
                index[ax] = slice(o, o + n)
            idx = tuple(index)
            valid = src.valid[idx] if src.valid is not None else None
            vals[res] = MemRef(src.data[idx], valid, src.space, src.name)

        return subview

    def _copy(self, src: MemRef, dst: MemRef) -> None:
        if src.data.shape != dst.data.shape:
            raise LoopIRError(
                f"{self.where}: memref.copy of {src.data.shape} into {dst.data.shape}"
            )
        if src.valid is not None and not src.valid.all():
            raise LoopIRError(
                f"{self.where}: copying '{src.name}' into '{dst.name}' reads elements never written"
            )
        if src.space == "slow" and dst.space == "fast":
            self.reads += src.data.nbytes
        elif src.space == "fast" and dst.space == "slow":
            self.writes += src.data.nbytes
        dst.data[...] = src.data
        if dst.valid is not None:
            dst.valid[...] = True

    def _band(self, op: loop.BandComputeOp) -> Callable[[], None]:
        vals = self.vals
        nn_op = op.nn_op
        assert isinstance(nn_op, nn.NNOp)
        cuts = op.cut_axes()
        bounds = [self._slot(b) for b in op.bounds]
        in_vs = [self._slot(v) for v in op.inputs]
        out_vs = [self._slot(v) for v in op.outputs]
        n_in = len(in_vs)
        finish = isinstance(op, loop.FinishOp)
        accumulate = isinstance(op, loop.AccumulateOp)
        compute = self.compute

        def bands() -> list[dict[int, tuple[int, int]]]:
            values = [vals[b] for b in bounds]
            out: list[dict[int, tuple[int, int]]] = []
            i = 0
            for axes in cuts:
                band: dict[int, tuple[int, int]] = {}
                for ax in axes:
                    band[ax] = (values[i], values[i + 1])  # type: ignore[assignment]
                    i += 2
                out.append(band)
            return out

        def run() -> None:
            bs = bands()
            held, out = bs[:n_in], bs[n_in]
            if any(hi <= lo for lo, hi in out.values()):
                return  # nothing to compute in this tile
            ins: list[MemRef] = [vals[v] for v in in_vs]  # type: ignore[misc]
            outs: list[MemRef] = [vals[v] for v in out_vs]  # type: ignore[misc]
            what = f"{self.where}: {op.name} of {nn_op.name}"
            if finish:
                self._need(what, ins[0], {}, {})
                if compute:
                    assert isinstance(nn_op, nn.GlobalAveragePoolOp)
                    outs[0].data[...] = band_exec.finish(nn_op, ins[0].data)
                self._mark(outs[0])
                return
            if accumulate:
                self._need(what, ins[0], held[0], held[0])
                if compute:
                    assert isinstance(nn_op, nn.GlobalAveragePoolOp)
                    band_exec.accumulate(nn_op, ins[0].data, outs[0].data)
                return
            for i, (m, h) in enumerate(zip(ins, held)):
                if m.valid is None:
                    continue  # a verified plan runs unchecked (plan-arena's dry run checked it)
                try:
                    need = band_exec.required(nn_op, i, h, out)
                except BandError as e:
                    raise LoopIRError(f"{what}: {e}") from None
                self._need(f"{what} operand #{i}", m, h, need)
            if compute:
                try:
                    res = band_exec.compute(nn_op, [m.data for m in ins], held, out)
                except BandError as e:
                    raise LoopIRError(f"{what}: {e}") from None
                for m, r in zip(outs, res):
                    m.data[...] = r
            for m in outs:
                self._mark(m)

        return run

    def _need(self, what: str, m: MemRef, held: Band, need: Band) -> None:
        """The rows `need` lie in the band `held` and were loaded or computed."""
        if m.valid is None:
            return
        idx = [slice(None)] * m.data.ndim
        for ax, (lo, hi) in need.items():
            if hi <= lo:
                idx[ax] = slice(0, 0)
                continue
            h0, h1 = held.get(ax, (0, m.data.shape[ax]))
            if lo < h0 or hi > h1:
                raise LoopIRError(
                    f"{what} reads rows [{lo}, {hi}) of '{m.name}' along axis "
                    f"{ax}, outside the band it holds, [{h0}, {h1})"
                )
            idx[ax] = slice(lo - h0, hi - h0)
        part = m.valid[tuple(idx)]
        if not part.all():
            bad = np.argwhere(~part)[0]
            raise LoopIRError(
                f"{what} reads '{m.name}' at {tuple(int(b) for b in bad)} of its band "
                f"{dict(need)}, which was never loaded or computed"
            )

    @staticmethod
    def _mark(m: MemRef) -> None:
        if m.valid is not None:
            m.valid[...] = True


def run_loop_module(
    module: ModuleOp,
    weights: Mapping[str, np.ndarray],
    inputs: Sequence[np.ndarray],
    compute: bool = True,
) -> RunResult:
    """Run a lowered, arena-planned module on internal-layout inputs."""
    r = LoopRunner(module, weights, compute)
    outs = r.run(inputs)
    stats = RunStats(r.fast.peak, r.fast.high, r.fast.size, r.slow.peak, r.reads, r.writes, r.tiles)
    return RunResult(outs, stats)


def dry_run(module: ModuleOp) -> None:
    """Run the loop IR without computing: LoopIRError if a band reads rows
    never loaded or outside its band, or a buffer leaves its arena."""
    fn = main_func(module)
    weights: dict[str, np.ndarray] = {}
    for g in module.ops:
        ref = g.attributes.get("loop.ref")
        if isinstance(g, mr.GlobalOp) and isinstance(ref, StringAttr):
            t = g.type
            assert isinstance(t, MemRefType)
            weights[ref.data] = np.zeros(tuple(t.get_shape()), _numpy_dtype(t.element_type))
    inputs = []
    for a in fn.body.block.args:
        t = a.type
        assert isinstance(t, MemRefType)
        inputs.append(np.zeros(tuple(t.get_shape()), _numpy_dtype(t.element_type)))
    LoopRunner(module, weights, compute=False).run(inputs)


__all__ = [
    "BandError",
    "Interval",
    "LineBufferGap",
    "LoopIRError",
    "LoopRunner",
    "PlanDiscrepancy",
    "PlanRunError",
    "Program",
    "RunResult",
    "RunStats",
    "UnsupportedBand",
    "arena_problems",
    "dry_run",
    "lifetimes",
    "live_peak",
    "place",
    "place_lifetimes",
    "run_loop_module",
    "run_plan",
    "run_program",
    "schedule",
    "untiled_reference",
]
