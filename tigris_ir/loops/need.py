"""What a band reads: the global rows an operand of an `nn` op must supply
for a band of its result (the band model of `spec/tiling.md` applied to one
op), shared by the plan verifier and the band kernels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tigris_ir.dialects import nn
from tigris_ir.plan.band import Band, Range
from tigris_ir.plan.tiling import TRANSPOSED, WINDOW, map_range
from tigris_ir.plan.tiling_class import TilingClass
from tigris_ir.reference import kernels as K


def resize_taps(op: nn.ResizeOp, ax: int, o0: int, o1: int) -> np.ndarray:
    """The source rows (along axis `ax`) a resize reads for output rows [o0, o1)."""
    n_in = nn.shape_of(op.input)[ax]
    n_out = nn.shape_of(op.output)[ax]
    if n_out == n_in:
        return np.arange(o0, o1)
    coords = K._source_coords(n_out, n_in, op.str_("coordinate_transformation_mode"))  # noqa: SLF001
    if op.str_("mode") == "nearest":
        nm = op.str_("nearest_mode", "round_prefer_floor")
        return K._nearest_index(coords, nm, n_in)[o0:o1]  # noqa: SLF001
    c = np.clip(coords.astype(np.float64), 0.0, n_in - 1)
    i0 = c.astype(np.intp)
    i1 = np.minimum(i0 + 1, n_in - 1)
    return np.concatenate([i0[o0:o1], i1[o0:o1]])


@dataclass(frozen=True)
class OpFacts:
    """What `required` reads of an op, read once: its operands' and first
    result's shapes, a window's geometry (kernel, strides, dilations, pads)
    and an index map's tables."""

    shapes: tuple[tuple[int, ...], ...]
    out_shape: tuple[int, ...]
    window: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]] | None
    tables: tuple[np.ndarray, ...] | None


def op_facts(op: nn.NNOp) -> OpFacts:
    """The facts of `op` that `required` uses."""
    window = None
    if isinstance(op, nn.WindowOp):
        window = (op.kernel(), op.strides(), op.dilations(), op.pads())
    return OpFacts(
        tuple(nn.shape_of(v) for v in op.operands),
        nn.shape_of(op.results[0]),
        window,
        tuple(op.tables()) if isinstance(op, nn.IndexMapOp) else None,
    )


def required(
    op: nn.NNOp, index: int, held: Band, out: Band, facts: OpFacts | None = None
) -> Band:
    """The global rows (per cut axis of `held`) that operand `index` of `op`
    must supply for the result band `out`: a window's clipped span, a
    transposed convolution's contributing rows, an index map's or a
    resize's source rows, a reshape's element span; an elementwise operand
    the band it holds. `facts`: `op_facts(op)`, when the caller keeps them."""
    if not held:
        return {}
    f = facts if facts is not None else op_facts(op)
    shape = f.shapes[index]
    need: dict[int, Range] = {}
    for ax, rng in held.items():
        o = out.get(ax)
        a, b = o if o is not None else (0, f.out_shape[ax])
        if index == 0 and f.window is not None:
            k, s, d, p = f.window
            if isinstance(op, nn.ConvTransposeOp):
                if ax == 1:
                    need[ax] = map_range((TRANSPOSED, k[0], s[0], d[0], p[0]), a, b, shape[ax])
                    continue
            elif 1 <= ax <= len(shape) - 2:
                i = ax - 1
                d = d if len(d) == len(k) else (1,) * len(k)
                need[ax] = map_range((WINDOW, k[i], s[i], d[i], p[i]), a, b, shape[ax])
                continue
        if index == 0 and f.tables is not None:
            taps = f.tables[ax][a:b]
            need[ax] = (int(taps.min()), int(taps.max()) + 1) if taps.size else (0, 0)
        elif index == 0 and isinstance(op, nn.ResizeOp):
            taps = resize_taps(op, ax, a, b)
            need[ax] = (int(taps.min()), int(taps.max()) + 1) if taps.size else (0, 0)
        elif op.tiling() is TilingClass.RESHAPE or isinstance(op, nn.FlattenOp | nn.ReshapeOp):
            oshape = f.out_shape
            ((ao, (a, b)),) = out.items() if out else ((0, (0, oshape[0])),)
            ire = math.prod(shape) // shape[ax]
            ore = math.prod(oshape) // oshape[ao]
            need[ax] = (a * ore // ire, -(-b * ore // ire))
        else:
            need[ax] = rng
    return need
