"""What a band reads: the global rows an operand of an `nn` op must supply
for a band of its result (the band model of `spec/tiling.md` applied to one
op), shared by the plan verifier and the band kernels.
"""

from __future__ import annotations

import math

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


def required(op: nn.NNOp, index: int, held: Band, out: Band) -> Band:
    """The global rows (per cut axis of `held`) that operand `index` of `op`
    must supply for the result band `out`: a window's clipped span, a
    transposed convolution's contributing rows, a resize's source rows, a
    reshape's element span; an elementwise operand the band it holds."""
    if not held:
        return {}
    shape = nn.shape_of(op.operands[index])
    need: dict[int, Range] = {}
    for ax, rng in held.items():
        o = out.get(ax)
        if (
            index == 0
            and isinstance(op, nn.WindowOp)
            and not isinstance(op, nn.ConvTransposeOp)
            and 1 <= ax <= len(shape) - 2
        ):
            i = ax - 1
            k, s, d, p = op.kernel(), op.strides(), op.dilations(), op.pads()
            d = d if len(d) == len(k) else (1,) * len(k)
            a, b = o if o is not None else (0, nn.shape_of(op.results[0])[ax])
            need[ax] = map_range((WINDOW, k[i], s[i], d[i], p[i]), a, b, shape[ax])
        elif index == 0 and isinstance(op, nn.ConvTransposeOp) and ax == 1:
            k, s, d, p = op.kernel(), op.strides(), op.dilations(), op.pads()
            a, b = o if o is not None else (0, nn.shape_of(op.results[0])[ax])
            need[ax] = map_range((TRANSPOSED, k[0], s[0], d[0], p[0]), a, b, shape[ax])
        elif index == 0 and isinstance(op, nn.IndexMapOp):
            n_out = nn.shape_of(op.results[0])[ax]
            a, b = o if o is not None else (0, n_out)
            taps = op.tables()[ax][a:b]
            need[ax] = (int(taps.min()), int(taps.max()) + 1) if taps.size else (0, 0)
        elif index == 0 and isinstance(op, nn.ResizeOp):
            n_out = nn.shape_of(op.results[0])[ax]
            a, b = o if o is not None else (0, n_out)
            taps = resize_taps(op, ax, a, b)
            need[ax] = (int(taps.min()), int(taps.max()) + 1) if taps.size else (0, 0)
        elif op.tiling() is TilingClass.RESHAPE or isinstance(op, nn.FlattenOp | nn.ReshapeOp):
            oshape = nn.shape_of(op.results[0])
            ((ao, (a, b)),) = out.items() if out else ((0, (0, oshape[0])),)
            ire = math.prod(shape) // shape[ax]
            ore = math.prod(oshape) // oshape[ao]
            need[ax] = (a * ore // ire, -(-b * ore // ire))
        else:
            need[ax] = rng
    return need
