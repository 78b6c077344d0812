"""The printed C of every band op but convolutions and matrix products.

Each case prints one band op through its emitter (`c_band_check.run_band`:
compiled with the bounds checks on), runs it on random operands and compares
it with the interpreter's band semantics (`band_exec.compute`, `accumulate`,
`finish`) on the same band: float32 within a relative 1e-5 of the largest
reference value, int8 bit-exact. Bands are whole tensors, first / interior /
last row bands, 2D tiles and channel groups, as each op allows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest
from c_band_check import BandCase, band_args, make_op, run_band, run_bands
from xdsl.dialects.builtin import StringAttr, TensorType
from xdsl.ir import Attribute

from tigris_ir.backend.c import band as c_band
from tigris_ir.backend.c import ops as c_ops
from tigris_ir.dialects import nn
from tigris_ir.interp import band_exec
from tigris_ir.loops.need import required
from tigris_ir.plan.band import Band, band_slices

# ---------------------------------------------------------------------------
# helpers


def f32(*shape: int) -> TensorType:
    return nn.tensor_type(shape, np.float32)


def q8(*shape: int, scale: float = 0.05, zp: int = 3) -> TensorType:
    return nn.tensor_type(shape, np.int8, nn.QuantAttr(scale, zp))


def u8(*shape: int, scale: float = 0.03, zp: int = 120) -> TensorType:
    return nn.tensor_type(shape, np.uint8, nn.QuantAttr(scale, zp))


def ints(*v: int) -> Attribute:
    return nn.ints_prop(v)


def rand(t: Attribute, rng: np.random.Generator, positive: bool = False) -> np.ndarray:
    shape, dt = nn.shape_of(t), nn.dtype_of(t)
    if dt == np.float32:
        x = rng.standard_normal(shape).astype(np.float32) * 2
        return (np.abs(x) + 0.1).astype(np.float32) if positive else x
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max + 1, shape).astype(dt)


def same(got: np.ndarray, want: np.ndarray, what: str) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype, what
    if want.dtype == np.float32:
        finite = np.abs(want[np.isfinite(want)])
        tol = 1e-5 * max(float(finite.max(initial=0.0)), 1e-30)
        np.testing.assert_allclose(got, want, rtol=0, atol=tol, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


HeldOf = Callable[[nn.NNOp, int, Band, bool], Band]


def held_of(op: nn.NNOp, i: int, out: Band, cut: bool) -> Band:
    """What operand `i` holds for the output band: the rows a window, resize
    or reshape reads, the band itself for an elementwise operand."""
    if not cut or not out:
        return {}
    shape = nn.shape_of(op.operands[i])
    if isinstance(op, nn.ReshapeLikeOp):
        return required(op, i, {1: (0, shape[1])}, out)
    if isinstance(op, nn.WindowOp | nn.ResizeOp):
        spatial = [a for a in out if 1 <= a < len(shape) - 1]
        need = required(op, i, {a: (0, shape[a]) for a in spatial}, out)
        return {**out, **need}
    full = nn.shape_of(op.results[0])
    lead = len(full) - len(shape)
    return {a - lead: r for a, r in out.items() if a >= lead and shape[a - lead] == full[a]}


class Batch:
    """Band cases of one test, printed into one translation unit, each run
    in C and through `band_exec` on the same band."""

    def __init__(self) -> None:
        self.cases: list[BandCase] = []
        self.wants: list[list[np.ndarray]] = []
        self.firsts: list[bool] = []

    def add(self, case: BandCase, want: Sequence[np.ndarray], first: bool = False) -> None:
        """A case and its expected results (`first`: compare the leading
        elements of the result only, a finished band written at its start)."""
        self.cases.append(case)
        self.wants.append(list(want))
        self.firsts.append(first)

    def check(
        self,
        op: nn.NNOp,
        outs: Sequence[Band],
        *,
        cut: Sequence[bool] | None = None,
        consts: Sequence[bool] | None = None,
        seed: int = 0,
        positive: bool = False,
        args: Sequence[np.ndarray] | None = None,
        held: HeldOf | None = None,
    ) -> None:
        """Every output band of `outs`, its operands cut from random whole
        tensors (the first operand, or those `cut` marks, as bands)."""
        rng = np.random.default_rng(seed)
        if args is None:
            args = [rand(v.type, rng, positive) for v in op.operands]
        cut = cut if cut is not None else [i == 0 for i in range(len(args))]
        for out in outs:
            hs = [(held or held_of)(op, i, out, c) for i, c in enumerate(cut)]
            a = band_args(op, args, hs)
            self.add(BandCase(op, a, hs, out, consts=consts), band_exec.compute(op, a, hs, out))

    def run(self) -> int:
        for case, got, want, first in zip(
            self.cases, run_bands(self.cases), self.wants, self.firsts
        ):
            what = f"{case.op.name} {case.kind} held {list(case.held)} out {case.out}"
            for g, w in zip(got, want):
                if first:
                    g = g.reshape(-1)[: w.size].reshape(w.shape)
                same(g, w, what)
        return len(self.cases)


def check(op: nn.NNOp, outs: Sequence[Band], **kw: object) -> int:
    """One op's cases as a batch of their own."""
    b = Batch()
    b.check(op, outs, **kw)  # type: ignore[arg-type]
    return b.run()


def rows(height: int, extra: Sequence[Band] = ()) -> list[Band]:
    """Whole, first, interior and last row bands."""
    bands: list[Band] = [{}, {1: (0, 2)}, {1: (2, min(4, height))}, {1: (height - 2, height)}]
    return bands + list(extra)


TILES: list[Band] = [{1: (0, 2), 2: (0, 3)}, {1: (2, 4), 2: (3, 5)}, {1: (4, 6), 2: (1, 5)}]
CHANNELS: list[Band] = [{3: (0, 3)}, {3: (3, 8)}]
X = (1, 6, 5, 8)


# ---------------------------------------------------------------------------
# unary


UNARY: list[tuple[type[nn.NNOp], dict[str, Attribute]]] = [
    (nn.ReluOp, {}),
    (nn.SigmoidOp, {}),
    (nn.TanhOp, {}),
    (nn.HardSwishOp, {}),
    (nn.HardSigmoidOp, {"alpha": nn.float_prop(0.2), "beta": nn.float_prop(0.5)}),
    (nn.LeakyReluOp, {"alpha": nn.float_prop(0.1)}),
    (nn.EluOp, {"alpha": nn.float_prop(1.3)}),
    (nn.GeluOp, {}),
    (nn.GeluOp, {"approximate": StringAttr("tanh")}),
    (nn.ExpOp, {}),
    (nn.LogOp, {}),
    (nn.SqrtOp, {}),
    (nn.AbsOp, {}),
    (nn.FloorOp, {}),
    (nn.ClipOp, {"min": nn.float_prop(-0.5), "max": nn.float_prop(1.5)}),
    (nn.IdentityOp, {}),
]


CUTS_TOO = (nn.ReluOp, nn.ClipOp, nn.SigmoidOp, nn.GeluOp)
"""Unary ops also run on 2D tiles and channel groups (the loops are shared)."""


def test_unary_float32() -> None:
    b = Batch()
    for cls, props in UNARY:
        op = make_op(cls, [f32(*X)], props=props)
        extra = TILES[:1] + CHANNELS[1:] if cls in CUTS_TOO else []
        b.check(op, rows(6, extra), positive=cls in (nn.LogOp, nn.SqrtOp))
    b.run()


def test_unary_int8_tables() -> None:
    """Every unary op on int8 (and uint8 to float32): the reference's table."""
    b = Batch()
    for cls, props in UNARY:
        q = make_op(cls, [q8(*X)], [q8(*X, scale=0.04, zp=-5)], props)
        b.check(q, rows(6)[1:] + (TILES[:1] if cls in CUTS_TOO else []), seed=1)
        if cls in CUTS_TOO:
            b.check(make_op(cls, [u8(*X)], [f32(*X)], props), rows(6)[1:2], seed=2)
    same_scale = make_op(nn.IdentityOp, [q8(*X)], [q8(*X)])  # a copy
    b.check(same_scale, rows(6, TILES))
    b.run()


def test_unary_float32_to_int8() -> None:
    b = Batch()
    for cls in (nn.ReluOp, nn.ClipOp, nn.LeakyReluOp, nn.HardSwishOp, nn.HardSigmoidOp):
        props = next(p for c, p in UNARY if c is cls)
        op = make_op(cls, [f32(*X)], [q8(*X, scale=0.02, zp=-7)], props)
        b.check(op, rows(6)[:2])
    b.run()
    op = make_op(nn.SigmoidOp, [f32(*X)], [q8(*X)])
    with pytest.raises(c_band.CLoweringError, match="nn.sigmoid"):
        run_band(op, [np.zeros(X, np.float32)], [{}], {})


# ---------------------------------------------------------------------------
# binary


BINARY = [nn.AddOp, nn.SubOp, nn.MulOp, nn.DivOp, nn.MaxOp, nn.MinOp, nn.PReluOp]


def test_binary_float32() -> None:
    b = Batch()
    for cls in BINARY:
        op = make_op(cls, [f32(*X), f32(*X)])
        b.check(op, rows(6, TILES[1:2]), cut=[True, True])
        per_channel = make_op(cls, [f32(*X), f32(8)])
        b.check(per_channel, [{1: (1, 3)}, {1: (2, 5), 3: (2, 6)}], cut=[True, False])
    b.run()


def test_binary_int8() -> None:
    """Different scales: dequantized float32 operations, quantized once."""
    b = Batch()
    a, c, y = q8(*X, scale=0.05, zp=3), q8(*X, scale=0.03, zp=-9), q8(*X, scale=0.07, zp=1)
    for cls in BINARY:
        b.check(make_op(cls, [a, c], [y]), rows(6), cut=[True, True], seed=3)
    prelu = make_op(nn.PReluOp, [q8(*X), f32(8)], [q8(*X, scale=0.1, zp=-2)])
    b.check(prelu, rows(6, CHANNELS[1:]))
    for cls in (nn.MaxOp, nn.MinOp):  # one scale: on the stored integers
        b.check(make_op(cls, [q8(*X), q8(*X)], [q8(*X)]), rows(6, TILES[:1]), cut=[True, True])
    zero = np.full(X, 3, np.int8)  # 0 / 0 quantizes as the reference's cast does
    b.check(make_op(nn.DivOp, [a, a], [y]), [{}, {1: (1, 3)}], cut=[True, True], args=[zero, zero])
    b.run()


def test_binary_broadcasts() -> None:
    b = Batch()
    for other, cut in (((1, 1, 5, 1), False), ((5, 1), False), ((1,), False), ((1, 6, 1, 8), True)):
        op = make_op(nn.AddOp, [f32(*X), f32(*other)])
        b.check(op, [{}, {1: (2, 4)}, {1: (4, 6), 2: (1, 4)}, {3: (2, 5)}], cut=[True, cut])
    # the lower-rank operand first, int8 with a float32 one
    op = make_op(nn.MulOp, [q8(5, 8), f32(*X)], [q8(*X, scale=0.1, zp=0)])
    b.check(op, [{}, {1: (2, 4)}], cut=[False, True])
    b.run()


# ---------------------------------------------------------------------------
# quantization, batch norm


def test_quantize_dequantize() -> None:
    b = Batch()
    op = make_op(nn.QuantizeOp, [f32(*X)], [q8(*X, scale=0.02, zp=-4)])
    x = np.random.default_rng(8).standard_normal(X).astype(np.float32)
    x[0, 1, 1, :3] = [np.nan, np.inf, -np.inf]
    b.check(op, rows(6, TILES[:1] + CHANNELS[:1]), args=[x])
    b.check(make_op(nn.QuantizeOp, [f32(*X)], [u8(*X)]), rows(6)[1:2])
    b.check(make_op(nn.DequantizeOp, [q8(*X)], [f32(*X)]), rows(6, TILES[:1]))
    b.check(make_op(nn.DequantizeOp, [u8(*X)], [f32(*X)]), rows(6)[:1])
    b.run()


def test_batch_norm() -> None:
    c = X[-1]
    rng = np.random.default_rng(4)
    b = Batch()
    for x, y in ((f32(*X), f32(*X)), (q8(*X), q8(*X, scale=0.08, zp=-2))):
        op = make_op(nn.BatchNormOp, [x, *[f32(c)] * 4], [y], {"epsilon": nn.float_prop(1e-3)})
        args = [rand(x, rng), *(rng.standard_normal(c).astype(np.float32) for _ in range(3))]
        args.append((np.abs(rng.standard_normal(c)) + 0.1).astype(np.float32))
        cut = [True] + [False] * 4
        b.check(op, rows(6, CHANNELS[1:]), args=args, cut=cut)
        b.check(op, [{1: (2, 4)}], args=args, cut=cut, consts=[False] * 5)
    b.run()


# ---------------------------------------------------------------------------
# pools


def pool(cls: type[nn.NNOp], x: TensorType, y: TensorType | None, **p: object) -> nn.NNOp:
    props: dict[str, Attribute] = {}
    for k, v in p.items():
        props[k] = ints(*v) if isinstance(v, tuple) else nn.int_prop(int(v))  # type: ignore[arg-type]
    if y is None and nn.quant_of(x) is not None:
        probe = make_op(cls, [f32(*nn.shape_of(x))], props=props)
        y = nn.tensor_type(nn.shape_of(probe.results[0]), nn.dtype_of(x), nn.quant_of(x))
    return make_op(cls, [x], [y] if y is not None else None, props)


def pool_bands(h: int) -> list[Band]:
    return rows(h, [{1: (1, 3), 2: (0, 2)}, {1: (h - 1, h), 2: (2, 4)}, {3: (2, 7)}])


POOLS: list[dict[str, object]] = [
    dict(kernel=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1)),
    dict(kernel=(2, 2), strides=(2, 2)),
    dict(kernel=(3, 2), strides=(1, 2), pads=(2, 0, 1, 1), ceil_mode=1),
    dict(kernel=(3, 3), pads=(1, 1, 1, 1), dilations=(2, 1)),
]


def test_max_pool() -> None:
    """float32, int8 on the stored integers, int8 requantized by a table."""
    b = Batch()
    xs = (1, 11, 9, 8)
    for g in POOLS:
        ys = nn.shape_of(pool(nn.MaxPoolOp, f32(*xs), None, **g).results[0])
        for x, y in ((f32(*xs), None), (q8(*xs), None), (q8(*xs), q8(*ys, scale=0.09, zp=-20))):
            op = pool(nn.MaxPoolOp, x, y, **g)
            b.check(op, pool_bands(ys[1]) if y is None else rows(ys[1])[1:2])
    b.run()


def test_max_pool_1d_and_wider_held_bands() -> None:
    b = Batch()
    for x in (f32(1, 20, 8), u8(1, 20, 8)):
        op = pool(nn.MaxPoolOp, x, None, kernel=(3,), strides=(2,), pads=(1, 1))
        b.check(op, [{}, {1: (0, 3)}, {1: (4, 7)}, {1: (7, 10)}])

        def wider(op: nn.NNOp, i: int, out: Band, cut: bool) -> Band:
            lo, hi = held_of(op, i, out, cut)[1]
            return {1: (max(lo - 2, 0), min(hi + 3, 20))}

        b.check(op, [{1: (4, 7)}, {1: (0, 2)}], held=wider)
    b.run()


POOL_AVG: list[dict[str, object]] = [
    dict(kernel=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1)),
    dict(kernel=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1), count_include_pad=1),
    dict(kernel=(2, 3), strides=(2, 1), pads=(0, 1, 1, 2), ceil_mode=1, count_include_pad=1),
]


def test_average_pool() -> None:
    """count_include_pad and ceil_mode as the reference; int8 exact."""
    b = Batch()
    xs = (1, 11, 9, 70)
    for g in POOL_AVG:
        ys = nn.shape_of(pool(nn.AveragePoolOp, f32(*xs), None, **g).results[0])
        tiles: list[Band] = [{1: (1, 3), 2: (1, 3)}, {3: (3, 69)}]
        b.check(pool(nn.AveragePoolOp, f32(*xs), None, **g), rows(ys[1], tiles))
        q = pool(nn.AveragePoolOp, q8(*xs), q8(*ys, scale=0.04, zp=5), **g)
        b.check(q, rows(ys[1], tiles[:1])[1:])
    op = pool(nn.AveragePoolOp, u8(1, 13, 8), None, kernel=(3,), strides=(2,), pads=(1, 1))
    b.check(op, [{}, {1: (0, 2)}, {1: (5, 7)}])
    b.run()


# ---------------------------------------------------------------------------
# global average pool


def test_global_average_pool() -> None:
    """Whole, and accumulated by bands of rows, 2D tiles and channel groups,
    then finished: each step against `band_exec.accumulate` / `finish`."""
    b = Batch()
    xs = (1, 7, 6, 70)
    rng = np.random.default_rng(5)
    for quant in (False, True):
        x = q8(*xs) if quant else f32(*xs)
        y = q8(1, 1, 1, 70, scale=0.01, zp=-3) if quant else f32(1, 1, 1, 70)
        op = make_op(nn.GlobalAveragePoolOp, [x], [y])
        b.check(op, [{}])
        whole = rand(x, rng)
        for grp in ((0, 70), (0, 64), (64, 70), (5, 20)):
            chan = {3: grp} if grp != (0, 70) else {}
            acc = rng.standard_normal((1, 1, 1, grp[1] - grp[0])).astype(np.float32)
            for held in ({1: (0, 3)}, {1: (3, 4), 2: (0, 2)}, {1: (3, 4), 2: (2, 6)}, {1: (4, 7)}):
                h = {**held, **chan}
                band = whole[band_slices(h, 4)]
                before = acc.copy()
                band_exec.accumulate(op, band, acc)  # type: ignore[arg-type]
                b.add(BandCase(op, [band], [h], chan, kind="accumulate", acc=before), [acc.copy()])
            want = band_exec.finish(op, acc)  # type: ignore[arg-type]
            b.add(BandCase(op, [acc], [chan], chan, kind="finish"), [want], first=True)
    op = make_op(nn.GlobalAveragePoolOp, [u8(1, 30, 5)], [u8(1, 1, 5, scale=0.01, zp=7)])
    b.check(op, [{}])
    b.run()


# ---------------------------------------------------------------------------
# resize


def resize(x: TensorType, y: TensorType, mode: str, ctm: str, nm: str = "") -> nn.NNOp:
    props: dict[str, Attribute] = {
        "mode": StringAttr(mode),
        "coordinate_transformation_mode": StringAttr(ctm),
    }
    if nm:
        props["nearest_mode"] = StringAttr(nm)
    return make_op(nn.ResizeOp, [x], [y], props)


RESIZES = [
    ((1, 6, 5, 4), (1, 12, 10, 4), "nearest", "asymmetric", "floor"),
    ((1, 7, 5, 4), (1, 10, 5, 4), "nearest", "half_pixel", "round_prefer_floor"),
    ((1, 6, 5, 4), (1, 13, 10, 4), "nearest", "align_corners", "round_prefer_ceil"),
    ((1, 6, 5, 4), (1, 12, 10, 4), "linear", "half_pixel", ""),
    ((1, 7, 6, 4), (1, 5, 9, 4), "linear", "align_corners", ""),
    ((1, 7, 6, 4), (1, 7, 9, 4), "linear", "asymmetric", ""),
    ((1, 9, 3), (1, 20, 3), "linear", "pytorch_half_pixel", ""),
]


def test_resize() -> None:
    """Nearest and linear, float32 and int8 (a table when the scale changes)."""
    b = Batch()
    for xs, ys, mode, ctm, nm in RESIZES:
        extra: list[Band] = [{1: (1, 4), 2: (2, 4)}, {3: (1, 3)}] if len(ys) == 4 else []
        b.check(resize(f32(*xs), f32(*ys), mode, ctm, nm), rows(ys[1], extra))
        b.check(resize(q8(*xs), q8(*ys), mode, ctm, nm), rows(ys[1], extra[:1])[1:])
        requant = resize(q8(*xs), q8(*ys, scale=0.11, zp=-3), mode, ctm, nm)
        b.check(requant, rows(ys[1])[1:2])
    b.run()


# ---------------------------------------------------------------------------
# concat, split, transpose, pad


def test_concat() -> None:
    b = Batch()
    for types, y in (
        ([f32(1, 6, 5, 3), f32(1, 6, 5, 5)], f32(1, 6, 5, 8)),
        ([q8(1, 6, 5, 3), q8(1, 6, 5, 5)], q8(1, 6, 5, 8)),
        ([q8(1, 6, 5, 3), q8(1, 6, 5, 5, scale=0.02, zp=-1)], q8(1, 6, 5, 8, scale=0.04, zp=2)),
        ([f32(1, 6, 5, 3), q8(1, 6, 5, 5)], q8(1, 6, 5, 8, scale=0.04, zp=2)),
    ):
        op = make_op(nn.ConcatOp, types, [y], {"axis": nn.int_prop(-1)})
        b.check(op, rows(6, TILES[:1])[1:], cut=[True, True])
    op = make_op(nn.ConcatOp, [f32(1, 2, 5, 4), f32(1, 3, 5, 4)], props={"axis": nn.int_prop(1)})
    b.check(op, [{}, {2: (1, 3)}, {3: (0, 2)}], cut=[True, True])
    b.run()
    x = np.zeros((1, 2, 5, 4), np.float32)
    with pytest.raises(c_band.CLoweringError, match="nn.concat"):
        run_band(op, [x, x[:, :1]], [{1: (0, 2)}, {1: (0, 1)}], {1: (0, 2)})


def test_split_and_transpose() -> None:
    b = Batch()
    props = {"axis": nn.int_prop(3), "sizes": ints(3, 5)}
    op = make_op(nn.SplitOp, [f32(1, 6, 5, 8)], [f32(1, 6, 5, 3), f32(1, 6, 5, 5)], props)
    b.check(op, rows(6, TILES[:1]))
    props = {"axis": nn.int_prop(1), "sizes": ints(2, 0, 4)}
    outs = [q8(1, 2, 5, 8), q8(1, 0, 5, 8), q8(1, 4, 5, 8, scale=0.1, zp=0)]
    op = make_op(nn.SplitOp, [q8(1, 6, 5, 8)], outs, props)
    b.check(op, [{}, {2: (1, 4)}])
    for x in (f32(1, 6, 5, 8), q8(1, 6, 5, 8)):
        y = nn.tensor_type((1, 6, 8, 5), nn.dtype_of(x), nn.quant_of(x))
        b.check(make_op(nn.TransposeOp, [x], [y], {"perm": ints(0, 1, 3, 2)}), rows(6))
    b.check(make_op(nn.TransposeOp, [f32(2, 3, 4)], None, {"perm": ints(2, 0, 1)}), [{}])
    b.run()


PADS = [
    ("constant", 0.0, (0, 1, 2, 0, 0, 2, 1, 0)),
    ("constant", 1.5, (0, 2, 0, 1, 0, 0, 3, 1)),
    ("constant", 0.0, (0, -1, 2, 0, 0, 2, -2, 0)),
    ("edge", 0.0, (0, 2, 1, 0, 0, 1, 2, 0)),
    ("reflect", 0.0, (0, 2, 3, 0, 0, 3, 1, 0)),
]


def test_pad() -> None:
    """Constant (value, or the zero point on int8), edge, reflect, cropping."""
    b = Batch()
    xs = (1, 6, 5, 4)
    for mode, value, pads in PADS:
        ys = tuple(d + pads[i] + pads[4 + i] for i, d in enumerate(xs))
        props = {"pads": ints(*pads), "mode": StringAttr(mode), "value": nn.float_prop(value)}
        for x, y in ((f32(*xs), f32(*ys)), (q8(*xs), q8(*ys)), (q8(*xs), q8(*ys, scale=0.2, zp=9))):
            op = make_op(nn.PadOp, [x], [y], props)
            free = [a for a in range(4) if pads[a] == pads[4 + a] == 0 and ys[a] > 1]
            bands: list[Band] = [{}, *({a: (1, ys[a] - 1)} for a in free)]
            b.check(op, bands if nn.dtype_of(x) == np.float32 else bands[-1:])
    b.run()


# ---------------------------------------------------------------------------
# reshapes


def test_reshapes() -> None:
    b = Batch()
    for x in (f32(1, 6, 5, 4), q8(1, 6, 5, 4)):
        dt, q = nn.dtype_of(x), nn.quant_of(x)
        op = make_op(nn.ReshapeOp, [x], [nn.tensor_type((1, 6, 20), dt, q)])
        b.check(op, [{}, {1: (0, 2)}, {1: (2, 5)}])
        op = make_op(nn.ReshapeOp, [x], [nn.tensor_type((1, 3, 40), dt, q)])
        b.check(op, [{}, {1: (1, 2)}])
        flat = nn.tensor_type((1, 120), dt, q)
        b.check(make_op(nn.FlattenOp, [x], [flat], {"axis": nn.int_prop(1)}), [{}])
    b.check(make_op(nn.SqueezeOp, [f32(1, 1, 1, 8)], [f32(1, 8)], {"axes": ints(1, 2)}), [{}])
    b.check(make_op(nn.UnsqueezeOp, [f32(1, 8)], [f32(1, 1, 1, 8)], {"axes": ints(1, 2)}), [{}])
    b.run()


def test_reshape_of_a_strided_band() -> None:
    op = make_op(nn.ReshapeOp, [f32(1, 6, 5, 4)], [f32(1, 6, 20)])
    wide = np.random.default_rng(6).standard_normal((1, 6, 5, 6)).astype(np.float32)
    x = wide[..., :4]  # rows of 4 channels inside rows of 6: not one dense span
    got = run_band(op, [x], [{}], {}, consts=[False])[0]
    same(got, op.reference([np.ascontiguousarray(x)])[0], "strided")


# ---------------------------------------------------------------------------
# reductions, softmax


REDUCES: list[tuple[tuple[int, ...], int, list[Band]]] = [
    ((1, 2), 1, [{}, {3: (1, 68)}]),
    ((1, 2), 0, [{}, {1: (1, 68)}]),
    ((3,), 1, [{}, {1: (2, 4)}]),
    ((3,), 0, [{1: (2, 4), 2: (1, 3)}]),
    ((), 0, [{}]),
]


def reduce_held(op: nn.NNOp, i: int, out: Band, cut: bool) -> Band:
    """The input band under an output band: kept axes keep their range."""
    rank = len(nn.shape_of(op.operands[0]))
    red = {a % rank for a in op.ints("axes")} or set(range(rank))
    kept = [a for a in range(rank) if a not in red]
    keep = bool(op.int_("keepdims"))
    return {(a if keep else kept[a]): r for a, r in out.items()}


def test_reduce() -> None:
    """Mean and sum in double (int8 exact), max on stored integers or by table."""
    b = Batch()
    xs = (1, 6, 5, 70)
    for cls in (nn.ReduceMeanOp, nn.ReduceSumOp, nn.ReduceMaxOp):
        for axes, keep, bands in REDUCES:
            props = {"axes": ints(*axes), "keepdims": nn.int_prop(keep)}
            op = make_op(cls, [f32(*xs)], props=props)
            b.check(op, bands, held=reduce_held)
            ys = nn.shape_of(op.results[0])
            outs = [q8(*ys, scale=0.3, zp=1)] + ([q8(*ys)] if cls is nn.ReduceMaxOp else [])
            for y in outs:
                q = make_op(cls, [q8(*xs)], [y], props)
                b.check(q, bands[-1:], held=reduce_held, seed=7)
    b.run()
    red = make_op(nn.ReduceSumOp, [f32(*X)], props={"axes": ints(1), "keepdims": nn.int_prop(1)})
    with pytest.raises(c_band.CLoweringError, match="nn.reduce_sum"):
        run_band(red, [np.zeros((1, 2, 5, 8), np.float32)], [{1: (0, 2)}], {})


def test_softmax() -> None:
    b = Batch()
    for cls in (nn.SoftmaxOp, nn.LogSoftmaxOp):
        op = make_op(cls, [f32(1, 6, 5, 10)], props={"axis": nn.int_prop(-1)})
        b.check(op, rows(6, TILES[:1]))
        op = make_op(cls, [f32(1, 6, 5, 10)], props={"axis": nn.int_prop(1)})
        b.check(op, [{}, {2: (1, 3)}, {3: (4, 9)}])
    for cls in (nn.SoftmaxOp, nn.LogSoftmaxOp):  # the integer softmax, bit for bit
        out = (
            q8(1, 6, 5, 10, scale=1 / 256, zp=-128)
            if cls is nn.SoftmaxOp
            else q8(1, 6, 5, 10, scale=0.08, zp=120)
        )
        q = make_op(cls, [q8(1, 6, 5, 10, scale=0.1)], [out], {"axis": nn.int_prop(-1)})
        b.check(q, rows(6, TILES[:1]))
        uout = u8(1, 6, 5, 10, scale=1 / 255, zp=0) if cls is nn.SoftmaxOp else u8(1, 6, 5, 10)
        q = make_op(cls, [u8(1, 6, 5, 10)], [uout], {"axis": nn.int_prop(1)})
        b.check(q, [{}, {2: (1, 3)}])
    b.run()
    for cls in (nn.SoftmaxOp, nn.LogSoftmaxOp):
        q = make_op(cls, [f32(1, 6, 5, 10)], [q8(1, 6, 5, 10)], {"axis": nn.int_prop(-1)})
        with pytest.raises(c_band.CLoweringError, match=cls.name):
            run_band(q, [np.zeros((1, 6, 5, 10), np.float32)], [{}], {})


# ---------------------------------------------------------------------------
# coverage and refusals


def example(cls: type) -> nn.NNOp | None:
    """A small float32 instance of an elementwise op class."""
    for c, p in UNARY:
        if c is cls:
            return make_op(cls, [f32(*X)], props=p)
    if cls in BINARY:
        return make_op(cls, [f32(*X), f32(*X)])
    return None


def test_every_nn_op_has_a_lowering_or_a_documented_refusal() -> None:
    registered = {cls for kind, cls in c_band._REGISTRY if kind == "band"}
    for cls in nn.NN_OPS:
        if cls in c_ops.REFUSED:
            assert c_ops.REFUSED[cls] and not any(issubclass(cls, r) for r in registered)
            continue
        if cls in c_ops.DELEGATED:
            continue  # printed by c_conv
        assert any(issubclass(cls, r) for r in registered), f"{cls.name}: no band emitter"
        op = example(cls)
        if op is not None:
            assert c_band.supported("band", op)
            assert not c_band.supported("accumulate", op)


def test_unsupported_kinds_and_bands_raise_naming_the_op() -> None:
    relu = make_op(nn.ReluOp, [f32(*X)])
    with pytest.raises(c_band.CLoweringError, match="nn.relu"):
        run_band(relu, [np.zeros(X, np.float32)], [{}], {}, kind="finish")
    op = make_op(nn.ReshapeOp, [f32(1, 6, 5, 4)], [f32(1, 6, 20)])
    with pytest.raises(c_band.CLoweringError, match="nn.reshape"):
        run_band(op, [np.zeros((1, 2, 2, 4), np.float32)], [{1: (0, 2), 2: (0, 2)}], {1: (0, 2)})
