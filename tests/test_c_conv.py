"""The printed C of convolution and matrix-product bands against `band_exec`.

Every case prints one band op through its `c_conv` emitter, compiles it with
the bounds checks on (every row a kernel reads must lie in the held band) and
compares with `band_exec.compute` on the same band: float32 within a relative
1e-5 of the largest reference value, int8 bit-exact. Compiled builds are
reused across the bands of an op (the band is a runtime argument), and the
cases of a test are printed together into one unit per processor.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest
from c_band_check import BandCase, band_args, default_kernel, make_op, run_band, run_bands
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute

from tigris_ir.backend.c import band as c_band
from tigris_ir.backend.c import conv as c_conv
from tigris_ir.dialects import nn
from tigris_ir.dialects.rtile import PackOp, kernel_of
from tigris_ir.interp import band_exec
from tigris_ir.plan.band import Band
from tigris_ir.plan.tiling import TRANSPOSED, WINDOW, map_range
from tigris_ir.rtile.targets import host_target

PORTABLE = ("-DTIGRIS_PORTABLE",)
U8 = (np.uint8, 0.05, 128, np.uint8, 0.1, 120)
I8 = (np.int8, 0.04, -3, np.int8, 0.08, 5)
Quant = tuple[type, float, int, type, float, int]

# ---------------------------------------------------------------------------
# ops and operands


def f32(*shape: int) -> TensorType:
    return nn.tensor_type(shape, np.float32)


def conv(
    x: Sequence[int],
    cout: int,
    k: Sequence[int],
    *,
    s: int | Sequence[int] = 1,
    d: int | Sequence[int] = 1,
    pads: Sequence[int] = (),
    group: int = 1,
    quant: Quant | None = None,
    per_tensor: bool = False,
    transpose: bool = False,
    out_pad: Sequence[int] = (),
) -> nn.NNOp:
    """A (transposed) convolution on block arguments, float32 or int8."""
    n = len(k)
    cin = x[-1]
    ss = (s,) * n if isinstance(s, int) else tuple(s)
    dd = (d,) * n if isinstance(d, int) else tuple(d)
    wshape = (cin, *k, cout // group) if transpose else (cout, *k, cin // group)
    props: dict[str, Attribute] = {
        "kernel": nn.ints_prop(k),
        "strides": nn.ints_prop(ss),
        "dilations": nn.ints_prop(dd),
        "pads": nn.ints_prop(tuple(pads) or (0,) * (2 * n)),
        "group": nn.int_prop(group),
    }
    if out_pad:
        props["output_padding"] = nn.ints_prop(out_pad)
    cls = nn.ConvTransposeOp if transpose else nn.ConvOp
    floats = [f32(*x), f32(*wshape), f32(cout)]
    if quant is None:
        return make_op(cls, floats, None, props)
    xt, sx, zx, yt, sy, zy = quant
    shape = nn.shape_of(make_op(cls, floats, None, props).results[0])
    operands = [
        nn.tensor_type(x, xt, nn.QuantAttr(sx, zx)),
        nn.tensor_type(wshape, np.int8),
        nn.tensor_type((cout,), np.int32),
        f32(1 if per_tensor else cout),
    ]
    return make_op(cls, operands, [nn.tensor_type(shape, yt, nn.QuantAttr(sy, zy))], props)


def operands(op: nn.NNOp, seed: int = 0) -> list[np.ndarray]:
    """Random operands; int8 weight scales sized so requantized values spread
    over the output range instead of saturating."""
    rng = np.random.default_rng(seed)
    out = []
    for i, v in enumerate(op.operands):
        dt, shape = nn.dtype_of(v), nn.shape_of(v)
        if dt == np.float32 and i == 3:
            terms = math.prod(nn.shape_of(op.operands[1])[1:])
            scale = 0.02 / math.sqrt(terms)
            out.append((rng.uniform(0.5, 1.5, shape) * scale).astype(np.float32))
        elif dt == np.float32:
            out.append(rng.standard_normal(shape).astype(np.float32))
        elif dt == np.int32:
            out.append(rng.integers(-3000, 3000, shape).astype(np.int32))
        else:
            info = np.iinfo(dt)
            out.append(rng.integers(info.min, info.max + 1, shape).astype(dt))
    return out


def held_for(op: nn.NNOp, out: Band, grow: int = 0) -> Band:
    """The input rows (and columns) the output band reads, widened by `grow`
    rows on each side where the image has them."""
    size = nn.shape_of(op.operands[0])
    oshape = nn.shape_of(op.results[0])
    held: dict[int, tuple[int, int]] = {}
    assert isinstance(op, nn.WindowOp)
    k, s, d, p = op.kernel(), op.strides(), op.dilations(), op.pads()
    for ax in out:
        i = ax - 1
        a, b = out[ax]
        code = TRANSPOSED if isinstance(op, nn.ConvTransposeOp) else WINDOW
        lo, hi = map_range((code, k[i], s[i], d[i], p[i]), a, b, size[ax])
        if b <= a or oshape[ax] == 0:
            lo = hi = 0
        held[ax] = (max(0, lo - grow), min(size[ax], hi + grow))
    return held


def same(op: nn.NNOp, got: np.ndarray, want: np.ndarray, what: str = "") -> None:
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape, what)
    if want.dtype == np.float32:
        scale = max(float(np.abs(want).max(initial=0.0)), 1e-30)
        err = float(np.abs(got - want).max(initial=0.0)) / scale
        assert err <= 1e-5, f"{op.name} {what}: relative error {err:.3g}"
    else:
        bad = np.argwhere(got != want)
        assert bad.size == 0, f"{op.name} {what}: {len(bad)} values differ, first at {bad[0]}"


class Batch:
    """Band cases printed together (one translation unit per processor,
    compiled in parallel by `run_bands`), each compared with band_exec."""

    def __init__(self, flags: Sequence[str] = ()) -> None:
        self.flags = tuple(flags)
        self.cases: list[BandCase] = []
        self.wants: list[np.ndarray] = []

    def add(
        self,
        op: nn.NNOp,
        bands: Sequence[tuple[Band, Band]],
        *,
        seed: int = 0,
        consts: Sequence[bool] | None = None,
        whole: list[np.ndarray] | None = None,
        held_of: Sequence[Band] | None = None,
    ) -> Batch:
        """Each (held, out) band of op's first operand (the others whole, or
        as `held_of` says), cut from random whole operands."""
        args = whole if whole is not None else operands(op, seed)
        for held0, out in bands:
            held = [held0, *(held_of or [{} for _ in args[1:]])]
            cut = band_args(op, args, held)
            self.wants.append(band_exec.compute(op, cut, held, out)[0])
            self.cases.append(BandCase(op, cut, held, out, consts=consts))
        return self

    def run(self) -> None:
        for case, got, want in zip(self.cases, run_bands(self.cases, self.flags), self.wants):
            same(case.op, got[0], want, f"held {dict(case.held[0])} out {dict(case.out)}")


def row_bands(op: nn.NNOp, grow: int = 0, cols: bool | None = None) -> list[tuple[Band, Band]]:
    """First, interior and last row bands, and the whole tensor; for a 2D
    map also a 2D tile. A 2D map's row bands cut the columns too (whole
    rows), so that every band of the op shares one compiled build, unless
    `cols` is False (then no tiles either)."""
    shape = nn.shape_of(op.results[0])
    h = shape[1]
    spans = {(0, min(2, h)), (max(0, h - 2), h), (0, h)}
    if h > 3:
        spans.add((1, h - 1))
    if h > 4:
        spans.add((2, 3))
    tiled = len(shape) == 4 and cols is not False
    outs: list[Band] = [{1: sp, 2: (0, shape[2])} if tiled else {1: sp} for sp in sorted(spans)]
    if tiled:  # a tile off the top-left corner, on the bottom and right borders
        oh, ow = shape[1:3]
        outs.append({1: (min(1, oh - 1), oh), 2: (min(1, ow - 1), ow)})
    return [(held_for(op, o, grow), o) for o in outs]


# ---------------------------------------------------------------------------
# convolutions

QUANTS = pytest.mark.parametrize("quant", [None, U8, I8], ids=["f32", "u8", "i8"])


def ragged(op: nn.NNOp) -> list[tuple[Band, Band]]:
    """Bands of 1, 2, 3, 5 and all 13 rows of a one-column map: every row
    tail of the micro-kernel, and more than one full tile."""
    spans = ((0, 1), (5, 7), (10, 13), (1, 6), (0, 13))
    return [({1: sp}, {1: sp}) for sp in spans]


@QUANTS
def test_pointwise(quant: Quant | None) -> None:
    """Row bands, 2D tiles, ragged pixel counts (Cout below one vector, one
    vector, full panels and a tail), bands of more rows than one block of
    the driver (64) and, for float32, deeper than one K block."""
    b = Batch()
    op = conv((1, 6, 7, 17), 27, (1, 1), quant=quant)
    b.add(op, row_bands(op))
    b.add(op, row_bands(op, cols=False))
    for cout in (5, 8, 40):
        op = conv((1, 13, 1, 9), cout, (1, 1), quant=quant)
        b.add(op, ragged(op), seed=cout)
    op = conv((1, 10, 13, 700), 30, (1, 1), quant=quant)
    b.add(op, [({1: (1, 10)}, {1: (1, 10)}), ({1: (0, 10)}, {1: (0, 10)})])
    op = conv((2, 9, 12), 10, (1,), quant=quant)
    b.add(op, [({1: (2, 7)}, {1: (2, 7)}), ({1: (0, 9)}, {1: (0, 9)})])
    b.run()


@QUANTS
def test_depthwise(quant: Quant | None) -> None:
    """3x3 stride 1 and 2 (a 4-vector block, a smaller one and a scalar
    channel tail), asymmetric pads, held bands wider than needed, a dilated 1D
    kernel whose taps skip rows."""
    b = Batch()
    op = conv((1, 9, 10, 44), 44, (3, 3), pads=(1, 1, 1, 1), group=44, quant=quant)
    b.add(op, row_bands(op, grow=1))
    op = conv((1, 9, 11, 20), 20, (3, 3), s=2, pads=(1, 0, 1, 1), group=20, quant=quant)
    b.add(op, row_bands(op))
    op = conv((1, 20, 12), 12, (5,), d=3, pads=(5, 2), group=12, quant=quant)
    b.add(op, row_bands(op))
    op = conv((1, 5, 6, 64), 64, (3, 3), pads=(1, 1, 1, 1), group=64, quant=quant)
    b.add(op, row_bands(op)[::2])
    b.run()


def test_depthwise_row_kernel() -> None:
    """float32 rows wide enough for whole blocks of pixels (the row kernel:
    each input vector loaded once per block) inside the image, at its left
    and right edges and in the padding's columns, a partial block after
    them; stride 2 and dilation 2; a tile starting mid-row; channels of
    whole vectors (the row kernel) and with a scalar tail (never it)."""
    b = Batch()
    for shape, k in (((1, 6, 27, 32), {}), ((1, 5, 40, 48), {"s": 2}), ((1, 7, 30, 16), {"d": 2})):
        pads = (2, 2, 2, 2) if k.get("d") else (1, 1, 1, 1)
        op = conv(shape, shape[-1], (3, 3), pads=pads, group=shape[-1], **k)
        w = nn.shape_of(op.results[0])[2]
        bands = row_bands(op, grow=1)
        bands.append((held_for(op, {1: (1, 3), 2: (3, w - 2)}), {1: (1, 3), 2: (3, w - 2)}))
        b.add(op, bands)
    op = conv((1, 4, 26, 36), 36, (3, 3), pads=(1, 1, 1, 1), group=36)
    b.add(op, row_bands(op))
    b.run()


def test_depthwise_blocks_fit_the_row() -> None:
    """float32 depthwise blocks are as wide as the output where it is narrower
    than DW_PIXELS (a 7-wide map: whole blocks of 7 through the row kernel),
    and a row's last partial block, where the row holds a whole one, is the
    whole block ending with the row (13 = 8 + 5: the pixels 5 to 7 computed
    twice, to the same sums); the C equals the reference on every band,
    narrow column tiles (no whole block) included."""
    from tigris_ir.passes.lower_gebp import state_depthwise
    from tigris_ir.rtile import kernel as rk
    from tigris_ir.rtile.targets import get_target

    host = get_target("host")
    assert rk.depthwise_plan(host, 9, False, 7).pixels == 7
    assert rk.depthwise_plan(host, 9, False, 13).pixels == rk.DW_PIXELS
    assert rk.depthwise_plan(host, 9, False).pixels == rk.DW_PIXELS
    assert rk.depthwise_plan(host, 9, True, 7).pixels == 1  # int8: one pixel a step
    b = Batch()
    for shape, k in (((1, 7, 7, 32), {}), ((1, 6, 13, 16), {}), ((1, 9, 14, 32), {"s": 2})):
        op = conv(shape, shape[-1], (3, 3), pads=(1, 1, 1, 1), group=shape[-1], **k)
        assert isinstance(op, nn.ConvOp)
        state_depthwise(op)
        w = nn.shape_of(op.results[0])[2]
        assert f"pixels = {min(rk.DW_PIXELS, w)} : i64" in str(op.attributes["rtile.depthwise"])
        b.add(op, row_bands(op, grow=1))
    b.run()


def test_depthwise_column_tiles_end_in_half_blocks() -> None:
    """float32 column tiles of a 24-wide map, as column bands cut it: 19
    columns (8 + 8 + 3) end in the half block ending with the tile (a pixel
    computed twice, to the same sums), 12 (8 + 4) in an exact half block, 4
    in one alone, 19 from column 5 at the right edge in the padding (the
    taps' pointers there); the C equals the reference on each."""
    b = Batch()
    op = conv((1, 6, 24, 32), 32, (3, 3), pads=(1, 1, 1, 1), group=32)
    bands = []
    for lo, hi in ((3, 22), (0, 12), (10, 14), (5, 24)):
        out = {1: (1, 4), 2: (lo, hi)}
        bands.append((held_for(op, out), out))
    b.add(op, bands)
    b.run()


@pytest.mark.parametrize("quant", [U8, I8], ids=["u8", "i8"])
def test_depthwise_int8_without_avx512(quant: Quant) -> None:
    """The int8 depthwise kernel where the host has AVX2 but not AVX-512
    (eight int32 lanes) computes the same bands as the AVX-512 one does
    (int16 pair products over 32 channels, a masked channel tail)."""
    if host_target().isa != "avx512":
        pytest.skip("the host has no AVX-512: the default build already runs AVX2")
    b = Batch(("-mno-avx512f",))
    for c in (44, 64):
        op = conv((1, 9, 10, c), c, (3, 3), pads=(1, 1, 1, 1), group=c, quant=quant)
        b.add(op, row_bands(op, grow=1)[::2])
    b.run()


@QUANTS
def test_general(quant: Quant | None) -> None:
    """im2col blocks: stride 2 with asymmetric pads, dilations 2 and 3 with
    groups, 1D strided and dilated, a channel multiplier, per-tensor weight
    scales, rows of more pixels than one block."""
    b = Batch()
    op = conv((1, 11, 9, 3), 12, (3, 3), s=2, pads=(1, 0, 0, 2), quant=quant)
    b.add(op, row_bands(op))
    op = conv((1, 12, 10, 8), 12, (3, 2), d=(2, 3), pads=(2, 3, 3, 1), group=2, quant=quant)
    b.add(op, row_bands(op, grow=1))
    op = conv((1, 23, 6), 9, (4,), s=2, d=2, pads=(3, 1), quant=quant)
    b.add(op, row_bands(op))
    op = conv((1, 7, 7, 4), 8, (3, 3), pads=(1, 1, 1, 1), group=4, quant=quant)
    b.add(op, row_bands(op, cols=False))
    op = conv((1, 3, 100, 40), 9, (3, 3), pads=(1, 1, 1, 1), quant=quant)
    b.add(op, row_bands(op, cols=False)[:2])
    if quant is not None:
        op = conv((1, 7, 6, 10), 16, (3, 3), pads=(1, 1, 1, 1), quant=quant, per_tensor=True)
        b.add(op, row_bands(op, cols=False))
    b.run()


def _packing(op: nn.NNOp) -> str:
    """How the op's kernel (the model's default tile, lower-gebp) reaches A."""
    default_kernel(op)
    kern = kernel_of(op)
    assert kern is not None
    pack = next((o for o in kern.walk() if isinstance(o, PackOp)), None)
    return pack.kind.data if pack is not None else ""


def test_window() -> None:
    """float32 convolutions whose kernel rows are runs of at least 16 input
    values read their pixels' windows in place (lower-gebp's "window"
    packing; at stride 1 those of fewer than 8 channels: more run Winograd's
    F(4, 3)), the pixels whose window leaves the image gathered: stride 2
    with asymmetric pads, 2D tiles, held bands wider than needed, a 1D map, a
    1x1 stride-2 projection, a row of more pixels than one block; int8 ones
    keep their gathered rows."""
    b = Batch()
    for op in (
        conv((1, 9, 11, 8), 12, (3, 3), s=2, pads=(1, 2, 0, 1)),
        conv((1, 7, 10, 7), 16, (3, 3), pads=(1, 1, 1, 1)),
        conv((1, 20, 24), 8, (3,), pads=(1, 1)),
        conv((1, 8, 8, 16), 32, (1, 1), s=2),
        conv((1, 3, 100, 7), 9, (3, 3), pads=(1, 1, 1, 1)),
    ):
        assert _packing(op) == "window", op
        b.add(op, row_bands(op, grow=1))
    b.run()
    assert _packing(conv((1, 7, 10, 16), 16, (3, 3), pads=(1, 1, 1, 1))) == "winograd"
    assert _packing(conv((1, 7, 10, 16), 16, (3, 3), pads=(1, 1, 1, 1), quant=U8)) == "im2col"
    assert _packing(conv((1, 9, 11, 3), 12, (3, 3), s=2, pads=(1, 0, 0, 2))) == "im2col"


def test_winograd() -> None:
    """float32 convolutions three taps wide at stride and dilation 1 along the
    width, of at least 8 channels, run Winograd's F(4, 3) along the width, and
    their bands equal the direct product (band_exec before any kernel): held
    bands wider than needed, 2D tiles whose rows end in partial tiles, pads
    of 0 and 2 along the width, stride and dilation along the height, a
    kernel one row high, more tiles to a row than one row block."""
    b = Batch()
    for op in (
        conv((1, 7, 10, 16), 16, (3, 3), pads=(1, 1, 1, 1)),
        conv((1, 9, 11, 8), 12, (3, 3), s=(2, 1), pads=(1, 0, 0, 2)),
        conv((1, 9, 13, 8), 8, (3, 3), d=(2, 1), pads=(2, 1, 2, 1)),
        conv((1, 5, 9, 8), 8, (1, 3), pads=(0, 1, 0, 1)),
        conv((1, 3, 100, 40), 9, (3, 3), pads=(1, 1, 1, 1)),
    ):
        assert _packing(op) == "winograd", op
        b.add(op, row_bands(op, grow=1))
    b.run()


@pytest.mark.parametrize("quant", [None, U8], ids=["f32", "u8"])
def test_runtime_weights(quant: Quant | None) -> None:
    """Weights that are no constants run the generic loops (scales read at
    run time too)."""
    op = conv((1, 8, 7, 6), 8, (3, 3), s=(1, 2), pads=(1, 1, 1, 0), group=2, quant=quant)
    Batch().add(op, row_bands(op), consts=[False] * len(op.operands)).run()


def test_reads_outside_the_held_band_are_caught() -> None:
    """The bounds-checking build fails a band that holds too few rows."""
    op = conv((1, 8, 8, 8), 8, (3, 3), pads=(1, 1, 1, 1), group=8)
    args = band_args(op, operands(op), [{1: (2, 5)}, {}, {}])
    with pytest.raises(AssertionError, match="outside the band"):
        run_band(op, args, [{1: (2, 5)}, {}, {}], {1: (2, 5)})


@pytest.mark.parametrize("quant", [None, U8], ids=["f32", "u8"])
def test_portable_build(quant: Quant | None) -> None:
    """-DTIGRIS_PORTABLE: the plain loops over the same packed weights."""
    b = Batch(PORTABLE)
    for op in (
        conv((1, 6, 7, 17), 27, (1, 1), quant=quant),
        conv((1, 9, 10, 20), 20, (3, 3), pads=(1, 1, 1, 1), group=20, quant=quant),
        conv((1, 11, 9, 6), 12, (3, 3), s=2, pads=(1, 0, 0, 2), group=2, quant=quant),
    ):
        b.add(op, row_bands(op)[::2])
    b.add(gemm(11, 13, 19, quant=quant), mat_bands(11)[:2])
    b.run()


# ---------------------------------------------------------------------------
# transposed convolutions


@QUANTS
def test_conv_transpose(quant: Quant | None) -> None:
    b = Batch()
    op = conv((1, 5, 6, 8), 6, (2, 2), s=2, quant=quant, transpose=True)
    b.add(op, row_bands(op, cols=False))
    op = conv(
        (1, 5, 4, 6), 4, (3, 3), s=2, pads=(1, 1, 1, 0), group=2, quant=quant,
        transpose=True, out_pad=(1, 1),
    )  # fmt: skip
    b.add(op, row_bands(op, grow=1, cols=False))
    b.run()


def test_conv_transpose_refuses_2d_tiles() -> None:
    op = conv((1, 5, 6, 8), 6, (2, 2), s=2, transpose=True)
    args = operands(op)
    held = [{1: (0, 5), 2: (0, 3)}, {}, {}]
    with pytest.raises(c_band.CLoweringError, match="only bands of rows"):
        run_band(op, band_args(op, args, held), held, {1: (0, 10), 2: (0, 6)})


# ---------------------------------------------------------------------------
# matrix products


def gemm(
    m: int,
    k: int,
    n: int,
    *,
    c_shape: Sequence[int] = (),
    trans_b: bool = False,
    alpha: float = 1.0,
    beta: float = 1.0,
    quant: Quant | None = None,
) -> nn.NNOp:
    props: dict[str, Attribute] = {}
    if trans_b:
        props["trans_b"] = nn.int_prop(1)
    if alpha != 1.0:
        props["alpha"] = nn.float_prop(alpha)
    if beta != 1.0:
        props["beta"] = nn.float_prop(beta)
    bshape = (n, k) if trans_b else (k, n)
    if quant is None:
        return make_op(nn.GemmOp, [f32(m, k), f32(*bshape), f32(*(c_shape or (n,)))], None, props)
    xt, sx, zx, yt, sy, zy = quant
    operands_ = [
        nn.tensor_type((m, k), xt, nn.QuantAttr(sx, zx)),
        nn.tensor_type(bshape, np.int8),
        nn.tensor_type(tuple(c_shape or (n,)), np.int32),
        f32(n),
    ]
    result = [nn.tensor_type((m, n), yt, nn.QuantAttr(sy, zy))]
    return make_op(nn.GemmOp, operands_, result, props)


def mat_bands(rows: int, axis: int = 0, height: int | None = None) -> list[tuple[Band, Band]]:
    """First, interior, last and whole row bands; all `height` rows high when
    given (a batched operand's batch stride depends on the band's height, so
    equal heights share one build)."""
    if height is not None:
        spans = [(a, a + height) for a in range(0, rows - height + 1, height)]
        spans.append((rows - height, rows))
    else:
        spans = [(0, 2), (3, rows - 1), (rows - 3, rows), (0, rows)]
    return [({axis: sp}, {axis: sp}) for sp in spans]


def test_gemm_float() -> None:
    """transB, alpha and beta, C as a row, a full matrix, a column, a scalar,
    and as a runtime operand cut like A."""
    b = Batch()
    for kw in (
        {},
        {"trans_b": True, "alpha": 0.5, "beta": 2.0, "c_shape": (1, 19)},
        {"c_shape": (11, 19), "beta": -1.5},
        {"c_shape": (11, 1)},
        {"c_shape": (1,)},
    ):
        b.add(gemm(11, 13, 19, **kw), mat_bands(11))  # type: ignore[arg-type]
    op = gemm(11, 13, 19, c_shape=(11, 19), alpha=2.0, beta=0.5)
    args = operands(op)
    for held, out in mat_bands(11):
        b.add(op, [(held, out)], whole=args, held_of=[{}, held], consts=[False, True, False])
    b.run()


def test_gemm_int8() -> None:
    b = Batch()
    for quant in (U8, I8):
        for trans_b in (False, True):
            op = gemm(11, 13, 19, quant=quant, trans_b=trans_b)
            args = operands(op)
            args[3] = np.full(19, 0.01, np.float32)
            b.add(op, mat_bands(11), whole=args)
    b.run()


def test_matmul() -> None:
    """Batched rows through the GEBP, a whole activation B, broadcast batch
    axes, vector operands; int8 with weights and with an activation B."""
    b = Batch()
    op = make_op(nn.MatMulOp, [f32(2, 9, 7), f32(7, 12)])
    b.add(op, mat_bands(9, axis=1, height=4))
    op = make_op(nn.MatMulOp, [f32(2, 9, 7), f32(2, 7, 12)])
    b.add(op, mat_bands(9, axis=1, height=3))
    op = make_op(nn.MatMulOp, [f32(3, 1, 5, 6), f32(4, 6, 2)])
    b.add(op, [({}, {})], consts=[False, False])
    b.add(make_op(nn.MatMulOp, [f32(6), f32(6, 4)]), [({}, {})])
    b.add(make_op(nn.MatMulOp, [f32(5, 6), f32(6)]), mat_bands(5))
    qa = nn.tensor_type((9, 14), np.uint8, nn.QuantAttr(0.05, 128))
    qy = nn.tensor_type((9, 10), np.int8, nn.QuantAttr(0.2, -4))
    op = make_op(nn.MatMulOp, [qa, nn.tensor_type((14, 10), np.int8), f32(10)], [qy])
    args = operands(op)
    args[2] = np.full(10, 0.01, np.float32)
    b.add(op, mat_bands(9), whole=args)
    qb = nn.tensor_type((14, 10), np.uint8, nn.QuantAttr(0.03, 131))
    b.add(make_op(nn.MatMulOp, [qa, qb], [qy]), mat_bands(9), consts=[False, False])
    b.run()


def test_matmul_refuses_contracted_cut() -> None:
    op = make_op(nn.MatMulOp, [f32(4, 6), f32(6, 5)])
    args = operands(op)
    held = [{1: (0, 3)}, {}]
    with pytest.raises(c_band.CLoweringError, match="contracted axis"):
        run_band(op, band_args(op, args, held), held, {})


# ---------------------------------------------------------------------------
# random geometry


@st.composite
def geometries(draw: st.DrawFn) -> tuple[nn.NNOp, list[tuple[Band, Band]]]:
    rank = draw(st.sampled_from([1, 2, 2]))
    k = tuple(draw(st.integers(1, 3)) for _ in range(rank))
    s = tuple(draw(st.integers(1, 2)) for _ in range(rank))
    d = tuple(draw(st.integers(1, 2)) for _ in range(rank))
    pads = tuple(draw(st.integers(0, 2)) for _ in range(2 * rank))
    kind = draw(st.sampled_from(["general", "depthwise", "grouped"]))
    cin = draw(st.integers(1, 12))
    if kind == "depthwise":
        group, cout = cin, cin
    elif kind == "grouped" and cin % 2 == 0:
        group, cout = 2, 2 * draw(st.integers(1, 6))
    else:
        group, cout = 1, draw(st.integers(1, 20))
    spatial = []
    for i in range(rank):
        eff = (k[i] - 1) * d[i] + 1
        spatial.append(draw(st.integers(max(1, eff - pads[i] - pads[rank + i]), 9)))
    quant = draw(st.sampled_from([None, U8, I8]))
    op = conv((1, *spatial, cin), cout, k, s=s, d=d, pads=pads, group=group, quant=quant)
    oshape = nn.shape_of(op.results[0])
    h = oshape[1]
    a = draw(st.integers(0, h - 1))
    b = draw(st.integers(a + 1, h))
    outs: list[Band] = [{1: (a, b)}, {1: (0, h)}, {1: (h - 1, h)}]
    if rank == 2 and draw(st.booleans()):  # 2D tiles (one cut-set: one build)
        w = oshape[2]
        c = draw(st.integers(0, w - 1))
        outs = [{**o, 2: (c, draw(st.integers(c + 1, w)))} for o in outs]
    grow = draw(st.integers(0, 1))
    return op, [(held_for(op, o, grow), o) for o in outs]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(geometries())
def test_random_geometry(case: tuple[nn.NNOp, list[tuple[Band, Band]]]) -> None:
    op, bands = case
    args = operands(op)
    for held, out in bands:  # one build per example: the bands share it
        cut = band_args(op, args, [held, *([{}] * (len(args) - 1))])
        hs = [held, *([{}] * (len(args) - 1))]
        same(op, run_band(op, cut, hs, out)[0], band_exec.compute(op, cut, hs, out)[0])


def whole_tensor(name: str, a: np.ndarray, *, const: bool) -> c_band.CTensor:
    """An uncut operand as an emitter sees it."""
    return c_band.CTensor(
        name=name,
        ctype=c_band.c_type(a.dtype),
        shape=a.shape,
        strides=tuple(s // a.itemsize for s in a.strides),
        origin=("0",) * a.ndim,
        extent=tuple(map(str, a.shape)),
        cut=(),
        value=a if const else None,
    )


def test_emitted_names_are_shared() -> None:
    """Two ops of the same geometry share one printed kernel."""
    from c_band_check import MiniUnit, default_kernel

    unit = MiniUnit()
    calls = []
    for seed in (0, 1):
        op = conv((1, 6, 7, 16), 24, (1, 1))
        default_kernel(op)
        args = operands(op, seed)
        ins = [whole_tensor(f"in{i}", a, const=i > 0) for i, a in enumerate(args)]
        y = np.zeros(nn.shape_of(op.results[0]), np.float32)
        out = whole_tensor("out0", y, const=False)
        calls.append(c_conv.emit_conv(op, ins, [out], unit))
    assert calls[0].split("(")[0] == calls[1].split("(")[0]
    assert len(unit.const_text) == 4  # two ops' panels and biases, nothing else
