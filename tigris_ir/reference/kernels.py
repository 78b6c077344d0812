"""Numpy reference kernels, channels-last: the oracle of the compiler.

Every later level (the tiled interpreter, the loop level, the C output) is
checked against these functions, and they are checked against onnxruntime. So
they favour exactness and clarity over speed, while staying vectorised enough
to run a whole MobileNetV2 in seconds.

Layout. Feature maps are channels-last: (N, W, C) in 1D and (N, H, W, C) in 2D.
Convolution weights are (Cout, *kernel, Cin // group) ("OHWI"); transposed
convolution weights are (Cin, *kernel, Cout // group). Pads follow ONNX order:
every begin, then every end.

Float numerics. Float inputs are accumulated in float64 and the result is
rounded once to float32. Float64 rounding is far below float32's, so any
float32 implementation differs from the oracle by its own rounding error only,
whatever its summation order.

Integer numerics (THE int8 convention of the project, mirroring onnxruntime's
QLinear kernels; the tests see no difference at all, the contract is 1 LSB):

- Integer conv, conv_transpose and matmul take operands with their zero points
  already subtracted (int32 arrays, padding is 0) and return the exact int32
  accumulator, bias (int32) included. Sums are exact: in float64 when
  max|x| * max|w| * terms < 2**53 (every partial sum is then an integer float64
  holds exactly, so BLAS may be used), otherwise in int64. A result outside
  int32 raises OverflowError instead of wrapping.
- `quantize`: q = saturate(rint(float32(x) / float32(scale)) + zero_point), the
  division in float32, rint rounding half to even (onnxruntime QuantizeLinear).
- `dequantize`: float32(q - zero_point) * float32(scale) (DequantizeLinear).
- `requantize`: y = saturate(rint(float32(acc) * multiplier) + zero_point),
  multiplier float32, per tensor or per output channel (the last axis), the
  product in float32, half to even (MlasRequantizeOutput of QLinearConv and
  QLinearMatMul).
- `requantize_multiplier`: float32(float32(x_scale) * float32(w_scale)) /
  float32(y_scale), evaluated in float32 in that order, as QLinearConv does.

onnxruntime's uint8 x int8 kernels on AVX2 machines without VNNI saturate
pairs of products to int16 (vpmaddubsw); its quantizer then keeps weights to 7
bits (reduce_range). With full-range weights such a machine departs from this
convention, which is the exact one.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from numpy.typing import ArrayLike, DTypeLike, NDArray

Array = NDArray[Any]

_EXACT_FLOAT64 = 2**53
"""Integers below this magnitude, and all their partial sums, are exact in float64."""

# ---------------------------------------------------------------------------
# Shared helpers


def _is_int(a: Array) -> bool:
    return bool(np.issubdtype(a.dtype, np.integer))


def _max_abs_int(a: Array) -> int:
    """max |a| of an integer array as a Python int (no overflow on int8 -128)."""
    if a.size == 0:
        return 0
    return max(int(a.max()), -int(a.min()), 0)


def _operand_kind(*arrays: Array | None) -> bool:
    """True when the operands are integer; raise on a float/integer mix."""
    kinds = {_is_int(a) for a in arrays if a is not None}
    if len(kinds) != 1:
        raise TypeError("operands mix integer and float dtypes")
    return kinds.pop()


def _accumulator_dtype(integer: bool, bound: int) -> type[np.generic]:
    """float64 for floats, and for integers whose sums float64 holds exactly."""
    if not integer or bound < _EXACT_FLOAT64:
        return np.float64
    return np.int64


def _finish(acc: Array, bias: Array | None, integer: bool) -> Array:
    """Add the bias and round once: float32, or exactly-checked int32."""
    if not integer:
        if bias is not None:
            acc = acc + bias.astype(np.float64)
        return acc.astype(np.float32)
    acc = acc.astype(np.int64)
    if bias is not None:
        acc = acc + bias.astype(np.int64)
    if acc.size and (
        acc.max() > np.iinfo(np.int32).max or acc.min() < np.iinfo(np.int32).min
    ):
        raise OverflowError("integer accumulator does not fit int32")
    return acc.astype(np.int32)


def _ints(values: Sequence[int], n: int, what: str) -> tuple[int, ...]:
    out = tuple(int(v) for v in values)
    if len(out) != n:
        raise ValueError(f"{what} needs {n} values, got {len(out)}")
    return out


def _split_pads(pads: Sequence[int], n: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """ONNX pads (all begins, then all ends) as (begins, ends)."""
    p = _ints(pads, 2 * n, "pads")
    if min(p, default=0) < 0:
        raise ValueError("negative pads are not supported here")
    return p[:n], p[n:]


def _spatial_rank(x: Array) -> int:
    if x.ndim < 3:
        raise ValueError(f"expected (N, *spatial, C), got shape {x.shape}")
    return x.ndim - 2


def _pad_spatial(
    x: Array, begin: Sequence[int], end: Sequence[int], value: float | int
) -> Array:
    width = [(0, 0), *zip(begin, end, strict=True), (0, 0)]
    if not any(b or e for b, e in width):
        return x
    return np.pad(x, width, mode="constant", constant_values=value)


def _window_slices(
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    out: Sequence[int],
) -> Iterator[tuple[tuple[int, ...], tuple[slice, ...]]]:
    """Each kernel tap with the (N, *spatial, C) slice of padded input it reads."""
    for tap in itertools.product(*(range(k) for k in kernel)):
        spatial = tuple(
            slice(t * d, t * d + s * (o - 1) + 1, s)
            for t, d, s, o in zip(tap, dilations, strides, out, strict=True)
        )
        yield tap, (slice(None), *spatial, slice(None))


def _conv_out(size: int, k: int, s: int, d: int, pb: int, pe: int) -> int:
    return (size + pb + pe - ((k - 1) * d + 1)) // s + 1


# ---------------------------------------------------------------------------
# Convolutions


def conv(
    x: ArrayLike,
    w: ArrayLike,
    b: ArrayLike | None,
    *,
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    group: int,
) -> Array:
    """ONNX Conv, channels-last, the reference for every convolution.

    x (N, *spatial, Cin), w (Cout, *kernel, Cin // group), b (Cout,) or None.
    Float operands give float32 (float64 accumulation); integer operands (zero
    points already subtracted) give the exact int32 accumulator. General
    convolutions run as im2col + one matrix product per group; depthwise ones
    (one input channel per group) as a multiply-accumulate per kernel tap.
    """
    xa, wa = np.asarray(x), np.asarray(w)
    ba = None if b is None else np.asarray(b)
    n = _spatial_rank(xa)
    if wa.ndim != n + 2:
        raise ValueError(f"weight shape {wa.shape} does not match input {xa.shape}")
    integer = _operand_kind(xa, wa, ba)
    st = _ints(strides, n, "strides")
    dl = _ints(dilations, n, "dilations")
    pb, pe = _split_pads(pads, n)
    cin, cout, cg = xa.shape[-1], wa.shape[0], wa.shape[-1]
    kernel = wa.shape[1:-1]
    if group < 1 or cin != cg * group or cout % group:
        raise ValueError(f"group={group} does not fit Cin={cin}, w {wa.shape}")
    out = tuple(
        _conv_out(xa.shape[1 + i], kernel[i], st[i], dl[i], pb[i], pe[i])
        for i in range(n)
    )
    if min(out) < 1:
        raise ValueError(f"empty conv output {out}")
    terms = math.prod(kernel) * cg
    bound = _max_abs_int(xa) * _max_abs_int(wa) * terms if integer else 0
    acc_t = _accumulator_dtype(integer, bound)
    xp = _pad_spatial(xa.astype(acc_t), pb, pe, 0)
    wc = wa.astype(acc_t)
    if cg == 1:
        acc = _depthwise(xp, wc, st, dl, out)
    else:
        acc = _im2col(xp, wc, st, dl, out, group)
    return _finish(acc, ba, integer)


def _depthwise(
    xp: Array,
    w: Array,
    strides: Sequence[int],
    dilations: Sequence[int],
    out: Sequence[int],
) -> Array:
    """One input channel per group: a multiply-accumulate per kernel tap."""
    cout, mult = w.shape[0], w.shape[0] // xp.shape[-1]
    src = np.repeat(xp, mult, axis=-1) if mult > 1 else xp
    acc = np.zeros((xp.shape[0], *out, cout), dtype=xp.dtype)
    for tap, sl in _window_slices(w.shape[1:-1], strides, dilations, out):
        acc += src[sl] * w[(slice(None), *tap, 0)]
    return acc


def _im2col(
    xp: Array,
    w: Array,
    strides: Sequence[int],
    dilations: Sequence[int],
    out: Sequence[int],
    group: int,
    product: Callable[[Array, Array], Array] = np.matmul,
) -> Array:
    """General convolution: gather patches, then one matrix product per group
    (`product` of the (group, rows, k) patches and (group, k, n) weights)."""
    n = len(out)
    kernel = w.shape[1:-1]
    cout, cg = w.shape[0], w.shape[-1]
    extent = tuple((k - 1) * d + 1 for k, d in zip(kernel, dilations, strict=True))
    win = sliding_window_view(xp, extent, axis=tuple(range(1, n + 1)))
    # win: (N, *positions, C, *extent) -> (N, *out, C, *kernel)
    pick = (
        slice(None),
        *(slice(0, s * (o - 1) + 1, s) for s, o in zip(strides, out, strict=True)),
        slice(None),
        *(slice(None, None, d) for d in dilations),
    )
    patches = np.moveaxis(win[pick], n + 1, -1)  # (N, *out, *kernel, C)
    rows = xp.shape[0] * math.prod(out)
    patches = patches.reshape(*patches.shape[:-1], group, cg)
    patches = np.moveaxis(patches, -2, 0).reshape(group, rows, -1)
    wm = w.reshape(group, cout // group, -1).transpose(0, 2, 1)
    acc = product(patches, wm)  # (group, rows, Cout // group)
    return acc.transpose(1, 0, 2).reshape(xp.shape[0], *out, cout)


def conv_transpose(
    x: ArrayLike,
    w: ArrayLike,
    b: ArrayLike | None,
    *,
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    group: int,
    output_padding: Sequence[int],
) -> Array:
    """ONNX ConvTranspose, channels-last: the reference for upsampling convs.

    x (N, *spatial, Cin), w (Cin, *kernel, Cout // group). Output size per axis
    is stride*(in-1) + output_padding + (k-1)*dilation + 1 - pad_begin - pad_end.
    Computed as one matrix product of every input pixel with every tap, then a
    strided scatter-add per tap; numerics as for `conv`.
    """
    xa, wa = np.asarray(x), np.asarray(w)
    ba = None if b is None else np.asarray(b)
    n = _spatial_rank(xa)
    if wa.ndim != n + 2:
        raise ValueError(f"weight shape {wa.shape} does not match input {xa.shape}")
    integer = _operand_kind(xa, wa, ba)
    st = _ints(strides, n, "strides")
    dl = _ints(dilations, n, "dilations")
    op = _ints(output_padding, n, "output_padding")
    pb, pe = _split_pads(pads, n)
    cin, cog = xa.shape[-1], wa.shape[-1]
    kernel = wa.shape[1:-1]
    if group < 1 or wa.shape[0] != cin or cin % group:
        raise ValueError(f"group={group} does not fit Cin={cin}, w {wa.shape}")
    cg, cout, taps = cin // group, cog * group, math.prod(kernel)
    size_in = xa.shape[1:-1]
    full = tuple(
        st[i] * (size_in[i] - 1) + (kernel[i] - 1) * dl[i] + 1 + op[i] for i in range(n)
    )
    out = tuple(full[i] - pb[i] - pe[i] for i in range(n))
    if min(out) < 1:
        raise ValueError(f"empty conv_transpose output {out}")
    bound = _max_abs_int(xa) * _max_abs_int(wa) * cg * taps if integer else 0
    acc_t = _accumulator_dtype(integer, bound)
    rows = xa.shape[0] * math.prod(size_in)
    xm = xa.astype(acc_t).reshape(rows, group, cg).transpose(1, 0, 2)
    wm = wa.astype(acc_t).reshape(group, cg, taps * cog)
    prod = np.matmul(xm, wm).reshape(group, rows, taps, cog)
    prod = prod.transpose(2, 1, 0, 3).reshape(taps, xa.shape[0], *size_in, cout)
    acc = np.zeros((xa.shape[0], *full, cout), dtype=acc_t)
    for i, (_, sl) in enumerate(_window_slices(kernel, st, dl, size_in)):
        # input pixel j of tap t lands on t * dilation + j * stride
        acc[sl] += prod[i]
    crop = (
        slice(None),
        *(slice(pb[i], pb[i] + out[i]) for i in range(n)),
        slice(None),
    )
    return _finish(acc[crop], ba, integer)


# ---------------------------------------------------------------------------
# Pooling


def _pool_geometry(
    x: Array,
    kernel: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    ceil_mode: bool,
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """Output size, begin pads, ONNX end pads and end pads widened for ceil_mode.

    With ceil_mode a last window that would start in the end padding is dropped
    (as onnxruntime and PyTorch do).
    """
    n = _spatial_rank(x)
    k = _ints(kernel, n, "kernel")
    s = _ints(strides, n, "strides")
    d = _ints(dilations, n, "dilations")
    pb, pe = _split_pads(pads, n)
    out: list[int] = []
    wide: list[int] = []
    for i in range(n):
        size = x.shape[1 + i]
        span = size + pb[i] + pe[i] - ((k[i] - 1) * d[i] + 1)
        if span < 0:
            raise ValueError("pooling window larger than the padded input")
        o = -(-span // s[i]) + 1 if ceil_mode else span // s[i] + 1
        if ceil_mode and (o - 1) * s[i] >= size + pb[i]:
            o -= 1
        out.append(o)
        need = (o - 1) * s[i] + (k[i] - 1) * d[i] + 1
        wide.append(max(pe[i], need - size - pb[i]))
    return tuple(out), pb, pe, tuple(wide)


def max_pool(
    x: ArrayLike,
    *,
    kernel: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    ceil_mode: bool,
) -> Array:
    """ONNX MaxPool, channels-last, any float or integer dtype.

    Padding is the dtype's lowest value (-inf for floats), so it never wins.
    """
    xa = np.asarray(x)
    out, pb, _, wide = _pool_geometry(xa, kernel, strides, pads, dilations, ceil_mode)
    low = np.iinfo(xa.dtype).min if _is_int(xa) else -np.inf
    xp = _pad_spatial(xa, pb, wide, low)
    y: Array | None = None
    for _, sl in _window_slices(tuple(kernel), tuple(strides), tuple(dilations), out):
        y = xp[sl].copy() if y is None else np.maximum(y, xp[sl], out=y)
    assert y is not None
    return y


def avg_pool(
    x: ArrayLike,
    *,
    kernel: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    ceil_mode: bool,
    count_include_pad: bool,
) -> Array:
    """ONNX AveragePool, channels-last, float32.

    The divisor counts the taps inside the input, or with count_include_pad
    inside the input plus its explicit pads (never the extra ceil_mode area).
    """
    xa = np.asarray(x)
    if _is_int(xa):
        raise TypeError("avg_pool is a float kernel")
    total, count = avg_pool_parts(
        xa,
        kernel=kernel,
        strides=strides,
        pads=pads,
        ceil_mode=ceil_mode,
        count_include_pad=count_include_pad,
    )
    return (total / count).astype(np.float32)


def avg_pool_parts(
    x: ArrayLike,
    *,
    kernel: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    ceil_mode: bool,
    count_include_pad: bool,
) -> tuple[Array, Array]:
    """AveragePool's window sums (float64, padding 0) and divisors
    ((1, *out, 1), float64): exact for integer inputs below 2**53."""
    xa = np.asarray(x)
    n = _spatial_rank(xa)
    ones = (1,) * n
    out, pb, pe, wide = _pool_geometry(xa, kernel, strides, pads, ones, ceil_mode)
    xp = _pad_spatial(xa.astype(np.float64), pb, wide, 0.0)
    mask = np.ones((1, *xa.shape[1:-1], 1), dtype=np.float64)
    if count_include_pad:
        mask = _pad_spatial(mask, pb, pe, 1.0)
        extra = tuple(w - e for w, e in zip(wide, pe, strict=True))
        mask = _pad_spatial(mask, (0,) * n, extra, 0.0)
    else:
        mask = _pad_spatial(mask, pb, wide, 0.0)
    total = np.zeros((xa.shape[0], *out, xa.shape[-1]), dtype=np.float64)
    count = np.zeros((1, *out, 1), dtype=np.float64)
    for _, sl in _window_slices(tuple(kernel), tuple(strides), ones, out):
        total += xp[sl]
        count += mask[sl]
    return total, count


def global_avg_pool(x: ArrayLike) -> Array:
    """ONNX GlobalAveragePool, channels-last: (N, 1[, 1], C) float32."""
    xa = np.asarray(x)
    axes = tuple(range(1, _spatial_rank(xa) + 1))
    return xa.mean(axis=axes, keepdims=True, dtype=np.float64).astype(np.float32)


# ---------------------------------------------------------------------------
# Resize


def _source_coords(n_out: int, n_in: int, mode: str) -> Array:
    """ONNX Resize coordinate transform in float32, as onnxruntime evaluates it."""
    f = np.float32
    xo = np.arange(n_out, dtype=f)
    scale = f(n_out) / f(n_in)
    if mode == "half_pixel":
        return (xo + f(0.5)) / scale - f(0.5)
    if mode == "pytorch_half_pixel":
        if n_out == 1:
            return np.zeros(1, dtype=f)
        return (xo + f(0.5)) / scale - f(0.5)
    if mode == "align_corners":
        if n_out == 1:
            return np.zeros(1, dtype=f)
        return xo * f(n_in - 1) / f(n_out - 1)
    if mode == "asymmetric":
        return xo / scale
    if mode == "tf_half_pixel_for_nn":
        return (xo + f(0.5)) / scale
    raise ValueError(f"unsupported coordinate_transformation_mode {mode!r}")


def _nearest_index(coords: Array, nearest_mode: str, n_in: int) -> Array:
    """Round float32 source coordinates to input indices, clamped to the input.

    A coordinate within 1e-6 of a half counts as a tie, as in onnxruntime: the
    float32 transform misses exact ties (8 / float32(16 / 7) is 3.4999998).
    """
    c = coords.astype(np.float64)  # c - floor(c) and c + 0.5 are exact here
    below = np.floor(c)
    tie = np.abs(c - below - 0.5) <= float(np.float32(1e-6))
    if nearest_mode == "round_prefer_floor":
        idx = np.where(tie, below, np.floor(c + 0.5))
    elif nearest_mode == "round_prefer_ceil":
        idx = np.where(tie, below + 1.0, np.floor(c + 0.5))
    elif nearest_mode == "floor":
        idx = below
    elif nearest_mode == "ceil":
        idx = np.ceil(c)
    else:
        raise ValueError(f"unsupported nearest_mode {nearest_mode!r}")
    return np.clip(idx, 0, n_in - 1).astype(np.intp)


def _cubic_weights(frac: Array, a: float) -> Array:
    """Keys cubic convolution weights of the taps at offsets -1, 0, 1, 2."""
    t = np.stack([1.0 + frac, frac, 1.0 - frac, 2.0 - frac], axis=-1)
    near = ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0
    far = ((a * t - 5.0 * a) * t + 8.0 * a) * t - 4.0 * a
    return np.where(t <= 1.0, near, far)


def _along(v: Array, axis: int, ndim: int) -> Array:
    shape = [1] * ndim
    shape[axis] = v.shape[0]
    return v.reshape(shape)


def resize(
    x: ArrayLike,
    *,
    out_spatial: Sequence[int],
    mode: str,
    coordinate_transformation_mode: str,
    nearest_mode: str,
    cubic_coeff_a: float = -0.75,
) -> Array:
    """ONNX Resize (opset 13+) of the spatial axes, channels-last.

    Scale per axis is out/in. Modes "nearest" (any dtype), "linear" and
    "cubic" (float32; taps outside the input clamp to the edge, as with
    exclude_outside=0). Axes whose size does not change are left as they are,
    as onnxruntime does. Interpolation is separable, one axis at a time.
    """
    xa = np.asarray(x)
    n = _spatial_rank(xa)
    sizes = _ints(out_spatial, n, "out_spatial")
    if mode not in ("nearest", "linear", "cubic"):
        raise ValueError(f"unsupported resize mode {mode!r}")
    if mode != "nearest":
        if _is_int(xa):
            raise TypeError(f"{mode} resize is a float kernel")
        xa = xa.astype(np.float64)
    y = xa
    for i, n_out in enumerate(sizes):
        axis, n_in = 1 + i, xa.shape[1 + i]
        if n_out < 1:
            raise ValueError("resize output must be non-empty")
        if n_out == n_in:
            continue
        coords = _source_coords(n_out, n_in, coordinate_transformation_mode)
        if mode == "nearest":
            y = np.take(y, _nearest_index(coords, nearest_mode, n_in), axis=axis)
        elif mode == "linear":
            c = np.clip(coords.astype(np.float64), 0.0, n_in - 1)
            i0 = c.astype(np.intp)
            i1 = np.minimum(i0 + 1, n_in - 1)
            frac = _along(c - i0, axis, y.ndim)
            y = (
                np.take(y, i0, axis=axis) * (1.0 - frac)
                + np.take(y, i1, axis=axis) * frac
            )
        else:
            c = coords.astype(np.float64)
            base = np.floor(c)
            wts = _cubic_weights(c - base, cubic_coeff_a)
            acc = np.zeros(0)
            for tap in range(4):
                idx = np.clip(base.astype(np.intp) + tap - 1, 0, n_in - 1)
                term = np.take(y, idx, axis=axis) * _along(wts[:, tap], axis, y.ndim)
                acc = term if tap == 0 else acc + term
            y = acc
    return y.astype(np.float32) if mode != "nearest" else y


# ---------------------------------------------------------------------------
# Pad


def pad(
    x: ArrayLike, *, pads: Sequence[int], mode: str, value: float | int = 0
) -> Array:
    """ONNX Pad over every axis (all begins, then all ends); negative pads crop.

    Modes "constant" (with `value`), "reflect" (mirror without the edge),
    "edge" (repeat the edge) and "wrap" (the axis read as a cycle).
    """
    xa = np.asarray(x)
    p = _ints(pads, 2 * xa.ndim, "pads")
    begin, end = p[: xa.ndim], p[xa.ndim :]
    crop = tuple(
        slice(max(-b, 0), size - max(-e, 0))
        for b, e, size in zip(begin, end, xa.shape, strict=True)
    )
    xa = xa[crop]
    width = [(max(b, 0), max(e, 0)) for b, e in zip(begin, end, strict=True)]
    if mode == "constant":
        return np.pad(xa, width, mode="constant", constant_values=value)
    if mode in ("reflect", "edge", "wrap"):
        return np.pad(xa, width, mode=mode)
    raise ValueError(f"unsupported pad mode {mode!r}")


# ---------------------------------------------------------------------------
# Matrix products


def _exact_matmul(a: Array, b: Array) -> Array:
    """Exact int64 product of integer matrices (BLAS when float64 is exact)."""
    k = a.shape[-1]
    if _max_abs_int(a) * _max_abs_int(b) * k < _EXACT_FLOAT64:
        return np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(np.int64)
    return np.matmul(a.astype(np.int64), b.astype(np.int64))


def matmul(a: ArrayLike, b: ArrayLike) -> Array:
    """ONNX MatMul (numpy broadcasting and 1-D promotion).

    Float operands give float32 (float64 accumulation); integer operands give
    the exact int32 product (MatMulInteger with zero points subtracted).
    """
    aa, bb = np.asarray(a), np.asarray(b)
    if _operand_kind(aa, bb):
        return _finish(_exact_matmul(aa, bb), None, True)
    return np.matmul(aa.astype(np.float64), bb.astype(np.float64)).astype(np.float32)


def gemm(
    a: ArrayLike,
    b: ArrayLike,
    c: ArrayLike | None,
    *,
    alpha: float = 1.0,
    beta: float = 1.0,
    trans_a: bool = False,
    trans_b: bool = False,
) -> Array:
    """ONNX Gemm: alpha * A' @ B' + beta * C, float32 from float64 accumulation."""
    am = np.asarray(a, dtype=np.float64)
    bm = np.asarray(b, dtype=np.float64)
    if am.ndim != 2 or bm.ndim != 2:
        raise ValueError("gemm takes 2-D matrices")
    y = alpha * ((am.T if trans_a else am) @ (bm.T if trans_b else bm))
    if c is not None:
        y = y + beta * np.asarray(c, dtype=np.float64)
    return y.astype(np.float32)


# ---------------------------------------------------------------------------
# Softmax


def softmax(x: ArrayLike, *, axis: int) -> Array:
    """ONNX Softmax (opset 13) along one axis, max-subtracted for stability."""
    z = np.asarray(x, dtype=np.float64)
    z = z - z.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return (e / e.sum(axis=axis, keepdims=True)).astype(np.float32)


def log_softmax(x: ArrayLike, *, axis: int) -> Array:
    """ONNX LogSoftmax (opset 13) along one axis, max-subtracted for stability."""
    z = np.asarray(x, dtype=np.float64)
    z = z - z.max(axis=axis, keepdims=True)
    return (z - np.log(np.exp(z).sum(axis=axis, keepdims=True))).astype(np.float32)


# ---------------------------------------------------------------------------
# Elementwise


def _f64(x: ArrayLike) -> Array:
    return np.asarray(x, dtype=np.float64)


def relu(x: ArrayLike) -> Array:
    """max(x, 0), keeping the dtype."""
    xa = np.asarray(x)
    return np.maximum(xa, np.zeros((), dtype=xa.dtype))


def sigmoid(x: ArrayLike) -> Array:
    """1 / (1 + exp(-x)), written with exp(-|x|) so it never overflows."""
    xd = _f64(x)
    e = np.exp(-np.abs(xd))
    return np.where(xd >= 0, 1.0 / (1.0 + e), e / (1.0 + e)).astype(np.float32)


def tanh(x: ArrayLike) -> Array:
    """Hyperbolic tangent, float32."""
    return np.tanh(_f64(x)).astype(np.float32)


def hard_sigmoid(x: ArrayLike, *, alpha: float = 0.2, beta: float = 0.5) -> Array:
    """ONNX HardSigmoid: clip(alpha * x + beta, 0, 1)."""
    return np.clip(alpha * _f64(x) + beta, 0.0, 1.0).astype(np.float32)


def hard_swish(x: ArrayLike) -> Array:
    """ONNX HardSwish: x * hard_sigmoid(x, alpha=1/6, beta=0.5)."""
    xd = _f64(x)
    return (xd * np.clip(xd / 6.0 + 0.5, 0.0, 1.0)).astype(np.float32)


def leaky_relu(x: ArrayLike, *, alpha: float = 0.01) -> Array:
    """ONNX LeakyRelu: x, or alpha * x below zero."""
    xd = _f64(x)
    return np.where(xd >= 0, xd, alpha * xd).astype(np.float32)


def elu(x: ArrayLike, *, alpha: float = 1.0) -> Array:
    """ONNX Elu: x, or alpha * (exp(x) - 1) below zero."""
    xd = _f64(x)
    return np.where(xd > 0, xd, alpha * np.expm1(np.minimum(xd, 0.0))).astype(
        np.float32
    )


def _erf64(z: Array) -> Array:
    """erf in float64, absolute error below 1e-12 (numpy has no erf).

    |z| <= 5: the everywhere-convergent series
    erf(z) = 2/sqrt(pi) exp(-z^2) sum_n 2^n z^(2n+1) / (1*3*...*(2n+1)),
    whose terms are all positive (no cancellation), summed to 1e-17 relative.
    |z| > 5: 1 - erfc(z) with the asymptotic erfc series to z^-6; erfc(5) is
    1.5e-12 and the truncation is below 1e-4 of it.
    """
    a = np.abs(z)
    small = np.minimum(a, 5.0)
    a2 = small * small
    term = small.copy()
    total = small.copy()
    k = 0
    while np.any(term > 1e-17 * total):
        k += 1
        term = term * (2.0 * a2) / (2 * k + 1)
        total += term
    series = (2.0 / math.sqrt(math.pi)) * np.exp(-a2) * total
    big = np.maximum(a, 5.0)
    inv2 = 1.0 / (2.0 * big * big)
    tail = np.exp(-big * big) / (big * math.sqrt(math.pi))
    tail = tail * (1.0 - inv2 * (1.0 - 3.0 * inv2 * (1.0 - 5.0 * inv2)))
    return np.sign(z) * np.where(a <= 5.0, series, 1.0 - tail)


def erf(x: ArrayLike) -> Array:
    """ONNX Erf, float32 (see `_erf64` for the method)."""
    return _erf64(_f64(x)).astype(np.float32)


def gelu(x: ArrayLike, *, approximate: str = "none") -> Array:
    """ONNX Gelu (opset 20): x * Phi(x) exactly ("none") or its tanh form."""
    xd = _f64(x)
    if approximate == "none":
        y = 0.5 * xd * (1.0 + _erf64(xd / math.sqrt(2.0)))
    elif approximate == "tanh":
        inner = math.sqrt(2.0 / math.pi) * (xd + 0.044715 * xd**3)
        y = 0.5 * xd * (1.0 + np.tanh(inner))
    else:
        raise ValueError(f"unsupported gelu approximation {approximate!r}")
    return y.astype(np.float32)


def exp(x: ArrayLike) -> Array:
    """Exponential, float32."""
    return np.exp(_f64(x)).astype(np.float32)


def log(x: ArrayLike) -> Array:
    """Natural logarithm, float32."""
    return np.log(_f64(x)).astype(np.float32)


def sqrt(x: ArrayLike) -> Array:
    """Square root, float32."""
    return np.sqrt(_f64(x)).astype(np.float32)


def abs(x: ArrayLike) -> Array:
    """Absolute value, keeping the dtype."""
    return np.abs(np.asarray(x))


def floor(x: ArrayLike) -> Array:
    """Round down, float32."""
    return np.floor(np.asarray(x, dtype=np.float32))


def clip(x: ArrayLike, *, lo: float | None = None, hi: float | None = None) -> Array:
    """ONNX Clip: bounds are optional; keeps the dtype."""
    xa = np.asarray(x)
    if lo is not None:
        xa = np.maximum(xa, np.asarray(lo, dtype=xa.dtype))
    if hi is not None:
        xa = np.minimum(xa, np.asarray(hi, dtype=xa.dtype))
    return xa


def prelu(x: ArrayLike, slope: ArrayLike) -> Array:
    """ONNX PRelu: x, or slope * x below zero; slope broadcasts (channel last)."""
    xd = _f64(x)
    return np.where(xd >= 0, xd, _f64(slope) * xd).astype(np.float32)


def reduce(
    x: ArrayLike, *, kind: str, axes: Sequence[int] | None, keepdims: bool = True
) -> Array:
    """ONNX ReduceMean / Max / Min / Sum / L2 / Prod; axes None reduces every axis.

    Floats give float32 (float64 accumulation, one rounding); integers support
    "max" and "min" (same dtype) and "sum" (exact int32).
    """
    xa = np.asarray(x)
    ax = None if axes is None else tuple(int(a) for a in axes)
    if kind == "max":
        return np.asarray(np.max(xa, axis=ax, keepdims=keepdims))
    if kind == "min":
        return np.asarray(np.min(xa, axis=ax, keepdims=keepdims))
    if _is_int(xa):
        if kind == "sum":
            total = np.sum(xa.astype(np.int64), axis=ax, keepdims=keepdims)
            return _finish(np.asarray(total), None, True)
        raise TypeError(f"integer reduce supports max and sum, not {kind!r}")
    if kind in ("sum", "mean"):
        fn = np.sum if kind == "sum" else np.mean
        total = fn(xa, axis=ax, keepdims=keepdims, dtype=np.float64)
        return np.asarray(total).astype(np.float32)
    if kind == "l2":
        xd = xa.astype(np.float64)
        return np.asarray(np.sqrt(np.sum(xd * xd, axis=ax, keepdims=keepdims))).astype(np.float32)
    if kind == "prod":
        xd = xa.astype(np.float64)
        return np.asarray(np.prod(xd, axis=ax, keepdims=keepdims)).astype(np.float32)
    raise ValueError(f"unsupported reduce kind {kind!r}")


# ---------------------------------------------------------------------------
# Quantization


def saturate(v: ArrayLike, dtype: DTypeLike) -> Array:
    """Clamp to the range of an integer dtype (int8, uint8, int32, ...) and cast."""
    info = np.iinfo(dtype)
    return np.clip(np.asarray(v), info.min, info.max).astype(dtype)


def _per_axis(p: ArrayLike, ndim: int, axis: int | None, dt: DTypeLike) -> Array:
    """A scale or zero point shaped to broadcast along `axis` (or scalar)."""
    v = np.asarray(p, dtype=dt)
    if v.ndim == 0 or axis is None:
        return v
    return _along(v.reshape(-1), axis % ndim, ndim)


def quantize(
    x: ArrayLike,
    *,
    scale: ArrayLike,
    zero_point: ArrayLike,
    dtype: DTypeLike,
    axis: int | None = None,
) -> Array:
    """ONNX QuantizeLinear: saturate(rint(float32(x) / scale) + zero_point).

    The division is in float32 and rint rounds half to even, as onnxruntime
    does. A scale array with `axis` quantizes per channel along that axis.
    """
    xa = np.asarray(x, dtype=np.float32)
    s = _per_axis(scale, xa.ndim, axis, np.float32)
    zp = _per_axis(zero_point, xa.ndim, axis, np.int64)
    q = np.rint(xa / s)
    return saturate(q.astype(np.float64) + zp, dtype)


def dequantize(
    q: ArrayLike, *, scale: ArrayLike, zero_point: ArrayLike, axis: int | None = None
) -> Array:
    """ONNX DequantizeLinear: float32(q - zero_point) * float32(scale)."""
    qa = np.asarray(q)
    s = _per_axis(scale, qa.ndim, axis, np.float32)
    zp = _per_axis(zero_point, qa.ndim, axis, np.int64)
    return (qa.astype(np.int64) - zp).astype(np.float32) * s


def requantize(
    acc: ArrayLike, *, multiplier: ArrayLike, zero_point: ArrayLike, dtype: DTypeLike
) -> Array:
    """Map an int32 accumulator to int8/uint8: the project's one rounding rule.

    y = saturate(rint(float32(acc) * float32(multiplier)) + zero_point), the
    product in float32, half to even; multiplier is a scalar or per channel
    over the last axis. This is onnxruntime's MlasRequantizeOutput.
    """
    a = np.asarray(acc)
    if not _is_int(a):
        raise TypeError("requantize takes an integer accumulator")
    m = np.asarray(multiplier, dtype=np.float32)
    v = np.rint(a.astype(np.float32) * m)
    return saturate(
        v.astype(np.float64) + np.asarray(zero_point, dtype=np.int64), dtype
    )


def requantize_multiplier(
    x_scale: ArrayLike, w_scale: ArrayLike, y_scale: ArrayLike
) -> Array:
    """float32(x_scale * w_scale) / y_scale in float32, as QLinearConv forms it."""
    xs = np.asarray(x_scale, dtype=np.float32)
    ws = np.asarray(w_scale, dtype=np.float32)
    ys = np.asarray(y_scale, dtype=np.float32)
    return np.asarray((xs * ws) / ys, dtype=np.float32)


# ---------------------------------------------------------------------------
# Fixed-point requantization (integer-only int8 plans)
#
# The convention TFLite and CMSIS-NN document. A real multiplier r > 0 is
# stored as an int32 M in [2^30, 2^31) (Q31, the mantissa of r) and an
# exponent e with r = M 2^(e - 31), e = frexp(r)'s exponent. An int32 value
# x maps to
#
#   x1 = saturate_int32(x 2^max(e, 0))                the left shift
#   x2 = SRDHM(x1, M)                                 rounding doubling high multiply
#      = trunc((x1 M + nudge) / 2^31), nudge = 2^30 if x1 M >= 0 else 1 - 2^30
#      = floor((x1 M + 2^30) / 2^31)                  (ties toward +infinity;
#        the saturating case x1 = M = -2^31 never occurs: M >= 0)
#   x3 = RDBPOT(x2, max(-e, 0))                       rounding right shift
#      = (x2 >> k) + (rem > (mask >> 1) + (x2 < 0)), mask = 2^k - 1, rem = x2 & mask
#        (an arithmetic shift; half away from zero)
#   y  = saturate(x3 + zero_point)
#
# Worked numbers (tests/test_fixed_point.py): r = 0.0072474273 gives
# M = 1992157647, e = -7; x = 1000 gives x2 = 928, x3 = round(928 / 128) = 7,
# and 1000 r = 7.247. r below 2^-32 gives M = 0 (the result is the zero point).
# Each op's fixed definition is below; they make one rounding per
# requantization, so a result can differ from the float definition by one
# step where the two roundings disagree.

FIXED_ADD_SHIFT = 20
"""The left shift of Add/Sub operands before they are rescaled (TFLite's 20)."""

_I32_MIN, _I32_MAX = -(2**31), 2**31 - 1


def quantize_multiplier(real: ArrayLike) -> tuple[Array, Array]:
    """(M, e), int64 arrays: real = M 2^(e - 31), M in [2^30, 2^31) or 0.

    frexp of the float64 value; a mantissa that rounds up to 2^31 becomes
    2^30 with e + 1; r < 2^-32 (or r == 0) gives M = 0, e = 0. A negative or
    non-finite multiplier raises ValueError.
    """
    r = np.asarray(real, dtype=np.float64)
    if not np.all(np.isfinite(r)) or np.any(r < 0):
        raise ValueError(f"a fixed-point multiplier must be finite and >= 0, got {r}")
    f, e = np.frexp(r)
    m = np.rint(f * 2.0**31).astype(np.int64)
    up = m == 2**31
    m = np.where(up, 2**30, m)
    e = np.where(up, e + 1, e).astype(np.int64)
    tiny = (e < -31) | (m == 0)
    if np.any(e > 30):
        raise ValueError(f"a fixed-point multiplier must be below 2^30, got {r}")
    return np.where(tiny, 0, m), np.where(tiny, 0, e)


def _srdhm(a: Array, m: Array) -> Array:
    """SaturatingRoundingDoublingHighMul of int32 values (int64 arrays), m >= 0:
    round(a m / 2^31), ties toward +infinity."""
    ab = a * m
    r = ab + np.where(ab >= 0, 2**30, 1 - 2**30)
    return np.where(r >= 0, r >> 31, -((-r) >> 31))


def _rdbpot(x: Array, k: Array) -> Array:
    """RoundingDivideByPOT: x / 2^k rounded half away from zero, k >= 0."""
    mask = (np.int64(1) << k) - 1
    rem = x & mask
    thr = (mask >> 1) + (x < 0)
    return (x >> k) + (rem > thr)


def multiply_fixed(x: ArrayLike, m: ArrayLike, e: ArrayLike) -> Array:
    """x r of int32 values x for r = M 2^(e - 31) (the formula above, before
    the zero point): int64 array of int32 range."""
    xa = np.asarray(x).astype(np.int64)
    ma = np.asarray(m, dtype=np.int64)
    ea = np.asarray(e, dtype=np.int64)
    left = np.clip(np.maximum(ea, 0), 0, 31)
    x1 = np.clip(xa * (np.int64(1) << left), _I32_MIN, _I32_MAX)
    return _rdbpot(_srdhm(x1, ma), np.maximum(-ea, 0))


def requantize_fixed(
    acc: ArrayLike, *, real: ArrayLike, zero_point: ArrayLike, dtype: DTypeLike
) -> Array:
    """int32 accumulators to int8/uint8 by the fixed-point rule: y =
    saturate(multiply_fixed(acc, M, e) + zero_point), (M, e) =
    quantize_multiplier(real), real per tensor or per channel (last axis)."""
    a = np.asarray(acc)
    if not _is_int(a):
        raise TypeError("requantize_fixed takes an integer accumulator")
    m, e = quantize_multiplier(real)
    v = multiply_fixed(a, m, e)
    return saturate(v + np.asarray(zero_point, dtype=np.int64), dtype)


def add_fixed_params(s_a: float, s_b: float, s_y: float) -> dict[str, float]:
    """The real multipliers of the integer Add/Sub: each operand by
    s / (2 max(s_a, s_b)) after the left shift FIXED_ADD_SHIFT, the sum by
    2 max(s_a, s_b) / (2^FIXED_ADD_SHIFT s_y)."""
    twice = 2.0 * max(float(s_a), float(s_b))
    return {
        "a": float(s_a) / twice,
        "b": float(s_b) / twice,
        "y": twice / (2.0**FIXED_ADD_SHIFT * float(s_y)),
    }


def add_fixed(
    qa: ArrayLike,
    qb: ArrayLike,
    *,
    a: tuple[float, int],
    b: tuple[float, int],
    y: tuple[float, int],
    dtype: DTypeLike,
    sign: int = 1,
) -> Array:
    """int8 Add (sign 1) or Sub (sign -1) with two input scales, integers
    only (TFLite's rule): each (q - zp) shifted left by FIXED_ADD_SHIFT and
    rescaled to the common scale, summed, rescaled to the output. `a`, `b`,
    `y` are (scale, zero point)."""
    p = add_fixed_params(a[0], b[0], y[0])
    ma, ea = quantize_multiplier(p["a"])
    mb, eb = quantize_multiplier(p["b"])
    my, ey = quantize_multiplier(p["y"])
    da = (np.asarray(qa).astype(np.int64) - a[1]) << FIXED_ADD_SHIFT
    db = (np.asarray(qb).astype(np.int64) - b[1]) << FIXED_ADD_SHIFT
    s = multiply_fixed(da, ma, ea) + sign * multiply_fixed(db, mb, eb)
    return saturate(multiply_fixed(s, my, ey) + y[1], dtype)


def mul_fixed(
    qa: ArrayLike,
    qb: ArrayLike,
    *,
    a: tuple[float, int],
    b: tuple[float, int],
    y: tuple[float, int],
    dtype: DTypeLike,
) -> Array:
    """int8 Mul, integers only: (qa - za)(qb - zb), requantized by s_a s_b / s_y."""
    acc = (np.asarray(qa).astype(np.int64) - a[1]) * (np.asarray(qb).astype(np.int64) - b[1])
    real = mul_fixed_real(a[0], b[0], y[0])
    return requantize_fixed(acc, real=real, zero_point=y[1], dtype=dtype)


def mul_fixed_real(s_a: float, s_b: float, s_y: float) -> float:
    """The real multiplier of the integer Mul: s_a s_b / s_y in float64."""
    return float(np.float32(s_a)) * float(np.float32(s_b)) / float(np.float32(s_y))


def mean_fixed_real(s_x: float, s_y: float, count: ArrayLike) -> Array:
    """The real multipliers of an integer average: s_x / (s_y count) in float64."""
    n = np.asarray(count).astype(np.float64)
    return float(np.float32(s_x)) / (float(np.float32(s_y)) * n)


def mean_fixed(
    total: ArrayLike, count: ArrayLike, *, s_x: float, y: tuple[float, int], dtype: DTypeLike
) -> Array:
    """An average of int8 values, integers only: the int32 sum of (q - zp)
    over `count` terms requantized by s_x / (s_y count) (count broadcasts)."""
    t = np.asarray(total).astype(np.int64)
    n = np.asarray(count).astype(np.int64)
    if np.any(np.abs(t) > _I32_MAX):
        raise OverflowError("an int8 average's sum leaves int32")
    m, e = quantize_multiplier(mean_fixed_real(s_x, y[0], n))
    return saturate(multiply_fixed(t, m, e) + y[1], dtype)


# ---------------------------------------------------------------------------
# More elementwise functions (float64, one rounding to float32, unless said)


def neg(x: ArrayLike) -> Array:
    """-x, keeping the dtype."""
    return np.negative(np.asarray(x))


def reciprocal(x: ArrayLike) -> Array:
    """1 / x in float32 (correctly rounded, as C's float division)."""
    with np.errstate(divide="ignore"):
        return (np.float32(1.0) / np.asarray(x, dtype=np.float32)).astype(np.float32)


def softplus(x: ArrayLike) -> Array:
    """log(1 + exp(x)), written so that it never overflows."""
    xd = _f64(x)
    big = xd > 0
    y = np.where(big, xd, 0.0) + np.log1p(np.exp(-np.abs(xd)))
    return y.astype(np.float32)


def softsign(x: ArrayLike) -> Array:
    """x / (1 + |x|) in float32 operations."""
    xf = np.asarray(x, dtype=np.float32)
    return (xf / (np.float32(1.0) + np.abs(xf))).astype(np.float32)


def selu(x: ArrayLike, *, alpha: float, gamma: float) -> Array:
    """ONNX Selu: gamma * x above zero, gamma * alpha * (exp(x) - 1) below."""
    xd = _f64(x)
    y = np.where(xd > 0, gamma * xd, gamma * (alpha * np.expm1(np.minimum(xd, 0.0))))
    return y.astype(np.float32)


def sign(x: ArrayLike) -> Array:
    """-1, 0 or 1 (NaN stays NaN), keeping the dtype."""
    return np.sign(np.asarray(x))


def shrink(x: ArrayLike, *, bias: float, lambd: float) -> Array:
    """ONNX Shrink: x + bias below -lambd, x - bias above lambd, else 0 (float32)."""
    xf = np.asarray(x, dtype=np.float32)
    b, lam = np.float32(bias), np.float32(lambd)
    y = np.where(xf < -lam, xf + b, np.where(xf > lam, xf - b, np.float32(0.0)))
    return y.astype(np.float32)


def mish(x: ArrayLike) -> Array:
    """x * tanh(softplus(x))."""
    xd = _f64(x)
    sp = np.where(xd > 0, xd, 0.0) + np.log1p(np.exp(-np.abs(xd)))
    return (xd * np.tanh(sp)).astype(np.float32)


def power(a: ArrayLike, b: ArrayLike, *, multiply: bool = False) -> Array:
    """ONNX Pow as onnxruntime computes it, in the base's element type
    (float32, int32 or int64; the exponent float32 or an integer):

    - a ** b in float64, converted once to the base's type: rounded to
      float32, or truncated to the integer, where NaN and values outside its
      range give its minimum (what x86's conversion gives and onnxruntime
      returns);
    - with `multiply` (see `pow_multiplies`), an exponent equal to 2 or 3 is
      a * a or a * a * a in the base's type instead: float32 products, or
      integer ones wrapping modulo 2^n.
    """
    x = np.asarray(a)
    e = np.asarray(b)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        d = np.power(_f64(x), _f64(e))
        if x.dtype == np.float32:
            y = d.astype(np.float32)
        else:
            info = np.iinfo(x.dtype)
            d = _libm_past_2_53(d, x, e)
            t = np.trunc(d)
            ok = (t >= float(info.min)) & (t < -float(info.min))  # the bounds are exact
            y = np.where(ok, np.where(ok, t, 0).astype(x.dtype), x.dtype.type(info.min))
        if multiply:
            square = x * x
            y = np.where(e == 2, square, np.where(e == 3, square * x, y))
    return np.asarray(y, dtype=x.dtype)


def _libm_past_2_53(d: Array, x: Array, e: Array) -> Array:
    """`d` (numpy's float64 power of `x` and `e`) where its magnitude is
    below 2^53, and the C library's `pow` (what onnxruntime and the C call)
    where it is not: there a double's spacing is 2 or more, so the last
    place, which numpy's and the C library's `pow` may round differently,
    shows in the integer result."""
    big = np.isfinite(d) & (np.abs(d) >= 2.0**53)
    if not np.any(big):
        return d
    out = d.copy()
    xb, eb = np.broadcast_to(x, d.shape)[big], np.broadcast_to(e, d.shape)[big]
    out[big] = [math.pow(float(p), float(q)) for p, q in zip(xb, eb)]
    return out


def pow_multiplies(base: Sequence[int], exponent: Sequence[int]) -> bool:
    """Whether onnxruntime's CPU Pow multiplies for exponents 2 and 3 (its
    shortcut where the exponent is one value along the innermost span its
    broadcaster forms), from the ONNX shapes of the base and the exponent.

    The broadcaster starts at the innermost axis of the two shapes aligned
    right, passing over axes of extent 1 in both while more axes follow (a
    rank-0 operand stands for the other's last axis). When the base's extent
    there is 1 the base counts as the scalar (no shortcut); otherwise an
    exponent of extent 1 there is the scalar, and the shortcut applies."""
    sx, sy = tuple(base), tuple(exponent)
    if not sx or not sy:
        first = (sx[-1] if sx else 1, 1) if not sy else (1, sy[-1])
    else:
        n = min(len(sx), len(sy))
        first = (sx[-1], sy[-1])
        for i in range(n):
            first = (sx[-1 - i], sy[-1 - i])
            if max(first) > 1 or i + 1 == n:
                break
    return first[0] > 1 and first[1] <= 1


def divide_integers(a: ArrayLike, b: ArrayLike) -> Array:
    """ONNX Div of integers as onnxruntime computes it: the quotient
    truncated toward zero (C's division), in the operands' type. Where
    onnxruntime traps (SIGFPE) and ONNX defines nothing, this gives a value:
    0 for a zero divisor, and the type's minimum divided by -1 wraps to the
    minimum."""
    x, y = np.asarray(a), np.asarray(b)
    dt = x.dtype
    zero = y == 0
    d = np.where(zero, 1, y).astype(dt)
    if dt.kind == "i":
        d = np.where((x == np.iinfo(dt).min) & (d == -1), 1, d).astype(dt)
    # x - fmod(x, d) is an exact multiple of d nearer to zero: no overflow
    q = np.floor_divide(x - np.fmod(x, d), d)
    return np.where(zero, dt.type(0), q).astype(dt)



# ---------------------------------------------------------------------------
# int8 Softmax and LogSoftmax: one integer definition
#
# The reference, the interpreter and the C compute quantized Softmax and
# LogSoftmax with integers only, from tables made here once per op (the C
# receives the same tables as constant data), in the manner TFLite documents
# for its 8-bit Softmax: the exponentials of the 256 possible distances to the
# row's maximum are a table, the rest is integer arithmetic.
#
# Softmax along an axis, input scale s_x, output scale s_y and zero point z:
#   d      = max(q) - q                       0 <= d <= 255
#   E[d]   = rint(exp(-s_x d) 2^30)           int32 table (E[0] = 2^30)
#   S      = sum E[d]                         int64, S >= 2^30
#   P      = (E[d] 2^31 + S // 2) // S        the probability, Q31, rounded
#   R      = rint(2^16 / s_y)                 1 / s_y in Q16
#   y      = saturate(z + (P R + 2^46) >> 47)
# LogSoftmax, with the same E and S:
#   k      = floor(log2 S) >= 30;  m = S >> (k - 30), in [2^30, 2^31)
#   ln m   = Q24, T[i] + ((T[i+1] - T[i]) f) >> 22 with i, f the top 8 and
#            next 22 bits of m - 2^30, T[i] = rint(ln(1 + i/256) 2^24), i <= 256
#   L      = (k - 30) LN2 + ln m              ln(sum exp(-s_x d)) in Q24
#   A[d]   = rint(s_x d / s_y 2^16)           int64 table
#   y      = saturate(z + floor((2^15 - A[d] - (L R) >> 24) / 2^16))
# Every product stays below 2^63 when s_y >= 2^-15 and a row holds fewer than
# 2^32 elements; `softmax_tables` refuses other scales.

SOFTMAX_EXP_BITS = 30
SOFTMAX_PROB_BITS = 31
SOFTMAX_RECIP_BITS = 16
SOFTMAX_LN_BITS = 24
SOFTMAX_LN_SEGMENTS = 256
SOFTMAX_MIN_OUT_SCALE = 2.0**-15


def softmax_tables(s_x: float, s_y: float, log: bool) -> dict[str, Any]:
    """The constants of the integer Softmax (log=False) or LogSoftmax."""
    if not (s_y >= SOFTMAX_MIN_OUT_SCALE and math.isfinite(s_y)):
        raise ValueError(
            f"an int8 {'LogSoftmax' if log else 'Softmax'} needs an output scale >= 2^-15, "
            f"got {s_y}"
        )
    d = np.arange(256, dtype=np.float64)
    exp_t = np.rint(np.exp(-float(s_x) * d) * 2.0**SOFTMAX_EXP_BITS).astype(np.int32)
    recip = int(np.rint(2.0**SOFTMAX_RECIP_BITS / float(s_y)))
    out: dict[str, Any] = {"exp": exp_t, "recip": recip}
    if log:
        i = np.arange(SOFTMAX_LN_SEGMENTS + 1, dtype=np.float64)
        ln_t = np.rint(np.log1p(i / SOFTMAX_LN_SEGMENTS) * 2.0**SOFTMAX_LN_BITS).astype(np.int32)
        lin = np.rint(float(s_x) * d / float(s_y) * 2.0**SOFTMAX_RECIP_BITS).astype(np.int64)
        if int(lin[-1]) >= 2**52:
            raise ValueError(f"an int8 LogSoftmax of input scale {s_x} over {s_y} is out of range")
        out |= {
            "ln": ln_t,
            "ln2": int(np.rint(math.log(2.0) * 2.0**SOFTMAX_LN_BITS)),
            "lin": lin,
        }
    return out


def _floor_shift(v: Array, bits: int) -> Array:
    """floor(v / 2^bits) of int64 values (numpy's >> is an arithmetic shift)."""
    return np.right_shift(v, bits)


def softmax_quantized(
    q: ArrayLike, *, axis: int, s_x: float, s_y: float, zp_y: int, dtype: DTypeLike, log: bool
) -> Array:
    """int8 / uint8 Softmax or LogSoftmax of stored integers (the definition above)."""
    qa = np.asarray(q).astype(np.int64)
    t = softmax_tables(s_x, s_y, log)
    d = qa.max(axis=axis, keepdims=True) - qa
    e = t["exp"].astype(np.int64)[d]
    s = e.sum(axis=axis, keepdims=True)
    if np.any(s >= 2**62):
        raise OverflowError("a softmax row too long for the int64 sum")
    recip = np.int64(t["recip"])
    if not log:
        p = (e * np.int64(2**SOFTMAX_PROB_BITS) + s // 2) // s
        half = np.int64(1 << (SOFTMAX_PROB_BITS + SOFTMAX_RECIP_BITS - 1))
        y = np.right_shift(p * recip + half, SOFTMAX_PROB_BITS + SOFTMAX_RECIP_BITS)
        return saturate(y + zp_y, dtype)
    k = np.floor(np.log2(s.astype(np.float64))).astype(np.int64)
    # log2 in float64 can be off by one next to a power of two: correct it
    k = np.where(np.left_shift(np.int64(1), k) > s, k - 1, k)
    k = np.where(np.left_shift(np.int64(1), k + 1) <= s, k + 1, k)
    m = np.right_shift(s, k - SOFTMAX_EXP_BITS)
    frac_bits = SOFTMAX_EXP_BITS - 8
    f = m - np.int64(2**SOFTMAX_EXP_BITS)
    i = np.right_shift(f, frac_bits)
    r = f & np.int64((1 << frac_bits) - 1)
    ln_t = t["ln"].astype(np.int64)
    ln_m = ln_t[i] + np.right_shift((ln_t[i + 1] - ln_t[i]) * r, frac_bits)
    big_l = (k - SOFTMAX_EXP_BITS) * np.int64(t["ln2"]) + ln_m
    b = np.right_shift(big_l * recip, SOFTMAX_LN_BITS)
    v = np.int64(1 << (SOFTMAX_RECIP_BITS - 1)) - t["lin"][d] - b
    return saturate(_floor_shift(v, SOFTMAX_RECIP_BITS) + zp_y, dtype)


# ---------------------------------------------------------------------------
# Normalisations of the extended set (float64, one rounding)


def lrn(x: ArrayLike, *, size: int, alpha: float, beta: float, bias: float) -> Array:
    """ONNX LRN across the channels (the last axis here): x / (bias + alpha /
    size * sum of squares over the channel window)^beta; the window of channel
    c spans [c - floor((size - 1) / 2), c + ceil((size - 1) / 2)]."""
    xd = _f64(x)
    c = xd.shape[-1]
    lo, hi = (size - 1) // 2, -(-(size - 1) // 2)
    sq = xd * xd
    padded = np.pad(sq, [(0, 0)] * (xd.ndim - 1) + [(lo, hi)])
    total = np.zeros_like(xd)
    for k in range(size):
        total += padded[..., k : k + c]
    return (xd / (bias + (alpha / size) * total) ** beta).astype(np.float32)


def layer_norm(
    x: ArrayLike, scale: ArrayLike, bias: ArrayLike | None, *, axis: int, epsilon: float
) -> Array:
    """ONNX LayerNormalization: normalised over the axes from `axis` on, then
    scaled and shifted (scale and bias broadcast against those axes)."""
    xd = _f64(x)
    axes = tuple(range(axis % xd.ndim, xd.ndim))
    mean = xd.mean(axis=axes, keepdims=True)
    cen = xd - mean
    var = (cen * cen).mean(axis=axes, keepdims=True)
    y = cen / np.sqrt(var + epsilon) * _f64(scale)
    if bias is not None:
        y = y + _f64(bias)
    return y.astype(np.float32)


def instance_norm(x: ArrayLike, scale: ArrayLike, bias: ArrayLike, *, epsilon: float) -> Array:
    """ONNX InstanceNormalization, channels-last: per sample and channel over
    the spatial positions, then scale and bias per channel."""
    xd = _f64(x)
    axes = tuple(range(1, xd.ndim - 1))
    mean = xd.mean(axis=axes, keepdims=True)
    cen = xd - mean
    var = (cen * cen).mean(axis=axes, keepdims=True)
    return (cen / np.sqrt(var + epsilon) * _f64(scale) + _f64(bias)).astype(np.float32)


# ---------------------------------------------------------------------------
# Recurrent layers (ONNX LSTM and GRU, layout 0, default activations)
#
# float64 state and gates through the whole sequence, outputs rounded once
# to float32; per step and batch row the gate pre-activations are the bias
# sums, then the input products, then the recurrent products.


def _sigmoid64(v: Array) -> Array:
    e = np.exp(-np.abs(v))
    return np.where(v >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _directions(direction: str) -> list[bool]:
    """Per direction of the weights: True where it runs the sequence backwards."""
    return {"forward": [False], "reverse": [True], "bidirectional": [False, True]}[direction]


def lstm(
    x: ArrayLike,
    w: ArrayLike,
    r: ArrayLike,
    b: ArrayLike,
    h0: ArrayLike,
    c0: ArrayLike,
    *,
    direction: str,
) -> tuple[Array, Array, Array]:
    """ONNX LSTM (gates i, o, f, c): Y (seq, dirs, batch, hidden), Y_h, Y_c."""
    xd, wd, rd, bd = _f64(x), _f64(w), _f64(r), _f64(b)
    seq, batch, _ = xd.shape
    hidden = rd.shape[-1]
    ys = np.zeros((seq, len(_directions(direction)), batch, hidden))
    hs, cs = _f64(h0).copy(), _f64(c0).copy()
    for d, backwards in enumerate(_directions(direction)):
        bias = bd[d, : 4 * hidden] + bd[d, 4 * hidden :]
        h, c = hs[d], cs[d]
        for s in range(seq):
            t = seq - 1 - s if backwards else s
            g = bias + xd[t] @ wd[d].T + h @ rd[d].T
            i = _sigmoid64(g[:, :hidden])
            o = _sigmoid64(g[:, hidden : 2 * hidden])
            f = _sigmoid64(g[:, 2 * hidden : 3 * hidden])
            cand = np.tanh(g[:, 3 * hidden :])
            c = f * c + i * cand
            h = o * np.tanh(c)
            ys[t, d] = h
        hs[d], cs[d] = h, c
    return ys.astype(np.float32), hs.astype(np.float32), cs.astype(np.float32)


def gru(
    x: ArrayLike,
    w: ArrayLike,
    r: ArrayLike,
    b: ArrayLike,
    h0: ArrayLike,
    *,
    direction: str,
    linear_before_reset: bool,
) -> tuple[Array, Array]:
    """ONNX GRU (gates z, r, h): Y (seq, dirs, batch, hidden) and Y_h."""
    xd, wd, rd, bd = _f64(x), _f64(w), _f64(r), _f64(b)
    seq, batch, _ = xd.shape
    hidden = rd.shape[-1]
    ys = np.zeros((seq, len(_directions(direction)), batch, hidden))
    hs = _f64(h0).copy()
    for d, backwards in enumerate(_directions(direction)):
        wb, rb = bd[d, : 3 * hidden], bd[d, 3 * hidden :]
        h = hs[d]
        for s in range(seq):
            t = seq - 1 - s if backwards else s
            gx = wb + xd[t] @ wd[d].T
            z = _sigmoid64(gx[:, :hidden] + rb[:hidden] + h @ rd[d, :hidden].T)
            rr = _sigmoid64(gx[:, hidden : 2 * hidden] + rb[hidden : 2 * hidden]
                            + h @ rd[d, hidden : 2 * hidden].T)
            rh = rd[d, 2 * hidden :]
            if linear_before_reset:
                cand = np.tanh(gx[:, 2 * hidden :] + rr * (rb[2 * hidden :] + h @ rh.T))
            else:
                cand = np.tanh(gx[:, 2 * hidden :] + rb[2 * hidden :] + (rr * h) @ rh.T)
            h = (1.0 - z) * cand + z * h
            ys[t, d] = h
        hs[d] = h
    return ys.astype(np.float32), hs.astype(np.float32)


# ---------------------------------------------------------------------------
# Integer and boolean data


def cast(x: ArrayLike, dtype: np.dtype | type) -> Array:
    """ONNX Cast, defined where ONNX leaves it open: anything to bool is
    `x != 0` (NaN is true); a float to an integer type truncates toward zero
    and saturates at the type's range, NaN becoming 0; integers narrow modulo
    2^n (two's complement); integers to float32 round to nearest."""
    xa = np.asarray(x)
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return np.asarray(xa != 0)
    if xa.dtype == np.bool_ or dt.kind == "f" or xa.dtype.kind in "iu":
        return xa.astype(dt)
    info = np.iinfo(dt)
    t = np.trunc(xa.astype(np.float64))
    lo, hi = float(info.min), float(info.max) + 1.0  # hi: exclusive, exact in float64
    inside = (t >= lo) & (t < hi)
    out = np.where(inside, t, 0.0).astype(dt)
    out[t >= hi] = info.max
    out[t < lo] = info.min
    return out


def arg_reduce(
    x: ArrayLike, *, axis: int, largest: bool, last: bool, keepdims: bool
) -> Array:
    """ONNX ArgMax / ArgMin as int64: the first extreme index along `axis`
    (the last with `last`), a NaN being the extreme (numpy's rule)."""
    xa = np.asarray(x)
    if last:
        xa = np.flip(xa, axis=axis)
    idx = np.argmax(xa, axis=axis) if largest else np.argmin(xa, axis=axis)
    idx = idx.astype(np.int64)
    if last:
        idx = np.int64(xa.shape[axis] - 1) - idx
    if keepdims:
        idx = np.expand_dims(idx, axis)
    return np.ascontiguousarray(idx)


def top_k(x: ArrayLike, *, k: int, axis: int, largest: bool) -> tuple[Array, Array]:
    """ONNX TopK: the `k` largest (or smallest) values along `axis` and their
    int64 indices, in order, ties taking the lower index first, a NaN counting
    as larger than every number (first when largest, last otherwise)."""
    xa = np.moveaxis(np.asarray(x), axis, -1)
    n = xa.shape[-1]
    if np.issubdtype(xa.dtype, np.floating):
        nan = np.isnan(xa)
        key = np.where(nan, 0.0, -xa.astype(np.float64) if largest else xa)
    else:  # ~v reverses the order of int64 without overflow
        nan = np.zeros(xa.shape, bool)
        wide = xa.astype(np.int64)
        key = ~wide if largest else wide
    pos = np.broadcast_to(np.arange(n), xa.shape)
    nan_rank = ~nan if largest else nan
    order = np.lexsort((pos, key, nan_rank), axis=-1)[..., :k]
    values = np.take_along_axis(xa, order, axis=-1)
    return (
        np.ascontiguousarray(np.moveaxis(values, -1, axis)),
        np.ascontiguousarray(np.moveaxis(order.astype(np.int64), -1, axis)),
    )


def take(data: ArrayLike, indices: ArrayLike, *, axis: int, what: str = "Gather") -> Array:
    """ONNX Gather: numpy's take along `axis`, negative indices counted from
    the end; an index outside [-n, n) raises ValueError."""
    d, i = np.asarray(data), np.asarray(indices).astype(np.int64)
    n = d.shape[axis]
    if i.size and (int(i.min()) < -n or int(i.max()) >= n):
        bad = int(i[(i < -n) | (i >= n)].reshape(-1)[0])
        raise ValueError(f"{what}: index {bad} is outside [-{n}, {n}) along axis {axis}")
    return np.ascontiguousarray(np.take(d, np.where(i < 0, i + n, i), axis=axis))
