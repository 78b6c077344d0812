"""The tile schedule of a plan: `schedule(view, plan)` turns a `Plan` into a
`Program` (per unit, the fast buffers at static offsets and, per tile, the
loads, the rows each op computes, what line buffers keep and the spills).
`lower-to-loops` prints exactly this schedule as loop IR.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Operation

from tigris_ir.dialects import loop, nn
from tigris_ir.plan.arena import Interval, live_peak, place
from tigris_ir.plan.band import Band, Range
from tigris_ir.plan.graph import PlanGraph
from tigris_ir.plan.memory import align
from tigris_ir.plan.nn_graph import GraphView
from tigris_ir.plan.planner import ChainPlan, Plan, StagePlan, TileRows
from tigris_ir.plan.tiling import (
    ACC_DTYPE,
    IDENT,
    IDENT_MAP,
    WHOLE,
    GraphTables,
    LbOp,
    LineBufferGapError,
    RowMap,
    group_whole_channels,
    line_buffer_run,
)
from tigris_ir.plan.tiling_class import TilingClass


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
    recompute: Mapping[int, str] = field(default_factory=dict[int, str])
    """In a line-buffered chain, the ops of a member stage holding a channel
    Concat, each with its stage's name: they compute their whole range every
    tile (`spec/tiling.md`, chain memory layout), the others only new rows."""
    channel_group: int = 0
    """A band cut into groups of this many channels (groups outermost over the
    tiles, every buffer holding one group's channels); 0: not cut."""
    scratch: Mapping[str, tuple[int, int]] = field(default_factory=dict[str, tuple[int, int]])
    """A line-buffered chain's scratch buffers (`plan.scratch`), by owner: the
    node steps (first, last) each is allocated over in every tile, within
    `workspace`; last = the unit's stop: until the tile's spills."""
    workspace: Buffer | None = None
    """The buffer the scratch buffers lie in (allocated with the unit)."""
    resident_inputs: tuple[str, ...] = ()
    """Inputs a single-arena chain reads where they are resident in the fast
    arena: no buffer of the unit, no loads, no kept rows; the ops read their
    rows of the resident tensor (`held` still names the rows a tile reads)."""
    resident_outputs: tuple[str, ...] = ()
    """Outputs a single-arena line-buffered chain writes straight into their
    tensors resident in the fast arena: no buffer of the unit, no spills; the
    producing op writes its new rows in place (`held` names them)."""
    pixel_block: int = 0
    """Columns of a block of the pixel runs (`plan.scratch`); 0: none."""
    pixel_runs: tuple[tuple[int, ...], ...] = ()
    """Consecutive ops run block by block within each tile: every op of the
    run computes a block's columns of its rows before the next block."""
    blocked: tuple[str, ...] = ()
    """Scratch buffers holding one block's columns (their owner tensors)."""
    feeders: tuple[int, ...] = ()
    """Window feeders of the pixel runs (`ChainPlan.feeders`): each computes,
    in every block, the window's columns behind the block's."""


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


def row_maps(tables: GraphTables, k: int) -> dict[str, tuple[RowMap, RowMap | None]]:
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
    dt = {name: nn.dtype_of(v) for name, v in view.values.items()}
    dt.update({name: np.dtype(np.uint8) for name in view.workspace})
    dt.update({name: np.dtype(d) for name, d in view.scalars.items()})
    return dt


def _nonempty(band: Band) -> bool:
    return all(hi > lo for lo, hi in band.values())


def _band_of(
    axis: int,
    rows: Range,
    cols: Range | None,
    shape: Sequence[int],
    chans: Range | None = None,
) -> dict[int, Range]:
    """A band of a tensor (of a channel group's channels `chans`, on the last
    axis); an empty range the planner puts past the tensor's end (a clipped
    column range) is moved to the end, where it is a valid empty slice."""

    def clip(r: Range, size: int) -> Range:
        return (min(r[0], size), min(r[1], size))

    band = {axis: clip(rows, shape[axis])}
    if cols is not None and len(shape) == 4 and axis == 1:
        band[2] = clip(cols, shape[2])
    if chans is not None:
        band[len(shape) - 1] = clip(chans, shape[-1])
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
    recompute: Mapping[int, str],
    inputs: Sequence[str],
    outputs: Sequence[str],
    planned_peak: int,
    tile_hw: tuple[int, int],
    shared: Mapping[str, str] | None = None,
    channel_group: int = 0,
    scratch: Mapping[str, tuple[int, int]] | None = None,
    scratch_offsets: Mapping[str, int] | None = None,
    scratch_bytes: int = 0,
    resident_inputs: Sequence[str] = (),
    resident_outputs: Sequence[str] = (),
    pixel_block: int = 0,
    pixel_runs: Sequence[tuple[int, ...]] = (),
    blocked: Sequence[str] = (),
    blocked_cols: Mapping[str, int] | None = None,
    feeders: Sequence[int] = (),
) -> TiledUnit:
    """A tiled stage or chain: its buffers (one per tensor, except that a
    tensor an in-place activation overwrites is held in that activation's
    buffer: `shared`, and `buffers` maps it to that Buffer) and its tiles.
    A line-buffered chain's scratch buffers lie in one workspace after the
    others, each at its offset there (`scratch`)."""
    shared = shared or {}
    scratch = scratch or {}
    scratch_offsets = scratch_offsets or {}
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
        if channel_group:  # a group's channels of every tensor of the band
            shape[-1] = min(channel_group, shape[-1])
        old = extent.get(owner)
        extent[owner] = shape if old is None else [max(a, b) for a, b in zip(old, shape)]
    for t in band_rows:
        owner = shared.get(t, t)
        if owner in resident_inputs:
            if owner in produced or owner != t:
                raise PlanDiscrepancy(f"{name}: '{t}' is read in place but not a chain input")
            continue
        if owner in resident_outputs:
            if owner not in produced or owner != t or owner not in outputs:
                raise PlanDiscrepancy(f"{name}: '{t}' is written in place but not a chain output")
            continue
        if owner not in buffers and owner not in scratch:
            buffers[owner] = Buffer(owner, tuple(extent[owner]), dt[owner], offset)
            offset += buffers[owner].size
    workspace = None
    if scratch:
        key = f"{name.replace(' ', '')}.scratch"
        workspace = Buffer(key, (scratch_bytes,), np.dtype(np.uint8), offset)
        for owner in scratch:
            if owner not in extent:
                raise PlanDiscrepancy(f"{name}: scratch buffer '{owner}' holds no band tensor")
            shape = list(extent[owner])
            if owner in blocked:  # one pixel block's columns (a feeder's: its window's)
                shape[2] = (blocked_cols or {}).get(owner, min(pixel_block, shape[2]))
            buf = Buffer(owner, tuple(shape), dt[owner], offset + scratch_offsets[owner])
            if scratch_offsets[owner] + buf.size > scratch_bytes:
                raise PlanDiscrepancy(
                    f"{name}: scratch buffer '{owner}' ends past the workspace of "
                    f"{scratch_bytes} bytes"
                )
            buffers[owner] = buf
        offset += workspace.size
    for t in band_rows:
        if t not in resident_inputs and t not in resident_outputs:
            buffers[t] = buffers[shared.get(t, t)]
    if gap is not None:
        out = graph.nodes[gap].outputs[0]
        shape = graph.tensors[out].shape
        buffers[out] = Buffer(out, shape, dt[out], offset)
        offset += buffers[out].size
        acc = out + ".acc"
        buffers[acc] = Buffer(acc, shape, ACC_DTYPE, offset)
        offset += buffers[acc].size
    loaded = [t for t in band_rows if t not in produced and t not in resident_inputs]
    spilled = [t for t in outputs if t in band_rows and t in produced and t not in resident_outputs]
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
            frozenset(recompute),
            gap,
            tile_hw,
            shared,
            frozenset(feeders),
        )
    except PlanDiscrepancy as e:
        raise type(e)(f"{name}: {e}") from None
    if resident_inputs or resident_outputs:  # where they are resident: nothing is kept
        there = {*resident_inputs, *resident_outputs}
        for tl in steps:
            if any(t in resident_outputs for t in tl.keep):
                raise PlanDiscrepancy(
                    f"{name} tile {tl.index}: a tile keeps rows of an output written in place"
                )
        steps = [
            replace(tl, keep={t: r for t, r in tl.keep.items() if t not in there}) for tl in steps
        ]
    _check_capacity(name, steps, buffers, blocked)
    for t in band_rows:
        if shared.get(t, t) not in scratch:
            continue
        if t in loaded or any(t in tile.keep for tile in steps):
            raise PlanDiscrepancy(
                f"{name}: '{t}' is planned as scratch but a tile keeps or loads its rows"
            )
    _check_runs(name, graph, nodes, steps, pixel_runs, frozenset(feeders))
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
        dict(recompute) if line_buffered else {},
        channel_group,
        dict(scratch),
        workspace,
        tuple(resident_inputs),
        tuple(resident_outputs),
        pixel_block,
        tuple(pixel_runs),
        tuple(blocked),
        tuple(feeders),
    )


def _check_runs(
    name: str,
    graph: PlanGraph,
    nodes: Sequence[int],
    steps: Sequence[Tile],
    runs: Sequence[tuple[int, ...]],
    feeders: frozenset[int] = frozenset(),
) -> None:
    """Each pixel run is consecutive ops of the unit computing the same rows
    in every tile (its blocks interleave them column by column), but its
    window feeder, which computes the rows its window reads."""
    for run in runs:
        at = nodes.index(run[0]) if run[0] in nodes else -1
        if at < 0 or tuple(nodes[at : at + len(run)]) != tuple(run):
            raise PlanDiscrepancy(f"{name}: a pixel run is not consecutive ops of the unit")
        if any(k in feeders for k in run[1:]):
            raise PlanDiscrepancy(f"{name}: a window feeder does not start its pixel run")
        for tile in steps:
            got = {s.node: s.out.get(1) for s in tile.ops}
            rows = {k: got.get(k) for k in run if k not in feeders}
            if len(set(rows.values())) > 1:
                what = ", ".join(f"'{graph.nodes[k].name}' {r}" for k, r in rows.items())
                raise PlanDiscrepancy(
                    f"{name} tile {tile.index}: the ops of a pixel run compute different rows "
                    f"({what})"
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
        ins = tuple((ids[t], m) for t, (m, _) in row_maps(tables, k).items())
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


def _column_bands(tiles: Sequence[TileRows]) -> list[list[TileRows]]:
    """The tiles of a line-buffered chain in column bands, band by band (each
    band's tiles are consecutive and share its output columns)."""
    out: list[list[TileRows]] = []
    for t in tiles:
        if not out or out[-1][0].cols != t.cols:
            out.append([])
        out[-1].append(t)
    return out


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
    # channel groups repeat the same spatial tiles, groups outermost
    per = sum(1 for t in tiles if t.chans == first.chans)
    height = max(t.out[1] for t in tiles)
    rows = [(a, min(a + tile_h, height)) for a in range(0, height, tile_h)]
    if first.cols is None or tile_w <= 0:
        return [rows[i % per] for i in range(len(tiles))], None
    width = max(t.cols[1] for t in tiles if t.cols)
    cols = [(a, min(a + tile_w, width)) for a in range(0, width, tile_w)]
    return (
        [rows[(i % per) // len(cols)] for i in range(len(tiles))],
        [cols[(i % per) % len(cols)] for i in range(len(tiles))],
    )


def _check_capacity(
    name: str, tiles: Sequence[Tile], buffers: Mapping[str, Buffer], blocked: Sequence[str] = ()
) -> None:
    """Every band a tile holds fits its buffer (allocated once, at the plan's
    rows; a buffer held in pixel blocks holds one block's columns of them)."""
    for tile in tiles:
        for t, band in tile.held.items():
            if t not in buffers:
                continue  # read where it is resident
            cap = buffers[t].shape
            for ax, (lo, hi) in band.items():
                if ax == 2 and buffers[t].key in blocked:
                    continue
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
    feeders: frozenset[int] = frozenset(),
) -> list[Tile]:
    """Per tile: held bands, kept rows, loads, op bands and spills, as the
    planner's cost model runs them (a window feeder's output keeps no row:
    every tile computes the rows it holds). A line buffer evicts a row only when no
    later tile reads it again: rows below the first one computed are never
    held, and a row a later tile needs stays (a dilated window's clipped
    ranges do not grow monotonically at the top border)."""
    names = list(tiles[0].rows) if tiles else []
    shapes = {t: graph.tensors[t].shape for t in names}
    fed = {o for k in feeders for o in graph.nodes[k].outputs}
    gap_in = graph.nodes[gap].inputs[0] if gap is not None else None
    shared = shared or {}
    if line_buffered and tiles and tiles[0].cols is not None:
        news, helds = [], []  # column bands: a line-buffered run over every row each
        for band_tiles in _column_bands(tiles):
            n, h = _lb_rows(graph, tables, nodes, axes, band_tiles, recompute, shared)
            news += n
            helds += h
    elif line_buffered:
        news, helds = _lb_rows(graph, tables, nodes, axes, tiles, recompute, shared)
    else:
        news = [dict(tile.rows) for tile in tiles]
        helds = [_shared_hull(tile.rows, shared) for tile in tiles]
    out_rows, out_cols = ([], None) if line_buffered else _tile_bounds(tiles, tile_hw)
    out: list[Tile] = []
    for i, (tile, new, hold) in enumerate(zip(tiles, news, helds)):
        rng = tile.rows
        cols = tile.col_ranges

        def band(
            t: str,
            r: Range,
            cols: Mapping[str, Range] | None = cols,
            chans: Range | None = tile.chans,
        ) -> Band:
            c = cols[t] if cols is not None else None
            return _band_of(axes[t], r, c, shapes[t], chans)

        held: dict[str, Band] = {}
        keep: dict[str, Range] = {}
        held_cols = _shared_hull(cols, shared) if cols is not None else None
        for t in names:
            lo, y = hold[t]
            held[t] = band(t, (lo, y), held_cols)
            if t in shared:
                continue  # its buffer's owner keeps the rows
            fresh = min(new[m][0] for m in names if shared.get(m, m) == t)
            if line_buffered and i > 0 and fresh > lo and t not in fed:
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
            elif c is not None and tile.cols is not None:  # a column band's own columns
                c = (max(c[0], tile.cols[0]), min(c[1], tile.cols[1]))
            b = _band_of(axes[t], r, c, shapes[t], tile.chans)
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
    each over bands of `tile_h` rows x `tile_w` positions, the inputs of its
    1 x 1 convolutions held with all channels (`group_whole_channels`,
    loaded again by every group). Whole reads are
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
    full = (group_whole_channels(graph, st.start, st.stop) or frozenset()) if g else frozenset()
    th, tw = (st.tile_h, st.tile_w) if g else (1, st.tile_w)
    tw = min(max(tw, 1), positions)
    groups = [(c0, min(c0 + g, chans)) for c0 in range(0, chans, g)] if g else [(0, chans)]
    shapes: dict[str, tuple[int, ...]] = {}
    for t in banded:
        shape = list(graph.tensors[t].shape)
        shape[1] = th
        if rank == 4:
            shape[2] = tw
        if g and t not in full:
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
    last = rank - 1

    def of(t: str, b: dict[int, Range]) -> Band:
        """The band of tensor t: a tensor held with all channels is not cut."""
        return {a: r for a, r in b.items() if a != last} if t in full else dict(b)

    for i, b in enumerate(bands):
        held: dict[str, Band] = {t: of(t, b) for t in banded}
        held.update({t: {} for t in whole})
        ops = tuple(OpStep(k, dict(b)) for k in nodes[:-1])
        loads = tuple((t, of(t, b)) for t in loaded)
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
        {},
        st.inputs,
        st.outputs,
        st.peak,
        (st.tile_h, st.tile_w),
        st.shared,
        st.channel_group,
    )


def _chain_unit(
    graph: PlanGraph,
    dt: Mapping[str, np.dtype],
    tables: GraphTables,
    index: int,
    c: ChainPlan,
    p: Plan,
) -> TiledUnit:
    recompute: dict[int, str] = {}
    for s in c.stages:
        st = p.stages[s]
        if any(graph.nodes[k].is_channel_concat for k in range(st.start, st.stop)):
            recompute.update((k, f"stage {st.index}") for k in range(st.start, st.stop))
    recompute.update((k, loop.FEEDER) for k in c.feeders)
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
        c.band_cols,
        c.tiles,
        c.line_buffered,
        recompute,
        c.inputs,
        c.outputs,
        c.peak,
        (0 if c.pace else c.tile_h, 0),  # a paced run's steps are not bands of tile_h
        c.shared,
        0,
        c.scratch,
        c.scratch_offsets,
        c.scratch_bytes,
        c.in_place,
        c.direct_out,
        c.pixel_block,
        c.pixel_runs,
        c.blocked,
        c.blocked_cols,
        c.feeders,
    )


def operand_source(
    tables: GraphTables, u: TiledUnit, k: int, name: str, held: Band
) -> dict[int, tuple[str, int]] | None:
    """Which band op `k` reads of its operand `name` whose buffer holds
    `held`: None for the whole tensor; else per held axis ("held", axis) for
    the rows the buffer holds (a window reads its halo from them) or ("out",
    output axis) for exactly the op's output band (an elementwise read)."""
    m, col = row_maps(tables, k)[name]
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
