"""The formulas of spec/tiling.md as small pure functions, and the band model.

Part 1 holds the spec's formulas one by one (receptive field, halo, height
back-propagation, tile height search, evening out, overhead). Part 2 is the
band model of a set of consecutive ops (a stage or a chain): for an output band
of `rows` rows it gives every tensor's rows (the back-propagated heights), the
bytes the runtime allocates (`band_bytes`), the exact row range of every
tensor in every tile, and the line buffers of a line-buffered chain.

Band accounting, exactly (a loop-level interpreter reproduces it):
  * A band holds every non-constant tensor the ops touch: each stage input
    over the rows the band reads, each op output over its rows; nothing is
    freed within a tile. Each buffer is `align(rows * row_bytes)`. One
    exception: an activation that is the only reader of a tensor computed
    in the band overwrites it in place (`in_place_source`; not in an
    accumulation or a band holding a channel Concat), so the two share one
    buffer of the larger extent (`BandModel.share`).
  * A pointwise op on a row vector (1, K) cuts K, its last axis (`_lane_op`):
    one row would be the whole tensor.
  * `rows` of a tensor is the spec's back-propagation: a window op maps
    `r` output rows to `input_rows(r, kernel, stride, dilation)`, a pointwise
    op to `r`, a resize to the most source rows any `r` consecutive output
    rows read (`map_rows`; exact for known modes, RESAMPLE), a broadcast or
    second matrix operand to its whole height; a tensor read by several ops
    takes the largest; every value is capped at the tensor's height.
  * A tile's exact range of a tensor (`ranges`) is the hull of the rows its
    readers need, clipped to the tensor: the first and last row some output
    row of the tile really reads (a reader with no rows, or reading only
    padding, needs none). The planner allocates a buffer with the
    larger of its back-propagated rows and the longest range any tile reads
    (longer only for branches whose paddings disagree), so every tile fits.
  * Line buffers (`line_buffer`, `line_buffer_run`): each tile computes only
    the rows not computed by an earlier tile and keeps the history rows its
    readers need again (module doc of tigris_ir.plan.planner). They run over
    monotone ranges (`lb_tile_ranges`): dilated windows clipped by the
    padding read ranges that start lower on a later tile or go back.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cache, cached_property
from typing import Any

import numpy as np

from tigris_ir.plan.graph import BAND_AXIS, INPUT_BAND_AXES, NodeInfo, PlanGraph
from tigris_ir.plan.memory import ALIGN, align
from tigris_ir.plan.tiling_class import TilingClass
from tigris_ir.reference import kernels

# ---------------------------------------------------------------------------
# Part 1: the spec's formulas
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Window:
    """A sliding window along one axis (kernel, stride, dilation, pads)."""

    kernel: int
    stride: int = 1
    dilation: int = 1
    pad_begin: int = 0
    pad_end: int = 0

    @property
    def eff_kernel(self) -> int:
        """`kernel + (kernel - 1) * (dilation - 1)`: the rows one output reads."""
        return self.kernel + (self.kernel - 1) * (self.dilation - 1)


def _as_window(op: Window | Sequence[int]) -> Window:
    return op if isinstance(op, Window) else Window(*op)


def receptive_field(ops: Iterable[Window | Sequence[int]]) -> int:
    """The spec's walk over spatial ops in execution order: input rows behind
    one output row. `ops` are Windows or (kernel, stride, dilation) tuples."""
    rf, cumulative_stride = 1, 1
    for op in map(_as_window, ops):
        rf += (op.eff_kernel - 1) * cumulative_stride
        cumulative_stride *= op.stride
    return rf


def halo(ops: Iterable[Window | Sequence[int]]) -> int:
    """`RF - 1`: input rows a tile reads beyond its own."""
    return receptive_field(ops) - 1


def input_rows(out_rows: int, kernel: int, stride: int = 1, dilation: int = 1) -> int:
    """The spec's back-propagation:
    `output_tile_h * stride + max((kernel - 1) * dilation + 1 - stride, 0)`."""
    return out_rows * stride + max((kernel - 1) * dilation + 1 - stride, 0)


def output_size(size: int, w: Window) -> int:
    """Output extent of a window op over `size` input positions."""
    return (size + w.pad_begin + w.pad_end - w.eff_kernel) // w.stride + 1


def window_input_range(
    start: int, stop: int, w: Window, size: int | None = None
) -> tuple[int, int]:
    """Input rows [lo, hi) behind output rows [start, stop):
    `[start * stride - pad_begin, (stop - 1) * stride - pad_begin + eff_kernel)`.
    With `size`, the range is clipped to the image `[0, size)`: to the first
    and last row some output row really reads (a dilated window near a border
    can skip rows inside the clipped range)."""
    return map_range(
        (WINDOW, w.kernel, w.stride, w.dilation, w.pad_begin),
        start,
        stop,
        size if size is not None else 0,
        size is not None,
    )


def _window_hull(lo: int, hi: int, k: int, s: int, d: int, pb: int, size: int) -> tuple[int, int]:
    """First and last input row in [0, size) that output rows [lo, hi) read."""
    first = last = -1
    for j in range(k):
        off = j * d - pb
        r0 = max(lo, -(off // s))
        r1 = min(hi - 1, (size - 1 - off) // s)
        if r0 <= r1:
            x, y = r0 * s + off, r1 * s + off
            first = x if first < 0 or x < first else first
            last = y if y > last else last
    if first < 0:
        edge = min(max(lo * s - pb, 0), size)
        return edge, edge
    return first, last + 1


def num_tiles(height: int, tile_h: int) -> int:
    return -(-height // tile_h)


def even_tile_h(
    height: int,
    tile_h: int,
    rows_read: Callable[[int], int] | None = None,
    granule: int = 1,
) -> int:
    """The spec's second step: keep `num_tiles = ceil(H / tile_h)` and take the
    smallest rows >= ceil(H / num_tiles) that reads no more input rows.

    `rows_read(rows)` is the stage's input rows for a band (default: rows).
    The input rows grow with the band, so this is ceil(H / num_tiles) unless
    `rows_read` is flat there; the last tile is then no short remainder.
    With a granule (a reshape's whole rows) the rows round up to a multiple.
    """
    n = num_tiles(height, tile_h)
    low = -(-height // n)
    if granule > 1:
        return min(-(-low // granule) * granule, tile_h)
    read = rows_read or (lambda r: r)
    target = read(low)
    for rows in range(low, tile_h + 1):
        if read(rows) <= target:
            return rows
    return low


def tile_bounds(height: int, tile_h: int) -> tuple[tuple[int, int], ...]:
    """Output rows [start, stop) of each tile: they cover [0, height) exactly."""
    return tuple((a, min(a + tile_h, height)) for a in range(0, height, tile_h))


def overhead_bytes(halo_rows: int, input_row_bytes: int, tiles: int) -> int:
    """Redundant input reads of a strip-tiled stage:
    `halo * input_row_bytes * (num_tiles - 1)`."""
    return halo_rows * input_row_bytes * max(tiles - 1, 0)


def largest_fitting(cost: Callable[[int], int], hi: int, budget: int, granule: int = 1) -> int:
    """Largest `rows` in {granule, 2 granule, ..., hi} (and hi itself) with
    `cost(rows) <= budget` by binary search (cost grows with rows); 0 if none."""
    if hi <= 0:
        return 0
    if cost(hi) <= budget:
        return hi
    lo_k, hi_k = 0, (hi - 1) // granule  # candidates k * granule, k >= 1
    while lo_k < hi_k:
        mid = (lo_k + hi_k + 1) // 2
        if cost(mid * granule) <= budget:
            lo_k = mid
        else:
            hi_k = mid - 1
    return lo_k * granule


@dataclass(frozen=True)
class TileChoice:
    """The spec's tile height selection for a band of `height` output rows."""

    tile_h: int
    num_tiles: int
    peak: int


def choose_tile_h(
    height: int,
    band_bytes: Callable[[int], int],
    budget: int,
    rows_read: Callable[[int], int] | None = None,
    granule: int = 1,
) -> TileChoice | None:
    """tile_h = largest rows <= H with band_bytes(rows) <= budget (binary
    search); num_tiles = ceil(H / tile_h); even the bands out;
    tiled_peak = band_bytes(tile_h). None when one band does not fit."""
    best = largest_fitting(band_bytes, height, budget, granule)
    if best == 0:
        return None
    tile_h = even_tile_h(height, best, rows_read, granule)
    return TileChoice(tile_h, num_tiles(height, tile_h), band_bytes(tile_h))


# ---------------------------------------------------------------------------
# Part 2: row maps and the band model
# ---------------------------------------------------------------------------

ACC_DTYPE = np.dtype(np.float64)
"""The element of a GlobalAveragePool's accumulator (one per channel), as
`loop.accumulate` declares it; `band_exec.accumulate` says why float64 makes
the tiled mean of int8 inputs exact."""

IDENT, WINDOW, WHOLE, RATIO, BYTES, TRANSPOSED, RESAMPLE = range(7)
RowMap = tuple[int, int, int, int, int]
"""(code, a, b, c, d): how an op's output band maps to one input's band.

IDENT: same rows. WINDOW (k, s, d, pad_begin): a conv or pool. WHOLE: the
input is read whole. RATIO (in, out): a resize of unknown modes; the source
band follows the coordinates, widened by one row each side (covers every
coordinate mode). RESAMPLE (in, out, coordinate mode, interpolation): a
resize of known modes (`resample_map`); a band reads exactly the source rows
the kernel takes for its output rows. BYTES (out_row_bytes, in_row_bytes): a
reshape over one contiguous buffer. TRANSPOSED (k, s, d, pad_begin): a
ConvTranspose's input rows."""

def same_place(m: RowMap) -> bool:
    """A row (or column) map reading the output's own rows: identity, or a
    window of one row, stride 1, no padding."""
    return m[0] == IDENT or (m[0] == WINDOW and m[1] == 1 and m[2] == 1 and m[4] == 0)


IDENT_MAP: RowMap = (IDENT, 0, 0, 0, 0)
WHOLE_MAP: RowMap = (WHOLE, 0, 0, 0, 0)

RESIZE_MODE = "mode"
RESIZE_COORDINATES = "coordinate_transformation_mode"
RESIZE_NEAREST = "nearest_mode"
"""NodeInfo.attrs keys of a resize (the `nn.resize` properties); without
them its row map stays the conservative RATIO."""
COORDINATE_MODES = (
    "half_pixel",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
    "tf_half_pixel_for_nn",
)
INTERPOLATIONS = ("linear", "round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
"""RESAMPLE's interpolation codes: linear, then nearest by its nearest_mode."""


def resample_map(
    n_in: int, n_out: int, mode: str, coordinate_mode: str, nearest_mode: str
) -> RowMap | None:
    """The exact RowMap of a resize of `n_in` to `n_out` rows; None for modes
    it does not know (the caller keeps the conservative RATIO)."""
    interp = nearest_mode if mode == "nearest" else mode
    if coordinate_mode not in COORDINATE_MODES or interp not in INTERPOLATIONS:
        return None
    return (
        RESAMPLE,
        n_in,
        n_out,
        COORDINATE_MODES.index(coordinate_mode),
        INTERPOLATIONS.index(interp),
    )


@cache
def resample_rows(m: RowMap) -> tuple[tuple[int, ...], tuple[int, ...], bool]:
    """Per output row, the first and one past the last source row the resize
    kernel reads (`kernels.resize`: the same float32 coordinates and rounding;
    a linear tap of weight zero is still read; an unchanged size is a copy),
    and whether both sequences are non-decreasing (they are: the coordinate
    transform and the roundings are monotone; the flag keeps the maps exact
    should a mode ever break that)."""
    n_in, n_out = m[1], m[2]
    if n_in == n_out:
        rows = tuple(range(n_out))
        return rows, tuple(r + 1 for r in rows), True
    coords = kernels._source_coords(n_out, n_in, COORDINATE_MODES[m[3]])  # pyright: ignore[reportPrivateUsage]
    interp = INTERPOLATIONS[m[4]]
    if interp == "linear":
        c = np.clip(coords.astype(np.float64), 0.0, n_in - 1)
        first = c.astype(np.intp)
        last = np.minimum(first + 1, n_in - 1)
    else:
        first = last = kernels._nearest_index(coords, interp, n_in)  # pyright: ignore[reportPrivateUsage]
    lo = tuple(int(v) for v in first)
    hi = tuple(int(v) + 1 for v in last)
    monotone = all(x <= y for x, y in zip(lo, lo[1:])) and all(x <= y for x, y in zip(hi, hi[1:]))
    return lo, hi, monotone


def _resample_hull(m: RowMap, lo: int, hi: int) -> tuple[int, int]:
    """Source rows [first, last + 1) that output rows [lo, hi) read (hi > lo)."""
    first, stop, monotone = resample_rows(m)
    if monotone:
        return first[lo], stop[hi - 1]
    return min(first[lo:hi]), max(stop[lo:hi])


@cache
def _resample_span(m: RowMap, rows: int) -> int:
    """The most source rows any `rows` consecutive output rows read."""
    n = m[2]
    rows = min(max(rows, 1), n)
    return max(b - a for a, b in (_resample_hull(m, i, i + rows) for i in range(n - rows + 1)))


def map_rows(m: RowMap, rows: int, size: int) -> int:
    """Rows of the input a band of `rows` output rows needs (an upper bound
    over band positions), capped at the input's `size`."""
    code = m[0]
    if code == IDENT:
        v = rows
    elif code == WINDOW:
        v = input_rows(rows, m[1], m[2], m[3])
    elif code == WHOLE:
        return size
    elif code == RATIO:
        v = -(-rows * m[1] // m[2]) + 3
    elif code == RESAMPLE:
        v = _resample_span(m, rows) if rows > 0 else 0
    elif code == BYTES:
        v = -(-rows * m[1] // m[2]) + (0 if m[1] % m[2] == 0 else 1)
    else:  # TRANSPOSED
        v = (rows - 1 + (m[1] - 1) * m[3]) // m[2] + 1
    return v if v < size else size


def map_range(m: RowMap, lo: int, hi: int, size: int, clip: bool = True) -> tuple[int, int]:
    """Exact input rows [lo', hi') behind output rows [lo, hi)."""
    code = m[0]
    if code == IDENT:
        a, b = lo, hi
    elif code == WINDOW:
        a = lo * m[2] - m[4]
        b = (hi - 1) * m[2] - m[4] + (m[1] - 1) * m[3] + 1
        if clip and (a < 0 or b > size) and hi > lo:
            return _window_hull(lo, hi, m[1], m[2], m[3], m[4], size)
    elif code == WHOLE:
        return 0, size
    elif code == RATIO:
        a = lo * m[1] // m[2] - 1
        b = -(-hi * m[1] // m[2]) + 1
    elif code == RESAMPLE:
        lo, hi = max(lo, 0), min(hi, m[2])
        if hi <= lo:
            a = b = min(max(lo * m[1] // m[2], 0), size)
        else:
            a, b = _resample_hull(m, lo, hi)
    elif code == BYTES:
        a = lo * m[1] // m[2]
        b = -(-hi * m[1] // m[2])
    else:  # TRANSPOSED: output o = i * s - p + j * d
        a = -(-(lo + m[4] - (m[1] - 1) * m[3]) // m[2])
        b = (hi - 1 + m[4]) // m[2] + 1
    if clip:
        a = a if a > 0 else 0
        b = b if b < size else size
        if b < a:
            b = a
    return a, b


def map_scale(m: RowMap) -> Fraction | None:
    """Input rows per output row (the row rate); None for a whole read."""
    code = m[0]
    if code == IDENT:
        return Fraction(1)
    if code == WINDOW:
        return Fraction(m[2])
    if code == WHOLE:
        return None
    if code in (RATIO, BYTES, RESAMPLE):
        return Fraction(m[1], m[2])
    return Fraction(1, m[2])


def window_map(w: tuple[int, int, int, int, int]) -> RowMap:
    """RowMap of NodeInfo.window(axis)."""
    k, s, d, pb, _ = w
    return (WINDOW, k, s, d, pb)


@dataclass(frozen=True)
class NodeBand:
    """How one node takes part in a band: its output axis and, per
    non-constant input, (tensor, row map, input axis, column map or None)."""

    out_axis: int
    ins: tuple[tuple[str, RowMap, int, RowMap | None], ...]
    error: str | None = None


def node_band(graph: PlanGraph, k: int) -> NodeBand:
    """The row maps of node k (graph-wide, independent of the stage)."""
    node = graph.nodes[k]
    cls = node.tiling
    out = graph.tensors[node.outputs[0]] if node.outputs else None
    if cls is TilingClass.WHOLE or out is None:
        return NodeBand(0, (), f"'{node.name}' ({node.op}) has no tiling contract")
    out_axis = out.rows_axis if out.rows_axis is not None else 0
    lane = _lane_op(graph, k)
    if lane:
        out_axis = out.rank - 1
    if cls is TilingClass.INDEPENDENT_AXIS:
        axis = node.attrs.get(BAND_AXIS)
        if not isinstance(axis, int) or not 0 <= axis < out.rank:
            return NodeBand(0, (), f"'{node.name}' ({node.op}) names no independent axis")
        out_axis = axis
    out_h = out.shape[out_axis] if out.rank else 1
    ins: list[tuple[str, RowMap, int, RowMap | None]] = []
    seen: set[str] = set()
    for pos, name in enumerate(node.inputs):
        t = graph.tensors[name]
        if t.is_const or name in seen:
            continue
        seen.add(name)
        axis = t.rows_axis if t.rows_axis is not None else 0
        col: RowMap | None = None
        if cls is TilingClass.HALO or cls is TilingClass.EXPANDED:
            if pos != 0:
                m = WHOLE_MAP
                col = WHOLE_MAP
            elif t.rank < 3 or t.rank != out.rank:
                return NodeBand(0, (), f"'{node.name}' windows a rank-{t.rank} tensor")
            elif cls is TilingClass.HALO:
                m = window_map(node.window(0))
                col = window_map(node.window(1)) if t.rank == 4 else None
            else:
                m = (TRANSPOSED, *window_map(node.window(0))[1:])
        elif cls in (TilingClass.POINTWISE, TilingClass.WHOLE_ROWS, TilingClass.ACCUMULATE):
            if cls is TilingClass.ACCUMULATE:
                m, col = IDENT_MAP, IDENT_MAP
            elif lane:
                same = t.shape == out.shape
                m, axis = (IDENT_MAP, out_axis) if same else (WHOLE_MAP, axis)
            elif t.rank == out.rank and t.height == out_h:
                m = IDENT_MAP  # the same rows; columns too, or broadcast ones
                col = IDENT_MAP if t.width == out.width else WHOLE_MAP if t.width == 1 else None
            elif t.rank < out.rank or t.height == 1:
                m, col = WHOLE_MAP, WHOLE_MAP
            else:
                return NodeBand(0, (), f"'{node.name}' reads '{name}' of shape {t.shape}")
        elif cls is TilingClass.RESIZE:
            m = _resize_map(node.attrs, t.height, out_h) if pos == 0 else WHOLE_MAP
        elif cls in (TilingClass.MATRIX_ROWS, TilingClass.RESHAPE):
            base = node.op.rsplit(".", 1)[-1].lower()
            if cls is TilingClass.RESHAPE or base in ("reshape", "flatten"):
                if math.prod(out.shape[:out_axis]) != 1 or math.prod(t.shape[:axis]) != 1:
                    # rows of a batch of more than one are not one contiguous span
                    return NodeBand(
                        0, (), f"'{node.name}' reshapes rows that are not one contiguous span"
                    )
                m = (BYTES, out.nbytes // out_h, t.row_bytes, 0, 0)
            elif pos == 0 and t.height == out_h:
                m = IDENT_MAP
            elif pos == 0:
                return NodeBand(0, (), f"'{node.name}' changes the number of matrix rows")
            else:
                m = WHOLE_MAP
        else:  # INDEPENDENT_AXIS
            axes = node.attrs.get(INPUT_BAND_AXES)
            in_axis = axes[pos] if isinstance(axes, Sequence) else out_axis
            if not isinstance(in_axis, int) or in_axis < 0 or in_axis >= t.rank:
                m = WHOLE_MAP
            elif t.shape[in_axis] == out_h:
                m, axis = IDENT_MAP, in_axis
            else:
                m = WHOLE_MAP
        ins.append((name, m, axis, col))
    return NodeBand(out_axis, tuple(ins))


def _lane_op(graph: PlanGraph, k: int) -> bool:
    """A pointwise op on a row vector (1, K) bands along K, its last axis: a
    band of its one row would hold all of it. Every operand must match the
    result or broadcast along K (length 1 there), so that each output element
    reads the same element of every operand (no concatenation)."""
    node = graph.nodes[k]
    if node.tiling is not TilingClass.POINTWISE or len(node.outputs) != 1:
        return False
    out = graph.tensors[node.outputs[0]]
    if out.rank != 2 or out.shape[0] != 1 or out.shape[1] < 2:
        return False
    for name in node.inputs:
        t = graph.tensors[name]
        if t.rank > 2 or (t.rank and t.shape[-1] not in (1, out.shape[-1])):
            return False
        if t.rank == 2 and t.shape[0] != 1:
            return False
    return True


def _resize_map(attrs: Mapping[str, Any], n_in: int, n_out: int) -> RowMap:
    """The exact map of a resize whose modes are known, else RATIO."""
    mode = attrs.get(RESIZE_MODE)
    ctm = attrs.get(RESIZE_COORDINATES)
    nearest = attrs.get(RESIZE_NEAREST, "round_prefer_floor")
    if isinstance(mode, str) and isinstance(ctm, str) and isinstance(nearest, str):
        m = resample_map(n_in, n_out, mode, ctm, nearest)
        if m is not None:
            return m
    return (RATIO, n_in, n_out, 0, 0)


KIND_OF_CLASS = {
    TilingClass.EXPANDED: "expanded",
    TilingClass.RESIZE: "resize",
    TilingClass.ACCUMULATE: "accumulate",
    TilingClass.MATRIX_ROWS: "rows",
    TilingClass.RESHAPE: "reshape",
    TilingClass.INDEPENDENT_AXIS: "axis",
}
"""Band kinds named after the spec's table rows (and the `tile` dialect)."""
_SINGLE = (TilingClass.EXPANDED, TilingClass.RESIZE, TilingClass.ACCUMULATE, TilingClass.RESHAPE)
_FRIENDS = {
    TilingClass.HALO: (TilingClass.POINTWISE, TilingClass.WHOLE_ROWS),
    TilingClass.EXPANDED: (TilingClass.POINTWISE,),
    TilingClass.RESIZE: (TilingClass.POINTWISE, TilingClass.WHOLE_ROWS),
    TilingClass.ACCUMULATE: (TilingClass.POINTWISE,),
    TilingClass.MATRIX_ROWS: (TilingClass.POINTWISE, TilingClass.WHOLE_ROWS),
    TilingClass.RESHAPE: (TilingClass.POINTWISE,),
    TilingClass.INDEPENDENT_AXIS: (TilingClass.POINTWISE,),
}


def unit_window(node: NodeInfo) -> bool:
    """A window op of one position, stride 1 and no padding on every spatial
    axis (a 1 x 1 convolution): each output position reads its own input
    position, as a pointwise op does, though it mixes the channels. An
    accumulated band (a GlobalAveragePool ending it) takes it among its
    pointwise ops, by rows or runs of positions, and by groups of its result
    channels where it reads the band's inputs (`group_whole_channels`)."""
    if node.tiling is not TilingClass.HALO:
        return False
    return all(node.window(a) == (1, 1, 1, 0, 0) for a in range(max(len(node.kernel), 1)))


def group_whole_channels(graph: PlanGraph, start: int, stop: int) -> frozenset[str] | None:
    """Under groups of result channels of an accumulated band (ops [start,
    stop), a GlobalAveragePool last), the tensors every group holds with all
    their channels: the inputs of its 1 x 1 convolutions of one group
    (`NodeInfo.is_channel_dense`), which each group reads whole along the
    channels with its rows of the weights. None where the channels cannot be
    grouped: a channel Concat, another op mixing channels, such a
    convolution reading a tensor the band computes (every group would
    compute all of it again) or one a channel-local op reads too."""
    produced = {o for k in range(start, stop) for o in graph.nodes[k].outputs}
    full: set[str] = set()
    local: set[str] = set()
    for k in range(start, stop - 1):
        node = graph.nodes[k]
        acts = [x for x in node.inputs if not graph.tensors[x].is_const]
        if node.is_channel_concat or (node.tiling is TilingClass.HALO and not unit_window(node)):
            return None
        if node.is_channel_local or node.tiling is not TilingClass.HALO:
            local.update(acts)
            continue
        if not node.is_channel_dense or acts != [node.inputs[0]]:
            return None
        if any(x in produced for x in acts):
            return None
        full.update(acts)
    return None if full & local else frozenset(full)


def band_kind(classes: Iterable[TilingClass]) -> str | None:
    """The band kind a set of op classes supports together; None if none.

    Halo ops go with shape-preserving ops ("strips"); every other kind takes
    the ops its table row names and nothing else.
    """
    return _band_kind(frozenset(classes))


@cache
def _band_kind(present: frozenset[TilingClass]) -> str | None:
    lead = [c for c in present if c not in (TilingClass.POINTWISE, TilingClass.WHOLE_ROWS)]
    if TilingClass.WHOLE in present or len(lead) > 1:
        return None
    if not lead:
        return "whole_rows" if TilingClass.WHOLE_ROWS in present else "strips"
    (c,) = lead
    if any(o not in _FRIENDS[c] for o in present - {c}):
        return None
    return "strips" if c is TilingClass.HALO else KIND_OF_CLASS[c]


IN_PLACE_OPS = frozenset(
    {
        "nn.relu",
        "nn.clip",
        "nn.sigmoid",
        "nn.tanh",
        "nn.hard_swish",
        "nn.hard_sigmoid",
        "nn.leaky_relu",
        "nn.elu",
        "nn.gelu",
        "nn.exp",
        "nn.log",
        "nn.sqrt",
        "nn.abs",
        "nn.floor",
        "nn.identity",
    }
)
"""The `nn` dialect's unary activations: each result element is a function of
the same element of the one input, so the result may overwrite the input."""


def in_place_source(graph: PlanGraph, k: int) -> str | None:
    """The tensor node k may overwrite with its result, inside a band: its one
    input, when an activation of `IN_PLACE_OPS` is that tensor's only reader
    and the tensor is computed (not a model input or output), float32 on
    both sides (a 4-byte operand of these ops is float32; a 1-byte one may
    change signedness) and of the result's shape. None otherwise."""
    node = graph.nodes[k]
    if node.op not in IN_PLACE_OPS or len(node.outputs) != 1:
        return None
    ins = [x for x in node.inputs if not graph.tensors[x].is_const]
    if len(ins) != 1:
        return None
    t, o = graph.tensors[ins[0]], graph.tensors[node.outputs[0]]
    if t.shape != o.shape or t.elem_bytes != 4 or o.elem_bytes != 4:
        return None
    if graph.producer(t.name) is None or t.name in graph.outputs:
        return None
    return t.name if graph.consumers(t.name) == (k,) else None


class GraphTables:
    """Per-graph tables the band builder reads (node maps, roots)."""

    def __init__(self, graph: PlanGraph):
        self.graph = graph
        self.node_bands = tuple(node_band(graph, k) for k in range(len(graph.nodes)))
        self.last_use = {name: graph.last_use(name) for name in graph.tensors}
        self.in_place = tuple(in_place_source(graph, k) for k in range(len(graph.nodes)))
        self.in_place_reader = {t: k for k, t in enumerate(self.in_place) if t is not None}
        self._geometry: dict[tuple[str, int], tuple[int, int, int, int]] = {}
        self.lb_floors: dict[tuple[int, int, str, int], int] = {}
        """Line-buffer floors per band (`BandBuilder.floor_lb1_scratch` per
        in-place flag, `floor_lb_bands` per number of column bands)."""
        self.band_models: dict[tuple[int, int], BandModel] = {}
        """The band of ops [start, stop) once built (`BandBuilder.model`): it
        depends on the graph alone, so plans at several budgets share it."""
        self.builders: dict[int, BandBuilder] = {}
        """Per band end the builder the planner grew furthest upstream last."""
        self.bands: dict[
            tuple[int, int, bool, bool], tuple[BandModel | str, tuple[int, int, int] | None]
        ] = {}
        """Per band, single arena or not and window feeders or not, what the
        planner's `_Ctx.band` found: the band (or why there is none) and the
        floors of its line buffers (None where it has none)."""

    @cached_property
    def fed_tensors(self) -> frozenset[str]:
        """Tensors a band may hold in pixel blocks as a window feeder's output
        (`plan.scratch.window_feeders` where the band holds both ops): rank 4,
        the one output of a node reading every input at its own rows and
        columns, read by one node only, through a window of more than one
        column. Line-buffer floors leave them out (`BandBuilder.floor_fed`)."""
        readers: dict[str, list[RowMap | None]] = {}
        for nb in self.node_bands:
            for name, _, _, col in nb.ins:
                readers.setdefault(name, []).append(col)

        out = set()
        for k, node in enumerate(self.graph.nodes):
            nb = self.node_bands[k]
            if nb.error is not None or len(node.outputs) != 1:
                continue
            o = node.outputs[0]
            cols = readers.get(o, [])
            if (
                self.graph.tensors[o].rank == 4
                and len(cols) == 1
                and cols[0] is not None
                and cols[0][0] == WINDOW
                and cols[0][1] > 1
                and all(c is not None and same_place(m) and same_place(c) for _, m, _, c in nb.ins)
            ):
                out.add(o)
        return frozenset(out)

    def geometry(self, name: str, axis: int) -> tuple[int, int, int, int]:
        """(rows, bytes per row, columns, bytes per cell) of a tensor cut
        along `axis`; columns are W for a rank-4 map cut along H, else 1."""
        key = (name, axis)
        g = self._geometry.get(key)
        if g is None:
            info = self.graph.tensors[name]
            h = info.shape[axis] if info.rank else 1
            rb = info.nbytes // h
            if info.rank == 4 and axis == 1:
                g = (h, rb, info.shape[2], rb // info.shape[2])
            else:
                g = (h, rb, 1, rb)
            self._geometry[key] = g
        return g

    def is_root(self, name: str, stop: int) -> bool:
        """Produced before `stop` and needed at or after it (or never read)."""
        last = self.last_use[name]
        return last >= stop or last < 0


@dataclass(eq=False, slots=True)
class _TState:
    scale: Fraction | None
    axis: int
    rows1: int
    reader: str
    whole: bool = False
    produced: bool = False
    root: bool = False
    cols1: int = 0
    off: tuple[int, int, int] | None = None  # (lo, ext, low) of a line buffer
    cap1: int = 0


@dataclass
class BandBuilder:
    """Grows the band of ops [start, stop) one op upstream at a time.

    It keeps the band rule (one row rate per tensor, the stage outputs at rate
    1 and of one height), the band kind and `bytes1`, the band bytes of a
    one-row band, so the planner can scan every stage start for a given end
    in one pass; `bytes11` is the same for a 1 x 1 tile where `grid` holds;
    `lb1` the line buffers of one-row tiles (`lb_capacity`, or the
    `paced_floor` of a paced run where smaller) where `lb_ok`;
    `windows` counts the window ops wider than one position.
    `error` says why the ops do not form a band.
    """

    tables: GraphTables
    stop: int
    start: int = -1
    error: str | None = None
    bytes1: int = 0
    bytes11: int = 0
    grid: bool = True
    windows: int = 0
    lb1: int = 0
    lb_ok: bool = True
    extra: int = 0
    root_height: int = -1
    root_width: int = -1
    counts: dict[TilingClass, int] = field(default_factory=dict[TilingClass, int])
    t: dict[str, _TState] = field(default_factory=dict[str, _TState])
    concat: bool = False
    shared: dict[str, list[str]] = field(default_factory=dict[str, list[str]])
    saved: list[int] = field(default_factory=lambda: [0, 0, 0])
    pending: dict[str, tuple[int, int, int]] = field(
        default_factory=dict[str, tuple[int, int, int]]
    )
    pending_sum: list[int] = field(default_factory=lambda: [0, 0, 0])

    @property
    def floor1(self) -> int:
        """A lower bound of `bytes1` over every start upstream: a stage input
        an in-place activation of the band reads may come to share its
        buffer once its producer joins (`in_place_source`); nothing else
        shrinks as the band grows."""
        return self.bytes1 - self.pending_sum[0]

    @property
    def floor11(self) -> int:
        """`floor1` for `bytes11`."""
        return self.bytes11 - self.pending_sum[1]

    @property
    def floor_lb1(self) -> int:
        """`floor1` for `lb1`."""
        return self.lb1 - self.pending_sum[2]

    def _graph_floor(self, what: str, arg: int, compute: Callable[[], int]) -> int:
        """A floor of the band, worked out once for the graph (`GraphTables.
        lb_floors`): it depends on the ops [start, stop) alone."""
        key = (self.start, self.stop, what, arg)
        got = self.tables.lb_floors.get(key)
        if got is None:
            got = self.tables.lb_floors[key] = compute()
        return got

    def floor_lb1_scratch(self, in_place: bool = False) -> int:
        """`_floor_lb1_scratch`, once per band and `in_place` for the graph."""
        return self._graph_floor("rows", in_place, lambda: self._floor_lb1_scratch(in_place))

    def _floor_lb1_scratch(self, in_place: bool) -> int:
        """`floor_lb1` with the chain's scratch shared (`_scratch_floor`) and,
        with `in_place` (a single arena), the band's inputs counting nothing,
        nor its outputs, which a chain may write where they are resident
        (`plan.scratch.direct_outputs`)."""

        def size(name: str, st: _TState) -> int:
            return align(st.cap1 * self._rb(name, st.axis)[1])

        return self._scratch_floor(self.floor_lb1, size, in_place)

    def floor_lb_bands(self, bands: int) -> int:
        """`_floor_lb_bands`, once per band and number of column bands for
        the graph."""
        return self._graph_floor("bands", bands, lambda: self._floor_lb_bands(bands))

    def _floor_lb_bands(self, bands: int) -> int:
        """`floor_lb1_scratch` (inputs and outputs in band buffers of their
        own) in `bands` bands of the root's columns: each buffer holds the
        columns the widest band reads of it (`cols1` of a one-column band,
        plus its column rate per more column), the bytes buffers in-place
        activations share taken off in full (a lower bound: they shrink
        with the band too)."""
        wn = -(-self.root_width // bands)

        def size(name: str, st: _TState) -> int:
            w, cell = self._cell(name, st)
            r = st.scale
            if st.whole or r is None:
                cols = w
            else:  # cols1 and the rate's columns for each further column
                cols = min(w, st.cols1 - (-(wn - 1) * r.numerator // r.denominator))
            return align(st.cap1 * cell * cols)

        lb = sum(size(name, st) for name, st in self.t.items() if st.off is not None)
        return self._scratch_floor(lb - self.saved[2] - self.pending_sum[2], size, False)

    def floor_fed(self, in_place: bool = False) -> int:
        """A lower bound of a line-buffered chain's buffers where window
        feeders run in pixel blocks (`plan.scratch.window_feeders`): the
        floors of whole rows (`floor_lb1_scratch`) and of one-column bands
        (`floor_lb_bands`), each without the feeders' outputs (a block's
        window of them, at least nothing); once per band for the graph."""
        return self._graph_floor("fed", in_place, lambda: self._floor_fed(in_place))

    def _floor_fed(self, in_place: bool) -> int:
        fed = self.tables.fed_tensors

        def drop(name: str, st: _TState) -> bool:
            return name in fed and st.produced and not st.root and st.off is not None

        def rows_size(name: str, st: _TState) -> int:
            return 0 if drop(name, st) else align(st.cap1 * self._rb(name, st.axis)[1])

        def cols_size(name: str, st: _TState) -> int:
            if drop(name, st):
                return 0
            w, cell = self._cell(name, st)
            cols = w if st.whole or st.scale is None else min(w, st.cols1)
            return align(st.cap1 * cell * cols)

        gone = sum(
            align(st.cap1 * self._rb(name, st.axis)[1])
            for name, st in self.t.items()
            if drop(name, st)
        )
        rows = self._scratch_floor(self.floor_lb1 - gone, rows_size, in_place)
        if not self.grid or self.root_width < 2:
            return rows
        lb = sum(cols_size(name, st) for name, st in self.t.items() if st.off is not None)
        bands = self._scratch_floor(lb - self.saved[2] - self.pending_sum[2], cols_size, False)
        return min(rows, bands)

    def _scratch_floor(self, lb: int, size: Callable[[str, _TState], int], in_place: bool) -> int:
        """`lb`, a floor of the line buffers, with the chain's scratch shared
        (`plan.scratch`): the buffers (of `size` bytes) of tensors computed
        in the band whose offsets keep no history row count as the largest
        of them, not their sum; with `in_place` the inputs and outputs count
        nothing."""
        total = most = 0
        for name, st in self.t.items():
            if st.off is None:
                continue
            if in_place and (not st.produced or st.root):
                total += size(name, st)
                continue
            if not st.produced or st.whole or st.off[1] > st.off[2]:
                continue
            b = size(name, st)
            total += b
            most = max(most, b)
        return max(0, lb - total + most)

    def __post_init__(self) -> None:
        self.start = self.stop

    @property
    def kind(self) -> str | None:
        return None if self.error else band_kind(self.counts)

    def _fail(self, msg: str) -> bool:
        if self.error is None:
            self.error = msg
        return False

    def _rb(self, name: str, axis: int) -> tuple[int, int]:
        g = self.tables.geometry(name, axis)
        return g[0], g[1]

    def _cell(self, name: str, st: _TState) -> tuple[int, int]:
        """(width, bytes per row and column) as the grid counts the tensor."""
        g = self.tables.geometry(name, st.axis)
        return g[2], g[3]

    def _set_rows(self, name: str, st: _TState, rows: int, cols: int = 1) -> None:
        _, rb, w, cell = self.tables.geometry(name, st.axis)
        cols = min(cols, w)
        if st.whole:
            cols = w
        if rows > st.rows1 or cols > st.cols1:
            if rows > st.rows1:
                self.bytes1 += align(rows * rb) - align(st.rows1 * rb)
            new_r, new_c = max(rows, st.rows1), max(cols, st.cols1)
            self.bytes11 += align(new_r * new_c * cell) - align(st.rows1 * st.cols1 * cell)
            st.rows1, st.cols1 = new_r, new_c

    def _merge_off(self, name: str, st: _TState, off: tuple[int, int, int]) -> None:
        """Widen the line-buffer offsets of a tensor and update `lb1`."""
        if st.off is not None:
            off = (min(st.off[0], off[0]), max(st.off[1], off[1]), min(st.off[2], off[2]))
        st.off = off
        h, rb = self._rb(name, st.axis)
        if st.whole or st.scale is None or st.scale.denominator != 1:
            cap = h
        else:
            tiles = max(self.root_height, 1)
            cap = lb_capacity(int(st.scale), off[0], off[1], off[2], h, 1, tiles)
            cap = min(cap, paced_floor(off[1], off[2], h))
        if cap > st.cap1:
            self.lb1 += align(cap * rb) - align(st.cap1 * rb)
            st.cap1 = cap

    def _root(self, name: str, st: _TState | None, axis: int, who: str) -> _TState:
        h, _ = self._rb(name, axis)
        if self.root_height < 0:
            self.root_height = h
        elif h != self.root_height:
            self._fail(
                f"the band's outputs have heights {self.root_height} and {h} "
                f"('{name}'): one band cannot hold them all"
            )
        if st is None:
            st = _TState(Fraction(1), axis, 0, who)
            self.t[name] = st
        elif st.scale != 1 or st.whole:
            self._fail(
                f"'{name}' leaves the band and is read at {st.scale} rows per band row by "
                f"'{st.reader}': one of them reads rows the band does not hold"
            )
        st.root = True
        w, _ = self._cell(name, st)
        if self.root_width < 0:
            self.root_width = w
        elif w != self.root_width:
            self.grid = False
        self._set_rows(name, st, 1, 1)
        self._merge_off(name, st, (0, 0, 0))
        return st

    def prepend(self) -> bool:
        """Adds op `start - 1`; False (with `error` set) once the ops stop
        forming a band; it stays False for every earlier start."""
        k = self.start - 1
        self.start = k
        if self.error is not None:
            return False
        graph = self.tables.graph
        node = graph.nodes[k]
        nb = self.tables.node_bands[k]
        if nb.error:
            return self._fail(nb.error)
        cls = node.tiling
        if TilingClass.ACCUMULATE in self.counts and unit_window(node):
            cls = TilingClass.POINTWISE  # a 1 x 1 convolution feeding the accumulation
        self.counts[cls] = self.counts.get(cls, 0) + 1
        if node.is_channel_concat and not self.concat:
            self._unshare()
        if band_kind(self.counts) is None or (cls in _SINGLE and self.counts[cls] > 1):
            return self._fail(
                f"'{node.name}' ({cls.value}) does not tile together with "
                + ", ".join(sorted(c.value for c in self.counts if c is not cls))
            )
        if cls is TilingClass.HALO and node.window(0)[0] * node.window(1)[0] > 1:
            self.windows += 1
        if cls is TilingClass.ACCUMULATE:
            self.lb_ok = False
            if k != self.stop - 1:
                return self._fail(f"'{node.name}' must end its stage to accumulate bands")
            for name in node.outputs:
                info = graph.tensors[name]
                extra = align(info.nbytes) + align(math.prod(info.shape) * ACC_DTYPE.itemsize)
                self.extra += extra
                self.bytes1 += extra
                self.bytes11 += extra
            x = nb.ins[0][0]
            self._root(x, self.t.get(x), nb.ins[0][2], node.name)
            self.t[x].reader = node.name
            return self.error is None
        out_scale: Fraction | None = None
        out_rows = out_cols = 0
        for name in node.outputs:
            st = self.t.get(name)
            if self.tables.is_root(name, self.stop):
                st = self._root(name, st, nb.out_axis, node.name)
                if self.error is not None:  # read in the band as the band cannot hold it
                    return False
            elif st is None or st.whole or st.scale is None:
                return self._fail(
                    f"'{name}' is produced in the band but read whole by "
                    f"'{st.reader if st else '?'}'"
                )
            if st.axis != nb.out_axis:
                return self._fail(f"'{name}' is cut along two axes")
            st.produced = True
            if name in self.pending:
                self._settle(name)
            if out_scale is not None and st.scale != out_scale:
                return self._fail(f"'{node.name}' hands out results at different row rates")
            out_scale = st.scale
            out_rows = max(out_rows, st.rows1)
            out_cols = max(out_cols, st.cols1)
        assert out_scale is not None
        offs = [self.t[o].off for o in node.outputs if o in self.t]
        lo_o = min(o[0] for o in offs if o is not None) if any(offs) else 0
        ext_o = max(o[1] for o in offs if o is not None) if any(offs) else 0
        for name, m, axis, col in nb.ins:
            h, _ = self._rb(name, axis)
            rows = map_rows(m, out_rows, h)
            code = m[0]
            if code == WHOLE:
                rate = None
            elif code == IDENT:
                rate = out_scale
            elif code == WINDOW:
                rate = out_scale * m[2] if m[2] != 1 else out_scale
            else:
                ms = map_scale(m)
                assert ms is not None
                rate = out_scale * ms
            st = self.t.get(name)
            if st is None:
                st = _TState(rate, axis, 0, node.name)
                st.whole = rate is None
                self.t[name] = st
            elif rate is None:
                st.whole = True
            elif st.scale is None:
                st.scale, st.reader = rate, node.name
                if st.axis != axis:
                    return self._fail(f"'{name}' is cut along two axes")
            elif st.scale != rate or st.axis != axis:
                return self._fail(
                    f"'{node.name}' reads '{name}' at {rate} rows per band row "
                    f"while '{st.reader}' reads it at {st.scale}: one of them reads rows "
                    "the band does not hold"
                )
            if st.whole:
                rows = h
            gw = self.tables.geometry(name, st.axis)[2]
            if not st.whole and (col is None or gw == 1):
                self.grid = False
            cols = 1 if col is None or gw == 1 else map_rows(col, out_cols, gw)
            self._set_rows(name, st, rows, cols)
            if code == WINDOW:
                s_, p_ = m[2], m[4]
                eff = (m[1] - 1) * m[3] + 1
                self._merge_off(
                    name, st, (s_ * lo_o - p_, s_ * ext_o - p_ + eff - s_, s_ * ext_o - p_)
                )
            elif code == IDENT:
                self._merge_off(name, st, (lo_o, ext_o, ext_o))
            elif code == WHOLE:
                self._merge_off(name, st, (0, 0, 0))
            else:
                self.lb_ok = False
        if self.error is None and not self.concat and TilingClass.ACCUMULATE not in self.counts:
            for name in node.outputs:
                k2 = self.tables.in_place_reader.get(name)
                if k2 is not None and k2 < self.stop:
                    self._share(name, graph.nodes[k2].outputs[0])
            x = self.tables.in_place[k]
            if x is not None and not self.t[x].produced:
                self._expect(x)
        return self.error is None

    def _contribution(self, name: str) -> tuple[int, int, int]:
        st = self.t[name]
        _, rb, _, cell = self.tables.geometry(name, st.axis)
        return align(st.rows1 * rb), align(st.rows1 * st.cols1 * cell), align(st.cap1 * rb)

    def _expect(self, x: str) -> None:
        """`x`, a stage input its in-place activation reads, may share that
        buffer once its producer joins: count it toward the floors."""
        c = self._contribution(x)
        self.pending[x] = c
        self.pending_sum = [a + b for a, b in zip(self.pending_sum, c)]

    def _settle(self, x: str) -> None:
        c = self.pending.pop(x)
        self.pending_sum = [a - b for a, b in zip(self.pending_sum, c)]

    def _group_saving(self, members: Sequence[str]) -> tuple[int, int, int]:
        """Bytes the members of one in-place group save (one-row band, 1 x 1
        tile, line buffers) by sharing a buffer instead of one each."""
        sts = [self.t[m] for m in members]
        _, rb, _, cell = self.tables.geometry(members[0], sts[0].axis)
        r = max(st.rows1 for st in sts)
        c = max(st.cols1 for st in sts)
        cap = max(st.cap1 for st in sts)
        s1 = sum(align(st.rows1 * rb) for st in sts) - align(r * rb)
        s11 = sum(align(st.rows1 * st.cols1 * cell) for st in sts) - align(r * c * cell)
        slb = sum(align(st.cap1 * rb) for st in sts) - align(cap * rb)
        return s1, s11, slb

    def _share(self, t: str, o: str) -> None:
        """`t`, now produced in the band, shares the buffer of `o`, which an
        in-place activation computes from it (`in_place_source`). Both are
        final: every reader and the producer of each is in the band."""
        members = self.shared.pop(o, None) or [o]
        old = self._group_saving(members) if len(members) > 1 else (0, 0, 0)
        members.append(t)
        self.shared[t] = members
        new = self._group_saving(members)
        d = [n - o_ for n, o_ in zip(new, old)]
        self.bytes1 -= d[0]
        self.bytes11 -= d[1]
        self.lb1 -= d[2]
        self.saved = [a + b for a, b in zip(self.saved, d)]

    def _unshare(self) -> None:
        """A channel Concat joins: it may recompute its rows, so no buffer is
        shared in this band (its figures count every buffer again)."""
        self.bytes1 += self.saved[0]
        self.bytes11 += self.saved[1]
        self.lb1 += self.saved[2]
        self.saved = [0, 0, 0]
        self.shared.clear()
        self.pending.clear()
        self.pending_sum = [0, 0, 0]
        self.concat = True

    def model(self) -> BandModel:
        """A frozen snapshot of the band of ops [start, stop)."""
        if self.error is not None:
            raise ValueError(f"no band: {self.error}")
        key = (self.start, self.stop)
        got = self.tables.band_models.get(key)
        if got is None:
            got = self.tables.band_models[key] = BandModel.build(self, self.kind or "strips")
        return got


GEOMETRIC_MEMO = frozenset({"r", "R", "P", "Q", "p", "pixel runs", "scratch frame"})
"""`BandModel._memo` keys (first element) of figures in rows: back-propagated
rows ("r"), row range statistics ("R"), paced ranges ("P"), paced buffers
("Q"), paced rows ("p"), the scratch frame and pixel runs (`plan.scratch`);
line-buffer rows are "L...". (Column figures are left out: a slice of the
columns does not cut its columns again.)"""


def _geometric(tag: str) -> bool:
    return tag in GEOMETRIC_MEMO or tag.startswith("L")


@dataclass(frozen=True)
class BandModel:
    """The band of ops [start, stop): tensors, maps and per-band figures.

    Tensors are indexed 0..n-1 (`names`); `roots` are the stage outputs (and
    the accumulated input of a GlobalAveragePool), all of height `height`;
    `ops` are (node index, output ids, ((input id, row map, col map), ...)).
    """

    graph: PlanGraph = field(repr=False, compare=False)
    start: int
    stop: int
    kind: str
    names: tuple[str, ...]
    heights: tuple[int, ...]
    row_bytes: tuple[int, ...]
    widths: tuple[int, ...]
    cells: tuple[int, ...]
    scales: tuple[Fraction | None, ...]
    whole: tuple[bool, ...]
    inputs: tuple[int, ...]
    roots: tuple[int, ...]
    spilled: tuple[int, ...]
    ops: tuple[tuple[int, tuple[int, ...], tuple[tuple[int, RowMap, RowMap], ...]], ...]
    extra: int
    height: int
    granule: int
    grid_ok: bool
    share: tuple[int, ...] = ()
    """Per tensor the tensor whose buffer it is held in: itself, or the first
    of a run of in-place activations (`in_place_source`); empty: none shared."""
    _memo: dict[tuple[str, int], Any] = field(
        default_factory=dict[tuple[str, int], Any], repr=False, compare=False
    )

    def geometry_memo(self) -> dict[tuple[str, int], Any]:
        """The memoised figures that depend on the band's rows and ops alone,
        not on the bytes of a row (rows per tile, range statistics,
        line-buffer and paced rows, the scratch frame and pixel runs): a slice
        of the band's columns keeps them (`GEOMETRIC_MEMO`)."""
        return {k: v for k, v in self._memo.items() if _geometric(k[0])}

    @staticmethod
    def build(b: BandBuilder, kind: str) -> BandModel:
        graph = b.tables.graph
        names = tuple(b.t)
        ids = {n: i for i, n in enumerate(names)}
        heights, rbs, widths, cells = [], [], [], []
        for n in names:
            st = b.t[n]
            info = graph.tensors[n]
            h = info.shape[st.axis] if info.rank else 1
            heights.append(h)
            rbs.append(info.nbytes // h)
            w = info.width if info.rank == 4 and st.axis == 1 else 1
            widths.append(w)
            cells.append(info.nbytes // (h * w))
        ops = []
        grid_ok = kind == "strips" and all(
            b.t[n].whole or (graph.tensors[n].rank == 4 and b.t[n].axis == 1) for n in names
        )
        granule = 1
        for k in range(b.start, b.stop):
            node = graph.nodes[k]
            if node.tiling is TilingClass.ACCUMULATE:
                continue
            nb = b.tables.node_bands[k]
            ins = []
            for name, m, _, col in nb.ins:
                if col is None and not b.t[name].whole:
                    grid_ok = False
                ins.append((ids[name], m, col if col is not None else WHOLE_MAP))
                if m[0] == BYTES:
                    granule = math.lcm(granule, math.lcm(m[1], m[2]) // m[1])
            outs = tuple(ids[o] for o in node.outputs if o in ids)
            ops.append((k, outs, tuple(ins)))
        roots = tuple(i for i, n in enumerate(names) if b.t[n].root)
        spilled = tuple(
            i for i in roots if b.tables.last_use[names[i]] >= b.stop and b.t[names[i]].produced
        )
        inputs = tuple(i for i, n in enumerate(names) if not b.t[n].produced)
        if grid_ok and len({widths[r] for r in roots}) != 1:
            grid_ok = False
        share = list(range(len(names)))
        for members in b.shared.values():
            for m in members:
                share[ids[m]] = ids[members[-1]]
        return BandModel(
            graph,
            b.start,
            b.stop,
            kind,
            names,
            tuple(heights),
            tuple(rbs),
            tuple(widths),
            tuple(cells),
            tuple(b.t[n].scale for n in names),
            tuple(b.t[n].whole for n in names),
            inputs,
            roots,
            spilled,
            tuple(ops),
            b.extra,
            b.root_height,
            granule,
            grid_ok,
            tuple(share) if b.shared else (),
        )

    @property
    def width(self) -> int:
        return self.widths[self.roots[0]]

    def index(self, name: str) -> int:
        return self.names.index(name)

    # ---- rows and bytes --------------------------------------------------

    def rows(self, tile_h: int) -> list[int]:
        """Back-propagated rows of every tensor for a band of `tile_h` rows."""
        key = ("r", tile_h)
        if key not in self._memo:
            self._memo[key] = self._rows(tile_h)
        return list(self._memo[key])

    def _rows(self, tile_h: int) -> list[int]:
        return _back_propagate(self.heights, self.roots, self.ops, 1, tile_h, self.whole)

    def bytes_of_rows(self, rows: Sequence[int]) -> int:
        """Bytes of buffers of `rows` rows per tensor; tensors sharing a
        buffer count once, at the most rows any of them holds."""
        a = ALIGN
        if self.share:
            rows = self.shared_extents(rows)
        return sum(-(-r * b // a) * a for r, b in zip(rows, self.row_bytes)) + self.extra

    def shared_extents(self, ext: Sequence[int]) -> list[int]:
        """Per tensor its buffer's extent: a buffer's owner takes the largest
        of the tensors it holds, the others 0 (they add no bytes)."""
        out = [0] * len(ext)
        for t, r in enumerate(ext):
            o = self.share[t]
            if r > out[o]:
                out[o] = r
        return out

    def band_bytes(self, tile_h: int) -> int:
        """The spec's band_bytes(rows): every buffer of a `tile_h`-row band."""
        key = ("b", tile_h)
        if key not in self._memo:
            self._memo[key] = [self.bytes_of_rows(self.rows(tile_h))]
        return self._memo[key][0]

    def cols(self, tile_w: int) -> list[int]:
        """Back-propagated columns of every tensor for `tile_w` output columns."""
        key = ("c", tile_w)
        if key not in self._memo:
            self._memo[key] = self._cols(tile_w)
        return list(self._memo[key])

    def _cols(self, tile_w: int) -> list[int]:
        return _back_propagate(self.widths, self.roots, self.ops, 2, tile_w, self.whole)

    def bytes_of_cells(self, rows: Sequence[int], cols: Sequence[int]) -> int:
        a = ALIGN
        if self.share:
            rows, cols = self.shared_extents(rows), self.shared_extents(cols)
        return sum(-(-r * c * b // a) * a for r, c, b in zip(rows, cols, self.cells)) + self.extra

    def grid_bytes(self, tile_h: int, tile_w: int) -> int:
        """Band bytes of a 2D tile of tile_h x tile_w output positions."""
        return self.bytes_of_cells(self.rows(tile_h), self.cols(tile_w))

    # ---- exact ranges ----------------------------------------------------

    def ranges(self, lo: int, hi: int, clip: bool = True) -> list[tuple[int, int]]:
        """Exact row range of every tensor for output rows [lo, hi): each op's
        input range from its output range, the hull over readers."""
        return _hull_ranges(self.heights, self.roots, self.ops, 1, lo, hi, clip)

    def col_ranges(self, lo: int, hi: int, clip: bool = True) -> list[tuple[int, int]]:
        """Exact column range of every tensor for output columns [lo, hi)."""
        return _hull_ranges(self.widths, self.roots, self.ops, 2, lo, hi, clip)

    def tile_ranges(self, tile_h: int) -> list[list[tuple[int, int]]]:
        """Per tile (output rows [i * tile_h, ...) clipped), every tensor's range."""
        return [self.ranges(a, b) for a, b in tile_bounds(self.height, tile_h)]

    def lb_tile_ranges(self, tile_h: int) -> list[list[tuple[int, int]]]:
        """Per tile the ranges a line-buffered chain runs: `tile_ranges` made
        monotone tensor by tensor (`monotone_ranges`), from the outputs up, so
        that each op's input ranges follow its widened output ranges.

        A dilated window clipped by the image padding reads ranges that can
        start lower on a later tile ([1, 2) then [0, 3)) or go back
        ([1, 6) then [0, 5)). A line buffer computes every row once, in
        order, and keeps what a later tile reads again: so a row a later
        tile reads is computed by the first tile whose range reaches past it
        and held from then on."""
        bounds = tile_bounds(self.height, tile_h)
        h = self.heights
        n = len(h)
        per: list[list[tuple[int, int]]] = [[(0, 0)] * len(bounds) for _ in range(n)]
        seen = [[False] * len(bounds) for _ in range(n)]
        empty = [[False] * len(bounds) for _ in range(n)]
        for t in self.roots:
            for i, (a, b) in enumerate(bounds):
                per[t][i] = (a, min(b, h[t]))
                seen[t][i] = True
        done = [False] * n
        for _, outs, ins in reversed(self.ops):
            for o in outs:
                if not done[o]:
                    per[o] = monotone_ranges(per[o])
                    done[o] = True
            for i in range(len(bounds)):
                live = [per[o][i] for o in outs if seen[o][i]]
                if not live:
                    continue
                oa = min(r[0] for r in live)
                ob = max(r[1] for r in live)
                for t, m, _ in ins:
                    x, y = map_range(m, oa, ob, h[t])
                    _merge_range(per[t], seen[t], empty[t], i, x, y, ob > oa)
        for t in range(n):
            if not done[t]:
                per[t] = monotone_ranges(per[t])
        return [[per[t][i] for t in range(n)] for i in range(len(bounds))]

    def tile_col_ranges(self, tile_w: int) -> list[list[tuple[int, int]]]:
        return [self.col_ranges(a, b) for a, b in tile_bounds(self.width, tile_w)]

    # ---- affine estimates --------------------------------------------------

    @cached_property
    def offsets(self) -> tuple[tuple[int, int], ...] | None:
        """Per tensor (lo, ext) with the unclipped range of output rows
        [a, b) = [S a + lo, S b + ext), when every map is a window or the
        identity (integer rates); None otherwise."""
        if any(m[0] not in (IDENT, WINDOW, WHOLE) for _, _, ins in self.ops for _, m, _ in ins):
            return None
        one = self.ranges(0, 1, clip=False)
        return tuple(
            (0, 0) if s is None else (x, y - int(s)) for (x, y), s in zip(one, self.scales)
        )

    @cached_property
    def col_offsets(self) -> tuple[tuple[int, int], ...] | None:
        """`offsets` along the columns (grid-capable bands)."""
        if not self.grid_ok:
            return None
        one = self.col_ranges(0, 1, clip=False)
        return tuple(
            (0, 0) if s is None else (x, y - int(s)) for (x, y), s in zip(one, self.scales)
        )

    def stats(self, tile: int, cols: bool = False) -> list[tuple[int, int, int]] | None:
        """Per tensor (sum of range lengths over the tiles, longest range,
        rows covered) for tiles of `tile` output rows (columns), from the
        affine offsets: every range clipped once to its tensor. That bounds the
        exact ranges from above (they clip at every op); None if not affine."""
        key = ("C" if cols else "R", tile)
        if key not in self._memo:
            self._memo[key] = self._stats(tile, cols)
        return self._memo[key]

    def _stats(self, tile: int, cols: bool) -> list[tuple[int, int, int]] | None:
        off = self.col_offsets if cols else self.offsets
        if off is None:
            return None
        size = self.width if cols else self.height
        dims = self.widths if cols else self.heights
        n = -(-size // tile)
        out = []
        for t, (lo, ext) in enumerate(off):
            s = self.scales[t]
            ht = dims[t]
            if self.whole[t] or s is None:
                out.append((n * ht, ht, ht))
                continue
            out.append(_affine_stats(int(s), lo, ext, ht, size, tile, n))
        return out

    # ---- line buffers ------------------------------------------------------

    def lb_low(self, recompute: frozenset[int] = frozenset()) -> tuple[int, ...] | None:
        """Per tensor the offset where its readers' new rows start (rows below
        are history no reader needs again); ops in `recompute` read their
        whole range. None unless the band is affine."""
        off = self.offsets
        if off is None:
            return None
        big = 1 << 40
        low = [big] * len(off)
        for t in self.roots:
            low[t] = 0
        for k, outs, ins in self.ops:
            full = k in recompute
            src = min(off[o][0] for o in outs) if full else max(off[o][1] for o in outs)
            if full:
                for o in outs:
                    low[o] = min(low[o], off[o][0])
            for t, m, _ in ins:
                if m[0] == WINDOW:
                    mu = m[2] * src - m[4]
                elif m[0] == IDENT:
                    mu = src
                else:
                    continue
                low[t] = min(low[t], mu)
        return tuple(min(v, off[t][1]) for t, v in enumerate(low))

    def lb_rows(self, tile: int, recompute: frozenset[int] = frozenset()) -> list[int] | None:
        """Line-buffer rows of every tensor for tiles of `tile` output rows,
        estimated from the affine offsets (`lb_capacity`); None if not affine."""
        tag = "L" + ",".join(map(str, sorted(recompute)))
        key = (tag, tile)
        if key in self._memo:
            return list(self._memo[key])
        off = self.offsets
        if (tag, -1) not in self._memo:
            self._memo[(tag, -1)] = self.lb_low(recompute)
        low = self._memo[(tag, -1)]
        if off is None or low is None:
            return None
        n = -(-self.height // tile)
        rows = []
        for t, ((lo, ext), lw) in enumerate(zip(off, low)):
            s = self.scales[t]
            if self.whole[t] or s is None:
                rows.append(self.heights[t])
            else:
                rows.append(lb_capacity(int(s), lo, ext, lw, self.heights[t], tile, n))
        self._memo[key] = rows
        return list(rows)

    def line_buffer(
        self,
        ranges: Sequence[Sequence[tuple[int, int]]],
        recompute: frozenset[int] = frozenset(),
    ) -> tuple[list[int], list[int], list[int]]:
        """The exact line-buffered run of the tiles (`line_buffer_run` over
        `ranges`, normally `lb_tile_ranges`): per tensor (rows held at most,
        rows computed or loaded over all tiles, history rows at most: rows
        held beyond those the tile computes). `LineBufferGapError` when an op
        would read a row no tile computed before."""
        run = line_buffer_run(self.heights, self.roots, self.lb_ops, ranges, recompute, self.share)
        n = len(self.names)
        held = [0] * n
        done = [0] * n
        hist = [0] * n
        for new, hold in zip(run.new, run.held):
            for t in range(n):
                rows = hold[t][1] - hold[t][0]
                fresh = new[t][1] - new[t][0]
                held[t] = max(held[t], rows)
                hist[t] = max(hist[t], rows - fresh)
                done[t] += fresh
        return held, done, hist

    def paced_ranges(self, pace: int) -> list[list[tuple[int, int]]]:
        """Per step the ranges of a paced line-buffered run (`paced_steps`):
        the chain's inputs advance `pace` rows a step (memoised)."""
        key = ("P", pace)
        if key not in self._memo:
            steps = paced_steps(
                self.heights, self.inputs, self.roots, self.whole, self.lb_ops, pace
            )
            run = line_buffer_run(self.heights, self.roots, self.lb_ops, steps, share=self.share)
            roots = set(self.roots)
            # a tensor's range: the rows its buffer holds after the step and the
            # rows it computes (the same run: only a range's end and, on the
            # first step, its start count, `paced_steps`)
            self._memo[key] = [
                [
                    r if t in roots else (min(r[0], hd[0], nw[0]), r[1])
                    for t, (r, hd, nw) in enumerate(zip(rng, held, new))
                ]
                for rng, held, new in zip(steps, run.held, run.new)
            ]
        return self._memo[key]

    def fed_ranges(
        self, ranges: Sequence[Sequence[tuple[int, int]]], feeders: frozenset[int]
    ) -> list[list[tuple[int, int]]]:
        """The ranges of a line-buffered run whose `feeders` (ops recomputed
        every tile for the window op reading them, `plan.scratch.window_feeders`)
        compute nothing in a tile where that window op computes no new row."""
        if not feeders:
            return [list(r) for r in ranges]
        run = line_buffer_run(self.heights, self.roots, self.lb_ops, ranges, share=self.share)
        fed = {outs[0] for k, outs, _ in self.ops if k in feeders}
        reader = {t: outs[0] for _, outs, ins in self.ops for t, _, _ in ins if t in fed}
        out = []
        for rng, new in zip(ranges, run.new):
            r = list(rng)
            for o, ro in reader.items():
                if new[ro][1] <= new[ro][0]:
                    r[o] = (r[o][1], r[o][1])
            out.append(r)
        return out

    def fed_paced(
        self, pace: int, recompute: frozenset[int], feeders: frozenset[int]
    ) -> tuple[list[list[tuple[int, int]]], list[int], list[int], list[int]]:
        """The paced run at `pace` with window feeders (`fed_ranges`) and the
        ops in `recompute` computing their whole range: its ranges and
        `line_buffer` of them (memoised: chains try several pixel blocks
        over the same run)."""
        key = ("F" + ",".join(map(str, sorted(recompute))), pace)
        if key not in self._memo:
            ranges = self.fed_ranges(self.paced_ranges(pace), feeders)
            self._memo[key] = (ranges, *self.line_buffer(ranges, recompute))
        ranges, held, done, hist = self._memo[key]
        return ranges, list(held), list(done), list(hist)

    def paced_buffer(self, pace: int) -> tuple[list[int], list[int], list[int]]:
        """`line_buffer` of the paced run at `pace` (memoised): rows held,
        rows computed, history rows per tensor."""
        key = ("Q", pace)
        if key not in self._memo:
            self._memo[key] = self.line_buffer(self.paced_ranges(pace))
        held, done, hist = self._memo[key]
        return list(held), list(done), list(hist)

    def paced_rows(self) -> list[int] | None:
        """Line-buffer rows of every tensor in a paced run of one input row a
        step, estimated from the affine offsets: the history `ext - low` (as
        `lb_low`) plus the rows a step brings, at least the stride of a
        window reading it (it waits for that many new rows). None unless the
        band is affine."""
        if ("p", 0) not in self._memo:
            off, low = self.offsets, self.lb_low()
            rows: list[int] | None = None
            if off is not None and low is not None:
                need = [1] * len(off)
                for _, _, ins in self.ops:
                    for t, m, _ in ins:
                        if m[0] == WINDOW and m[2] > need[t]:
                            need[t] = m[2]
                rows = [
                    h if w or s is None else max(1, min(h, need[t] + x - min(lw, x)))
                    for t, ((_, x), lw, h, w, s) in enumerate(
                        zip(off, low, self.heights, self.whole, self.scales)
                    )
                ]
            self._memo[("p", 0)] = rows
        rows = self._memo[("p", 0)]
        return None if rows is None else list(rows)

    def max_pace(self) -> int:
        """The largest useful pace: the input rows behind one output row (a
        faster pace is a tile of several output rows, which `lb_tile_ranges`
        runs with less bookkeeping)."""
        hin = max((self.heights[t] for t in self.inputs if not self.whole[t]), default=1)
        return max(1, hin // max(self.height, 1))

    @cached_property
    def lb_ops(self) -> tuple[LbOp, ...]:
        """The ops with their row maps only, as `line_buffer_run` takes them."""
        return tuple((k, outs, tuple((t, m) for t, m, _ in ins)) for k, outs, ins in self.ops)

    # ---- halo ------------------------------------------------------------

    def halo(self) -> int:
        """RF - 1 of the band: extra input rows behind one output row (the
        spec's walk, taken over every path from a stage input)."""
        one = self.ranges(0, 1, clip=False)
        best = 0
        for t in self.inputs:
            if not self.whole[t]:
                x, y = one[t]
                best = max(best, y - x - 1)
        return best

    def halo_sides(self, tile_h: int, tile_w: int = 0) -> tuple[int, int, int, int]:
        """Rows (top, bottom) and columns (left, right) a tile reads beyond the
        rows its outputs map to, on the most demanding stage input."""
        top = bottom = left = right = 0
        rng = self.ranges(0, tile_h, clip=False)
        for t in self.inputs:
            s = self.scales[t]
            if self.whole[t] or s is None:
                continue
            x, y = rng[t]
            top = max(top, -x)
            bottom = max(bottom, y - math.ceil(s * tile_h))
        if tile_w:
            cr = self.col_ranges(0, tile_w, clip=False)
            for t in self.inputs:
                s = self.scales[t]
                if self.whole[t] or s is None:
                    continue
                x, y = cr[t]
                left = max(left, -x)
                right = max(right, y - math.ceil(s * tile_w))
        return (top, bottom, left, right)


def _merge_range(
    r: list[tuple[int, int]],
    seen: list[bool],
    empty: list[bool],
    i: int,
    x: int,
    y: int,
    live: bool,
) -> None:
    """Widen slot `i` to the hull with [x, y). A reader with no output rows
    (`live` false), or whose rows read only padding (y <= x), reads nothing:
    it only places an empty range where no reader needs a row."""
    if not live or y <= x:
        if not seen[i]:
            r[i], seen[i], empty[i] = (x, x), True, True
        return
    if not seen[i] or empty[i]:
        r[i], seen[i], empty[i] = (x, y), True, False
        return
    a, b = r[i]
    r[i] = (x if x < a else a, y if y > b else b)


def _hull_ranges(
    sizes: Sequence[int],
    roots: Sequence[int],
    ops: Sequence[tuple[int, tuple[int, ...], tuple[tuple[int, RowMap, RowMap], ...]]],
    which: int,
    lo: int,
    hi: int,
    clip: bool,
) -> list[tuple[int, int]]:
    """Every tensor's exact range (rows with `which` 1, columns with 2) for
    output [lo, hi): each op's input range from its output range, the hull
    over the readers that read something."""
    n = len(sizes)
    r = [(0, 0)] * n
    seen = [False] * n
    empty = [False] * n
    for t in roots:
        b = min(hi, sizes[t]) if clip else hi
        r[t], seen[t], empty[t] = (lo, b), True, b <= lo
    for _, outs, ins in reversed(ops):
        live = [r[o] for o in outs if seen[o]]
        if not live:
            continue
        oa = min(a for a, _ in live)
        ob = max(b for _, b in live)
        for t, row, col in ins:
            x, y = map_range(row if which == 1 else col, oa, ob, sizes[t], clip)
            _merge_range(r, seen, empty, t, x, y, ob > oa)
    return r


def monotone_ranges(seq: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The per-tile ranges of one tensor made monotone for a line buffer: a
    tile's range starts at the lowest row it or any later tile reads and
    ends at the highest row it or any earlier tile read. Empty ranges need
    nothing: one stays empty (at the rows computed so far) unless rows
    computed before are read again after it, which it then holds."""
    n = len(seq)
    big = 1 << 62
    suffix = [big] * (n + 1)
    for i in range(n - 1, -1, -1):
        a, b = seq[i]
        suffix[i] = min(suffix[i + 1], a) if b > a else suffix[i + 1]
    out: list[tuple[int, int]] = []
    end = -1  # highest row read so far, exclusive; -1: none yet
    for i, (a, b) in enumerate(seq):
        if b > a and b > end:
            end = b
        s = suffix[i]
        if end < 0:
            p = min(a, s)
            out.append((p, p))
        else:
            out.append((min(s, end), end))
    return out


def uncovered(done: Sequence[tuple[int, int]], x: int, y: int) -> int | None:
    """The first row of [x, y) not in the sorted, disjoint ranges `done`."""
    row = x
    for a, b in done:
        if a > row:
            break
        row = max(row, b)
    return row if row < y else None


def add_range(done: list[tuple[int, int]], r: tuple[int, int]) -> None:
    """Add [r0, r1) to the sorted, disjoint ranges `done`, merging."""
    if r[1] <= r[0]:
        return
    done.append(r)
    done.sort()
    merged: list[tuple[int, int]] = []
    for a, b in done:
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    done[:] = merged


class LineBufferGapError(ValueError):
    """A line-buffered run whose op reads a row no tile has computed (or
    loaded) so far: its ranges skip or go back, so it cannot be line-buffered."""

    def __init__(self, tile: int, node: int, tensor: int, rows: tuple[int, int], missing: int):
        super().__init__(
            f"tile {tile}: node {node} reads rows [{rows[0]}, {rows[1]}) of tensor {tensor}, "
            f"but row {missing} is never computed or loaded before"
        )
        self.tile = tile
        self.node = node
        self.tensor = tensor
        self.rows = rows
        self.missing = missing


LbOp = tuple[int, tuple[int, ...], tuple[tuple[int, RowMap], ...]]
"""(node, output ids, ((input id, row map), ...)) of an op of a line-buffered band."""


@dataclass(frozen=True)
class LineBufferRun:
    """The line-buffered run of a band's tiles, per tile and tensor: `new`,
    the rows computed (an input's: loaded) by the tile, and `held`, the rows
    its buffer holds once the tile has run (the buffer's first row is the
    held range's first row; the rows kept from the previous tile move there)."""

    new: tuple[tuple[tuple[int, int], ...], ...]
    held: tuple[tuple[tuple[int, int], ...], ...]


def line_buffer_run(
    heights: Sequence[int],
    roots: Sequence[int],
    ops: Sequence[LbOp],
    ranges: Sequence[Sequence[tuple[int, int]]],
    recompute: frozenset[int] = frozenset(),
    share: Sequence[int] = (),
) -> LineBufferRun:
    """Run the tiles of a line-buffered band (the planner sizes its buffers
    with this and the loop level schedules it, so both agree row for row).

    Tile i computes the rows of each tensor's range from the previous
    tiles' end on (ops in `recompute`, by node index, their whole range).
    Every row an op reads must have been computed by then, else
    `LineBufferGapError`. A buffer holds from the lowest row a reader of
    this or any later tile's new rows needs (or a band output's tile rows)
    up to the highest row computed so far: a row leaves a line buffer only
    once no later tile reads it. Tensors sharing a buffer (`share`, as
    `BandModel.share`) hold the hull of their rows.
    """
    n = len(heights)
    rec_out = {o for k, outs, _ in ops if k in recompute for o in outs}
    prev = [-1] * n
    done: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    news: list[tuple[tuple[int, int], ...]] = []
    lows: list[list[int]] = []
    for i, rng in enumerate(ranges):
        new: list[tuple[int, int]] = []
        for t in range(n):
            x, y = rng[t]
            nx = x if prev[t] < 0 else max(prev[t], x)
            new.append((nx, max(nx, y)))
            add_range(done[t], rng[t] if t in rec_out else new[t])
        low = [a for a, _ in new]
        for t in roots:
            low[t] = min(low[t], rng[t][0])
        for k, outs, ins in ops:
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
            for t, m in ins:
                x, y = map_range(m, src[0], src[1], heights[t])
                if y <= x:
                    continue
                missing = uncovered(done[t], x, y)
                if missing is not None:
                    raise LineBufferGapError(i, k, t, (x, y), missing)
                if x < low[t]:
                    low[t] = x
        news.append(tuple(new))
        lows.append(low)
        for t in range(n):
            prev[t] = max(prev[t], rng[t][1])
    for i in range(len(lows) - 2, -1, -1):
        for t in range(n):
            lows[i][t] = min(lows[i][t], lows[i + 1][t])
    # no row is held before the first one computed (a recomputing op's: its range's)
    computed = [[r[t] if t in rec_out else nw[t] for t in range(n)] for r, nw in zip(ranges, news)]
    first = [min((x for x, y in (c[t] for c in computed) if y > x), default=0) for t in range(n)]
    held: list[tuple[tuple[int, int], ...]] = []
    top = [-1] * n
    for rng, low in zip(ranges, lows):
        row: list[tuple[int, int]] = []
        for t in range(n):
            y = max(rng[t][1], top[t])
            row.append((min(max(low[t], first[t]), y), y))
            top[t] = y
        if share:
            hull: dict[int, tuple[int, int]] = {}
            for t, (a, b) in enumerate(row):
                o = share[t]
                h = hull.get(o)
                hull[o] = (a, b) if h is None else (min(h[0], a), max(h[1], b))
            row = [hull[share[t]] for t in range(n)]
        held.append(tuple(row))
    return LineBufferRun(tuple(news), tuple(held))


def paced_steps(
    heights: Sequence[int],
    inputs: Sequence[int],
    roots: Sequence[int],
    whole: Sequence[bool],
    ops: Sequence[LbOp],
    pace: int,
) -> list[list[tuple[int, int]]]:
    """The steps of a paced line-buffered run, per step every tensor's range.

    A tile of a line-buffered chain is usually a band of output rows: every
    tensor computes the rows that band needs, so a tensor of twice the
    output's height computes two rows a tile, four times four, and its line
    buffer holds them all beside its history. A paced run steps by rows of
    the input instead: each step loads `pace` more rows of the tallest chain
    input (the others in proportion, rounded up) and every op computes, in
    order, the rows its inputs now allow, at most its own share of the pace
    (`pace * height // input height`, rounded up, at least one row). So each
    tensor advances at its own rate and holds about its readers' windows
    (kernel rows, plus the rows a residual reader lags behind). Steps go on
    after the input is whole until every output row is computed; a step in
    which an op has nothing to compute leaves its range empty. Each range
    runs from the tensor's first row (first step) or its rows so far up to
    the rows computed after the step, so `line_buffer_run` computes exactly
    the new rows; an output's range is its new rows (it is spilled)."""
    n = len(heights)
    hin = max((heights[t] for t in inputs if not whole[t]), default=1)
    avail = [0] * n
    root_set = set(roots)
    steps: list[list[tuple[int, int]]] = []
    i = 0
    while any(avail[t] < heights[t] for t in roots):
        i += 1
        prev = list(avail)
        for t in inputs:
            avail[t] = heights[t] if whole[t] else min(heights[t], -(-i * pace * heights[t] // hin))
        moved = False
        for _, outs, ins in ops:
            if not outs:
                continue
            ho = heights[outs[0]]
            y = avail[outs[0]]
            cap = min(ho, y + max(1, -(-pace * ho // hin)))
            while y < cap:
                for t, m in ins:
                    x0, y0 = map_range(m, y, y + 1, heights[t])
                    if y0 > x0 and y0 > avail[t] and avail[t] < heights[t]:
                        break
                else:
                    y += 1
                    continue
                break
            for o in outs:
                if y > avail[o]:
                    moved = True
                avail[o] = y
        if not moved and all(avail[t] == prev[t] for t in inputs):
            raise ValueError("a paced run makes no progress (an op reads rows nothing computes)")
        steps.append(
            [
                (prev[t], avail[t]) if t in root_set else (0 if i == 1 else prev[t], avail[t])
                for t in range(n)
            ]
        )
    return steps


def _back_propagate(
    sizes: Sequence[int],
    roots: Sequence[int],
    ops: Sequence[tuple[int, tuple[int, ...], tuple[tuple[int, RowMap, RowMap], ...]]],
    which: int,
    tile: int,
    whole: Sequence[bool],
) -> list[int]:
    """The spec's height back-propagation over a band's ops (`which` picks the
    row maps, 1, or the column maps, 2): every tensor's extent for `tile`
    output rows or columns, the largest any reader needs, capped at its size."""
    r = [0] * len(sizes)
    for t in roots:
        r[t] = tile if tile < sizes[t] else sizes[t]
    for _, outs, ins in reversed(ops):
        ro = r[outs[0]]
        for o in outs:
            if r[o] > ro:
                ro = r[o]
        for t, row, col in ins:
            m = row if which == 1 else col
            code = m[0]
            if code == IDENT:
                v = ro
            elif code == WINDOW:
                v = ro * m[2] + max((m[1] - 1) * m[3] + 1 - m[2], 0)
            else:
                v = map_rows(m, ro, sizes[t])
            if v > sizes[t]:
                v = sizes[t]
            if v > r[t]:
                r[t] = v
    for t, w in enumerate(whole):
        if w:
            r[t] = sizes[t]
    return r


def _affine_stats(
    rate: int, lo: int, ext: int, ht: int, size: int, tile: int, n: int
) -> tuple[int, int, int]:
    """(sum of lengths, longest, covered) of the ranges [rate a + lo, rate b + ext)
    clipped to [0, ht), over tiles [a, b) of `tile` rows of [0, size). Interior
    tiles all have one length; only the clipped ones at either end are walked."""
    step = rate * tile
    top = min(n, (step - 1 - lo) // step) if lo < 0 else 0
    bottom = max(0, (ht - ext) // step) if ht - ext >= 0 else 0
    bottom = min(bottom, n - 1)
    edges = sorted(set(range(top)) | set(range(max(bottom, top), n)))
    inner = n - len(edges)
    length = max(step + ext - lo, 0)
    total = inner * length
    longest = length if inner else 0
    first = lo if lo > 0 else 0
    last = 0
    for i in edges:
        a = i * tile
        b = a + tile if a + tile < size else size
        x = rate * a + lo
        y = rate * b + ext
        x = x if x > 0 else 0
        y = y if y < ht else ht
        if y < x:
            y = x
        total += y - x
        longest = max(longest, y - x)
        if i == n - 1:
            last = y
    return total, longest, min(max(last - first, 0), total)


def lb_capacity(rate: int, lo: int, ext: int, low: int, size: int, tile: int, tiles: int) -> int:
    """Rows a line buffer holds at most, from affine offsets (an estimate of
    `BandModel.line_buffer`): tile i needs rows [rate a + lo, rate b + ext) of
    the tensor for output rows [a, b), computes those from the previous tile's
    end on, and its readers' new rows start at offset `low`. The first tile
    holds its whole range (the pipeline fills), a steady tile
    `rate * tile + ext - low` rows: new rows plus (kernel - stride) history
    per window; a tile whose readers start above row 0 holds from row 0."""
    step = rate * tile
    low = min(low, ext)
    best = min(size, step + ext) - max(0, lo)
    if tiles > 1:
        best = max(best, step + ext - low)
        if low < 0:
            i = min((step - 1 - low) // step - 1, tiles - 1)
            if i >= 1:
                best = max(best, min(size, step * (i + 1) + ext))
    return max(0, min(size, best))


def paced_floor(ext: int, low: int, size: int) -> int:
    """Rows a line buffer holds at least in a paced run (`paced_steps`), from
    the affine offsets of one output row: its history (`ext - low`, the
    kernel-minus-stride rows of its windows and the lag of a later reader)
    plus the one row a step computes. Stage formation takes the smaller of
    this and the one-row tile's `lb_capacity` as the floor of `lb1`: some
    line-buffered run may fit."""
    return max(1, min(size, 1 + ext - min(low, ext)))


def build_band(
    graph: PlanGraph, start: int, stop: int, tables: GraphTables | None = None
) -> BandModel:
    """The band model of ops [start, stop); ValueError naming the rule broken."""
    b = BandBuilder(tables or GraphTables(graph), stop)
    while b.start > start:
        if not b.prepend():
            break
    return b.model()


def band_bytes(graph: PlanGraph, start: int, stop: int, rows: int) -> int:
    """band_bytes(rows) of the stage made of ops [start, stop)."""
    return build_band(graph, start, stop).band_bytes(rows)


def union_length(ranges: Iterable[tuple[int, int]]) -> int:
    """Rows covered by a sequence of ranges (sorted by start)."""
    total, end = 0, -(1 << 62)
    for a, b in sorted(ranges):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total
