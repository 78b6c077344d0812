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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import func

from tigris_ir import band_exec
from tigris_ir.band_exec import Band, BandError, Range
from tigris_ir.dialects import nn
from tigris_ir.memory import ALIGN, align, format_bytes
from tigris_ir.nn_graph import GraphView, build_view
from tigris_ir.plan_graph import PlanGraph
from tigris_ir.planner import ChainPlan, Plan, StagePlan, TileRows, plan
from tigris_ir.tiling import (
    IDENT,
    IDENT_MAP,
    WHOLE,
    GraphTables,
    RowMap,
    map_range,
    num_tiles,
)
from tigris_ir.tiling_class import TilingClass


class PlanRunError(Exception):
    """A plan that cannot run as planned; the message names the unit and figures."""


class UnsupportedBand(PlanRunError):
    """A band kind the loop level does not run yet."""


class PlanDiscrepancy(PlanRunError):
    """The plan's schedule cannot run as its figures say (a planner bug)."""


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
            (off, off + p.size)
            for p, off in placed
            if p.first <= it.last and it.first <= p.last
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
    spill_after: tuple[str, ...]
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


def _normal_unit(graph: PlanGraph, dt: Mapping[str, np.dtype], index: int, st: StagePlan,
                 in_place: bool, capacity: int) -> NormalUnit:
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
        i.key: Buffer(i.key, graph.tensors[i.key].shape,
                      dt[i.key], offsets[i.key])
        for i in items
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


def _band_of(axis: int, rows: Range, cols: Range | None, rank: int) -> dict[int, Range]:
    band = {axis: rows}
    if cols is not None and rank == 4 and axis == 1:
        band[2] = cols
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
) -> TiledUnit:
    nodes = tuple(range(start, stop))
    axes = _axes(graph, tables, nodes)
    produced = {o for k in nodes for o in graph.nodes[k].outputs}
    gap = next((k for k in nodes if graph.nodes[k].tiling is TilingClass.ACCUMULATE), None)
    grid = bool(tiles) and tiles[0].cols is not None
    buffers: dict[str, Buffer] = {}
    offset = 0
    for t, rows in band_rows.items():
        info = graph.tensors[t]
        shape = list(info.shape)
        shape[axes[t]] = rows
        if grid and info.rank == 4 and axes[t] == 1 and t in band_cols:
            shape[2] = band_cols[t]
        buf = Buffer(t, tuple(shape), dt[t], offset)
        buffers[t] = buf
        offset += buf.size
    if gap is not None:
        out = graph.nodes[gap].outputs[0]
        shape = graph.tensors[out].shape
        buffers[out] = Buffer(out, shape, dt[out], offset)
        offset += buffers[out].size
        acc = out + ".acc"
        buffers[acc] = Buffer(acc, shape, np.dtype(np.float32), offset)
        offset += buffers[acc].size
    loaded = [t for t in band_rows if t not in produced]
    spilled = [t for t in outputs if t in band_rows and t in produced]
    roots_out = [t for t in outputs if t not in band_rows]
    try:
        steps = _tile_steps(graph, tables, nodes, axes, tiles, loaded, spilled, line_buffered,
                            recompute, gap)
    except PlanDiscrepancy as e:
        raise PlanDiscrepancy(f"{name}: {e}") from None
    _check_capacity(name, steps, buffers)
    return TiledUnit(index, name, kind, nodes, axes, buffers, (), tuple(steps),
                     line_buffered, gap, tuple(roots_out), planned_peak, tuple(inputs),
                     tuple(outputs))


def _lb_rows(
    graph: PlanGraph,
    tables: GraphTables,
    nodes: Sequence[int],
    axes: Mapping[str, int],
    tiles: Sequence[TileRows],
    recompute: frozenset[int],
) -> tuple[list[dict[str, Range]], list[dict[str, int]]]:
    """Per tile of a line-buffered chain: the new rows of every tensor (those
    of its range from the previous tile's end on; the whole range for ops
    that recompute) and the first row a reader of this tile's new rows needs
    (`BandModel.line_buffer`)."""
    names = list(tiles[0].rows)
    produced = {o for k in nodes for o in graph.nodes[k].outputs}
    stop = nodes[-1] + 1
    roots = [t for t in names if t in produced and tables.is_root(t, stop)]
    prev = {t: -1 for t in names}
    first = {t: 1 << 40 for t in names}
    news: list[dict[str, Range]] = []
    lows: list[dict[str, int]] = []
    for tile in tiles:
        rng = tile.rows
        new: dict[str, Range] = {}
        for t in names:
            x, y = rng[t]
            nx = x if prev[t] < 0 else max(prev[t], x)
            new[t] = (nx, max(nx, y))
            if y > nx:
                first[t] = min(first[t], nx)
        low = {t: new[t][0] for t in names}
        for t in roots:
            low[t] = min(low[t], rng[t][0])
        for k in nodes:
            outs = [o for o in graph.nodes[k].outputs if o in rng]
            if not outs:
                continue
            if k in recompute:
                src = (min(rng[o][0] for o in outs), max(rng[o][1] for o in outs))
                for o in outs:
                    low[o] = min(low[o], rng[o][0])
            else:
                src = (min(new[o][0] for o in outs), max(new[o][1] for o in outs))
            if src[1] <= src[0]:
                continue
            for t, (m, _) in _maps(tables, k).items():
                x, y = map_range(m, src[0], src[1], graph.tensors[t].shape[axes[t]])
                if y > x and x < first[t]:
                    raise PlanDiscrepancy(
                        f"line-buffered tile {tile.index}: '{graph.nodes[k].name}' reads "
                        f"rows [{x}, {y}) of '{t}', but the line buffers compute it only "
                        f"from row {first[t]} on (its tile ranges start at "
                        f"{[tr.rows[t][0] for tr in tiles[: tile.index + 1]]}): rows "
                        "below the first tile's range are never computed or loaded"
                    )
                if y > x and x < low[t]:
                    low[t] = x
        news.append(new)
        lows.append(low)
        for t in names:
            prev[t] = max(prev[t], rng[t][1])
    return news, lows


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
) -> list[Tile]:
    """Per tile: held bands, kept rows, loads, op bands and spills, as the
    planner's cost model runs them. A line buffer evicts a row only when no
    later tile reads it again: rows below the first one computed are never
    held, and a row a later tile needs stays (a dilated window's clipped
    ranges do not grow monotonically at the top border)."""
    names = list(tiles[0].rows) if tiles else []
    rank = {t: graph.tensors[t].rank for t in names}
    gap_in = graph.nodes[gap].inputs[0] if gap is not None else None
    if line_buffered:
        news, lows = _lb_rows(graph, tables, nodes, axes, tiles, recompute)
        first = {t: min(n[t][0] for n in news if n[t][1] > n[t][0]) for t in names}
        for i in range(len(lows) - 2, -1, -1):
            for t in names:
                lows[i][t] = min(lows[i][t], lows[i + 1][t])
        for low in lows:
            for t in names:
                low[t] = max(low[t], first[t])
    else:
        news = [dict(tile.rows) for tile in tiles]
        lows = [{t: tile.rows[t][0] for t in names} for tile in tiles]
    out: list[Tile] = []
    prev_held: dict[str, Range] = {}
    for tile, new, low in zip(tiles, news, lows):
        rng = tile.rows
        cols = tile.col_ranges

        def band(t: str, r: Range, cols: Mapping[str, Range] | None = cols) -> Band:
            return _band_of(axes[t], r, cols[t] if cols is not None else None, rank[t])

        held: dict[str, Band] = {}
        keep: dict[str, Range] = {}
        for t in names:
            y = rng[t][1]
            if line_buffered and t in prev_held:
                y = max(y, prev_held[t][1])
            lo = min(low[t], y)
            if line_buffered and t in prev_held and new[t][0] > lo:
                keep[t] = (lo, new[t][0])
            held[t] = band(t, (lo, y))
            prev_held[t] = (lo, y)
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
        spills = tuple((t, band(t, new[t])) for t in spilled if _nonempty(band(t, new[t])))
        acc = _band_of(axes[gap_in], rng[gap_in], None, rank[gap_in]) if gap_in else None
        out.append(Tile(tile.index, held, keep, loads, tuple(ops), spills, acc))
    return out


def _subrow_tiles(graph: PlanGraph, tables: GraphTables, st: StagePlan,
                  axes: Mapping[str, int]) -> tuple[dict[str, tuple[int, ...]], list[Tile],
                                                    list[str]]:
    """The sub-row bands of an accumulation (the planner records no ranges):
    runs of `tile_w` positions of one row, or one position in groups of
    `channel_group` channels. Whole reads are loaded once."""
    nodes = tuple(range(st.start, st.stop))
    gap = nodes[-1]
    x = graph.nodes[gap].inputs[0]
    xs = graph.tensors[x].shape
    rank = len(xs)
    height = xs[1]
    positions = math.prod(xs[2:-1]) if rank >= 3 else 1
    chans = xs[-1]
    produced = {o for k in nodes for o in graph.nodes[k].outputs}
    banded: list[str] = []
    whole: list[str] = []
    touched = [n for k in nodes for n in (*graph.nodes[k].inputs, *graph.nodes[k].outputs)
               if not graph.tensors[n].is_const]
    for k in nodes:
        if k == gap:
            continue
        for name, m, _, _ in tables.node_bands[k].ins:
            if m[0] == WHOLE and name not in whole:
                whole.append(name)
    for n in dict.fromkeys(touched):
        if n not in whole and n != graph.nodes[gap].outputs[0] and n not in banded:
            banded.append(n)
    if st.channel_group:
        g = st.channel_group
        shapes = {}
        for t in banded:
            s = list(graph.tensors[t].shape)
            s[1] = 1
            if rank == 4:
                s[2] = 1
            s[-1] = g
            shapes[t] = tuple(s)
        bands = []
        for r in range(height):
            for p in range(positions):
                for c0 in range(0, chans, g):
                    b = {1: (r, r + 1), rank - 1: (c0, min(c0 + g, chans))}
                    if rank == 4:
                        b[2] = (p, p + 1)
                    bands.append(b)
    else:
        w = st.tile_w
        shapes = {}
        for t in banded:
            s = list(graph.tensors[t].shape)
            s[1] = 1
            if rank == 4:
                s[2] = w
            shapes[t] = tuple(s)
        bands = []
        for r in range(height):
            for p0 in range(0, positions, w):
                b = {1: (r, r + 1)}
                if rank == 4:
                    b[2] = (p0, min(p0 + w, positions))
                bands.append(b)
    for t in whole:
        shapes[t] = graph.tensors[t].shape
    tiles = []
    loaded = [t for t in banded if t not in produced]
    spilled = [t for t in banded if t in produced and t in st.outputs]
    for i, b in enumerate(bands):
        held = {t: dict(b) for t in banded}
        held.update({t: {} for t in whole})
        ops = tuple(OpStep(k, dict(b)) for k in nodes if k != gap)
        loads = tuple((t, dict(b)) for t in loaded)
        spills = tuple((t, dict(b)) for t in spilled)
        tiles.append(Tile(i, held, {}, loads, ops, spills, dict(b)))
    once = [t for t in whole if t not in produced]
    del axes
    return shapes, tiles, once


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


def _stage_unit(graph: PlanGraph, dt: Mapping[str, np.dtype], tables: GraphTables, index: int,
                st: StagePlan) -> TiledUnit:
    name = f"stage {st.index}"
    if st.strategy == "accumulate" and not st.tiles:
        nodes = tuple(range(st.start, st.stop))
        axes = _axes(graph, tables, nodes)
        shapes, tiles, once = _subrow_tiles(graph, tables, st, axes)
        buffers: dict[str, Buffer] = {}
        offset = 0
        for t, shape in shapes.items():
            buffers[t] = Buffer(t, shape, dt[t], offset)
            offset += buffers[t].size
        gap = nodes[-1]
        out = graph.nodes[gap].outputs[0]
        oshape = graph.tensors[out].shape
        buffers[out] = Buffer(out, oshape, dt[out], offset)
        offset += buffers[out].size
        buffers[out + ".acc"] = Buffer(out + ".acc", oshape, np.dtype(np.float32), offset)
        return TiledUnit(index, name, "accumulate", nodes, axes, buffers, tuple(once),
                         tuple(tiles), False, gap, (out,), st.peak, st.inputs, st.outputs)
    if st.strategy not in ("strips", "grid", "accumulate", "rows", "resize", "axis",
                           "whole_rows", "reshape", "expanded"):
        raise UnsupportedBand(f"{name}: strategy '{st.strategy}' has no loop-level runner")
    if not st.tiles:
        raise UnsupportedBand(f"{name}: strategy '{st.strategy}' carries no tile ranges")
    return _tiled_unit(graph, dt, tables, index, name, st.strategy, st.start, st.stop,
                       st.band_rows, st.band_cols, st.tiles, False, frozenset(), st.inputs,
                       st.outputs, st.peak)


def _chain_unit(graph: PlanGraph, dt: Mapping[str, np.dtype], tables: GraphTables, index: int,
                c: ChainPlan, p: Plan) -> TiledUnit:
    recompute: set[int] = set()
    for s in c.stages:
        st = p.stages[s]
        if any(graph.nodes[k].is_channel_concat for k in range(st.start, st.stop)):
            recompute.update(range(st.start, st.stop))
    return _tiled_unit(graph, dt, tables, index, f"chain {c.index}", "chain", c.start, c.stop,
                       c.band_rows, {}, c.tiles, c.line_buffered, frozenset(recompute),
                       c.inputs, c.outputs, c.peak)


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
        raw = self.mem[buf.offset:buf.offset + buf.nbytes]
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
        return [self.consts[n] if self.graph.tensors[n].is_const else views[n]
                for n in self.graph.nodes[k].inputs]

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
        views = {key: self.arena.alloc(buf, u.name) for key, buf in u.buffers.items()}
        for t in u.once:
            views[t][...] = self.slow.load(t, {})
        gap_op = None
        gap = u.gap if u.gap is not None else -1
        if u.gap is not None:
            op = self.ops[u.gap]
            assert isinstance(op, nn.GlobalAveragePoolOp)
            gap_op = op
            views[graph.nodes[u.gap].outputs[0] + ".acc"][...] = 0
        base: dict[str, Band] = {}
        for tile in u.tiles:
            self.tiles += 1
            self._tile(u, tile, views, base)
            if gap_op is not None and tile.accumulate is not None:
                x = graph.nodes[gap].inputs[0]
                acc = views[graph.nodes[gap].outputs[0] + ".acc"]
                band = tile.accumulate
                src = self._read(u, x, views, base, band, band)
                ch = band.get(graph.tensors[x].rank - 1)
                target = acc[..., ch[0]:ch[1]] if ch is not None else acc
                band_exec.accumulate(gap_op, src, target)
        if gap_op is not None:
            out = graph.nodes[gap].outputs[0]
            views[out][...] = band_exec.finish(gap_op, views[out + ".acc"])
            self.slow.store(out, {}, views[out])

    def _tile(self, u: TiledUnit, tile: Tile, views: dict[str, np.ndarray],
              base: dict[str, Band]) -> None:
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

    def _index(self, u: TiledUnit, t: str, base: Mapping[str, Band], band: Band,
               ndim: int) -> tuple[slice, ...]:
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

    def _write(self, u: TiledUnit, t: str, views: dict[str, np.ndarray],
               base: Mapping[str, Band], band: Band, value: np.ndarray) -> None:
        v = views[t]
        v[self._index(u, t, base, band, v.ndim)] = value

    def _read(self, u: TiledUnit, t: str, views: dict[str, np.ndarray],
              base: Mapping[str, Band], band: Band, _: Band) -> np.ndarray:
        v = views[t]
        return v[self._index(u, t, base, band, v.ndim)]

    def _op(self, u: TiledUnit, step: OpStep, views: dict[str, np.ndarray],
            base: Mapping[str, Band]) -> None:
        graph = self.graph
        k = step.node
        node = graph.nodes[k]
        maps = _maps(self.tables, k)
        nb = self.tables.node_bands[k]
        out_axis = nb.out_axis
        args: list[np.ndarray] = []
        held: list[Band] = []
        for name in node.inputs:
            if graph.tensors[name].is_const:
                args.append(self.consts[name])
                held.append({})
                continue
            m, col = maps[name]
            v = views[name]
            hb = base[name]
            if not hb or m[0] == WHOLE:
                shape = graph.tensors[name].shape
                if v.shape != shape:
                    raise BandError(f"{u.name}: '{name}' is read whole but its buffer "
                                    f"holds {v.shape} of {shape}")
                args.append(v)
                held.append({})
                continue
            ax = u.axes[name]
            want = dict(hb)
            for a_ in hb:
                if a_ == ax:
                    if m[0] == IDENT:
                        want[a_] = step.out[out_axis]
                elif a_ in step.out:
                    cm = col if a_ == 2 and col is not None else IDENT_MAP
                    if cm[0] == IDENT:
                        want[a_] = step.out[a_]
            args.append(v[self._index(u, name, base, want, v.ndim)])
            held.append(want)
        res = band_exec.compute(self.ops[k], args, held, step.out)
        for o, r in zip(node.outputs, res):
            if o in views:
                self._write(u, o, views, base, step.out, r)


def tensor_consts(view: GraphView, weights: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Constant tensors by graph name, from the module's weight table."""
    out: dict[str, np.ndarray] = {}
    for name, info in view.graph.tensors.items():
        if not info.is_const:
            continue
        owner = view.values[name].owner
        if not isinstance(owner, nn.WeightOp):
            raise PlanRunError(f"constant '{name}' is not an nn.weight")
        ref = owner.ref.data
        if ref not in weights:
            raise PlanRunError(f"weight '{ref}' is not in the weight table")
        out[name] = weights[ref]
    return out


def run_program(prog: Program, view: GraphView, weights: Mapping[str, np.ndarray],
                inputs: Sequence[np.ndarray]) -> RunResult:
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


def run_plan(fn: func.FuncOp, weights: Mapping[str, np.ndarray], inputs: Sequence[np.ndarray],
             budget: int, p: Plan | None = None) -> RunResult:
    """Plan `fn` under `budget` (or take `p`) and run it on internal-layout inputs."""
    view = build_view(fn)
    if p is None:
        p = plan(view.graph, budget)
    prog = schedule(view, p)
    return run_program(prog, view, weights, inputs)


__all__ = [
    "BandError",
    "Interval",
    "PlanRunError",
    "Program",
    "RunResult",
    "RunStats",
    "UnsupportedBand",
    "live_peak",
    "num_tiles",
    "place",
    "run_plan",
    "run_program",
    "schedule",
]
