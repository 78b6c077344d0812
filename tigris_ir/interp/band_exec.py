"""Band-level compute: one `nn` op evaluated on a band of its output.

A tile computes each op on a band: a range of output rows (and, for a 2D
tile, of columns; for a sub-row accumulation, of positions or channels). The
operands hold only the rows the tile loaded or computed, so a window op's
first and last tiles supply the image's border themselves: rows above row 0
or below the last row become the op's own padding (zeros, or the lowest
value for a max pool), and every other row comes from the band. The kernels
of `tigris_ir.reference.kernels` then run on the band with those pads, so a band is
bit-identical to the same rows of the untiled reference wherever the
reference is (integer arithmetic, elementwise float operations, depthwise
taps; float matrix products round once from float64).

A band is described per operand and for the result by `Band`: the global
range held along every axis the band cuts (an empty mapping: the whole
tensor). `compute` returns the result band; `accumulate` / `finish` are the
two halves of an accumulated GlobalAveragePool.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import numpy as np
from xdsl.dialects.builtin import TensorType

from tigris_ir.dialects import nn
from tigris_ir.dialects.rtile import KernelOp, clamp_of, kernel_of
from tigris_ir.interp import rtile_exec
from tigris_ir.plan.band import WHOLE, Band, BandError, Range, band_shape
from tigris_ir.plan.tiling import TRANSPOSED, WINDOW, map_range
from tigris_ir.plan.tiling_class import TilingClass
from tigris_ir.reference import kernels as K

# ---------------------------------------------------------------------------
# band kernels, one per kind of `nn` op

Kernel = Callable[[Any, list[np.ndarray], Band, Band], list[np.ndarray]]
"""A band kernel: (op, operands, band its first operand holds, result band)
-> the result bands."""

_KERNELS: dict[type[nn.NNOp], Kernel] = {}
_K = TypeVar("_K", bound=Kernel)


def band_kernel(*kinds: type[nn.NNOp]) -> Callable[[_K], _K]:
    """Register the band kernel of these `nn` op classes (and their
    subclasses, unless one has its own). An op with no kernel runs its
    reference on the band: an elementwise or whole-rows op on its operands
    fitted to the band, a reshape-like op (`TilingClass.RESHAPE`) as one
    contiguous span."""

    def register(fn: _K) -> _K:
        for kind in kinds:
            _KERNELS[kind] = fn
        return fn

    return register


@functools.cache
def kernel_for(kind: type[nn.NNOp]) -> Kernel | None:
    """The band kernel of an op class: its own or its nearest base's."""
    return next((_KERNELS[c] for c in kind.__mro__ if c in _KERNELS), None)


# ---------------------------------------------------------------------------
# quantization dispatch, as `NNOp.reference` does it


@dataclass(frozen=True)
class _Static:
    """What a band of an op needs from its IR, read once per op."""

    in_shape: tuple[int, ...]
    out_shape: tuple[int, ...]
    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    pads: tuple[int, ...]
    path: str
    """"real", "integer", "exact" or "dequantize": how `NNOp.reference` runs it."""


_STATIC: dict[int, tuple[nn.NNOp, _Static]] = {}


def _static(op: nn.NNOp) -> _Static:
    hit = _STATIC.get(id(op))
    fixed = nn.requant_fixed(op)
    if hit is not None and hit[0] is op and (hit[1].path == "fixed") == (fixed and op.FIXED):
        return hit[1]
    if len(_STATIC) > 4096:
        _STATIC.clear()
    in_shape = nn.shape_of(op.operands[0]) if op.operands else ()
    out_shape = nn.shape_of(op.results[0])
    k = s = d = p = ()
    if isinstance(op, nn.WindowOp):
        n = len(in_shape) - 2
        k, s, d, p = op.kernel(), op.strides(), op.dilations(), op.pads()
        d = d if len(d) == n else (1,) * n
    if not op.is_quantized():
        path = "real"
    elif op.quant_kind() is nn.QuantKind.INTEGER:
        path = "integer"
    elif op.quant_kind() is nn.QuantKind.EXACT and op._same_quantization():  # noqa: SLF001
        path = "exact"
    elif op.FIXED and fixed:
        path = "fixed"
    else:
        path = "dequantize"
    info = _Static(in_shape, out_shape, k, s, d, p, path)
    _STATIC[id(op)] = (op, info)
    return info


def _dispatch(
    op: nn.NNOp,
    args: list[np.ndarray],
    real: Callable[[list[np.ndarray]], list[np.ndarray]],
    integer: Callable[[list[np.ndarray]], list[np.ndarray]] | None = None,
    fixed: Callable[[list[np.ndarray]], list[np.ndarray]] | None = None,
) -> list[np.ndarray]:
    """Run `real` (float semantics), `integer` or `fixed` (the integer-only
    definition of a FIXED op under `nn.requant = "fixed"`) the way the op's
    reference chooses between them, and cast to the result types."""
    path = _static(op).path
    if path in ("real", "exact"):
        outs = real(args)
    elif path == "integer":
        if integer is None:
            raise BandError(f"{op.name}: no integer band kernel")
        outs = integer(args)
    elif path == "fixed":
        if fixed is None:
            raise BandError(f"{op.name}: no integer-only band kernel")
        outs = fixed(args)
    else:
        deq = [nn.dequantize_array(a, nn.quant_of(v)) for a, v in zip(args, op.operands)]
        outs = real(deq)
        outs = [nn.quantize_array(o, cast(TensorType, r.type)) for o, r in zip(outs, op.results)]
    return [np.asarray(o).astype(nn.dtype_of(r), copy=False) for o, r in zip(outs, op.results)]


# ---------------------------------------------------------------------------
# window geometry


def window_cut(
    out: Range, held: Range, size: int, k: int, s: int, d: int, pb: int, what: str
) -> tuple[slice, int, int]:
    """(rows of the held band to use, pad before, pad after) for output
    positions `out` of a window op over an axis of `size` positions.

    The positions the windows span are [out0 * s - pb, (out1 - 1) * s - pb +
    eff); those outside the held band must be outside the image, or read by
    no tap (a dilated window near a border skips rows): they become padding.
    """
    a, b = out
    lo = a * s - pb
    hi = (b - 1) * s - pb + (k - 1) * d + 1
    x, y = held
    need = map_range((WINDOW, k, s, d, pb), a, b, size)
    if need[1] > need[0] and (need[0] < x or need[1] > y):
        raise BandError(
            f"{what}: output [{a}, {b}) reads input [{need[0]}, {need[1]}) but the band "
            f"holds [{x}, {y})"
        )
    s0 = max(lo, x)
    s1 = min(hi, y)
    if s1 <= s0:  # the windows read padding only
        return slice(0, 0), hi - lo, 0
    return slice(s0 - x, s1 - x), s0 - lo, hi - s1


def _window_geometry(
    op: nn.WindowOp, held: Band, out: Band, out_shape: Sequence[int]
) -> tuple[tuple[slice, ...], tuple[int, ...], list[np.ndarray]]:
    """Slices of the held input, ONNX pads (begins, ends) and, per spatial
    axis, the global position of each padded row (for average pools)."""
    info = _static(op)
    in_shape = info.in_shape
    n = len(in_shape) - 2
    k, s, d, p = info.kernel, info.strides, info.dilations, info.pads
    sl: list[slice] = [slice(None)]
    begins: list[int] = []
    ends: list[int] = []
    where: list[np.ndarray] = []
    for i in range(n):
        ax = 1 + i
        o = out.get(ax, (0, out_shape[ax]))
        h = held.get(ax, (0, in_shape[ax]))
        cut, pt, pe = window_cut(o, h, in_shape[ax], k[i], s[i], d[i], p[i], f"{op.name} axis {ax}")
        sl.append(cut)
        begins.append(pt)
        ends.append(pe)
        lo = o[0] * s[i] - p[i]
        where.append(np.arange(lo, lo + pt + (cut.stop - cut.start) + pe))
    sl.append(slice(None))
    return tuple(sl), (*begins, *ends), where


_F64: dict[int, tuple[np.ndarray, np.ndarray]] = {}
"""float64 copies of weights, by the weight array's id (the array is kept
alive beside its copy, so the id is not reused): every tile of a conv
converts the same weights otherwise."""


def _as_f64(w: np.ndarray) -> np.ndarray:
    hit = _F64.get(id(w))
    if hit is not None and hit[0] is w:
        return hit[1]
    if len(_F64) > 4096:
        _F64.clear()
    w64 = w.astype(np.float64)
    _F64[id(w)] = (w, w64)
    return w64


def _pointwise_calls(
    kern: KernelOp,
    product: rtile_exec.Product,
    a: np.ndarray,
    wm: np.ndarray,
    shape: Sequence[int],
) -> np.ndarray:
    """A pointwise convolution's product as its kernel is called: per image of
    the band, all its rows in one call where the row blocks say `merge W`,
    else one call per output row (each call's row blocks, packing and edge
    tiles start over)."""
    out = (*shape[:-1], wm.shape[-1])
    if a.shape[0] == 0:
        return np.zeros(out, np.float64)
    calls = shape[0] if kern.row_blocks.merge is not None else math.prod(shape[:-2])
    runs = a.reshape(calls, a.shape[0] // calls, a.shape[-1])
    return np.concatenate([product(r[None], wm)[0] for r in runs]).reshape(out)


def _conv_core(
    x: np.ndarray, w64: np.ndarray, op: nn.ConvOp, pads: Sequence[int], out: Sequence[int]
) -> np.ndarray:
    """`kernels.conv`'s float64 accumulator (before bias and rounding) on a
    band: the band zero-padded by `pads`, then the same depthwise taps or
    im2col matrix product."""
    n = x.ndim - 2
    info = _static(op)
    st, dl = info.strides, info.dilations
    kern = kernel_of(op)
    # a register-tiled site's product runs the loops of its kernel ops
    product = rtile_exec.product(kern) if kern is not None else np.matmul
    if not any(pads) and all(k == 1 for k in info.kernel) and all(v == 1 for v in st):
        # a 1x1 conv: im2col's patches are the band itself, the same product
        cout = w64.shape[0]
        group = min(op.groups(), cout)  # a channel group of a depthwise conv: its own
        rows = math.prod(x.shape[:-1])
        patches = x.astype(np.float64).reshape(rows, group, -1)
        patches = np.ascontiguousarray(np.moveaxis(patches, 1, 0))
        wm = w64.reshape(group, cout // group, -1).transpose(0, 2, 1)
        if kern is not None and group == 1:
            return _pointwise_calls(kern, product, patches[0], wm, x.shape)
        acc = product(patches, wm)
        return acc.transpose(1, 0, 2).reshape(*x.shape[:-1], cout)
    shape = (x.shape[0], *(x.shape[1 + i] + pads[i] + pads[n + i] for i in range(n)), x.shape[-1])
    xp = np.zeros(shape, dtype=np.float64)
    xp[(slice(None), *(slice(pads[i], pads[i] + x.shape[1 + i]) for i in range(n)))] = x
    if kern is not None and kern.packing == "winograd":  # F(4, 3) along the width
        return rtile_exec.winograd(xp, w64, st[0], dl[0], out, product)
    if w64.shape[-1] == 1 and kern is None:
        return K._depthwise(xp, w64, st, dl, out)  # noqa: SLF001
    return K._im2col(xp, w64, st, dl, out, min(op.groups(), w64.shape[0]), product)  # noqa: SLF001


def _channel_group_consts(
    op: nn.ConvOp, args: list[np.ndarray], held: Band, out: Band, out_shape: Sequence[int]
) -> list[np.ndarray]:
    """A band of a channel group (the output's channel axis cut): a depthwise
    convolution runs the group's filters, biases and weight scales on the
    group's input channels; a convolution of one group the same rows of its
    constants on every input channel."""
    last = len(out_shape) - 1
    if last not in out:
        return args
    c = out_shape[-1]
    depthwise = op.groups() == c == nn.shape_of(op.input)[-1]
    if not depthwise and (op.groups() != 1 or last in held):
        raise BandError(
            f"{op.name}: only a depthwise convolution, or one of one group reading "
            "every input channel, cuts its result channels"
        )
    c0, c1 = out[last]
    return [
        a if i == 0 or a.ndim == 0 or a.shape[0] != c else a[c0:c1] for i, a in enumerate(args)
    ]


@band_kernel(nn.ConvOp)
def _conv(op: nn.ConvOp, args: list[np.ndarray], held: Band, out: Band) -> list[np.ndarray]:
    """`kernels.conv` on a band, with the same arithmetic (float64 sums, one
    rounding; integer sums exact) and its weights converted once."""
    out_shape = _static(op).out_shape
    sl, pads, _ = _window_geometry(op, held, out, out_shape)
    n = len(out_shape) - 2
    sizes = tuple(b - a for a, b in (out.get(1 + i, (0, out_shape[1 + i])) for i in range(n)))
    args = _channel_group_consts(op, list(args), held, out, out_shape)

    clamp = clamp_of(op)

    def real(a: list[np.ndarray]) -> list[np.ndarray]:
        acc = _conv_core(a[0][sl], _as_f64(a[1]), op, pads, sizes)
        y = (acc + a[2].astype(np.float64)).astype(np.float32)
        if clamp is not None:  # an activation fused by lower-gebp (kernel epilogue, rtile.clamp)
            y = K.clip(y, lo=clamp[0], hi=clamp[1])
        return [y]

    def integer(a: list[np.ndarray]) -> list[np.ndarray]:
        qx, qy = nn.quant_of(op.input), nn.quant_of(op.output)
        assert qx is not None and qy is not None
        x = a[0][sl].astype(np.int32) - np.int32(qx.zp_value)
        w = a[1]
        terms = math.prod(w.shape[1:])
        bound = (
            max(int(np.abs(x).max(initial=0)), 0)
            * max(int(np.abs(w.astype(np.int32)).max(initial=0)), 0)
            * terms
        )
        if bound < 2**53:  # kernels.conv sums exactly in float64 then
            acc64 = _conv_core(x, _as_f64(w), op, pads, sizes).astype(np.int64)
            acc64 += a[2].astype(np.int64)
            if acc64.size and (
                acc64.max() > np.iinfo(np.int32).max or acc64.min() < np.iinfo(np.int32).min
            ):
                raise OverflowError("integer accumulator does not fit int32")
            acc = acc64.astype(np.int32)
        else:
            acc = K.conv(
                x,
                w.astype(np.int32),
                a[2].astype(np.int32),
                strides=op.strides(),
                pads=pads,
                dilations=op.dilations(),
                group=min(op.groups(), w.shape[0]),
            )
        return [
            nn.requantize_acc(
                acc, qx.scale_value, a[3], qy, nn.dtype_of(op.output), fixed=nn.requant_fixed(op)
            )
        ]

    return _dispatch(op, list(args), real, integer)


@band_kernel(nn.MaxPoolOp)
def _max_pool(op: nn.MaxPoolOp, args: list[np.ndarray], held: Band, out: Band) -> list[np.ndarray]:
    out_shape = nn.shape_of(op.output)
    sl, pads, _ = _window_geometry(op, held, out, out_shape)

    def real(a: list[np.ndarray]) -> list[np.ndarray]:
        return [
            K.max_pool(
                a[0][sl],
                kernel=op.kernel(),
                strides=op.strides(),
                pads=pads,
                dilations=op.dilations(),
                ceil_mode=False,
            )
        ]

    return _dispatch(op, list(args), real)


@band_kernel(nn.AveragePoolOp)
def _avg_pool(
    op: nn.AveragePoolOp, args: list[np.ndarray], held: Band, out: Band
) -> list[np.ndarray]:
    """`kernels.avg_pool` on a band: the same taps summed in the same order,
    the divisor counted from the global position of every padded row."""
    in_shape = nn.shape_of(op.input)
    out_shape = nn.shape_of(op.output)
    sl, pads, where = _window_geometry(op, held, out, out_shape)
    n = len(in_shape) - 2
    include = bool(op.int_("count_include_pad"))
    p = op.pads()

    def parts(xa: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        xp = np.pad(
            xa.astype(np.float64), [(0, 0), *zip(pads[:n], pads[n:]), (0, 0)], mode="constant"
        )
        mask = np.ones((1,) * (n + 2), dtype=np.float64)
        for i in range(n):
            g = where[i]
            size = in_shape[1 + i]
            m = ((g >= 0) & (g < size)).astype(np.float64)
            if include:
                m[(g >= -p[i]) & (g < size + p[n + i])] = 1.0
            shape = [1] * (n + 2)
            shape[1 + i] = m.shape[0]
            mask = mask * m.reshape(shape)
        outs = tuple(out.get(1 + i, (0, out_shape[1 + i])) for i in range(n))
        sizes = tuple(b - a_ for a_, b in outs)
        total = np.zeros((xa.shape[0], *sizes, xa.shape[-1]), dtype=np.float64)
        count = np.zeros((1, *sizes, 1), dtype=np.float64)
        for tap in np.ndindex(*op.kernel()):
            idx = (
                slice(None),
                *(slice(t, t + s * (o - 1) + 1, s) for t, s, o in zip(tap, op.strides(), sizes)),
                slice(None),
            )
            total += xp[idx]
            count += mask[idx]
        return total, count

    def real(a: list[np.ndarray]) -> list[np.ndarray]:
        total, count = parts(np.asarray(a[0][sl]))
        return [(total / count).astype(np.float32)]

    def fixed(a: list[np.ndarray]) -> list[np.ndarray]:
        qx, qy = nn.quant_of(op.input), nn.quant_of(op.output)
        assert qx is not None and qy is not None
        total, count = parts(np.asarray(a[0][sl]).astype(np.int64) - qx.zp_value)
        y = (float(qy.scale_value), int(qy.zp_value))
        res = K.mean_fixed(
            total.astype(np.int64),
            count.astype(np.int64),
            s_x=float(qx.scale_value),
            y=y,
            dtype=nn.dtype_of(op.output),
        )
        return [res]

    return _dispatch(op, list(args), real, fixed=fixed)


@band_kernel(nn.ConvTransposeOp)
def _conv_transpose(
    op: nn.ConvTransposeOp, args: list[np.ndarray], held: Band, out: Band
) -> list[np.ndarray]:
    """A transposed convolution of the held input rows, widened with zero rows
    so that the expanded rows cover the band, then cropped to it."""
    if any(ax != 1 for ax in (*held, *out)):
        raise BandError(f"{op.name}: only bands of rows are supported (no 2D tiles)")
    in_shape = nn.shape_of(op.input)
    out_shape = nn.shape_of(op.output)
    n = len(in_shape) - 2
    k, s, d, p = op.kernel(), op.strides(), op.dilations(), op.pads()
    a, b = out.get(1, (0, out_shape[1]))
    x, y = held.get(1, (0, in_shape[1]))
    need = map_range((TRANSPOSED, k[0], s[0], d[0], p[0]), a, b, in_shape[1])
    if need[1] > need[0] and (need[0] < x or need[1] > y):
        raise BandError(
            f"{op.name}: output rows [{a}, {b}) read input rows [{need[0]}, {need[1]}) "
            f"but the band holds [{x}, {y})"
        )
    x0 = min(x, (a + p[0]) // s[0])
    y0 = max(y, -(-(b + p[0] - (k[0] - 1) * d[0] - 1) // s[0]) + 1)
    crop = a + p[0] - x0 * s[0]
    pads = (0, *p[1:n], 0, *p[n + 1 :])
    opad = (0, *op.out_padding()[1:])

    def run(xin: np.ndarray, w: np.ndarray, bias: np.ndarray) -> np.ndarray:
        xin = np.pad(xin, [(0, 0), (x - x0, y0 - y), *([(0, 0)] * n)])
        full = K.conv_transpose(
            xin, w, bias, strides=s, pads=pads, dilations=d, group=op.groups(), output_padding=opad
        )
        return full[:, crop : crop + b - a]

    def real(args_: list[np.ndarray]) -> list[np.ndarray]:
        return [run(args_[0], args_[1], args_[2])]

    def integer(args_: list[np.ndarray]) -> list[np.ndarray]:
        qx, qy = nn.quant_of(op.input), nn.quant_of(op.output)
        assert qx is not None and qy is not None
        acc = run(
            args_[0].astype(np.int32) - np.int32(qx.zp_value),
            args_[1].astype(np.int32),
            args_[2].astype(np.int32),
        )
        return [
            nn.requantize_acc(
                acc,
                qx.scale_value,
                args_[3],
                qy,
                nn.dtype_of(op.output),
                fixed=nn.requant_fixed(op),
            )
        ]

    return _dispatch(op, list(args), real, integer)


@band_kernel(nn.ResizeOp)
def _resize(op: nn.ResizeOp, args: list[np.ndarray], held: Band, out: Band) -> list[np.ndarray]:
    """`kernels.resize` with the source coordinates of the band's output rows,
    taken from the held input rows."""
    in_shape = nn.shape_of(op.input)
    out_shape = nn.shape_of(op.output)
    mode = op.str_("mode")
    ctm = op.str_("coordinate_transformation_mode")
    nm = op.str_("nearest_mode", "round_prefer_floor")

    def real(a: list[np.ndarray]) -> list[np.ndarray]:
        y = np.asarray(a[0])
        if mode != "nearest":
            y = y.astype(np.float64)
        for i in range(len(in_shape) - 2):
            ax = 1 + i
            n_in, n_out = in_shape[ax], out_shape[ax]
            o0, o1 = out.get(ax, (0, n_out))
            h0, h1 = held.get(ax, (0, n_in))
            if n_out == n_in:
                idx0 = np.arange(o0, o1)
                _check_taps(op, ax, idx0, h0, h1)
                y = np.take(y, idx0 - h0, axis=ax)
                continue
            coords = K._source_coords(n_out, n_in, ctm)  # noqa: SLF001
            if mode == "nearest":
                idx = K._nearest_index(coords, nm, n_in)[o0:o1]  # noqa: SLF001
                _check_taps(op, ax, idx, h0, h1)
                y = np.take(y, idx - h0, axis=ax)
                continue
            c = np.clip(coords.astype(np.float64), 0.0, n_in - 1)
            i0 = c.astype(np.intp)
            i1 = np.minimum(i0 + 1, n_in - 1)
            frac = K._along((c - i0)[o0:o1], ax, y.ndim)  # noqa: SLF001
            i0, i1 = i0[o0:o1], i1[o0:o1]
            _check_taps(op, ax, np.concatenate([i0, i1]), h0, h1)
            y = np.take(y, i0 - h0, axis=ax) * (1.0 - frac) + np.take(y, i1 - h0, axis=ax) * frac
        return [y.astype(np.float32) if mode != "nearest" else y]

    return _dispatch(op, list(args), real)


def _check_taps(op: nn.NNOp, ax: int, idx: np.ndarray, lo: int, hi: int) -> None:
    if idx.size and (int(idx.min()) < lo or int(idx.max()) >= hi):
        raise BandError(
            f"{op.name}: the band reads source rows [{int(idx.min())}, {int(idx.max()) + 1}) "
            f"along axis {ax} but holds [{lo}, {hi})"
        )


def _reshape(op: nn.NNOp, args: list[np.ndarray], held: Band, out: Band) -> list[np.ndarray]:
    """A reshape of one contiguous span: output rows [a, b) are the elements
    [a * out_row, b * out_row) of the input, found in the held rows."""
    in_shape = nn.shape_of(op.operands[0])
    out_shape = nn.shape_of(op.results[0])
    if len(held) > 1 or len(out) > 1:
        raise BandError(f"{op.name}: a reshape band cuts one axis")
    ai, (x, y) = next(iter(held.items()), (0, (0, in_shape[0] if in_shape else 1)))
    ao, (a, b) = next(iter(out.items()), (0, (0, out_shape[0] if out_shape else 1)))
    if math.prod(in_shape[:ai]) != 1 or math.prod(out_shape[:ao]) != 1:
        raise BandError(f"{op.name}: a reshape band must be one contiguous span")
    ire = math.prod(in_shape) // in_shape[ai]
    ore = math.prod(out_shape) // out_shape[ao]
    start, stop = a * ore - x * ire, b * ore - x * ire
    flat = np.ascontiguousarray(args[0]).reshape(-1)
    if start < 0 or stop > flat.size:
        raise BandError(
            f"{op.name}: output rows [{a}, {b}) need input elements [{a * ore}, {b * ore}) "
            f"but the band holds [{x * ire}, {y * ire})"
        )
    return [flat[start:stop].reshape(band_shape(out_shape, out))]


@band_kernel(nn.IndexMapOp)
def _index_map(
    op: nn.IndexMapOp, args: list[np.ndarray], held: Band, out: Band
) -> list[np.ndarray]:
    """The selected elements of the band's output indices, from the held input."""
    in_shape = nn.shape_of(op.input)
    out_shape = nn.shape_of(op.output)
    idx = []
    for a, t in enumerate(op.tables()):
        o0, o1 = out.get(a, (0, out_shape[a]))
        h0, h1 = held.get(a, (0, in_shape[a]))
        part = t[o0:o1]
        _check_taps(op, a, part, h0, h1)
        idx.append(part - h0)

    def real(v: list[np.ndarray]) -> list[np.ndarray]:
        return [np.ascontiguousarray(np.asarray(v[0])[np.ix_(*idx)])]

    return _dispatch(op, list(args), real)


def _fit_whole(
    op: nn.NNOp, args: list[np.ndarray], held: Sequence[Band], out: Band
) -> list[np.ndarray]:
    """Cut whole operands of an elementwise op that broadcast along an axis
    the band cuts (a per-channel parameter under a channel group, a
    full-width map under a 2D tile)."""
    full = nn.shape_of(op.results[0])
    rank = len(full)
    fitted = []
    for arr, band in zip(args, held):
        if band or not out:
            fitted.append(arr)
            continue
        lead = rank - arr.ndim
        index: list[slice] = [slice(None)] * arr.ndim
        for ax, (lo, hi) in out.items():
            a = ax - lead
            if 0 <= a < arr.ndim and arr.shape[a] == full[ax] != 1:
                index[a] = slice(lo, hi)
        fitted.append(arr[tuple(index)])
    return fitted


def compute(
    op: nn.NNOp, args: Sequence[np.ndarray], held: Sequence[Band], out: Band
) -> list[np.ndarray]:
    """The results of `op` over the band `out`, from operands that hold the
    bands `held` (one per operand; WHOLE for weights and whole reads)."""
    inp = held[0] if held else WHOLE
    # a rank-0 tensor lives in memory as one element of shape 1
    a: list[np.ndarray] = [
        np.asarray(x).reshape(()) if not nn.shape_of(v) and np.size(x) == 1 else x
        for x, v in zip(args, op.operands)
    ]
    kernel = kernel_for(type(op))
    if kernel is not None:
        res = kernel(op, a, inp, out)
    elif op.tiling() is TilingClass.RESHAPE:
        res = _reshape_like(op, a, inp, out)
    else:
        res = _on_fitted_operands(op, a, held, out)
    clamp = None if isinstance(op, nn.ConvOp) else clamp_of(op)
    if clamp is not None:  # an activation lower-gebp fused into an Add or a matrix product
        res = [K.clip(res[0], lo=clamp[0], hi=clamp[1]), *res[1:]]
    shapes = [_static(op).out_shape] if len(res) == 1 else [nn.shape_of(v) for v in op.results]
    for r, shape in zip(res, shapes):
        want = band_shape(shape, out)
        if tuple(r.shape) != want:
            raise BandError(f"{op.name}: the band result has shape {r.shape}, expected {want}")
    return res


@band_kernel(nn.ConvIntegerOp)
def _conv_integer(
    op: nn.ConvIntegerOp, args: list[np.ndarray], held: Band, out: Band
) -> list[np.ndarray]:
    """The integer accumulator of the band's window."""
    sl, pads, _ = _window_geometry(op, held, out, _static(op).out_shape)
    return [op.accumulate(args[0][sl], args[1], pads)]


@band_kernel(nn.GlobalAveragePoolOp)
def _global_average_pool(
    op: nn.GlobalAveragePoolOp, args: list[np.ndarray], held: Band, out: Band
) -> list[np.ndarray]:
    """Whole only: a band of it is accumulated (`accumulate`, `finish`)."""
    if out or held:
        raise BandError(f"{op.name}: an accumulated band runs through accumulate/finish")
    return op.reference(args)


@band_kernel(nn.FlattenOp, nn.ReshapeOp)
def _reshape_like(op: nn.NNOp, args: list[np.ndarray], held: Band, out: Band) -> list[np.ndarray]:
    """A band of a reshape-like op: one contiguous span; whole, the reference."""
    return _reshape(op, args, held, out) if (held or out) else op.reference(args)


def _on_fitted_operands(
    op: nn.NNOp, args: list[np.ndarray], held: Sequence[Band], out: Band
) -> list[np.ndarray]:
    """An op with no kernel of its own: its reference on the band, whole
    operands that broadcast cut to it (elementwise and whole-rows ops; a
    Gemm's row bias)."""
    a = args
    cls = op.tiling()
    if cls is TilingClass.WHOLE_ROWS:
        for axis in op.whole_axes():
            if axis in out:
                raise BandError(f"{op.name}: normalises along axis {axis}, which the band cuts")
    if cls in (TilingClass.POINTWISE, TilingClass.WHOLE_ROWS):
        a = _fit_whole(op, a, held, out)
    elif isinstance(op, nn.GemmOp) and out and not held[2] and a[2].ndim == 2:
        full = nn.shape_of(op.y)
        if a[2].shape[0] == full[0] != 1:
            a = [*a[:2], a[2][slice(*out.get(0, (0, full[0])))], *a[3:]]
    return op.reference(a)


# ---------------------------------------------------------------------------
# accumulated GlobalAveragePool


def accumulate(op: nn.GlobalAveragePoolOp, band: np.ndarray, acc: np.ndarray) -> None:
    """Add a band's sums over its positions to the accumulator `acc` (shape of
    the result's band: (N, 1[, 1], C or a channel group)), in acc's dtype.

    Why the dtype matters. The untiled reference sums the dequantized float32
    values in float64 and rounds the mean once. An int8 value dequantizes to
    x = fl32((q - zp) * s) with 1 <= |q - zp| <= 255 (or 0): |x| >= s, so x
    is a multiple of u = ulp(s), and |x| < 256 s < 2^32 u. Any sum of n such
    values is thus an integer multiple of u below n * 2^32 u, which float64
    holds exactly while n <= 2^21 positions per channel. So a float64
    accumulator holds every partial sum exactly, whatever the bands, and so
    does the reference's own pairwise float64 sum: the means are the same
    double, rounded the same way. A float32 accumulator (what `loop.accumulate`
    declares) keeps 24 bits: it rounds the running sum after every band, and
    where the quantized mean falls on a rounding tie the tiled result can be
    one step off the reference (tests pin such a case). Float32 inputs are
    summed in float64 either way, in another order than the reference's.
    """
    qx = nn.quant_of(op.input)
    if qx is not None and nn.requant_fixed(op):  # integer-only: sums of (q - zp)
        xi = np.asarray(band).astype(np.int64) - qx.zp_value
        part_i = xi.sum(axis=tuple(range(1, xi.ndim - 1)), keepdims=True)
        acc[...] = (acc.astype(np.int64) + part_i).astype(acc.dtype)
        return
    x = nn.dequantize_array(np.asarray(band), qx)
    axes = tuple(range(1, x.ndim - 1))
    part = x.sum(axis=axes, keepdims=True, dtype=np.float64)
    acc[...] = (acc.astype(np.float64) + part).astype(acc.dtype)


def finish(op: nn.GlobalAveragePoolOp, acc: np.ndarray) -> np.ndarray:
    """The pool's result from the accumulated sums: the sum over the count in
    float64, rounded once to float32 (as the reference's mean), then
    quantized like the reference's result."""
    if nn.quant_of(op.input) is not None and nn.requant_fixed(op):
        return op.finish_fixed(acc.astype(np.int64))
    shape = nn.shape_of(op.input)
    count = math.prod(shape[1:-1])
    mean = (acc.astype(np.float64) / count).astype(np.float32)
    t = cast(TensorType, op.output.type)
    out = nn.quantize_array(mean, t) if nn.quant_of(op.output) is not None else mean
    return np.asarray(out).astype(nn.dtype_of(op.output), copy=False)
