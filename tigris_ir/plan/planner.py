"""The memory plan of a PlanGraph under a fast-memory budget (spec/tiling.md).

Three steps. `form_stages` cuts the topological order into stages by dynamic
programming: each stage fits the budget, tiles under it, or is a member of a
chain, and the cuts minimise slow-memory traffic (plus `mac_weight` bytes per
recomputed MAC and, with slow memory, 1/`REREAD_SHARE` of a byte per weight
byte a tile or chain reads again, `_Ctx.rereads`). Each stage then gets its
strategy (normal, strips, a 2D grid or another band kind of the spec's
table), and `find_chains` fuses runs of consecutive stages into chains by
the spec's rules.

The runtime's cost model, as planned here (the loop-level interpreter runs
exactly this and measures the same numbers):
  * normal stage: its inputs are loaded at the start, each op allocates its
    outputs, a tensor is freed after its last use in the stage, the stage's
    outputs stay until the end and are spilled to slow memory. The peak is
    the largest sum of live buffers (each `align`ed) while an op runs.
  * a plan that is one normal stage runs in place: the caller's inputs are
    in the fast arena (counted in the peak) and the outputs stay there; no
    slow memory is used.
  * tiled stage (and a chain without a halo): nothing is freed within a
    tile; the peak is the sum of every buffer of the band (`BandModel`: the
    back-propagated rows, allocated once at the largest tile). Each tile
    loads its whole input range, halo included, from slow memory (a grid
    tile its rows x columns) and computes every row of every op's range.
    In every band but an accumulation or one holding a channel Concat, an
    activation that is the only reader of a tensor computed in the band
    writes its result over it: the two share one buffer (`shared`).
  * accumulated stage below one row (a GlobalAveragePool ending the stage,
    `_SubRow`; no per-tile ranges are recorded, `tiles` is empty): with
    `channel_group` 0, runs of `tile_w` positions of one row with every
    channel, rows outermost; the output and one partial sum (`ACC_DTYPE`) per
    channel stay whole. With `channel_group` g, the channels go in groups of
    g, outermost; each group runs over bands of `tile_h` rows x `tile_w`
    positions (rows, then runs within a row; `tile_w` is the whole width
    when `tile_h` > 1) and holds only its own g partial sums and g outputs,
    written out when the group ends. Every band buffer holds its block of
    every channel in the band (`align(tile_h * tile_w * g * cell)`) but the
    input of a 1 x 1 convolution of one group opening the band
    (`tiling.group_whole_channels`): a group of the convolution's result
    channels reads all of the input's channels, so that buffer holds its
    positions with every channel and every group loads them again; tensors
    read whole are loaded once and held. num_tiles = groups x row bands x
    runs; every other input byte is loaded exactly once.
  * line-buffered chain (a member has a window wider than one row): tile i
    computes, for every tensor, only the rows of its range not computed by
    tile i-1 (the chain's inputs: loads only those, so they are read once).
    The ranges are made monotone first (`BandModel.lb_tile_ranges`): a row
    a later tile reads is computed by the first tile reaching past it and
    held until the last tile reading it. If no line buffers fit, the chain
    runs plainly (every tile computes its whole ranges, recomputing halos).
    Each buffer holds, from the first row a reader of this (or a later)
    tile's new rows needs up to the end of the range: the new rows plus (kernel - stride)
    history rows per window, and on the first tile the whole range (the
    pipeline fills). A buffer is allocated once, at the most it holds
    (`BandModel.line_buffer`). Ops of a member stage holding a channel
    Concat compute their whole range every tile (they recompute). A buffer
    that keeps no row from one tile to the next (`plan.scratch`: a 1x1
    convolution's or a depthwise output, an Add) is scratch: the scratch
    buffers share one workspace after the others, each allocated in every
    tile from its producer to its last reader (a chain output: to the
    spills) at a static offset there, so the chain holds its line buffers
    plus the largest set of scratch buffers live at once. In a single arena
    such a chain reads its resident inputs where they are (`in_place`) and
    writes each output that no op of the chain reads straight into its
    resident tensor (`direct_out`, `plan.scratch.direct_outputs`): neither
    has a band buffer, and the outputs no spill. Where such a chain does not
    fit, it is tried with pixel runs (`plan.scratch.pixel_runs`): runs of its
    ops computed in blocks of `PIXEL_BLOCK` columns, a scratch buffer read
    only inside its run holding one block, every scratch buffer the run
    touches live over the whole run (with slow memory only where the
    weights its blocks read again cost less than spilling the tensors held
    in blocks, `_Chain.pixel_runs_pay`). A chain whose line buffers of
    whole rows do not fit (where their floor of one-row tiles does, the
    floor stage formation prunes by) is tried in column bands
    (`_column_bands`): the fewest of `COLUMN_BANDS` bands of output columns
    whose buffers fit, outermost, each a line-buffered run over every row
    holding its own columns and their halo; a band loads its columns of the
    chain's inputs with the halo columns (in a single arena: copies them
    from where they are resident, into buffers of the band's width) and
    recomputes the halo columns of its ops (the `extra_cost` of the chain);
    not a chain reading a streamed input or writing a streamed output, whose
    rows pass once each (`_Ctx.streams`). A single-arena plan that does not
    fit so is planned once more with window feeders (`_single`, `_fed`): a
    1x1 op read only through a window (an expansion before its depthwise,
    `plan.scratch.window_feeders`) is recomputed every tile for the rows its
    window reads and every pixel block for the window's columns behind the
    block, so its buffer holds one block's window and its narrow input the
    history rows; the chain runs in whole rows or column bands down to one
    output column, in the widest of `FEED_BLOCKS` that fits, and is kept
    where it costs less than running the chain plainly.
  * slow memory holds the model inputs and every tensor that crosses a unit
    (stage or chain) boundary, from its producer to its last reader (model
    outputs to the end); the slow peak sums `align`ed sizes.
  * traffic counts raw bytes: reads as loaded per tile, writes once.
  * recomputed MACs of an op = macs * (rows computed over all tiles - distinct
    rows) // output rows (cells for a grid), in integers.

Recomputation as a choice. The same ops can run two ways that trade memory
against MACs: a line-buffered chain computes every row once but holds, per
window, (kernel - stride) rows of history across the whole width; a stage
of patches (a 2D grid spanning up to `PATCH_WINDOWS` window ops, MCUNetV2's
patch-based inference) holds only the cone of one patch, and every patch
recomputes the overlap of its cone with its neighbours' (both directions).
Stage formation offers both for every segment and keeps, among the plans
whose every unit fits its budget (the fast budget less what is resident
beside it), the one of least

    cost = sum over units of (bytes loaded + bytes written)
           + mac_weight * recomputed MACs        (mac_weight bytes per MAC, 1)

so patches are chosen where they lower a unit's peak below what the line
buffers need (the budget is the memory side of the trade) or where the MACs
they recompute cost less than the traffic they save; where line buffers
fit, they cost no MAC and win. `min_single_budget(max_recompute=f)` finds
the smallest single SRAM whose plan recomputes at most a fraction f of the
MACs, and `frontier` plans the whole range of budgets, the trade in full.

Ties. Among plans of equal cost, stage formation keeps the one that cuts
the fewest unary activations off their producer (an activation that may
overwrite its input, `tiling.in_place_source`, in another unit than that
input's producer), then the one of fewest stages: the key (cost, cut
activations, stages) adds up over units and compares as a tuple. A cut
before such an activation moves the same bytes as one after it, but leaves
it to run alone on the loaded tensor, where in the producer's unit it
overwrites the producer's buffer and a kernel's epilogue may take it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from tigris_ir.plan.graph import PlanGraph
from tigris_ir.plan.memory import align, format_bytes
from tigris_ir.plan.scratch import (
    PIXEL_BLOCK,
    REREAD_SHARE,
    WHOLE_ROWS,
    ChainForm,
    chain_scratch,
    const_bytes,
    direct_outputs,
    estimated_history,
    fed_recomputed,
    in_place_inputs,
    may_run_in_pixels,
    reread_bytes,
    scratch_bytes,
    window_feeders,
)
from tigris_ir.plan.tiling import (
    ACC_DTYPE,
    BandBuilder,
    BandModel,
    GraphTables,
    LineBufferGapError,
    even_tile_h,
    group_whole_channels,
    largest_fitting,
    num_tiles,
    union_length,
)
from tigris_ir.plan.tiling_class import TilingClass

STRATEGIES = (
    "normal",
    "inplace",
    "strips",
    "grid",
    "rows",
    "accumulate",
    "resize",
    "axis",
    "whole_rows",
    "reshape",
    "expanded",
    "whole",
)
"""Stage strategies, named like the `tile` dialect's."""

NORMAL_RESIDENT = ("normal", "whole")
"""Strategies of stages run unbanded; in a single arena such a stage holds the
model inputs it reads last as its own (`Residents.normal`)."""

CHAIN_KINDS = ("strips", "whole_rows")
"""Band kinds that tile along the height (chain rule 1)."""

STREAM_KINDS = ("strips", "whole_rows")
"""Tiled stages that may read a streamed input: bands of whole rows."""

WINDOW_KINDS = (*STREAM_KINDS, "grid")
"""Tiled stages that may read a streamed input that may be read again
(`Plan.reread_input`): bands of rows and 2D tiles, each asking for a window
of rows and columns with every channel (no channel groups, no runs of
positions of an accumulation)."""

_INF = 1 << 62

PATCH_WINDOWS = 3
"""Patch-based recomputation (MCUNetV2's patches): stage formation offers a
stage of up to this many window ops as a 2D grid of patches, each patch
computing the whole cone of its output cells (the overlaps of neighbouring
cones are recomputed, both directions), beside the line-buffered chain of
the same ops (no recomputation, whole rows of history held). Each window op
widens every patch by its halo, so recomputation grows with the count; the
choice between the two is the cost of the module docstring. 1: a 2D grid
spans at most one window op (the plans before patches)."""


# ---------------------------------------------------------------------------
# Plan records
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class TileRows:
    """One tile: its output rows (and columns for a grid) and the exact row
    (and column) range [lo, hi) of every tensor of the band, clipped to it."""

    index: int
    out: tuple[int, int]
    cols: tuple[int, int] | None
    rows: Mapping[str, tuple[int, int]]
    col_ranges: Mapping[str, tuple[int, int]] | None = None
    chans: tuple[int, int] | None = None
    """A channel-grouped band: the channels [lo, hi) every tensor of the band
    holds in this tile (None: all of them)."""


@dataclass(frozen=True)
class StagePlan:
    """One stage: ops [start, stop) of the topological order and how they run.

    For a tiled stage `band_rows` gives every tensor's allocated rows (the
    height back-propagation) and `op_rows` every op's output rows; `shared`
    names the tensors an in-place activation overwrites, each with the
    tensor whose buffer holds it (`tiling.in_place_source`). Members of a
    chain carry `chain`; their band figures are the chain's.
    """

    index: int
    start: int
    stop: int
    nodes: tuple[str, ...]
    strategy: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    fits: bool
    peak: int
    tile_h: int = 0
    tile_w: int = 0
    num_tiles: int = 1
    channel_group: int = 0
    halo: int = 0
    halo_sides: tuple[int, int, int, int] = (0, 0, 0, 0)
    band_rows: Mapping[str, int] = field(default_factory=dict[str, int])
    band_cols: Mapping[str, int] = field(default_factory=dict[str, int])
    op_rows: Mapping[str, int] = field(default_factory=dict[str, int])
    tiles: tuple[TileRows, ...] = ()
    chain: int | None = None
    slow_reads: int = 0
    slow_writes: int = 0
    recomputed_macs: int = 0
    error: str | None = None
    shared: Mapping[str, str] = field(default_factory=dict[str, str])
    resident: int = 0
    """In a single-arena plan: the aligned bytes of the tensors crossing unit
    boundaries that stay in the fast arena while this stage runs (its own
    inputs and outputs among them); `peak` is then the stage's own buffers."""

    @property
    def tiled(self) -> bool:
        return self.strategy not in ("normal", "inplace", "whole")

    def describe(self) -> str:
        """The spec's words: `48 tiles of 7 x 52, halo 2`."""
        if not self.tiled:
            return self.strategy
        if self.channel_group and self.strategy == "accumulate":
            pos = f"{self.tile_h} x {self.tile_w}" if self.tile_h > 1 else f"{self.tile_w}"
            return f"{self.num_tiles} bands of {pos} positions x {self.channel_group} channels"
        if self.channel_group:
            shape = f"{self.tile_h} x {self.tile_w}" if self.tile_w else f"{self.tile_h} rows"
            return (
                f"{self.num_tiles} tiles of {shape} x {self.channel_group} channels, "
                f"halo {self.halo}"
            )
        if self.tile_w:
            return f"{self.num_tiles} tiles of {self.tile_h} x {self.tile_w}, halo {self.halo}"
        return f"{self.num_tiles} tiles of {self.tile_h} rows, halo {self.halo}"


@dataclass(frozen=True)
class ChainPlan:
    """Consecutive stages with one fused tile loop; intermediates stay in the
    arena. `history_rows` is, per tensor, the rows a line buffer keeps from
    one tile to the next (the longest overlap of consecutive ranges);
    `shared` as `StagePlan.shared`."""

    index: int
    stages: tuple[int, ...]
    start: int
    stop: int
    tile_h: int
    num_tiles: int
    line_buffered: bool
    recompute: bool
    peak: int
    halo: int
    halo_sides: tuple[int, int, int, int]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    band_rows: Mapping[str, int]
    op_rows: Mapping[str, int]
    history_rows: Mapping[str, int]
    tiles: tuple[TileRows, ...]
    slow_reads: int
    slow_writes: int
    recomputed_macs: int
    shared: Mapping[str, str] = field(default_factory=dict[str, str])
    resident: int = 0
    """As `StagePlan.resident`, over the whole chain."""
    pace: int = 0
    """0: tiles of `tile_h` output rows; else a paced line-buffered run
    (`tiling.paced_steps`): `num_tiles` steps, each loading `pace` rows of
    the chain's input, computing at most `tile_h` output rows."""
    scratch: Mapping[str, tuple[int, int]] = field(default_factory=dict[str, tuple[int, int]])
    """A line-buffered chain's scratch buffers (`plan.scratch`), by the
    tensor owning each: the node steps (first, last) it lives over in every
    tile, `stop` for a chain output (until the spills)."""
    scratch_offsets: Mapping[str, int] = field(default_factory=dict[str, int])
    """Each scratch buffer's offset in the chain's workspace."""
    scratch_bytes: int = 0
    """The workspace the scratch buffers share (their live peak)."""
    in_place: tuple[str, ...] = ()
    """Inputs of a single-arena line-buffered chain it reads where they are
    resident in the fast arena: no band buffer, no loads."""
    direct_out: tuple[str, ...] = ()
    """Outputs a single-arena line-buffered chain writes straight into their
    tensors resident in the fast arena (`plan.scratch.direct_outputs`): no
    band buffer, no spills."""
    pixel_block: int = 0
    """Columns of a block of the pixel runs (`plan.scratch`); 0: none."""
    pixel_runs: tuple[tuple[int, ...], ...] = ()
    """The chain's pixel runs: node indices, in order. Each runs block by
    block: every op of the run computes a block's columns of its new rows
    before the next block."""
    blocked: tuple[str, ...] = ()
    """The scratch buffers holding one block's columns (owner tensors)."""
    tile_w: int = 0
    """Column bands of this many output columns (outermost over the tiles,
    each band a line-buffered run over every row, its halo columns
    recomputed); 0: whole rows."""
    band_cols: Mapping[str, int] = field(default_factory=dict[str, int])
    """With column bands, the columns each buffer holds (the widest band's)."""
    feeders: tuple[int, ...] = ()
    """Window feeders (`plan.scratch.window_feeders`, node indices): each
    computes, every tile, the rows its window op reads and, in every pixel
    block, the window's columns behind the block (recomputed MACs)."""
    blocked_cols: Mapping[str, int] = field(default_factory=dict[str, int])
    """The columns each blocked scratch buffer holds (`plan.scratch.block_cols`)."""

    def describe(self) -> str:
        lb = ", line-buffered" if self.line_buffered else ""
        if self.pixel_block:
            lb += f", pixel blocks of {self.pixel_block}"
        if self.feeders:
            lb += f" ({len(self.feeders)} window feeders recomputed)"
        if self.tile_w:
            bands = len({t.cols for t in self.tiles})
            lb += f", in {bands} column bands of {self.tile_w}"
        if self.pace:
            return (
                f"chain of {len(self.stages)} stages: {self.num_tiles} steps of "
                f"{self.pace} input rows (paced), halo {self.halo}{lb}"
            )
        return (
            f"chain of {len(self.stages)} stages: {self.num_tiles} tiles of "
            f"{self.tile_h} rows, halo {self.halo}{lb}"
        )


@dataclass(frozen=True)
class Plan:
    """The whole plan and its figures (bytes and MACs)."""

    budget: int
    fits: bool
    stages: tuple[StagePlan, ...]
    chains: tuple[ChainPlan, ...]
    peak: int
    slow_peak: int
    slow_reads: int
    slow_writes: int
    macs: int
    recomputed_macs: int
    in_place: bool
    failed_node: str | None = None
    failed_min_budget: int | None = None
    failure: str | None = None
    slow_budget: int | None = None
    """The slow-memory budget the plan was made for (None: unbounded)."""
    single_arena: bool = False
    """Every tensor lives in the fast arena: what an unbounded plan keeps in
    slow memory stays there from its producer's unit to its last reader's
    (`resident` bytes per unit), and units read and write it in place."""
    stream_input: bool = False
    """The model inputs arrive in bands of rows through a callback: they are
    resident nowhere, each unit reading one loads its rows as it needs them
    (`stream_rows` rows in all, `stream_bytes` bytes)."""
    stream_rows: int = 0
    stream_bytes: int = 0
    reread_input: bool = False
    """The streamed inputs may be asked again, in windows of rows and columns
    (a frame buffer or flash, not a sensor read once): units reading them
    run in 2D tiles and column bands too (`stream_rows` then counts every
    row of every window asked, `stream_bytes` their bytes)."""
    stream_output: bool = False
    """The model outputs (those nothing reads) leave in bands of rows through a
    callback as they are produced: resident nowhere (`out_rows` rows in all)."""
    out_rows: int = 0
    streamed_outputs: frozenset[str] = frozenset()
    stream_rows_by: tuple[tuple[str, int], ...] = ()
    """The rows asked of each streamed input (`stream_rows` summed over the
    model's inputs, in its order)."""
    out_rows_by: tuple[tuple[str, int], ...] = ()
    """The rows sent of each streamed output (its height), in the model's order."""
    failed_tensor: str | None = None
    """With `failed_node`: the tensor that does not fit (single arena)."""
    failed_whole_rows: bool = False
    """With `failed_node`: it reads a streamed input or writes a streamed
    output, so it was tried in bands of whole rows only."""
    min_single: int | None = None
    """A failed plan under a slow budget: the smallest single-arena fast budget."""
    slow_needed: int | None = None
    """A failed plan under a slow budget: the slow peak of the unbounded plan
    at this fast budget (None when that does not fit either)."""
    min_single_reread: int | None = None
    """A failed plan under a slow budget whose inputs stream, read once: the
    smallest single-arena fast budget were they read again
    (`reread_input`), when that is smaller than `min_single`."""

    @property
    def message(self) -> str:
        if self.fits:
            return (
                f"fits {format_bytes(self.budget)}: peak {format_bytes(self.peak)}, "
                f"{len(self.stages)} stages, {len(self.chains)} chains"
            )
        assert self.failed_node is not None and self.failed_min_budget is not None
        if self.slow_budget is None or self.min_single is None:
            return (
                f"'{self.failed_node}' does not fit {format_bytes(self.budget)} "
                f"({self.failure}); it needs at least {self.failed_min_budget} bytes "
                f"({format_bytes(self.failed_min_budget)})"
            )
        return f"'{self.failed_node}' does not fit {self.budget_pair()} ({self.failure}); " + (
            self.smallest_budgets()
        )

    def budget_pair(self) -> str:
        """`64 KiB of fast and 0 B of slow memory`."""
        slow = "unbounded" if self.slow_budget is None else format_bytes(self.slow_budget)
        return f"{format_bytes(self.budget)} of fast and {slow} of slow memory"

    def smallest_budgets(self) -> str:
        """The budget pairs that would fit, for a failed plan under a slow budget."""
        assert self.min_single is not None
        out = (
            f"the smallest budgets that fit: a fast memory of {self.min_single} bytes "
            f"({format_bytes(self.min_single)}) and no slow memory"
        )
        if self.min_single_reread is not None:
            out += (
                f" ({self.min_single_reread} bytes, {format_bytes(self.min_single_reread)}, "
                "if the input can be read again: --reread-input)"
            )
        if self.slow_needed is not None:
            out += (
                f", or {self.slow_needed} bytes ({format_bytes(self.slow_needed)}) of slow "
                f"memory beside {format_bytes(self.budget)} of fast"
            )
        elif self.failed_min_budget:
            out += (
                f"; with unbounded slow memory the fast memory needs at least "
                f"{self.failed_min_budget} bytes ({format_bytes(self.failed_min_budget)})"
            )
        return out

    def describe(self) -> str:
        """One line per stage, like `tigris analyze -v`."""
        lines = [self.message]
        for s in self.stages:
            where = f" (chain {s.chain})" if s.chain is not None else ""
            how = (
                s.describe()
                if s.strategy == "strips" or not s.tiled
                else (f"{s.strategy}, {s.describe()}")
            )
            lines.append(f"  stage {s.index}: {', '.join(s.nodes)}: {how}{where}, peak {s.peak}")
        for c in self.chains:
            lines.append(
                f"  chain {c.index}: stages {c.stages[0]}..{c.stages[-1]}: "
                f"{c.describe()}, peak {c.peak}"
            )
        lines.append(
            f"  slow memory {self.slow_peak}, reads {self.slow_reads}, "
            f"writes {self.slow_writes}, MACs {self.macs} "
            f"+ {self.recomputed_macs} recomputed"
        )
        return "\n".join(lines)


# ---------------------------------------------------------------------------
# Normal stages
# ---------------------------------------------------------------------------


def normal_peak(graph: PlanGraph, start: int, stop: int, tables: GraphTables | None = None) -> int:
    """Peak of ops [start, stop) run as a normal stage (see the module doc)."""
    scan = _NormalScan(graph, tables or GraphTables(graph), stop)
    while scan.start > start:
        scan.prepend()
    return scan.peak


def single_peak(
    graph: PlanGraph,
    start: int,
    stop: int,
    tables: GraphTables | None = None,
    streamed: frozenset[str] = frozenset(),
    streamed_out: frozenset[str] = frozenset(),
) -> int:
    """Peak of ops [start, stop) run as a normal stage of a single-arena plan:
    its inputs and outputs are resident (`Residents`), so only the tensors it
    produces and last reads itself are its own, each live from its producer
    to its last reader in the stage; and the model inputs it reads last,
    which live (as the caller's buffers) up to their last reader.
    `Residents.normal` is what stays resident beside them. A streamed input
    is loaded by every normal stage reading it, as a model input it reads last."""
    scan = _NormalScan(graph, tables or GraphTables(graph), stop, streamed, streamed_out)
    while scan.start > start:
        scan.prepend()
    return scan.single_peak


class Residents:
    """The tensors a single-arena plan keeps in the fast arena across units.

    A tensor crossing a unit boundary (produced before it and read after it,
    a model input while read, a model output to the end) lives from the start
    of its producer's unit to the end of its last reader's, as it would in
    slow memory. While a unit [i, j) runs, exactly these are resident: every
    tensor live across cut i (`across[i]`: produced before op i, or a model
    input, and last read at or after op i) and every output of the unit. This
    depends on i and j only, so stage formation can weigh it per segment."""

    def __init__(
        self,
        graph: PlanGraph,
        tables: GraphTables,
        streamed: frozenset[str] = frozenset(),
        streamed_out: frozenset[str] = frozenset(),
    ):
        n = len(graph.nodes)
        delta = [0] * (n + 2)
        self.graph = graph
        self.tables = tables
        self.streamed = streamed
        self.streamed_out = streamed_out
        for name, info in graph.tensors.items():
            if info.is_const or name in streamed or name in streamed_out:
                continue
            last = tables.last_use[name]
            p = graph.producer(name)
            first = 0 if p is None else p + 1
            if last < first:
                continue  # never read (or read only by its own producer's stage)
            delta[first] += align(info.nbytes)
            delta[min(last, n) + 1] -= align(info.nbytes)
        self.across = [0] * (n + 1)
        run = 0
        for i in range(n + 1):
            run += delta[i]
            self.across[i] = run

    def outputs(self, start: int, stop: int) -> int:
        """Aligned bytes of the outputs of ops [start, stop)."""
        graph, last_use = self.graph, self.tables.last_use
        return sum(
            align(graph.tensors[name].nbytes)
            for k in range(start, stop)
            for name in graph.nodes[k].outputs
            if last_use[name] >= stop and name not in self.streamed_out
        )

    def of(self, start: int, stop: int) -> int:
        """Resident while a tiled unit or chain of ops [start, stop) runs."""
        return self.across[start] + self.outputs(start, stop)

    def _dies_in(self, x: str, start: int, stop: int) -> bool:
        """`x` is a resident model input last read in ops [start, stop)."""
        info = self.graph.tensors[x]
        return (
            x in self.graph.inputs
            and not info.is_const
            and x not in self.streamed
            and start <= self.tables.last_use[x] < stop
        )

    def dying_inputs(self, start: int, stop: int) -> int:
        """Aligned bytes of the model inputs last read in ops [start, stop)."""
        return sum(
            align(self.graph.tensors[x].nbytes)
            for x in self.graph.inputs
            if self._dies_in(x, start, stop)
        )

    def normal(self, start: int, stop: int) -> int:
        """Resident beside a normal stage of ops [start, stop) (`single_peak`
        counts the model inputs it reads last)."""
        return self.of(start, stop) - self.dying_inputs(start, stop)

    def tensors(self, start: int, stop: int) -> list[tuple[str, int]]:
        """The tensors resident while a tiled unit or chain of ops [start, stop)
        runs, with their aligned bytes (summing to `of`), largest first."""
        graph, last_use = self.graph, self.tables.last_use
        found: list[tuple[str, int]] = []
        for name, info in graph.tensors.items():
            if info.is_const or name in self.streamed or name in self.streamed_out:
                continue
            p = graph.producer(name)
            last = last_use[name]
            crosses = (p is None or p < start) and last >= start
            out = p is not None and start <= p < stop and last >= stop
            if crosses or out:
                found.append((name, align(info.nbytes)))
        return sorted(found, key=lambda t: -t[1])

    def largest(self, start: int, stop: int) -> tuple[str, int] | None:
        """The largest tensor resident while ops [start, stop) run."""
        found = self.tensors(start, stop)
        return found[0] if found else None

    def held_by(self, unit: StagePlan | ChainPlan) -> list[tuple[str, int]]:
        """The tensors resident beside a planned unit's buffers, largest first,
        summing to its `resident` bytes: `tensors` of its ops, less, for a
        normal stage (`normal`), the model inputs it reads last (its own)."""
        found = self.tensors(unit.start, unit.stop)
        if isinstance(unit, StagePlan) and unit.strategy in NORMAL_RESIDENT:
            found = [t for t in found if not self._dies_in(t[0], unit.start, unit.stop)]
        return found


class _NormalScan:
    """The normal-stage peak of [start, stop) for every start, one op upstream
    at a time. Adding an op upstream never shrinks a live set, so the peak only
    grows as the start moves up."""

    def __init__(
        self,
        graph: PlanGraph,
        tables: GraphTables,
        stop: int,
        streamed: frozenset[str] = frozenset(),
        streamed_out: frozenset[str] = frozenset(),
    ):
        self.streamed = streamed
        self.streamed_out = streamed_out
        self.graph = graph
        self.tables = tables
        self.stop = stop
        self.start = stop
        self.live: dict[int, int] = {}
        self.peak = 0
        self.in_bytes = 0  # aligned, the stage inputs
        self.inputs: dict[str, int] = {}  # stage input -> last use in the stage
        self.reads = 0  # raw bytes of the stage inputs
        self.writes = 0  # raw bytes of the stage outputs
        self.out_bytes = 0  # aligned, the stage outputs
        self.inner: dict[int, int] = {}
        self.inner_peak = 0  # the tensors produced and last read in the stage
        # a single arena: the inner tensors plus the model inputs last read in
        # the stage, live from its start to their last reader (`single_peak`)
        self.dying = 0
        self.dying_streamed = 0  # of `dying`: streamed inputs (resident nowhere)
        self.dsum: dict[int, int] = {}
        self.single_peak = 0

    def _add(self, lo: int, hi: int, nbytes: int) -> None:
        live = self.live
        for k in range(lo, hi + 1):
            v = live.get(k, 0) + nbytes
            live[k] = v
            if v > self.peak:
                self.peak = v

    def prepend(self) -> None:
        k = self.start - 1
        self.start = k
        graph = self.graph
        node = graph.nodes[k]
        now = 0
        for name in node.outputs:
            info = graph.tensors[name]
            size = align(info.nbytes)
            last = self.tables.last_use[name]
            is_out = last >= self.stop
            if is_out:
                self.writes += info.nbytes
                if name not in self.streamed_out:
                    self.out_bytes += size
            if not is_out or name in self.streamed_out:
                # a streamed output is the stage's own until it is sent, at its end
                last = self.stop - 1 if is_out else last
                inner, dsum = self.inner, self.dsum
                for q in range(k, max(k, last) + 1):
                    v = inner.get(q, 0) + size
                    inner[q] = v
                    if v > self.inner_peak:
                        self.inner_peak = v
                    w = v + dsum.get(q, 0)
                    if w > self.single_peak:
                        self.single_peak = w
            if name in self.inputs:
                lu = self.inputs.pop(name)
                self.in_bytes -= size
                self.reads -= info.nbytes
                if is_out:
                    self._add(lu + 1, self.stop - 1, size)
            elif is_out:
                self._add(k + 1, self.stop - 1, size)
            now += size
        for name in node.inputs:
            info = graph.tensors[name]
            if info.is_const or name in self.inputs:
                continue
            if graph.producer(name) is None and (
                self.tables.last_use[name] < self.stop or name in self.streamed
            ):
                self.dying += align(info.nbytes)
                if name in self.streamed:
                    self.dying_streamed += align(info.nbytes)
            self.inputs[name] = k
            self.in_bytes += align(info.nbytes)
            self.reads += info.nbytes
        now += self.in_bytes
        self.live[k] = now
        if now > self.peak:
            self.peak = now
        self.dsum[k] = self.dying
        w = self.inner.get(k, 0) + self.dying
        if w > self.single_peak:
            self.single_peak = w


# ---------------------------------------------------------------------------
# Tiled stages
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Tiling:
    """How a band runs: its strategy, tiles and figures. Exact tilings carry
    the per-tile ranges; estimates (stage formation) do not."""

    strategy: str
    tile_h: int
    tile_w: int
    tiles: int
    peak: int
    rows: tuple[int, ...]
    reads: int
    recomputed: int
    row_ranges: tuple[Sequence[tuple[int, int]], ...] = ()
    col_ranges: tuple[Sequence[tuple[int, int]], ...] = ()
    channel_group: int = 0
    cols: tuple[int, ...] = ()


_Ranges = list[list[tuple[int, int]]]
_Stats = list[tuple[int, int, int]]


def _exact_stats(ranges: Sequence[Sequence[tuple[int, int]]]) -> _Stats:
    """Per tensor (sum of lengths, longest, rows covered) of per-tile ranges."""
    out = []
    for t in range(len(ranges[0])):
        seq = [r[t] for r in ranges]
        lens = [y - x for x, y in seq]
        out.append((sum(lens), max(lens), union_length(seq)))
    return out


def _band_stats(
    model: BandModel, tile: int, exact: bool, cols: bool = False
) -> tuple[_Stats, _Ranges | None]:
    if not exact:
        est = model.stats(tile, cols)
        if est is not None:
            return est, None
    ranges = model.tile_col_ranges(tile) if cols else model.tile_ranges(tile)
    return _exact_stats(ranges), ranges


def _strip_search(
    model: BandModel,
    budget: int,
    exact: bool = True,
) -> tuple[int, list[int], _Stats, _Ranges | None] | None:
    """The spec's tile height search, then every buffer widened to the longest
    range a tile reads if that is longer; a smaller band if that breaks the
    budget. Estimates take the ranges from the affine offsets (`stats`)."""
    inputs = [t for t in model.inputs if not model.whole[t]]

    def read(r: int) -> int:
        rows = model.rows(r)
        return sum(rows[t] for t in inputs)

    limit = model.height
    while limit >= 1:
        best = largest_fitting(model.band_bytes, limit, budget, model.granule)
        if best == 0:
            return None
        tile_h = even_tile_h(model.height, best, read, model.granule)
        stats, ranges = _band_stats(model, tile_h, exact)
        rows = [max(r, s[1]) for r, s in zip(model.rows(tile_h), stats)]
        if model.bytes_of_rows(rows) <= budget:
            return tile_h, rows, stats, ranges
        limit = tile_h - 1
    return None


def _recomputed(
    model: BandModel,
    stats: _Stats,
    only: set[int] | frozenset[int] | None = None,
    line_buffered: bool = False,
    col_stats: _Stats | None = None,
    skip: frozenset[int] = frozenset(),
) -> int:
    """Recomputed MACs: macs * (rows computed - distinct rows) // rows of each
    op's output (cells for a grid); a line-buffered chain recomputes only the
    ops in `only`; the ops in `skip` (feeders, `fed_recomputed`) not here."""
    graph = model.graph
    total = 0
    for k, outs, _ in model.ops:
        node = graph.nodes[k]
        if not node.macs or not outs or k in skip:
            continue
        if line_buffered and (only is None or k not in only):
            continue
        o = outs[0]
        done, _, distinct = stats[o]
        if col_stats is None:
            total += node.macs * (done - distinct) // model.heights[o]
        else:
            cdone, _, cdistinct = col_stats[o]
            area = model.heights[o] * model.widths[o]
            total += node.macs * (done * cdone - distinct * cdistinct) // area
    return total


def _strips(model: BandModel, budget: int, exact: bool = True) -> _Tiling | None:
    found = _strip_search(model, budget, exact)
    if found is None:
        return None
    tile_h, rows, stats, ranges = found
    reads = sum(stats[t][0] * model.row_bytes[t] for t in model.inputs)
    return _Tiling(
        model.kind,
        tile_h,
        0,
        num_tiles(model.height, tile_h),
        model.bytes_of_rows(rows),
        tuple(rows),
        reads,
        _recomputed(model, stats),
        tuple(ranges or ()),
    )


def _square_tile(model: BandModel, budget: int) -> tuple[int, int] | None:
    """The largest square tile (output rows x columns) that fits, evened out:
    the one 2D tile stage formation estimates."""

    def square(side: int) -> int:
        return model.bytes_of_cells(
            model.rows(min(side, model.height)), model.cols(min(side, model.width))
        )

    side = largest_fitting(square, max(model.height, model.width), budget)
    if side < 1:
        return None
    tile_h = even_tile_h(model.height, min(side, model.height))
    tile_w = even_tile_h(model.width, min(side, model.width - 1))
    return tile_h, tile_w


def _grid(model: BandModel, budget: int, exact: bool = True) -> _Tiling | None:
    """The 2D tile loading the fewest input bytes (ties: fewest tiles) over
    every evened tile width, compared on the affine estimates; the exact
    ranges of the chosen tile then give the figures. An estimate (stage
    formation) only looks at the largest square tile."""
    if not model.grid_ok or model.width < 2:
        return None
    best: tuple[tuple[int, int], int, int] | None = None
    if not exact:
        sq = _square_tile(model, budget)
        if sq is not None:
            best = ((0, 0), *sq)
    worse = 0
    widths = sorted({-(-model.width // n) for n in range(2, model.width + 1)}, reverse=True)
    for tile_w in widths if exact else ():
        cstats, _ = _band_stats(model, tile_w, False, cols=True)
        cols = [max(c, s[1]) for c, s in zip(model.cols(tile_w), cstats)]

        def cost(r: int, cols: list[int] = cols) -> int:
            return model.bytes_of_cells(model.rows(r), cols)

        tile_h = largest_fitting(cost, model.height, budget)
        while tile_h >= 1:
            tile_h = even_tile_h(model.height, tile_h)
            rstats, _ = _band_stats(model, tile_h, False)
            rows = [max(r, s[1]) for r, s in zip(model.rows(tile_h), rstats)]
            if model.bytes_of_cells(rows, cols) <= budget:
                break
            tile_h -= 1
        if tile_h < 1:
            continue
        reads = sum(rstats[t][0] * cstats[t][0] * model.cells[t] for t in model.inputs)
        tiles = num_tiles(model.height, tile_h) * num_tiles(model.width, tile_w)
        if best is None or (reads, tiles) < best[0]:
            best = ((reads, tiles), tile_h, tile_w)
            worse = 0
        else:
            worse += 1
            if worse == 3:  # the loads only grow from here on
                break
    if best is None:
        return None
    _, tile_h, tile_w = best
    rstats, rr = _band_stats(model, tile_h, exact)
    cstats, cr = _band_stats(model, tile_w, exact, cols=True)
    rows = [max(r, s[1]) for r, s in zip(model.rows(tile_h), rstats)]
    cols = [max(c, s[1]) for c, s in zip(model.cols(tile_w), cstats)]
    if model.bytes_of_cells(rows, cols) > budget:  # an estimate's square, widened
        return None
    reads = sum(rstats[t][0] * cstats[t][0] * model.cells[t] for t in model.inputs)
    tiles = num_tiles(model.height, tile_h) * num_tiles(model.width, tile_w)
    return _Tiling(
        "grid",
        tile_h,
        tile_w,
        tiles,
        model.bytes_of_cells(rows, cols),
        tuple(rows),
        reads,
        _recomputed(model, rstats, col_stats=cstats),
        tuple(rr or ()),
        tuple(cr or ()),
        cols=tuple(cols),
    )


def _positions(model: BandModel, t: int) -> int:
    shape = model.graph.tensors[model.names[t]].shape
    return math.prod(shape[2:-1]) if len(shape) >= 3 else 1


def _subrow(model: BandModel, budget: int) -> _Tiling | None:
    """GlobalAveragePool below one row (`_SubRow`): runs of positions of one
    row with every channel; else groups of channels, each over bands of
    positions with only its own partial sums. The input is read once."""
    u = _subrow_units(model)
    if u is None:
        return None
    reads = sum(model.graph.tensors[model.names[t]].nbytes for t in model.inputs)
    p = largest_fitting(u.by_pos, u.positions, budget)
    if p >= 1:
        p = even_tile_h(u.positions, p)
        rows, cols = u.shape_of(model, 1, p)
        tiles = u.height * num_tiles(u.positions, p)
        return _Tiling("accumulate", 1, p, tiles, u.by_pos(p), rows, reads, 0, cols=cols)
    best = u.best_group(budget)
    if best is None:
        return None
    tiles, g, th, tw = best
    rows, cols = u.shape_of(model, th, tw)
    peak = u.by_group(g, th, tw)
    reads += (num_tiles(u.chans, g) - 1) * u.full_reads  # every group loads them again
    return _Tiling("accumulate", th, tw, tiles, peak, rows, reads, 0, channel_group=g, cols=cols)


def channel_count(model: BandModel) -> int:
    """The channels a band may cut into groups: C when every op is channel
    local (`NodeInfo.is_channel_local`) and every tensor the band holds is a
    feature map of C > 1 channels on its last axis, cut along the height, none
    read whole; else 0. Each group then runs the band's ops on its channels
    alone, constants cut to the group (a depthwise filter, per-channel
    parameters)."""
    key = ("channels", 0)
    hit = model._memo.get(key)  # noqa: SLF001
    if hit is not None:
        return hit
    graph = model.graph
    c = 0
    if model.kind == "strips" and not model.extra and not any(model.whole):
        chans = {graph.tensors[n].shape[-1] for n in model.names}
        ranks = {graph.tensors[n].rank for n in model.names}
        local = all(graph.nodes[k].is_channel_local for k, _, _ in model.ops)
        if local and len(chans) == 1 and ranks <= {3, 4}:
            (c,) = chans
            c = c if c > 1 else 0
    model._memo[key] = c  # noqa: SLF001
    return c


def channel_slice(model: BandModel, group: int) -> BandModel:
    """The band of `group` of the model's `channel_count` channels: every
    buffer holds that many channels of its rows (`align`ed like any)."""
    c = channel_count(model)
    if not 1 <= group <= c:
        raise ValueError(f"a channel group of {group} of {c} channels")
    return replace(
        model,
        row_bytes=tuple(b // c * group for b in model.row_bytes),
        cells=tuple(b // c * group for b in model.cells),
        _memo={("channels", 0): 0},  # a slice does not cut its channels again
    )


CHANNEL_GROUP_TRIES = 48
"""Channel group sizes `_channel_groups` compares at most (the largest ones:
C / 2, C / 3, ... evened out); a band that fits only with smaller groups takes
the largest group that fits."""

CHANNEL_GROUP_ALIGN = 16
"""Among channel groups loading the same bytes, one of a multiple of this many
channels is preferred: 16 is the widest float32 vector of any target (AVX-512)
and a multiple of every narrower one (AVX2's 8, the 4 of a Cortex-M's DSP
extension), so an aligned group runs whole vectors where an even split (39 of
576 channels) leaves a partial one in every pixel."""


def _channel_groups(model: BandModel, budget: int, exact: bool = True) -> _Tiling | None:
    """Groups of g channels, outermost, each run over the strips (or 2D
    tiles) of the band of g channels (`channel_slice`); the group loading the
    fewest input bytes in all wins (ties: a multiple of `CHANNEL_GROUP_ALIGN`
    channels, then fewer tiles). The candidates split the channels evenly
    (the largest ones first), each beside the multiple of `CHANNEL_GROUP_ALIGN`
    just below it (the last group the rest). None for a band that is not
    channel local or where not even one channel of a 1 x 1 tile fits."""
    c = channel_count(model)
    if not c:
        return None
    align = CHANNEL_GROUP_ALIGN
    even = {-(-c // n) for n in range(2, c + 1)}
    sizes = sorted(even | {e // align * align for e in even if e > align}, reverse=True)
    best: _Tiling | None = None
    tried = 0
    whole = False  # a group with one spatial tile was found: only an aligned one may follow
    for g in sizes:
        if whole and g % align:
            continue
        sub = channel_slice(model, g)
        if min_band_bytes(sub) > budget:
            continue
        t = _strips(sub, budget, exact)
        if t is None or (exact and t.tiles > 1):
            grid = _grid(sub, budget, exact) if sub.grid_ok else None
            if grid is not None and (t is None or grid.reads < t.reads):
                t = grid
        if t is None:
            continue
        groups = num_tiles(c, g)
        # every channel loads the rows (and columns) its group's tiles load
        reads = t.reads // g * c
        found = replace(t, tiles=t.tiles * groups, reads=reads, channel_group=g)
        if best is None or _group_key(found, align) < _group_key(best, align):
            best = found
        tried += g in even
        if g % align == 0 and (t.tiles == 1 or whole):
            break  # one spatial tile loads every input once: fewer channels only add tiles
        whole = whole or t.tiles == 1
        if tried >= CHANNEL_GROUP_TRIES:
            break
    return best


def _group_key(t: _Tiling, align: int) -> tuple[int, bool, int]:
    return (t.reads, t.channel_group % align != 0, t.tiles)


def _windows(model: BandModel) -> int:
    graph = model.graph
    return sum(
        1
        for k, _, _ in model.ops
        if graph.nodes[k].tiling is TilingClass.HALO
        and graph.nodes[k].window(0)[0] * graph.nodes[k].window(1)[0] > 1
    )


def tile_band(
    model: BandModel, budget: int, exact: bool = True, patch_windows: int = PATCH_WINDOWS
) -> _Tiling | None:
    """The strategy of a band that does not run normally: strips (or the
    band kind), a 2D grid when no strip fits or it loads fewer input bytes,
    sub-row bands for an accumulation, and for a band of channel-local ops
    groups of channels (`_channel_groups`) when nothing else fits or they
    load fewer input bytes. None when nothing fits. `exact=False` gives the
    estimates stage formation compares (a grid only where no strip fits, of
    at most `patch_windows` window ops)."""
    strips = _strips(model, budget, exact)
    if strips is not None and strips.tiles == 1:
        return strips
    groups = _channel_groups(model, budget, exact)

    def pick(t: _Tiling | None) -> _Tiling | None:
        return groups if groups is not None and (t is None or groups.reads < t.reads) else t

    if not exact and (strips is not None or _windows(model) > patch_windows):
        return pick(strips)
    grid = _grid(model, budget, exact)
    if grid is not None and (strips is None or grid.reads < strips.reads):
        return pick(grid)
    if strips is None and model.kind == "accumulate":
        return _subrow(model, budget)
    return pick(strips)


@dataclass(frozen=True)
class _SubRow:
    """The sub-row bands of an accumulation (a GlobalAveragePool ending the
    band, with pointwise ops before it), in bytes.

    `whole`: the buffers read whole (loaded once). `out_ch`, `acc_ch`: the
    output and its partial sums (`ACC_DTYPE`) per channel. `per_pos`: per banded
    buffer, the bytes of one position (every channel); `per_cell`: of one
    position and one channel, or None when the ops mix channels (a channel
    Concat; `tiling.group_whole_channels`) or the buffers differ in channels.
    `per_full`: under channel groups, per banded buffer held with all its
    channels (the input of a 1 x 1 convolution, which every group loads
    again: `full_reads` bytes), the bytes of one position. `height` rows of
    `positions` positions of `chans` channels.
    """

    whole: int
    out_ch: int
    acc_ch: int
    per_pos: tuple[int, ...]
    per_cell: tuple[int, ...] | None
    height: int
    positions: int
    chans: int
    per_full: tuple[int, ...] = ()
    full_reads: int = 0

    def by_pos(self, p: int) -> int:
        """A run of `p` positions of one row, every channel: the output and
        every partial sum stay whole."""
        c = self.chans
        fixed = self.whole + align(c * self.out_ch) + align(c * self.acc_ch)
        return fixed + sum(align(p * b) for b in self.per_pos)

    def by_group(self, g: int, th: int, tw: int) -> int:
        """`g` channels of `th` rows x `tw` positions: the group's output and
        partial sums, its slice of every banded buffer and the same positions
        of every buffer held with all channels."""
        assert self.per_cell is not None
        fixed = self.whole + align(g * self.out_ch) + align(g * self.acc_ch)
        full = sum(align(th * tw * b) for b in self.per_full)
        return fixed + full + sum(align(th * tw * g * b) for b in self.per_cell)

    def best_group(self, budget: int) -> tuple[int, int, int, int] | None:
        """(tiles, channels, rows, positions) of the channel-group band with
        the fewest tiles (ties: more channels, longer contiguous runs), over
        evened bands of whole rows and evened runs within one row."""
        if self.per_cell is None:
            return None
        h, w, c = self.height, self.positions, self.chans
        shapes = [(th, w) for th in sorted({-(-h // n) for n in range(1, h + 1)}, reverse=True)]
        shapes += [(1, tw) for tw in sorted({-(-w // n) for n in range(2, w + 1)}, reverse=True)]
        best: tuple[tuple[int, int, int], int, int, int] | None = None
        for th, tw in shapes:

            def cost(g: int, th: int = th, tw: int = tw) -> int:
                return self.by_group(g, th, tw)

            g = largest_fitting(cost, c, budget)
            if g < 1:
                continue
            g = even_tile_h(c, g)
            tiles = num_tiles(c, g) * num_tiles(h, th) * num_tiles(w, tw)
            key = (tiles, -g, -th * tw)
            if best is None or key < best[0]:
                best = (key, g, th, tw)
        if best is None:
            return None
        return best[0][0], best[1], best[2], best[3]

    def smallest(self) -> int:
        """The smallest sub-row band: one position of every channel, or one
        position of one channel."""
        one = self.by_pos(1)
        return one if self.per_cell is None else min(one, self.by_group(1, 1, 1))

    def shape_of(
        self, model: BandModel, th: int, tw: int
    ) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Per tensor the rows and columns a band holds (whole reads: all)."""
        rows = tuple(h if w else th for h, w in zip(model.heights, model.whole))
        cols = tuple(ww if w else min(tw, ww) for ww, w in zip(model.widths, model.whole))
        return rows, cols


def _subrow_units(model: BandModel) -> _SubRow | None:
    """The sizes of an accumulation's sub-row bands; None for other kinds."""
    graph = model.graph
    banded = [t for t in range(len(model.names)) if not model.whole[t]]
    if model.kind != "accumulate" or not banded:
        return None
    pos = {_positions(model, t) for t in banded}
    if len(pos) != 1:
        return None
    (p_all,) = pos
    whole = sum(
        align(graph.tensors[model.names[t]].nbytes)
        for t in range(len(model.names))
        if model.whole[t]
    )
    gap = graph.nodes[model.stop - 1]
    out = graph.tensors[gap.outputs[0]]
    chans = out.shape[-1]
    out_ch = out.nbytes // chans
    acc_ch = math.prod(out.shape) // chans * ACC_DTYPE.itemsize
    if model.extra != align(out.nbytes) + align(math.prod(out.shape) * ACC_DTYPE.itemsize):
        raise ValueError(f"'{gap.name}': an accumulation holds one output and its partial sums")
    per_pos = tuple(model.row_bytes[t] // p_all for t in banded)
    full = group_whole_channels(graph, model.start, model.stop)
    per_cell = None
    per_full: tuple[int, ...] = ()
    full_reads = 0
    if full is not None:
        cut = [t for t in banded if model.names[t] not in full]
        if all(graph.tensors[model.names[t]].shape[-1] == chans for t in cut):
            per_cell = tuple(model.row_bytes[t] // p_all // chans for t in cut)
            held = [t for t in banded if model.names[t] in full]
            per_full = tuple(model.row_bytes[t] // p_all for t in held)
            full_reads = sum(graph.tensors[model.names[t]].nbytes for t in held)
    return _SubRow(
        whole, out_ch, acc_ch, per_pos, per_cell, model.height, p_all, chans, per_full, full_reads
    )


def min_band_bytes(model: BandModel) -> int:
    """The smallest budget some band of the model fits: one row, a 1 x 1 tile,
    for an accumulation one position (of every channel, or of one), for a
    channel-local band either of one channel. A
    reshape's bands hold whole output rows: its smallest band is a granule."""
    best = model.band_bytes(min(model.granule, model.height))
    if model.grid_ok and model.width >= 2:
        best = min(best, model.grid_bytes(1, 1))
    units = _subrow_units(model)
    if units is not None:
        best = min(best, units.smallest())
    if channel_count(model):
        best = min(best, min_band_bytes(channel_slice(model, 1)))
    return best


# ---------------------------------------------------------------------------
# Stage formation
# ---------------------------------------------------------------------------


@dataclass
class _Chain:
    """A chain found for ops [start, stop): member stages, the merged band,
    its tile height and allocated rows; exact chains also carry the per-tile
    ranges, the rows loaded from slow memory and the history rows."""

    members: tuple[tuple[int, int], ...]
    model: BandModel
    line_buffered: bool
    recompute_ops: frozenset[int]
    tile_h: int
    rows: list[int]
    recomputed: int
    ranges: _Ranges | None = None
    reads: int = 0
    history: list[int] = field(default_factory=list[int])
    pace: int = 0
    """0: tiles of `tile_h` output rows; else a paced run (`paced_steps`)
    loading `pace` input rows a step."""
    form: ChainForm = WHOLE_ROWS
    """Inputs read in place, outputs written direct (a single-arena
    line-buffered chain: no band buffer, no loads or spills) and pixel runs
    (`plan.scratch.ChainForm`)."""
    col_w: int = 0
    """Column bands of this many output columns (`_column_bands`): the line
    buffers run over all rows once per band, the band's halo columns
    recomputed; 0: whole rows. `model` is then the band's (`column_slice`)."""
    col_ranges: _Ranges | None = None
    """Per band, every tensor's exact column range (exact chains)."""
    cols: tuple[int, ...] = ()
    """Per tensor the columns its buffer holds (the widest band's)."""

    def tiles(self) -> int:
        """The tiles (or paced steps) the chain runs, in every column band."""
        model = self.model
        if self.pace:
            steps = -(-model.heights[model.inputs[0]] // self.pace) if model.inputs else 1
        else:
            steps = -(-model.height // max(self.tile_h, 1))
        return steps * (-(-model.width // self.col_w) if self.col_w else 1)

    def extra_cost(self, once: int, mac_weight: int) -> int:
        """What the chain costs beyond reading its inputs `once` (raw bytes)
        and writing its outputs: its recomputed MACs, in a plain chain the
        halo rows its tiles load again (in column bands the halo columns),
        with pixel runs the weights their blocks read again
        (`plan.scratch.reread_bytes`, at 1/`REREAD_SHARE` of a byte each)."""
        extra = mac_weight * self.recomputed
        if not self.line_buffered or self.col_w:
            extra += max(0, self.reads - once)
        return extra

    def pixel_runs_pay(self) -> bool:
        """With slow memory, whether the chain's pixel runs cost less than
        cutting it where they hold tensors in blocks: the weights their
        blocks read again (`plan.scratch.reread_bytes`, at 1/`REREAD_SHARE`
        of a byte each) against writing and reading those tensors once."""
        history = self.history or estimated_history(self.model, self.recompute_ops)
        s = chain_scratch(self.model, self.rows, history, self.recompute_ops, self.form)
        if s is None or not s.block:
            return True
        graph = self.model.graph
        spill = sum(2 * graph.tensors[name].nbytes for name in s.blocked)
        return reread_bytes(graph, s.runs, s.block) // REREAD_SHARE <= spill


@dataclass
class _Ctx:
    """One planning run: the graph, its tables, the budget and caches."""

    graph: PlanGraph
    tables: GraphTables
    budget: int
    ranks: tuple[int, ...] = (4,)
    mac_weight: int = 1
    patch_windows: int = PATCH_WINDOWS
    _bands: dict[tuple[int, int], BandModel | str] = field(
        default_factory=dict[tuple[int, int], "BandModel | str"]
    )
    _tilings: dict[tuple[int, int, bool], _Tiling | None] = field(
        default_factory=dict[tuple[int, int, bool], "_Tiling | None"]
    )
    _chains: dict[tuple[tuple[tuple[int, int], ...], bool], _Chain | None] = field(
        default_factory=dict[tuple[tuple[tuple[int, int], ...], bool], "_Chain | None"]
    )
    _lb_floors: dict[tuple[int, int], tuple[int, int, int]] = field(
        default_factory=dict[tuple[int, int], tuple[int, int, int]]
    )
    """Per band the floors of its line buffers of one-row tiles, of whole
    rows (`floor_lb1_scratch`) and in column bands (`lb_floor`), which stage
    formation prunes chains by: a chain is tried in whole rows and in column
    bands only where their floor fits, so the chains stage formation weighs
    are all `chain` returns."""
    _io: dict[tuple[int, int], tuple[tuple[str, ...], tuple[str, ...]]] = field(
        default_factory=dict[tuple[int, int], tuple[tuple[str, ...], tuple[str, ...]]]
    )
    streamed: frozenset[str] = frozenset()
    """The model inputs that arrive as a stream of rows (resident nowhere)."""
    streamed_out: frozenset[str] = frozenset()
    """The model outputs that leave as a stream of rows (resident nowhere)."""
    reread: bool = False
    """The streamed inputs may be asked again, in windows of rows and
    columns (a frame buffer or flash): units reading them tile freely."""
    feeders: bool = False
    """Chains may run window feeders in pixel blocks (`_fed`): a single-arena
    plan tried again with them where it does not fit without (`_single`)."""
    residents: Residents | None = None
    """Set in a single-arena plan: every segment's budget is the fast budget
    less what stays resident while it runs."""
    _resident: dict[tuple[int, int], int] = field(default_factory=dict[tuple[int, int], int])

    def resident(self, start: int, stop: int) -> int:
        """Bytes resident in the fast arena while ops [start, stop) run (0
        unless single-arena)."""
        if self.residents is None:
            return 0
        key = (start, stop)
        r = self._resident.get(key)
        if r is None:
            r = self._resident[key] = self.residents.of(start, stop)
        return r

    def budget_at(self, start: int, stop: int) -> int:
        """What the buffers of a unit of ops [start, stop) may take."""
        return self.budget - self.resident(start, stop)

    def normal_work(self, start: int, stop: int) -> int:
        """The peak of the stage's own buffers run normally: the normal peak,
        or in a single arena the `single_peak` (inputs and outputs resident)."""
        if self.residents is None:
            return normal_peak(self.graph, start, stop, self.tables)
        return single_peak(self.graph, start, stop, self.tables, self.streamed, self.streamed_out)

    def normal_resident(self, start: int, stop: int) -> int:
        """Resident beside a normal stage of ops [start, stop)."""
        if self.residents is None:
            return 0
        return self.residents.normal(start, stop)

    def fits_normal(self, start: int, stop: int) -> bool:
        return self.normal_work(start, stop) <= self.budget - self.normal_resident(start, stop)

    def band(self, start: int, stop: int) -> BandModel | str:
        """The band of ops [start, stop), or why they form none."""
        key = (start, stop)
        if key not in self._bands:
            single = self.residents is not None
            built = self.tables.bands.get((start, stop, single, self.feeders))
            if built is None:  # plans of one graph at other budgets share them
                builders = self.tables.builders
                b = builders.get(stop)
                if b is None or b.start < start:  # a builder only grows upstream
                    b = builders[stop] = BandBuilder(self.tables, stop)
                while b.start > start and b.prepend():
                    pass
                floors = None
                if b.error is None and b.lb_ok:
                    floors = (
                        b.floor_lb1_scratch(single),
                        lb_floor(b, single, fed=self.feeders),
                        b.floor_fed(single) if self.feeders else _INF,
                    )
                built = (b.error if b.error is not None else b.model(), floors)
                self.tables.bands[(start, stop, single, self.feeders)] = built
            self._bands[key] = built[0]
            if built[1] is not None:
                self._lb_floors[key] = built[1]
        return self._bands[key]

    def tiling(self, start: int, stop: int, exact: bool = True) -> _Tiling | None:
        """How ops [start, stop) tile as one stage; `exact=False`: the
        estimate stage formation compares."""
        key = (start, stop, exact)
        if key not in self._tilings:
            model = self.band(start, stop)
            budget = self.budget_at(start, stop)
            t = None
            if not isinstance(model, str) and budget > 0:
                t = tile_band(model, budget, exact, self.patch_windows)
                if t is not None and (
                    (t.strategy not in STREAM_KINDS or t.channel_group)
                    and self.streams(start, stop)
                    or (t.strategy not in WINDOW_KINDS or t.channel_group)
                    and self.reads_windows(start, stop)
                ):
                    # a streamed input arrives, a streamed output leaves, in
                    # whole rows, each once: strips only (no patches, no
                    # channel groups); one read again, in windows of whole
                    # pixels: strips or 2D tiles
                    t = _strips(model, budget, exact) if model.kind in STREAM_KINDS else None
            self._tilings[key] = t
        return self._tilings[key]

    def reads_stream(self, start: int, stop: int) -> bool:
        """Ops [start, stop) read a streamed input that arrives once (not `reread`)."""
        ins, _ = self.io(start, stop)
        return not self.reread and any(x in self.streamed for x in ins)

    def reads_windows(self, start: int, stop: int) -> bool:
        """Ops [start, stop) read a streamed input that may be read again."""
        ins, _ = self.io(start, stop)
        return self.reread and any(x in self.streamed for x in ins)

    def writes_stream(self, start: int, stop: int) -> bool:
        _, outs = self.io(start, stop)
        return any(x in self.streamed_out for x in outs)

    def streams(self, start: int, stop: int) -> bool:
        """Ops [start, stop) read a streamed model input or write a streamed
        model output: its rows arrive (leave) once each, in order, so they
        run in bands of whole rows (no 2D tiles, no column bands: each band
        would ask for every row again). An input that may be `reread` does
        not count."""
        return self.reads_stream(start, stop) or self.writes_stream(start, stop)

    def io(self, start: int, stop: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
        key = (start, stop)
        if key not in self._io:
            self._io[key] = _stage_io(self.graph, self.tables.last_use, start, stop)
        return self._io[key]

    def tiled_cost(self, start: int, stop: int) -> int:
        """What stage formation weighs a tiled stage at: its tiles' loads (at
        least its inputs once, so that a stage's traffic bounds it from
        below), its outputs once, and its recomputed MACs."""
        t = self.tiling(start, stop, exact=False)
        if t is None:
            return _INF
        ins, outs = self.io(start, stop)
        tensors = self.graph.tensors
        reads = max(t.reads, sum(tensors[x].nbytes for x in ins))
        cost = reads + sum(tensors[x].nbytes for x in outs) + self.mac_weight * t.recomputed
        return cost + self.rereads(start, stop, t.tiles)

    def chain_cost(self, chain: _Chain, once: int) -> int:
        """What stage formation weighs a chain at beyond its traffic: its
        `extra_cost` and the weights its tiles read again (`rereads`)."""
        start, stop = chain.members[0][0], chain.members[-1][1]
        return chain.extra_cost(once, self.mac_weight) + self.rereads(start, stop, chain.tiles())

    def rereads(self, start: int, stop: int, tiles: int) -> int:
        """With slow memory, the constants ops [start, stop) read once per
        tile, every tile but the first counted at 1/`REREAD_SHARE` of a byte
        (they come from a cache, as a pixel run's): the 1x1 convolutions of
        MobileNetV2's 7 x 7 blocks in tiles of 3 pixels read 2.8 MB of
        weights in each of 21 tiles."""
        if self.residents is not None or tiles <= 1 or not WEIGH_REREADS:
            return 0
        return (tiles - 1) * const_bytes(self.graph, range(start, stop)) // REREAD_SHARE

    def traffic(self, start: int, stop: int) -> int:
        """Inputs read once plus outputs written once (raw bytes)."""
        ins, outs = self.io(start, stop)
        t = self.graph.tensors
        return sum(t[x].nbytes for x in ins) + sum(t[x].nbytes for x in outs)

    def chainable(self, start: int, stop: int) -> bool:
        """Chain rules 1 and 2 for one stage: it tiles along the height and
        reads its band (no resize), and its inputs and outputs are feature
        maps of the chainable ranks."""
        ins, outs = self.io(start, stop)
        if any(self.graph.tensors[x].rank not in self.ranks for x in (*ins, *outs)):
            return False
        model = self.band(start, stop)
        return not isinstance(model, str) and model.kind in CHAIN_KINDS

    def rule_out_chain(self, members: Sequence[tuple[int, int]]) -> None:
        """Stage formation no longer offers this chain (its exact run does not fit)."""
        self._chains[(tuple(members), False)] = None

    def rule_out_tiling(self, start: int, stop: int) -> None:
        """Stage formation no longer offers ops [start, stop) as a tiled stage."""
        self._tilings[(start, stop, False)] = None

    def chain(self, members: Sequence[tuple[int, int]], exact: bool = True) -> _Chain | None:
        """The chain of these consecutive stages if it keeps every rule and
        fits the budget (split chains are tried by the callers)."""
        key = (tuple(members), exact)
        if key not in self._chains:
            self._chains[key] = self._chain(key[0], exact)
        return self._chains[key]

    def _chain(self, members: tuple[tuple[int, int], ...], exact: bool) -> _Chain | None:
        if len(members) < 2 or not chain_rules_hold(self, members):
            return None
        model = self.band(members[0][0], members[-1][1])
        if isinstance(model, str) or model.kind not in CHAIN_KINDS:
            return None  # the band rule across the chain (residual exception)
        graph = self.graph
        budget = self.budget_at(members[0][0], members[-1][1])
        if budget <= 0:
            return None
        concat: set[int] = set()
        for a, b in members:
            if any(graph.nodes[q].is_channel_concat for q in range(a, b)):
                concat.update(range(a, b))
        rows_floor, bands_floor, fed_floor = self._lb_floors.get(
            (members[0][0], members[-1][1]), (0, 0, 0)
        )
        form = WHOLE_ROWS
        if self.residents is not None:  # the chain's inputs and outputs are resident
            names = {model.names[t] for t in model.inputs} - self.streamed
            outs = {model.names[t] for t in model.spilled} - self.streamed_out
            form = ChainForm(
                in_place_inputs(model, frozenset(names)),
                direct_outputs(model, frozenset(outs)),
            )
        if _has_halo(model) and rows_floor <= budget:
            # pixel runs only where whole rows do not fit and, with slow
            # memory, where they pay (`_Chain.pixel_runs_pay`: ResNet int8 at
            # 64K took runs of 3x3 convolutions that read their weights once
            # per block of 8 for 55 KB less traffic, and ran 8% slower)
            pixels = may_run_in_pixels(model)
            for block in (0, PIXEL_BLOCK) if pixels else (0,):
                found = _line_buffered(
                    model, members, frozenset(concat), budget, exact, replace(form, block=block)
                )
                if found is not None and (
                    not block or self.residents is not None or found.pixel_runs_pay()
                ):
                    return found
        streams = self.streams(members[0][0], members[-1][1])
        if _has_halo(model) and not concat and bands_floor <= budget and not streams:
            found = _column_bands(model, members, budget, exact)
            if found is not None:
                return found
        fed = None  # window feeders in pixel blocks: where no line buffer fits
        if self.feeders and _has_halo(model) and fed_floor <= budget:
            bands = not concat and not streams
            fed = _fed(model, members, frozenset(concat), form, budget, bands)
        # no halo, or no line buffers fit: every tile computes its whole range
        plain = _strip_search(model, budget, exact)
        if plain is None:
            return fed
        tile_h, rows, stats, ranges = plain
        reads = sum(stats[t][0] * model.row_bytes[t] for t in model.inputs)
        history = [0] * len(rows)
        recomputed = _recomputed(model, stats)
        found = _Chain(
            members, model, False, frozenset(), tile_h, rows, recomputed, ranges, reads, history
        )
        if fed is not None:  # both fit: the one that costs less
            ins, _ = self.io(members[0][0], members[-1][1])
            once = sum(graph.tensors[x].nbytes for x in ins)
            if self.chain_cost(fed, once) <= self.chain_cost(found, once):
                return fed
        return found


def _line_buffered(
    model: BandModel,
    members: tuple[tuple[int, int], ...],
    recompute: frozenset[int],
    budget: int,
    exact: bool,
    form: ChainForm = WHOLE_ROWS,
    paced: bool = True,
) -> _Chain | None:
    """A line-buffered chain: the largest tile height whose line buffers fit
    (binary search on the `lb_capacity` estimates, then the exact run of the
    monotone tile ranges, `BandModel.line_buffer`; a smaller tile if that
    breaks the budget). None if none fits or the run reads a row no tile
    computed before. `form`: inputs read in place, outputs written direct,
    pixel runs (`plan.scratch.ChainForm`); `paced`: a paced chain where no
    tile fits."""

    hist_est = estimated_history(model, recompute)
    feeders = form.feeders
    others = recompute - feeders  # a channel Concat's stage: no pace

    def cost(tile: int) -> int:
        rows = model.lb_rows(tile, recompute)
        assert rows is not None  # chain bands are affine
        return scratch_bytes(model, rows, hist_est, recompute, form)

    limit = model.height if cost(1) <= budget else 0  # one row first: most do not fit
    while limit >= 1:
        best = largest_fitting(cost, limit, budget)
        if best == 0:
            if others or not paced:
                return None
            return _paced(model, members, budget, exact, form, recompute)
        tile_h = even_tile_h(model.height, best)
        if not exact:
            rows = model.lb_rows(tile_h, recompute)
            assert rows is not None
            recomputed = 0
            if recompute:
                stats = model.stats(tile_h)
                assert stats is not None
                recomputed = _recomputed(model, stats, others, True) + _fed_macs(
                    model, form, [s[0] for s in stats]
                )
            return _Chain(
                members,
                model,
                True,
                recompute,
                tile_h,
                rows,
                recomputed,
                form=form,
            )
        ranges = model.fed_ranges(model.lb_tile_ranges(tile_h), feeders)
        try:
            held, done, history = model.line_buffer(ranges, recompute)
        except LineBufferGapError:
            return None  # not line-buffered: the caller runs the chain plainly
        if scratch_bytes(model, held, history, recompute, form) <= budget:
            reads = sum(done[t] * model.row_bytes[t] for t in model.inputs)
            stats = _exact_stats(ranges)
            recomputed = _recomputed(model, stats, others, True) + _fed_macs(
                model, form, [s[0] for s in stats]
            )
            return _Chain(
                members,
                model,
                True,
                recompute,
                tile_h,
                held,
                recomputed,
                ranges,
                reads,
                history,
                form=form,
            )
        limit = tile_h - 1
    if others or not paced:
        return None
    return _paced(model, members, budget, exact, form, recompute)


def _fed_macs(
    model: BandModel,
    form: ChainForm,
    rows: Sequence[int],
    bands: Sequence[Sequence[tuple[int, int]]] | None = None,
) -> int:
    """The MACs a chain's feeders recompute (`plan.scratch.fed_recomputed`;
    0 without feeders)."""
    if not form.feeders:
        return 0
    return fed_recomputed(model, form.feeders, form.block, rows, bands)


WINDOW_FEEDERS = True
"""Whether a single-arena plan that does not fit is tried again with window
feeders (`_single`; False: the plans without them alone)."""

FEED_BLOCKS = (8, 4, 2, 1)
"""Pixel blocks (output columns) a chain with window feeders tries, widest
first: a narrower block holds less of each feeder and recomputes more."""


def _fed(
    model: BandModel,
    members: tuple[tuple[int, int], ...],
    concat: frozenset[int],
    form: ChainForm,
    budget: int,
    bands: bool,
) -> _Chain | None:
    """A line-buffered chain whose window feeders (`plan.scratch.window_feeders`)
    run in pixel blocks: whole rows in the widest block of `FEED_BLOCKS` that
    fits, else (`bands`) in column bands, down to one output column each.
    Always the exact run: the estimates of the other forms do not follow a
    feeder's rows, and stage formation weighs such a chain only where it fits
    exactly."""
    feeders = window_feeders(model) - concat
    if not feeders:
        return None
    recompute = concat | feeders
    least = replace(form, block=min(FEED_BLOCKS), feeders=feeders)
    if _fed_least(model, recompute, least, 0) <= budget:
        for block in FEED_BLOCKS:
            f = replace(form, block=block, feeders=feeders)
            found = _line_buffered(model, members, recompute, budget, True, f)
            if found is not None:
                return found
    least = ChainForm(block=min(FEED_BLOCKS), feeders=feeders)
    if not bands or not model.grid_ok or _fed_least(model, recompute, least, 1) > budget:
        return None
    for block in FEED_BLOCKS:
        f = ChainForm(block=block, feeders=feeders)
        found = _column_bands(model, members, budget, True, f, recompute)
        if found is not None:
            return found
    return None


def _fed_least(model: BandModel, recompute: frozenset[int], form: ChainForm, tile_w: int) -> int:
    """The buffers of a chain with window feeders (`form`) run exactly, paced
    one input row a step, in whole rows (`tile_w` 0) or in column bands of
    `tile_w` output columns: about the least any of its runs holds, so that
    `_fed` searches the others only where it fits (memoised: it does not
    depend on the budget)."""
    memo = model._memo.setdefault(("fed least", 0), {})  # noqa: SLF001
    key = (recompute, form, tile_w)
    if key not in memo:
        sub = model
        if tile_w:
            cstats, _ = _band_stats(model, tile_w, True, cols=True)
            cols = [max(c, st[1]) for c, st in zip(model.cols(tile_w), cstats)]
            sub = column_slice(model, cols)
        try:
            _, held, _, hist = sub.fed_paced(1, recompute, form.feeders)
            memo[key] = scratch_bytes(sub, held, hist, recompute, form)
        except (LineBufferGapError, ValueError):
            memo[key] = _INF
    return memo[key]


WEIGH_REREADS = True
"""Whether stage formation weighs the weights tiles read again (`_Ctx.rereads`;
False: the plans of slow traffic and recomputed MACs alone)."""

COLUMN_BANDS = (2, 3, 4, 5, 6, 8)
"""The numbers of column bands `_column_bands` tries, fewest first."""


def column_slice(model: BandModel, cols: Sequence[int]) -> BandModel:
    """The band of one column band: every buffer holds `cols[t]` columns of
    its rows (tensor t's columns in the widest band)."""
    return replace(
        model,
        row_bytes=tuple(c * cell for c, cell in zip(cols, model.cells)),
        grid_ok=False,
        _memo=model.geometry_memo(),
    )


def _column_bands(
    model: BandModel,
    members: tuple[tuple[int, int], ...],
    budget: int,
    exact: bool,
    form: ChainForm = WHOLE_ROWS,
    recompute: frozenset[int] = frozenset(),
) -> _Chain | None:
    """A line-buffered chain in column bands, where its whole rows do not fit:
    the widest bands (fewest: `COLUMN_BANDS`) whose line buffers fit
    (`_line_buffered` on the band's `column_slice`). Bands run one after the
    other, each over every row as a line-buffered chain of its columns; a
    band loads its columns of the chain's inputs with their halo and
    recomputes the halo columns of its ops (each row once per band). With
    window feeders (`form.feeders`, in `recompute`) bands may be as narrow
    as one output column."""
    if not model.grid_ok or model.width < 2:
        return None
    counts = [n for n in COLUMN_BANDS if n <= model.width // 2]
    if form.feeders:
        widths = sorted({-(-model.width // n) for n in range(2, model.width + 1)}, reverse=True)
        counts = [-(-model.width // w) for w in widths]

    tried: dict[int, tuple[_Chain, list[int], _Stats, _Ranges | None] | None] = {}

    def attempt(n: int) -> tuple[_Chain, list[int], _Stats, _Ranges | None] | None:
        if n not in tried:
            tried[n] = _attempt(n)
        return tried[n]

    def _attempt(n: int) -> tuple[_Chain, list[int], _Stats, _Ranges | None] | None:
        tile_w = -(-model.width // n)
        cstats, cr = _band_stats(model, tile_w, exact, cols=True)
        cols = [max(c, st[1]) for c, st in zip(model.cols(tile_w), cstats)]
        sub = column_slice(model, cols)
        found = _line_buffered(sub, members, recompute, budget, exact, form)
        return None if found is None else (found, cols, cstats, cr)

    # the fewest bands that fit: the most is tried first (none fit if it does
    # not), then a bisection (fewer bands hold wider line buffers)
    if not counts or attempt(counts[-1]) is None:
        return None
    lo, hi = 0, len(counts) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if attempt(counts[mid]) is not None:
            hi = mid
        else:
            lo = mid + 1
    for n in counts[lo:]:
        got = attempt(n)
        if got is None:
            continue
        found, cols, cstats, cr = got
        tile_w = -(-model.width // n)
        sub = found.model
        if exact:
            assert found.ranges is not None
            if found.pace:
                _, done, _ = sub.paced_buffer(found.pace)
            else:
                _, done, _ = sub.line_buffer(found.ranges)
        else:
            done = list(model.heights)
        reads = sum(done[t] * cstats[t][0] * model.cells[t] for t in model.inputs)
        once = [(h, h, h) for h in model.heights]  # every row once per band
        recomputed = _recomputed(model, once, col_stats=cstats, skip=form.feeders)
        if form.feeders:  # tried exactly only (`_fed`)
            assert found.ranges is not None and cr is not None
            recomputed += _fed_macs(model, form, [s[0] for s in _exact_stats(found.ranges)], cr)
        return replace(
            found,
            recomputed=recomputed,
            reads=reads,
            col_w=tile_w,
            col_ranges=cr,
            cols=tuple(cols),
        )
    return None


def _paced(
    model: BandModel,
    members: tuple[tuple[int, int], ...],
    budget: int,
    exact: bool,
    form: ChainForm = WHOLE_ROWS,
    recompute: frozenset[int] = frozenset(),
) -> _Chain | None:
    """A paced line-buffered chain (`paced_steps`) where no band of output
    rows fits: the fastest pace whose buffers fit (binary search on the
    exact run; the estimate stage formation compares is `paced_rows`, the
    slowest pace, one input row a step, the least any pace holds). No MAC
    is recomputed but by window feeders (`recompute`, `form.feeders`: each
    step computes the rows its window reads where that computes a row).
    None if not even one row a step fits."""

    if not exact:
        est = model.paced_rows()
        if (
            est is None
            or scratch_bytes(model, est, estimated_history(model), recompute, form) > budget
        ):
            return None
        return _Chain(
            members,
            model,
            True,
            recompute,
            1,
            est,
            0,
            pace=1,
            form=form,
        )

    def run(pace: int) -> tuple[list[list[tuple[int, int]]], list[int], list[int], list[int]]:
        if not recompute:
            return (model.paced_ranges(pace), *model.paced_buffer(pace))
        return model.fed_paced(pace, recompute, form.feeders)

    def cost(pace: int) -> int:
        try:
            _, held, _, hist = run(pace)
        except (LineBufferGapError, ValueError):
            return _INF
        return scratch_bytes(model, held, hist, recompute, form)

    pace = largest_fitting(cost, model.max_pace(), budget)
    if pace == 0:
        return None
    ranges, held, done, history = run(pace)
    reads = sum(done[t] * model.row_bytes[t] for t in model.inputs)
    step = max(1, max(b - a for rng in ranges for a, b in (rng[t] for t in model.roots)))
    return _Chain(
        members,
        model,
        True,
        recompute,
        step,
        held,
        _fed_macs(model, form, [s[0] for s in _exact_stats(ranges)]),
        ranges,
        reads,
        history,
        pace,
        form,
    )


def _has_halo(model: BandModel) -> bool:
    """A member has a halo (a window op reading more than one row): the chain
    is line-buffered."""
    graph = model.graph
    return any(
        graph.nodes[k].tiling is TilingClass.HALO and graph.nodes[k].window(0)[0] > 1
        for k, _, _ in model.ops
    )


def chain_rules_hold(ctx: _Ctx, members: Sequence[tuple[int, int]]) -> bool:
    """The spec's chain detection rules over consecutive stages [start, stop):

    1. every stage tiles along the height (convolutions, pools, shape-preserving
       ops reading the band the stage holds, no resize);
    2. every input and output of every stage is a rank-4 feature map;
    3. each stage but the last has exactly one output tensor, the next stage
       reads it, and no stage but the first reads anything from outside the
       chain (a later stage may read what an earlier one produced: the
       residual Add);
    4. no tensor a stage before the last produces is read outside the chain or
       is a model output.
    The band rule over the whole chain is the merged band's (`_Ctx.chain`).
    """
    graph = ctx.graph
    produced: set[str] = set()
    stop = members[-1][1]
    for pos, (a, b) in enumerate(members):
        if not ctx.chainable(a, b):
            return False
        ins, outs = ctx.io(a, b)
        if pos > 0:
            _, prev_outs = ctx.io(*members[pos - 1])
            if len(prev_outs) != 1 or prev_outs[0] not in ins:
                return False
            if any(x not in produced for x in ins):
                return False
        if pos < len(members) - 1:
            for name in outs:
                if name in graph.outputs or ctx.tables.last_use[name] >= stop:
                    return False
        for k in range(a, b):
            produced.update(graph.nodes[k].outputs)
    return True


def chain_members(ctx: _Ctx, start: int, stop: int) -> tuple[tuple[int, int], ...] | None:
    """Cut ops [start, stop) into the chain's member stages, as early as the
    rules allow: the first member holds every reader of the chain's inputs,
    the last holds every producer of its outputs, and a member ends where
    exactly one of its tensors is needed later and the next op reads it.
    None when fewer than two members come out."""
    graph = ctx.graph
    last_use = ctx.tables.last_use
    ins, outs = ctx.io(start, stop)
    inset = set(ins)
    first = start + 1
    for k in range(start, stop):
        if any(x in inset for x in graph.nodes[k].inputs):
            first = k + 1
    last = min((p for p in (graph.producer(x) for x in outs) if p is not None), default=stop)
    members: list[tuple[int, int]] = []
    s = start
    live: dict[str, int] = {}
    for c in range(start + 1, min(last, stop - 1) + 1):
        for name in graph.nodes[c - 1].outputs:
            live[name] = last_use[name]
        for name in [x for x, lu in live.items() if lu < c]:
            del live[name]
        if c < first or len(live) != 1:
            continue
        (name,) = live
        if name in graph.nodes[c].inputs:
            members.append((s, c))
            s = c
            live = {}
    members.append((s, stop))
    return tuple(members) if len(members) >= 2 else None


def _feasible_band(
    b: BandBuilder,
    budget: int,
    single: bool = False,
    patch_windows: int = PATCH_WINDOWS,
    fed: bool = False,
) -> bool:
    """Some band of the builder's ops, or of ops from further upstream, may
    fit: one row, a 1 x 1 tile, a sub-row band of an accumulation or a group
    of the channels of a channel-local band (the floors count buffers that
    in-place activations may come to share)."""
    if b.error is not None:
        return False
    if (
        b.floor1 <= budget
        or b.lb_ok
        and b.kind in CHAIN_KINDS
        and lb_floor(b, single, budget, fed) <= budget
    ):
        return True
    if (
        b.grid
        and b.kind == "strips"
        and b.root_width >= 2
        and b.windows <= patch_windows
        and b.floor11 <= budget
    ):
        return True
    if b.kind == "strips":  # a channel-local band may cut its channels too
        nodes = b.tables.graph.nodes
        if not all(nodes[k].is_channel_local for k in range(b.start, b.stop)):
            return False
        model = b.model()
        return bool(channel_count(model)) and min_band_bytes(model) <= budget
    if b.kind != "accumulate":
        return False
    return min_band_bytes(b.model()) <= budget


def lb_floor(b: BandBuilder, single: bool, room: int | None = None, fed: bool = False) -> int:
    """A lower bound of a line-buffered chain's buffers over the band's
    starts upstream: of one-row tiles (`floor_lb1_scratch`), and where the
    band tiles in 2D, in column bands: that over the most bands
    (`COLUMN_BANDS`), each holding its share of every row (its inputs and
    outputs in band buffers, in a single arena too); with `fed`, where window
    feeders run in pixel blocks (`BandBuilder.floor_fed`). Where one is
    within `room`, the next is not worked out."""
    floor = b.floor_lb1_scratch(single)
    if room is not None and floor <= room:
        return floor
    if b.grid and b.root_width >= 2 and COLUMN_BANDS:
        floor = min(floor, b.floor_lb_bands(min(max(COLUMN_BANDS), b.root_width // 2)))
        if room is not None and floor <= room:
            return floor
    return min(floor, b.floor_fed(single)) if fed else floor


def form_stages(
    graph: PlanGraph, budget: int, *, chain_1d: bool = False, mac_weight: int = 1
) -> tuple[tuple[int, int], ...]:
    """Cut the topological order into stages [start, stop).

    Dynamic programming over cut points: best[j] is the least slow-memory
    traffic of ops [0, j). A segment may be a stage that fits normally (its
    inputs read once, its outputs written once; nothing for a whole-graph
    stage run in place), a chain (the spec's rules over its member stages;
    line-buffered, so also read once), or a stage that tiles (traffic as its
    tiles load it). Chains come back as their member stages, which
    `find_chains` fuses again. A node that fits in no way becomes a stage of
    its own that does not fit. Recomputed MACs count `mac_weight` bytes each.

    Among cuts of equal cost, the fewest activations cut off their producer
    (`_cut_activations`), then the fewest stages: a unit key (cost, cut
    activations, stages) is compared as a tuple.
    """
    ctx = _Ctx(graph, GraphTables(graph), budget, (3, 4) if chain_1d else (4,), mac_weight)
    return _form(ctx)[0]


def _cut_activations(
    tables: GraphTables,
) -> tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]:
    """(source, readers): `source[k]` is the index of the node producing the
    tensor activation k may overwrite (`tiling.in_place_source`: a unary
    activation, the only reader of a computed float32 tensor), -1 for any
    other node; `readers[p]` lists those activations of producer p.

    A stage that starts between such a producer and its activation costs the
    same traffic as one starting after the activation (the tensor and the
    activated one have the same size), but the activation then runs alone on
    the loaded tensor instead of in the producer's band, where it shares the
    producer's buffer and a kernel's epilogue may take it (`lower-gebp`).
    Stage formation counts such cuts as its secondary key."""
    graph = tables.graph
    source = [-1] * len(graph.nodes)
    readers: list[list[int]] = [[] for _ in graph.nodes]
    for k, name in enumerate(tables.in_place):
        p = None if name is None else graph.producer(name)
        if p is not None:
            source[k] = p
            readers[p].append(k)
    return tuple(source), tuple(tuple(r) for r in readers)


def _form(ctx: _Ctx) -> tuple[tuple[tuple[int, int], ...], tuple[int, int, int]]:
    """(the cuts, their key) of the dynamic programme of `form_stages`.

    best[j] is the key (cost, cut activations, stages) of the best cuts of
    ops [0, j); keys add up over units and compare as tuples, so the cost
    decides and the counts only break its ties."""
    graph, tables, budget = ctx.graph, ctx.tables, ctx.budget
    n = len(graph.nodes)
    source, readers = _cut_activations(tables)
    best: list[tuple[int, int, int]] = [(0, 0, 0)] + [(_INF, 0, 0)] * n
    back: list[tuple[tuple[int, int], ...]] = [()] * (n + 1)
    for j in range(1, n + 1):
        normal = _NormalScan(graph, tables, j, ctx.streamed, ctx.streamed_out)
        band = BandBuilder(tables, j)
        band_ok = True
        # (bound, i, a chain may fit, reads, activations of [i, j) cut off their producer)
        tiled: list[tuple[int, int, bool, int, int]] = []
        single = ctx.residents is not None
        cut = 0  # activations of ops [i, j) whose producer runs before i
        for i in range(j - 1, -1, -1):
            normal.prepend()
            cut += (source[i] >= 0) - sum(1 for k in readers[i] if k < j)
            if single:
                assert ctx.residents is not None
                room = budget - ctx.residents.across[i] - normal.out_bytes
                work = normal.single_peak
                normal_room = room + normal.dying - normal.dying_streamed
                if i == 0 and j == n:  # the whole graph in place
                    normal_room, work = budget, normal.peak
            else:
                room = normal_room = budget
                work = normal.peak
            fits = work <= normal_room
            if not fits and band_ok:
                while band.start > i and band.prepend():
                    pass
                # the resident bytes vary with the segment: prune on the whole budget
                band_ok = band.start == i and _feasible_band(
                    band, budget, single, ctx.patch_windows, ctx.feeders
                )
            if not fits and not band_ok and work > budget:
                break
            lb = normal.reads + normal.writes
            if fits:
                cost = 0 if (i == 0 and j == n) else lb
                cand = (best[i][0] + cost, best[i][1] + cut, best[i][2] + 1)
                if cand < best[j]:
                    best[j], back[j] = cand, ((i, j),)
            elif (
                best[i][0] < _INF
                and band_ok
                and (
                    not single
                    or _feasible_band(band, room, True, ctx.patch_windows, ctx.feeders)
                )
            ):
                chainable = band.error is None and (
                    band.bytes1 <= room
                    or band.lb_ok
                    and lb_floor(band, single, room, ctx.feeders) <= room
                )
                tiled.append((best[i][0] + lb, i, chainable, normal.reads, cut))
        for bound, i, chainable, once, cut in sorted(tiled):
            if bound > best[j][0]:
                break  # the rest cost at least as much (their bounds are sorted)
            if (bound, best[i][1] + cut, best[i][2] + 1) >= best[j]:
                continue  # no cheaper, nor as cheap with fewer cut activations or stages
            members = chain_members(ctx, i, j) if chainable else None
            chain = None if members is None else ctx.chain(members, exact=False)
            if members is not None and chain is not None:
                cost = bound + ctx.chain_cost(chain, once)
                cand = (cost, best[i][1] + cut, best[i][2] + len(members))
                if cand < best[j]:
                    best[j], back[j] = cand, members
                if cost == bound:  # nothing beyond reading once: no tiled stage is cheaper
                    continue
            cost = ctx.tiled_cost(i, j)
            if cost >= _INF:
                continue
            cand = (best[i][0] + cost, best[i][1] + cut, best[i][2] + 1)
            if cand < best[j]:
                best[j], back[j] = cand, ((i, j),)
        if best[j][0] >= _INF:  # node j - 1 fits in no way: a stage that does not fit
            prev = best[j - 1]
            cut = int(source[j - 1] >= 0)
            best[j] = (prev[0] + _INF // (n + 1), prev[1] + cut, prev[2] + 1)
            back[j] = ((j - 1, j),)
    cuts: list[tuple[int, int]] = []
    j = n
    while j > 0:
        cuts.extend(reversed(back[j]))
        j = back[j][0][0]
    return tuple(reversed(cuts)), best[n]


def _stage_cost(ctx: _Ctx, start: int, stop: int) -> int:
    """Slow traffic of one stage alone: normal, or as its tiles load it."""
    if ctx.fits_normal(start, stop):
        return ctx.traffic(start, stop)
    return ctx.tiled_cost(start, stop)


def find_chains(
    graph: PlanGraph,
    stages: Sequence[tuple[int, int]],
    budget: int,
    *,
    chain_1d: bool = False,
    mac_weight: int = 1,
) -> tuple[tuple[int, ...], ...]:
    """Chains over consecutive stages (indices into `stages`).

    Runs are extended greedily while the next stage keeps rules 1 to 3 with
    the run; a run that does not fit (or breaks rule 4 or the band rule) as a
    whole is split into consecutive chains that do, choosing the split with
    the least slow traffic (chains read their inputs once).
    """
    ctx = _Ctx(graph, GraphTables(graph), budget, (3, 4) if chain_1d else (4,), mac_weight)
    return _find_chains(ctx, stages)


def _find_chains(ctx: _Ctx, stages: Sequence[tuple[int, int]]) -> tuple[tuple[int, ...], ...]:
    graph = ctx.graph
    found: list[tuple[int, ...]] = []
    m = len(stages)
    i = 0
    while i < m:
        if not ctx.chainable(*stages[i]):
            i += 1
            continue
        run = [i]
        produced = {o for k in range(*stages[i]) for o in graph.nodes[k].outputs}
        j = i + 1
        while j < m and ctx.chainable(*stages[j]):
            ins, _ = ctx.io(*stages[j])
            _, prev_outs = ctx.io(*stages[run[-1]])
            if len(prev_outs) != 1 or prev_outs[0] not in ins:
                break
            if any(x not in produced for x in ins):
                break
            run.append(j)
            produced.update(o for k in range(*stages[j]) for o in graph.nodes[k].outputs)
            j += 1
        found.extend(_split_run(ctx, [stages[r] for r in run], run[0]))
        i = run[-1] + 1
    return tuple(found)


def _split_run(ctx: _Ctx, run: Sequence[tuple[int, int]], base: int) -> list[tuple[int, ...]]:
    """The least-traffic split of a run into chains and lone stages."""
    graph = ctx.graph
    n = len(run)
    single = ctx.residents is not None
    best = [0] + [_INF] * n
    back = list(range(-1, n))  # a lone stage by default
    for b in range(1, n + 1):
        best[b] = best[b - 1] + _stage_cost(ctx, *run[b - 1])
        builder = BandBuilder(ctx.tables, run[b - 1][1])
        for a in range(b - 2, -1, -1):
            while builder.start > run[a][0] and builder.prepend():
                pass
            room = ctx.budget_at(run[a][0], run[b - 1][1])
            if builder.error is not None or (
                builder.floor1 > ctx.budget
                and not (
                    builder.lb_ok
                    and lb_floor(builder, single, ctx.budget, ctx.feeders) <= ctx.budget
                )
            ):
                break
            if builder.floor1 > room and not (
                builder.lb_ok and lb_floor(builder, single, room, ctx.feeders) <= room
            ):
                continue
            cost = ctx.traffic(run[a][0], run[b - 1][1])
            if best[a] + cost >= best[b]:
                continue
            chain = ctx.chain(run[a:b], exact=False)
            if chain is not None:
                ins, _ = ctx.io(run[a][0], run[b - 1][1])
                once = sum(graph.tensors[x].nbytes for x in ins)
                cost += ctx.chain_cost(chain, once)
                if best[a] + cost < best[b]:
                    best[b], back[b] = best[a] + cost, a
    pieces: list[tuple[int, ...]] = []
    b = n
    while b > 0:
        a = back[b]
        if b - a >= 2:
            pieces.append(tuple(range(base + a, base + b)))
        b = a
    return list(reversed(pieces))


def _stage_io(
    graph: PlanGraph, last_use: Mapping[str, int], start: int, stop: int
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(inputs, outputs) of ops [start, stop): non-constant tensors read but not
    produced there; tensors produced there and needed later or model outputs."""
    produced: set[str] = set()
    ins: list[str] = []
    outs: list[str] = []
    for k in range(start, stop):
        node = graph.nodes[k]
        for name in node.inputs:
            if not graph.tensors[name].is_const and name not in produced and name not in ins:
                ins.append(name)
        for name in node.outputs:
            produced.add(name)
            if last_use[name] >= stop:
                outs.append(name)
    return tuple(ins), tuple(outs)


# ---------------------------------------------------------------------------
# The plan
# ---------------------------------------------------------------------------


def _named_ranges(model: BandModel, t: _Tiling) -> tuple[TileRows, ...]:
    """Per-tile ranges by tensor name; a grid lists its tiles row by row, a
    channel-grouped band its groups outermost."""
    out: list[TileRows] = []
    root = model.roots[0]
    names = model.names
    groups: list[tuple[int, int] | None] = [None]
    if t.channel_group and t.strategy != "accumulate":
        c, g = channel_count(model), t.channel_group
        groups = [(c0, min(c0 + g, c)) for c0 in range(0, c, g)]
    for chans in groups:
        for rr in t.row_ranges:
            rows = {name: rr[i] for i, name in enumerate(names)}
            if not t.col_ranges:
                out.append(TileRows(len(out), rr[root], None, rows, None, chans))
                continue
            for cr in t.col_ranges:
                cols = {name: cr[i] for i, name in enumerate(names)}
                out.append(TileRows(len(out), rr[root], cr[root], rows, cols, chans))
    return tuple(out)


def _op_rows(model: BandModel, rows: Sequence[int]) -> dict[str, int]:
    graph = model.graph
    return {graph.nodes[k].name: rows[outs[0]] for k, outs, _ in model.ops if outs}


STREAMED_WHY = "not even a one-row band fits (a streamed input or output: whole rows only)"
"""Why a node reading a streamed input or writing a streamed output fits in no way."""


def _why(ctx: _Ctx, k: int) -> str:
    """Why node k fits in no way: it has no band, or its smallest band is too big."""
    model = ctx.band(k, k + 1)
    if isinstance(model, str):
        return f"it runs whole: {model}"
    if ctx.streams(k, k + 1):
        return STREAMED_WHY
    if model.grid_ok and model.width >= 2:
        return "not even a one-row band or a 1 x 1 tile fits"
    return "not even a one-row band fits"


def _node_min(ctx: _Ctx, k: int) -> int:
    """The smallest budget node k fits alone: run whole, or its smallest band."""
    best = normal_peak(ctx.graph, k, k + 1, ctx.tables)
    model = ctx.band(k, k + 1)
    if isinstance(model, str):
        return best
    if ctx.streams(k, k + 1) or ctx.reads_windows(k, k + 1) and model.kind not in STREAM_KINDS:
        # rows arrive or leave whole and once: strips only (`_Ctx.tiling`);
        # an accumulation reading an input read again: strips too
        if model.kind in STREAM_KINDS:
            best = min(best, model.band_bytes(min(model.granule, model.height)))
        return best
    return min(best, min_band_bytes(model))


def _stage_plan(ctx: _Ctx, index: int, start: int, stop: int, single: bool) -> StagePlan:
    graph = ctx.graph
    ins, outs = _stage_io(graph, ctx.tables.last_use, start, stop)
    names = tuple(graph.nodes[k].name for k in range(start, stop))
    reads = sum(graph.tensors[x].nbytes for x in ins)
    writes = sum(graph.tensors[x].nbytes for x in outs)
    whole = any(graph.nodes[k].tiling is TilingClass.WHOLE for k in range(start, stop))
    if single:
        peak = normal_peak(graph, start, stop, ctx.tables)
        if peak <= ctx.budget:
            return StagePlan(index, start, stop, names, "inplace", ins, outs, True, peak)
    resident = ctx.normal_resident(start, stop)
    peak = ctx.normal_work(start, stop)
    if peak <= ctx.budget - resident:
        strategy = NORMAL_RESIDENT[1] if whole else NORMAL_RESIDENT[0]
        if ctx.residents is not None:
            return StagePlan(
                index, start, stop, names, strategy, ins, outs, True, peak, resident=resident
            )
        return StagePlan(
            index,
            start,
            stop,
            names,
            strategy,
            ins,
            outs,
            True,
            peak,
            slow_reads=reads,
            slow_writes=writes,
        )
    resident = ctx.resident(start, stop)
    model = ctx.band(start, stop)
    t = None if isinstance(model, str) else ctx.tiling(start, stop)
    if t is None or isinstance(model, str):
        need = max(_node_min(ctx, k) for k in range(start, stop))
        why = model if isinstance(model, str) else "no band fits"
        return StagePlan(
            index,
            start,
            stop,
            names,
            "whole" if whole or isinstance(model, str) else model.kind,
            ins,
            outs,
            False,
            peak,
            error=f"{why}; it needs at least {need} bytes ({format_bytes(need)})",
            resident=resident,
        )
    return StagePlan(
        index,
        start,
        stop,
        names,
        t.strategy,
        ins,
        outs,
        True,
        t.peak,
        tile_h=t.tile_h,
        tile_w=t.tile_w,
        num_tiles=t.tiles,
        channel_group=t.channel_group,
        halo=model.halo(),
        halo_sides=model.halo_sides(t.tile_h, t.tile_w),
        band_rows=dict(zip(model.names, t.rows)),
        band_cols=dict(zip(model.names, t.cols)),
        op_rows=_op_rows(model, t.rows),
        tiles=_named_ranges(model, t),
        slow_reads=t.reads,
        slow_writes=writes,
        recomputed_macs=t.recomputed,
        shared=_shared_names(model),
        resident=resident,
    )


def _shared_names(model: BandModel) -> dict[str, str]:
    """Tensor -> the tensor whose buffer holds it, for the shared ones."""
    names = model.names
    return {names[t]: names[o] for t, o in enumerate(model.share) if o != t}


def _chain_plan(
    ctx: _Ctx, index: int, members: Sequence[int], found: _Chain, stages: Sequence[StagePlan]
) -> ChainPlan:
    """The chain's figures (found by `_Ctx.chain`): `band_rows` are the rows
    each buffer is allocated with (line buffers when line-buffered), `op_rows`
    the spec's back-propagated band of every op's output."""
    graph = ctx.graph
    model, tile_h, rows, ranges = found.model, found.tile_h, found.rows, found.ranges
    assert ranges is not None
    writes = sum(graph.tensors[model.names[t]].nbytes for t in model.spilled)
    whole = _Tiling(
        "strips",
        tile_h,
        0,
        len(ranges),
        model.bytes_of_rows(rows),
        tuple(rows),
        found.reads,
        found.recomputed,
        tuple(ranges),
    )
    first, last = stages[members[0]], stages[members[-1]]
    peak = whole.peak
    scratch = None
    if found.line_buffered:
        scratch = chain_scratch(model, rows, found.history, found.recompute_ops, found.form)
        peak = scratch_bytes(model, rows, found.history, found.recompute_ops, found.form)
    return ChainPlan(
        index,
        tuple(members),
        first.start,
        last.stop,
        tile_h,
        len(ranges) * (len(found.col_ranges or ()) or 1),
        found.line_buffered,
        bool(found.recompute_ops),
        peak,
        model.halo(),
        model.halo_sides(tile_h),
        first.inputs,
        last.outputs,
        dict(zip(model.names, rows)),
        _op_rows(model, model.rows(tile_h)),
        dict(zip(model.names, found.history)),
        _banded_tiles(model, found) if found.col_w else _named_ranges(model, whole),
        found.reads,
        writes,
        found.recomputed,
        _shared_names(model),
        ctx.resident(first.start, last.stop),
        found.pace,
        {} if scratch is None else dict(scratch.live),
        {} if scratch is None else dict(scratch.offsets),
        0 if scratch is None else scratch.size,
        tuple(model.names[t] for t in sorted(found.form.in_place)),
        tuple(model.names[t] for t in sorted(found.form.direct)),
        0 if scratch is None else scratch.block,
        () if scratch is None else scratch.runs,
        () if scratch is None else scratch.blocked,
        found.col_w,
        dict(zip(model.names, found.cols)) if found.col_w else {},
        tuple(sorted(found.form.feeders)),
        {} if scratch is None else dict(scratch.blocked_cols),
    )


def _banded_tiles(model: BandModel, found: _Chain) -> tuple[TileRows, ...]:
    """The tiles of a chain in column bands: bands outermost, in each band
    the line-buffered run's tiles (every row), with the band's columns."""
    assert found.ranges is not None and found.col_ranges is not None
    root = model.roots[0]
    out: list[TileRows] = []
    for cr in found.col_ranges:
        cols = {name: cr[i] for i, name in enumerate(model.names)}
        for rr in found.ranges:
            rows = {name: rr[i] for i, name in enumerate(model.names)}
            out.append(TileRows(len(out), rr[root], cr[root], rows, cols))
    return tuple(out)


def plan(
    graph: PlanGraph,
    budget: int,
    *,
    slow_budget: int | None = None,
    stream_input: bool = False,
    stream_output: bool = False,
    chain_1d: bool = False,
    mac_weight: int = 1,
    patch_windows: int = PATCH_WINDOWS,
    reread_input: bool = False,
) -> Plan:
    """The memory plan of `graph` under a fast budget of `budget` bytes and a
    slow budget of `slow_budget` (None: unbounded; 0: no slow memory).

    Under a slow budget the plan is the unbounded one when its slow peak
    fits, else the single-arena plan (`Plan.single_arena`: nothing in slow
    memory, the fast budget holding every unit's buffers and the tensors
    resident across it). A pair that neither fits is a failed plan naming the
    node, the
    resident tensor and the smallest budgets that would fit.

    With `stream_input` the model inputs are resident nowhere: every unit
    reading one asks a callback for the rows it loads (bands of whole rows,
    so such a unit runs normally, in strips or in a chain; a line-buffered
    chain asks for each row once). With `stream_output` the model outputs
    nothing reads leave the same way, each row once, as their producer spills
    it (a normal stage sends its whole output when it ends). With
    `reread_input` as well, a streamed input may be asked again, in windows
    of rows and columns: the units reading it tile as they would a resident
    one (2D tiles, patches, column bands), each window asked of the callback.

    `chain_1d` lets rank-3 (1D) feature maps chain too; the spec's rule 2
    asks for rank 4, so it is off by default. `mac_weight` is what one
    recomputed MAC costs in bytes of slow traffic when choosing cuts (a
    PSRAM byte and a MAC take about a cycle each on the targets).
    `patch_windows` (`PATCH_WINDOWS`): the most window ops a stage of
    patches (a 2D grid recomputing its overlaps) may span; 1 keeps 2D grids
    to one window op.
    """
    if budget <= 0:
        raise ValueError(f"budget must be positive, got {budget}")
    if slow_budget is not None and slow_budget < 0:
        raise ValueError(f"slow budget must not be negative, got {slow_budget}")
    ranks = (3, 4) if chain_1d else (4,)
    tables = GraphTables(graph)
    streamed = _streamed(graph, stream_input)
    out = _streamed_out(graph, stream_output)

    ctx = functools.partial(
        _Ctx, graph, tables, budget, ranks, mac_weight, patch_windows, streamed=streamed,
        streamed_out=out, reread=reread_input and bool(streamed),
    )

    def unbounded() -> Plan:
        return _plan(ctx())

    free: Plan | None = None
    if slow_budget != 0 or _may_need_no_slow(graph, tables, budget, streamed, out):
        free = unbounded()
        if slow_budget is None:
            return free
        if free.fits and free.slow_peak <= slow_budget:
            return replace(free, slow_budget=slow_budget)
    assert slow_budget is not None
    single = _single(ctx, Residents(graph, tables, streamed, out))
    if single.fits:
        return replace(single, slow_budget=slow_budget)
    if free is None:
        free = unbounded()
    smallest = functools.partial(
        min_single_budget,
        graph,
        chain_1d=chain_1d,
        mac_weight=mac_weight,
        patch_windows=patch_windows,
        tables=tables,
        stream_input=stream_input,
        stream_output=stream_output,
    )
    need = smallest(reread_input=reread_input)
    again = smallest(reread_input=True) if streamed and not reread_input else None
    return replace(
        single,
        slow_budget=slow_budget,
        min_single=need,
        min_single_reread=again if again is not None and again < need else None,
        slow_needed=free.slow_peak if free.fits else None,
        failed_min_budget=free.failed_min_budget if not free.fits else single.failed_min_budget,
    )


def _single(ctx: Callable[..., _Ctx], residents: Residents, fed: bool = True) -> Plan:
    """The single-arena plan (`ctx` makes the planning run): without window
    feeders, and where that does not fit (and `fed`), with them (`_fed`,
    chains recomputing their feeders in pixel blocks): the plans that fit
    without stay as they were, and the costlier search runs only below
    their smallest budget."""
    p = _plan(ctx(residents=residents))
    if p.fits or not fed or not WINDOW_FEEDERS:
        return p
    q = _plan(ctx(residents=residents, feeders=True))
    return q if q.fits else p


def _may_need_no_slow(
    graph: PlanGraph,
    tables: GraphTables,
    budget: int,
    streamed: frozenset[str],
    streamed_out: frozenset[str],
) -> bool:
    """Whether the unbounded plan may use no slow memory: only a plan run in
    place (the whole graph one normal stage) or one whose inputs and outputs
    all stream; any other plan keeps a model input (read by a unit) or a
    model output in slow memory. When this is False a plan without slow
    memory is the single-arena plan, and the unbounded one need not be made."""
    if not graph.nodes or normal_peak(graph, 0, len(graph.nodes), tables) <= budget:
        return True
    ins = [x for x in graph.inputs if not graph.tensors[x].is_const]
    return all(x in streamed or not graph.consumers(x) for x in ins) and all(
        x in streamed_out for x in graph.outputs
    )


def plan_residents(
    graph: PlanGraph, p: Plan, tables: GraphTables | None = None
) -> Residents | None:
    """What plan `p` of `graph` keeps in its one arena across units, as it was
    planned (`Residents.held_by` a unit: its `resident` bytes); None for a
    plan with slow memory."""
    if not p.single_arena:
        return None
    return Residents(
        graph, tables or GraphTables(graph), _streamed(graph, p.stream_input), p.streamed_outputs
    )


def _streamed(graph: PlanGraph, stream_input: bool) -> frozenset[str]:
    """The model inputs a streamed plan reads by rows: every non-constant one."""
    if not stream_input:
        return frozenset()
    return frozenset(x for x in graph.inputs if not graph.tensors[x].is_const)


def _streamed_out(graph: PlanGraph, stream_output: bool) -> frozenset[str]:
    """The model outputs a streamed plan sends by rows: those of rank 2 or more
    that no op reads (an output read later stays resident)."""
    if not stream_output:
        return frozenset()
    return frozenset(
        x
        for x in graph.outputs
        if graph.producer(x) is not None and not graph.consumers(x) and graph.tensors[x].rank >= 2
    )


def _plan(ctx: _Ctx) -> Plan:
    graph = ctx.graph
    cuts, chosen = _verified_cuts(ctx)
    single = len(cuts) == 1
    stages = [_stage_plan(ctx, i, a, b, single) for i, (a, b) in enumerate(cuts)]
    chains: list[ChainPlan] = []
    for members, found in chosen:
        c = _chain_plan(ctx, len(chains), members, found, stages)
        chains.append(c)
        for pos, s in enumerate(members):
            st = stages[s]
            touched = _touched(graph, st.start, st.stop)
            stages[s] = StagePlan(
                st.index,
                st.start,
                st.stop,
                st.nodes,
                "strips",
                st.inputs,
                st.outputs,
                True,
                c.peak,
                tile_h=c.tile_h,
                num_tiles=c.num_tiles,
                halo=c.halo,
                halo_sides=c.halo_sides,
                band_rows={x: r for x, r in c.band_rows.items() if x in touched},
                op_rows={x: c.op_rows[x] for x in st.nodes if x in c.op_rows},
                chain=c.index,
                slow_reads=c.slow_reads if pos == 0 else 0,
                slow_writes=c.slow_writes if pos == len(members) - 1 else 0,
                recomputed_macs=_stage_share(graph, c, st),
                shared={x: o for x, o in c.shared.items() if x in touched},
            )
    in_place = single and stages[0].strategy == "inplace"
    return _figures(ctx, tuple(stages), tuple(chains), in_place)


def _verified_cuts(
    ctx: _Ctx,
) -> tuple[tuple[tuple[int, int], ...], list[tuple[tuple[int, ...], _Chain]]]:
    """The cuts and chains of the plan, each checked on its exact tiles.

    Stage formation and chain finding compare estimates (affine ranges, line
    buffers from offsets). Where the exact run of a chosen chain or tiled
    stage does not fit after all (dilated windows clipped by the padding
    hold more rows than the offsets say), its estimate is ruled out and the
    cuts are searched again; each round rules out one more, so it ends."""
    while True:
        cuts, _ = _form(ctx)
        chains = _find_chains(ctx, cuts)
        chosen: list[tuple[tuple[int, ...], _Chain]] = []
        retry = False
        for members in chains:
            key = [cuts[s] for s in members]
            found = ctx.chain(key)
            if found is None:
                ctx.rule_out_chain(key)
                retry = True
            else:
                chosen.append((members, found))
        in_chain = {s for members in chains for s in members}
        for s, (a, b) in enumerate(cuts):
            if s in in_chain or ctx.fits_normal(a, b):
                continue
            if ctx.tiling(a, b) is None and ctx.tiling(a, b, exact=False) is not None:
                ctx.rule_out_tiling(a, b)
                retry = True
        if not retry:
            return cuts, chosen


def _touched(graph: PlanGraph, start: int, stop: int) -> set[str]:
    names: set[str] = set()
    for k in range(start, stop):
        names.update(graph.nodes[k].inputs)
        names.update(graph.nodes[k].outputs)
    return names


def _stage_share(graph: PlanGraph, c: ChainPlan, st: StagePlan) -> int:
    """A member's part of the chain's recomputed MACs: in a line-buffered
    chain only a member holding a channel Concat recomputes (its ops compute
    their whole range); in a plain chain every op computes its whole range."""
    if not c.recomputed_macs:
        return 0
    concat = any(graph.nodes[k].is_channel_concat for k in range(st.start, st.stop))
    if c.line_buffered and not concat:
        return 0
    total = 0
    for k in range(st.start, st.stop):
        node = graph.nodes[k]
        if not node.macs or not node.outputs:
            continue
        o = node.outputs[0]
        seq = [tile.rows[o] for tile in c.tiles if o in tile.rows]
        extra = sum(b - a for a, b in seq) - union_length(seq)
        total += node.macs * extra // graph.tensors[o].height
    return total


def _figures(
    ctx: _Ctx, stages: tuple[StagePlan, ...], chains: tuple[ChainPlan, ...], in_place: bool
) -> Plan:
    graph = ctx.graph
    # units: chains and unchained stages, in order
    unit_of_node: list[int] = [0] * len(graph.nodes)
    units = 0
    seen_chain: dict[int, int] = {}
    for s in stages:
        if s.chain is not None:
            if s.chain not in seen_chain:
                seen_chain[s.chain] = units
                units += 1
            u = seen_chain[s.chain]
        else:
            u = units
            units += 1
        for k in range(s.start, s.stop):
            unit_of_node[k] = u
    slow_live = [0] * max(units, 1)
    single = ctx.residents is not None
    if not in_place and not single:
        for name, info in graph.tensors.items():
            if info.is_const:
                continue
            p = graph.producer(name)
            readers = {unit_of_node[k] for k in graph.consumers(name)}
            birth = 0 if p is None else unit_of_node[p]
            if name in ctx.streamed or name in ctx.streamed_out:
                continue
            in_slow = (p is None and (readers or name in graph.outputs)) or (
                p is not None and (name in graph.outputs or any(r != birth for r in readers))
            )
            if not in_slow:
                continue
            death = units - 1 if name in graph.outputs else max(readers)
            for u in range(birth, death + 1):
                slow_live[u] += align(info.nbytes)
    fits = all(s.fits for s in stages)
    failed = next((s for s in stages if not s.fits), None)
    failed_node = failed_min = failure = failed_tensor = None
    whole_rows = False
    if failed is not None:
        need, k = max((_node_min(ctx, k), k) for k in range(failed.start, failed.stop))
        failed_node, failed_min = graph.nodes[k].name, need
        failure = _why(ctx, k)
        whole_rows = ctx.streams(k, k + 1)
        if single and ctx.residents is not None:
            own = min(_node_min(ctx, k), single_peak(graph, k, k + 1, ctx.tables))
            held = ctx.resident(failed.start, failed.stop)
            big = ctx.residents.largest(failed.start, failed.stop)
            failure = (
                f"in one arena, stage {failed.index} needs at least {own} bytes of its own "
                f"beside {held} bytes of tensors resident while it runs"
                if own
                else f"in one arena, the tensors resident while stage {failed.index} runs "
                f"take {held} bytes"
            )
            if big is not None:
                failed_tensor = big[0]
                failure += f", the largest '{big[0]}' of {big[1]} bytes"
            failed_min = own + held
    peak = max(
        [s.peak + s.resident for s in stages if s.chain is None]
        + [c.peak + c.resident for c in chains]
        + [0]
    )
    reads = sum(s.slow_reads for s in stages if s.chain is None) + sum(c.slow_reads for c in chains)
    writes = sum(s.slow_writes for s in stages if s.chain is None) + sum(
        c.slow_writes for c in chains
    )
    rows_by, streamed_bytes = _stream_loads(ctx, stages, chains, in_place)
    rows = sum(rows_by.values())
    reads -= streamed_bytes
    out_rows_by: dict[str, int] = {}
    for x in ctx.streamed_out:  # each row sent once, not a slow write
        info = graph.tensors[x]
        out_rows_by[x] = info.shape[1]
        if not in_place:
            writes -= info.nbytes
    out_rows = sum(out_rows_by.values())
    if single:  # the loads and spills of a single arena move bytes within it
        reads = writes = 0
    recomputed = sum(s.recomputed_macs for s in stages if s.chain is None) + sum(
        c.recomputed_macs for c in chains
    )
    return Plan(
        ctx.budget,
        fits,
        stages,
        chains,
        peak,
        max(slow_live),
        reads,
        writes,
        graph.total_macs,
        recomputed,
        in_place,
        failed_node,
        failed_min,
        failure,
        single_arena=single,
        stream_input=bool(ctx.streamed),
        reread_input=ctx.reread,
        stream_rows=rows,
        stream_bytes=streamed_bytes + _in_place_stream(ctx, stages, in_place),
        stream_output=bool(ctx.streamed_out),
        streamed_outputs=ctx.streamed_out,
        out_rows=out_rows,
        stream_rows_by=tuple((x, rows_by[x]) for x in graph.inputs if x in rows_by),
        out_rows_by=tuple((x, out_rows_by[x]) for x in graph.outputs if x in out_rows_by),
        failed_tensor=failed_tensor,
        failed_whole_rows=whole_rows,
    )


def _row_bytes(graph: PlanGraph, name: str) -> int:
    info = graph.tensors[name]
    return info.nbytes // info.shape[1] if info.rank >= 2 else info.nbytes


def _stream_loads(
    ctx: _Ctx, stages: Sequence[StagePlan], chains: Sequence[ChainPlan], in_place: bool
) -> tuple[dict[str, int], int]:
    """Rows asked of each streamed input and the bytes of those counted in the
    units' slow reads: a normal stage loads every row, a strip every row of
    its range, a line-buffered chain each row once (in column bands, once
    per band), a plain chain every row of every tile's range. A tile of a
    2D grid or a column band asks for its columns of those rows only
    (`reread` inputs)."""
    graph = ctx.graph
    total = 0
    by: dict[str, int] = {}
    for x in sorted(ctx.streamed):
        rows = 0
        info = graph.tensors[x]
        height = info.shape[1] if info.rank >= 2 else 1
        rb = _row_bytes(graph, x)
        cell = rb // info.shape[2] if info.rank >= 3 else rb
        window = functools.partial(_window_bytes, x, rb, cell)

        for st in stages:
            if st.chain is not None or x not in st.inputs:
                continue
            if not st.tiled:
                rows += height
                total += 0 if in_place else info.nbytes
                continue
            for t in st.tiles:
                if x in t.rows and window(t):  # a window of no column asks nothing
                    a, b = t.rows[x]
                    rows += b - a
                    total += (b - a) * window(t)
        for c in chains:
            if x not in c.inputs:
                continue
            bands: dict[tuple[int, int] | None, list[TileRows]] = {}  # by column band
            for t in c.tiles:
                if x in t.rows and window(t):
                    bands.setdefault(t.cols, []).append(t)
            for ts in bands.values():
                seq = [t.rows[x] for t in ts]
                got = union_length(seq) if c.line_buffered else sum(b - a for a, b in seq)
                rows += got
                total += got * window(ts[0])
        by[x] = rows
    return by, total


def _window_bytes(x: str, row_bytes: int, cell: int, t: TileRows) -> int:
    """The bytes of one row of what tile t asks of tensor x: its columns of
    the row (`col_ranges`), else the whole row."""
    if t.col_ranges is None or x not in t.col_ranges:
        return row_bytes
    lo, hi = t.col_ranges[x]
    return (hi - lo) * cell


def _in_place_stream(ctx: _Ctx, stages: Sequence[StagePlan], in_place: bool) -> int:
    """An in-place plan loads its streamed inputs whole (not a slow read)."""
    if not in_place:
        return 0
    return sum(ctx.graph.tensors[x].nbytes for x in ctx.streamed if x in stages[0].inputs)


def min_single_budget(
    graph: PlanGraph,
    *,
    chain_1d: bool = False,
    mac_weight: int = 1,
    tables: GraphTables | None = None,
    stream_input: bool = False,
    stream_output: bool = False,
    patch_windows: int = PATCH_WINDOWS,
    max_recompute: float | None = None,
    reread_input: bool = False,
) -> int:
    """The smallest fast budget of a plan without slow memory: a bisection
    over `plan(graph, b, slow_budget=0).fits`, between the unbounded plan's
    `min_budget` and the sum of every tensor (which always fits), whose upper
    end moves down to the peak of the plan fitting there (`PEAK_PROBES`).

    A larger budget never resident-fits less at the same cuts, but the cuts
    the search chooses differ with the budget, so this is the smallest budget
    the bisection finds, each end checked by planning it. `max_recompute`:
    a plan counts as fitting only if it recomputes at most that fraction of
    the model's MACs (None: any; 0.0: none), the memory bought with MACs
    capped (the frontier shows the whole trade)."""
    tables = tables or GraphTables(graph)
    ranks = (3, 4) if chain_1d else (4,)

    streamed = _streamed(graph, stream_input)
    out = _streamed_out(graph, stream_output)

    def within(p: Plan) -> bool:
        return max_recompute is None or p.recomputed_macs <= max_recompute * p.macs

    peaks: dict[int, int | None] = {}

    def ok(b: int) -> bool:
        """Whether budget b fits; `peaks[b]` the peak of its plan (None: no fit)."""
        if b not in peaks:
            ctx = functools.partial(
                _Ctx, graph, tables, b, ranks, mac_weight, patch_windows, streamed=streamed,
                streamed_out=out, reread=reread_input and bool(streamed),
            )
            peaks[b] = None
            if _may_need_no_slow(graph, tables, b, streamed, out):
                free = _plan(ctx())
                if free.fits and free.slow_peak == 0 and within(free):
                    peaks[b] = free.peak
            if peaks[b] is None:
                residents = Residents(graph, tables, streamed, out)
                p = _single(ctx, residents, fed=max_recompute is None or max_recompute > 0)
                peaks[b] = p.peak if p.fits and within(p) else None
        return peaks[b] is not None

    lo = min_budget(graph)
    hi = max(lo, sum(align(t.nbytes) for t in graph.tensors.values() if not t.is_const))
    for _ in range(4):
        if ok(hi):
            break
        hi *= 2
    else:
        raise ValueError("no single-arena budget found up to four times every tensor at once")
    probes = 0
    while lo < hi:
        peak = peaks[hi]
        assert peak is not None
        if lo <= peak < hi and ok(peak):  # the plan at hi fits in its own peak
            hi = peak
            if probes < PEAK_PROBES and lo < hi <= lo + lo // PROBE_SPAN:
                probes += 1
                if not ok(hi - 1):  # hi is where plans stop fitting
                    break
                hi -= 1
            continue
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid + 1
    return hi


PEAK_PROBES = 8
"""`min_single_budget` bisects, but where the plan at the upper end fits in
a smaller peak it moves the end there (checked by planning it) and, once the
ends are within 1/`PROBE_SPAN` of each other, asks whether one byte less
fits: where it does not, that peak is where plans stop fitting and the
search is over (at most this many asks; then the bisection alone)."""

PROBE_SPAN = 8
"""`min_single_budget` asks one byte below a plan's peak once the ends of its
search are within 1/`PROBE_SPAN` of the lower end."""


def min_fast_budget(
    graph: PlanGraph,
    slow_budget: int | None = None,
    stream_input: bool = False,
    stream_output: bool = False,
    reread_input: bool = False,
) -> int:
    """The smallest fast budget that fits beside `slow_budget` (None:
    unbounded, `min_budget`; 0: a single arena, `min_single_budget`; else a
    bisection over `plan(graph, b, slow_budget=...).fits` between the two)."""
    if slow_budget is None and not stream_input and not stream_output:
        return min_budget(graph)
    tables = GraphTables(graph)
    single = min_single_budget(
        graph,
        tables=tables,
        stream_input=stream_input,
        stream_output=stream_output,
        reread_input=reread_input,
    )
    if slow_budget == 0:
        return single
    lo, hi = min_budget(graph), single
    while lo < hi:
        mid = (lo + hi) // 2
        kw = {"stream_input": stream_input, "stream_output": stream_output}
        if plan(graph, mid, slow_budget=slow_budget, reread_input=reread_input, **kw).fits:
            hi = mid
        else:
            lo = mid + 1
    return hi


def frontier(
    graph: PlanGraph,
    slow_budget: int | None = None,
    points: int = 8,
    stream_input: bool = False,
    stream_output: bool = False,
    reread_input: bool = False,
) -> list[Plan]:
    """Plans from the smallest fast budget that fits beside `slow_budget` up
    to the layer-by-layer peak, at `points` budgets spaced evenly in ratio:
    the memory against recomputed MACs and slow traffic."""
    least = min_fast_budget(graph, slow_budget, stream_input, stream_output, reread_input)
    most = max(least, normal_peak(graph, 0, len(graph.nodes)) if graph.nodes else least)
    budgets = sorted(
        {int(round(least * (most / least) ** (i / max(points - 1, 1)))) for i in range(points)}
    )
    kw = {"stream_input": stream_input, "stream_output": stream_output}
    return [
        plan(graph, b, slow_budget=slow_budget, reread_input=reread_input, **kw) for b in budgets
    ]


def min_budget(graph: PlanGraph) -> int:
    """The smallest budget under which `plan(graph, budget).fits`.

    A node that fits in no way alone fits in no larger stage either, with
    one exception: pointwise ops feeding a GlobalAveragePool can cut their
    channels only inside its accumulated band. So a budget fits when the
    nodes split into stages that each fit alone or are such a band ending in
    the accumulation (`_partition_fits`), and the search over budgets tests
    exactly that.
    """
    tables = GraphTables(graph)
    hi = max(1, sum(align(t.nbytes) for t in graph.tensors.values() if not t.is_const))

    def ok(budget: int) -> bool:
        return _partition_fits(_Ctx(graph, tables, budget))

    lo = 1
    while lo < hi:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid + 1
    return hi


def _partition_fits(ctx: _Ctx) -> bool:
    """Ops [0, n) split into stages that each fit: single nodes (normal or
    their smallest band) or accumulated bands [i, j) ending in the
    accumulation at j - 1 (`min_band_bytes`)."""
    graph, budget = ctx.graph, ctx.budget
    n = len(graph.nodes)
    reach = [True] + [False] * n
    for j in range(1, n + 1):
        k = j - 1
        if reach[k]:
            if normal_peak(graph, k, j, ctx.tables) <= budget:
                reach[j] = True
                continue
            model = ctx.band(k, j)
            if not isinstance(model, str) and min_band_bytes(model) <= budget:
                reach[j] = True
                continue
        cls = graph.nodes[k].tiling
        if cls is not TilingClass.ACCUMULATE:
            if not reach[j] and cls is not TilingClass.POINTWISE:
                return False  # no accumulated band can take it in either
            continue
        b = BandBuilder(ctx.tables, j)
        b.prepend()
        while not reach[j] and b.start > 0 and b.prepend():
            if reach[b.start] and min_band_bytes(b.model()) <= budget:
                reach[j] = True
    return reach[n]
